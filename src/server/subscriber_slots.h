/*-------------------------------------------------------------------------
 * subscriber_slots.h
 *	  The server's connections as zero_stream.subscribers() shows them.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SUBSCRIBER_SLOTS_H
#define ZS_SUBSCRIBER_SLOTS_H

#include "server/server.h"

/* Copy every open connection's state to its slot in shared memory. */
extern void zs_publish_subscriber_slots(ZsServer *server, const char *head);

#endif							/* ZS_SUBSCRIBER_SLOTS_H */
