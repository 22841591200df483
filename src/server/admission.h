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

#include "server/conn.h"

/*
 * Is there room for a new connection in the HTTP phase? When every one of
 * zero_stream.max_pending_connections is taken, the one that has been
 * sending its request longest is closed to make room, unless all of them
 * are younger than a fraction of a second (then false: the caller answers
 * 503).
 */
extern bool zs_admission_make_room(void);

/*
 * Give c, whose request needs one (a WebSocket upgrade or a snapshot
 * download), a subscriber slot; false, with 503 queued and a
 * (rate-limited) log line, when all zero_stream.max_subscribers are taken.
 * Health checks never take one.
 */
extern bool zs_admission_admit(ZsConn *c);

/*
 * Close every connection without a slot that has not finished its request
 * (or had its HTTP reply taken) within zero_stream.handshake_timeout.
 */
extern void zs_admission_check_timeouts(void);

#endif							/* ZS_ADMISSION_H */
