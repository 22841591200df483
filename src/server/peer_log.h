/*-------------------------------------------------------------------------
 * peer_log.h
 *	  Rate-limited log lines about what peers of the subscriber server do
 *	  wrong: refused connections, failed authentication, handshake
 *	  timeouts, policy violations, failed TLS handshakes.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_PEER_LOG_H
#define ZS_PEER_LOG_H

/* the kinds of event, each limited on its own */
typedef enum ZsPeerEvent
{
	ZS_PEER_REFUSED,			/* answered 503: a connection limit was reached */
	ZS_PEER_AUTH_FAILED,		/* answered 401 */
	ZS_PEER_TIMED_OUT,			/* request not sent, or reply not taken, in time */
	ZS_PEER_POLICY,				/* closed with 1008 */
	ZS_PEER_TLS_FAILED			/* closed: its TLS handshake failed */
} ZsPeerEvent;

#define ZS_PEER_EVENT_KINDS		5	/* = ZS_SERVER_REFUSAL_KINDS: each is counted in shmem */

/* at most one line per kind of event and peer host in this many seconds */
#define ZS_PEER_LOG_INTERVAL_S	10

/*
 * Should a line about this event from host (an address without its port)
 * be logged now? If not, the event is counted; if so, *suppressed is the
 * number of such events not logged since the previous line (see
 * zs_peer_log_detail).
 */
extern bool zs_peer_log_allowed(ZsPeerEvent event, const char *host, int64 *suppressed);

/* Inside an ereport: errdetail for suppressed events, if any (0 otherwise). */
extern int	zs_peer_log_detail(int64 suppressed);

/*
 * Log one line for each kind and host whose interval has passed with
 * events left unlogged, so that every event is eventually counted. Cheap
 * to call every loop iteration: it looks at the table at most once a second.
 */
extern void zs_peer_log_sweep(void);

#endif							/* ZS_PEER_LOG_H */
