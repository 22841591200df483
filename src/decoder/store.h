/*-------------------------------------------------------------------------
 * store.h
 *	  The change log's one writer: every row the decoder stores, and the
 *	  head it moves (see store.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STORE_H
#define ZS_STORE_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"

#include "backfill/backfill.h"
#include "decoder/stream.h"

/* One local transaction of the change log, from zs_store_begin to its commit. */
typedef struct ZsStore
{
	ZsStream   *stream;
	char		head[ZS_WATERMARK_MAXLEN];	/* the last transaction added */
	int			ntxns;			/* transactions added */
	int64		nchanges;		/* their changes (begin and commit not counted) */
} ZsStore;

/* The upstream progress a store of decoded transactions commits with. */
typedef struct ZsStoreProgress
{
	XLogRecPtr	end_lsn;		/* the last upstream commit's end */
	TimestampTz commit_time;	/* and its time */
} ZsStoreProgress;

/*
 * Start a store: a transaction (activity for pg_stat_activity), the state
 * row locked, the log checked to be ours.
 */
extern void zs_store_begin(ZsStore *st, ZsStream *s, const char *activity);

/* A decoded row, as staged (stage.c): watermark and pos are its key. */
extern void zs_store_row(ZsStore *st, const char *watermark, int64 pos,
						 const char *change, int change_len, bool is_commit, bool is_schema);

/*
 * Commit decoded transactions up to last_watermark (ntxns of them, with
 * nchanges changes): the commit stamps the origin's progress, so decoding
 * restarts after them; the head moves once it commits.
 */
extern void zs_store_commit_decoded(ZsStore *st, const char *last_watermark, int ntxns,
									int64 nchanges, const ZsStoreProgress *progress);

/*
 * A backfill's messages, each as a synthetic transaction at the next minor
 * version of the head (backfill-completed at its snapshot's watermark at
 * least), in one store of their own: committed, then readable once the
 * standbys of a failover slot have them, then the head moves.
 */
extern void zs_store_backfill(ZsStream *s, const ZsBackfillBatch *batch);

#endif							/* ZS_STORE_H */
