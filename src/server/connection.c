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
 * or a complete text message goes to routes.c, which decides what it
 * means; control frames (ping, pong, close) are answered here.
 *
 * Each connection allocates in a memory context of its own, deleted when
 * the closed connection is removed at the end of a loop iteration.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/socket.h>
#include <unistd.h>

#include "storage/fd.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "codec/http.h"
#include "guc.h"
#include "server/connection.h"
#include "server/routes.h"

#define MAX_HEAD_BYTES		8192
#define PING_INTERVAL_MS	30000
#define READ_CHUNK			65536
#define FILE_CHUNK			(256 * 1024)

ZsConn	  **zs_conns;
int			zs_nconns = 0;
bool		zs_conns_changed = true;

void
zs_conns_init(void)
{
	zs_conns = MemoryContextAllocZero(TopMemoryContext, sizeof(ZsConn *) * zs_max_subscribers);
}

bool
zs_conns_have_room(void)
{
	return zs_nconns < zs_max_subscribers;
}

ZsConn *
zs_conn_add(pgsocket sock, const char *address)
{
	MemoryContext context = AllocSetContextCreate(TopMemoryContext, "zero_stream client",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(context);
	ZsConn	   *c = palloc0(sizeof(ZsConn));

	c->context = context;
	c->sock = sock;
	c->file_fd = -1;
	strlcpy(c->address, address, sizeof(c->address));
	c->state = ZS_CONN_HTTP;
	initStringInfo(&c->in);
	initStringInfo(&c->out);
	MemoryContextSwitchTo(old);
	c->heard_since_ping = true;
	c->last_ping = GetCurrentTimestamp();
	c->connected_since = c->last_ping;
	zs_conns[zs_nconns++] = c;
	zs_conns_changed = true;
	return c;
}

void
zs_conns_remove_closed(void)
{
	int			kept = 0;

	for (int i = 0; i < zs_nconns; i++)
	{
		if (zs_conns[i]->closed)
			MemoryContextDelete(zs_conns[i]->context);
		else
			zs_conns[kept++] = zs_conns[i];
	}
	zs_nconns = kept;
}

/* ---------------------------------------------------------------- output */

void
zs_conn_close(ZsConn *c)
{
	if (c->closed)
		return;
	closesocket(c->sock);
	ReleaseExternalFD();
	if (c->copy != NULL)
	{
		zs_snapshot_copy_abort(c->copy);
		c->copy = NULL;
	}
	if (c->file_fd >= 0)
	{
		close(c->file_fd);
		ReleaseExternalFD();
		c->file_fd = -1;
	}
	c->closed = true;
	zs_conns_changed = true;
}

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

void
zs_conn_flush(ZsConn *c)
{
	while (c->out_pos < c->out.len || refill_from_file(c))
	{
		ssize_t		n = send(c->sock, c->out.data + c->out_pos, c->out.len - c->out_pos, 0);

		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				compact_output(c);
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
	if (c->close_after_flush)
		zs_conn_close(c);
}

void
zs_conn_send_http(ZsConn *c, const char *status, const char *extra_headers, const char *body)
{
	appendStringInfo(&c->out,
					 "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
					 "Content-Length: %d\r\n%sConnection: close\r\n\r\n%s",
					 status, (int) strlen(body), extra_headers ? extra_headers : "", body);
	c->close_after_flush = true;
}

void
zs_conn_send_close(ZsConn *c, uint16 code, const char *reason)
{
	zs_ws_append_close(&c->out, code, reason);
	c->close_after_flush = true;
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

	appendBinaryStringInfo(&c->in, data, len);
	r = zs_http_parse_request(c->in.data, c->in.len, MAX_HEAD_BYTES, &req, &head_len,
							  &status, &error);
	if (r == ZS_HTTP_NEED_MORE)
		return;
	if (r == ZS_HTTP_BAD_REQUEST)
	{
		zs_route_bad_request(c, status, error);
		zs_http_request_free(&req);
		return;
	}
	zs_route_request(c, &req);
	zs_http_request_free(&req);
	/* frames that arrived together with the head */
	if (c->state == ZS_CONN_WEBSOCKET && c->in.len > head_len)
		zs_ws_reader_feed(&c->ws, c->in.data + head_len, c->in.len - head_len);
	resetStringInfo(&c->in);
}

static void
process_frames(ZsConn *c)
{
	ZsWsMessage msg;

	initStringInfo(&msg.payload);
	while (!c->close_after_flush)
	{
		ZsWsReadResult r = zs_ws_reader_next(&c->ws, &msg);

		if (r == ZS_WS_NEED_MORE)
			break;
		if (r == ZS_WS_ERROR)
		{
			zs_conn_send_close(c, c->ws.error_code, psprintf("Error: %s", c->ws.error));
			break;
		}
		c->heard_since_ping = true;
		switch (msg.opcode)
		{
			case ZS_WS_OP_TEXT:
				zs_route_message(c, msg.payload.data, msg.payload.len);
				break;
			case ZS_WS_OP_BINARY:
				zs_conn_send_close(c, ZS_WS_CLOSE_UNSUPPORTED,
								   "Error: binary messages are not accepted");
				break;
			case ZS_WS_OP_PING:
				zs_ws_append_frame(&c->out, ZS_WS_OP_PONG, msg.payload.data, msg.payload.len);
				break;
			case ZS_WS_OP_PONG:
				break;
			case ZS_WS_OP_CLOSE:
				/* echo the peer's close code, then hang up */
				zs_ws_append_frame(&c->out, ZS_WS_OP_CLOSE, msg.payload.data,
								   Min(msg.payload.len, 2));
				c->close_after_flush = true;
				break;
		}
	}
	pfree(msg.payload.data);
}

void
zs_conn_read(ZsConn *c)
{
	char		buf[READ_CHUNK];

	for (;;)
	{
		ssize_t		n = recv(c->sock, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
		{
			zs_conn_close(c);
			return;
		}
		if (c->close_after_flush)
			continue;			/* discard input after we decided to close */
		if (c->state == ZS_CONN_HTTP)
			read_http(c, buf, (int) n);
		else
			zs_ws_reader_feed(&c->ws, buf, (int) n);
		if (c->state == ZS_CONN_WEBSOCKET)
			process_frames(c);
		if (c->closed)
			return;
	}
}

/* ---------------------------------------------------------------- liveness */

/* Ping every 30 s; a peer silent since the previous ping is gone. */
void
zs_conns_check_liveness(void)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < zs_nconns; i++)
	{
		ZsConn	   *c = zs_conns[i];

		if (c->closed || !TimestampDifferenceExceeds(c->last_ping, now, PING_INTERVAL_MS))
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
		if (c->state == ZS_CONN_WEBSOCKET)
			zs_ws_append_frame(&c->out, ZS_WS_OP_PING, "", 0);
		c->heard_since_ping = false;
		c->last_ping = now;
	}
}
