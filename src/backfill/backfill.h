/*-------------------------------------------------------------------------
 * backfill.h
 *	  The decoder's side of backfills: which are needed, the worker that
 *	  reads one, and the synthetic transactions that store its messages
 *	  (see backfill.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_BACKFILL_H
#define ZS_BACKFILL_H

#include "access/xlogdefs.h"
#include "nodes/pg_list.h"

/*
 * Forget any running backfill and read the unfinished ones from the change
 * log at the next step: at start-up and after a new lineage.
 */
extern void zs_backfill_reset(void);

/*
 * Schema changes were stored: re-read the requests; a running backfill
 * whose request changed (its table renamed or dropped, a column added,
 * renamed or dropped, new metadata) is stopped and started again.
 */
extern void zs_backfill_requests_changed(void);

/*
 * The relation being backfilled (InvalidOid if none), and its row key. An
 * update that changes a row's key, or a truncate of the table, means the
 * backfill's data must not predate that transaction (zero-cache's
 * minWatermark): zs_backfill_key_changed() with its watermark.
 */
extern Oid	zs_backfill_relid(void);
extern const char *const *zs_backfill_key_columns(int *nkeys);
extern void zs_backfill_key_changed(const char *watermark);

/*
 * What a step has for the change log: the worker's messages (JSON texts),
 * each to be stored as a synthetic transaction after the head, then
 * backfill-completed once decoding has passed the backfill's snapshot.
 * It lives until the next step.
 */
typedef struct ZsBackfillBatch
{
	List	   *rows;			/* "backfill" messages */
	const char *completed;		/* "backfill-completed", or NULL */
	XLogRecPtr	completed_lsn;	/* its snapshot: stored at a watermark not before it */
} ZsBackfillBatch;

/*
 * One step, between decoding rounds: start a backfill if one is needed,
 * take what its worker sent. decoded_upto is where decoding is: every
 * commit before it is stored. True if *batch holds something to store:
 * the decoder's one writer stores it (decoder/store.c), then calls
 * zs_backfill_stored.
 */
extern bool zs_backfill_step(XLogRecPtr decoded_upto, ZsBackfillBatch *batch);

/* The last step's batch is stored, up to the change log's head. */
extern void zs_backfill_stored(const char *head);

#endif							/* ZS_BACKFILL_H */
