/*-------------------------------------------------------------------------
 * backup_file.c
 *	  The backup replica's file, shared by three processes: the decoder
 *	  writes it anew at each initial copy, the replicator keeps it current,
 *	  and the server copies it for snapshots.
 *
 * The decoder never replaces the file under an open connection: it bumps
 * backup_generation in shared memory, wakes the replicator, and waits until
 * the replicator says it closed the file of that generation (or is not
 * running). Snapshot copies open the file per request and read one
 * committed state, so they need no hand-over.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"

#include "guc.h"
#include "replica/backup_file.h"
#include "shmem.h"

/* How often the decoder looks whether the replicator let go of the file */
#define RELEASE_POLL_MS 50L

char *
zs_replica_file_path(void)
{
	if (zs_replica_file == NULL || zs_replica_file[0] == '\0')
		return NULL;
	if (is_absolute_path(zs_replica_file))
		return pstrdup(zs_replica_file);
	return psprintf("%s/%s", DataDir, zs_replica_file);
}

void
zs_backup_file_release(void)
{
	uint32		generation;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	generation = ++zs_shared->backup_generation;
	if (zs_shared->workers[ZS_WORKER_REPLICATOR].latch != NULL)
		SetLatch(zs_shared->workers[ZS_WORKER_REPLICATOR].latch);
	LWLockRelease(zs_shared->lock);

	for (;;)
	{
		bool		done;

		LWLockAcquire(zs_shared->lock, LW_SHARED);
		done = zs_shared->workers[ZS_WORKER_REPLICATOR].pid == 0 || zs_shared->backup_released == generation;
		LWLockRelease(zs_shared->lock);
		if (done)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 RELEASE_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

uint32
zs_backup_file_generation(void)
{
	uint32		generation;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	generation = zs_shared->backup_generation;
	LWLockRelease(zs_shared->lock);
	return generation;
}

void
zs_backup_file_released(uint32 generation)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->backup_released = generation;
	zs_shared->backup_watermark[0] = '\0';
	LWLockRelease(zs_shared->lock);
}
