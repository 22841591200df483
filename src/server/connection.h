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

#include "codec/http.h"
#include "server/conn.h"

/*
 * What the server does with what a connection receives: a complete request
 * head; a request head that could not be parsed (status and error from the
 * parser); a WebSocket text message. Each may queue output and close.
 */
typedef struct ZsConnHandlers
{
	void		(*request) (ZsConn *c, const ZsHttpRequest *req);
	void		(*bad_request) (ZsConn *c, int status, const char *error);
	void		(*message) (ZsConn *c, const char *text, int len);
} ZsConnHandlers;

/*
 * every connection, in accept order: at most zs_max_subscribers admitted
 * and zs_max_pending_connections pending ones are open, and those closed
 * during a loop iteration stay until its end
 */
extern ZsConn **zs_conns;
extern int	zs_nconns;

/* a connection was added or closed: server_worker.c rebuilds its wait-event set */
extern bool zs_conns_changed;

/* At the server's start; handlers must stay valid as long as the process. */
extern void zs_conns_init(const ZsConnHandlers *handlers);

/* A new connection on an accepted non-blocking socket, from host and port. */
extern ZsConn *zs_conn_add(pgsocket sock, const char *host, const char *port);

/* Free the connections closed since the last call. */
extern void zs_conns_remove_closed(void);

/*
 * Count bytes freed to malloc, and return freed memory to the system once
 * enough was freed: within a second once the burst is over (burst_over),
 * else every 10 s at most.
 */
extern void zs_conns_note_freed(Size bytes);
extern void zs_conns_trim_memory(bool burst_over);

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
extern bool zs_conns_read(void);

/*
 * Read the connections still sending their request head, now: a burst of
 * clients may have sent theirs since they were accepted.
 */
extern void zs_conns_read_requests(void);

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
extern void zs_conns_check_liveness(void);

#endif							/* ZS_CONNECTION_H */
