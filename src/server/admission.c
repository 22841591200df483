/*-------------------------------------------------------------------------
 * admission.c
 *	  The subscriber server's connection limits.
 *
 * A connection is *pending* from its accept until its request needs a
 * subscriber slot: during its TLS handshake (zero_stream.ssl), while it
 * sends its HTTP request head, and while a plain
 * reply (a health check's "OK", 401, 404, 503 ...) is being sent. Pending
 * connections have a pool of their own, zero_stream.max_pending_connections,
 * and zero_stream.handshake_timeout to finish; health checks never leave
 * that pool, so they are answered however many subscribers there are.
 * A WebSocket upgrade or a snapshot download is *admitted* into one of
 * zero_stream.max_subscribers slots, or answered 503. So half-sent
 * requests (slowloris) cannot take a subscriber's slot, and subscribers
 * cannot keep health checks out.
 *
 * When the pending pool is full, the requests that have arrived are read
 * first (a burst of clients connecting at once, accepted before the round
 * reads them: the worker does that when the pool is full, before it
 * accepts more, so that accepting never runs the request path), then a new connection closes
 * the one that has been sending its request longest, if that one is older
 * than
 * EVICT_MIN_AGE_MS: a client sends its request as soon as it is connected,
 * so a connection that old is much more likely a slow or stalled one than
 * a new one is. A flood of connections younger than that is answered 503
 * at accept (listener.c).
 *
 * Refusals, timeouts and evictions are logged with the peer's address,
 * rate-limited (peer_log.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "guc.h"
#include "server/admission.h"
#include "server/connection.h"
#include "server/peer_log.h"

#define EVICT_MIN_AGE_MS	100

static int64
age_ms(const ZsConn *c, TimestampTz now)
{
	return (now - c->connected_since) / 1000;
}

static bool
pending(const ZsConn *c)
{
	return !c->closed && !c->admitted;
}

/* why a pending connection is being closed, for the log */
static char *
pending_reason(const ZsConn *c, int64 ms)
{
	if (zs_conn_in_tls_handshake(c))
		return psprintf("TLS handshake not completed within " INT64_FORMAT " ms", ms);
	if (c->state != ZS_CONN_HTTP)
		return psprintf("its HTTP reply was not taken within " INT64_FORMAT " ms", ms);
	if (c->head_bytes == 0)
		return psprintf("no request received within " INT64_FORMAT " ms", ms);
	return psprintf("request head incomplete after " INT64_FORMAT " ms (" INT64_FORMAT " bytes received)",
					ms, c->head_bytes);
}

/*
 * Close a pending connection: an HTTP status first if it is still sending
 * its request (best effort: such a peer may not read), and one log line.
 */
static void
close_pending(ZsConn *c, ZsPeerEvent event, const char *status, const char *why)
{
	int64		suppressed;

	if (zs_peer_log_allowed(event, c->host, &suppressed))
		ereport(LOG,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("closing connection from %s: %s", c->address, why),
				 zs_peer_log_detail(suppressed)));
	if (c->state == ZS_CONN_HTTP && !zs_conn_in_tls_handshake(c))
		zs_conn_send_http(c, status, NULL, "");
	zs_conn_close_now(c);
}

/* How many connections are pending; *oldest is the one pending longest. */
static int
count_pending(ZsServer *server, ZsConn **oldest)
{
	int			npending = 0;

	*oldest = NULL;
	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];

		if (!pending(c))
			continue;
		npending++;
		if (*oldest == NULL || c->connected_since < (*oldest)->connected_since)
			*oldest = c;
	}
	return npending;
}

bool
zs_admission_pool_full(ZsServer *server)
{
	ZsConn	   *oldest;

	return count_pending(server, &oldest) >= zs_max_pending_connections;
}

bool
zs_admission_make_room(ZsServer *server)
{
	TimestampTz now;
	ZsConn	   *oldest;

	if (count_pending(server, &oldest) < zs_max_pending_connections)
		return true;
	now = GetCurrentTimestamp();
	if (oldest == NULL || age_ms(oldest, now) < EVICT_MIN_AGE_MS)
		return false;
	close_pending(oldest, ZS_PEER_TIMED_OUT, "503 Service Unavailable",
				  psprintf("%s, and zero_stream.max_pending_connections (%d) is reached",
						   pending_reason(oldest, age_ms(oldest, now)),
						   zs_max_pending_connections));
	return true;
}

bool
zs_admission_admit(ZsServer *server, ZsConn *c)
{
	int			nadmitted = 0;
	int64		suppressed;

	for (int i = 0; i < server->nconns; i++)
	{
		if (!server->conns[i]->closed && server->conns[i]->admitted)
			nadmitted++;
	}
	if (nadmitted < zs_max_subscribers)
	{
		c->admitted = true;
		return true;
	}
	if (zs_peer_log_allowed(ZS_PEER_REFUSED, c->host, &suppressed))
		ereport(LOG,
				(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
				 errmsg("refused a subscriber from %s: zero_stream.max_subscribers (%d) reached",
						c->address, zs_max_subscribers),
				 zs_peer_log_detail(suppressed)));
	zs_conn_send_http(c, "503 Service Unavailable", NULL, "too many subscribers\n");
	return false;
}

void
zs_admission_check_timeouts(ZsServer *server)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];

		if (!pending(c) ||
			!TimestampDifferenceExceeds(c->connected_since, now, zs_handshake_timeout_ms))
			continue;
		close_pending(c, ZS_PEER_TIMED_OUT, "408 Request Timeout",
					  pending_reason(c, age_ms(c, now)));
	}
}
