/*-------------------------------------------------------------------------
 * lineage.h
 *	  The decoder's replication slot, and the change-log lineage tied to it.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_LINEAGE_H
#define ZS_LINEAGE_H

#include "access/xlogreader.h"
#include "replication/logical.h"
#include "nodes/pg_list.h"

/*
 * Acquire the slot, creating it (and starting a new change-log lineage at
 * its consistent point) when it does not exist or the log has no lineage.
 * On return MyReplicationSlot is ours and replica_version is set.
 */
extern void zs_acquire_slot(const char *slot_name, List *publications,
							char *replica_version);

/*
 * zero_stream.resync() (take_over: the log is emptied even if another
 * change streamer has taken it over), or a failure's reset: drop the
 * acquired slot and start again with a new slot, initial copy and lineage.
 * The new slot is left acquired.
 */
extern void zs_restart_lineage(const char *slot_name, List *publications,
							   char *replica_version, bool take_over);

/*
 * The same before any slot is acquired (asked for while the decoder was
 * not running, or waited): drop the slot if it exists, then create one
 * slot and lineage.
 */
extern void zs_replace_lineage(const char *slot_name, List *publications,
							   char *replica_version, bool take_over);

/*
 * An ephemeral logical slot with a full snapshot, at its consistent point
 * (the walsender's CREATE_REPLICATION_SLOT ... USE_SNAPSHOT, in this
 * process): the decoding context, in TopMemoryContext. The slot is dropped
 * when released (or when the process exits) unless persisted.
 */
extern LogicalDecodingContext *zs_create_snapshot_slot(const char *name, XLogRecPtr *consistent);

/*
 * Start a REPEATABLE READ transaction on that slot's snapshot (exactly the
 * transactions that committed before its consistent point), with SPI
 * connected and the snapshot active.
 */
extern void zs_begin_at_slot_snapshot(LogicalDecodingContext *ctx);

/*
 * zero_stream.published_schema() of the publications, as text, in the
 * caller's transaction (SPI connected).
 */
extern char *zs_current_published_schema(List *publications);

#endif							/* ZS_LINEAGE_H */
