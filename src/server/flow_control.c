/*-------------------------------------------------------------------------
 * flow_control.c
 *	  Page scheduling across subscribers, backlog limits and laggards
 *	  (docs/zero-protocol.md §5).
 *
 * The server pulls from the durable change log at each subscriber's own
 * pace, so no subscriber can hold back the decoder or another subscriber.
 * What is left of zero-cache's flow control is per subscriber:
 *   - ack pacing: a page is read for a subscriber only while less than a
 *     page of its messages is unacknowledged (subscription.c);
 *   - the backlog limit: nothing more is read for a subscriber whose queued
 *     output reached zero_stream.subscriber_backlog_limit, until it has
 *     taken it below 80%;
 *   - laggards: one that had caught up and then lags, held back by its own
 *     acks, for longer than zero_stream.slow_subscriber_grace_period while
 *     another keeps up, is ended with StreamTooFarBehind.
 * Subscribers at the same position share one read of the log and the
 * messages built from it. A live subscriber exactly where the round the
 * decoder is storing begins (or inside it) reads that round from shared
 * memory instead, before it is stored (live/live_round.c).
 *
 * Catch-up is paced against live serving. Each round serves the
 * live subscribers first (those whose last page reached the end of the log:
 * they wait only for new commits, a short page) and sends their frames at
 * once. Then catching-up subscribers get pages in turn, round-robin from
 * where the previous round stopped, until the round's budget is spent
 * (while a subscriber is live, a shorter one, also within a page shared by
 * many subscribers at one position: framing it for 64 of them takes longer
 * than reading it); the loop then goes back to its WaitEventSet, so that a
 * commit stored meanwhile waits for one such share at most, not for every
 * catching-up subscriber's page. While a subscriber is live, every round
 * of the loop while someone catches up adds a pause in catch-up
 * proportional to its length, so that catch-up takes at most
 * zero_stream.catchup_share of the worker's time: on a small machine the
 * decoder and the live subscribers need the CPU that a catch-up going
 * flat out would take (live rounds go on during the pause). The rounds
 * between page reads count too: reading the acks of a round's pages and
 * writing them to the sockets cost more than reading them.
 * Each page is built in a memory context reset once it is handed out, and
 * the output it adds is bounded by ack pacing and the backlog limit.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "changelog/changelog.h"
#include "live/live_round.h"
#include "codec/websocket.h"
#include "guc.h"
#include "server/connection.h"
#include "server/flow_control.h"
#include "shmem.h"
#include "spi_xact.h"

/*
 * A round's share of catch-up: pages are read for catching-up subscribers
 * until this much time has passed since the round's first read or this
 * many bytes were queued, whichever comes first. While a subscriber is
 * live, the round is short (a commit stored meanwhile waits for it, and for
 * writing what it queued) and so is a catch-up page (the one page a round
 * always reads). Longer live rounds and pages raise a live subscriber's
 * latency while others catch up; shorter ones slow the catch-up for no
 * gain (bench/catchup.sh measures both; bench/README.md keeps its results).
 */
#define CATCHUP_ROUND_MS	10
#define CATCHUP_ROUND_BYTES	(4 * 1024 * 1024)
#define CATCHUP_LIVE_ROUND_MS		1
#define CATCHUP_LIVE_ROUND_BYTES	(512 * 1024)
#define CATCHUP_LIVE_PAGE_ROWS		250

/* where the next round's catch-up starts: the one after the last served */
static int	catchup_turn = 0;

/* catch-up pauses until then (while a subscriber is live) */
static TimestampTz catchup_resume_at = 0;
static bool live_present = false;

/* the position of the head's last readable row (see zs_subscriber_wants_rows) */
static int64 head_pos = PG_INT64_MAX;

/* the average message of recent pages, in bytes (0: none read yet) */
static double row_bytes = 0;

/* the page being handed out (reset after each) */
static MemoryContext page_context = NULL;

static Size
backlog_limit(void)
{
	return (Size) zs_backlog_limit_kb * 1024;
}

/*
 * Above the high-water mark nothing more is read for a subscriber until it
 * has taken its output below the low-water mark, 80% (zero-cache's ratio).
 */
static bool
backlog_full(ZsConn *c)
{
	Size		pending = zs_conn_pending(c);

	if (pending >= backlog_limit())
		c->backlog_blocked = true;
	else if (pending <= backlog_limit() / 10 * 8)
		c->backlog_blocked = false;
	return c->backlog_blocked;
}

/* Is c a subscription that has room for another page now? */
static bool
wants_page(ZsConn *c, const char *head)
{
	return !c->closed && !c->close_after_flush && c->sub != NULL &&
		zs_subscriber_wants_rows(c->sub, head, head_pos) && !backlog_full(c);
}

/*
 * Live subscribers come first: one whose last page reached the end of the
 * log is only ever waiting for new commits, and those are a short page.
 * Everyone else (new, or with more log to read) is catching up.
 */
static bool
is_catching_up(ZsConn *c)
{
	return !zs_subscriber_is_following(c->sub);
}

/* Time spent since start, in ms. */
static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/*
 * Rows worth reading for a subscriber with room bytes left below its backlog
 * limit: a page, or fewer when its rows are large (by the average message
 * of recent pages), so that a subscriber with little room does not cost the
 * read of a page it cannot take. A page shorter than a page's rows is
 * still "full" (consume_page reads on from where it stopped).
 */
static int
page_rows(Size room)
{
	double		fit;

	if (row_bytes <= 0)
		return zs_catchup_page_rows;
	fit = (double) room / row_bytes + 1;
	return (int) Max(16, Min((double) zs_catchup_page_rows, fit));
}

/* Is a catch-up round's budget spent? */
static bool
round_spent(Size queued, instr_time start)
{
	if (live_present)
		return queued >= CATCHUP_LIVE_ROUND_BYTES || elapsed_ms(start) >= CATCHUP_LIVE_ROUND_MS;
	return queued >= CATCHUP_ROUND_BYTES || elapsed_ms(start) >= CATCHUP_ROUND_MS;
}

/*
 * Read the page after c's position and hand it to c and to every other
 * subscriber of the same class at the same position that has room and was
 * not served in this round, in turn from first. The page lives in
 * page_context, reset after it: a round holds one page at a time, however
 * many it reads. Catching up while a subscriber is live, the round's
 * budget (queued so far, since start) counts here too: a page shared by
 * many subscribers costs each of them its framing and its bytes, so
 * handing it out stops once the budget is spent, and *stopped_at is the
 * next subscriber to get it (-1 if none was left out; it reads the page
 * again in the next round). Returns the bytes queued.
 */
static Size
serve_position(int first, bool catching_up, const char *head, const char *log_version,
			   bool *served, Size queued_before, instr_time start, int *stopped_at)
{
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
	ZsChangeLogPage *page;
	MemoryContext old;
	Size		queued = 0;
	Size		page_bytes = 0;
	bool		handed = false;
	int			limit;

	*stopped_at = -1;
	zs_subscriber_position(zs_conns[first]->sub, watermark, &pos);
	old = MemoryContextSwitchTo(page_context);
	limit = page_rows(backlog_limit() - zs_conn_pending(zs_conns[first]));
	if (catching_up && live_present)
		limit = Min(limit, CATCHUP_LIVE_PAGE_ROWS);
	/* the round the decoder is storing, if it continues from here; else the log */
	page = zs_live_read_page(log_version, watermark, pos, limit);
	if (page == NULL)
		page = zs_changelog_read_page(watermark, pos, limit, head);
	for (int r = 0; r < page->nrows; r++)
		page_bytes += page->rows[r].message_len;
	if (page->nrows > 0)
		row_bytes = (row_bytes * 3 + (double) page_bytes / page->nrows) / 4;
	for (int k = 0; k < zs_nconns; k++)
	{
		int			i = (first + k) % zs_nconns;
		ZsConn	   *c = zs_conns[i];
		char		w[ZS_WATERMARK_MAXLEN];
		int64		p;
		int			len_before;
		bool		page_failed;

		if (served[i] || !wants_page(c, head) || is_catching_up(c) != catching_up)
			continue;
		zs_subscriber_position(c->sub, w, &p);
		if (p != pos || strcmp(w, watermark) != 0)
			continue;
		if (catching_up && live_present && handed && round_spent(queued_before + queued, start))
		{
			*stopped_at = i;
			break;
		}
		served[i] = true;
		handed = true;
		len_before = c->out.len;
		page_failed = zs_subscriber_consume_page(c->sub, page, log_version, &c->out,
												 backlog_limit() - zs_conn_pending(c));
		queued += c->out.len - len_before;
		if (page_failed)
		{
			ereport(LOG,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("disconnecting subscriber %s (%s): %s",
							zs_subscriber_id(c->sub), c->address, page->error)));
			zs_set_last_error(page->error);
			/* lingering: the peer gets every row before the chunk, and the error */
			zs_conn_send_close_lingering(c, ZS_WS_CLOSE_NO_STATUS, NULL);
			continue;
		}
		/* a live subscriber's frames go now, before any catch-up read */
		if (!catching_up)
			zs_conn_flush(c);
	}
	MemoryContextSwitchTo(old);
	zs_conns_note_freed(MemoryContextMemAllocated(page_context, true));
	MemoryContextReset(page_context);
	return queued;
}

void
zs_flow_serve_pages(const char *head, const char *replica_version, ZsFlowRound *round)
{
	bool		any = false;
	bool		catchup_wanted = false;
	bool	   *served;
	char		log_version[ZS_WATERMARK_MAXLEN];
	instr_time	start;
	Size		queued = 0;
	int			next_turn = -1;
	int			stopped_at;
	TimestampTz now;
	bool		pausing;
	char		live_head[ZS_WATERMARK_MAXLEN];
	int64		live_pos;

	round->catching_up = false;
	round->catchup_served = false;
	round->next_ms = -1;
	live_present = false;
	if (replica_version[0] == '\0')
		return;					/* the decoder has not started the log yet */
	/* rows of the round being stored count as there to be read */
	head_pos = PG_INT64_MAX;
	if (zs_live_head(replica_version, live_head, &live_pos) && strcmp(live_head, head) > 0)
	{
		head = live_head;
		head_pos = live_pos;
	}

	for (int i = 0; i < zs_nconns; i++)
	{
		ZsConn	   *c = zs_conns[i];

		if (c->closed || c->sub == NULL)
			continue;
		if (is_catching_up(c))
		{
			round->catching_up = true;
			catchup_wanted |= wants_page(c, head);
		}
		else
		{
			live_present = true;
			any |= wants_page(c, head);
		}
	}
	now = GetCurrentTimestamp();
	pausing = live_present && now < catchup_resume_at;
	if (catchup_wanted && pausing)
	{
		round->next_ms = Max(1, (long) ((catchup_resume_at - now + 999) / 1000));
		catchup_wanted = false;
	}
	if (!any && !catchup_wanted)
		return;

	if (page_context == NULL)
		page_context = AllocSetContextCreate(TopMemoryContext, "zero_stream page",
											 ALLOCSET_DEFAULT_SIZES);
	INSTR_TIME_SET_CURRENT(start);
	zs_spi_xact_begin("zero_stream: reading the change log");
	served = palloc0(sizeof(bool) * zs_nconns);
	/* the lineage as of the pages' snapshot; a log being initialized has none */
	if (!zs_changelog_read_replica_version(log_version))
	{
		zs_spi_xact_commit();
		return;
	}

	/* 1. every live subscriber, whatever it costs: its pages are short */
	for (int i = 0; i < zs_nconns; i++)
	{
		ZsConn	   *c = zs_conns[i];

		if (!served[i] && wants_page(c, head) && !is_catching_up(c))
			(void) serve_position(i, false, head, log_version, served, 0, start, &stopped_at);
	}

	/*
	 * 2. catching-up subscribers in turn, from where the last round stopped,
	 * until the round's budget is spent (at least one page a round, so
	 * catch-up always progresses). What is left waits for the next round,
	 * which comes at once (or after the pause): the loop goes back to its
	 * WaitEventSet in between, to read acks and to serve what the decoder
	 * has stored.
	 */
	for (int k = 0; catchup_wanted && k < zs_nconns; k++)
	{
		int			i = (catchup_turn + k) % zs_nconns;
		ZsConn	   *c = zs_conns[i];

		if (served[i] || !wants_page(c, head) || !is_catching_up(c))
			continue;
		if (next_turn >= 0 && round_spent(queued, start))
		{
			round->next_ms = 0;
			next_turn = i;
			break;
		}
		queued += serve_position(i, true, head, log_version, served, queued, start, &stopped_at);
		round->catchup_served = true;
		if (stopped_at >= 0)
		{
			/* the page's other subscribers come first in the next round */
			round->next_ms = 0;
			next_turn = stopped_at;
			break;
		}
		next_turn = (i + 1) % zs_nconns;
	}
	if (next_turn >= 0)
		catchup_turn = next_turn;
	/*
	 * One that was served but has room for more (its page was cut to its
	 * room, and the socket took it) need not wait for an ack or the tick.
	 */
	for (int i = 0; round->next_ms < 0 && i < zs_nconns; i++)
	{
		if (served[i] && is_catching_up(zs_conns[i]) && wants_page(zs_conns[i], head))
			round->next_ms = 0;
	}
	zs_spi_xact_commit();
}

void
zs_flow_send_lag_reports(void)
{
	static uint64 sent_generation = 0;
	char		report[ZS_LAG_REPORT_LEN];
	uint64		generation;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	generation = zs_shared->lag_report_generation;
	strlcpy(report, zs_shared->lag_report, sizeof(report));
	LWLockRelease(zs_shared->lock);
	if (generation == sent_generation)
		return;
	sent_generation = generation;
	zs_subscriber_set_lag_report(report);
	for (int i = 0; i < zs_nconns; i++)
	{
		ZsConn	   *c = zs_conns[i];

		if (!c->closed && !c->close_after_flush && c->sub != NULL &&
			zs_subscriber_is_following(c->sub) &&
			zs_subscriber_send_lag_report(c->sub, &c->out))
			zs_conn_flush(c);
	}
}

void
zs_flow_pace_catchup(int64 round_us)
{
	TimestampTz now;

	if (!live_present || zs_catchup_share >= 100)
		return;
	now = GetCurrentTimestamp();
	catchup_resume_at = Max(catchup_resume_at, now) +
		round_us * (100 - zs_catchup_share) / zs_catchup_share;
}

/*
 * Laggard disconnection (docs/zero-protocol.md §5.3): a subscriber that had
 * caught up and then lags, held back by its own acks, for longer than the
 * grace period while another subscriber keeps up, is told
 * StreamTooFarBehind and disconnected. Without an on-time subscriber to
 * compare with, nobody is disconnected.
 */
void
zs_flow_check_laggards(const char *head)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		someone_live = false;

	if (zs_slow_subscriber_grace_ms <= 0)
		return;

	for (int i = 0; i < zs_nconns && !someone_live; i++)
		someone_live = !zs_conns[i]->closed && zs_conns[i]->sub != NULL &&
			zs_subscriber_is_live(zs_conns[i]->sub, head);
	for (int i = 0; i < zs_nconns; i++)
	{
		ZsConn	   *c = zs_conns[i];
		long		secs;
		int			usecs;
		int64		lagging_ms;

		if (c->closed || c->close_after_flush || c->sub == NULL)
			continue;
		if (!zs_subscriber_is_lagging(c->sub, head))
		{
			c->lagging_since = 0;
			continue;
		}
		if (c->lagging_since == 0)
			c->lagging_since = now;
		if (!someone_live ||
			!TimestampDifferenceExceeds(c->lagging_since, now, zs_slow_subscriber_grace_ms))
			continue;
		TimestampDifference(c->lagging_since, now, &secs, &usecs);
		lagging_ms = (int64) secs * 1000 + usecs / 1000;
		ereport(LOG,
				(errcode(ERRCODE_CONNECTION_EXCEPTION),
				 errmsg("disconnecting subscriber %s (%s): it lagged behind the stream for " INT64_FORMAT " ms",
						zs_subscriber_id(c->sub), c->address, lagging_ms)));
		zs_subscriber_fail_lagging(c->sub, &c->out, zs_slow_subscriber_grace_ms, lagging_ms);
		zs_conn_send_close(c, ZS_WS_CLOSE_NO_STATUS, NULL);	/* as zero-cache after an error */
	}
}
