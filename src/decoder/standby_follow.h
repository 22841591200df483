/*-------------------------------------------------------------------------
 * standby_follow.h
 *	  The decoder on a standby (see standby_follow.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STANDBY_FOLLOW_H
#define ZS_STANDBY_FOLLOW_H

/*
 * While the server is in recovery: decode nothing, and publish the
 * replicated change log's lineage and head as replay brings them. Returns
 * at once on a primary, and when a promotion has ended recovery.
 */
extern void zs_standby_follow(void);

#endif							/* ZS_STANDBY_FOLLOW_H */
