/*-------------------------------------------------------------------------
 * purge.h
 *	  The decoder's purges of the change log (see purge.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_PURGE_H
#define ZS_PURGE_H

#include "datatype/timestamp.h"

#include "codec/watermark.h"
#include "shmem.h"

/* The decoder's purge: when it runs, its pacing, and the run under way */
typedef struct ZsPurge
{
	/* when */
	TimestampTz last_purge;		/* the last run's end, or look while waiting */
	bool		requested;		/* zero_stream.purge() asked */
	bool		waiting;		/* the last look waited for the backup replica */
	uint64		waited_backup_moves;	/* zs_shared->backup_moves at that look */

	/* pacing */
	int			batch_rows;		/* the next batch's size */
	double		credit_ms;		/* purge time earned while decoding */
	TimestampTz last_step_end;

	/* the run, spread over the decoder's iterations */
	bool		running;
	bool		has_floor;		/* floor_watermark holds the floor */
	char		floor_watermark[ZS_WATERMARK_MAXLEN];
	ZsPurgeHolder holder;		/* what holds the floor */
	int64		run_rows;
	int64		run_bytes;
	char		after_watermark[ZS_WATERMARK_MAXLEN];	/* the last row deleted */
	int64		after_pos;
} ZsPurge;

/* A purge that has not run yet. */
extern void zs_purge_init(ZsPurge *purge);

/*
 * Between decoding rounds: purge if it is time or zero_stream.purge() asked,
 * for a bounded time. gate is the log's head when the decoder started: the
 * backup replica's watermark counts once it reached it. decoding: the
 * decoder stored decoded transactions in this iteration (the purge then
 * takes only its share of the decoder's time). Returns true if the purge
 * goes on at the next call.
 */
extern bool zs_purge_step(ZsPurge *purge, const char *gate, bool decoding);

#endif							/* ZS_PURGE_H */
