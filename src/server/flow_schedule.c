/*-------------------------------------------------------------------------
 * flow_schedule.c
 *	  The decisions of the server's flow control, apart from reading pages
 *	  and sockets (flow_control.c does both, and asks these).
 *
 * Each round of the server's loop serves the live subscribers first (those
 * whose last page reached the end of the log: they wait only for new
 * commits, a short page), then catching-up subscribers in turn,
 * round-robin from where the previous round stopped, until the round's
 * budget is spent; at least one catch-up page is read each round, so
 * catch-up always progresses, and the next round starts with the first
 * subscriber left out. While a subscriber is live the budget is small, and
 * so is a catch-up page: a commit stored meanwhile waits for one such share
 * at most, not for every catching-up subscriber's page.
 *
 * While a subscriber is live, every round that read catch-up pages adds a
 * pause in catch-up proportional to its length, so that catch-up takes at
 * most zero_stream.catchup_share of the worker's time: on a small machine
 * the decoder and the live subscribers need the CPU that a catch-up going
 * flat out would take. Live rounds go on during the pause, and do not
 * lengthen it.
 *
 * The round's budget: pages are read for catching-up subscribers until
 * this much time has passed since the round's first read or this many
 * bytes were queued, whichever comes first. Longer live rounds and pages
 * raise a live subscriber's latency while others catch up; shorter ones
 * slow the catch-up for no gain (bench/catchup.sh measures both;
 * bench/README.md keeps its results).
 *
 * Compiles as backend or frontend code (test/unit/test_flow_control.c).
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "server/flow_schedule.h"

#define CATCHUP_ROUND_MS	10
#define CATCHUP_ROUND_BYTES	(4 * 1024 * 1024)
#define CATCHUP_LIVE_ROUND_MS		1
#define CATCHUP_LIVE_ROUND_BYTES	(512 * 1024)
#define CATCHUP_LIVE_PAGE_ROWS		250

/* a page is never cut below this many rows by its subscriber's room */
#define MIN_PAGE_ROWS		16

void
zs_flow_plan_round(ZsFlowState *state, const ZsFlowCandidate *cands, int n,
				   TimestampTz now, ZsFlowPlan *plan)
{
	plan->catching_up = false;
	plan->live_wanted = false;
	plan->catchup_wanted = false;
	plan->next_ms = -1;
	state->live_present = false;
	for (int i = 0; i < n; i++)
	{
		if (!cands[i].subscribed)
			continue;
		if (cands[i].catching_up)
		{
			plan->catching_up = true;
			plan->catchup_wanted |= cands[i].wants_page;
		}
		else
		{
			state->live_present = true;
			plan->live_wanted |= cands[i].wants_page;
		}
	}
	if (plan->catchup_wanted && state->live_present && now < state->catchup_resume_at)
	{
		plan->next_ms = Max(1, (long) ((state->catchup_resume_at - now + 999) / 1000));
		plan->catchup_wanted = false;
	}
}

void
zs_flow_turn_begin(const ZsFlowState *state, ZsFlowTurn *turn)
{
	turn->first = Max(0, state->catchup_turn);
	turn->k = 0;
	turn->next_turn = -1;
}

int
zs_flow_turn_next(const ZsFlowCandidate *cands, const bool *served, int n, ZsFlowTurn *turn)
{
	while (turn->k < n)
	{
		int			i = (int) (((int64) turn->first + turn->k) % n);

		turn->k++;
		if (served[i] || !cands[i].subscribed || !cands[i].wants_page ||
			!cands[i].catching_up)
			continue;
		return i;
	}
	return -1;
}

void
zs_flow_turn_served(ZsFlowTurn *turn, int i, int n)
{
	turn->next_turn = (i + 1) % n;
}

void
zs_flow_turn_stop(ZsFlowTurn *turn, int i)
{
	turn->next_turn = i;
	turn->k = PG_INT32_MAX;
}

bool
zs_flow_turn_started(const ZsFlowTurn *turn)
{
	return turn->next_turn >= 0;
}

/* A round that served nobody leaves the turn where it was. */
void
zs_flow_turn_end(ZsFlowState *state, const ZsFlowTurn *turn)
{
	if (turn->next_turn >= 0)
		state->catchup_turn = turn->next_turn;
}

bool
zs_flow_round_spent(bool live_present, Size queued, double elapsed_ms)
{
	if (live_present)
		return queued >= CATCHUP_LIVE_ROUND_BYTES || elapsed_ms >= CATCHUP_LIVE_ROUND_MS;
	return queued >= CATCHUP_ROUND_BYTES || elapsed_ms >= CATCHUP_ROUND_MS;
}

/*
 * A page, or fewer rows when they are large (by the average message of
 * recent pages), so that a subscriber with little room does not cost the
 * read of a page it cannot take. A page shorter than a page's rows is
 * still "full" (the subscription reads on from where it stopped).
 */
int
zs_flow_page_rows(const ZsFlowState *state, Size room, int page_rows, bool catching_up)
{
	int			rows = Max(1, page_rows);

	if (state->row_bytes > 0)
	{
		double		fit = (double) room / state->row_bytes + 1;

		rows = (int) Max(MIN_PAGE_ROWS, Min((double) rows, fit));
	}
	if (catching_up && state->live_present)
		rows = Min(rows, CATCHUP_LIVE_PAGE_ROWS);
	return rows;
}

void
zs_flow_note_page(ZsFlowState *state, Size page_bytes, int nrows)
{
	if (nrows > 0)
		state->row_bytes = (state->row_bytes * 3 + (double) page_bytes / nrows) / 4;
}

/* the low-water mark is zero-cache's ratio */
bool
zs_flow_backlog_blocked(bool blocked, Size pending, Size limit)
{
	if (pending >= limit)
		return true;
	if (pending <= limit / 10 * 8)
		return false;
	return blocked;
}

/* The rounds during a pause do not lengthen it: only rounds that read count. */
void
zs_flow_pace(ZsFlowState *state, TimestampTz now, int64 round_us, int catchup_share)
{
	if (!state->live_present || catchup_share >= 100 || round_us <= 0)
		return;
	catchup_share = Max(1, catchup_share);
	state->catchup_resume_at = Max(state->catchup_resume_at, now) +
		round_us * (100 - catchup_share) / catchup_share;
}

/*
 * docs/zero-protocol.md §5.3: one that had caught up and then lags, held
 * back by its own acks, for longer than the grace period while another
 * keeps up. Without an on-time subscriber to compare with, nobody is ended.
 */
bool
zs_flow_laggard_due(TimestampTz *lagging_since, bool lagging, bool someone_live,
					TimestampTz now, int grace_ms)
{
	if (grace_ms <= 0)
		return false;
	if (!lagging)
	{
		*lagging_since = 0;
		return false;
	}
	if (*lagging_since == 0)
		*lagging_since = now;
	return someone_live && now - *lagging_since >= (int64) grace_ms * 1000;
}
