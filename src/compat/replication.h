/*-------------------------------------------------------------------------
 * compat/replication.h
 *	  Replication slots, origins, logical messages and decoding contexts
 *	  across PostgreSQL 15 to 19: the calls whose arguments changed, with
 *	  what we pass for the new ones, and why.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_REPLICATION_H
#define ZS_COMPAT_REPLICATION_H

#include "access/xlog.h"
#include "replication/logical.h"
#if PG_VERSION_NUM >= 190000
#include "replication/logicalctl.h"
#endif
#include "replication/message.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "storage/proc.h"

/*
 * 19 renamed an origin's id type RepOriginId to ReplOriginId; we write the
 * new names.
 */
#if PG_VERSION_NUM < 190000
typedef RepOriginId ReplOriginId;
#define InvalidReplOriginId InvalidRepOriginId
#endif

/*
 * The origin that this session's transactions are stamped with, and the
 * remote commit (end LSN, time) that the next commit records as the
 * origin's progress. 19 gathered the three session variables
 * (replorigin_session_origin, _origin_lsn, _origin_timestamp) into
 * replorigin_xact_state.
 */
static inline ReplOriginId
zs_xact_origin(void)
{
#if PG_VERSION_NUM >= 190000
	return replorigin_xact_state.origin;
#else
	return replorigin_session_origin;
#endif
}

static inline void
zs_set_xact_origin(ReplOriginId origin)
{
#if PG_VERSION_NUM >= 190000
	replorigin_xact_state.origin = origin;
#else
	replorigin_session_origin = origin;
#endif
}

static inline void
zs_set_xact_origin_commit(XLogRecPtr lsn, TimestampTz timestamp)
{
#if PG_VERSION_NUM >= 190000
	replorigin_xact_state.origin_lsn = lsn;
	replorigin_xact_state.origin_timestamp = timestamp;
#else
	replorigin_session_origin_lsn = lsn;
	replorigin_session_origin_timestamp = timestamp;
#endif
}

/*
 * 16 added acquired_by, for parallel apply workers sharing an origin: 0
 * means this process acquires it alone, as on 15.
 */
static inline void
zs_replorigin_session_setup(ReplOriginId origin)
{
#if PG_VERSION_NUM >= 160000
	replorigin_session_setup(origin, 0);
#else
	replorigin_session_setup(origin);
#endif
}

/*
 * The lowest wal_level the decoder works with, and how the errors name it.
 * 19 turns logical decoding on by itself while a logical slot exists
 * (effective_wal_level): replica is enough there, and creating the slot
 * (zs_replication_slot_create) turns it on.
 */
#if PG_VERSION_NUM >= 190000
#define ZS_MIN_WAL_LEVEL WAL_LEVEL_REPLICA
#define ZS_MIN_WAL_LEVEL_NAME "replica or logical"
#else
#define ZS_MIN_WAL_LEVEL WAL_LEVEL_LOGICAL
#define ZS_MIN_WAL_LEVEL_NAME "logical"
#endif

/*
 * A logical slot of this database, without two-phase decoding. 17 added
 * failover (synchronize it to standbys; the failover issue sets it) and
 * synced (only the slot sync worker creates synced slots): false, false.
 * 19 added repack (a slot for REPACK CONCURRENTLY's own decoding): false,
 * and logical decoding must then be on (as pg_create_logical_replication_slot
 * makes sure).
 */
static inline void
zs_replication_slot_create(const char *name, ReplicationSlotPersistency persistency)
{
#if PG_VERSION_NUM >= 190000
	ReplicationSlotCreate(name, true, persistency, false, false, false, false);
	/* with wal_level = replica: logical decoding on while the slot exists */
	EnsureLogicalDecodingEnabled();
#elif PG_VERSION_NUM >= 170000
	ReplicationSlotCreate(name, true, persistency, false, false, false);
#else
	ReplicationSlotCreate(name, true, persistency, false);
#endif
}

/*
 * 18 added error_if_invalid: false, because the decoder tells an
 * invalidated slot itself (zs_slot_invalidation) and starts a new lineage.
 */
static inline void
zs_replication_slot_acquire(const char *name, bool nowait)
{
#if PG_VERSION_NUM >= 180000
	ReplicationSlotAcquire(name, nowait, false);
#else
	ReplicationSlotAcquire(name, nowait);
#endif
}

/*
 * The pid of the process using the slot, 0 if none; the caller holds the
 * slot's mutex. 19 keeps the process's number (active_proc) instead of its
 * pid.
 */
static inline int
zs_slot_active_pid(const ReplicationSlot *slot)
{
#if PG_VERSION_NUM >= 190000
	return slot->active_proc == INVALID_PROC_NUMBER ? 0 : GetPGProcByNumber(slot->active_proc)->pid;
#else
	return slot->active_pid;
#endif
}

/*
 * Why slot synchronization last left a standby's copy of a slot as it was.
 * 19 keeps the reason in the slot (pg_replication_slots'
 * slotsync_skip_reason); before 19 nothing says, and this is always
 * ZS_SLOTSYNC_SKIP_NONE. The caller holds the slot's mutex.
 */
typedef enum ZsSlotSyncSkip
{
	ZS_SLOTSYNC_SKIP_NONE,
	ZS_SLOTSYNC_SKIP_WAL_NOT_FLUSHED,	/* the standby lacks WAL up to the
										 * primary slot's confirmed position */
	ZS_SLOTSYNC_SKIP_BEHIND,	/* the primary's slot needs WAL or catalog
								 * rows the standby may no longer have */
	ZS_SLOTSYNC_SKIP_NO_SNAPSHOT,	/* no consistent snapshot there yet */
	ZS_SLOTSYNC_SKIP_INVALID	/* the copy was invalidated */
} ZsSlotSyncSkip;

static inline ZsSlotSyncSkip
zs_slot_sync_skip(const ReplicationSlot *slot)
{
#if PG_VERSION_NUM >= 190000
	switch (slot->slotsync_skip_reason)
	{
		case SS_SKIP_NONE:
			return ZS_SLOTSYNC_SKIP_NONE;
		case SS_SKIP_WAL_NOT_FLUSHED:
			return ZS_SLOTSYNC_SKIP_WAL_NOT_FLUSHED;
		case SS_SKIP_WAL_OR_ROWS_REMOVED:
			return ZS_SLOTSYNC_SKIP_BEHIND;
		case SS_SKIP_NO_CONSISTENT_SNAPSHOT:
			return ZS_SLOTSYNC_SKIP_NO_SNAPSHOT;
		case SS_SKIP_INVALID:
			return ZS_SLOTSYNC_SKIP_INVALID;
	}
#endif
	return ZS_SLOTSYNC_SKIP_NONE;
}

/*
 * A decoding context that creates the slot's starting point, with a full
 * snapshot. 19 added for_repack (decoding for REPACK CONCURRENTLY): false.
 */
static inline LogicalDecodingContext *
zs_create_init_decoding_context(const char *plugin, XLogReaderRoutine *xl_routine)
{
#if PG_VERSION_NUM >= 190000
	return CreateInitDecodingContext(plugin, NIL, true, false, InvalidXLogRecPtr,
									 xl_routine, NULL, NULL, NULL);
#else
	return CreateInitDecodingContext(plugin, NIL, true, InvalidXLogRecPtr,
									 xl_routine, NULL, NULL, NULL);
#endif
}

/*
 * Was the slot invalidated, and why, as a phrase ("the WAL it needed from
 * 0/1A000000 was removed"), in buf? 15 keeps the position the removed WAL
 * started at (invalidated_at, restart_lsn then invalid); 16 replaced it
 * by the cause, as the WAL removed is no longer the only one (rows removed
 * that a slot on a standby needed, wal_level lowered; 18 adds idle slots).
 */
static inline bool
zs_slot_invalidation(const ReplicationSlot *slot, char *buf, size_t len)
{
#if PG_VERSION_NUM >= 160000
	switch (slot->data.invalidated)
	{
		case RS_INVAL_NONE:
			return false;
		case RS_INVAL_WAL_REMOVED:
			snprintf(buf, len, "the WAL it needed was removed");
			return true;
		case RS_INVAL_HORIZON:
			snprintf(buf, len, "rows it needed were removed (its xmin horizon conflicted with recovery)");
			return true;
		case RS_INVAL_WAL_LEVEL:
			snprintf(buf, len, "wal_level was lowered below logical");
			return true;
#if PG_VERSION_NUM >= 180000
		case RS_INVAL_IDLE_TIMEOUT:
			snprintf(buf, len, "it was idle for longer than idle_replication_slot_timeout");
			return true;
#endif
	}
	snprintf(buf, len, "of cause %d", (int) slot->data.invalidated);
	return true;
#else
	if (XLogRecPtrIsInvalid(slot->data.invalidated_at) || !XLogRecPtrIsInvalid(slot->data.restart_lsn))
		return false;
	snprintf(buf, len, "the WAL it needed from %X/%X was removed",
			 LSN_FORMAT_ARGS(slot->data.invalidated_at));
	return true;
#endif
}

/*
 * A logical message; 17 added flush (flush it before returning): false, the
 * caller flushes what it must, as on 15.
 */
static inline XLogRecPtr
zs_log_logical_message(const char *prefix, const char *message, size_t size, bool transactional)
{
#if PG_VERSION_NUM >= 170000
	return LogLogicalMessage(prefix, message, size, transactional, false);
#else
	return LogLogicalMessage(prefix, message, size, transactional);
#endif
}

#endif							/* ZS_COMPAT_REPLICATION_H */
