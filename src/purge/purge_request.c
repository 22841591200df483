/*-------------------------------------------------------------------------
 * purge_request.c
 *	  zero_stream.purge(timeout): a purge now, on request.
 *
 * The decoder is the change log's only writer, so it purges (purge.c);
 * this asks it to now, between its decoding rounds, and waits until a
 * purge that saw the request has finished: its rows and bytes deleted, its
 * floor (NULL if nothing may be purged) and what holds it, or why nothing
 * may be purged.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "shmem.h"

PG_FUNCTION_INFO_V1(zs_purge);

Datum
zs_purge(PG_FUNCTION_ARGS)
{
	Interval   *timeout = PG_GETARG_INTERVAL_P(0);
	TimestampTz deadline = GetCurrentTimestamp() +
		timeout->time + (timeout->day + (int64) timeout->month * 30) * USECS_PER_DAY;
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	uint64		runs;
	ZsPurgeHolder holder;

	zs_require_shared_state();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	(void) zs_ask_decoder(ZS_ASK_PURGE, &runs);
	for (;;)
	{
		bool		done;

		LWLockAcquire(zs_shared->lock, LW_SHARED);
		done = zs_shared->purge_runs > runs;
		if (done)
		{
			values[0] = Int64GetDatum(zs_shared->last_purge_rows);
			values[1] = Int64GetDatum(zs_shared->last_purge_bytes);
			nulls[2] = !zs_shared->has_purge_floor;
			if (!nulls[2])
				values[2] = CStringGetTextDatum(zs_shared->purge_floor);
			holder = zs_shared->purge_holder;
		}
		LWLockRelease(zs_shared->lock);
		if (done)
		{
			char	   *text = zs_purge_holder_text(&holder);

			nulls[3] = (text == NULL);
			if (text != NULL)
				values[3] = CStringGetTextDatum(text);
		}
		if (done)
			break;
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("the zero_stream decoder did not purge within the timeout"),
					 errhint("It purges between decoding rounds; check zero_stream.status().")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 20L,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
