/*-------------------------------------------------------------------------
 * standby_follow.c
 *	  The decoder on a standby: no decoding, the replicated change log
 *	  followed until a promotion.
 *
 * The change log is a table of the streamed database, so a physical
 * standby holds it as replay brings it, row for row. The workers start on
 * a hot standby as soon as it accepts connections; the decoder then
 * decodes nothing (status() says standby) and publishes the replicated
 * log's lineage and head in shared memory whenever replay moves, as it
 * would after its own stores. So the server serves subscribers from the
 * standby (catch-up pages from the log; a standby has no live rounds) and
 * the replicator keeps the standby's own backup replica, both read-only,
 * and view-syncers spread over a primary and its standbys.
 *
 * Promotion ends the wait: the decoder goes on in this process as on any
 * primary. A failover slot synchronized to this standby (standby_slots.c)
 * is found with the replicated log of its lineage, so the lineage goes on
 * where the old primary's slot was confirmed; without one (PostgreSQL 15
 * and 16, or zero_stream.failover off) there is no slot, and a new
 * lineage starts (lineage.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "catalog/namespace.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "utils/guc.h"

#include "changelog/changelog.h"
#include "codec/watermark.h"
#include "decoder/standby_follow.h"
#include "decoder/startup.h"
#include "guc.h"
#include "shmem.h"
#include "spi_xact.h"
#include "standby_hold.h"
#include "standby_slots.h"

/*
 * How often replay's position is looked at: a subscriber of the standby
 * gets a transaction at most this much later than replay brought it (the
 * log is read only when replay moved).
 */
#define ZS_STANDBY_REPLAY_POLL_MS 10

/* Publish the replicated log's lineage and head; false before it exists. */
static bool
follow_log(void)
{
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		head[ZS_WATERMARK_MAXLEN];
	bool		found = false;

	zs_spi_xact_begin(NULL);
	if (OidIsValid(get_namespace_oid(zs_cdc_schema_name(), true)) &&
		zs_changelog_read_replica_version(replica_version))
	{
		zs_changelog_read_head(head);
		found = true;
	}
	zs_spi_xact_commit();
	if (found)
		zs_publish_followed(replica_version, head);
	return found;
}

void
zs_standby_follow(void)
{
	XLogRecPtr	followed = InvalidXLogRecPtr;
	TimeLineID	replay_timeline = 0;
	bool		have_extension = false;
	char	   *slot_name;

	if (!RecoveryInProgress())
		return;
	slot_name = zs_effective_slot_name();
	zs_set_decoder_state(ZS_DECODER_STANDBY);
	/* what the primary holds of this server is not ours to keep once promoted */
	zs_standby_hold_note(zs_standby_name());
	ereport(LOG,
			(errmsg("zero_stream is on a standby: the decoder follows the replicated change log %s until a promotion",
					zs_cdc_schema_name()),
			 zs_failover ? 0 :
			 errdetail("zero_stream.failover is off: after a promotion a new lineage starts.")));

	while (RecoveryInProgress())
	{
		XLogRecPtr	replayed = GetXLogReplayRecPtr(&replay_timeline);

		zs_worker_check_interrupts();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		/* the extension and the log arrive by replay too */
		if (replayed != followed && !have_extension)
			have_extension = zs_startup_extension_exists();
		if (replayed != followed && have_extension && follow_log())
			followed = replayed;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(zs_poll_interval_ms, ZS_STANDBY_REPLAY_POLL_MS), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	/* what operators act on: status().promoted_at, the metrics, the alert */
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->promoted_at = GetCurrentTimestamp();
	zs_shared->promoted_from_timeline = replay_timeline;
	LWLockRelease(zs_shared->lock);
	ereport(LOG,
			(errmsg("zero_stream: this server was promoted from timeline %u to timeline %u; the decoder starts",
					replay_timeline, GetWALInsertionTimeLine()),
			 zs_standby_slots_has_synced_copy(slot_name) ?
			 errdetail("Replication slot \"%s\" was synchronized from the old primary: the change log's lineage goes on.",
					   slot_name) :
			 errdetail("No replication slot \"%s\" was synchronized from the old primary.", slot_name)));
}
