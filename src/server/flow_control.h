/*-------------------------------------------------------------------------
 * flow_control.h
 *	  Which subscriber gets the next page of the change log, and which one
 *	  is too far behind to keep (docs/zero-protocol.md §5).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_FLOW_CONTROL_H
#define ZS_FLOW_CONTROL_H

/*
 * Give every subscriber that has room the next page after its position,
 * in one short read-only transaction for all. head and replica_version
 * are the log's as the decoder last published them.
 */
extern void zs_flow_serve_pages(const char *head, const char *replica_version);

/* End the subscriptions that lagged for longer than the grace period. */
extern void zs_flow_check_laggards(const char *head);

#endif							/* ZS_FLOW_CONTROL_H */
