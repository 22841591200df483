/*-------------------------------------------------------------------------
 * connection.c
 *	  A client connection: its socket, input and output buffers, WebSocket
 *	  frames in and out, pings, and closing.
 *
 * Every socket is non-blocking and the server never waits for a client:
 * reading takes what the socket has, writing queues into the
 * connection's output buffer, and flushing sends what the socket takes
 * now (the rest waits for WL_SOCKET_WRITEABLE). A file being sent (a
 * snapshot copy) follows the buffer chunk by chunk, so it is never held in
 * memory whole. What arrives is handed on whole: a complete request head
 * or a complete text message goes to the handlers the server installed
 * (server.h's ZsConnHandlers: routes.c's), which decide what it means;
 * control frames (ping, pong, close) are answered here.
 *
 * No client gets more than its share of a loop iteration or of memory:
 *   - a round reads at most READ_BUDGET bytes and handles at most
 *     FRAME_BUDGET frames of one connection; the rest waits for the next
 *     round (which then does not sleep), and a round sends at most
 *     FILE_CHUNKS_PER_FLUSH chunks of a file per flush;
 *   - pings are answered by one pong for the latest unanswered one (RFC
 *     6455 §5.5.3), queued only while the connection's output is below
 *     zero_stream.subscriber_backlog_limit, so control frames cost a
 *     fixed 125 bytes, not a buffer;
 *   - a peer that sends more than MAX_CONTROL_FRAMES_PER_S pings and
 *     pongs in a second, or pings again while the answer to its last ping
 *     waits behind output it does not read, is closed with 1008 (policy
 *     violation) and logged (rate-limited, peer_log.c);
 *   - a peer's pings do not count as signs of life: only what a reader
 *     sends (acks, pongs) does.
 *
 * With zero_stream.ssl, the same happens over TLS (tls.c, the transport
 * below): a connection's TLS handshake is driven from its reads and
 * flushes before anything else, and closes the connection if it fails;
 * reads and writes go through the session, whose waits for the socket
 * become the connection's wait events; a snapshot file is encrypted chunk
 * by chunk as it is sent.
 *
 * Each connection allocates in a memory context of its own, deleted when
 * the closed connection is removed at the end of a loop iteration (a TLS
 * session, which OpenSSL allocates, is freed when the connection closes).
 * An output buffer a catch-up grew is given back once the subscriber is
 * live, and freed memory is returned to the system after bursts
 * (malloc_trim).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/socket.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "codec/http.h"
#include "guc.h"
#include "server/connection.h"
#include "server/peer_log.h"
#include "server/tls.h"
#include "shmem.h"

#define MAX_HEAD_BYTES		8192
#define PING_INTERVAL_MS	30000
#define READ_CHUNK			65536
#define FILE_CHUNK			(256 * 1024)

/* one connection's share of a loop iteration */
#define READ_BUDGET			(4 * READ_CHUNK)
#define FRAME_BUDGET		256
#define FILE_CHUNKS_PER_FLUSH 16

/* more pings and pongs than this in one second is a flood */
#define MAX_CONTROL_FRAMES_PER_S 50

/* freed memory given back to the system past this, once a second at most */
#define TRIM_THRESHOLD		(1024 * 1024)
#define TRIM_MAX_INTERVAL_MS 10000

/* an output buffer larger than this is given back once empty, unless catching up */
#define OUTPUT_BUFFER_KEEP	(64 * 1024)

void
zs_conns_init(ZsServer *server, const ZsConnHandlers *handlers)
{
	server->handlers = handlers;
	server->conns_capacity = zs_max_subscribers + zs_max_pending_connections;
	server->conns = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(ZsConn *) * server->conns_capacity);
	server->nconns = 0;
	server->conns_changed = true;
}

ZsConn *
zs_conn_add(ZsServer *server, pgsocket sock, const char *host, const char *port)
{
	MemoryContext context;
	MemoryContext old;
	ZsConn	   *c;

	/* connections closed in this round are still listed until its end */
	if (server->nconns == server->conns_capacity)
	{
		server->conns_capacity *= 2;
		server->conns = repalloc(server->conns, sizeof(ZsConn *) * server->conns_capacity);
	}
	context = AllocSetContextCreate(TopMemoryContext, "zero_stream client",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(context);
	c = palloc0(sizeof(ZsConn));
	c->context = context;
	c->server = server;
	c->sock = sock;
	c->file_fd = -1;
	strlcpy(c->host, host, sizeof(c->host));
	snprintf(c->address, sizeof(c->address), "%s:%s", host, port);
	c->state = ZS_CONN_HTTP;
	initStringInfo(&c->in);
	initStringInfo(&c->out);
	MemoryContextSwitchTo(old);
	c->heard_since_ping = true;
	c->last_ping = GetCurrentTimestamp();
	c->connected_since = c->last_ping;
	server->conns[server->nconns++] = c;
	server->conns_changed = true;
	return c;
}

/*
 * After a burst (a catch-up of many subscribers, hundreds of subscribers
 * gone, a flood of reconnects) glibc keeps the freed memory in its heap,
 * where it is fragmented and never returned: give it back, so that the
 * worker's size comes back near where it was. Not while a catch-up goes
 * on (its pages would take the memory again at once), but at least every
 * TRIM_MAX_INTERVAL_MS.
 */
void
zs_conns_note_freed(ZsServer *server, Size bytes)
{
	server->freed_since_trim += bytes;
}

void
zs_conns_trim_memory(ZsServer *server, bool burst_over)
{
#ifdef __GLIBC__
	TimestampTz now;

	if (server->freed_since_trim < TRIM_THRESHOLD)
		return;
	now = GetCurrentTimestamp();
	if (!TimestampDifferenceExceeds(server->last_trim, now,
									burst_over ? 1000 : TRIM_MAX_INTERVAL_MS))
		return;
	malloc_trim(0);
	server->last_trim = now;
	server->freed_since_trim = 0;
#endif
}

void
zs_conns_remove_closed(ZsServer *server)
{
	int			kept = 0;

	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];

		if (c->closed)
		{
			server->freed_since_trim += MemoryContextMemAllocated(c->context, true);
			MemoryContextDelete(c->context);
		}
		else
			server->conns[kept++] = c;
	}
	server->nconns = kept;
}

/* ---------------------------------------------------------------- socket */

/*
 * recv() and send() on the connection's socket, or through its TLS session:
 * bytes moved (> 0), 0 when the peer closed (recv), -1 with errno (EAGAIN:
 * nothing now).
 */
static ssize_t
conn_recv(ZsConn *c, void *buf, size_t len)
{
	if (c->tls.ssl != NULL)
		return zs_tls_read(&c->tls, buf, len);
	return recv(c->sock, buf, len, 0);
}

static ssize_t
conn_send(ZsConn *c, const void *buf, size_t len)
{
	if (c->tls.ssl != NULL)
		return zs_tls_write(&c->tls, buf, len);
	return send(c->sock, buf, len, 0);
}

/*
 * Is the connection ready for HTTP: no TLS, or its handshake done? A
 * handshake that failed (tls.c logged why) closes the connection.
 */
static bool
conn_ready(ZsConn *c)
{
	if (c->tls.ssl == NULL)
		return true;
	switch (zs_tls_handshake(&c->tls))
	{
		case ZS_TLS_HANDSHAKE_DONE:
			return true;
		case ZS_TLS_HANDSHAKE_WAITING:
			break;
		case ZS_TLS_HANDSHAKE_FAILED:
			zs_conn_close(c);
			break;
	}
	return false;
}

/* ---------------------------------------------------------------- output */

/*
 * Does another open connection subscribe as (id, backup_mode)? Then it
 * holds the subscriber's position, and the one that leaves holds none: a
 * subscriber that reconnected before its old connection was closed.
 */
static bool
subscribed_elsewhere(const ZsConn *leaving, const char *id, bool backup_mode)
{
	for (int i = 0; i < leaving->server->nconns; i++)
	{
		const ZsConn *c = leaving->server->conns[i];
		ZsSubscriberInfo info;

		if (c == leaving || c->closed || c->sub == NULL)
			continue;
		zs_subscriber_describe(c->sub, "", &info);
		if (info.state != ZS_SUB_FAILED && info.backup_mode == backup_mode &&
			strcmp(info.id, id) == 0)
			return true;
	}
	return false;
}

void
zs_conn_close(ZsConn *c)
{
	if (c->closed)
		return;
	if (c->sub != NULL)
	{
		ZsSubscriberInfo info;

		/* the change log keeps what it needs for a while (the purge floor) */
		zs_subscriber_describe(c->sub, "", &info);
		if (info.state != ZS_SUB_FAILED && !subscribed_elsewhere(c, info.id, info.backup_mode))
			zs_record_departed_subscriber(info.id, info.backup_mode ? ZS_SUB_MODE_BACKUP :
										  ZS_SUB_MODE_SERVING, info.replica_version,
										  info.watermark_acked);
	}
	zs_tls_close(&c->tls);
	closesocket(c->sock);
	ReleaseExternalFD();
	if (c->copy != NULL)
	{
		zs_backup_copy_abort(c->copy);
		c->copy = NULL;
	}
	if (c->file_fd >= 0)
	{
		close(c->file_fd);
		ReleaseExternalFD();
		c->file_fd = -1;
	}
	c->closed = true;
	c->server->conns_changed = true;
}

void
zs_conn_close_now(ZsConn *c)
{
	c->close_after_flush = true;
	zs_conn_flush(c);
	zs_conn_close(c);
}

uint32
zs_conn_wait_events(const ZsConn *c)
{
	uint32		events = 0;

	/* a TLS handshake first: it waits for what it needs (tls.c) */
	if (zs_conn_in_tls_handshake(c))
		return c->tls.read_wait != 0 ? c->tls.read_wait : WL_SOCKET_READABLE;
	if (zs_conn_pending(c) > 0 || (c->file_fd >= 0 && c->file_remaining > 0))
		events |= c->tls.write_wait != 0 ? c->tls.write_wait : WL_SOCKET_WRITEABLE;
	/* nothing more is read from a connection that only has to send its last bytes */
	if (!c->close_after_flush || events == 0)
		events |= c->tls.read_wait != 0 ? c->tls.read_wait : WL_SOCKET_READABLE;
	return events;
}

static void shut_write(ZsConn *c);

/* keep a slow reader's buffer from creeping: move the unsent part down */
static void
compact_output(ZsConn *c)
{
	if (c->out_pos <= 1024 * 1024 || c->out_pos <= c->out.len / 2)
		return;
	memmove(c->out.data, c->out.data + c->out_pos, c->out.len - c->out_pos);
	c->out.len -= c->out_pos;
	c->out.data[c->out.len] = '\0';
	c->out_pos = 0;
}

/* Move the next chunk of the file being sent into the output; false at its end. */
static bool
refill_from_file(ZsConn *c)
{
	ssize_t		n;

	if (c->file_fd < 0 || c->file_remaining <= 0)
		return false;
	resetStringInfo(&c->out);
	c->out_pos = 0;
	enlargeStringInfo(&c->out, FILE_CHUNK);
	n = read(c->file_fd, c->out.data, Min(FILE_CHUNK, c->file_remaining));
	if (n <= 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not read the snapshot sent to %s: %m", c->address)));
		zs_conn_close(c);
		return false;
	}
	c->out.len = (int) n;
	c->file_remaining -= n;
	return true;
}

/*
 * Queue the pong owed for the latest ping, if the output is below the
 * backlog limit (the same limit data is held to); true if queued.
 */
static bool
queue_pong(ZsConn *c)
{
	if (!c->pong_owed || c->close_after_flush || c->closed)
		return false;
	if (zs_conn_pending(c) >= (Size) zs_backlog_limit_kb * 1024)
	{
		c->pong_blocked = true;
		return false;
	}
	zs_ws_append_frame(&c->out, ZS_WS_OP_PONG, c->pong_payload, c->pong_len);
	c->pong_owed = false;
	c->pong_blocked = false;
	return true;
}

void
zs_conn_flush(ZsConn *c)
{
	int			refills = 0;

	if (c->closed || c->write_shut)
		return;
	if (c->tls.ssl != NULL)
	{
		/* a TLS read waiting for the socket to be writable can go on now */
		if (c->tls.read_wait == WL_SOCKET_WRITEABLE)
			c->read_ready = true;
		if (!c->tls.established)
		{
			if (conn_ready(c))
				c->read_ready = true;	/* the request may have come with it */
			return;
		}
	}
	(void) queue_pong(c);
	for (;;)
	{
		ssize_t		n;

		if (c->out_pos >= c->out.len)
		{
			/* a pong held back by a full backlog goes once that is sent */
			if (queue_pong(c))
				continue;
			if (refills == FILE_CHUNKS_PER_FLUSH || !refill_from_file(c))
				break;
			refills++;
		}
		n = conn_send(c, c->out.data + c->out_pos, c->out.len - c->out_pos);
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
			{
				compact_output(c);
				(void) queue_pong(c);
			}
			else
				zs_conn_close(c);
			return;
		}
		c->out_pos += (int) n;
	}
	if (c->closed)
		return;
	resetStringInfo(&c->out);
	c->out_pos = 0;
	/*
	 * A catch-up grew the buffer to a page or more: once the subscriber is
	 * live, its frames are a few commits, so give the memory back.
	 */
	if (c->out.maxlen > OUTPUT_BUFFER_KEEP && c->file_fd < 0 &&
		(c->sub == NULL || zs_subscriber_is_following(c->sub)))
	{
		c->server->freed_since_trim += c->out.maxlen;
		pfree(c->out.data);
		c->out.data = MemoryContextAlloc(c->context, 1024);
		c->out.maxlen = 1024;
		resetStringInfo(&c->out);
	}
	/* the rest of a file goes in the next rounds */
	if (c->close_after_flush && (c->file_fd < 0 || c->file_remaining <= 0))
	{
		if (c->linger)
			shut_write(c);
		else
			zs_conn_close(c);
	}
}

void
zs_conn_send_http(ZsConn *c, const char *status, const char *extra_headers, const char *body)
{
	zs_conn_send_http_typed(c, status, "text/plain; charset=utf-8", extra_headers, body);
}

void
zs_conn_send_http_typed(ZsConn *c, const char *status, const char *content_type,
						const char *extra_headers, const char *body)
{
	appendStringInfo(&c->out,
					 "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
					 "Content-Length: %d\r\n%sConnection: close\r\n\r\n",
					 status, content_type, (int) strlen(body), extra_headers ? extra_headers : "");
	appendStringInfoString(&c->out, body);
	c->close_after_flush = true;
}

void
zs_conn_send_close(ZsConn *c, uint16 code, const char *reason)
{
	zs_ws_append_close(&c->out, code, reason);
	c->close_after_flush = true;
}

/*
 * A close frame after what is queued, and a lingering close: once all of
 * it is sent the server says it is done sending (TLS close_notify, then
 * FIN) but keeps the socket until the peer closes it too, reading and
 * dropping what it still sends (zs_conn_linger). Closing a socket with
 * unread input (a subscriber's acks, say) sends RST, and an RST can make
 * the peer's kernel drop the close frame before the peer has read it.
 */
void
zs_conn_send_close_lingering(ZsConn *c, uint16 code, const char *reason)
{
	zs_conn_send_close(c, code, reason);
	c->linger = true;
}

/* Everything was sent: nothing more will be (a lingering close's first half). */
static void
shut_write(ZsConn *c)
{
	if (c->write_shut)
		return;
	zs_tls_close(&c->tls);
	if (shutdown(c->sock, SHUT_WR) != 0)
	{
		zs_conn_close(c);		/* the peer is gone already */
		return;
	}
	c->write_shut = true;
}

/*
 * A lingering close's second half: drop what the peer sent, and close once
 * it has closed its side (or failed). True while the connection is open,
 * sending or waiting for the peer; the caller bounds how long.
 */
bool
zs_conn_linger(ZsConn *c)
{
	char		buf[8192];

	if (c->closed)
		return false;
	if (!c->write_shut)
		return true;
	/* a peer that floods does not hold the caller here (it has a deadline) */
	for (int i = 0; i < 64; i++)
	{
		ssize_t		n = recv(c->sock, buf, sizeof(buf), 0);

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		/* the end of its stream, or an error */
		zs_conn_close(c);
		return false;
	}
	return true;
}

void
zs_conn_send_file(ZsConn *c, int fd, off_t size)
{
	c->file_fd = fd;
	c->file_remaining = size;
	c->close_after_flush = true;
}

/* ---------------------------------------------------------------- input */

static void
read_http(ZsConn *c, const char *data, int len)
{
	ZsHttpRequest req;
	int			head_len;
	int			status;
	const char *error;
	ZsHttpParseResult r;

	c->head_bytes += len;
	appendBinaryStringInfo(&c->in, data, len);
	r = zs_http_parse_request(c->in.data, c->in.len, MAX_HEAD_BYTES, &req, &head_len,
							  &status, &error);
	if (r == ZS_HTTP_NEED_MORE)
		return;
	if (r == ZS_HTTP_BAD_REQUEST)
		c->server->handlers->bad_request(c->server, c, status, error);
	else
		c->server->handlers->request(c->server, c, &req);
	zs_http_request_free(&req);
	/* no second request on the connection: a reply or a snapshot follows */
	if (c->state == ZS_CONN_HTTP)
		c->state = ZS_CONN_REPLYING;
	/* a plain reply goes at once, freeing its pending slot */
	if (c->state == ZS_CONN_REPLYING && c->close_after_flush)
		zs_conn_flush(c);
	/* frames that arrived together with the head */
	if (c->state == ZS_CONN_WEBSOCKET && c->in.len > head_len)
		zs_ws_reader_feed(&c->ws, c->in.data + head_len, c->in.len - head_len);
	resetStringInfo(&c->in);
}

/* Close with 1008 at once (such a peer may not read), logged rate-limited. */
static void
close_for_policy(ZsConn *c, const char *why)
{
	int64		suppressed;

	if (zs_peer_log_allowed(ZS_PEER_POLICY, c->host, &suppressed))
		ereport(LOG,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("closing connection from %s (%s) with code 1008: %s",
						c->address, c->sub ? zs_subscriber_id(c->sub) : "no subscription", why),
				 zs_peer_log_detail(suppressed)));
	c->pong_owed = false;
	zs_conn_send_close(c, ZS_WS_CLOSE_POLICY, psprintf("Error: %s", why));
	zs_conn_close_now(c);
}

/* Count a ping or pong; false if the peer sent too many in the last second. */
static bool
control_frame_allowed(ZsConn *c)
{
	TimestampTz now = GetCurrentTimestamp();

	if (c->control_since == 0 || TimestampDifferenceExceeds(c->control_since, now, 1000))
	{
		c->control_since = now;
		c->control_frames = 0;
	}
	return ++c->control_frames <= MAX_CONTROL_FRAMES_PER_S;
}

/* Handle at most *budget complete frames of the input; input_pending if more may wait. */
static void
process_frames(ZsConn *c, int *budget)
{
	ZsWsMessage msg;

	initStringInfo(&msg.payload);
	while (!c->close_after_flush)
	{
		ZsWsReadResult r;

		if (*budget <= 0)
		{
			c->input_pending = true;
			break;
		}
		r = zs_ws_reader_next(&c->ws, &msg);
		if (r == ZS_WS_NEED_MORE)
			break;
		if (r == ZS_WS_ERROR)
		{
			zs_conn_send_close(c, c->ws.error_code, psprintf("Error: %s", c->ws.error));
			break;
		}
		(*budget)--;
		/* a peer that pings need not read; anything else is a sign of life */
		if (msg.opcode != ZS_WS_OP_PING)
			c->heard_since_ping = true;
		if ((msg.opcode == ZS_WS_OP_PING || msg.opcode == ZS_WS_OP_PONG) &&
			!control_frame_allowed(c))
		{
			close_for_policy(c, psprintf("more than %d pings and pongs in one second",
										 MAX_CONTROL_FRAMES_PER_S));
			break;
		}
		switch (msg.opcode)
		{
			case ZS_WS_OP_TEXT:
				c->server->handlers->message(c->server, c, msg.payload.data,
											 msg.payload.len);
				break;
			case ZS_WS_OP_BINARY:
				zs_conn_send_close(c, ZS_WS_CLOSE_UNSUPPORTED,
								   "Error: binary messages are not accepted");
				break;
			case ZS_WS_OP_PING:
				if (c->pong_blocked)
				{
					close_for_policy(c, "pings sent while the answer to an earlier one waits behind unread output");
					break;
				}
				/* only the latest ping needs an answer (RFC 6455 §5.5.3) */
				Assert(msg.payload.len <= (int) sizeof(c->pong_payload));
				memcpy(c->pong_payload, msg.payload.data, msg.payload.len);
				c->pong_len = (uint8) msg.payload.len;
				c->pong_owed = true;
				break;
			case ZS_WS_OP_PONG:
				break;
			case ZS_WS_OP_CLOSE:
				/* echo the peer's close code, then hang up */
				c->pong_owed = false;
				zs_ws_append_frame(&c->out, ZS_WS_OP_CLOSE, msg.payload.data,
								   Min(msg.payload.len, 2));
				c->close_after_flush = true;
				break;
		}
	}
	pfree(msg.payload.data);
	(void) queue_pong(c);
}

/* One round's read of a connection: at most READ_BUDGET bytes and FRAME_BUDGET frames. */
static void
read_connection(ZsConn *c)
{
	char		buf[READ_CHUNK];
	int			bytes = READ_BUDGET;
	int			frames = FRAME_BUDGET;

	c->input_pending = false;
	if (!conn_ready(c))
		return;
	/* frames left over from the previous round come first */
	if (c->state == ZS_CONN_WEBSOCKET && !c->close_after_flush)
		process_frames(c, &frames);
	while (!c->closed && !c->close_after_flush && !c->input_pending)
	{
		ssize_t		n;

		if (bytes == 0)
		{
			c->input_pending = true;	/* the socket may have more */
			return;
		}
		n = conn_recv(c, buf, Min(sizeof(buf), bytes));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
		{
			zs_conn_close(c);
			return;
		}
		bytes -= (int) n;
		if (c->state == ZS_CONN_HTTP)
			read_http(c, buf, (int) n);
		else if (c->state == ZS_CONN_WEBSOCKET)
			zs_ws_reader_feed(&c->ws, buf, (int) n);
		/* else a reply or a snapshot is on its way: input is ignored */
		if (c->state == ZS_CONN_WEBSOCKET)
			process_frames(c, &frames);
	}
}

void
zs_conns_read_requests(ZsServer *server)
{
	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];

		if (!c->closed && c->state == ZS_CONN_HTTP)
			read_connection(c);
	}
}

/* The socket says nothing of what a TLS session has already decrypted. */
static void
note_tls_pending(ZsConn *c)
{
	if (!c->closed && !c->close_after_flush && zs_tls_has_pending(&c->tls))
		c->input_pending = true;
}

bool
zs_conns_read(ZsServer *server)
{
	bool		more = false;

	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];
		bool		due = c->read_ready || c->input_pending;

		c->read_ready = false;
		if (c->closed || !due)
			continue;
		read_connection(c);
		note_tls_pending(c);
		more |= !c->closed && c->input_pending;
	}
	return more;
}

/* ---------------------------------------------------------------- liveness */

/*
 * Ping every 30 s; a peer silent since the previous ping is gone. This is
 * for connections with a subscriber slot: the others are held to
 * zero_stream.handshake_timeout (admission.c).
 */
void
zs_conns_check_liveness(ZsServer *server)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];

		if (c->closed || !c->admitted ||
			!TimestampDifferenceExceeds(c->last_ping, now, PING_INTERVAL_MS))
			continue;
		if (!c->heard_since_ping)
		{
			ereport(LOG,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("closing connection from %s (%s): no answer to the ping sent %d s ago",
							c->address, c->sub ? zs_subscriber_id(c->sub) : "no subscription",
							PING_INTERVAL_MS / 1000)));
			zs_conn_close(c);
			continue;
		}
		if (c->state == ZS_CONN_WEBSOCKET && !c->close_after_flush)
			zs_ws_append_frame(&c->out, ZS_WS_OP_PING, "", 0);
		c->heard_since_ping = false;
		c->last_ping = now;
	}
}
