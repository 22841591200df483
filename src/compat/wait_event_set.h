/*-------------------------------------------------------------------------
 * compat/wait_event_set.h
 *	  A WaitEventSet of the server worker's loop, on PostgreSQL 15 to 18.
 *
 * 17 tracks a set by a resource owner instead of allocating it in a
 * memory context. The server frees and rebuilds its set itself
 * (FreeWaitEventSet), for its whole life, so on 17 and later it belongs to
 * no resource owner (NULL), as it belonged to TopMemoryContext before.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_WAIT_EVENT_SET_H
#define ZS_COMPAT_WAIT_EVENT_SET_H

#include "storage/latch.h"
#include "utils/memutils.h"

static inline WaitEventSet *
zs_create_wait_event_set(int nevents)
{
#if PG_VERSION_NUM >= 170000
	return CreateWaitEventSet(NULL, nevents);
#else
	return CreateWaitEventSet(TopMemoryContext, nevents);
#endif
}

#endif							/* ZS_COMPAT_WAIT_EVENT_SET_H */
