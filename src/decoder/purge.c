/*-------------------------------------------------------------------------
 * purge.c
 *	  When the decoder purges the change log, and how far
 *	  (docs/zero-protocol.md §6.5, §7; zero-cache's change-streamer cleanup).
 *
 * Every zero_stream.purge_interval, or when zero_stream.purge() asks, the
 * decoder computes the floor (shmem.c's zs_purge_floor: the backup
 * replica's watermark once it covers the head of when the decoder started,
 * every connected subscriber's acked watermark, every snapshot
 * reservation's, every subscriber that left less than
 * zero_stream.subscriber_retention ago) and deletes the rows below it in
 * batches of PURGE_BATCH_ROWS, each its own transaction, for at most
 * PURGE_STEP_MS per loop iteration: a large purge is spread over several
 * iterations between decoding rounds, so it never holds the stream back
 * for long. What was purged, the floor and what holds it are in
 * zero_stream.status().
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/timestamp.h"

#include "changelog/changelog.h"
#include "decoder/purge.h"
#include "guc.h"
#include "shmem.h"
#include "spi_xact.h"

#define PURGE_BATCH_ROWS 10000
#define PURGE_STEP_MS 200

static TimestampTz last_purge = 0;
static bool running = false;		/* a purge is spread over iterations */
static bool requested = false;
static char floor_watermark[ZS_WATERMARK_MAXLEN];
static char holder[ZS_ERROR_LEN / 4];
static int64 run_rows;
static int64 run_bytes;
static char after_watermark[ZS_WATERMARK_MAXLEN];	/* the last row deleted */
static int64 after_pos;

static void
publish(bool finished)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->purge_floor, floor_watermark, sizeof(zs_shared->purge_floor));
	strlcpy(zs_shared->purge_holder, holder, sizeof(zs_shared->purge_holder));
	if (finished)
	{
		zs_shared->purge_runs++;
		zs_shared->last_purge_rows = run_rows;
		zs_shared->last_purge_bytes = run_bytes;
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

bool
zs_purge_step(const char *gate)
{
	TimestampTz start = GetCurrentTimestamp();
	ZsPurgeResult result = ZS_PURGE_DONE;

	requested |= take_request();
	if (!running)
	{
		if (!requested &&
			(zs_purge_interval_ms == 0 ||
			 !TimestampDifferenceExceeds(last_purge, start, zs_purge_interval_ms)))
			return false;
		run_rows = run_bytes = 0;
		if (!zs_purge_floor(gate, zs_subscriber_retention_ms, floor_watermark, holder, sizeof(holder)))
		{
			floor_watermark[0] = '\0';
			last_purge = start;
			requested = false;
			publish(true);
			return false;
		}
		running = true;
		after_watermark[0] = '\0';
		after_pos = -1;
	}

	do
	{
		int64		rows;
		int64		bytes;

		zs_spi_xact_begin("zero_stream: purging the change log");
		result = zs_changelog_purge_batch(floor_watermark, PURGE_BATCH_ROWS, after_watermark, &after_pos,
										  &rows, &bytes);
		zs_spi_xact_commit();
		run_rows += rows;
		run_bytes += bytes;
		if (rows > 0)
		{
			LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
			zs_shared->purged_rows += rows;
			zs_shared->purged_bytes += bytes;
			LWLockRelease(zs_shared->lock);
		}
		CHECK_FOR_INTERRUPTS();
	} while (result == ZS_PURGE_MORE &&
			 !TimestampDifferenceExceeds(start, GetCurrentTimestamp(), PURGE_STEP_MS));

	if (result == ZS_PURGE_MORE)
		return true;			/* the next iteration goes on */

	running = false;
	requested = false;
	last_purge = GetCurrentTimestamp();
	if (result == ZS_PURGE_LOCKED)
		snprintf(holder, sizeof(holder), "the purge lock (a row lock on the oldest change-log row)");
	publish(true);
	if (run_rows > 0)
		ereport(LOG,
				(errmsg("zero_stream purged " INT64_FORMAT " change-log rows (" INT64_FORMAT " kB) below watermark %s, held by %s",
						run_rows, run_bytes / 1024, floor_watermark, holder)));
	else if (result == ZS_PURGE_LOCKED)
		ereport(LOG,
				(errmsg("zero_stream did not purge the change log: its oldest row is locked (the purge lock)")));
	return false;
}
