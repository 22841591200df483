/*-------------------------------------------------------------------------
 * admission.h
 *	  The subscriber server's connection limits: connections still sending
 *	  their HTTP request (zero_stream.max_pending_connections and
 *	  zero_stream.handshake_timeout), and subscriber slots
 *	  (zero_stream.max_subscribers).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_ADMISSION_H
#define ZS_ADMISSION_H

#include "server/server.h"

/*
 * Is every one of zero_stream.max_pending_connections taken? Then the
 * requests that have arrived are read before more connections are accepted
 * (a burst of clients, accepted before a round read them).
 */
extern bool zs_admission_pool_full(ZsServer *server);

/*
 * Is there room for a new connection in the HTTP phase? When the pool is
 * full, the one that has been sending its request longest is closed to
 * make room, unless all of them are younger than a fraction of a second
 * (then false: the caller answers 503). Nothing here reads a connection.
 */
extern bool zs_admission_make_room(ZsServer *server);

/*
 * Give c, whose request needs one (a WebSocket upgrade or a snapshot
 * download), a subscriber slot; false, with 503 queued and a
 * (rate-limited) log line, when all zero_stream.max_subscribers are taken.
 * Health checks never take one.
 */
extern bool zs_admission_admit(ZsServer *server, ZsConn *c);

/*
 * Close every connection without a slot that has not finished its request
 * (or had its HTTP reply taken) within zero_stream.handshake_timeout.
 */
extern void zs_admission_check_timeouts(ZsServer *server);

#endif							/* ZS_ADMISSION_H */
