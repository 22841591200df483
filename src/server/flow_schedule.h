/*-------------------------------------------------------------------------
 * flow_schedule.h
 *	  The decisions of the server's flow control, over plain inputs: which
 *	  subscriber gets the next page, how catch-up is paced beside live
 *	  subscribers, when a backlog blocks and when a laggard is ended.
 *	  FRONTEND-safe: no SPI, no sockets, no clock (the caller passes now).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_FLOW_SCHEDULE_H
#define ZS_FLOW_SCHEDULE_H

#include "datatype/timestamp.h"

/* One subscriber as a round of page serving sees it, at the round's start */
typedef struct ZsFlowCandidate
{
	bool		subscribed;		/* open, with a subscription (closing ones too) */
	bool		catching_up;	/* not following the live stream */
	bool		wants_page;		/* has room for another page now */
} ZsFlowCandidate;

/* What flow control keeps from one round to the next */
typedef struct ZsFlowState
{
	int			catchup_turn;	/* where the next round's catch-up starts */
	TimestampTz catchup_resume_at;	/* catch-up pauses until then, while
									 * a subscriber is live */
	bool		live_present;	/* a subscriber was live in the last round */
	double		row_bytes;		/* the average message of recent pages, in
								 * bytes (0: none read yet) */
	uint64		lag_report_sent;	/* the generation of the last lag report
									 * sent */
} ZsFlowState;

/* What a round of page serving is to do, decided before it reads a page */
typedef struct ZsFlowPlan
{
	bool		catching_up;	/* some subscriber is catching up */
	bool		live_wanted;	/* a live subscriber has room: serve it */
	bool		catchup_wanted; /* catching-up subscribers get pages now */
	long		next_ms;		/* catch-up is pausing: the next round within
								 * this many ms; -1 if not */
} ZsFlowPlan;

/*
 * Sort the round's n candidates into live and catching-up ones, and decide
 * whether catch-up reads now or waits for its pause to end (set by
 * zs_flow_pace). Sets state->live_present.
 */
extern void zs_flow_plan_round(ZsFlowState *state, const ZsFlowCandidate *cands, int n,
							   TimestampTz now, ZsFlowPlan *plan);

/*
 * A round's catch-up, in turn over the n candidates from state's
 * catchup_turn (round-robin across rounds). Start with
 * zs_flow_turn_begin; zs_flow_turn_next gives the next catching-up
 * candidate with room not yet served (-1 when none is left); the caller
 * tells what happened to it, and zs_flow_turn_end leaves the next round's
 * turn in state: after the last one served, or the one the round stopped
 * before.
 */
typedef struct ZsFlowTurn
{
	int			first;			/* the round's first candidate to look at */
	int			k;				/* candidates looked at so far */
	int			next_turn;		/* where the next round starts; -1 while
								 * nothing was served or stopped */
} ZsFlowTurn;

extern void zs_flow_turn_begin(const ZsFlowState *state, ZsFlowTurn *turn);
extern int	zs_flow_turn_next(const ZsFlowCandidate *cands, const bool *served, int n,
							  ZsFlowTurn *turn);
/* Pages were read for candidate i: the next round starts after it. */
extern void zs_flow_turn_served(ZsFlowTurn *turn, int i, int n);
/* The round stops before candidate i, which comes first in the next round. */
extern void zs_flow_turn_stop(ZsFlowTurn *turn, int i);
/* Has the round read a catch-up page yet? (At least one a round is read.) */
extern bool zs_flow_turn_started(const ZsFlowTurn *turn);
extern void zs_flow_turn_end(ZsFlowState *state, const ZsFlowTurn *turn);

/*
 * Is a catch-up round's budget spent, with queued bytes queued and
 * elapsed_ms since its first read? Shorter while a subscriber is live.
 */
extern bool zs_flow_round_spent(bool live_present, Size queued, double elapsed_ms);

/*
 * Rows worth reading for a subscriber with room bytes below its backlog
 * limit, with zero_stream.catchup_page_rows page_rows; fewer for a
 * catching-up subscriber while another is live.
 */
extern int	zs_flow_page_rows(const ZsFlowState *state, Size room, int page_rows,
							  bool catching_up);

/* A page of nrows messages, page_bytes in all, was read: the average moves. */
extern void zs_flow_note_page(ZsFlowState *state, Size page_bytes, int nrows);

/*
 * Is a subscriber with pending bytes queued blocked by the backlog limit,
 * given whether it was (blocked)? Above the limit it blocks, and stays
 * blocked until it is below 80% of it.
 */
extern bool zs_flow_backlog_blocked(bool blocked, Size pending, Size limit);

/*
 * A round that read pages for catching-up subscribers took round_us: while
 * a subscriber is live, pause catch-up so that it takes at most
 * catchup_share percent of the worker's time.
 */
extern void zs_flow_pace(ZsFlowState *state, TimestampTz now, int64 round_us,
						 int catchup_share);

/*
 * One subscriber's laggard check at now: lagging says whether it lags
 * behind the stream, someone_live whether another keeps up. *lagging_since
 * is when its lag began (0: not lagging), updated here. True if it lagged
 * for longer than grace_ms (0 or less: never) while someone keeps up: end
 * it.
 */
extern bool zs_flow_laggard_due(TimestampTz *lagging_since, bool lagging, bool someone_live,
								TimestampTz now, int grace_ms);

#endif							/* ZS_FLOW_SCHEDULE_H */
