/*-------------------------------------------------------------------------
 * shared_state.c
 *	  Shared memory request/startup hooks and small publishing helpers.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "shared_state.h"

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
