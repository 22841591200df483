/*-------------------------------------------------------------------------
 * slot_health.c
 *	  Whether the decoder's slot is about to be lost, before it is: the
 *	  figures of pg_replication_slots' wal_status and safe_wal_size.
 *
 * With max_slot_wal_keep_size set, a checkpoint removes the WAL a slot
 * still needs once the slot holds more than that (or wal_keep_size), and
 * the slot is lost: a new lineage, every replica restores. Its wal_status
 * is unreserved from the moment it holds more, until that checkpoint;
 * safe_wal_size says how much more WAL may be written before it is lost.
 * zero_stream.status() shows the warning (slot_warning); the server worker
 * (or, without one, the decoder) logs it at a bounded rate.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "replication/slot.h"
#include "utils/timestamp.h"

#include "shmem.h"
#include "slot_health.h"

#define WARNING_INTERVAL_MS (60 * 1000)

void
zs_slot_positions(const char *name, XLogRecPtr *restart_lsn, XLogRecPtr *confirmed_lsn)
{
	ReplicationSlot *slot;

	*restart_lsn = *confirmed_lsn = InvalidXLogRecPtr;
	if (name[0] == '\0')
		return;
	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	slot = SearchNamedReplicationSlot(name, false);
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		*restart_lsn = slot->data.restart_lsn;
		*confirmed_lsn = slot->data.confirmed_flush;
		SpinLockRelease(&slot->mutex);
	}
	LWLockRelease(ReplicationSlotControlLock);
}

/* what PostgreSQL's pg_get_replication_slots() shows as safe_wal_size, or -1 */
static int64
safe_wal_size(XLogRecPtr restart_lsn, XLogRecPtr current)
{
	XLogSegNo	target;
	XLogSegNo	fail_seg;
	XLogRecPtr	fail_lsn;
	uint64		slot_keep;
	uint64		keep;

	if (max_slot_wal_keep_size_mb < 0)
		return -1;
	XLByteToSeg(restart_lsn, target, wal_segment_size);
	slot_keep = XLogMBVarToSegs(max_slot_wal_keep_size_mb, wal_segment_size);
	keep = XLogMBVarToSegs(wal_keep_size_mb, wal_segment_size);
	fail_seg = target + Max(slot_keep, keep) + 1;
	XLogSegNoOffsetToRecPtr(fail_seg, 0, wal_segment_size, fail_lsn);
	return (int64) fail_lsn - (int64) current;
}

bool
zs_slot_at_risk(XLogRecPtr restart_lsn, XLogRecPtr confirmed_lsn, char *buf, size_t len)
{
	XLogRecPtr	current;
	WALAvailability availability;
	int64		safe;
	int64		behind;
	int64		margin;

	if (XLogRecPtrIsInvalid(restart_lsn) || RecoveryInProgress())
		return false;
	current = GetXLogWriteRecPtr();
	availability = GetWALAvailability(restart_lsn);
	if (availability == WALAVAIL_REMOVED || availability == WALAVAIL_INVALID_LSN)
		return false;			/* lost already: the decoder says so as it starts anew */
	safe = safe_wal_size(restart_lsn, current);
	behind = XLogRecPtrIsInvalid(confirmed_lsn) || confirmed_lsn > current ? 0 :
		(int64) (current - confirmed_lsn);
	margin = Max(behind, (int64) max_slot_wal_keep_size_mb * 1024 * 1024 / 5);
	if (availability != WALAVAIL_UNRESERVED && (safe < 0 || safe >= margin))
		return false;
	snprintf(buf, len,
			 "The replication slot may be lost soon: wal_status %s, %s of WAL may still be written before it is (safe_wal_size), the decoder is %s behind",
			 availability == WALAVAIL_UNRESERVED ? "unreserved" :
			 availability == WALAVAIL_EXTENDED ? "extended" : "reserved",
			 safe < 0 ? "any amount" : psprintf(INT64_FORMAT " kB", Max(safe, 0) / 1024),
			 psprintf(INT64_FORMAT " kB", behind / 1024));
	return true;
}

void
zs_warn_if_slot_at_risk(void)
{
	static TimestampTz last_warning = 0;
	static bool at_risk = false;
	char		slot_name[NAMEDATALEN];
	char		why[ZS_ERROR_LEN];
	XLogRecPtr	restart_lsn;
	XLogRecPtr	confirmed;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	strlcpy(slot_name, zs_shared->slot_name, sizeof(slot_name));
	LWLockRelease(zs_shared->lock);
	zs_slot_positions(slot_name, &restart_lsn, &confirmed);

	/* gone or lost already: the decoder says so as it starts anew */
	if (XLogRecPtrIsInvalid(restart_lsn) || GetWALAvailability(restart_lsn) == WALAVAIL_REMOVED)
	{
		at_risk = false;
		return;
	}
	if (!zs_slot_at_risk(restart_lsn, confirmed, why, sizeof(why)))
	{
		if (at_risk)
			ereport(LOG,
					(errmsg("zero_stream: replication slot \"%s\" is no longer at risk of being lost",
							slot_name)));
		at_risk = false;
		return;
	}
	if (last_warning == 0 ||
		TimestampDifferenceExceeds(last_warning, GetCurrentTimestamp(), WARNING_INTERVAL_MS))
	{
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream: replication slot \"%s\" is at risk of being lost", slot_name),
				 errdetail("%s. A lost slot starts a new lineage: every replica restores.", why),
				 errhint("Find what holds the decoder back (zero_stream.status(), zero_stream.workers(), pg_locks), or raise max_slot_wal_keep_size.")));
		last_warning = GetCurrentTimestamp();
	}
	at_risk = true;
}
