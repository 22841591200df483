/*-------------------------------------------------------------------------
 * standby_slots.c
 *	  Which standbys a failover slot waits for, how far they have flushed,
 *	  and whether a standby holds a synchronized copy of a slot.
 *
 * A failover slot (PostgreSQL 17) is copied to standbys running with
 * sync_replication_slots; a promoted standby decodes on from the copy.
 * The copy only ever holds positions the primary's slot had confirmed, so
 * the primary must not confirm, nor send to anyone, what a standby might
 * still lack: PostgreSQL's walsender waits, before it sends a logical
 * change, until the standbys named in synchronized_standby_slots have
 * flushed it (WaitForStandbyConfirmation, StandbySlotsHaveCaughtup).
 * The decoder mirrors that wait: the same list, the same rules (a slot
 * that does not exist, is logical or was invalidated holds everything
 * back; an inactive one holds back what it has not flushed), the same
 * flush position (the physical slot's restart_lsn, which its walsender
 * moves with the standby's flush reports), and the condition variable the
 * walsenders broadcast on. It asks for the least flushed position rather
 * than a yes or no, so that a round decodes up to where the standbys
 * are instead of waiting for them to reach the end of WAL.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "replication/slot.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"
#if PG_VERSION_NUM >= 170000
#include "replication/walsender_private.h"
#endif

#include "compat/replication.h"
#include "guc.h"
#include "standby_slots.h"

#ifdef ZS_HAVE_FAILOVER_SLOTS

/* the names in synchronized_standby_slots, NIL if none (cached per value) */
static List *
standby_slot_names(void)
{
	static char *parsed_value = NULL;
	static char *raw = NULL;	/* the names point into it */
	static List *names = NIL;
	List	   *list;

	if (synchronized_standby_slots == NULL || synchronized_standby_slots[0] == '\0')
		return NIL;
	if (parsed_value != NULL && strcmp(parsed_value, synchronized_standby_slots) == 0)
		return names;

	/* PostgreSQL's check hook accepted it: a list of identifiers */
	list_free(names);
	names = NIL;
	if (raw != NULL)
		pfree(raw);
	raw = MemoryContextStrdup(TopMemoryContext, synchronized_standby_slots);
	if (!SplitIdentifierString(raw, ',', &list))
		list = NIL;
	if (parsed_value != NULL)
		pfree(parsed_value);
	parsed_value = MemoryContextStrdup(TopMemoryContext, synchronized_standby_slots);
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		names = list_copy(list);
		MemoryContextSwitchTo(old);
	}
	list_free(list);
	return names;
}

bool
zs_standby_slots_flushed(XLogRecPtr *flushed, char *problem, size_t len)
{
	List	   *names = standby_slot_names();
	ListCell   *lc;
	XLogRecPtr	least = InvalidXLogRecPtr;
	XLogRecPtr	least_inactive = InvalidXLogRecPtr;
	const char *inactive_name = NULL;

	if (problem != NULL && len > 0)
		problem[0] = '\0';
	*flushed = InvalidXLogRecPtr;
	if (names == NIL || RecoveryInProgress())
		return false;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	foreach(lc, names)
	{
		const char *name = (const char *) lfirst(lc);
		ReplicationSlot *slot = SearchNamedReplicationSlot(name, false);
		XLogRecPtr	restart_lsn;
		bool		invalidated;
		bool		inactive;

		if (slot == NULL || SlotIsLogical(slot))
		{
			if (problem != NULL)
				snprintf(problem, len, slot == NULL ?
						 "replication slot \"%s\" named in synchronized_standby_slots does not exist" :
						 "replication slot \"%s\" named in synchronized_standby_slots is a logical slot",
						 name);
			LWLockRelease(ReplicationSlotControlLock);
			return true;
		}
		SpinLockAcquire(&slot->mutex);
		restart_lsn = slot->data.restart_lsn;
		invalidated = slot->data.invalidated != RS_INVAL_NONE;
		inactive = zs_slot_active_pid(slot) == 0;
		SpinLockRelease(&slot->mutex);
		if (invalidated || XLogRecPtrIsInvalid(restart_lsn))
		{
			if (problem != NULL)
				snprintf(problem, len, invalidated ?
						 "physical replication slot \"%s\" named in synchronized_standby_slots has been invalidated" :
						 "physical replication slot \"%s\" named in synchronized_standby_slots has not reserved WAL yet",
						 name);
			LWLockRelease(ReplicationSlotControlLock);
			return true;
		}
		if (XLogRecPtrIsInvalid(least) || restart_lsn < least)
			least = restart_lsn;
		if (inactive && (XLogRecPtrIsInvalid(least_inactive) || restart_lsn < least_inactive))
		{
			least_inactive = restart_lsn;
			inactive_name = name;
		}
	}
	LWLockRelease(ReplicationSlotControlLock);

	*flushed = least;
	/* an inactive standby only matters while it is the one behind */
	if (problem != NULL && inactive_name != NULL && least_inactive == least &&
		least < GetFlushRecPtr(NULL))
		snprintf(problem, len,
				 "the standby of replication slot \"%s\" (synchronized_standby_slots) is not connected; it flushed up to %X/%X",
				 inactive_name, LSN_FORMAT_ARGS(least));
	return true;
}

bool
zs_failover_waits(XLogRecPtr *flushed)
{
	*flushed = InvalidXLogRecPtr;
	if (MyReplicationSlot == NULL || !MyReplicationSlot->data.failover)
		return false;
	return zs_standby_slots_flushed(flushed, NULL, 0);
}

void
zs_failover_wait_for(XLogRecPtr lsn)
{
	XLogRecPtr	flushed;

	while (zs_failover_waits(&flushed) && (flushed == InvalidXLogRecPtr || flushed < lsn))
	{
		zs_standby_slots_sleep(1000);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}

void
zs_standby_slots_sleep(long timeout_ms)
{
	/*
	 * A walsender broadcasts here when a standby's flush report moves its
	 * slot; the broadcast sets our latch, as a commit's wake-up or a signal
	 * does, and any of them ends the wait (ConditionVariableTimedSleep would
	 * sleep on through a latch set by anything else).
	 */
	ConditionVariablePrepareToSleep(&WalSndCtl->wal_confirm_rcv_cv);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 timeout_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	ConditionVariableCancelSleep();
}

/* the copy of slot name on this standby: synced and kept, and why not */
static bool
synced_copy(const char *name, ZsSlotSyncSkip *skip)
{
	ReplicationSlot *slot;
	bool		synced = false;

	*skip = ZS_SLOTSYNC_SKIP_NONE;
	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	slot = SearchNamedReplicationSlot(name, false);
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		synced = slot->data.synced && slot->data.persistency == RS_PERSISTENT &&
			slot->data.invalidated == RS_INVAL_NONE;
		*skip = zs_slot_sync_skip(slot);
		SpinLockRelease(&slot->mutex);
	}
	LWLockRelease(ReplicationSlotControlLock);
	return synced;
}

bool
zs_standby_slots_has_synced_copy(const char *name)
{
	ZsSlotSyncSkip skip;

	return synced_copy(name, &skip);
}

/* what slot synchronization's last skip of the copy means, NULL if none */
static const char *
skip_words(ZsSlotSyncSkip skip)
{
	switch (skip)
	{
		case ZS_SLOTSYNC_SKIP_NONE:
			return NULL;
		case ZS_SLOTSYNC_SKIP_WAL_NOT_FLUSHED:
			return "this standby has not flushed the WAL up to the primary slot's confirmed position";
		case ZS_SLOTSYNC_SKIP_BEHIND:
			return "the primary's slot still needs WAL or catalog rows older than this standby keeps; "
				"the copy is kept once the primary's decoder confirms past them";
		case ZS_SLOTSYNC_SKIP_NO_SNAPSHOT:
			return "this standby cannot yet build a consistent snapshot at the primary slot's position";
		case ZS_SLOTSYNC_SKIP_INVALID:
			return "the copy here was invalidated";
	}
	return NULL;
}

void
zs_failover_describe(const char *slot_name, XLogRecPtr confirmed_lsn, ZsFailoverStatus *status)
{
	XLogRecPtr	flushed;

	memset(status, 0, sizeof(*status));
	status->mode = zs_failover ? "on" : "off";
	if (!zs_failover)
		return;
	if (RecoveryInProgress())
	{
		ZsSlotSyncSkip skip;
		const char *why;

		status->synced_known = true;
		status->synced = synced_copy(slot_name, &skip);
		why = skip_words(skip);
		if (!status->synced)
		{
			snprintf(status->warning, sizeof(status->warning),
					 "this standby has no synchronized copy of replication slot \"%s\"%s%s%s: after a promotion, a new lineage would start",
					 slot_name, why ? " (slot synchronization skipped it: " : "",
					 why ? why : "", why ? ")" : "");
			if (skip == ZS_SLOTSYNC_SKIP_BEHIND || skip == ZS_SLOTSYNC_SKIP_NO_SNAPSHOT)
				status->hint = "Slot synchronization keeps the copy once the primary's slot moves past this standby's oldest WAL and catalog rows, "
					"which needs a standby snapshot in the primary's WAL: the background writer logs one while the primary writes, "
					"and SELECT pg_log_standby_snapshot() on the primary logs one at once.";
			else
				status->hint = "Set sync_replication_slots = on, hot_standby_feedback = on, primary_slot_name, and a dbname in primary_conninfo here, "
					"and name this standby's slot in the primary's synchronized_standby_slots.";
		}
		return;
	}
	if (synchronized_standby_slots != NULL && synchronized_standby_slots[0] != '\0')
		status->standbys = synchronized_standby_slots;
	if (!zs_standby_slots_flushed(&flushed, status->warning, sizeof(status->warning)))
	{
		snprintf(status->warning, sizeof(status->warning),
				 "zero_stream.failover is on but synchronized_standby_slots names no standby: "
				 "a promoted standby may lack transactions that subscribers already have");
		status->hint = "Set synchronized_standby_slots to the physical replication slots of the standbys that may be promoted "
			"(each one's primary_slot_name), with sync_replication_slots = on on them; or set zero_stream.failover = off.";
		return;
	}
	status->synced_known = !XLogRecPtrIsInvalid(confirmed_lsn);
	status->synced = !XLogRecPtrIsInvalid(flushed) && flushed >= confirmed_lsn;
	if (status->warning[0] != '\0')
		status->hint = "The decoder sends and confirms only what every standby in synchronized_standby_slots has flushed: "
			"start that standby, or remove its slot from synchronized_standby_slots.";
}

#else							/* no failover slots before PostgreSQL 17 */

bool
zs_failover_waits(XLogRecPtr *flushed)
{
	*flushed = InvalidXLogRecPtr;
	return false;
}

void
zs_failover_wait_for(XLogRecPtr lsn)
{
}

bool
zs_standby_slots_flushed(XLogRecPtr *flushed, char *problem, size_t len)
{
	*flushed = InvalidXLogRecPtr;
	if (problem != NULL && len > 0)
		problem[0] = '\0';
	return false;
}

void
zs_standby_slots_sleep(long timeout_ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 timeout_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}

bool
zs_standby_slots_has_synced_copy(const char *name)
{
	return false;
}

void
zs_failover_describe(const char *slot_name, XLogRecPtr confirmed_lsn, ZsFailoverStatus *status)
{
	memset(status, 0, sizeof(*status));
	status->mode = "unsupported";
}

#endif
