/*-------------------------------------------------------------------------
 * purge_floor.h
 *	  The purge floor: the lowest watermark anything may still need
 *	  (see purge_floor.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_PURGE_FLOOR_H
#define ZS_PURGE_FLOOR_H

#include "shmem.h"

typedef enum ZsPurgeFloor
{
	ZS_PURGE_FLOOR_HELD,		/* floor: the lowest watermark still needed */
	ZS_PURGE_FLOOR_WAITING,		/* the backup replica vouches once it reaches gate */
	ZS_PURGE_FLOOR_NONE			/* nothing vouches for any watermark */
} ZsPurgeFloor;

/*
 * The floor among the backup replica's watermark (once it reached gate,
 * the head when the decoder started), every connected subscriber's acked
 * watermark, every snapshot reservation's, and every subscriber that left
 * less than retention_ms ago. HELD: the floor (ZS_WATERMARK_MAXLEN) and,
 * in holder, what holds it; otherwise nothing may be purged and holder
 * says why. WAITING is for a while: the backup replica is opening, being
 * replaced or catching up with gate.
 */
extern ZsPurgeFloor zs_purge_floor(const char *gate, int retention_ms, char *floor,
								   ZsPurgeHolder *holder);

#endif							/* ZS_PURGE_FLOOR_H */
