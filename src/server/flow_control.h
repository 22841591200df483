/*-------------------------------------------------------------------------
 * flow_control.h
 *	  Which subscriber gets the next page of the change log, and which one
 *	  is too far behind to keep (docs/zero-protocol.md §5).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_FLOW_CONTROL_H
#define ZS_FLOW_CONTROL_H

#include "server/server.h"

/* What a round of page serving left to do */
typedef struct ZsFlowRound
{
	bool		catching_up;	/* some subscriber is catching up */
	bool		catchup_served; /* pages were read for catching-up ones */
	long		next_ms;		/* catch-up has pages left: the next round
								 * within this many ms (0: at once); -1 if not */
} ZsFlowRound;

/*
 * Give the server's subscribers that have room the next page after their
 * position, in one short read-only transaction: every live one, then
 * catching-up ones in turn within the round's catch-up budget, unless
 * catch-up is pausing (flow_schedule.c decides). head and replica_version
 * are the log's as the decoder last published them.
 */
extern void zs_flow_serve_pages(ZsServer *server, const char *head,
								const char *replica_version, ZsFlowRound *round);

/*
 * A round of the loop that read pages for catching-up subscribers took
 * round_us (the pages, and the acks and socket writes of the round): while
 * a subscriber is live, pause catch-up so that it takes at most
 * zero_stream.catchup_share of the worker's time. Only such rounds count:
 * a pause ends, because the rounds during it (serving live subscribers,
 * reading their acks) do not lengthen it, however many there are.
 */
extern void zs_flow_pace_catchup(ZsServer *server, int64 round_us);

/* End the subscriptions that lagged for longer than the grace period. */
extern void zs_flow_check_laggards(ZsServer *server, const char *head);

/*
 * A new lag report from the decoder (decoder/lag_report.c): sent to every
 * live subscriber between transactions, and kept for new subscriptions'
 * first status.
 */
extern void zs_flow_send_lag_reports(ZsServer *server);

#endif							/* ZS_FLOW_CONTROL_H */
