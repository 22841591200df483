/*-------------------------------------------------------------------------
 * purge_batch.h
 *	  One batch of a purge of the change log (see purge_batch.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_PURGE_BATCH_H
#define ZS_PURGE_BATCH_H

typedef enum ZsPurgeBatchResult
{
	ZS_PURGE_BATCH_DONE,		/* nothing more below the floor */
	ZS_PURGE_BATCH_MORE,		/* a full batch was deleted: more may follow */
	ZS_PURGE_BATCH_LOCKED		/* the oldest row is locked: no purge now */
} ZsPurgeBatchResult;

/*
 * Delete at most limit rows below floor after (after_watermark, after_pos),
 * which it moves to the last row deleted ("" and -1 to start a purge),
 * never the newest transaction; *rows and *bytes say what it deleted. The
 * purge lock (a row lock on the oldest row) is checked at a purge's first
 * batch. Runs in the caller's transaction with SPI connected; an ERROR if
 * another change streamer has taken the log over.
 */
extern ZsPurgeBatchResult zs_purge_batch(const char *floor, int limit,
										 char *after_watermark, int64 *after_pos,
										 int64 *rows, int64 *bytes);

#endif							/* ZS_PURGE_BATCH_H */
