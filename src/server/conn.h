/*-------------------------------------------------------------------------
 * conn.h
 *	  The state of one client connection of the subscriber server.
 *
 * The struct is shared by the server's files: each reads and writes the
 * part it owns (routes.c the protocol fields, reservations.c the snapshot
 * being made, flow_control.c the lag and backlog state, admission.c the
 * slot, server_worker.c the wait-event position, tls.c the TLS session).
 * It is a header of its own, below every file that works on connections,
 * so that their headers need only the type; what is done with a
 * connection (reading, writing, closing, the set of them) is
 * connection.h's.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CONN_H
#define ZS_CONN_H

#include <sys/types.h>

#include "datatype/timestamp.h"
#include "lib/stringinfo.h"

#include "codec/websocket.h"
#include "replica/backup_copy.h"
#include "server/subscription.h"
#include "server/tls.h"
#include "server/upstream.h"

/* the server a connection belongs to (server.h) */
typedef struct ZsServer ZsServer;

typedef enum ZsConnState
{
	ZS_CONN_HTTP,				/* reading the request head */
	ZS_CONN_REPLYING,			/* request handled: an HTTP reply or a snapshot */
	ZS_CONN_WEBSOCKET			/* upgraded */
} ZsConnState;

typedef struct ZsConn
{
	MemoryContext context;		/* everything the connection owns */
	ZsServer   *server;			/* the server it belongs to */
	pgsocket	sock;
	ZsTlsSession tls;			/* its TLS session (zero_stream.ssl): tls.ssl NULL if none */
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
	ZsBackupCopy *copy;			/* a snapshot being made for this client */
	int			file_fd;		/* a file being sent after out, or -1 */
	off_t		file_remaining;
	bool		close_after_flush;
	bool		linger;			/* ... then wait for the peer to close (zs_conn_linger) */
	bool		write_shut;		/* all was sent, and FIN after it */
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

/* Is the connection still in its TLS handshake? */
static inline bool
zs_conn_in_tls_handshake(const ZsConn *c)
{
	return c->tls.ssl != NULL && !c->tls.established;
}

#endif							/* ZS_CONN_H */
