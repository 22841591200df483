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
 * Catch-up is paced against live serving: live subscribers first, their
 * frames sent at once, then catching-up ones in turn within the round's
 * budget, paused beside live subscribers (flow_schedule.c decides all of
 * it; this file reads the pages and hands them out). A round's inputs,
 * the head and each connection as the round began, are one struct
 * (PageRound) and what lasts between rounds is the server's (ZsFlowState),
 * so that the decisions are tested apart from the pages. The budget counts
 * within a page shared by many subscribers at one position too: framing it
 * for 64 of them takes longer than reading it. The rounds between page
 * reads count toward the pause: reading the acks of a round's pages and
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
 * One round of page serving: its inputs, fixed at its start, and what it
 * has done so far. The decisions over them are flow_schedule.c's.
 */
typedef struct PageRound
{
	ZsServer   *server;
	const char *head;			/* the log's head, or the live round's */
	int64		head_pos;		/* the position of the head's last readable
								 * row (see zs_subscriber_wants_rows) */
	char		log_version[ZS_WATERMARK_MAXLEN];	/* the lineage of the
													 * pages' snapshot */
	ZsFlowCandidate *cands;		/* each connection, as the round began */
	bool	   *served;			/* each connection served in the round */
	instr_time	start;			/* the round's first read */
	Size		queued;			/* catch-up bytes queued so far */
} PageRound;

static Size
backlog_limit(void)
{
	return (Size) zs_backlog_limit_kb * 1024;
}

/* Above the high-water mark nothing more is read until it is below the low. */
static bool
backlog_full(ZsConn *c)
{
	c->backlog_blocked = zs_flow_backlog_blocked(c->backlog_blocked, zs_conn_pending(c),
												 backlog_limit());
	return c->backlog_blocked;
}

/* Is c a subscription that has room for another page now? */
static bool
wants_page(ZsConn *c, const PageRound *round)
{
	return !c->closed && !c->close_after_flush && c->sub != NULL &&
		zs_subscriber_wants_rows(c->sub, round->head, round->head_pos) && !backlog_full(c);
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

/* Is the round's catch-up budget spent? */
static bool
round_spent(const PageRound *round, Size queued)
{
	return zs_flow_round_spent(round->server->flow.live_present, queued,
							   elapsed_ms(round->start));
}

/*
 * Read the page after the first-th connection's position and hand it to it
 * and to every other subscriber of the same class at the same position
 * that has room and was not served in this round, in turn from first. The
 * page lives in the server's page context, reset after it: a round holds
 * one page at a time, however many it reads. Catching up while a
 * subscriber is live, the round's budget counts here too: a page shared by
 * many subscribers costs each of them its framing and its bytes, so
 * handing it out stops once the budget is spent, and *stopped_at is the
 * next subscriber to get it (-1 if none was left out; it reads the page
 * again in the next round). Returns the bytes queued.
 */
static Size
serve_position(PageRound *round, int first, bool catching_up, int *stopped_at)
{
	ZsServer   *server = round->server;
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
	ZsChangeLogPage *page;
	MemoryContext old;
	Size		queued = 0;
	Size		page_bytes = 0;
	bool		handed = false;
	int			limit;

	*stopped_at = -1;
	zs_subscriber_position(server->conns[first]->sub, watermark, &pos);
	old = MemoryContextSwitchTo(server->page_context);
	limit = zs_flow_page_rows(&server->flow,
							  backlog_limit() - zs_conn_pending(server->conns[first]),
							  zs_catchup_page_rows, catching_up);
	/* the round the decoder is storing, if it continues from here; else the log */
	page = zs_live_read_page(round->log_version, watermark, pos, limit);
	if (page == NULL)
		page = zs_changelog_read_page(watermark, pos, limit, round->head);
	for (int r = 0; r < page->nrows; r++)
		page_bytes += page->rows[r].message_len;
	zs_flow_note_page(&server->flow, page_bytes, page->nrows);
	for (int k = 0; k < server->nconns; k++)
	{
		int			i = (first + k) % server->nconns;
		ZsConn	   *c = server->conns[i];
		char		w[ZS_WATERMARK_MAXLEN];
		int64		p;
		int			len_before;
		bool		page_failed;

		if (round->served[i] || !round->cands[i].wants_page ||
			round->cands[i].catching_up != catching_up)
			continue;
		zs_subscriber_position(c->sub, w, &p);
		if (p != pos || strcmp(w, watermark) != 0)
			continue;
		if (catching_up && server->flow.live_present && handed &&
			round_spent(round, round->queued + queued))
		{
			*stopped_at = i;
			break;
		}
		round->served[i] = true;
		handed = true;
		len_before = c->out.len;
		page_failed = zs_subscriber_consume_page(c->sub, page, round->log_version, &c->out,
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
	zs_conns_note_freed(server, MemoryContextMemAllocated(server->page_context, true));
	MemoryContextReset(server->page_context);
	return queued;
}

/*
 * Each connection as the round begins. Within the round, a connection's
 * room changes only when it is served, so what is decided from these for
 * the others holds until the round's end.
 */
static void
gather_candidates(PageRound *round)
{
	ZsServer   *server = round->server;

	round->cands = palloc0(sizeof(ZsFlowCandidate) * Max(1, server->nconns));
	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];
		ZsFlowCandidate *cand = &round->cands[i];

		if (c->closed || c->sub == NULL)
			continue;
		cand->subscribed = true;
		cand->catching_up = is_catching_up(c);
		cand->wants_page = wants_page(c, round);
	}
}

/*
 * Catching-up subscribers in turn, from where the last round stopped,
 * until the round's budget is spent (at least one page a round, so
 * catch-up always progresses). What is left waits for the next round,
 * which comes at once (or after the pause): the loop goes back to its
 * WaitEventSet in between, to read acks and to serve what the decoder has
 * stored.
 */
static void
serve_catchup(PageRound *round, ZsFlowRound *result)
{
	ZsServer   *server = round->server;
	ZsFlowTurn	turn;
	int			stopped_at;
	int			i;

	zs_flow_turn_begin(&server->flow, &turn);
	while ((i = zs_flow_turn_next(round->cands, round->served, server->nconns, &turn)) >= 0)
	{
		if (zs_flow_turn_started(&turn) && round_spent(round, round->queued))
		{
			result->next_ms = 0;
			zs_flow_turn_stop(&turn, i);
			break;
		}
		round->queued += serve_position(round, i, true, &stopped_at);
		result->catchup_served = true;
		if (stopped_at >= 0)
		{
			/* the page's other subscribers come first in the next round */
			result->next_ms = 0;
			zs_flow_turn_stop(&turn, stopped_at);
			break;
		}
		zs_flow_turn_served(&turn, i, server->nconns);
	}
	zs_flow_turn_end(&server->flow, &turn);
}

void
zs_flow_serve_pages(ZsServer *server, const char *head, const char *replica_version,
					ZsFlowRound *result)
{
	PageRound	round = {0};
	ZsFlowPlan	plan;
	char		live_head[ZS_WATERMARK_MAXLEN];
	int64		live_pos;

	result->catching_up = false;
	result->catchup_served = false;
	result->next_ms = -1;
	server->flow.live_present = false;
	if (replica_version[0] == '\0')
		return;					/* the decoder has not started the log yet */
	round.server = server;
	round.head = head;
	/* rows of the round being stored count as there to be read */
	round.head_pos = PG_INT64_MAX;
	if (zs_live_head(replica_version, live_head, &live_pos) && strcmp(live_head, head) > 0)
	{
		round.head = live_head;
		round.head_pos = live_pos;
	}
	gather_candidates(&round);
	zs_flow_plan_round(&server->flow, round.cands, server->nconns, GetCurrentTimestamp(),
					   &plan);
	result->catching_up = plan.catching_up;
	result->next_ms = plan.next_ms;
	if (!plan.live_wanted && !plan.catchup_wanted)
		return;

	if (server->page_context == NULL)
		server->page_context = AllocSetContextCreate(TopMemoryContext, "zero_stream page",
													 ALLOCSET_DEFAULT_SIZES);
	INSTR_TIME_SET_CURRENT(round.start);
	zs_spi_xact_begin("zero_stream: reading the change log");
	round.served = palloc0(sizeof(bool) * Max(1, server->nconns));
	/* the lineage as of the pages' snapshot; a log being initialized has none */
	if (!zs_changelog_read_replica_version(round.log_version))
	{
		zs_spi_xact_commit();
		return;
	}

	/* every live subscriber, whatever it costs: its pages are short */
	for (int i = 0; i < server->nconns; i++)
	{
		int			stopped_at;

		if (!round.served[i] && round.cands[i].wants_page && !round.cands[i].catching_up)
			(void) serve_position(&round, i, false, &stopped_at);
	}
	if (plan.catchup_wanted)
		serve_catchup(&round, result);

	/*
	 * One that was served but has room for more (its page was cut to its
	 * room, and the socket took it) need not wait for an ack or the tick.
	 */
	for (int i = 0; result->next_ms < 0 && i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];

		if (round.served[i] && is_catching_up(c) && wants_page(c, &round))
			result->next_ms = 0;
	}
	zs_spi_xact_commit();
}

void
zs_flow_send_lag_reports(ZsServer *server)
{
	char		report[ZS_LAG_REPORT_LEN];
	uint64		generation;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	generation = zs_shared->lag_report_generation;
	strlcpy(report, zs_shared->lag_report, sizeof(report));
	LWLockRelease(zs_shared->lock);
	if (generation == server->flow.lag_report_sent)
		return;
	server->flow.lag_report_sent = generation;
	zs_subscriber_set_lag_report(report);
	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];

		if (!c->closed && !c->close_after_flush && c->sub != NULL &&
			zs_subscriber_is_following(c->sub) &&
			zs_subscriber_send_lag_report(c->sub, &c->out))
			zs_conn_flush(c);
	}
}

void
zs_flow_pace_catchup(ZsServer *server, int64 round_us)
{
	zs_flow_pace(&server->flow, GetCurrentTimestamp(), round_us, zs_catchup_share);
}

/*
 * Laggard disconnection (docs/zero-protocol.md §5.3): a subscriber that had
 * caught up and then lags, held back by its own acks, for longer than the
 * grace period while another subscriber keeps up, is told
 * StreamTooFarBehind and disconnected (zs_flow_laggard_due decides).
 */
void
zs_flow_check_laggards(ZsServer *server, const char *head)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		someone_live = false;

	if (zs_slow_subscriber_grace_ms <= 0)
		return;

	for (int i = 0; i < server->nconns && !someone_live; i++)
		someone_live = !server->conns[i]->closed && server->conns[i]->sub != NULL &&
			zs_subscriber_is_live(server->conns[i]->sub, head);
	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];
		long		secs;
		int			usecs;
		int64		lagging_ms;

		if (c->closed || c->close_after_flush || c->sub == NULL)
			continue;
		if (!zs_flow_laggard_due(&c->lagging_since, zs_subscriber_is_lagging(c->sub, head),
								 someone_live, now, zs_slow_subscriber_grace_ms))
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
