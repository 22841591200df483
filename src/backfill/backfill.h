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
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "postmaster/bgworker.h"
#include "utils/palloc.h"

/* A backfill being run by its worker (backfill.c) */
typedef struct ZsBackfillRun ZsBackfillRun;

/*
 * The decoder's backfills: what the change log asks for, the one running,
 * and the worker stopped last or the backoff after a failure. Owned by the
 * decoder's stream (decoder/stream.h), which passes it to every call.
 */
typedef struct ZsBackfill
{
	MemoryContext context;		/* holds the requests and the backoff */
	MemoryContext step_context; /* reset at every step */
	List	   *requests;		/* request texts, in context */
	bool		requests_stale; /* to be read again from the log */
	ZsBackfillRun *running;		/* NULL if none */

	/*
	 * A stopped worker may still be exiting, and hold its snapshot slot: the
	 * next one starts only once it is gone (its context keeps the handle).
	 */
	MemoryContext stopping_context;
	BackgroundWorkerHandle *stopping_handle;

	TimestampTz retry_at;		/* no backfill starts before */
	int			retry_delay_ms; /* the next backoff */
	char	   *retry_request;	/* what the backoff is for (in context) */
	int			give_ways;		/* times the backfills gave way since one completed */
} ZsBackfill;

/* Backfills not yet looked for (their memory made at the first step). */
extern void zs_backfill_init(ZsBackfill *backfill);

/*
 * Forget any running backfill and read the unfinished ones from the change
 * log at the next step: at start-up and after a new lineage.
 */
extern void zs_backfill_reset(ZsBackfill *backfill);

/*
 * Schema changes were stored: re-read the requests; a running backfill
 * whose request changed (its table renamed or dropped, a column added,
 * renamed or dropped, new metadata) is stopped and started again.
 */
extern void zs_backfill_requests_changed(ZsBackfill *backfill);

/*
 * The relation being backfilled (InvalidOid if none), and its row key. An
 * update that changes a row's key, or a truncate of the table, means the
 * backfill's data must not predate that transaction (zero-cache's
 * minWatermark): zs_backfill_key_changed() with its watermark.
 */
extern Oid	zs_backfill_relid(const ZsBackfill *backfill);
extern const char *const *zs_backfill_key_columns(const ZsBackfill *backfill, int *nkeys);
extern void zs_backfill_key_changed(ZsBackfill *backfill, const char *watermark);

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
extern bool zs_backfill_step(ZsBackfill *backfill, XLogRecPtr decoded_upto,
							 ZsBackfillBatch *batch);

/* The last step's batch is stored, up to the change log's head. */
extern void zs_backfill_stored(ZsBackfill *backfill, const char *head);

#endif							/* ZS_BACKFILL_H */
