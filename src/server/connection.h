/*-------------------------------------------------------------------------
 * connection.h
 *	  A client connection of the subscriber server, and the set of them.
 *
 * The struct is shared by the server's files: each reads and writes the
 * part it owns (routes.c the protocol fields, reservations.c the snapshot
 * being made, flow_control.c the lag and backlog state, admission.c the
 * slot, server_worker.c the wait-event position, tls.c the TLS session).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CONNECTION_H
#define ZS_CONNECTION_H

#include <sys/types.h>

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"

#include "codec/websocket.h"
#include "replica/backup_copy.h"
#include "server/subscription.h"
#include "server/upstream.h"

struct ssl_st;					/* OpenSSL's SSL, used by tls.c only */

typedef enum ZsConnState
{
	ZS_CONN_HTTP,				/* reading the request head */
	ZS_CONN_REPLYING,			/* request handled: an HTTP reply or a snapshot */
	ZS_CONN_WEBSOCKET			/* upgraded */
} ZsConnState;

typedef struct ZsConn
{
	MemoryContext context;		/* everything the connection owns */
	pgsocket	sock;
	struct ssl_st *ssl;			/* the TLS session (zero_stream.ssl), or NULL */
	bool		tls_established;	/* its handshake is done */
	bool		tls_failed;		/* a TLS error: no close_notify */
	uint32		tls_read_wait;	/* WL_SOCKET_* the handshake or a read waits for, or 0 */
	uint32		tls_write_wait; /* WL_SOCKET_* a write waits for, or 0 */
	char		address[64];	/* host:port, for the log */
	char		host[64];		/* the address without its port */
	ZsConnState state;
	bool		admitted;		/* holds one of max_subscribers slots */
	int64		head_bytes;		/* received while reading the request head */
	StringInfoData in;			/* request head bytes */
	StringInfoData out;			/* bytes not yet sent */
	int			out_pos;
	ZsWsReader	ws;
	ZsSubscriber *sub;
	bool		v7_subscribe;	/* /subscribe: messages flow both ways */
	int			protocol;
	ZsUpstream	up;				/* upstream ids and the snapshot reservation */
	ZsBackupCopy *copy;		/* a snapshot being made for this client */
	int			file_fd;		/* a file being sent after out, or -1 */
	off_t		file_remaining;
	bool		close_after_flush;
	bool		closed;
	bool		heard_since_ping;	/* any frame but a ping */
	bool		read_ready;		/* the socket was reported readable */
	bool		input_pending;	/* the round's read budget ran out */
	bool		pong_owed;		/* a ping (the latest: pong_payload) is unanswered */
	bool		pong_blocked;	/* ... and output was at the backlog limit */
	uint8		pong_len;
	char		pong_payload[125];
	TimestampTz control_since;	/* the current one-second window of control frames */
	int			control_frames; /* control frames received in it */
	TimestampTz connected_since;
	TimestampTz lagging_since;	/* 0 unless lagging behind the live stream */
	bool		backlog_blocked;	/* above the high-water mark, not yet below the low */
	TimestampTz last_ping;
	int			event_pos;		/* in the server's wait-event set */
	uint32		wait_events;	/* the WL_SOCKET_* events asked for there */
} ZsConn;

/*
 * every connection, in accept order: at most zs_max_subscribers admitted
 * and zs_max_pending_connections pending ones are open, and those closed
 * during a loop iteration stay until its end
 */
extern ZsConn **zs_conns;
extern int	zs_nconns;

/* a connection was added or closed: server_worker.c rebuilds its wait-event set */
extern bool zs_conns_changed;

extern void zs_conns_init(void);

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

/* Queue a WebSocket close frame, then close. */
extern void zs_conn_send_close(ZsConn *c, uint16 code, const char *reason);

/*
 * Send size bytes of the open file fd after what is queued, then close;
 * the connection owns fd (and its external-FD reservation) from now on.
 */
extern void zs_conn_send_file(ZsConn *c, int fd, off_t size);

/* Ping every connection due; close those silent since the previous ping. */
extern void zs_conns_check_liveness(void);

#endif							/* ZS_CONNECTION_H */
