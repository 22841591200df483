/*-------------------------------------------------------------------------
 * standby_hold.h
 *	  The name under which a primary holds a standby's backup replica in its
 *	  purge floor, and a promoted server's own former hold (standby_hold.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STANDBY_HOLD_H
#define ZS_STANDBY_HOLD_H

/* the departed-subscriber id under which a standby's position is held */
#define ZS_STANDBY_HOLD_PREFIX "standby "

/*
 * The name this server reports its backup replica under while it is a
 * standby: primary_slot_name, else cluster_name, else host:port.
 */
extern const char *zs_standby_name(void);

/* The standby's name in a held subscriber id, or NULL if it is no standby's hold. */
extern const char *zs_standby_hold_name(const char *id);

/*
 * This server is a standby, held (or about to be) by its primary under
 * name: kept in shared memory until the postmaster restarts.
 */
extern void zs_standby_hold_note(const char *name);

/*
 * Is a held subscriber id this server's own hold, from when it was a
 * standby earlier in this postmaster's life (so it was promoted since)?
 */
extern bool zs_standby_hold_is_own(const char *id);

#endif							/* ZS_STANDBY_HOLD_H */
