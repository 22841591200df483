/*-------------------------------------------------------------------------
 * subscribe_connection.c
 *	  zero-stream-replica's connection to /replication/v7/subscribe
 *	  (subscribe_connection.h): the upgrade, and why it failed; upstream
 *	  frames and acks; the next text message, control frames answered on
 *	  the way; and the snapshot reservation that starts every connection.
 *
 * A failure to connect is told apart as a server not reachable (the name
 * resolves but no TCP connection could be made, a reset, a 502, 503 or 504
 * answer: retried) or a refusal (anything else: fatal on the first
 * attempt); a wrong password (401) exits at once. Acks go out in one write
 * for every frame processed since the last ones, masked as a client must.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <netdb.h>
#include <sys/socket.h>

#include "codec/json_out.h"
#include "codec/websocket.h"
#include "client/replica_cli.h"
#include "client/subscribe_connection.h"

static bool
send_text(ZsSubscribeConn *conn, const char *text)
{
	if (zs_client_send_frame(&conn->link, ZS_WS_OP_TEXT, text, (int) strlen(text), zs_replica_cli_err))
		return true;
	conn->lost = true;
	return false;
}

bool
zs_subscribe_send_upstream(ZsSubscribeConn *conn, const char *type, const char *body)
{
	char	   *frame = psprintf("{\"id\":" INT64_FORMAT ",\"msg\":[\"%s\",%s]}",
								 conn->next_upstream_id++, type, body);
	bool		ok = send_text(conn, frame);

	pfree(frame);
	return ok;
}

/* ack every processed frame, in order, in one write */
bool
zs_subscribe_send_acks(ZsSubscribeConn *conn)
{
	StringInfoData frames;
	bool		ok;

	if (conn->last_acked >= conn->last_frame)
		return true;
	initStringInfo(&frames);
	while (conn->last_acked < conn->last_frame)
	{
		char		ack[48];
		uint8		mask[4] = {0x12, 0x34, 0x56, 0x78};
		int			len = snprintf(ack, sizeof(ack), "{\"ack\":" INT64_FORMAT "}", ++conn->last_acked);
		int			start;

		zs_ws_append_header(&frames, true, ZS_WS_OP_TEXT, (uint64) len, mask);
		start = frames.len;
		appendBinaryStringInfo(&frames, ack, len);
		zs_ws_mask(frames.data + start, len, mask, 0);
	}
	ok = zs_client_write_all(&conn->link, frames.data, frames.len, zs_replica_cli_err);
	if (!ok)
		conn->lost = true;
	pfree(frames.data);
	return ok;
}

/* errno of a connection that could not be made or was lost on the way */
static bool
connection_lost(int e)
{
	return e == ECONNREFUSED || e == ECONNRESET || e == ECONNABORTED || e == EPIPE ||
		e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH || e == ENETDOWN ||
		e == EADDRNOTAVAIL;
}

/*
 * Why zs_client_connect failed, from the errno it left: the host's name
 * resolves but no TCP connection could be made (or the TLS handshake was
 * reset) is a server not reachable yet; a TLS handshake that failed
 * otherwise (a certificate, a server without TLS) is a refusal, and so is a
 * name that does not resolve. The name is looked up again because a failed
 * lookup leaves no errno to go by; a lookup that fails for now (EAI_AGAIN:
 * no DNS server answered) counts as not reachable.
 */
static ZsSubscribeResult
classify_connect_failure(const ZsUrl *url, int connect_errno)
{
	struct addrinfo hints = {0};
	struct addrinfo *res;
	int			rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(url->host, url->port, &hints, &res);
	if (rc == EAI_AGAIN)
		return ZS_SUBSCRIBE_UNREACHABLE;
	if (rc != 0)
		return ZS_SUBSCRIBE_REFUSED;
	freeaddrinfo(res);
	if (!connection_lost(connect_errno))
		return ZS_SUBSCRIBE_REFUSED;
	strlcpy(zs_replica_cli_err, strerror(connect_errno), sizeof(zs_replica_cli_err));
	return ZS_SUBSCRIBE_UNREACHABLE;
}

ZsSubscribeResult
zs_subscribe_connect(ZsSubscribeConn *conn, const ZsUrl *url, const char *task_id)
{
	StringInfoData leftover;
	StringInfoData target;
	int			http_status;

	errno = 0;
	if (!zs_client_connect(url, &conn->link, zs_replica_cli_err))
		return classify_connect_failure(url, errno);
	initStringInfo(&leftover);
	initStringInfo(&target);
	appendStringInfoString(&target, "/replication/v7/subscribe?taskID=");
	for (const char *p = task_id; *p; p++)
		appendStringInfo(&target, isalnum((unsigned char) *p) || strchr("-_.~", *p) ? "%c" : "%%%02X",
						 (unsigned char) *p);
	errno = 0;
	if (!zs_client_ws_handshake(&conn->link, url, target.data, &leftover, &http_status, zs_replica_cli_err))
	{
		int			save_errno = errno;

		zs_client_close(&conn->link);
		if (http_status == 401)
			zs_replica_cli_die(2, "the server refused the credentials (HTTP 401): check the password in the URL");
		/* busy, or a proxy without its server; or reset before answering */
		if (http_status == 502 || http_status == 503 || http_status == 504 ||
			(http_status == 0 && connection_lost(save_errno)))
			return ZS_SUBSCRIBE_UNREACHABLE;
		return ZS_SUBSCRIBE_REFUSED;
	}
	zs_ws_reader_init(&conn->reader, false, (uint64) 1 << 30);
	zs_ws_reader_feed(&conn->reader, leftover.data, leftover.len);
	initStringInfo(&conn->msg.payload);
	conn->next_upstream_id = 1;
	conn->last_frame = 0;
	conn->last_acked = 0;
	conn->lost = false;
	zs_json_doc_init(&conn->doc);
	pfree(leftover.data);
	pfree(target.data);
	return ZS_SUBSCRIBE_OK;
}

void
zs_subscribe_disconnect(ZsSubscribeConn *conn)
{
	if (conn->link.sock >= 0)
	{
		(void) zs_client_send_frame(&conn->link, ZS_WS_OP_CLOSE, "\x03\xe8", 2, zs_replica_cli_err);
		zs_client_close(&conn->link);
	}
	zs_ws_reader_free(&conn->reader);
	pfree(conn->msg.payload.data);
	zs_json_doc_free(&conn->doc);
}

ZsSubscribeNext
zs_subscribe_next(ZsSubscribeConn *conn, int timeout_ms)
{
	for (;;)
	{
		ZsWsReadResult r = zs_ws_reader_next(&conn->reader, &conn->msg);

		if (r == ZS_WS_ERROR)
		{
			snprintf(zs_replica_cli_err, sizeof(zs_replica_cli_err), "protocol error from the server: %s", conn->reader.error);
			return ZS_SUBSCRIBE_CLOSED;
		}
		if (r == ZS_WS_NEED_MORE)
		{
			char		buf[65536];
			ssize_t		got;
			int			rc;

			if (zs_replica_cli_stop_requested)
				return ZS_SUBSCRIBE_TIMEOUT;
			rc = zs_client_wait(&conn->link, timeout_ms);
			if (rc <= 0)
				return ZS_SUBSCRIBE_TIMEOUT;
			got = zs_client_read(&conn->link, buf, sizeof(buf), zs_replica_cli_err);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
			{
				conn->lost = true;
				return ZS_SUBSCRIBE_CLOSED;
			}
			if (got == 0)
			{
				snprintf(zs_replica_cli_err, sizeof(zs_replica_cli_err), "the server closed the connection without a close frame");
				conn->lost = true;
				return ZS_SUBSCRIBE_CLOSED;
			}
			zs_ws_reader_feed(&conn->reader, buf, (int) got);
			continue;
		}
		switch (conn->msg.opcode)
		{
			case ZS_WS_OP_TEXT:
				return ZS_SUBSCRIBE_TEXT;
			case ZS_WS_OP_PING:
				(void) zs_client_send_frame(&conn->link, ZS_WS_OP_PONG, conn->msg.payload.data,
											conn->msg.payload.len, zs_replica_cli_err);
				break;
			case ZS_WS_OP_CLOSE:
				{
					int			code = conn->msg.payload.len >= 2
						? ((uint8) conn->msg.payload.data[0] << 8) | (uint8) conn->msg.payload.data[1]
						: 1005;

					snprintf(zs_replica_cli_err, sizeof(zs_replica_cli_err), "the server closed the connection (%d%s%.*s)", code,
							 conn->msg.payload.len > 2 ? ": " : "",
							 Max(conn->msg.payload.len - 2, 0), conn->msg.payload.data + 2);
					return ZS_SUBSCRIBE_CLOSED;
				}
			default:
				break;
		}
	}
}

bool
zs_subscribe_reserve(ZsSubscribeConn *conn, const char *task_id, ZsReservation *res)
{
	StringInfoData task;
	char	   *body;

	initStringInfo(&task);
	zs_json_append_cstring(&task, task_id);
	body = psprintf("{\"taskID\":%s}", task.data);
	if (!zs_subscribe_send_upstream(conn, "reserve-snapshot", body))
		return false;
	for (;;)
	{
		int			id,
					batch,
					msg,
					status;

		switch (zs_subscribe_next(conn, 30000))
		{
			case ZS_SUBSCRIBE_TIMEOUT:
				snprintf(zs_replica_cli_err, sizeof(zs_replica_cli_err), "%s", zs_replica_cli_stop_requested
						 ? "interrupted" : "no answer to reserve-snapshot within 30 s");
				return false;
			case ZS_SUBSCRIBE_CLOSED:
				return false;
			case ZS_SUBSCRIBE_TEXT:
				break;
		}
		if (!zs_json_parse(&conn->doc, conn->msg.payload.data, conn->msg.payload.len))
		{
			snprintf(zs_replica_cli_err, sizeof(zs_replica_cli_err), "invalid JSON from the server: %s", conn->doc.error);
			return false;
		}
		if (zs_json_get(&conn->doc, 0, "ack") >= 0)
			continue;			/* the server acked our upstream frame */
		id = zs_json_get(&conn->doc, 0, "id");
		batch = zs_json_get(&conn->doc, 0, "batch");
		msg = zs_json_at(&conn->doc, batch, 0);
		status = zs_json_at(&conn->doc, msg, 1);
		if (id < 0 || !zs_json_str_eq(&conn->doc, zs_json_at(&conn->doc, msg, 0), "reserved") ||
			zs_json_get_string(&conn->doc, status, "backupURL") == NULL ||
			zs_json_get_string(&conn->doc, status, "replicaVersion") == NULL ||
			zs_json_get_string(&conn->doc, status, "minWatermark") == NULL)
		{
			snprintf(zs_replica_cli_err, sizeof(zs_replica_cli_err), "unexpected answer to reserve-snapshot: %.200s", conn->msg.payload.data);
			return false;
		}
		res->backup_url = pstrdup(zs_json_get_string(&conn->doc, status, "backupURL"));
		strlcpy(res->replica_version, zs_json_get_string(&conn->doc, status, "replicaVersion"), ZS_WATERMARK_MAXLEN);
		strlcpy(res->min_watermark, zs_json_get_string(&conn->doc, status, "minWatermark"), ZS_WATERMARK_MAXLEN);
		res->replica_size = -1;
		{
			int64		size;
			int			n = zs_json_get(&conn->doc, status, "replicaSize");

			if (n >= 0 && zs_json_int64(&conn->doc, n, &size))
				res->replica_size = size;
		}
		conn->last_frame = (int64) zs_json_double(&conn->doc, id);
		return zs_subscribe_send_acks(conn);
	}
}
