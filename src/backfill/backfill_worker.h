/*-------------------------------------------------------------------------
 * backfill_worker.h
 *	  The backfill worker: reads one table at a snapshot of its own and
 *	  hands zero's backfill messages to the decoder (see backfill_worker.c).
 *
 * The decoder (backfill/backfill.c) creates a dynamic shared memory segment
 * holding the request and a message queue, starts the worker with the
 * segment's handle, and receives from the queue. Each queue message is a
 * ZsBackfillMessage header followed by the change's JSON.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_BACKFILL_WORKER_H
#define ZS_BACKFILL_WORKER_H

#include "access/xlogdefs.h"

#define ZS_BACKFILL_SHM_MAGIC 0x7a736266	/* "zsbf" */
#define ZS_BACKFILL_KEY_REQUEST 1
#define ZS_BACKFILL_KEY_QUEUE 2
#define ZS_BACKFILL_QUEUE_BYTES (1024 * 1024)

/* rows are sent once their values reach this many bytes (zero-cache's COPY chunk) */
#define ZS_BACKFILL_CHUNK_BYTES (64 * 1024)

#define ZS_BACKFILL_ROWS 'B'	/* {"tag":"backfill",...} */
#define ZS_BACKFILL_COMPLETED 'C'	/* {"tag":"backfill-completed",...} */

typedef struct ZsBackfillMessage
{
	char		kind;			/* ZS_BACKFILL_ROWS or ZS_BACKFILL_COMPLETED */
	XLogRecPtr	snapshot_lsn;	/* every commit before it is in the snapshot */
	int64		rows;			/* sent so far, this message's included */
	int64		total_rows;
	/* the change's JSON follows */
} ZsBackfillMessage;

PGDLLEXPORT void zs_backfill_main(Datum main_arg);

#endif							/* ZS_BACKFILL_WORKER_H */
