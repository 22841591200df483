/*-------------------------------------------------------------------------
 * standby_slots.h
 *	  The standbys a failover slot waits for (see standby_slots.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STANDBY_SLOTS_H
#define ZS_STANDBY_SLOTS_H

#include "access/xlogdefs.h"

/* PostgreSQL 17 brought failover slots and synchronized_standby_slots */
#if PG_VERSION_NUM >= 170000
#define ZS_HAVE_FAILOVER_SLOTS 1
#endif

/*
 * Do the decoder's sends and confirmations wait for standbys? True when
 * synchronized_standby_slots names any (never before 17, never during
 * recovery): then *flushed is the least flush position of those standbys'
 * physical slots, or InvalidXLogRecPtr when one of them cannot confirm
 * anything (it does not exist, is logical, or was invalidated). problem
 * (if not NULL) gets a sentence about the first slot that holds the
 * others back, or an empty string.
 */
extern bool zs_standby_slots_flushed(XLogRecPtr *flushed, char *problem, size_t len);

/*
 * Does the slot this process has acquired wait for standbys (it is a
 * failover slot, and synchronized_standby_slots names some)? Then
 * *flushed is where they all have flushed, as zs_standby_slots_flushed.
 */
extern bool zs_failover_waits(XLogRecPtr *flushed);

/*
 * Wait until the standbys the acquired slot waits for have flushed lsn
 * (at once if it waits for none), reloading the configuration meanwhile
 * (an operator may take a standby that is down out of the list).
 */
extern void zs_failover_wait_for(XLogRecPtr lsn);

/*
 * Sleep at most timeout_ms, or until a standby's walsender reports a flush,
 * or until the latch is set. Before 17, a latch wait.
 */
extern void zs_standby_slots_sleep(long timeout_ms);

/*
 * On a standby: is the slot name a copy synchronized from the primary that
 * a promotion keeps (synced, persistent, not invalidated)?
 */
extern bool zs_standby_slots_has_synced_copy(const char *name);

/* What zero_stream.status() says about failover. */
typedef struct ZsFailoverStatus
{
	const char *mode;			/* "on", "off", or "unsupported" (before 17) */
	const char *standbys;		/* synchronized_standby_slots, NULL if empty */
	bool		synced_known;	/* else failover_synced is NULL */
	bool		synced;
	char		warning[512];	/* empty: none */
	const char *hint;			/* NULL: none */
} ZsFailoverStatus;

/*
 * Failover as status() shows it, for the decoder's slot slot_name
 * confirmed up to confirmed_lsn. On a primary, synced says whether every
 * standby in synchronized_standby_slots has flushed the WAL up to the
 * slot's confirmed position (so that its copy of the slot can be there);
 * on a standby, whether it holds a synchronized copy a promotion keeps.
 */
extern void zs_failover_describe(const char *slot_name, XLogRecPtr confirmed_lsn,
								 ZsFailoverStatus *status);

#endif							/* ZS_STANDBY_SLOTS_H */
