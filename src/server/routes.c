/*-------------------------------------------------------------------------
 * routes.c
 *	  The server's endpoints: the one place that routes HTTP paths, checks
 *	  Basic auth and decides the HTTP replies, and that hands WebSocket
 *	  messages to the subscription or the v7 upstream protocol.
 *
 * Plain GET requests:
 *	  /, /keepalive				"OK" (zero-cache's health checks)
 *	  /metrics					Prometheus's text format (metrics.c)
 *	  /replica/<taskID>			a snapshot of the backup replica (reservations.c)
 * WebSocket upgrades (docs/zero-protocol.md §2.1), at v4 to v7:
 *	  /replication/vN/changes	a subscription from the query string
 *	  /replication/vN/snapshot	a legacy snapshot reservation
 *	  /replication/v7/subscribe	a subscription started by an upstream message
 * A plain GET that announces a body is answered 400 (none is read). Any
 * other path is answered 404, upgrade or not; a request to an endpoint
 * that cannot be served (an unsupported protocol version, a missing
 * parameter) is upgraded and closed with code 1002 and "Error: ...", as
 * zero-cache does. When
 * zero_stream.subscriber_password is set, snapshots and upgrades need it as
 * the HTTP Basic password (401 otherwise, logged rate-limited with the
 * peer's address), and so do metrics; health checks never do. An authorized snapshot download
 * or upgrade then needs a subscriber slot (admission.c, 503 otherwise);
 * health checks never take one.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "codec/websocket.h"
#include "guc.h"
#include "server/admission.h"
#include "server/connection.h"
#include "server/metrics.h"
#include "server/peer_log.h"
#include "server/reservation_offer.h"
#include "server/reservations.h"
#include "server/routes.h"
#include "server/upstream.h"

static bool
missing(const char *value)
{
	return value == NULL || value[0] == '\0';
}

/* ---------------------------------------------------------------- auth */

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

/* a peer's user name, fit for the log: printable ASCII, at most 63 bytes */
static char *
loggable(const char *text)
{
	char	   *copy = pnstrdup(text, 63);

	for (char *p = copy; *p; p++)
	{
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
	}
	return copy;
}

/* 401, and a log line as PostgreSQL writes for a failed login (rate-limited) */
static void
send_unauthorized(ZsConn *c, const ZsHttpRequest *req)
{
	StringInfoData user;
	StringInfoData password;
	int64		suppressed;

	if (zs_peer_log_allowed(ZS_PEER_AUTH_FAILED, c->host, &suppressed))
	{
		initStringInfo(&user);
		initStringInfo(&password);
		if (zs_http_basic_credentials(zs_http_header(req, "Authorization"), &user, &password))
			ereport(LOG,
					(errcode(ERRCODE_INVALID_PASSWORD),
					 errmsg("password authentication failed for user \"%s\" connecting from %s",
							loggable(user.data), c->address),
					 zs_peer_log_detail(suppressed)));
		else
			ereport(LOG,
					(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
					 errmsg("no password from %s, which zero_stream.subscriber_password requires",
							c->address),
					 zs_peer_log_detail(suppressed)));
	}
	zs_conn_send_http(c, "401 Unauthorized", "WWW-Authenticate: Basic realm=\"zero_stream\"\r\n",
					  "authentication required\n");
}

/* ---------------------------------------------------------------- plain GET */

/* "/replica/<taskID>": the task, percent-decoded, or NULL for another path */
static char *
replica_path_task(const char *path)
{
	const char *p;
	StringInfoData task;

	if (strncmp(path, ZS_REPLICA_PATH_PREFIX, strlen(ZS_REPLICA_PATH_PREFIX)) != 0)
		return NULL;
	p = path + strlen(ZS_REPLICA_PATH_PREFIX);
	initStringInfo(&task);
	/* the path is not percent-decoded by the parser: do it here */
	while (*p)
	{
		if (*p == '%' && isxdigit((unsigned char) p[1]) && isxdigit((unsigned char) p[2]))
		{
			char		hex[3] = {p[1], p[2], '\0'};

			appendStringInfoChar(&task, (char) strtol(hex, NULL, 16));
			p += 3;
		}
		else
			appendStringInfoChar(&task, *p++);
	}
	return task.len > 0 ? task.data : NULL;
}

/* whether the request announces a body, which no plain GET here reads */
static bool
has_body(const ZsHttpRequest *req)
{
	const char *length = zs_http_header(req, "Content-Length");

	return zs_http_header(req, "Transfer-Encoding") != NULL ||
		(length != NULL && strspn(length, "0") != strlen(length));
}

static void
route_plain(ZsServer *server, ZsConn *c, const ZsHttpRequest *req)
{
	char	   *task;

	if (strcmp(req->path, "/") == 0 || strcmp(req->path, "/keepalive") == 0)
		zs_conn_send_http(c, "200 OK", NULL, "OK");
	else if (strcmp(req->path, ZS_METRICS_PATH) == 0)
	{
		/* a scrape takes no subscriber slot: it is answered at once */
		if (!authorized(req))
			send_unauthorized(c, req);
		else
			zs_conn_send_http_typed(c, "200 OK", ZS_METRICS_CONTENT_TYPE, NULL, zs_metrics_text());
	}
	else if ((task = replica_path_task(req->path)) != NULL)
	{
		if (!authorized(req))
			send_unauthorized(c, req);
		else if (zs_admission_admit(server, c))
			zs_reservation_serve_snapshot(server, c, task);
	}
	else
		zs_conn_send_http(c, "404 Not Found", NULL, "not found\n");
}

/* ---------------------------------------------------------------- upgrades */

/* The WebSocket handshake (RFC 6455 §4.2); false if it was refused. */
static bool
accept_upgrade(ZsServer *server, ZsConn *c, const ZsHttpRequest *req)
{
	const char *key = zs_http_header(req, "Sec-WebSocket-Key");
	char		accept[ZS_WS_ACCEPT_KEY_LEN + 1];
	MemoryContext old;

	if (!zs_http_has_token(zs_http_header(req, "Connection"), "upgrade") || key == NULL ||
		!zs_ws_accept_key(key, accept))
	{
		zs_conn_send_http(c, "400 Bad Request", NULL, "invalid WebSocket upgrade request\n");
		return false;
	}
	if (zs_http_header(req, "Sec-WebSocket-Version") == NULL ||
		strcmp(zs_http_header(req, "Sec-WebSocket-Version"), "13") != 0)
	{
		zs_conn_send_http(c, "426 Upgrade Required", "Sec-WebSocket-Version: 13\r\n",
						  "unsupported WebSocket version\n");
		return false;
	}
	if (!zs_admission_admit(server, c))
		return false;

	/* no extension (permessage-deflate) is accepted: the header is left out */
	appendStringInfo(&c->out,
					 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
					 "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", accept);
	c->state = ZS_CONN_WEBSOCKET;
	old = MemoryContextSwitchTo(c->context);
	zs_ws_reader_init(&c->ws, true, (uint64) zs_max_message_kb * 1024);
	if (zs_http_header(req, "Host") != NULL)
		c->up.host = pstrdup(zs_http_header(req, "Host"));
	MemoryContextSwitchTo(old);
	return true;
}

/* A query parameter, percent-decoded; NULL if absent. */
static const char *
query_value(const ZsHttpRequest *req, const char *name)
{
	StringInfoData v;

	initStringInfo(&v);
	if (!zs_http_query_param(req->query, name, &v))
	{
		pfree(v.data);
		return NULL;
	}
	return v.data;
}

/* /replication/vN/changes: a subscription from the query string (§2.2) */
static ZsSubscriber *
start_from_query(const ZsHttpRequest *req, int version, char **error)
{
	ZsSubscribeParams params = {0};
	const char *batched;

	params.id = query_value(req, "id");
	params.task_id = query_value(req, "taskID");
	params.replica_version = query_value(req, "replicaVersion");
	params.watermark = query_value(req, "watermark");
	params.mode = query_value(req, "mode");
	batched = query_value(req, "wsBatched");
	params.batched = version >= 7 && batched != NULL && strcmp(batched, "true") == 0;
	return zs_subscriber_start(&params, version, error);
}

/*
 * What the upgraded connection is for, from its path and version: a
 * /changes subscription (c->sub), a /subscribe connection awaiting its
 * start-subscription (c->v7_subscribe) or a legacy reservation
 * (*snapshot_task). Returns the error to refuse it with, or NULL.
 */
static char *
route_endpoint(ZsConn *c, const ZsHttpRequest *req, char **snapshot_task)
{
	int			version = 0;
	ZsRouteAction action = zs_http_route(req->path, &version);
	const char *task;
	char	   *error = NULL;

	*snapshot_task = NULL;
	if (action == ZS_ROUTE_NONE)
		return psprintf("invalid path: %s", req->path);
	if (version < ZS_MIN_PROTOCOL || version > ZS_MAX_PROTOCOL)
		return psprintf("Cannot service client at protocol v%d. Supported protocols: [v%d ... v%d]",
						version, ZS_MIN_PROTOCOL, ZS_MAX_PROTOCOL);
	c->protocol = version;
	switch (action)
	{
		case ZS_ROUTE_SUBSCRIBE:
			if (version < 7)
				return psprintf("the /subscribe endpoint requires protocol v7 (client is at v%d)",
								version);
			c->v7_subscribe = true;
			return NULL;
		case ZS_ROUTE_SNAPSHOT:
			task = query_value(req, "taskID");
			if (missing(task))
				return pstrdup("Missing taskID in snapshot request");
			*snapshot_task = pstrdup(task);
			return NULL;
		case ZS_ROUTE_CHANGES:
		case ZS_ROUTE_NONE:
			break;
	}
	c->sub = start_from_query(req, version, &error);
	return error;
}

static void
route_websocket(ZsServer *server, ZsConn *c, const ZsHttpRequest *req)
{
	char	   *snapshot_task;
	char	   *error;
	MemoryContext old = MemoryContextSwitchTo(c->context);

	error = route_endpoint(c, req, &snapshot_task);
	MemoryContextSwitchTo(old);
	if (snapshot_task != NULL)
	{
		zs_reservation_open(server, c, snapshot_task);
		return;
	}
	if (c->sub != NULL)
		zs_reservation_release(server, zs_subscriber_task(c->sub), c);
	if (c->sub == NULL && !c->v7_subscribe)
	{
		ereport(LOG,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("refused subscriber %s: %s", c->address, error)));
		zs_conn_send_close(c, ZS_WS_CLOSE_PROTOCOL_ERROR, psprintf("Error: %s", error));
		return;
	}
	ereport(DEBUG1,
			(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
			 errmsg("subscriber %s connected from %s",
					c->sub ? zs_subscriber_id(c->sub) : "(awaiting start-subscription)",
					c->address)));
}

/* ---------------------------------------------------------------- entry points */

void
zs_route_request(ZsServer *server, ZsConn *c, const ZsHttpRequest *req)
{
	if (strcmp(req->method, "GET") != 0)
	{
		zs_conn_send_http(c, "405 Method Not Allowed", "Allow: GET\r\n", "method not allowed\n");
		return;
	}
	if (!zs_http_has_token(zs_http_header(req, "Upgrade"), "websocket"))
	{
		if (has_body(req))
			zs_conn_send_http(c, "400 Bad Request", NULL, "a GET request has no body\n");
		else
			route_plain(server, c, req);
		return;
	}
	/* a path that is no endpoint is not upgraded, as zero-cache answers it */
	{
		int			version;

		if (zs_http_route(req->path, &version) == ZS_ROUTE_NONE)
		{
			zs_conn_send_http(c, "404 Not Found", NULL, "not found\n");
			return;
		}
	}
	if (!authorized(req))
	{
		send_unauthorized(c, req);
		return;
	}
	if (accept_upgrade(server, c, req))
		route_websocket(server, c, req);
}

void
zs_route_bad_request(ZsServer *server, ZsConn *c, int status, const char *error)
{
	zs_conn_send_http(c, status == 431 ? "431 Request Header Fields Too Large"
					  : status == 505 ? "505 HTTP Version Not Supported" : "400 Bad Request",
					  NULL, psprintf("%s\n", error));
}

/*
 * A v7 /subscribe frame. A new reservation, or a subscription started,
 * for a task ends the task's reservations on other connections.
 */
static bool
route_upstream(ZsServer *server, ZsConn *c, const char *text, int len, char **error)
{
	/* a start-subscription creates state the client owns */
	MemoryContext old = MemoryContextSwitchTo(c->context);
	const char *reserved_before = c->up.reserved_task;
	bool		ok;

	ok = zs_upstream_receive(&c->sub, c->protocol, &c->up, text, len, &c->out, error);
	MemoryContextSwitchTo(old);
	if (c->up.reserved_task != NULL && c->up.reserved_task != reserved_before)
		zs_reservation_release(server, c->up.reserved_task, c);
	if (c->up.started_task != NULL)
	{
		zs_reservation_release(server, c->up.started_task, c);
		c->up.started_task = NULL;
	}
	return ok;
}

void
zs_route_message(ZsServer *server, ZsConn *c, const char *text, int len)
{
	char	   *error;
	bool		ok;

	if (c->v7_subscribe)
		ok = route_upstream(server, c, text, len, &error);
	else if (c->sub != NULL)
		ok = zs_upstream_receive_ack(c->sub, text, len, &error);
	else
		return;					/* a legacy reservation's connection: nothing to do */
	if (!ok)
		zs_conn_send_close(c, ZS_WS_CLOSE_PROTOCOL_ERROR, psprintf("Error: %s", error));
	else if (c->sub != NULL && zs_subscriber_is_finished(c->sub))
		zs_conn_send_close(c, ZS_WS_CLOSE_NO_STATUS, NULL);	/* as zero-cache after an error */
}
