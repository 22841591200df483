/*-------------------------------------------------------------------------
 * shmem.c
 *	  The shared state: its request/startup hooks, the workers' start-up
 *	  and failure bookkeeping, requests to the decoder, and small
 *	  publishing helpers.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/pmsignal.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "shmem.h"

static bool record_departed(const char *id, ZsSubscriberMode mode, const char *replica_version,
							const char *watermark, char *evicted);

static int
max_departed(void)
{
	return zs_max_subscribers + ZS_EXTRA_DEPARTED;
}

static Size
shared_state_size(void)
{
	return add_size(add_size(offsetof(ZsSharedState, subscribers),
							 mul_size(zs_max_subscribers, sizeof(ZsSubscriberSlot))),
					mul_size(max_departed(), sizeof(ZsDepartedSubscriber)));
}

static Size
live_round_size(void)
{
	return zs_live_buffer_kb == 0 ? 0 :
		add_size(offsetof(ZsLiveRound, data), (Size) zs_live_buffer_kb * 1024);
}

ZsSharedState *zs_shared = NULL;
ZsLiveRound *zs_live = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
zs_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(shared_state_size()));
	RequestAddinShmemSpace(MAXALIGN(live_round_size()));
	RequestNamedLWLockTranche("zero_stream", 2);
}

static void
zs_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	zs_shared = ShmemInitStruct("zero_stream", shared_state_size(), &found);
	if (!found)
	{
		memset(zs_shared, 0, shared_state_size());
		zs_shared->max_subscribers = zs_max_subscribers;
		zs_shared->max_departed = max_departed();
		zs_shared->lock = &(GetNamedLWLockTranche("zero_stream"))->lock;
	}
	if (live_round_size() > 0)
	{
		zs_live = ShmemInitStruct("zero_stream live round", live_round_size(), &found);
		if (!found)
		{
			memset(zs_live, 0, offsetof(ZsLiveRound, data));
			zs_live->capacity = (Size) zs_live_buffer_kb * 1024;
			zs_live->lock = &(GetNamedLWLockTranche("zero_stream"))[1].lock;
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

void
zs_shared_state_install_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = zs_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = zs_shmem_startup;
}

void
zs_require_shared_state(void)
{
	if (zs_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream is not loaded through shared_preload_libraries"),
				 errhint("Add zero_stream to shared_preload_libraries and restart the server.")));
}

const char *
zs_subscriber_mode_name(ZsSubscriberMode mode)
{
	switch (mode)
	{
		case ZS_SUB_MODE_NONE:
			return NULL;
		case ZS_SUB_MODE_SERVING:
			return "serving";
		case ZS_SUB_MODE_BACKUP:
			return "backup";
		case ZS_SUB_MODE_SNAPSHOT:
			return "snapshot";
	}
	return "unknown";
}

const char *
zs_decoder_state_name(ZsDecoderState state)
{
	switch (state)
	{
		case ZS_DECODER_NOT_STARTED:
			return "not started";
		case ZS_DECODER_STARTING:
			return "starting";
		case ZS_DECODER_WAITING_FOR_EXTENSION:
			return "waiting for CREATE EXTENSION";
		case ZS_DECODER_WAITING_FOR_UPDATE:
			return "waiting for ALTER EXTENSION UPDATE";
		case ZS_DECODER_CREATING_SLOT:
			return "creating replication slot";
		case ZS_DECODER_INITIAL_COPY:
			return "initial copy";
		case ZS_DECODER_STREAMING:
			return "streaming";
		case ZS_DECODER_TAKEN_OVER:
			return "stopped: change log taken over";
		case ZS_DECODER_STANDBY:
			return "standby";
		case ZS_DECODER_FAILED:
			return "error (restarting)";
	}
	return "unknown";
}

const char *
zs_backup_state_name(ZsBackupState state)
{
	switch (state)
	{
		case ZS_BACKUP_NOT_STARTED:
			return "not_started";
		case ZS_BACKUP_WAITING_FOR_DECODER:
			return "waiting_for_decoder";
		case ZS_BACKUP_MISSING:
			return "missing";
		case ZS_BACKUP_STALE:
			return "stale";
		case ZS_BACKUP_REPLACED:
			return "replaced";
		case ZS_BACKUP_RESTORING:
			return "restoring";
		case ZS_BACKUP_FOLLOWING:
			return "following";
		case ZS_BACKUP_FAILED:
			return "failed";
	}
	return "unknown";
}

/* a timestamp as text, in buf (timestamptz_to_str's is static) */
static const char *
timestamp_text(TimestampTz t, char *buf)
{
	strlcpy(buf, timestamptz_to_str(t), MAXDATELEN + 1);
	return buf;
}

/* why the backup replica does not vouch for the gate yet */
static const char *
backup_pending_text(const ZsPurgeHolder *h)
{
	switch (h->backup_state)
	{
		case ZS_BACKUP_NOT_STARTED:
			return "the replicator has not opened it yet";
		case ZS_BACKUP_WAITING_FOR_DECODER:
			return "the replicator waits for the decoder";
		case ZS_BACKUP_REPLACED:
			return "a new initial copy replaces it";
		case ZS_BACKUP_RESTORING:
			return "it is copied from the primary's";
		default:
			return psprintf("at %s", h->backup_watermark[0] ? h->backup_watermark : "nothing yet");
	}
}

/* why a backup replica that cannot be served from holds nothing */
static const char *
backup_unusable_text(ZsBackupState state)
{
	switch (state)
	{
		case ZS_BACKUP_MISSING:
			return "the backup replica is missing";
		case ZS_BACKUP_STALE:
			return "the backup replica is of another lineage";
		case ZS_BACKUP_FAILED:
			return "the replicator is failing";
		default:
			return NULL;
	}
}

static const char *
mode_text(ZsSubscriberMode mode)
{
	return mode == ZS_SUB_MODE_SNAPSHOT ? "reservation" : "subscriber";
}

char *
zs_purge_holder_text(const ZsPurgeHolder *h)
{
	char		since[MAXDATELEN + 1];
	char		until[MAXDATELEN + 1];
	const char *unusable;

	switch (h->kind)
	{
		case ZS_HOLDER_UNKNOWN:
			return NULL;
		case ZS_HOLDER_WAITING_FOR_BACKUP:
			return psprintf("waiting for the backup replica to reach %s (%s)",
							h->watermark, backup_pending_text(h));
		case ZS_HOLDER_BACKUP:
			return pstrdup("backup replica");
		case ZS_HOLDER_SUBSCRIBER:
			return psprintf("%s %s (%s)", mode_text(h->mode), h->id, h->address);
		case ZS_HOLDER_DEPARTED:
			return psprintf("%s %s, disconnected at %s%s, retained until %s",
							mode_text(h->mode), h->id,
							timestamp_text(h->departed_at, since),
							h->restored ? " (before the restart)" : "",
							timestamp_text(TimestampTzPlusMilliseconds(h->departed_at, h->retention_ms),
										   until));
		case ZS_HOLDER_NOTHING:
			unusable = backup_unusable_text(h->backup_state);
			if (unusable != NULL)
				return psprintf("no subscriber to vouch for a watermark, and %s", unusable);
			return pstrdup("no backup replica and no subscriber to vouch for a watermark");
		case ZS_HOLDER_PURGE_LOCK:
			return pstrdup("the purge lock (a row lock on the oldest change-log row)");
	}
	return NULL;
}

void
zs_set_decoder_state(ZsDecoderState state)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->decoder_state = state;
	LWLockRelease(zs_shared->lock);
}

/*
 * With the lock held exclusively, after the backup replica's state or
 * progress changed: count the move, release the lock, and wake the decoder
 * if its purge waits for the backup replica (it looks again at once).
 */
static void
release_after_backup_move(void)
{
	bool		wake;

	zs_shared->backup_moves++;
	wake = zs_shared->purge_waits_for_backup;
	LWLockRelease(zs_shared->lock);
	if (wake)
		zs_wake_worker(ZS_WORKER_DECODER);
}

void
zs_set_backup_state(ZsBackupState state, const char *detail, const char *watermark)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->backup_state = state;
	strlcpy(zs_shared->backup_detail, detail ? detail : "", sizeof(zs_shared->backup_detail));
	if (watermark != NULL)
		strlcpy(zs_shared->backup_watermark, watermark, sizeof(zs_shared->backup_watermark));
	release_after_backup_move();
}

void
zs_set_backup_progress(const char *watermark, uint64 rows_applied)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->backup_watermark, watermark, sizeof(zs_shared->backup_watermark));
	zs_shared->backup_rows_applied = rows_applied;
	release_after_backup_move();
}

void
zs_set_last_reset(const char *message)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->last_reset, message, sizeof(zs_shared->last_reset));
	zs_shared->last_reset_time = GetCurrentTimestamp();
	zs_shared->resets++;
	LWLockRelease(zs_shared->lock);
}

void
zs_count_server_refusal(int kind)
{
	Assert(kind >= 0 && kind < ZS_SERVER_REFUSAL_KINDS);
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->server_refusals[kind]++;
	LWLockRelease(zs_shared->lock);
}

void
zs_request_reset(const char *reason)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->resync_cause = ZS_RESYNC_FAILURE;
	strlcpy(zs_shared->reset_reason, reason, sizeof(zs_shared->reset_reason));
	LWLockRelease(zs_shared->lock);
}

void
zs_set_last_error(const char *message)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->last_error, message, sizeof(zs_shared->last_error));
	zs_shared->last_error_time = GetCurrentTimestamp();
	LWLockRelease(zs_shared->lock);
}

void
zs_record_value_error(const char *message)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->value_errors++;
	strlcpy(zs_shared->last_value_error, message, sizeof(zs_shared->last_value_error));
	zs_shared->last_value_error_time = GetCurrentTimestamp();
	LWLockRelease(zs_shared->lock);
}

static void
worker_detach(int code, Datum arg)
{
	ZsWorkerKind kind = (ZsWorkerKind) DatumGetInt32(arg);

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->workers[kind].pid = 0;
	zs_shared->workers[kind].latch = NULL;
	/*
	 * The server's connections are gone with it. Their subscribers and
	 * reservations did not leave on their own: their positions are kept for
	 * subscriber_retention, as after a restart.
	 */
	if (kind == ZS_WORKER_SERVER)
		for (int i = 0; i < zs_shared->max_subscribers; i++)
		{
			ZsSubscriberSlot *s = &zs_shared->subscribers[i];

			if (zs_slot_holds_floor(s))
				(void) record_departed(s->id, s->mode, s->replica_version, s->watermark_acked, NULL);
			s->in_use = false;
		}
	LWLockRelease(zs_shared->lock);
}

void
zs_worker_attach(ZsWorkerKind kind, const char *name)
{
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(zs_database, NULL, 0);
	pgstat_report_appname(name);

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->workers[kind].pid = MyProcPid;
	zs_shared->workers[kind].latch = MyLatch;
	zs_shared->workers[kind].starts++;
	LWLockRelease(zs_shared->lock);
	before_shmem_exit(worker_detach, Int32GetDatum((int32) kind));
}

TimeLineID
zs_current_timeline(void)
{
	TimeLineID	timeline = 0;

	if (RecoveryInProgress())
		(void) GetXLogReplayRecPtr(&timeline);
	else
		timeline = GetWALInsertionTimeLine();
	return timeline;
}

void
zs_worker_check_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
	/* a flag set by the postmaster's death signal: cheap while it lives */
	if (!PostmasterIsAlive())
		proc_exit(1);
}

void
zs_worker_fail(ZsWorkerKind kind, MemoryContext context)
{
	ErrorData  *edata;

	/* the error may have come while a lock was held, ours among them */
	LWLockReleaseAll();
	MemoryContextSwitchTo(context);
	edata = CopyErrorData();
	if (zs_shared != NULL)
	{
		ZsWorkerSlot *slot = &zs_shared->workers[kind];

		LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
		strlcpy(slot->last_error, edata->message, sizeof(slot->last_error));
		slot->last_error_time = GetCurrentTimestamp();
		if (kind == ZS_WORKER_DECODER)
		{
			strlcpy(zs_shared->last_error, edata->message, sizeof(zs_shared->last_error));
			zs_shared->last_error_time = slot->last_error_time;
			zs_shared->decoder_state = ZS_DECODER_FAILED;
		}
		else if (kind == ZS_WORKER_REPLICATOR)
			zs_shared->backup_state = ZS_BACKUP_FAILED;
		LWLockRelease(zs_shared->lock);
	}
	FreeErrorData(edata);
	PG_RE_THROW();
}

int
zs_ask_decoder(ZsDecoderRequest request, uint64 *purge_runs)
{
	int			pid;
	Latch	   *latch;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	pid = zs_shared->workers[ZS_WORKER_DECODER].pid;
	latch = zs_shared->workers[ZS_WORKER_DECODER].latch;
	if (purge_runs != NULL)
		*purge_runs = zs_shared->purge_runs;
	if (pid != 0 && request == ZS_ASK_PURGE)
		zs_shared->purge_requested = true;
	else if (pid != 0)
	{
		zs_shared->resync_cause = ZS_RESYNC_ASKED;
		zs_shared->reset_reason[0] = '\0';
	}
	LWLockRelease(zs_shared->lock);
	if (pid == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the zero_stream decoder is not running"),
				 errhint("Check zero_stream.status() and the server log.")));
	SetLatch(latch);
	return pid;
}

Latch *
zs_worker_latch(ZsWorkerKind kind)
{
	Latch	   *latch;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	latch = zs_shared->workers[kind].latch;
	LWLockRelease(zs_shared->lock);
	return latch;
}

void
zs_wake_worker(ZsWorkerKind kind)
{
	Latch	   *latch = zs_worker_latch(kind);

	if (latch != NULL)
		SetLatch(latch);
}

/*
 * With the lock held: publish the change log's head (and lineage, if
 * given); returns whether it moved.
 */
static bool
set_head(const char *replica_version, const char *head)
{
	bool		moved = strcmp(zs_shared->last_watermark, head) != 0;

	if (replica_version != NULL && strcmp(zs_shared->replica_version, replica_version) != 0)
	{
		strlcpy(zs_shared->replica_version, replica_version, sizeof(zs_shared->replica_version));
		moved = true;
	}
	strlcpy(zs_shared->last_watermark, head, sizeof(zs_shared->last_watermark));
	return moved;
}

/* New rows are committed: subscribers and the replicator may read them. */
static void
wake_log_readers(void)
{
	Latch	   *server_latch;
	Latch	   *replicator_latch;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	server_latch = zs_shared->workers[ZS_WORKER_SERVER].latch;
	replicator_latch = zs_shared->workers[ZS_WORKER_REPLICATOR].latch;
	LWLockRelease(zs_shared->lock);
	if (server_latch != NULL)
		SetLatch(server_latch);
	if (replicator_latch != NULL)
		SetLatch(replicator_latch);
}

void
zs_publish_stored(const char *head, uint64 ntxns, uint64 nchanges,
				  TimestampTz upstream_commit_time)
{
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->txns_stored += ntxns;
	zs_shared->changes_stored += nchanges;
	zs_shared->local_commits++;
	zs_shared->last_store_time = now;
	if (upstream_commit_time != 0)
		zs_shared->last_upstream_commit_time = upstream_commit_time;
	(void) set_head(NULL, head);
	zs_shared->last_error[0] = '\0';
	LWLockRelease(zs_shared->lock);
	wake_log_readers();
}

void
zs_publish_followed(const char *replica_version, const char *head)
{
	bool		moved;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	moved = set_head(replica_version, head);
	LWLockRelease(zs_shared->lock);
	if (moved)
		wake_log_readers();
}

/*
 * With the lock held: the entry of (id, mode), else a free one, else the
 * one that left first.
 */
static ZsDepartedSubscriber *
departed_entry(const char *id, ZsSubscriberMode mode)
{
	ZsDepartedSubscriber *entries = zs_departed_entries();
	ZsDepartedSubscriber *slot = NULL;

	for (int i = 0; i < zs_shared->max_departed; i++)
	{
		ZsDepartedSubscriber *d = &entries[i];

		if (d->departed_at != 0 && d->mode == mode && strcmp(d->id, id) == 0)
			return d;
		if (slot == NULL || (slot->departed_at != 0 && d->departed_at < slot->departed_at))
			slot = d;
	}
	return slot;
}

/*
 * With the lock held: is slot, which departed_entry() gave for (id, mode),
 * a retained entry of another subscriber that must give way? Its id in
 * evicted, if not NULL.
 */
static bool
gives_way(const ZsDepartedSubscriber *slot, const char *id, ZsSubscriberMode mode, char *evicted)
{
	if (slot->departed_at == 0 || (slot->mode == mode && strcmp(slot->id, id) == 0) ||
		!zs_departed_is_retained(slot, "", GetCurrentTimestamp(), zs_subscriber_retention_ms))
		return false;
	if (evicted != NULL)
		strlcpy(evicted, slot->id, ZS_NAME_LEN);
	return true;
}

/*
 * With the lock held. True if a retained entry of another subscriber gave
 * way (its id in evicted, if not NULL).
 */
static bool
record_departed(const char *id, ZsSubscriberMode mode, const char *replica_version,
				const char *watermark, char *evicted)
{
	ZsDepartedSubscriber *slot;
	bool		gave_way;

	if (watermark == NULL || watermark[0] == '\0' || id == NULL || id[0] == '\0')
		return false;
	slot = departed_entry(id, mode);
	gave_way = gives_way(slot, id, mode, evicted);
	strlcpy(slot->id, id, sizeof(slot->id));
	slot->mode = mode;
	slot->restored = false;
	strlcpy(slot->replica_version, replica_version ? replica_version : "",
			sizeof(slot->replica_version));
	strlcpy(slot->watermark, watermark, sizeof(slot->watermark));
	slot->departed_at = GetCurrentTimestamp();
	return gave_way;
}

static void
log_evicted(const char *evicted)
{
	ereport(LOG,
			(errmsg("zero_stream: the position kept for departed subscriber \"%s\" gave way to a newer departure",
					evicted),
			 errdetail("All %d departed entries (zero_stream.max_subscribers + %d) are taken; that subscriber restores if it returns.",
					   zs_shared->max_departed, ZS_EXTRA_DEPARTED)));
}

void
zs_forget_departed_locked(const char *id, ZsSubscriberMode mode)
{
	ZsDepartedSubscriber *entries = zs_departed_entries();

	for (int i = 0; i < zs_shared->max_departed; i++)
	{
		ZsDepartedSubscriber *d = &entries[i];

		if (d->departed_at != 0 && d->mode == mode && strcmp(d->id, id) == 0)
			memset(d, 0, sizeof(*d));
	}
}

void
zs_record_departed_subscriber(const char *id, ZsSubscriberMode mode, const char *replica_version,
							  const char *watermark)
{
	char		evicted[ZS_NAME_LEN];
	bool		gave_way;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	gave_way = record_departed(id, mode, replica_version, watermark, evicted);
	LWLockRelease(zs_shared->lock);
	if (gave_way)
		log_evicted(evicted);
}

void
zs_restore_departed_subscriber(const ZsDepartedSubscriber *entry)
{
	ZsDepartedSubscriber *slot;
	char		evicted[ZS_NAME_LEN];
	bool		gave_way = false;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	slot = departed_entry(entry->id, entry->mode);
	/* a departure recorded since the restart is newer */
	if (slot->departed_at == 0 || slot->mode != entry->mode || strcmp(slot->id, entry->id) != 0)
	{
		gave_way = gives_way(slot, entry->id, entry->mode, evicted);
		memcpy(slot, entry, sizeof(*slot));
	}
	LWLockRelease(zs_shared->lock);
	if (gave_way)
		log_evicted(evicted);
}

int
zs_count_retained(int retention_ms)
{
	TimestampTz now = GetCurrentTimestamp();
	ZsDepartedSubscriber *entries;
	int			n = 0;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	entries = zs_departed_entries();
	for (int i = 0; i < zs_shared->max_departed; i++)
		if (zs_departed_is_retained(&entries[i], zs_shared->replica_version, now, retention_ms))
			n++;
	LWLockRelease(zs_shared->lock);
	return n;
}

bool
zs_departed_is_retained(const ZsDepartedSubscriber *d, const char *replica_version,
						TimestampTz now, int retention_ms)
{
	if (d->departed_at == 0 || TimestampDifferenceExceeds(d->departed_at, now, retention_ms))
		return false;
	/* a position in another lineage's log vouches for nothing in this one */
	return replica_version[0] == '\0' || d->replica_version[0] == '\0' ||
		strcmp(d->replica_version, replica_version) == 0;
}
