/*-------------------------------------------------------------------------
 * control.c
 *	  SQL functions that ask the workers to do something.
 *
 * zero_stream.resync(): start a new lineage. The decoder drops its slot,
 * creates a new one, copies every published table into a new backup
 * replica at the new slot's snapshot and starts the change log again at
 * a new replicaVersion. Subscribers of the old one are told
 * WrongReplicaVersion and restore from a snapshot. This is how a lost
 * backup replica is rebuilt, or how a deployment starts afresh on purpose.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/latch.h"

#include "shared_state.h"

PG_FUNCTION_INFO_V1(zs_resync);

Datum
zs_resync(PG_FUNCTION_ARGS)
{
	int			pid;
	Latch	   *latch;

	if (zs_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream is not loaded through shared_preload_libraries")));
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	pid = zs_shared->decoder_pid;
	latch = zs_shared->decoder_latch;
	if (pid != 0)
		zs_shared->resync_requested = true;
	LWLockRelease(zs_shared->lock);
	if (pid == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the zero_stream decoder is not running"),
				 errhint("Check zero_stream.status() and the server log.")));
	SetLatch(latch);
	ereport(NOTICE,
			(errmsg("zero_stream decoder (PID %d) will start a new lineage", pid),
			 errdetail("Subscribers of the current replicaVersion will be told to restore from a snapshot.")));
	PG_RETURN_VOID();
}
