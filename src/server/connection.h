/*-------------------------------------------------------------------------
 * connection.h
 *	  A client connection of the subscriber server, and the set of them.
 *
 * The connection's state is conn.h's struct. What a connection receives
 * is handed on whole to the handlers the server installs at start
 * (routes.c's, installed by server_worker.c), so that this layer does not
 * know what a request means.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CONNECTION_H
#define ZS_CONNECTION_H

#include "server/conn.h"
#include "server/server.h"

/* At the server's start; handlers must stay valid as long as the process. */
extern void zs_conns_init(ZsServer *server, const ZsConnHandlers *handlers);

/* A new connection on an accepted non-blocking socket, from host and port. */
extern ZsConn *zs_conn_add(ZsServer *server, pgsocket sock, const char *host,
							const char *port);

/* Free the connections closed since the last call. */
extern void zs_conns_remove_closed(ZsServer *server);

/*
 * Count bytes freed to malloc, and return freed memory to the system once
 * enough was freed: within a second once the burst is over (burst_over),
 * else every 10 s at most.
 */
extern void zs_conns_note_freed(ZsServer *server, Size bytes);
extern void zs_conns_trim_memory(ZsServer *server, bool burst_over);

/* Bytes queued for the peer and not yet taken by the socket. */
static inline Size
zs_conn_pending(const ZsConn *c)
{
	return (Size) (c->out.len - c->out_pos);
}

/* The socket events the connection waits for now (WL_SOCKET_*). */
extern uint32 zs_conn_wait_events(const ZsConn *c);

/*
 * Read what the sockets reported readable have (request head, then
 * WebSocket frames), and what earlier rounds left over: at most a fixed
 * number of bytes and frames per connection, so that no client can
 * stretch a round. True if some connection has input left for the next.
 */
extern bool zs_conns_read(ZsServer *server);

/*
 * Read the connections still sending their request head, now: a burst of
 * clients may have sent theirs since they were accepted.
 */
extern void zs_conns_read_requests(ZsServer *server);

/* Send what the socket takes now; close when asked and done. */
extern void zs_conn_flush(ZsConn *c);

/* Close the socket and whatever the connection was sending. */
extern void zs_conn_close(ZsConn *c);

/* Send what the socket takes now of what is queued, then close. */
extern void zs_conn_close_now(ZsConn *c);

/* Queue an HTTP reply with a text/plain body, then close. */
extern void zs_conn_send_http(ZsConn *c, const char *status, const char *extra_headers,
							  const char *body);
/* The same with a Content-Type of its own. */
extern void zs_conn_send_http_typed(ZsConn *c, const char *status, const char *content_type,
									const char *extra_headers, const char *body);

/* Queue a WebSocket close frame, then close. */
extern void zs_conn_send_close(ZsConn *c, uint16 code, const char *reason);
extern void zs_conn_send_close_lingering(ZsConn *c, uint16 code, const char *reason);
extern bool zs_conn_linger(ZsConn *c);

/*
 * Send size bytes of the open file fd after what is queued, then close;
 * the connection owns fd (and its external-FD reservation) from now on.
 */
extern void zs_conn_send_file(ZsConn *c, int fd, off_t size);

/* Ping every connection due; close those silent since the previous ping. */
extern void zs_conns_check_liveness(ZsServer *server);

#endif							/* ZS_CONNECTION_H */
