/*-------------------------------------------------------------------------
 * purge.c
 *	  When the decoder purges the change log, and how far
 *	  (docs/zero-protocol.md §6.5, §7; zero-cache's change-streamer cleanup).
 *
 * Every zero_stream.purge_interval, or when zero_stream.purge() asks
 * (purge_request.c), the decoder computes the floor (purge_floor.c: the
 * backup replica's watermark once it covers the head of when the decoder
 * started, every connected subscriber's acked watermark, every snapshot
 * reservation's, every subscriber that left less than
 * zero_stream.subscriber_retention ago) and deletes the rows below it in
 * batches (purge_batch.c), each its own transaction, between decoding
 * rounds:
 *   - a batch's size adapts so that it takes about PURGE_BATCH_MS (between
 *     PURGE_BATCH_MIN_ROWS and PURGE_BATCH_MAX_ROWS): the stream waits for
 *     at most one batch;
 *   - while the decoder is idle, a step runs batches for up to PURGE_STEP_MS;
 *   - while it is decoding, the purge gets PURGE_BUSY_SHARE percent of the
 *     decoder's time (time credit earned while decoding), so a purge of
 *     millions of rows does not slow a backlog's store by more than that;
 *     it catches up at full speed once the decoder is idle.
 * A purge that waits for the backup replica (it opens after the decoder's
 * start or its initial copy, or catches up with the head of the start)
 * looks again as soon as the replica moves (the replicator wakes the
 * decoder while the purge waits), and at least every PURGE_WAIT_RETRY_MS,
 * rather than a whole purge_interval later: the replica gets there within
 * moments, and from then on it holds the floor. What was purged, the floor and what holds it are in
 * zero_stream.status().
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/timestamp.h"

#include "changelog/changelog.h"
#include "changelog/changelog_writer.h"
#include "guc.h"
#include "purge/purge.h"
#include "purge/purge_batch.h"
#include "purge/purge_floor.h"
#include "shmem.h"
#include "spi_xact.h"

#define PURGE_BATCH_MIN_ROWS 1000
#define PURGE_BATCH_MAX_ROWS 20000
#define PURGE_BATCH_MS 25
#define PURGE_STEP_MS 200
#define PURGE_BUSY_SHARE 10
#define PURGE_WAIT_RETRY_MS 1000

void
zs_purge_init(ZsPurge *p)
{
	memset(p, 0, sizeof(*p));
	p->batch_rows = 5000;
}

/* the floor and its holder in the shared state; finished: the purge's results too */
static void
publish(ZsPurge *p, bool finished)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->has_purge_floor = p->has_floor;
	zs_shared->purge_waits_for_backup = p->waiting;
	strlcpy(zs_shared->purge_floor, p->has_floor ? p->floor_watermark : "", sizeof(zs_shared->purge_floor));
	zs_shared->purge_holder = p->holder;
	if (finished)
	{
		zs_shared->purge_runs++;
		zs_shared->last_purge_rows = p->run_rows;
		zs_shared->last_purge_bytes = p->run_bytes;
		zs_shared->last_purge_time = GetCurrentTimestamp();
	}
	LWLockRelease(zs_shared->lock);
}

static bool
take_request(void)
{
	bool		r;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	r = zs_shared->purge_requested;
	zs_shared->purge_requested = false;
	LWLockRelease(zs_shared->lock);
	return r;
}

/* Is a periodic purge due at now? Never with purge_interval 0. */
static bool
purge_due(ZsPurge *p, TimestampTz now)
{
	int			interval_ms = zs_purge_interval_ms;

	if (interval_ms == 0)
		return false;
	if (p->waiting)
	{
		bool		moved;

		/* the backup replica moved since the last look (the replicator woke us) */
		LWLockAcquire(zs_shared->lock, LW_SHARED);
		moved = zs_shared->backup_moves != p->waited_backup_moves;
		LWLockRelease(zs_shared->lock);
		if (moved)
			return true;
		interval_ms = Min(interval_ms, PURGE_WAIT_RETRY_MS);
	}
	return TimestampDifferenceExceeds(p->last_purge, now, interval_ms);
}

/* next batch's size: about PURGE_BATCH_MS at the rate the last one ran */
static void
adapt_batch_rows(ZsPurge *p, int64 rows, long ms)
{
	double		next;

	if (rows < p->batch_rows)
		return;					/* a partial batch says little about the rate */
	next = ms > 0 ? (double) rows * PURGE_BATCH_MS / ms : (double) p->batch_rows * 2;
	next = Min(next, (double) p->batch_rows * 2);
	p->batch_rows = (int) Max(PURGE_BATCH_MIN_ROWS, Min(PURGE_BATCH_MAX_ROWS, next));
}

bool
zs_purge_step(ZsPurge *p, const char *gate, bool decoding)
{
	TimestampTz start = GetCurrentTimestamp();
	ZsPurgeBatchResult result = ZS_PURGE_BATCH_DONE;
	long		budget_ms = PURGE_STEP_MS;

	p->requested |= take_request();
	if (!p->running)
	{
		ZsPurgeFloor found;
		bool		retry;

		if (!p->requested && !purge_due(p, start))
			return false;
		/* a periodic look again while waiting is no purge run of its own */
		retry = p->waiting && !p->requested;
		p->run_rows = p->run_bytes = 0;
		LWLockAcquire(zs_shared->lock, LW_SHARED);
		p->waited_backup_moves = zs_shared->backup_moves;
		LWLockRelease(zs_shared->lock);
		found = zs_purge_floor(gate, zs_subscriber_retention_ms, p->floor_watermark, &p->holder);
		p->waiting = (found == ZS_PURGE_FLOOR_WAITING);
		p->has_floor = (found == ZS_PURGE_FLOOR_HELD);
		if (!p->has_floor)
		{
			p->last_purge = start;
			p->requested = false;
			publish(p, !(retry && p->waiting));
			return false;
		}
		p->running = true;
		p->after_watermark[0] = '\0';
		p->after_pos = -1;
		p->credit_ms = 0;
		p->last_step_end = start;
	}

	if (decoding)
	{
		p->credit_ms += (double) TimestampDifferenceMilliseconds(p->last_step_end, start) *
			PURGE_BUSY_SHARE / (100 - PURGE_BUSY_SHARE);
		p->credit_ms = Min(p->credit_ms, PURGE_STEP_MS);
		if (p->credit_ms < PURGE_BATCH_MS)
		{
			p->last_step_end = start;
			return true;		/* not yet our turn; the purge goes on later */
		}
		budget_ms = (long) p->credit_ms;
	}

	do
	{
		int64		rows;
		int64		bytes;
		TimestampTz batch_start = GetCurrentTimestamp();

		zs_spi_xact_begin("zero_stream: purging the change log");
		zs_changelog_check_sql_version();
		result = zs_purge_batch(p->floor_watermark, p->batch_rows, p->after_watermark, &p->after_pos,
								&rows, &bytes);
		zs_spi_xact_commit();
		adapt_batch_rows(p, rows, TimestampDifferenceMilliseconds(batch_start, GetCurrentTimestamp()));
		p->run_rows += rows;
		p->run_bytes += bytes;
		if (rows > 0)
		{
			LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
			zs_shared->purged_rows += rows;
			zs_shared->purged_bytes += bytes;
			LWLockRelease(zs_shared->lock);
		}
		zs_worker_check_interrupts();
	} while (result == ZS_PURGE_BATCH_MORE &&
			 !TimestampDifferenceExceeds(start, GetCurrentTimestamp(), budget_ms));

	p->last_step_end = GetCurrentTimestamp();
	if (decoding)
		p->credit_ms -= TimestampDifferenceMilliseconds(start, p->last_step_end);
	if (result == ZS_PURGE_BATCH_MORE)
		return true;			/* the next iteration goes on */

	p->running = false;
	p->requested = false;
	p->last_purge = GetCurrentTimestamp();
	if (result == ZS_PURGE_BATCH_LOCKED)
	{
		memset(&p->holder, 0, sizeof(p->holder));
		p->holder.kind = ZS_HOLDER_PURGE_LOCK;
	}
	publish(p, true);
	if (p->run_rows > 0)
		ereport(LOG,
				(errmsg("zero_stream purged " INT64_FORMAT " change-log rows (" INT64_FORMAT " kB) below watermark %s, held by %s",
						p->run_rows, p->run_bytes / 1024, p->floor_watermark, zs_purge_holder_text(&p->holder))));
	else if (result == ZS_PURGE_BATCH_LOCKED)
		ereport(LOG,
				(errmsg("zero_stream did not purge the change log: its oldest row is locked (the purge lock)")));
	return false;
}
