/*-------------------------------------------------------------------------
 * server_worker.c
 *	  The subscriber server background worker: a listening socket and its
 *	  clients in one WaitEventSet, next to the latch the decoder sets after
 *	  every stored batch.
 *
 * Loop: wait (latch, listeners, clients, 1 s tick); accept; read requests
 * and frames; give every subscriber that has room the next page of the
 * committed change log (one short read-only transaction for all); send;
 * ping and drop silent peers. The server never blocks on a client (all
 * sockets are non-blocking, output is buffered per client and bounded by
 * ack pacing) and never waits for the decoder.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "changelog/changelog.h"
#include "guc.h"
#include "codec/http.h"
#include "shmem.h"
#include "spi_xact.h"
#include "replica/backup_copy.h"
#include "server/subscription.h"
#include "codec/websocket.h"

PGDLLEXPORT void zs_server_main(Datum main_arg);

#define MAX_LISTENERS		16
#define MAX_HEAD_BYTES		8192
#define PING_INTERVAL_MS	30000
#define TICK_MS				1000
#define READ_CHUNK			65536
#define FILE_CHUNK			(256 * 1024)
#define SNAPSHOT_STEP_PAGES	256		/* pages copied per loop iteration and client */

typedef enum ClientState
{
	CLIENT_HTTP,				/* reading the request head */
	CLIENT_WEBSOCKET			/* upgraded */
} ClientState;

typedef struct Client
{
	MemoryContext context;		/* everything the client owns */
	pgsocket	sock;
	char		address[64];
	ClientState state;
	StringInfoData in;			/* request head bytes */
	StringInfoData out;			/* bytes not yet sent */
	int			out_pos;
	ZsWsReader ws;
	ZsSubscriber *sub;
	bool		v7_subscribe;	/* /subscribe: messages flow both ways */
	int			protocol;
	ZsUpstream	up;				/* upstream ids and the snapshot reservation */
	ZsSnapshotCopy *copy;		/* a snapshot being made for this client */
	int			file_fd;		/* a snapshot being sent, or -1 */
	off_t		file_remaining;
	bool		close_after_flush;
	bool		closed;
	bool		heard_since_ping;
	TimestampTz connected_since;
	TimestampTz lagging_since;	/* 0 unless lagging behind the live stream */
	bool		backlog_blocked;	/* above the high-water mark, not yet below the low */
	TimestampTz last_ping;
	int			event_pos;
	bool		want_write;
} Client;

static pgsocket listeners[MAX_LISTENERS];
static int	nlisteners = 0;
static Client **clients;
static int	nclients = 0;
static WaitEventSet *wait_set = NULL;
static bool wait_set_dirty = true;

/* ---------------------------------------------------------------- output */

static void
close_client(Client *c)
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
	wait_set_dirty = true;
}

/* keep a slow reader's buffer from creeping: move the unsent part down */
static void
compact_output(Client *c)
{
	if (c->out_pos <= 1024 * 1024 || c->out_pos <= c->out.len / 2)
		return;
	memmove(c->out.data, c->out.data + c->out_pos, c->out.len - c->out_pos);
	c->out.len -= c->out_pos;
	c->out.data[c->out.len] = '\0';
	c->out_pos = 0;
}

/* Move the next chunk of a snapshot file into the output; false at its end. */
static bool
refill_from_file(Client *c)
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
				 errmsg("zero_stream: could not read the snapshot sent to %s: %m", c->address)));
		close_client(c);
		return false;
	}
	c->out.len = (int) n;
	c->file_remaining -= n;
	return true;
}

static void
flush_client(Client *c)
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
				close_client(c);
			return;
		}
		c->out_pos += (int) n;
	}
	if (c->closed)
		return;
	resetStringInfo(&c->out);
	c->out_pos = 0;
	if (c->close_after_flush)
		close_client(c);
}

static void
send_http(Client *c, const char *status, const char *extra_headers, const char *body)
{
	appendStringInfo(&c->out,
					 "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
					 "Content-Length: %d\r\n%sConnection: close\r\n\r\n%s",
					 status, (int) strlen(body), extra_headers ? extra_headers : "", body);
	c->close_after_flush = true;
}

static void
send_close(Client *c, uint16 code, const char *reason)
{
	zs_ws_append_close(&c->out, code, reason);
	c->close_after_flush = true;
}

/* ---------------------------------------------------------------- requests */

/* compare without leaking, through timing, where the first difference is */
static bool
secrets_equal(const char *a, const char *b)
{
	size_t		la = strlen(a);
	size_t		lb = strlen(b);
	unsigned char diff = (la != lb);

	for (size_t i = 0; i < la; i++)
		diff |= (unsigned char) a[i] ^ (unsigned char) b[i % (lb ? lb : 1)];
	return diff == 0;
}

static bool
authorized(const ZsHttpRequest *req)
{
	StringInfoData user;
	StringInfoData password;
	bool		ok;

	if (zs_subscriber_password == NULL || zs_subscriber_password[0] == '\0')
		return true;
	initStringInfo(&user);
	initStringInfo(&password);
	ok = zs_http_basic_credentials(zs_http_header(req, "Authorization"), &user, &password) &&
		secrets_equal(password.data, zs_subscriber_password);
	pfree(user.data);
	pfree(password.data);
	return ok;
}

static void
send_unauthorized(Client *c)
{
	send_http(c, "401 Unauthorized", "WWW-Authenticate: Basic realm=\"zero_stream\"\r\n",
			  "authentication required\n");
}

/*
 * GET /replica/<taskID>: a consistent copy of the backup replica, for a
 * task that holds a reservation (which pins the change log meanwhile). The
 * copy is made in steps by advance_snapshot_copies(), then sent.
 */
static void
serve_snapshot(Client *c, const ZsHttpRequest *req, const char *task)
{
	bool		reserved = false;
	char	   *error = NULL;
	MemoryContext old;

	if (!authorized(req))
	{
		send_unauthorized(c);
		return;
	}
	for (int i = 0; i < nclients && !reserved; i++)
		reserved = !clients[i]->closed && clients[i]->up.reserved_task != NULL &&
			strcmp(clients[i]->up.reserved_task, task) == 0;
	if (!reserved)
	{
		send_http(c, "404 Not Found", NULL,
				  psprintf("no snapshot reservation is open for task \"%s\"\n", task));
		return;
	}
	old = MemoryContextSwitchTo(c->context);
	c->copy = zs_snapshot_copy_start(&error);
	MemoryContextSwitchTo(old);
	if (c->copy == NULL)
	{
		ereport(LOG,
				(errmsg("zero_stream: could not serve a snapshot to %s: %s", c->address, error)));
		send_http(c, "503 Service Unavailable", NULL, psprintf("%s\n", error));
	}
}

/* The next step of every snapshot being made; a finished one starts sending. */
static bool
advance_snapshot_copies(void)
{
	bool		pending = false;

	for (int i = 0; i < nclients; i++)
	{
		Client	   *c = clients[i];
		char	   *error = NULL;
		char		replica_version[ZS_WATERMARK_MAXLEN];
		char		watermark[ZS_WATERMARK_MAXLEN];
		off_t		size = 0;
		int			fd;
		int			rc;

		if (c->closed || c->copy == NULL)
			continue;
		rc = zs_snapshot_copy_step(c->copy, SNAPSHOT_STEP_PAGES, &error);
		if (rc == 0)
		{
			pending = true;
			continue;
		}
		if (rc < 0)
		{
			zs_snapshot_copy_abort(c->copy);
			fd = -1;
		}
		else
		{
			AcquireExternalFD();
			fd = zs_snapshot_copy_finish(c->copy, &size, replica_version, watermark, &error);
			if (fd < 0)
				ReleaseExternalFD();
		}
		c->copy = NULL;
		if (fd < 0)
		{
			ereport(LOG,
					(errmsg("zero_stream: could not serve a snapshot to %s: %s", c->address, error)));
			send_http(c, "503 Service Unavailable", NULL, psprintf("%s\n", error));
			continue;
		}
		appendStringInfo(&c->out,
						 "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.sqlite3\r\n"
						 "Content-Length: " INT64_FORMAT "\r\nX-Replica-Version: %s\r\n"
						 "X-Replica-Watermark: %s\r\nConnection: close\r\n\r\n",
						 (int64) size, replica_version, watermark);
		c->file_fd = fd;
		c->file_remaining = size;
		c->close_after_flush = true;
		ereport(LOG,
				(errmsg("zero_stream: sending snapshot of replicaVersion %s at %s (" INT64_FORMAT " bytes) to %s",
						replica_version, watermark, (int64) size, c->address)));
	}
	return pending;
}

/* A subscription for this task started: other connections' reservations for it end. */
static void
release_reservations(const char *task, Client *except)
{
	for (int i = 0; i < nclients; i++)
	{
		Client	   *other = clients[i];

		if (other == except || other->closed || other->up.reserved_task == NULL ||
			strcmp(other->up.reserved_task, task) != 0)
			continue;
		other->up.reserved_task = NULL;
		send_close(other, ZS_WS_CLOSE_NORMAL, NULL);
	}
}

/* A legacy /snapshot connection: one status message, then held open. */
static void
open_reservation(Client *c, const char *task)
{
	StringInfoData body;
	StringInfoData frame;
	char	   *error = NULL;
	MemoryContext old = MemoryContextSwitchTo(c->context);

	initStringInfo(&body);
	if (!zs_snapshot_reserve(c->up.host, task, "status", &body, c->up.reserved_watermark, &error))
	{
		MemoryContextSwitchTo(old);
		send_close(c, ZS_WS_CLOSE_PROTOCOL_ERROR, psprintf("Error: %s", error));
		return;
	}
	release_reservations(task, c);
	c->up.reserved_task = pstrdup(task);
	MemoryContextSwitchTo(old);
	initStringInfo(&frame);
	appendStringInfo(&frame, "{\"id\":%d,\"msg\":[\"status\",%s]}", (int) ++c->up.sent, body.data);
	zs_ws_append_frame(&c->out, ZS_WS_OP_TEXT, frame.data, frame.len);
}

static void
handle_request(Client *c, const ZsHttpRequest *req)
{
	const char *key = zs_http_header(req, "Sec-WebSocket-Key");
	char		accept[ZS_WS_ACCEPT_KEY_LEN + 1];
	char	   *error = NULL;
	char	   *snapshot_task = NULL;
	char	   *task;
	MemoryContext old;

	if (strcmp(req->method, "GET") != 0)
	{
		send_http(c, "405 Method Not Allowed", "Allow: GET\r\n", "method not allowed\n");
		return;
	}
	if (!zs_http_has_token(zs_http_header(req, "Upgrade"), "websocket"))
	{
		if (strcmp(req->path, "/") == 0 || strcmp(req->path, "/keepalive") == 0)
			send_http(c, "200 OK", NULL, "OK");
		else if ((task = zs_snapshot_request_task(req->path)) != NULL)
			serve_snapshot(c, req, task);
		else
			send_http(c, "404 Not Found", NULL, "not found\n");
		return;
	}
	if (!authorized(req))
	{
		send_unauthorized(c);
		return;
	}
	if (!zs_http_has_token(zs_http_header(req, "Connection"), "upgrade") || key == NULL ||
		!zs_ws_accept_key(key, accept))
	{
		send_http(c, "400 Bad Request", NULL, "invalid WebSocket upgrade request\n");
		return;
	}
	if (zs_http_header(req, "Sec-WebSocket-Version") == NULL ||
		strcmp(zs_http_header(req, "Sec-WebSocket-Version"), "13") != 0)
	{
		send_http(c, "426 Upgrade Required", "Sec-WebSocket-Version: 13\r\n",
				  "unsupported WebSocket version\n");
		return;
	}

	/* no extension (permessage-deflate) is accepted: the header is left out */
	appendStringInfo(&c->out,
					 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
					 "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", accept);
	c->state = CLIENT_WEBSOCKET;
	old = MemoryContextSwitchTo(c->context);
	zs_ws_reader_init(&c->ws, true, (uint64) zs_max_message_kb * 1024);
	if (zs_http_header(req, "Host") != NULL)
		c->up.host = pstrdup(zs_http_header(req, "Host"));
	c->sub = zs_subscriber_create(req, &c->v7_subscribe, &snapshot_task, &c->protocol, &error);
	MemoryContextSwitchTo(old);
	if (snapshot_task != NULL)
	{
		open_reservation(c, snapshot_task);
		return;
	}
	if (c->sub != NULL)
		release_reservations(zs_subscriber_task(c->sub), c);
	if (c->sub == NULL && !c->v7_subscribe)
	{
		ereport(LOG,
				(errmsg("zero_stream: refused subscriber %s: %s", c->address, error)));
		send_close(c, ZS_WS_CLOSE_PROTOCOL_ERROR, psprintf("Error: %s", error));
		return;
	}
	ereport(DEBUG1,
			(errmsg("zero_stream: subscriber %s connected from %s",
					c->sub ? zs_subscriber_id(c->sub) : "(awaiting start-subscription)",
					c->address)));
}

static void
read_http(Client *c, const char *data, int len)
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
		send_http(c, status == 431 ? "431 Request Header Fields Too Large"
				  : status == 505 ? "505 HTTP Version Not Supported" : "400 Bad Request",
				  NULL, psprintf("%s\n", error));
		zs_http_request_free(&req);
		return;
	}
	handle_request(c, &req);
	zs_http_request_free(&req);
	/* frames that arrived together with the head */
	if (c->state == CLIENT_WEBSOCKET && c->in.len > head_len)
		zs_ws_reader_feed(&c->ws, c->in.data + head_len, c->in.len - head_len);
	resetStringInfo(&c->in);
}

static void
process_frames(Client *c)
{
	ZsWsMessage msg;

	initStringInfo(&msg.payload);
	while (!c->close_after_flush)
	{
		ZsWsReadResult r = zs_ws_reader_next(&c->ws, &msg);
		char	   *error;

		if (r == ZS_WS_NEED_MORE)
			break;
		if (r == ZS_WS_ERROR)
		{
			send_close(c, c->ws.error_code, psprintf("Error: %s", c->ws.error));
			break;
		}
		c->heard_since_ping = true;
		switch (msg.opcode)
		{
			case ZS_WS_OP_TEXT:
				{
					bool		ok;

					if (c->v7_subscribe)
					{
						/* a start-subscription creates state the client owns */
						MemoryContext old = MemoryContextSwitchTo(c->context);
						const char *reserved_before = c->up.reserved_task;

						ok = zs_subscriber_handle_upstream(&c->sub, c->protocol, &c->up,
														   msg.payload.data, msg.payload.len,
														   &c->out, &error);
						MemoryContextSwitchTo(old);
						/* a new reservation for a task cancels older ones */
						if (c->up.reserved_task != NULL && c->up.reserved_task != reserved_before)
							release_reservations(c->up.reserved_task, c);
						if (c->up.started_task != NULL)
						{
							release_reservations(c->up.started_task, c);
							c->up.started_task = NULL;
						}
					}
					else if (c->sub != NULL)
						ok = zs_subscriber_handle_message(c->sub, msg.payload.data,
														  msg.payload.len, &error);
					else
						break;
					if (!ok)
						send_close(c, ZS_WS_CLOSE_PROTOCOL_ERROR, psprintf("Error: %s", error));
					else if (c->sub != NULL && zs_subscriber_is_finished(c->sub))
						send_close(c, ZS_WS_CLOSE_NORMAL, NULL);
					break;
				}
			case ZS_WS_OP_BINARY:
				send_close(c, ZS_WS_CLOSE_UNSUPPORTED, "Error: binary messages are not accepted");
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

static void
read_client(Client *c)
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
			close_client(c);
			return;
		}
		if (c->close_after_flush)
			continue;			/* discard input after we decided to close */
		if (c->state == CLIENT_HTTP)
			read_http(c, buf, (int) n);
		else
			zs_ws_reader_feed(&c->ws, buf, (int) n);
		if (c->state == CLIENT_WEBSOCKET)
			process_frames(c);
		if (c->closed)
			return;
	}
}

/* ---------------------------------------------------------------- clients */

static void
accept_clients(pgsocket listener)
{
	for (;;)
	{
		struct sockaddr_storage addr;
		socklen_t	addrlen = sizeof(addr);
		pgsocket	sock = accept(listener, (struct sockaddr *) &addr, &addrlen);
		Client	   *c;
		MemoryContext context;
		MemoryContext old;
		char		host[NI_MAXHOST] = "?";
		char		port[NI_MAXSERV] = "?";
		int			one = 1;

		if (sock == PGINVALID_SOCKET)
		{
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				ereport(LOG, (errcode_for_socket_access(),
							  errmsg("zero_stream: could not accept a connection: %m")));
			return;
		}
		if (nclients >= zs_max_subscribers || !AcquireExternalFD())
		{
			static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

			/* best effort: the socket is new, so this small write fits */
			(void) send(sock, busy, sizeof(busy) - 1, 0);
			closesocket(sock);
			ereport(LOG, (errmsg("zero_stream: refused a connection: zero_stream.max_subscribers (%d) reached",
								 zs_max_subscribers)));
			continue;
		}
		pg_set_noblock(sock);
		(void) setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		(void) getnameinfo((struct sockaddr *) &addr, addrlen, host, sizeof(host), port,
						   sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);

		context = AllocSetContextCreate(TopMemoryContext, "zero_stream client",
										ALLOCSET_DEFAULT_SIZES);
		old = MemoryContextSwitchTo(context);
		c = palloc0(sizeof(Client));
		c->context = context;
		c->sock = sock;
		c->file_fd = -1;
		snprintf(c->address, sizeof(c->address), "%s:%s", host, port);
		c->state = CLIENT_HTTP;
		initStringInfo(&c->in);
		initStringInfo(&c->out);
		MemoryContextSwitchTo(old);
		c->heard_since_ping = true;
		c->last_ping = GetCurrentTimestamp();
		c->connected_since = c->last_ping;
		clients[nclients++] = c;
		wait_set_dirty = true;
	}
}

static void
free_client(Client *c)
{
	MemoryContextDelete(c->context);
}

static void
remove_closed_clients(void)
{
	int			kept = 0;

	for (int i = 0; i < nclients; i++)
	{
		if (clients[i]->closed)
			free_client(clients[i]);
		else
			clients[kept++] = clients[i];
	}
	nclients = kept;
}

/* PostgreSQL 15 cannot remove events from a set: rebuild it when clients change */
static void
rebuild_wait_set(void)
{
	if (wait_set != NULL)
		FreeWaitEventSet(wait_set);
	wait_set = CreateWaitEventSet(TopMemoryContext, 2 + nlisteners + nclients);
	AddWaitEventToSet(wait_set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(wait_set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	for (int i = 0; i < nlisteners; i++)
		AddWaitEventToSet(wait_set, WL_SOCKET_READABLE, listeners[i], NULL, &listeners[i]);
	for (int i = 0; i < nclients; i++)
	{
		Client	   *c = clients[i];

		c->want_write = c->out.len > c->out_pos;
		c->event_pos = AddWaitEventToSet(wait_set,
										 WL_SOCKET_READABLE | (c->want_write ? WL_SOCKET_WRITEABLE : 0),
										 c->sock, NULL, c);
	}
	wait_set_dirty = false;
}

static void
update_write_interest(Client *c)
{
	bool		want = c->out.len > c->out_pos;

	if (c->closed || want == c->want_write)
		return;
	c->want_write = want;
	ModifyWaitEvent(wait_set, c->event_pos,
					WL_SOCKET_READABLE | (want ? WL_SOCKET_WRITEABLE : 0), NULL);
}

/* ---------------------------------------------------------------- serving */

static Size
backlog_limit(void)
{
	return (Size) zs_backlog_limit_kb * 1024;
}

/*
 * Above the high-water mark nothing more is read for a subscriber until it
 * has taken its output below the low-water mark, 80% (zero-cache's ratio).
 */
static bool
backlog_full(Client *c)
{
	Size		pending = c->out.len - c->out_pos;

	if (pending >= backlog_limit())
		c->backlog_blocked = true;
	else if (pending <= backlog_limit() / 10 * 8)
		c->backlog_blocked = false;
	return c->backlog_blocked;
}

static void
serve_subscribers(const char *head, const char *replica_version)
{
	bool		any = false;
	ZsChangeLogPage	  **pages;
	int			npages = 0;
	char		log_version[ZS_WATERMARK_MAXLEN];
	bool		have_log;

	if (replica_version[0] == '\0')
		return;					/* the decoder has not started the log yet */

	for (int i = 0; i < nclients && !any; i++)
	{
		Client	   *c = clients[i];

		any = !c->closed && !c->close_after_flush && c->sub != NULL &&
			zs_subscriber_wants_rows(c->sub, head) && !backlog_full(c);
	}
	if (!any)
		return;

	zs_spi_xact_begin("zero_stream: reading the change log");
	/* the lineage as of the pages' snapshot; a log being initialized has none */
	have_log = zs_changelog_read_replica_version(log_version);
	pages = palloc(sizeof(ZsChangeLogPage *) * nclients);
	/* subscribers at the same position share one read and its messages */
	for (int i = 0; have_log && i < nclients; i++)
	{
		Client	   *c = clients[i];
		char		watermark[ZS_WATERMARK_MAXLEN];
		int64		pos;
		ZsChangeLogPage	   *page = NULL;

		if (c->closed || c->close_after_flush || c->sub == NULL ||
			!zs_subscriber_wants_rows(c->sub, head) || backlog_full(c))
			continue;
		zs_subscriber_position(c->sub, watermark, &pos);
		for (int p = 0; p < npages && page == NULL; p++)
		{
			if (pages[p]->after_pos == pos && strcmp(pages[p]->after_watermark, watermark) == 0)
				page = pages[p];
		}
		if (page == NULL)
		{
			page = zs_changelog_read_page(watermark, pos, zs_catchup_page_rows);
			pages[npages++] = page;
		}
		zs_subscriber_consume_page(c->sub, page, log_version, &c->out,
								   backlog_limit() - (c->out.len - c->out_pos));
	}
	zs_spi_xact_commit();
}

/*
 * Laggard disconnection (zero-protocol.md §5.3): a subscriber that had
 * caught up and then lags, held back by its own acks, for longer than the
 * grace period while another subscriber keeps up, is told
 * StreamTooFarBehind and disconnected. Without an on-time subscriber to
 * compare with, nobody is disconnected.
 */
static void
check_laggards(const char *head)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		someone_live = false;

	if (zs_slow_subscriber_grace_ms <= 0)
		return;

	for (int i = 0; i < nclients && !someone_live; i++)
		someone_live = !clients[i]->closed && clients[i]->sub != NULL &&
			zs_subscriber_is_live(clients[i]->sub, head);
	for (int i = 0; i < nclients; i++)
	{
		Client	   *c = clients[i];
		long		secs;
		int			usecs;

		if (c->closed || c->close_after_flush || c->sub == NULL)
			continue;
		if (!zs_subscriber_is_lagging(c->sub, head))
		{
			c->lagging_since = 0;
			continue;
		}
		if (c->lagging_since == 0)
			c->lagging_since = now;
		if (!someone_live ||
			!TimestampDifferenceExceeds(c->lagging_since, now, zs_slow_subscriber_grace_ms))
			continue;
		TimestampDifference(c->lagging_since, now, &secs, &usecs);
		ereport(LOG,
				(errmsg("zero_stream: disconnecting subscriber %s (%s): it lagged behind the stream for %ld ms",
						zs_subscriber_id(c->sub), c->address, secs * 1000 + usecs / 1000)));
		zs_subscriber_fail_lagging(c->sub, &c->out, zs_slow_subscriber_grace_ms,
								   secs * 1000 + usecs / 1000);
		send_close(c, ZS_WS_CLOSE_NORMAL, NULL);
	}
}

/* Ping every 30 s; a peer silent since the previous ping is gone. */
static void
check_liveness(void)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < nclients; i++)
	{
		Client	   *c = clients[i];

		if (c->closed || !TimestampDifferenceExceeds(c->last_ping, now, PING_INTERVAL_MS))
			continue;
		if (!c->heard_since_ping)
		{
			ereport(LOG,
					(errmsg("zero_stream: closing connection from %s (%s): nothing received for %d s",
							c->address, c->sub ? zs_subscriber_id(c->sub) : "no subscription",
							2 * PING_INTERVAL_MS / 1000)));
			close_client(c);
			continue;
		}
		if (c->state == CLIENT_WEBSOCKET)
			zs_ws_append_frame(&c->out, ZS_WS_OP_PING, "", 0);
		c->heard_since_ping = false;
		c->last_ping = now;
	}
}

/* Copy every connection's state to shared memory for zero_stream.subscribers(). */
static void
publish_subscribers(const char *head)
{
	int			n = 0;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < nclients && n < zs_shared->max_subscribers; i++)
	{
		Client	   *c = clients[i];
		ZsSubscriberSlot *slot = &zs_shared->subscribers[n];
		ZsSubscriberInfo info;

		if (c->closed)
			continue;
		memset(slot, 0, sizeof(*slot));
		slot->in_use = true;
		strlcpy(slot->address, c->address, sizeof(slot->address));
		slot->backlog_bytes = c->out.len - c->out_pos;
		slot->connected_since = c->connected_since;
		if (c->sub != NULL)
		{
			zs_subscriber_describe(c->sub, head, &info);
			strlcpy(slot->id, info.id, sizeof(slot->id));
			strlcpy(slot->mode, info.backup_mode ? "backup" : "serving", sizeof(slot->mode));
			slot->protocol = info.protocol;
			strlcpy(slot->watermark_sent, info.watermark_sent, sizeof(slot->watermark_sent));
			strlcpy(slot->watermark_acked, info.watermark_acked, sizeof(slot->watermark_acked));
			slot->messages_sent = info.messages_sent;
			slot->messages_acked = info.messages_acked;
			strlcpy(slot->state, c->close_after_flush ? "closing" : info.state, sizeof(slot->state));
		}
		else if (c->up.reserved_task != NULL)
		{
			/* a reservation pins the change log at its watermark */
			strlcpy(slot->id, c->up.reserved_task, sizeof(slot->id));
			strlcpy(slot->mode, "snapshot", sizeof(slot->mode));
			slot->protocol = c->protocol;
			strlcpy(slot->state, "reserved", sizeof(slot->state));
			strlcpy(slot->watermark_sent, c->up.reserved_watermark, sizeof(slot->watermark_sent));
			strlcpy(slot->watermark_acked, c->up.reserved_watermark, sizeof(slot->watermark_acked));
		}
		else
			strlcpy(slot->state, c->file_fd >= 0 ? "sending snapshot" :
					c->state == CLIENT_HTTP ? "connecting" : "closing",
					sizeof(slot->state));
		n++;
	}
	for (int i = n; i < zs_shared->max_subscribers; i++)
		zs_shared->subscribers[i].in_use = false;
	LWLockRelease(zs_shared->lock);
}

/* ---------------------------------------------------------------- set-up */

static bool
is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *) sa)->sin6_addr);
	return false;
}

static void
open_listeners(void)
{
	char	   *copy = pstrdup(zs_listen_addresses);
	List	   *hosts;
	ListCell   *lc;
	char		port[16];
	bool		remote = false;

	if (!SplitGUCList(copy, ',', &hosts))
		ereport(ERROR, (errmsg("invalid zero_stream.listen_addresses: \"%s\"", zs_listen_addresses)));
	snprintf(port, sizeof(port), "%d", zs_port);
	foreach(lc, hosts)
	{
		char	   *host = (char *) lfirst(lc);
		struct addrinfo hints = {0};
		struct addrinfo *res;
		int			rc;

		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_PASSIVE;
		rc = getaddrinfo(strcmp(host, "*") == 0 ? NULL : host, port, &hints, &res);
		if (rc != 0)
			ereport(ERROR,
					(errmsg("zero_stream: could not resolve listen address \"%s\": %s",
							host, gai_strerror(rc))));
		for (struct addrinfo *ai = res; ai != NULL && nlisteners < MAX_LISTENERS; ai = ai->ai_next)
		{
			pgsocket	sock = socket(ai->ai_family, SOCK_STREAM, 0);
			int			one = 1;

			if (sock == PGINVALID_SOCKET)
				continue;
			(void) setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (ai->ai_family == AF_INET6)
				(void) setsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
			if (bind(sock, ai->ai_addr, ai->ai_addrlen) < 0 || listen(sock, 128) < 0)
			{
				int			save_errno = errno;

				closesocket(sock);
				freeaddrinfo(res);
				errno = save_errno;
				ereport(ERROR,
						(errcode_for_socket_access(),
						 errmsg("zero_stream: could not listen on %s port %d: %m", host, zs_port),
						 errhint("Another process may use the port; change zero_stream.port or zero_stream.listen_addresses.")));
			}
			pg_set_noblock(sock);
			ReserveExternalFD();
			remote |= !is_loopback(ai->ai_addr);
			listeners[nlisteners++] = sock;
		}
		freeaddrinfo(res);
	}
	if (nlisteners == 0)
		ereport(ERROR, (errmsg("zero_stream: no address to listen on in zero_stream.listen_addresses")));
	if (remote && (zs_subscriber_password == NULL || zs_subscriber_password[0] == '\0'))
		ereport(WARNING,
				(errmsg("zero_stream listens on a non-loopback address without authentication"),
				 errhint("Set zero_stream.subscriber_password so that only subscribers knowing it can read the change log.")));
	ereport(LOG, (errmsg("zero_stream server listening on %s port %d", zs_listen_addresses, zs_port)));
}

void
zs_server_main(Datum main_arg)
{
	WaitEvent  *events;
	MemoryContext loop_context;
	ResourceOwner owner;
	char		head[ZS_WATERMARK_MAXLEN];
	char		replica_version[ZS_WATERMARK_MAXLEN];
	bool		copies_pending = false;

	zs_worker_attach(ZS_WORKER_SERVER, "zero_stream server");

	/* for what the loop uses outside transactions (SHA-1 of the handshake) */
	owner = ResourceOwnerCreate(NULL, "zero_stream server");
	CurrentResourceOwner = owner;

	open_listeners();
	clients = MemoryContextAllocZero(TopMemoryContext, sizeof(Client *) * zs_max_subscribers);
	events = MemoryContextAlloc(TopMemoryContext,
								sizeof(WaitEvent) * (2 + MAX_LISTENERS + zs_max_subscribers));
	loop_context = AllocSetContextCreate(TopMemoryContext, "zero_stream server loop",
										 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		int			nevents;
		MemoryContext old;

		if (wait_set_dirty)
			rebuild_wait_set();
		nevents = WaitEventSetWait(wait_set, copies_pending ? 0 : TICK_MS, events,
								   2 + nlisteners + nclients, PG_WAIT_EXTENSION);
		old = MemoryContextSwitchTo(loop_context);
		for (int i = 0; i < nevents; i++)
		{
			WaitEvent  *ev = &events[i];

			if (ev->events & WL_LATCH_SET)
			{
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
				if (ConfigReloadPending)
				{
					ConfigReloadPending = false;
					ProcessConfigFile(PGC_SIGHUP);
				}
			}
			else if (ev->user_data != NULL && ev->user_data >= (void *) listeners &&
					 ev->user_data < (void *) (listeners + MAX_LISTENERS))
				accept_clients(*(pgsocket *) ev->user_data);
			else if (ev->user_data != NULL)
			{
				Client	   *c = (Client *) ev->user_data;

				if (!c->closed && (ev->events & WL_SOCKET_READABLE))
					read_client(c);
				if (!c->closed && (ev->events & WL_SOCKET_WRITEABLE))
					flush_client(c);
			}
		}
		/* the log's head and lineage, as the decoder last published them */
		LWLockAcquire(zs_shared->lock, LW_SHARED);
		strlcpy(head, zs_shared->last_watermark, sizeof(head));
		strlcpy(replica_version, zs_shared->replica_version, sizeof(replica_version));
		LWLockRelease(zs_shared->lock);

		serve_subscribers(head, replica_version);
		copies_pending = advance_snapshot_copies();
		check_laggards(head);
		check_liveness();
		for (int i = 0; i < nclients; i++)
		{
			if (!clients[i]->closed)
				flush_client(clients[i]);
			if (!wait_set_dirty)
				update_write_interest(clients[i]);
		}
		remove_closed_clients();
		publish_subscribers(head);
		MemoryContextSwitchTo(old);
		MemoryContextReset(loop_context);
		/* a committed read transaction leaves no resource owner behind */
		CurrentResourceOwner = owner;
	}
}
