/*
 * Unit tests for the server's flow-control decisions
 * (server/flow_schedule.c): how a round sorts its subscribers and whether
 * catch-up reads or pauses, the round-robin turn over catching-up
 * subscribers and its fairness across rounds, the round's budget, page
 * sizes, the backlog limit's hysteresis, catch-up's pacing beside live
 * subscribers, and laggards; with empty, out-of-range and degenerate input
 * too.
 */
#include "postgres_fe.h"

#include "server/flow_schedule.h"
#include "unit.h"

#define MS		INT64CONST(1000)	/* in TimestampTz units */

static const ZsFlowCandidate LIVE = {true, false, true};
static const ZsFlowCandidate LIVE_FULL = {true, false, false};
static const ZsFlowCandidate CATCHUP = {true, true, true};
static const ZsFlowCandidate CATCHUP_FULL = {true, true, false};
static const ZsFlowCandidate NONE = {false, false, false};

static void
test_plan_round(void)
{
	ZsFlowState state = {0};
	ZsFlowPlan	plan;
	ZsFlowCandidate cands[4] = {{0}};
	TimestampTz now = 1000 * MS;

	/* no connection at all */
	zs_flow_plan_round(&state, cands, 0, now, &plan);
	CHECK(!plan.catching_up && !plan.live_wanted && !plan.catchup_wanted && plan.next_ms == -1,
		  "empty: nothing to do");
	CHECK(!state.live_present, "empty: nobody live");

	/* connections without subscriptions count for nothing */
	cands[0] = NONE;
	cands[1] = NONE;
	zs_flow_plan_round(&state, cands, 2, now, &plan);
	CHECK(!plan.catching_up && !plan.live_wanted && !plan.catchup_wanted,
		  "unsubscribed: nothing to do");

	/* one live with room, one catching up with room */
	cands[0] = LIVE;
	cands[1] = CATCHUP;
	zs_flow_plan_round(&state, cands, 2, now, &plan);
	CHECK(plan.live_wanted && plan.catchup_wanted && plan.catching_up && plan.next_ms == -1,
		  "live and catch-up both served");
	CHECK(state.live_present, "live present");

	/* a live subscriber without room is still live: it shortens catch-up's budget */
	cands[0] = LIVE_FULL;
	zs_flow_plan_round(&state, cands, 2, now, &plan);
	CHECK(!plan.live_wanted && plan.catchup_wanted && state.live_present,
		  "live without room: still live, not served");

	/* catching up without room: catching up, nothing to read */
	cands[0] = CATCHUP_FULL;
	zs_flow_plan_round(&state, cands, 1, now, &plan);
	CHECK(plan.catching_up && !plan.catchup_wanted && !state.live_present,
		  "catch-up without room: no read");

	/* a pause in force beside a live subscriber: catch-up waits, live is served */
	state.catchup_resume_at = now + 2500;	/* 2.5 ms */
	cands[0] = LIVE;
	cands[1] = CATCHUP;
	zs_flow_plan_round(&state, cands, 2, now, &plan);
	CHECK(plan.live_wanted && !plan.catchup_wanted && plan.catching_up,
		  "pausing: catch-up waits, live served");
	CHECK(plan.next_ms == 3, "pausing: next round when the pause ends, rounded up (got %ld)",
		  plan.next_ms);

	/* a pause of less than a ms still waits 1 ms, not 0 (which would spin) */
	state.catchup_resume_at = now + 1;
	zs_flow_plan_round(&state, cands, 2, now, &plan);
	CHECK(plan.next_ms == 1, "short pause: 1 ms (got %ld)", plan.next_ms);

	/* the pause is over */
	state.catchup_resume_at = now;
	zs_flow_plan_round(&state, cands, 2, now, &plan);
	CHECK(plan.catchup_wanted && plan.next_ms == -1, "pause over: catch-up reads");

	/* without a live subscriber a pause does not hold catch-up */
	state.catchup_resume_at = now + 60 * 1000 * MS;
	cands[0] = CATCHUP;
	zs_flow_plan_round(&state, cands, 2, now, &plan);
	CHECK(plan.catchup_wanted && plan.next_ms == -1 && !state.live_present,
		  "no live subscriber: no pause");

	/* nobody catching up wants a page: no pause to report */
	state.catchup_resume_at = now + 60 * 1000 * MS;
	cands[0] = LIVE;
	cands[1] = CATCHUP_FULL;
	zs_flow_plan_round(&state, cands, 2, now, &plan);
	CHECK(!plan.catchup_wanted && plan.next_ms == -1, "nothing to pause: no next round");
}

/* Every candidate the turn gives, in order, until none is left. */
static int
turn_order(const ZsFlowState *state, const ZsFlowCandidate *cands, const bool *served,
		   int n, int *order)
{
	ZsFlowTurn	turn;
	int			count = 0;
	int			i;

	zs_flow_turn_begin(state, &turn);
	while ((i = zs_flow_turn_next(cands, served, n, &turn)) >= 0)
	{
		order[count++] = i;
		zs_flow_turn_served(&turn, i, n);
	}
	return count;
}

static void
test_turn(void)
{
	ZsFlowState state = {0};
	ZsFlowCandidate cands[6] = {CATCHUP, LIVE, CATCHUP, CATCHUP_FULL, NONE, CATCHUP};
	bool		served[6] = {false};
	int			order[6];
	int			count;
	ZsFlowTurn	turn;

	/* from the turn, round-robin: only catching-up candidates with room */
	state.catchup_turn = 2;
	count = turn_order(&state, cands, served, 6, order);
	CHECK(count == 3 && order[0] == 2 && order[1] == 5 && order[2] == 0,
		  "order from turn 2: 2, 5, 0 (got %d: %d %d %d)", count, order[0], order[1], order[2]);

	/* those served already (sharing a page with another) are skipped */
	served[5] = true;
	count = turn_order(&state, cands, served, 6, order);
	CHECK(count == 2 && order[0] == 2 && order[1] == 0, "served skipped");
	served[5] = false;

	/* the turn after a round: after the last served */
	zs_flow_turn_begin(&state, &turn);
	CHECK(!zs_flow_turn_started(&turn), "not started before a page");
	CHECK(zs_flow_turn_next(cands, served, 6, &turn) == 2, "first is 2");
	zs_flow_turn_served(&turn, 2, 6);
	CHECK(zs_flow_turn_started(&turn), "started after a page");
	CHECK(zs_flow_turn_next(cands, served, 6, &turn) == 5, "then 5");
	zs_flow_turn_stop(&turn, 5);
	CHECK(zs_flow_turn_next(cands, served, 6, &turn) == -1, "nothing after a stop");
	zs_flow_turn_end(&state, &turn);
	CHECK(state.catchup_turn == 5, "the one stopped before comes first next (got %d)",
		  state.catchup_turn);

	/* the last served wraps around */
	zs_flow_turn_begin(&state, &turn);
	CHECK(zs_flow_turn_next(cands, served, 6, &turn) == 5, "5 first");
	zs_flow_turn_served(&turn, 5, 6);
	zs_flow_turn_end(&state, &turn);
	CHECK(state.catchup_turn == 0, "after the last: wraps to 0 (got %d)", state.catchup_turn);

	/* every one served before the budget ran out: the next starts after the last */
	state.catchup_turn = 1;
	zs_flow_turn_begin(&state, &turn);
	CHECK(zs_flow_turn_next(cands, served, 6, &turn) == 2, "from 1: 2 first");
	zs_flow_turn_served(&turn, 2, 6);
	served[5] = served[0] = true;	/* they shared 2's page */
	CHECK(zs_flow_turn_next(cands, served, 6, &turn) == -1, "nobody left");
	zs_flow_turn_end(&state, &turn);
	CHECK(state.catchup_turn == 3, "after 2: 3 (got %d)", state.catchup_turn);
	served[5] = served[0] = false;

	/* a round that served nobody leaves the turn alone */
	state.catchup_turn = 3;
	zs_flow_turn_begin(&state, &turn);
	zs_flow_turn_end(&state, &turn);
	CHECK(state.catchup_turn == 3, "no page: turn kept");

	/* a turn past the end (connections removed since) wraps */
	state.catchup_turn = 9;
	count = turn_order(&state, cands, served, 6, order);
	CHECK(count == 3 && order[0] == 5 && order[1] == 0 && order[2] == 2,
		  "turn 9 of 6: from 3 (got %d: %d %d %d)", count, order[0], order[1], order[2]);

	/* a negative turn starts at 0 */
	state.catchup_turn = -4;
	count = turn_order(&state, cands, served, 6, order);
	CHECK(count == 3 && order[0] == 0, "negative turn: from 0");

	/* no connections: nothing, and no division by zero */
	state.catchup_turn = 2;
	count = turn_order(&state, cands, served, 0, order);
	CHECK(count == 0, "no connections: nothing");

	/* nobody catching up */
	{
		ZsFlowCandidate live[3] = {LIVE, LIVE_FULL, NONE};

		count = turn_order(&state, live, served, 3, order);
		CHECK(count == 0, "only live: no catch-up turn");
	}
}

/*
 * Rounds of catch-up as flow_control.c runs them, each page costing
 * page_us of the round and page_bytes: pages served per subscriber over
 * many rounds, and the rounds that read no page (there must be none).
 */
static void
simulate_rounds(int n, bool live_present, int page_us, Size page_bytes, int rounds,
				int *pages, int *empty_rounds)
{
	ZsFlowState state = {0};
	ZsFlowCandidate cands[64];
	bool		served[64];

	for (int i = 0; i < n; i++)
	{
		cands[i] = CATCHUP;
		pages[i] = 0;
	}
	state.live_present = live_present;
	*empty_rounds = 0;
	for (int r = 0; r < rounds; r++)
	{
		ZsFlowTurn	turn;
		Size		queued = 0;
		double		elapsed = 0;
		int			in_round = 0;
		int			i;

		memset(served, 0, sizeof(served));
		zs_flow_turn_begin(&state, &turn);
		while ((i = zs_flow_turn_next(cands, served, n, &turn)) >= 0)
		{
			if (zs_flow_turn_started(&turn) &&
				zs_flow_round_spent(state.live_present, queued, elapsed))
			{
				zs_flow_turn_stop(&turn, i);
				break;
			}
			served[i] = true;
			pages[i]++;
			in_round++;
			queued += page_bytes;
			elapsed += page_us / 1000.0;
			zs_flow_turn_served(&turn, i, n);
		}
		zs_flow_turn_end(&state, &turn);
		if (in_round == 0)
			(*empty_rounds)++;
	}
}

static void
check_fair(const char *what, const int *pages, int n, int total)
{
	int			min = pages[0];
	int			max = pages[0];
	int			sum = 0;

	for (int i = 0; i < n; i++)
	{
		min = Min(min, pages[i]);
		max = Max(max, pages[i]);
		sum += pages[i];
	}
	CHECK(max - min <= 1, "%s: pages per subscriber within one of each other (min %d, max %d)",
		  what, min, max);
	if (total >= 0)
		CHECK(sum == total, "%s: %d pages in all (got %d)", what, total, sum);
}

static void
test_fairness(void)
{
	int			pages[64];
	int			empty;

	/* alone: 10 ms budget, 3 ms a page: 4 pages a round (the 4th starts before 10 ms) */
	simulate_rounds(8, false, 3000, 1024, 10, pages, &empty);
	CHECK(empty == 0, "every round read a page (%d did not)", empty);
	check_fair("no live, cheap pages", pages, 8, 40);

	/* beside a live subscriber: 1 ms budget, one 3 ms page a round */
	simulate_rounds(8, true, 3000, 1024, 10, pages, &empty);
	CHECK(empty == 0, "every round read a page (%d did not)", empty);
	check_fair("beside live, one page a round", pages, 8, 10);

	/* bytes end the round: 4 MB alone, 512 kB beside live */
	simulate_rounds(5, false, 1, 1024 * 1024, 7, pages, &empty);
	CHECK(empty == 0, "every round read a page (%d did not)", empty);
	check_fair("no live, 1 MB pages", pages, 5, 28);
	simulate_rounds(5, true, 1, 256 * 1024, 7, pages, &empty);
	CHECK(empty == 0, "every round read a page (%d did not)", empty);
	check_fair("beside live, 256 kB pages", pages, 5, 14);

	/* many subscribers, many rounds, an uneven number of pages a round */
	simulate_rounds(64, false, 2600, 1000, 1000, pages, &empty);
	CHECK(empty == 0, "every round read a page (%d did not)", empty);
	check_fair("64 subscribers", pages, 64, -1);

	/* one subscriber: every round reads for it */
	simulate_rounds(1, true, 5000, 1, 5, pages, &empty);
	CHECK(empty == 0, "every round read a page (%d did not)", empty);
	CHECK(pages[0] == 5, "one subscriber: a page every round (got %d)", pages[0]);
}

static void
test_round_spent(void)
{
	CHECK(!zs_flow_round_spent(false, 0, 0), "alone: nothing spent at the start");
	CHECK(!zs_flow_round_spent(false, 4 * 1024 * 1024 - 1, 9.99), "alone: under 4 MB, 10 ms");
	CHECK(zs_flow_round_spent(false, 4 * 1024 * 1024, 0), "alone: 4 MB spends it");
	CHECK(zs_flow_round_spent(false, 0, 10), "alone: 10 ms spends it");
	CHECK(!zs_flow_round_spent(true, 512 * 1024 - 1, 0.99), "beside live: under 512 kB, 1 ms");
	CHECK(zs_flow_round_spent(true, 512 * 1024, 0), "beside live: 512 kB spends it");
	CHECK(zs_flow_round_spent(true, 0, 1), "beside live: 1 ms spends it");
	CHECK(zs_flow_round_spent(true, 0, 1e12), "a clock far ahead spends it");
}

static void
test_page_rows(void)
{
	ZsFlowState state = {0};

	CHECK(zs_flow_page_rows(&state, 1024, 2000, false) == 2000, "no average yet: a page");
	CHECK(zs_flow_page_rows(&state, 1024, 2000, true) == 2000, "catching up alone: a page");
	state.live_present = true;
	CHECK(zs_flow_page_rows(&state, 1024 * 1024, 2000, true) == 250,
		  "catching up beside live: 250 rows");
	CHECK(zs_flow_page_rows(&state, 1024 * 1024, 2000, false) == 2000,
		  "live beside live: a page");
	CHECK(zs_flow_page_rows(&state, 0, 100, true) == 100, "setting under 250 kept");
	CHECK(zs_flow_page_rows(&state, 0, 0, false) == 1, "a zero page setting reads a row");
	state.live_present = false;

	/* large rows: what fits in the room, and never under 16 */
	zs_flow_note_page(&state, 100 * 1000, 100);
	CHECK(state.row_bytes > 249 && state.row_bytes < 251, "average after one page: 250 (%.1f)",
		  state.row_bytes);
	CHECK(zs_flow_page_rows(&state, 250 * 100, 2000, false) == 101, "room for 100 rows (got %d)",
		  zs_flow_page_rows(&state, 250 * 100, 2000, false));
	CHECK(zs_flow_page_rows(&state, 0, 2000, false) == 16, "no room: 16 rows");
	CHECK(zs_flow_page_rows(&state, (Size) 1 << 40, 2000, false) == 2000,
		  "plenty of room: a page");

	/* the average moves by a quarter; empty pages do not move it */
	zs_flow_note_page(&state, 0, 0);
	CHECK(state.row_bytes > 249 && state.row_bytes < 251, "empty page: average kept");
	zs_flow_note_page(&state, 1250 * 10, 10);
	CHECK(state.row_bytes > 499 && state.row_bytes < 501, "moving average: 500 (%.1f)",
		  state.row_bytes);
}

static void
test_backlog(void)
{
	Size		limit = 1000;

	CHECK(!zs_flow_backlog_blocked(false, 0, limit), "empty: open");
	CHECK(!zs_flow_backlog_blocked(false, 999, limit), "under the limit: open");
	CHECK(zs_flow_backlog_blocked(false, 1000, limit), "at the limit: blocked");
	CHECK(zs_flow_backlog_blocked(true, 900, limit), "blocked, above 80%%: still blocked");
	CHECK(!zs_flow_backlog_blocked(false, 900, limit), "open, above 80%%: still open");
	CHECK(!zs_flow_backlog_blocked(true, 800, limit), "blocked, at 80%%: open again");
	CHECK(zs_flow_backlog_blocked(false, 0, 0), "a zero limit blocks");
}

static void
test_pace(void)
{
	ZsFlowState state = {0};
	TimestampTz now = 5000 * MS;

	/* nobody live: no pause */
	zs_flow_pace(&state, now, 1000, 10);
	CHECK(state.catchup_resume_at == 0, "no live subscriber: no pause");

	/* a 10% share: a 1 ms round pauses catch-up 9 ms */
	state.live_present = true;
	zs_flow_pace(&state, now, 1000, 10);
	CHECK(state.catchup_resume_at == now + 9 * MS, "10%%: 9 ms pause");

	/* rounds during the pause extend it from its end, not from now */
	zs_flow_pace(&state, now + MS, 1000, 10);
	CHECK(state.catchup_resume_at == now + 18 * MS, "pauses add up");

	/* a round after the pause starts from now */
	zs_flow_pace(&state, now + 100 * MS, 2000, 50);
	CHECK(state.catchup_resume_at == now + 102 * MS, "50%%: as long as the round");

	/* all the time for catch-up: no pause */
	state.catchup_resume_at = 0;
	zs_flow_pace(&state, now, 1000, 100);
	CHECK(state.catchup_resume_at == 0, "100%%: no pause");

	/* bad input: a share out of range is taken as 1%, a round of no length adds nothing */
	zs_flow_pace(&state, now, 1000, 0);
	CHECK(state.catchup_resume_at == now + 99 * MS, "0%%: taken as 1%%");
	state.catchup_resume_at = 0;
	zs_flow_pace(&state, now, 0, 10);
	zs_flow_pace(&state, now, -5, 10);
	CHECK(state.catchup_resume_at == 0, "no round time: no pause");

	/* the plan honours it: catch-up paused exactly until then */
	{
		ZsFlowCandidate cands[2] = {LIVE, CATCHUP};
		ZsFlowPlan	plan;

		zs_flow_pace(&state, now, 1000, 10);
		zs_flow_plan_round(&state, cands, 2, now + 8 * MS, &plan);
		CHECK(!plan.catchup_wanted && plan.next_ms == 1, "8 ms into a 9 ms pause: 1 ms left");
		zs_flow_plan_round(&state, cands, 2, now + 9 * MS, &plan);
		CHECK(plan.catchup_wanted, "the pause ends on time");
	}
}

static void
test_laggards(void)
{
	TimestampTz since = 0;
	TimestampTz now = 100000 * MS;
	int			grace = 30000;

	CHECK(!zs_flow_laggard_due(&since, false, true, now, grace) && since == 0,
		  "not lagging: kept, no start");
	CHECK(!zs_flow_laggard_due(&since, true, true, now, grace) && since == now,
		  "starts lagging: kept, its start noted");
	CHECK(!zs_flow_laggard_due(&since, true, true, now + 29999 * MS, grace),
		  "within the grace period: kept");
	CHECK(zs_flow_laggard_due(&since, true, true, now + 30000 * MS, grace),
		  "past the grace period with someone live: ended");
	CHECK(!zs_flow_laggard_due(&since, true, false, now + 60000 * MS, grace) && since == now,
		  "nobody keeps up: kept, however long");
	CHECK(!zs_flow_laggard_due(&since, false, true, now + 61000 * MS, grace) && since == 0,
		  "caught up again: its lag forgotten");
	CHECK(!zs_flow_laggard_due(&since, true, true, now + 62000 * MS, grace) &&
		  since == now + 62000 * MS, "lags again: counted from then");

	/* a grace period of 0 turns it off, and leaves the state alone */
	since = 7;
	CHECK(!zs_flow_laggard_due(&since, true, true, now, 0) && since == 7, "grace 0: never");
	CHECK(!zs_flow_laggard_due(&since, true, true, now, -1) && since == 7, "negative grace: never");
}

int
main(void)
{
	test_plan_round();
	test_turn();
	test_fairness();
	test_round_spent();
	test_page_rows();
	test_backlog();
	test_pace();
	test_laggards();
	return unit_report("test_flow_control");
}
