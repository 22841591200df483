/*-------------------------------------------------------------------------
 * subscriber_positions.h
 *	  The purge floor's positions kept across restarts and crashes (see
 *	  subscriber_positions.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SUBSCRIBER_POSITIONS_H
#define ZS_SUBSCRIBER_POSITIONS_H

/*
 * Once per shared-memory lifetime, before the first purge: the positions
 * of lineage replica_version saved before the restart become departed
 * entries, retained for subscriber_retention as if the server had not
 * restarted.
 */
extern void zs_positions_restore(const char *replica_version);

/*
 * Between decoding rounds: save the positions if they changed, at most
 * once a second.
 */
extern void zs_positions_save_step(void);

#endif							/* ZS_SUBSCRIBER_POSITIONS_H */
