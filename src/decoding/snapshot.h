/*-------------------------------------------------------------------------
 * snapshot.h
 *	  A consistent snapshot from an ephemeral logical slot.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SNAPSHOT_H
#define ZS_SNAPSHOT_H

#include "access/xlogreader.h"
#include "nodes/pg_list.h"
#include "replication/logical.h"

/*
 * An ephemeral logical slot with a full snapshot, at its consistent point
 * (the walsender's CREATE_REPLICATION_SLOT ... USE_SNAPSHOT, in this
 * process): the decoding context, in TopMemoryContext. The slot is dropped
 * when released (or when the process exits) unless persisted.
 */
extern LogicalDecodingContext *zs_snapshot_slot_create(const char *name, XLogRecPtr *consistent);

/*
 * Start a REPEATABLE READ transaction on that slot's snapshot (exactly the
 * transactions that committed before its consistent point), with SPI
 * connected and the snapshot active.
 */
extern void zs_snapshot_begin(LogicalDecodingContext *ctx);

/*
 * zero_stream.published_schema() of the publications, as text, in the
 * caller's transaction (SPI connected).
 */
extern char *zs_snapshot_published_schema(List *publications);

#endif							/* ZS_SNAPSHOT_H */
