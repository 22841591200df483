/*-------------------------------------------------------------------------
 * shmem.c
 *	  Shared memory request/startup hooks and small publishing helpers.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "shmem.h"

static Size
shared_state_size(void)
{
	return add_size(offsetof(ZsSharedState, subscribers),
					mul_size(zs_max_subscribers, sizeof(ZsSubscriberSlot)));
}

ZsSharedState *zs_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
zs_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(shared_state_size()));
	RequestNamedLWLockTranche("zero_stream", 1);
}

static void
zs_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	zs_shared = ShmemInitStruct("zero_stream", shared_state_size(), &found);
	if (!found)
	{
		memset(zs_shared, 0, shared_state_size());
		zs_shared->max_subscribers = zs_max_subscribers;
		zs_shared->lock = &(GetNamedLWLockTranche("zero_stream"))->lock;
		strlcpy(zs_shared->decoder_state, "not started", sizeof(zs_shared->decoder_state));
	}
	LWLockRelease(AddinShmemInitLock);
}

void
zs_shared_state_install_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = zs_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = zs_shmem_startup;
}

void
zs_set_decoder_state(const char *state)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->decoder_state, state, sizeof(zs_shared->decoder_state));
	LWLockRelease(zs_shared->lock);
}

void
zs_set_last_error(const char *message)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->last_error, message, sizeof(zs_shared->last_error));
	zs_shared->last_error_time = GetCurrentTimestamp();
	LWLockRelease(zs_shared->lock);
}

void
zs_record_value_error(const char *message)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->value_errors++;
	strlcpy(zs_shared->last_value_error, message, sizeof(zs_shared->last_value_error));
	zs_shared->last_value_error_time = GetCurrentTimestamp();
	LWLockRelease(zs_shared->lock);
}

static void
worker_detach(int code, Datum arg)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	switch ((ZsWorkerKind) DatumGetInt32(arg))
	{
		case ZS_WORKER_DECODER:
			zs_shared->decoder_pid = 0;
			zs_shared->decoder_latch = NULL;
			break;
		case ZS_WORKER_SERVER:
			zs_shared->server_pid = 0;
			zs_shared->server_latch = NULL;
			/* its connections are gone with it */
			for (int i = 0; i < zs_shared->max_subscribers; i++)
				zs_shared->subscribers[i].in_use = false;
			break;
		case ZS_WORKER_REPLICATOR:
			zs_shared->replicator_pid = 0;
			zs_shared->replicator_latch = NULL;
			break;
	}
	LWLockRelease(zs_shared->lock);
}

void
zs_worker_attach(ZsWorkerKind kind, const char *name)
{
	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(zs_database, NULL, 0);
	pgstat_report_appname(name);

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	switch (kind)
	{
		case ZS_WORKER_DECODER:
			zs_shared->decoder_pid = MyProcPid;
			zs_shared->decoder_latch = MyLatch;
			break;
		case ZS_WORKER_SERVER:
			zs_shared->server_pid = MyProcPid;
			zs_shared->server_latch = MyLatch;
			break;
		case ZS_WORKER_REPLICATOR:
			zs_shared->replicator_pid = MyProcPid;
			zs_shared->replicator_latch = MyLatch;
			break;
	}
	LWLockRelease(zs_shared->lock);
	before_shmem_exit(worker_detach, Int32GetDatum((int32) kind));
}
