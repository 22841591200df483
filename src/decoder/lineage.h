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
extern void zs_lineage_acquire_slot(const char *slot_name, List *publications,
							char *replica_version);

/*
 * zero_stream.resync() (take_over: the log is emptied even if another
 * change streamer has taken it over), or a failure's reset: drop the
 * acquired slot and start again with a new slot, initial copy and lineage.
 * The new slot is left acquired.
 */
extern void zs_lineage_restart(const char *slot_name, List *publications,
							   char *replica_version, bool take_over);

/*
 * The same before any slot is acquired (asked for while the decoder was
 * not running, or waited): drop the slot if it exists, then create one
 * slot and lineage.
 */
extern void zs_lineage_replace(const char *slot_name, List *publications,
							   char *replica_version, bool take_over);

/*
 * Make the acquired slot a failover slot, or not, as zero_stream.failover
 * says (PostgreSQL 17 and later; before, nothing to do). Called at each
 * stream's start and after a reload.
 */
extern void zs_lineage_apply_failover(void);

#endif							/* ZS_LINEAGE_H */
