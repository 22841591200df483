/*-------------------------------------------------------------------------
 * backfill.c
 *	  Backfills, on the decoder's side: zero-cache's BackfillManager
 *	  (docs/zero-protocol.md §3.4, §4.4, §6.6).
 *
 * What needs a backfill is what the change log says: the "backfilling"
 * rows that create-table and add-column messages with a "backfill" member
 * added (changelog.c's bookkeeping, in the transaction that stored them),
 * with the table's "tableMetadata". So a backfill interrupted by a crash
 * is simply started again, and a schema change that renames or drops what
 * is being backfilled changes the request, which stops the running
 * backfill and starts the new one.
 *
 * One backfill runs at a time, in a worker of its own (backfill_worker.c)
 * that sends its messages through a bounded queue. The decoder takes them
 * between decoding rounds, at most BACKFILL_STEP_BYTES per step, so the
 * live stream is never held back for long by a large table, and hands
 * them to the change log's one writer (decoder/store.c): each message is
 * stored as a synthetic transaction (begin with skipAck, the message,
 * commit) at the next minor version of the log's head ("<major>.<minor>"),
 * so it sorts after everything stored before it and before the next
 * upstream commit. "backfill-completed" is stored only once decoding has
 * passed the backfill's snapshot: its transaction's watermark is at least
 * the snapshot's, as zero-cache's is, so a replica that applied it has
 * every change the snapshot held.
 *
 * An update that changes a row's key while a backfill runs means backfill
 * data from before that transaction could resurrect the old key: such data
 * is dropped and the backfill started again (zero-cache's minWatermark).
 *
 * The worker holds a lock on its table while it reads, which DROP TABLE,
 * most ALTER TABLE forms and TRUNCATE wait for (ACCESS EXCLUSIVE): rather
 * than hold such a command (and every query queued behind it) for the rest
 * of the backfill, the decoder stops the worker and starts the backfill
 * again after a pause, at a snapshot past the command (up to MAX_GIVE_WAYS
 * times in a row); a DROP removes the request meanwhile. A worker that fails is retried with a backoff from 2 s
 * to 60 s; the backoff is forgotten once the request it was for is gone, so
 * a request whose table was dropped does not hold back the others.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xlog.h"

#include "common/pg_prng.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "changelog/changelog.h"
#include "codec/json_read.h"
#include "codec/watermark.h"
#include "backfill/backfill.h"
#include "backfill/backfill_worker.h"
#include "shmem.h"
#include "spi_xact.h"

/* backfill messages stored per step at most, between decoding rounds */
#define BACKFILL_STEP_BYTES (4 * 1024 * 1024)

#define BACKOFF_MIN_MS 2000
#define BACKOFF_MAX_MS 60000

/* how often a running backfill looks for a command waiting for its table */
#define LOCK_CHECK_MS 200

/*
 * How many times in a row a backfill gives way to such a command: then it
 * keeps its lock, so that commands retried in a loop (a migration tool with
 * a lock_timeout) cannot keep it from ever finishing.
 */
#define MAX_GIVE_WAYS 3

struct ZsBackfillRun
{
	MemoryContext context;		/* holds everything below */
	char	   *request;		/* the request it runs, as read from the log */
	char	   *table;			/* "schema"."name", for messages */
	Oid			relid;
	char	  **keys;			/* the row key's columns */
	int			nkeys;
	dsm_segment *seg;
	shm_mq_handle *queue;
	BackgroundWorkerHandle *handle;
	char		min_watermark[ZS_WATERMARK_MAXLEN];	/* data must not predate it */
	char	   *completed;		/* held until decoding passes completed_lsn */
	XLogRecPtr	completed_lsn;
	TimestampTz started;
	TimestampTz lock_checked;	/* when waiters for its table were last looked for */
};

void
zs_backfill_init(ZsBackfill *b)
{
	memset(b, 0, sizeof(*b));
	b->requests_stale = true;
	b->retry_delay_ms = BACKOFF_MIN_MS;
}

static void
ensure_context(ZsBackfill *b)
{
	if (b->context == NULL)
	{
		b->context = AllocSetContextCreate(TopMemoryContext, "zero_stream backfills",
												 ALLOCSET_DEFAULT_SIZES);
		b->step_context = AllocSetContextCreate(b->context, "zero_stream backfill step",
											 ALLOCSET_DEFAULT_SIZES);
	}
}

/* Is the worker stopped last gone? Then forget it. */
static bool
stopped_worker_gone(ZsBackfill *b)
{
	pid_t		pid;

	if (b->stopping_handle != NULL &&
		GetBackgroundWorkerPid(b->stopping_handle, &pid) != BGWH_STOPPED)
		return false;
	if (b->stopping_context != NULL)
		MemoryContextDelete(b->stopping_context);
	b->stopping_context = NULL;
	b->stopping_handle = NULL;
	return true;
}

static void
set_progress(ZsBackfillPhase phase, const char *table, int64 rows, int64 total)
{
	ZsBackfillProgress *p = &zs_shared->backfill_progress;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	p->phase = phase;
	strlcpy(p->table, table != NULL ? table : "", sizeof(p->table));
	p->rows = rows;
	p->total = total;
	LWLockRelease(zs_shared->lock);
}

static void
stop_running(ZsBackfill *b, const char *why)
{
	if (b->running == NULL)
		return;
	if (why != NULL)
		ereport(LOG,
				(errmsg("zero_stream backfill of %s stopped: %s", b->running->table, why)));
	TerminateBackgroundWorker(b->running->handle);
	shm_mq_detach(b->running->queue);
	dsm_detach(b->running->seg);
	(void) stopped_worker_gone(b);	/* a previous one, if any, is long gone */
	if (b->stopping_context != NULL)
		MemoryContextDelete(b->stopping_context);
	b->stopping_context = b->running->context;
	b->stopping_handle = b->running->handle;
	b->running = NULL;
	set_progress(ZS_BACKFILL_IDLE, NULL, 0, 0);
}

/* No backoff any more: the next step may start a backfill. */
static void
forget_backoff(ZsBackfill *b)
{
	b->retry_at = 0;
	b->retry_delay_ms = BACKOFF_MIN_MS;
	if (b->retry_request != NULL)
		pfree(b->retry_request);
	b->retry_request = NULL;
}

void
zs_backfill_reset(ZsBackfill *b)
{
	stop_running(b, "the decoder restarts its stream");
	b->requests_stale = true;
	forget_backoff(b);
}

void
zs_backfill_requests_changed(ZsBackfill *b)
{
	b->requests_stale = true;
}

Oid
zs_backfill_relid(const ZsBackfill *b)
{
	return b->running ? b->running->relid : InvalidOid;
}

const char *const *
zs_backfill_key_columns(const ZsBackfill *b, int *nkeys)
{
	*nkeys = b->running ? b->running->nkeys : 0;
	return b->running ? (const char *const *) b->running->keys : NULL;
}

void
zs_backfill_key_changed(ZsBackfill *b, const char *watermark)
{
	if (b->running != NULL && strcmp(b->running->min_watermark, watermark) < 0)
		strlcpy(b->running->min_watermark, watermark, sizeof(b->running->min_watermark));
}

static void
load_requests(ZsBackfill *b)
{
	List	   *read;
	ListCell   *lc;
	MemoryContext old;

	zs_spi_xact_begin(NULL);
	read = zs_changelog_read_backfill_requests();
	ensure_context(b);
	old = MemoryContextSwitchTo(b->context);
	list_free_deep(b->requests);
	b->requests = NIL;
	foreach(lc, read)
		b->requests = lappend(b->requests, pstrdup((char *) lfirst(lc)));
	MemoryContextSwitchTo(old);
	zs_spi_xact_commit();
	b->requests_stale = false;

	if (b->running != NULL)
	{
		bool		listed = false;

		foreach(lc, b->requests)
			listed |= strcmp((char *) lfirst(lc), b->running->request) == 0;
		if (!listed)
			stop_running(b, "its request changed (a schema change of the table, or its completion)");
	}
	/* a backoff for a request that is gone (its table dropped) holds back no other */
	if (b->retry_request != NULL)
	{
		bool		listed = false;

		foreach(lc, b->requests)
			listed |= strcmp((char *) lfirst(lc), b->retry_request) == 0;
		if (!listed)
			forget_backoff(b);
	}
}

/* relationOID and row key of a request; false if it has no table metadata */
static bool
describe_request(ZsBackfillRun *r, const char *request)
{
	ZsJsonDoc	doc;
	int			table,
				metadata,
				row_key,
				oid;
	int64		relid = 0;
	bool		ok;

	zs_json_doc_init(&doc);
	ok = zs_json_parse(&doc, request, strlen(request)) &&
		(table = zs_json_get(&doc, 0, "table")) >= 0 &&
		(metadata = zs_json_get(&doc, table, "metadata")) >= 0 &&
		(row_key = zs_json_get(&doc, metadata, "rowKey")) >= 0 &&
		doc.nodes[row_key].type == ZS_JSON_OBJECT &&
		(oid = zs_json_get(&doc, metadata, "relationOID")) >= 0 &&
		zs_json_int64(&doc, oid, &relid);
	if (ok)
	{
		r->table = psprintf("%s.%s", quote_identifier(zs_json_get_string(&doc, table, "schema")),
							quote_identifier(zs_json_get_string(&doc, table, "name")));
		r->relid = (Oid) relid;
		r->keys = palloc(sizeof(char *) * Max(doc.nodes[row_key].count, 1));
		for (int k = doc.nodes[row_key].first_child; k >= 0; k = doc.nodes[k].next)
			r->keys[r->nkeys++] = pstrdup(zs_json_key(&doc, k));
	}
	zs_json_doc_free(&doc);
	return ok;
}

/*
 * Start no backfill for delay_ms (the current backoff if -1, which then
 * doubles): request, if not NULL, is the one that failed.
 */
static void
back_off(ZsBackfill *b, const char *request, int delay_ms, const char *why)
{
	if (delay_ms < 0)
	{
		delay_ms = b->retry_delay_ms;
		b->retry_delay_ms = Min(b->retry_delay_ms * 2, BACKOFF_MAX_MS);
	}
	ereport(LOG,
			(errmsg("zero_stream backfill retried in %d s: %s", delay_ms / 1000, why)));
	b->retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), delay_ms);
	if (b->retry_request != NULL)
		pfree(b->retry_request);
	b->retry_request = request ? MemoryContextStrdup(b->context, request) : NULL;
}

/*
 * Does a command wait for an ACCESS EXCLUSIVE lock on a table the worker
 * holds a lock on (DROP TABLE, ALTER TABLE, TRUNCATE, a DETACH of one of
 * its partitions, ...)? Looked at every LOCK_CHECK_MS at most, until the
 * worker has read every row.
 */
static bool
command_waits_for_table(ZsBackfillRun *r)
{
	TimestampTz now = GetCurrentTimestamp();
	LockData   *locks;
	pid_t		pid;
	Oid		   *held;
	int			nheld = 0;
	bool		waited = false;

	if (r->completed != NULL || !TimestampDifferenceExceeds(r->lock_checked, now, LOCK_CHECK_MS) ||
		GetBackgroundWorkerPid(r->handle, &pid) != BGWH_STARTED)
		return false;
	r->lock_checked = now;
	locks = GetLockStatusData();
	held = palloc(sizeof(Oid) * Max(locks->nelements, 1));
	/* the tables the worker holds (its table, and a partitioned one's partitions) */
	for (int i = 0; i < locks->nelements; i++)
	{
		LockInstanceData *l = &locks->locks[i];

		if (l->locktag.locktag_type == LOCKTAG_RELATION &&
			l->locktag.locktag_field1 == MyDatabaseId &&
			l->locktag.locktag_field2 >= FirstNormalObjectId &&
			l->pid == pid && l->holdMask != 0)
			held[nheld++] = l->locktag.locktag_field2;
	}
	for (int i = 0; i < locks->nelements && !waited; i++)
	{
		LockInstanceData *l = &locks->locks[i];

		if (l->locktag.locktag_type != LOCKTAG_RELATION ||
			l->locktag.locktag_field1 != MyDatabaseId ||
			l->waitLockMode != AccessExclusiveLock)
			continue;
		for (int h = 0; h < nheld && !waited; h++)
			waited = held[h] == l->locktag.locktag_field2;
	}
	pfree(held);
	return waited;
}

static void
launch(ZsBackfill *b, const char *request)
{
	Size		request_size = strlen(request) + 1;
	shm_toc_estimator e;
	Size		size;
	dsm_segment *seg;
	shm_toc    *toc;
	char	   *shared_request;
	shm_mq	   *mq;
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	MemoryContext old;
	ZsBackfillRun    *r;

	MemoryContext context;

	ensure_context(b);
	context = AllocSetContextCreate(b->context, "zero_stream running backfill",
									ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(context);
	r = palloc0(sizeof(ZsBackfillRun));
	r->context = context;
	r->request = pstrdup(request);
	if (!describe_request(r, request))
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(context);
		back_off(b, request, -1, psprintf("the request has no table metadata: %s", request));
		return;
	}

	shm_toc_initialize_estimator(&e);
	shm_toc_estimate_chunk(&e, request_size);
	shm_toc_estimate_chunk(&e, ZS_BACKFILL_QUEUE_BYTES);
	shm_toc_estimate_keys(&e, 2);
	size = shm_toc_estimate(&e);
	seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (seg == NULL)
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(context);
		back_off(b, NULL, -1, "no dynamic shared memory segment is free");
		return;
	}
	dsm_pin_mapping(seg);		/* it outlives the decoder's transactions */
	toc = shm_toc_create(ZS_BACKFILL_SHM_MAGIC, dsm_segment_address(seg), size);
	shared_request = shm_toc_allocate(toc, request_size);
	memcpy(shared_request, request, request_size);
	shm_toc_insert(toc, ZS_BACKFILL_KEY_REQUEST, shared_request);
	mq = shm_mq_create(shm_toc_allocate(toc, ZS_BACKFILL_QUEUE_BYTES), ZS_BACKFILL_QUEUE_BYTES);
	shm_toc_insert(toc, ZS_BACKFILL_KEY_QUEUE, mq);
	shm_mq_set_receiver(mq, MyProc);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "zero_stream");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "zs_backfill_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "zero_stream backfill");
	snprintf(worker.bgw_type, BGW_MAXLEN, "zero_stream backfill");
	worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		dsm_detach(seg);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(context);
		back_off(b, NULL, -1, "no background worker slot is free (raise max_worker_processes)");
		return;
	}
	r->seg = seg;
	r->handle = handle;
	r->queue = shm_mq_attach(mq, seg, handle);
	r->started = GetCurrentTimestamp();
	r->lock_checked = r->started;
	MemoryContextSwitchTo(old);
	b->running = r;
	set_progress(ZS_BACKFILL_STARTING, r->table, 0, 0);
}

/*
 * What a step took from the worker, until its batch is stored (or at once,
 * when there is nothing to store): its progress, and how the step ended.
 */
static struct
{
	int64		rows;			/* rows sent so far, -1 if no message came */
	int64		total_rows;
	bool		finished;		/* backfill-completed is in the batch */
	bool		detached;		/* the worker is gone */
} step;

/* After a step, its batch stored (up to head) or empty: what comes next. */
static void
end_step(ZsBackfill *b, const char *head)
{
	if (b->running == NULL)
		return;
	if (step.rows >= 0)
		set_progress(ZS_BACKFILL_SENDING, b->running->table, step.rows, step.total_rows);
	if (step.finished)
	{
		long		secs;
		int			usecs;

		TimestampDifference(b->running->started, GetCurrentTimestamp(), &secs, &usecs);
		ereport(LOG,
				(errmsg("zero_stream backfill of %s stored in %ld.%03d s, up to watermark %s",
						b->running->table, secs, usecs / 1000, head)));
		stop_running(b, NULL);
		forget_backoff(b);
		b->give_ways = 0;
		b->requests_stale = true;	/* the completion removed its request */
	}
	else if (step.detached)
	{
		char	   *table = pstrdup(b->running->table);
		char	   *request = pstrdup(b->running->request);

		stop_running(b, NULL);
		back_off(b, request, -1,
				 psprintf("the worker backfilling %s exited before it completed (see its log lines)", table));
	}
	else if (b->give_ways < MAX_GIVE_WAYS && command_waits_for_table(b->running))
	{
		char	   *request = pstrdup(b->running->request);

		b->give_ways++;
		stop_running(b, "a command waits for a lock on the table");
		back_off(b, request, BACKOFF_MIN_MS, "after the command that waited for the table");
	}
}

bool
zs_backfill_step(ZsBackfill *b, XLogRecPtr decoded_upto, ZsBackfillBatch *batch)
{
	Size		bytes = 0;
	MemoryContext old;

	memset(batch, 0, sizeof(*batch));
	memset(&step, 0, sizeof(step));
	step.rows = -1;
	ensure_context(b);
	MemoryContextReset(b->step_context);
	old = MemoryContextSwitchTo(b->step_context);
	if (b->requests_stale)
		load_requests(b);
	if (b->running == NULL)
	{
		/*
		 * One at a time, picked at random as zero-cache does: a request that
		 * keeps failing does not starve the others.
		 */
		if (b->requests != NIL && GetCurrentTimestamp() >= b->retry_at && stopped_worker_gone(b))
			launch(b, (const char *) list_nth(b->requests,
										   (int) pg_prng_uint64_range(&pg_global_prng_state, 0,
																	  list_length(b->requests) - 1)));
		MemoryContextSwitchTo(old);
		return false;
	}

	while (bytes < BACKFILL_STEP_BYTES && b->running->completed == NULL)
	{
		Size		nbytes;
		void	   *data;
		ZsBackfillMessage header;
		char		snapshot[ZS_WATERMARK_MAXLEN];
		shm_mq_result res = shm_mq_receive(b->running->queue, &nbytes, &data, true);

		if (res == SHM_MQ_WOULD_BLOCK)
			break;
		if (res != SHM_MQ_SUCCESS)
		{
			step.detached = true;
			break;
		}
		if (nbytes < sizeof(header))
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg_internal("short backfill message (%zu bytes)", nbytes)));
		memcpy(&header, data, sizeof(header));
		zs_watermark_encode(header.snapshot_lsn - 1, snapshot);
		if (strcmp(snapshot, b->running->min_watermark) < 0)
		{
			char	   *why = psprintf("a row key changed at %s, after its snapshot at %s",
									   b->running->min_watermark, snapshot);

			stop_running(b, why);
			MemoryContextSwitchTo(old);
			batch->rows = NIL;
			return false;		/* the next step starts it again */
		}
		step.rows = header.rows;
		step.total_rows = header.total_rows;
		if (header.kind == ZS_BACKFILL_COMPLETED)
		{
			b->running->completed = MemoryContextAlloc(b->running->context, nbytes - sizeof(header) + 1);
			memcpy(b->running->completed, (char *) data + sizeof(header), nbytes - sizeof(header));
			b->running->completed[nbytes - sizeof(header)] = '\0';
			b->running->completed_lsn = header.snapshot_lsn;
		}
		else
			batch->rows = lappend(batch->rows, pnstrdup((char *) data + sizeof(header), nbytes - sizeof(header)));
		bytes += nbytes;
	}

	step.finished = b->running->completed != NULL && decoded_upto >= b->running->completed_lsn;
	if (step.finished)
	{
		/* (a copy: the running backfill goes once it is stored) */
		batch->completed = pstrdup(b->running->completed);
		batch->completed_lsn = b->running->completed_lsn;
	}
	if (batch->rows == NIL && !step.finished)
	{
		end_step(b, NULL);
		MemoryContextSwitchTo(old);
		return false;
	}
	MemoryContextSwitchTo(old);
	return true;
}

void
zs_backfill_stored(ZsBackfill *b, const char *head)
{
	MemoryContext old = MemoryContextSwitchTo(b->step_context);

	end_step(b, head);
	MemoryContextSwitchTo(old);
}
