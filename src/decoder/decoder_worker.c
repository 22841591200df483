/*-------------------------------------------------------------------------
 * decoder_worker.c
 *	  The decoder background worker: WAL -> pgoutput -> Zero change log.
 *
 * Its phases, each in its own file:
 *   standby_follow.c  on a standby, no decoding until a promotion;
 *   startup.c   checks and preparations before the slot is taken;
 *   lineage.c   the slot, created or acquired, and the lineage tied to it;
 *   claim.c     the change log claimed (or waited for, if taken over);
 *   stage.c     pgoutput messages parsed, encoded and staged;
 *   round.c     a round of them stored in one transaction, the slot confirmed;
 *   resync.c    why a new lineage starts (resync(), a dropped publication).
 * This file runs them: the start-up, one start_stream() for a new stream
 * (at start and after each resync), and the loop. One loop iteration runs
 * one bounded round, then every duty that must not wait for an idle
 * moment, in this order: a backfill's step, a purge step, saving the
 * purge floor's positions, a lag report, a configuration reload, a
 * resync request, the periodic slot save; it sleeps only when the round
 * found nothing to decode.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "storage/latch.h"
#include "storage/standby.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "backfill/backfill.h"
#include "changelog/changelog.h"
#include "live/live_round.h"
#include "decoder/claim.h"
#include "decoder/lag_report.h"
#include "decoder/lineage.h"
#include "decoder/resync.h"
#include "decoder/round.h"
#include "decoder/shard_setup.h"
#include "decoder/standby_follow.h"
#include "decoder/startup.h"
#include "decoder/store.h"
#include "decoder/stream.h"
#include "decoder/subscriber_positions.h"
#include "decoding/relcache.h"
#include "guc.h"
#include "purge/purge.h"
#include "shmem.h"
#include "slot_health.h"
#include "spi_xact.h"
#include "standby_slots.h"

PGDLLEXPORT void zs_decoder_main(Datum main_arg);

/*
 * How often the idle decoder looks again when the next WAL record is only
 * partly flushed (see round.c's reader): its rest is in WAL buffers and on
 * its way to disk, with no commit that would wake us.
 */
#define ZS_PARTIAL_RECORD_POLL_MS 1

/* The one stream of this process (the error handler reads where it stopped). */
static ZsStream stream;

static List *
plugin_options(List *publications)
{
	StringInfoData names;
	ListCell   *lc;

	initStringInfo(&names);
	foreach(lc, publications)
	{
		if (names.len > 0)
			appendStringInfoChar(&names, ',');
		appendStringInfoString(&names, quote_identifier((char *) lfirst(lc)));
	}
	/* messages: the DDL capture's, in the transactions that made the DDL */
	return list_make3(makeDefElem("proto_version", (Node *) makeString("1"), -1),
					  makeDefElem("publication_names", (Node *) makeString(names.data), -1),
					  makeDefElem("messages", (Node *) makeString("true"), -1));
}

/*
 * Log a running-transactions record, from which decoding can later restart.
 *
 * The slot's restart_lsn only moves when decoding passes such records (and
 * the position after them is confirmed). The background writer logs one
 * every 15 s of activity, counted from its own start, and online
 * checkpoints do; a server that crash-restarts more often than that would
 * log none, and every restart would re-read all WAL since the first crash.
 * So the decoder logs one when it starts and at each slot save, as the
 * walsender does when it creates a slot: a crash loop then still leaves
 * restart points behind, and each restart re-reads less.
 */
static void
mark_restart_point(void)
{
	static XLogRecPtr last_insert = InvalidXLogRecPtr;
	XLogRecPtr	insert = GetXLogInsertRecPtr();

	if (insert == last_insert)
		return;					/* nothing written since: no need */
	(void) LogStandbySnapshot();
	last_insert = GetXLogInsertRecPtr();
}

/*
 * A new stream on the acquired slot, at start and after a resync: claim
 * the change log and read where it stands, forget an earlier stream's
 * backfill, gate the purge at the head, and decode from the origin's
 * progress; then tell shared memory the decoder streams.
 */
static void
start_stream(ZsStream *s)
{
	XLogRecPtr	start = replorigin_session_get_progress(false);
	MemoryContext old;

	zs_claim_change_log(s);
	zs_backfill_reset(&s->backfill);
	strlcpy(s->purge_gate, s->stored_head, sizeof(s->purge_gate));
	/* the old slot's position is nothing to confirm on the new one */
	zs_round_forget_confirmations(s);
	zs_lineage_apply_failover();

	/* inside a transaction, so this backend's xmin keeps counting (fact 3) */
	StartTransactionCommand();
	old = MemoryContextSwitchTo(TopMemoryContext);
	s->ctx = CreateDecodingContext(start, plugin_options(s->publications), false,
								   zs_round_wal_reader(),
								   zs_stage_prepare_write, zs_stage_write, NULL);
	MemoryContextSwitchTo(old);
	list_free(s->publication_oids);
	s->publication_oids = zs_resync_publication_oids(s->publications);
	CommitTransactionCommand();
	s->ctx->output_writer_private = &s->stage;
	XLogBeginRead(s->ctx->reader, MyReplicationSlot->data.restart_lsn);
	ereport(LOG,
			(errmsg("zero_stream decoding slot \"%s\" from %X/%X (progress %X/%X), change log head %s",
					NameStr(MyReplicationSlot->data.name),
					LSN_FORMAT_ARGS(MyReplicationSlot->data.restart_lsn),
					LSN_FORMAT_ARGS(start), s->stored_head)));

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->slot_name, s->slot_name, sizeof(zs_shared->slot_name));
	strlcpy(zs_shared->replica_version, s->replica_version, sizeof(zs_shared->replica_version));
	strlcpy(zs_shared->last_watermark, s->stored_head, sizeof(zs_shared->last_watermark));
	zs_shared->confirmed_lsn = MyReplicationSlot->data.confirmed_flush;
	zs_shared->decoder_state = ZS_DECODER_STREAMING;
	LWLockRelease(zs_shared->lock);
}

/* A resync taken in the loop: the old stream ends, a new lineage starts. */
static void
restart_stream(ZsStream *s, ZsResyncCause cause, const char *reason)
{
	zs_live_clear();
	FreeDecodingContext(s->ctx);
	s->ctx = NULL;
	zs_resync_report(cause, reason, s->replica_version);
	zs_lineage_restart(s->slot_name, s->publications, s->replica_version,
					   cause == ZS_RESYNC_ASKED);
	start_stream(s);
}

/*
 * Every zero_stream.slot_save_interval: a restart point, the slot saved,
 * the publications still there, and (without a server worker, which
 * otherwise does it) the slot's health.
 */
static void
save_slot(ZsStream *s, TimestampTz *last_save)
{
	if (!TimestampDifferenceExceeds(*last_save, GetCurrentTimestamp(),
									zs_slot_save_interval_ms))
		return;
	mark_restart_point();
	ReplicationSlotSave();
	*last_save = GetCurrentTimestamp();
	zs_resync_check_publications(s->publications, s->publication_oids,
								 s->ctx->reader->EndRecPtr);
	if (zs_port == 0)
		zs_warn_if_slot_at_risk();
}

/* Sleep until woken, or until a pending confirmation or partial record is due. */
static void
sleep_idle(ZsStream *s)
{
	long		sleep_ms = zs_round_settle(s);

	sleep_ms = sleep_ms < 0 ? zs_poll_interval_ms : Min(sleep_ms, zs_poll_interval_ms);
	/*
	 * Held back by the standbys of a failover slot (the round's WAL or the
	 * confirmation): until one of them reports a flush.
	 */
	if (s->round_held || s->confirm_held)
	{
		zs_standby_slots_sleep(sleep_ms);
		return;
	}
	/* the next record was only partly flushed (or more WAL is, since) */
	if (s->ctx->reader->EndRecPtr < GetFlushRecPtr(NULL))
		sleep_ms = Min(sleep_ms, ZS_PARTIAL_RECORD_POLL_MS);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 sleep_ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}

/*
 * The slot and lineage to stream from: a new lineage when one was asked
 * for while we were not running (by resync(), or after a failure). A log
 * another change streamer has taken over is neither written nor given a
 * new lineage (zs_lineage_acquire_slot would for a missing slot) until resync().
 */
static void
take_slot(ZsStream *s)
{
	char		reason[ZS_ERROR_LEN];
	ZsResyncCause cause = zs_resync_take(reason);
	char	   *taken_by;
	bool		have_old;

	if (cause != ZS_RESYNC_ASKED && zs_claim_taken_over(&taken_by))
	{
		zs_claim_wait_while_taken_over(s->slot_name, taken_by);
		cause = ZS_RESYNC_ASKED;
	}
	if (cause == ZS_RESYNC_NONE)
	{
		zs_lineage_acquire_slot(s->slot_name, s->publications, s->replica_version);
		return;
	}
	zs_spi_xact_begin(NULL);
	have_old = zs_changelog_read_replica_version(s->replica_version);
	zs_spi_xact_commit();
	zs_resync_report(cause, reason, have_old ? s->replica_version : NULL);
	zs_lineage_replace(s->slot_name, s->publications, s->replica_version,
					   cause == ZS_RESYNC_ASKED);
}

static void
run_decoder(MemoryContext worker_context)
{
	ZsStream   *s = &stream;
	List	   *app_publications;
	bool		default_publication;
	TimestampTz last_slot_save = GetCurrentTimestamp();

	zs_standby_follow();
	zs_startup_check_server();
	zs_live_clear();			/* a round of a decoder before us is not ours to store */
	zs_startup_session();
	zs_startup_wait_for_extension();
	zs_set_decoder_state(ZS_DECODER_STARTING);

	s->slot_name = zs_effective_slot_name();
	app_publications = zs_app_publication_list(&default_publication);
	zs_startup_change_log();
	/* our own DDL before our origin is set up (startup.c) */
	zs_startup_publications(app_publications, default_publication);
	zs_shard_setup(app_publications);
	s->publications = zs_publication_list();
	zs_startup_announce_schema_drift();
	zs_startup_origin();
	/* the initial copy encodes rows through the relation cache */
	zs_relcache_init(worker_context, zs_cdc_schema_name());
	zs_backfill_init(&s->backfill);
	zs_stage_init(&s->stage, worker_context, ZS_ROUND_SPOOL_MEMORY, s->stored_head, &s->backfill);
	zs_purge_init(&s->purge);
	s->decoding_owner = ResourceOwnerCreate(NULL, "zero_stream decoding");

	take_slot(s);
	/* where subscribers were before a restart, for the first purge */
	zs_positions_restore(s->replica_version);
	start_stream(s);
	mark_restart_point();

	for (;;)
	{
		bool		busy;
		bool		stored;
		ZsBackfillBatch backfill;
		char		reason[ZS_ERROR_LEN];
		ZsResyncCause cause;

		zs_worker_check_interrupts();
		busy = zs_round_run(s, &stored);
		/* a backfill's messages, between rounds, through the one writer */
		if (zs_backfill_step(&s->backfill, s->ctx->reader->EndRecPtr, &backfill))
		{
			zs_store_backfill(s, &backfill);
			zs_backfill_stored(&s->backfill, s->stored_head);
			busy = true;
		}
		/* the purge yields to rounds that stored (its deletes are WAL we skip) */
		if (zs_purge_step(&s->purge, s->purge_gate, busy && stored))
			busy = true;
		zs_positions_save_step();
		zs_lag_report_step();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			zs_claim_readvertise();
			zs_lineage_apply_failover();
		}
		if ((cause = zs_resync_take(reason)) != ZS_RESYNC_NONE)
		{
			restart_stream(s, cause, reason);
			continue;
		}
		save_slot(s, &last_slot_save);
		if (!busy)
			sleep_idle(s);
	}
}

void
zs_decoder_main(Datum main_arg)
{
	MemoryContext worker_context;

	zs_worker_attach(ZS_WORKER_DECODER, "zero_stream decoder");
	worker_context = AllocSetContextCreate(TopMemoryContext, "zero_stream decoder",
										   ALLOCSET_DEFAULT_SIZES);

	PG_TRY();
	{
		run_decoder(worker_context);
	}
	PG_CATCH();
	{
		if (stream.decoding)
			zs_resync_after_decoding_error(worker_context, stream.publications,
										   stream.stage.position.lsn);
		/* a round published but not stored is stored by the next decoder */
		zs_live_clear();
		zs_worker_fail(ZS_WORKER_DECODER, worker_context);
	}
	PG_END_TRY();
}
