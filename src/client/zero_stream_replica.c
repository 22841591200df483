/*-------------------------------------------------------------------------
 * zero_stream_replica.c
 *	  zero-stream-replica: keep a SQLite replica in zero-cache's format
 *	  current from a zero_stream server (or print a replica's state).
 *
 *	  zero-stream-replica sync [options] ws[s]://[user:password@]host:port FILE
 *	  zero-stream-replica restore [litestream restore flags] FILE
 *	  zero-stream-replica status FILE
 *
 * sync reserves a snapshot on /replication/v7/subscribe; when FILE is
 * missing, of another replicaVersion, or older than the server's
 * minWatermark, it downloads the backup replica the reservation points at
 * (replacing FILE atomically), then subscribes from FILE's stateVersion on
 * the same connection and applies every transaction, committing to SQLite
 * when the socket is drained and acking each frame once applied. A frame's
 * commits are in SQLite before its ack, except when the frame also begins
 * a transaction that is still open when the socket drains: the ack is sent
 * anyway, because the server paces a subscriber by its acks and a large
 * transaction would otherwise stall. The file's stateVersion, not the
 * server's acked watermark, is where a restart resumes. Interrupt it
 * (SIGINT/SIGTERM) and start it again: it resumes from the stateVersion
 * committed in FILE, so no transaction is applied twice or skipped. A server
 * that cannot be reached (no TCP connection, a connection reset, a 502, 503
 * or 504 answer) is retried with a back-off up to RECONNECT_MAX_S, on the
 * first attempt too, and so is a lost connection; each reason is noted once
 * per outage, not at every attempt. A refusal (a wrong password, an answer
 * that is not a zero_stream server's, a host name that does not resolve) is
 * fatal on the first attempt. WrongReplicaVersion or WatermarkTooOld leads to
 * a fresh restore.
 *
 * Options of sync:
 *	  --task-id ID     reservation and subscription task (default zero-stream-replica)
 *	  --id ID          subscriber id (default <task-id>-<pid>)
 *	  --change-log     keep "_zero.changeLog2" as a zero-cache serving replica
 *	                   does (every row's last op, for IVM; costs about 40%
 *	                   of the apply rate); without it the file is kept like
 *	                   zero-cache's backup replica
 *	  --idle SECS      exit 0 once no message arrived for SECS seconds
 *	  --ca-file FILE   wss://: verify the server's certificate (and the
 *	                   https:// backupURL's) against the CA certificates in
 *	                   FILE (default $ZS_SSL_CA_FILE, else the system's)
 *	  --no-verify      wss://: do not verify the server's certificate (also
 *	                   ZS_SSL_NO_VERIFY=1)
 *
 * restore is litestream's restore command as a zero-cache view-syncer runs
 * it through ZERO_LITESTREAM_EXECUTABLE: it downloads the backupURL in
 * ZERO_LITESTREAM_BACKUP_URL into FILE with the same code as sync's restore
 * (see restore_command); an https:// backupURL is verified as sync's
 * (-ca-file, -no-verify, or the environment).
 *
 * Exit status: 0 stopped by a signal or --idle, or restore done (restored,
 * FILE already there, or no backup to serve with -if-replica-exists); 1
 * usage; 2 server refused (e.g. wrong password; for restore also
 * unreachable), a protocol error or a bad download; 3 FILE is not a usable
 * replica, or a file cannot be written (a full disk, a file size limit:
 * SIGXFSZ is ignored so that the write reports it).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/logging.h"

#include "codec/json_out.h"
#include "codec/json_read.h"
#include "codec/stream_frame.h"
#include "replica/replica_apply.h"
#include "codec/websocket.h"
#include "codec/zero_errors.h"
#include "compat/noreturn.h"
#include "client/ws_client.h"

#define PROGRESS_INTERVAL_S 2.0
#define RECONNECT_MAX_S 10

typedef struct Options
{
	const char *task_id;
	const char *id;
	bool		change_log;
	int			idle_seconds;
} Options;

typedef struct Connection
{
	ZsClientConn link;
	ZsWsReader	reader;
	ZsWsMessage msg;
	int64		next_upstream_id;
	int64		last_frame;		/* downstream frame ids processed */
	int64		last_acked;
	bool		lost;			/* dropped without a close frame, or a write failed */
} Connection;

typedef enum ConnectResult
{
	CONNECT_OK,
	CONNECT_UNREACHABLE,		/* no connection, a reset, or 502/503/504 */
	CONNECT_REFUSED				/* anything else (401 exits at once) */
} ConnectResult;

/*
 * Retrying after a failure: the next attempt's delay, and the reason noted
 * last in this outage (an outage ends when a subscription starts), so that
 * a reason is noted once, not at every attempt.
 */
typedef struct Retry
{
	int			backoff;		/* seconds, doubled up to RECONNECT_MAX_S */
	char		noted[ZS_CLIENT_ERR_LEN];
} Retry;

/* the reservation's answer */
typedef struct Reservation
{
	char	   *backup_url;
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		min_watermark[ZS_WATERMARK_MAXLEN];
	int64		replica_size;
} Reservation;

typedef enum SyncResult
{
	SYNC_STOPPED,				/* signal or --idle: exit 0 */
	SYNC_RECONNECT,				/* connection lost: try again */
	SYNC_RESTORE				/* the server says the replica cannot continue */
} SyncResult;

static volatile sig_atomic_t stop_requested = 0;
static char err[ZS_CLIENT_ERR_LEN];
static const char *download_tmp = NULL;	/* removed if we exit early */
static ZsJsonDoc doc;

static void
handle_stop(int signo)
{
	stop_requested = 1;
}

static void usage(void) zs_noreturn;

static void
usage(void)
{
	fprintf(stderr,
			"usage: zero-stream-replica sync [--task-id ID] [--id ID] [--change-log] [--idle SECS] [--ca-file FILE] [--no-verify] ws[s]://[user:password@]host:port FILE\n"
			"       zero-stream-replica restore [-if-db-not-exists] [-if-replica-exists] [-o PATH] [-parallelism N] [-ca-file FILE] [-no-verify] FILE\n"
			"           (the backup from $ZERO_LITESTREAM_BACKUP_URL; also: restore [flags] -o PATH http[s]://host:port/replica/TASK)\n"
			"       zero-stream-replica status FILE\n");
	exit(1);
}

/* %m in fmt is the errno of the caller's failure, whatever fputs does */
static void
vnote(const char *fmt, va_list args)
{
	int			save_errno = errno;

	fputs("zero-stream-replica: ", stderr);
	errno = save_errno;
	vfprintf(stderr, fmt, args);
	fputc('\n', stderr);
}

static void
note(const char *fmt,...) pg_attribute_printf(1, 2);

static void
note(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vnote(fmt, args);
	va_end(args);
}

static void zs_noreturn
die_with(int code, const char *fmt,...) pg_attribute_printf(2, 3);

static void
die_with(int code, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vnote(fmt, args);
	va_end(args);
	if (download_tmp != NULL)
		(void) zs_replica_remove_files(download_tmp, err, sizeof(err));
	exit(code);
}

static double
now_seconds(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* ---------------------------------------------------------------- connection */

static bool
send_text(Connection *conn, const char *text)
{
	if (zs_client_send_frame(&conn->link, ZS_WS_OP_TEXT, text, (int) strlen(text), err))
		return true;
	conn->lost = true;
	return false;
}

static bool
send_upstream(Connection *conn, const char *type, const char *body)
{
	char	   *frame = psprintf("{\"id\":" INT64_FORMAT ",\"msg\":[\"%s\",%s]}",
								 conn->next_upstream_id++, type, body);
	bool		ok = send_text(conn, frame);

	pfree(frame);
	return ok;
}

/* ack every processed frame, in order, in one write */
static bool
send_acks(Connection *conn)
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
	ok = zs_client_write_all(&conn->link, frames.data, frames.len, err);
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
static ConnectResult
classify_connect_failure(const ZsUrl *url, int connect_errno)
{
	struct addrinfo hints = {0};
	struct addrinfo *res;
	int			rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(url->host, url->port, &hints, &res);
	if (rc == EAI_AGAIN)
		return CONNECT_UNREACHABLE;
	if (rc != 0)
		return CONNECT_REFUSED;
	freeaddrinfo(res);
	if (!connection_lost(connect_errno))
		return CONNECT_REFUSED;
	strlcpy(err, strerror(connect_errno), sizeof(err));
	return CONNECT_UNREACHABLE;
}

/*
 * Open /replication/v7/subscribe; how it failed, with the reason in err. A
 * wrong password (401) exits at once.
 */
static ConnectResult
connect_subscribe(Connection *conn, const ZsUrl *url, const Options *opt)
{
	StringInfoData leftover;
	StringInfoData target;
	int			http_status;

	errno = 0;
	if (!zs_client_connect(url, &conn->link, err))
		return classify_connect_failure(url, errno);
	initStringInfo(&leftover);
	initStringInfo(&target);
	appendStringInfoString(&target, "/replication/v7/subscribe?taskID=");
	for (const char *p = opt->task_id; *p; p++)
		appendStringInfo(&target, isalnum((unsigned char) *p) || strchr("-_.~", *p) ? "%c" : "%%%02X",
						 (unsigned char) *p);
	errno = 0;
	if (!zs_client_ws_handshake(&conn->link, url, target.data, &leftover, &http_status, err))
	{
		int			save_errno = errno;

		zs_client_close(&conn->link);
		if (http_status == 401)
			die_with(2, "the server refused the credentials (HTTP 401): check the password in the URL");
		/* busy, or a proxy without its server; or reset before answering */
		if (http_status == 502 || http_status == 503 || http_status == 504 ||
			(http_status == 0 && connection_lost(save_errno)))
			return CONNECT_UNREACHABLE;
		return CONNECT_REFUSED;
	}
	zs_ws_reader_init(&conn->reader, false, (uint64) 1 << 30);
	zs_ws_reader_feed(&conn->reader, leftover.data, leftover.len);
	initStringInfo(&conn->msg.payload);
	conn->next_upstream_id = 1;
	conn->last_frame = 0;
	conn->last_acked = 0;
	conn->lost = false;
	pfree(leftover.data);
	pfree(target.data);
	return CONNECT_OK;
}

static void
disconnect(Connection *conn)
{
	if (conn->link.sock >= 0)
	{
		(void) zs_client_send_frame(&conn->link, ZS_WS_OP_CLOSE, "\x03\xe8", 2, err);
		zs_client_close(&conn->link);
	}
	zs_ws_reader_free(&conn->reader);
	pfree(conn->msg.payload.data);
}

typedef enum NextResult
{
	NEXT_TEXT,					/* conn->msg holds a text message */
	NEXT_TIMEOUT,				/* nothing within the timeout (or a signal) */
	NEXT_CLOSED					/* closed; err says how */
} NextResult;

/* The next text message; control frames are answered on the way. */
static NextResult
next_message(Connection *conn, int timeout_ms)
{
	for (;;)
	{
		ZsWsReadResult r = zs_ws_reader_next(&conn->reader, &conn->msg);

		if (r == ZS_WS_ERROR)
		{
			snprintf(err, sizeof(err), "protocol error from the server: %s", conn->reader.error);
			return NEXT_CLOSED;
		}
		if (r == ZS_WS_NEED_MORE)
		{
			char		buf[65536];
			ssize_t		got;
			int			rc;

			if (stop_requested)
				return NEXT_TIMEOUT;
			rc = zs_client_wait(&conn->link, timeout_ms);
			if (rc <= 0)
				return NEXT_TIMEOUT;
			got = zs_client_read(&conn->link, buf, sizeof(buf), err);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
			{
				conn->lost = true;
				return NEXT_CLOSED;
			}
			if (got == 0)
			{
				snprintf(err, sizeof(err), "the server closed the connection without a close frame");
				conn->lost = true;
				return NEXT_CLOSED;
			}
			zs_ws_reader_feed(&conn->reader, buf, (int) got);
			continue;
		}
		switch (conn->msg.opcode)
		{
			case ZS_WS_OP_TEXT:
				return NEXT_TEXT;
			case ZS_WS_OP_PING:
				(void) zs_client_send_frame(&conn->link, ZS_WS_OP_PONG, conn->msg.payload.data,
											conn->msg.payload.len, err);
				break;
			case ZS_WS_OP_CLOSE:
				{
					int			code = conn->msg.payload.len >= 2
						? ((uint8) conn->msg.payload.data[0] << 8) | (uint8) conn->msg.payload.data[1]
						: 1005;

					snprintf(err, sizeof(err), "the server closed the connection (%d%s%.*s)", code,
							 conn->msg.payload.len > 2 ? ": " : "",
							 Max(conn->msg.payload.len - 2, 0), conn->msg.payload.data + 2);
					return NEXT_CLOSED;
				}
			default:
				break;
		}
	}
}

/* ---------------------------------------------------------------- reservation */

/* reserve-snapshot, then wait for ["reserved", {...}]; false with err if refused */
static bool
reserve(Connection *conn, const Options *opt, Reservation *res)
{
	StringInfoData task;
	char	   *body;

	initStringInfo(&task);
	zs_json_append_cstring(&task, opt->task_id);
	body = psprintf("{\"taskID\":%s}", task.data);
	if (!send_upstream(conn, "reserve-snapshot", body))
		return false;
	for (;;)
	{
		int			id,
					batch,
					msg,
					status;

		switch (next_message(conn, 30000))
		{
			case NEXT_TIMEOUT:
				snprintf(err, sizeof(err), stop_requested ? "interrupted" : "no answer to reserve-snapshot within 30 s");
				return false;
			case NEXT_CLOSED:
				return false;
			case NEXT_TEXT:
				break;
		}
		if (!zs_json_parse(&doc, conn->msg.payload.data, conn->msg.payload.len))
		{
			snprintf(err, sizeof(err), "invalid JSON from the server: %s", doc.error);
			return false;
		}
		if (zs_json_get(&doc, 0, "ack") >= 0)
			continue;			/* the server acked our upstream frame */
		id = zs_json_get(&doc, 0, "id");
		batch = zs_json_get(&doc, 0, "batch");
		msg = zs_json_at(&doc, batch, 0);
		status = zs_json_at(&doc, msg, 1);
		if (id < 0 || !zs_json_str_eq(&doc, zs_json_at(&doc, msg, 0), "reserved") ||
			zs_json_get_string(&doc, status, "backupURL") == NULL ||
			zs_json_get_string(&doc, status, "replicaVersion") == NULL ||
			zs_json_get_string(&doc, status, "minWatermark") == NULL)
		{
			snprintf(err, sizeof(err), "unexpected answer to reserve-snapshot: %.200s", conn->msg.payload.data);
			return false;
		}
		res->backup_url = pstrdup(zs_json_get_string(&doc, status, "backupURL"));
		strlcpy(res->replica_version, zs_json_get_string(&doc, status, "replicaVersion"), ZS_WATERMARK_MAXLEN);
		strlcpy(res->min_watermark, zs_json_get_string(&doc, status, "minWatermark"), ZS_WATERMARK_MAXLEN);
		res->replica_size = -1;
		{
			int64		size;
			int			n = zs_json_get(&doc, status, "replicaSize");

			if (n >= 0 && zs_json_int64(&doc, n, &size))
				res->replica_size = size;
		}
		conn->last_frame = (int64) zs_json_double(&doc, id);
		return send_acks(conn);
	}
}

/* ---------------------------------------------------------------- restore */

static void
remove_replica_files(const char *path)
{
	if (!zs_replica_remove_files(path, err, sizeof(err)))
		die_with(3, "%s", err);
}

/*
 * Write all of data, in as many writes as it takes: a write may take part
 * of it (a full disk, a file size limit) and only the next one says why.
 * False with errno set.
 */
static bool
write_fully(int fd, const char *data, size_t len)
{
	while (len > 0)
	{
		ssize_t		n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		if (n == 0)
		{
			/* nothing written and no errno: as PostgreSQL assumes, no space */
			errno = ENOSPC;
			return false;
		}
		data += n;
		len -= (size_t) n;
	}
	return true;
}

/*
 * Rename tmp over file and make the rename durable (the directory fsynced);
 * tmp's contents are already. Exits with the failed step's reason.
 */
static void
move_into_place(const char *tmp, const char *file)
{
	char	   *dir = pstrdup(file);
	int			fd;

	if (rename(tmp, file) != 0)
		die_with(3, "could not rename \"%s\" to \"%s\": %m", tmp, file);
	download_tmp = NULL;
	get_parent_directory(dir);
	if (dir[0] == '\0')
		strlcpy(dir, ".", 2);
	fd = open(dir, O_RDONLY);
	if (fd < 0)
		die_with(3, "could not open directory \"%s\": %m", dir);
	/* some systems cannot fsync a directory (PostgreSQL's fsync_fname) */
	if (fsync(fd) != 0 && errno != EBADF && errno != EINVAL)
		die_with(3, "could not fsync directory \"%s\": %m", dir);
	if (close(fd) != 0)
		die_with(3, "could not close directory \"%s\": %m", dir);
	pfree(dir);
}

static void
progress(double done, double total, double started, bool final)
{
	static double last = 0;
	double		now = now_seconds();
	double		rate = done / 1048576.0 / Max(now - started, 1e-6);

	if (!final && now - last < (isatty(2) ? 0.2 : PROGRESS_INTERVAL_S))
		return;
	last = now;
	if (isatty(2))
		fprintf(stderr, "\rrestoring snapshot: %.1f of %.1f MB (%3.0f%%), %.1f MB/s%s",
				done / 1048576.0, total / 1048576.0, total > 0 ? 100.0 * done / total : 100.0,
				rate, final ? "\n" : "");
	else if (!final)
		fprintf(stderr, "zero-stream-replica: restoring snapshot: %.1f of %.1f MB (%.0f%%)\n",
				done / 1048576.0, total / 1048576.0, total > 0 ? 100.0 * done / total : 100.0);
}

/* The response's status line, for messages. */
static char *
status_line(const char *head)
{
	const char *end = strchr(head, '\r');

	return pnstrdup(head, end ? end - head : strlen(head));
}

/* A header's value, or NULL. */
static char *
header_value(const char *head, const char *name)
{
	StringInfoData value;

	initStringInfo(&value);
	if (zs_client_header(head, name, &value))
		return value.data;
	pfree(value.data);
	return NULL;
}

/*
 * A download that failed on the way (the server restarted, the connection
 * broke, the backup was not ready): with transient_ok, the reason is left
 * in err and the caller tries again; otherwise it is fatal.
 */
static bool
download_failed(bool transient_ok, ZsClientConn *link, const char *fmt,...) pg_attribute_printf(3, 4);

static bool
download_failed(bool transient_ok, ZsClientConn *link, const char *fmt,...)
{
	va_list		args;
	char		reason[ZS_CLIENT_ERR_LEN];

	va_start(args, fmt);
	vsnprintf(reason, sizeof(reason), fmt, args);
	va_end(args);
	if (!transient_ok)
		die_with(2, "%s", reason);
	strlcpy(err, reason, sizeof(err));
	if (link != NULL)
		zs_client_close(link);
	if (download_tmp != NULL)
	{
		remove_replica_files(download_tmp);
		download_tmp = NULL;
	}
	return false;
}

/*
 * Download the backup replica at url into FILE: written to FILE.tmp (the
 * name litestream restores to, which zero-cache's view-syncer clears before
 * and after each restore), checked, then renamed over FILE. The file must
 * be the replica the response announces in X-Replica-Version and
 * X-Replica-Watermark, of replicaVersion expect_rv (if not NULL) and at
 * min_sv or later (if not NULL).
 *
 * Returns false, leaving no file behind, when none_ok and the server has no
 * backup to serve (404: no reservation for the task; 503: none ready or no
 * free slot), and with transient_ok when the transfer failed on the way
 * (no connection, a 502, 503 or 504 answer, a connection lost mid-body),
 * with the reason in err. Any other failure exits (2: the server or the download,
 * 3: the local file) and removes FILE.tmp.
 */
static bool
download_replica(const ZsUrl *url, const char *expect_rv, const char *min_sv,
				 bool none_ok, bool transient_ok, const char *file)
{
	/* the URL without its credentials, for messages */
	char	   *url_text = psprintf("%s://%s:%s%s", url->scheme, url->host, url->port, url->target);
	ZsClientConn link;
	int			http_status;
	StringInfoData head;
	StringInfoData body;
	char	   *value;
	char	   *served_rv;
	char	   *served_sv;
	char	   *tmp = psprintf("%s.tmp", file);
	int			fd;
	int64		length,
				done = 0;
	double		started = now_seconds();
	char		rv[ZS_WATERMARK_MAXLEN],
				sv[ZS_WATERMARK_MAXLEN];
	ZsReplica  *check;

	initStringInfo(&head);
	initStringInfo(&body);
	if (!zs_client_connect(url, &link, err))
	{
		download_failed(transient_ok, NULL, "could not download the backup from %s: %s", url_text, err);
		goto failed_on_the_way;
	}
	if (!zs_client_http_get(&link, url, url->target, &http_status, &head, &body, err))
	{
		download_failed(transient_ok, &link, "could not download the backup from %s: %s", url_text, err);
		goto failed_on_the_way;
	}
	if (http_status == 401)
		die_with(2, "the server refused the credentials for %s (HTTP 401): check the password", url_text);
	if ((http_status == 404 || http_status == 503) && none_ok)
	{
		/* the reason, if it came with the head */
		while (body.len > 0 && (body.data[body.len - 1] == '\n' || body.data[body.len - 1] == '\r'))
			body.data[--body.len] = '\0';
		note("no backup available at %s (%s%s%.200s): nothing restored",
			 url_text, status_line(head.data), body.len > 0 ? ": " : "", body.data);
		zs_client_close(&link);
		return false;
	}
	if (http_status == 502 || http_status == 503 || http_status == 504)
	{
		char	   *line = status_line(head.data);

		download_failed(transient_ok, &link, "could not download the backup from %s: %s", url_text, line);
		pfree(line);
		goto failed_on_the_way;
	}
	if (http_status != 200)
		die_with(2, "could not download the backup from %s: %s", url_text, status_line(head.data));
	value = header_value(head.data, "Content-Length");
	if (value == NULL)
		die_with(2, "the backup response from %s has no Content-Length", url_text);
	length = strtoll(value, NULL, 10);
	served_rv = header_value(head.data, "X-Replica-Version");
	served_sv = header_value(head.data, "X-Replica-Watermark");

	remove_replica_files(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		die_with(3, "could not create \"%s\": %m", tmp);
	download_tmp = tmp;
	for (;;)
	{
		if (body.len > 0)
		{
			int			n = (int) Min((int64) body.len, length - done);

			if (!write_fully(fd, body.data, n))
				die_with(3, "could not write \"%s\" after " INT64_FORMAT " of " INT64_FORMAT " bytes: %m",
						 tmp, done, length);
			done += n;
			resetStringInfo(&body);
			progress((double) done, (double) length, started, false);
		}
		if (done >= length)
			break;
		if (stop_requested)
			die_with(130, "interrupted while restoring the snapshot");
		enlargeStringInfo(&body, 1 << 20);
		{
			ssize_t		got = zs_client_read(&link, body.data, 1 << 20, err);

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
			{
				close(fd);
				if (got < 0)
					download_failed(transient_ok, &link,
									"the backup download from %s failed after " INT64_FORMAT " of " INT64_FORMAT " bytes: %s",
									url_text, done, length, err);
				else
					download_failed(transient_ok, &link,
									"the backup download from %s ended after " INT64_FORMAT " of " INT64_FORMAT " bytes",
									url_text, done, length);
				goto failed_on_the_way;
			}
			body.len = (int) got;
		}
	}
	zs_client_close(&link);
	if (fsync(fd) != 0)
		die_with(3, "could not fsync \"%s\": %m", tmp);
	if (close(fd) != 0)
		die_with(3, "could not close \"%s\": %m", tmp);
	progress((double) done, (double) length, started, true);

	/* the file must be the replica the server announced */
	check = zs_replica_open(tmp, 0, err, sizeof(err));
	if (check == NULL)
		die_with(2, "the downloaded backup is not usable: %s", err);
	if (!zs_replica_read_state(check, rv, sv))
		die_with(2, "the downloaded backup is not a replica: %s", zs_replica_error(check));
	zs_replica_close(check);
	if ((served_rv != NULL && strcmp(rv, served_rv) != 0) ||
		(served_sv != NULL && strcmp(sv, served_sv) != 0))
		die_with(2, "the downloaded backup (replicaVersion %s at %s) is not the one the server announced (%s at %s)",
				 rv, sv, served_rv ? served_rv : "?", served_sv ? served_sv : "?");
	if ((expect_rv != NULL && strcmp(rv, expect_rv) != 0) ||
		(min_sv != NULL && strcmp(sv, min_sv) < 0))
		die_with(2, "the downloaded backup (replicaVersion %s at %s) does not match the reservation (%s at %s or later)",
				 rv, sv, expect_rv ? expect_rv : "?", min_sv ? min_sv : "?");
	remove_replica_files(file);
	move_into_place(tmp, file);
	note("restored replicaVersion %s at %s into \"%s\": %.1f MB in %.2f s (%.1f MB/s)",
		 rv, sv, file, done / 1048576.0, now_seconds() - started,
		 done / 1048576.0 / Max(now_seconds() - started, 1e-6));
	pfree(head.data);
	pfree(body.data);
	return true;

	/* download_failed has reported it (transient_ok) and cleaned up the transfer */
failed_on_the_way:
	pfree(head.data);
	pfree(body.data);
	pfree(url_text);
	pfree(tmp);
	return false;
}

/*
 * Restore the reservation's backup into FILE. The backupURL's credentials
 * are those of the server URL. False, with the reason in err, if the
 * transfer failed on the way (the caller reconnects and tries again).
 */
static bool
restore(const ZsUrl *server, const Reservation *res, const char *file)
{
	ZsUrl		url;

	if (!zs_url_parse(res->backup_url, &url) || !zs_url_is_http(&url))
		die_with(2, "unsupported backupURL \"%s\"", res->backup_url);
	url.userinfo = server->userinfo;
	return download_replica(&url, res->replica_version, res->min_watermark, false, true, file);
}

/* ---------------------------------------------------------------- applying */

static void
replica_failed(ZsReplica *r, const char *what)
{
	die_with(3, "%s: %s", what, zs_replica_error(r));
}

/*
 * One downstream frame: {"id":n,"batch":[msg...]} or {"id":n,"msg":msg}.
 * Returns SYNC_RESTORE/SYNC_RECONNECT on an error message, else -1.
 *
 * A change's relation, the same in every row of a table, is not parsed
 * with the frame: the replica reads it once per table (and the parser
 * steps over the same text again by comparing it). Where the changes are
 * depends on the frame's kind, read first from its envelope.
 */
static int
apply_frame(Connection *conn, ZsReplica *r)
{
	int			id,
				batch,
				single;
	ZsStreamFrame frame;
	bool		parsed;

	if (zs_stream_frame_parse(conn->msg.payload.data, conn->msg.payload.len, &frame) &&
		frame.kind != ZS_FRAME_ACK)
		parsed = zs_json_parse_deferring_at(&doc, conn->msg.payload.data, conn->msg.payload.len,
											"relation", frame.kind == ZS_FRAME_BATCH ? 4 : 3);
	else
		parsed = zs_json_parse(&doc, conn->msg.payload.data, conn->msg.payload.len);
	if (!parsed)
		die_with(2, "invalid JSON from the server: %s", doc.error);
	if (zs_json_get(&doc, 0, "ack") >= 0)
		return -1;
	id = zs_json_get(&doc, 0, "id");
	batch = zs_json_get(&doc, 0, "batch");
	single = zs_json_get(&doc, 0, "msg");
	if (id < 0 || (batch < 0 && single < 0))
		die_with(2, "unexpected frame from the server: %.200s", conn->msg.payload.data);

	for (int m = batch >= 0 ? doc.nodes[batch].first_child : single; m >= 0;
		 m = batch >= 0 ? doc.nodes[m].next : -1)
	{
		ZsReplicaMessageResult rc = zs_replica_apply_message(r, &doc, m);
		int			type = zs_json_at(&doc, m, 0);

		if (rc == ZS_REPLICA_MESSAGE_FAILED)
			replica_failed(r, "could not apply a message");
		if (rc == ZS_REPLICA_MESSAGE_NOT_MINE && zs_json_str_eq(&doc, type, "error"))
		{
			int			body = zs_json_at(&doc, m, 1);
			int			etype = zs_json_get(&doc, body, "type");
			const char *message = zs_json_get_string(&doc, body, "message");
			int64		t = -1;

			if (etype >= 0)
				(void) zs_json_int64(&doc, etype, &t);
			note("the server ended the subscription: error type " INT64_FORMAT ": %s", t,
				 message ? message : "(no message)");
			conn->last_frame = (int64) zs_json_double(&doc, id);
			(void) send_acks(conn);
			if (t == ZS_ERR_WRONG_REPLICA_VERSION || t == ZS_ERR_WATERMARK_TOO_OLD)
				return SYNC_RESTORE;
			return SYNC_RECONNECT;
		}
		/* status messages carry nothing to apply */
	}
	conn->last_frame = (int64) zs_json_double(&doc, id);
	return -1;
}

static SyncResult
follow(Connection *conn, ZsReplica *r, const Options *opt)
{
	double		last_message = now_seconds();
	double		started = now_seconds();
	uint64		rows_at_start = zs_replica_rows_applied(r);

	for (;;)
	{
		NextResult n = next_message(conn, 1000);

		if (n == NEXT_TEXT)
		{
			int			result = apply_frame(conn, r);

			if (result >= 0)
				return (SyncResult) result;
			last_message = now_seconds();
			/* more already buffered: keep the SQLite transaction open for it */
			if (conn->reader.input.len > conn->reader.input_pos)
				continue;
		}
		/* the socket is drained: make what is applied durable, then ack it */
		if (!zs_replica_in_transaction(r) && !zs_replica_flush(r))
			replica_failed(r, "commit");
		if (!send_acks(conn))
		{
			note("%s", err);
			return SYNC_RECONNECT;
		}
		if (n == NEXT_CLOSED)
		{
			note("%s", err);
			if (!zs_replica_rollback(r))
				replica_failed(r, "rollback");
			return SYNC_RECONNECT;
		}
		if (stop_requested ||
			(opt->idle_seconds >= 0 && n == NEXT_TIMEOUT &&
			 now_seconds() - last_message >= opt->idle_seconds))
		{
			if (!zs_replica_rollback(r) || !zs_replica_flush(r))
				replica_failed(r, "rollback");
			note("stopped at stateVersion %s (" UINT64_FORMAT " rows applied in %.2f s)",
				 zs_replica_state_version(r), zs_replica_rows_applied(r) - rows_at_start,
				 now_seconds() - started);
			return SYNC_STOPPED;
		}
	}
}

/*
 * The local replica's state; false if FILE does not exist or is empty (an
 * empty SQLite file, as opening a missing path with sqlite3 leaves: nothing
 * to keep). Exits if it is not a replica.
 */
static bool
local_state(const char *file, char *rv, char *sv)
{
	struct stat st;
	ZsReplica  *r;

	if (stat(file, &st) != 0 || (S_ISREG(st.st_mode) && st.st_size == 0))
		return false;
	r = zs_replica_open(file, 0, err, sizeof(err));
	if (r == NULL)
		die_with(3, "%s", err);
	if (!zs_replica_read_state(r, rv, sv))
		die_with(3, "\"%s\": %s", file, zs_replica_error(r));
	zs_replica_close(r);
	return true;
}

/*
 * Wait before the next attempt, after a failure whose reason is in err. A
 * reason is noted the first time it comes in an outage; a server that
 * cannot be reached says so with the back-off's limit, since the attempts
 * that follow are not noted.
 */
static void
retry_later(Retry *retry, const char *server, bool unreachable)
{
	if (strcmp(err, retry->noted) != 0)
	{
		if (unreachable)
			note("server at %s not reachable (%s); retrying with back-off up to %d s",
				 server, err, RECONNECT_MAX_S);
		else
			note("%s; retrying in %d s", err, retry->backoff);
		strlcpy(retry->noted, err, sizeof(retry->noted));
	}
	/* a signal ends the sleep; the caller then sees stop_requested */
	sleep(retry->backoff);
	retry->backoff = Min(retry->backoff * 2, RECONNECT_MAX_S);
}

static int
sync_replica(const char *url_text, const char *file, const Options *opt)
{
	ZsUrl		url;
	char	   *server;			/* the URL without credentials, for notes */
	bool		first = true;
	bool		force_restore = false;
	Retry		retry = {1, ""};

	if (!zs_url_parse(url_text, &url) || !zs_url_is_websocket(&url))
		die_with(1, "not a ws:// or wss:// URL: %s", url_text);
	server = psprintf("%s://%s:%s", url.scheme, url.host, url.port);

	for (;;)
	{
		Connection conn;
		Reservation res;
		char		rv[ZS_WATERMARK_MAXLEN] = "",
					sv[ZS_WATERMARK_MAXLEN] = "";
		bool		have = local_state(file, rv, sv);
		ZsReplica  *r;
		SyncResult	result;
		StringInfoData start;

		if (stop_requested)
			return 0;
		switch (connect_subscribe(&conn, &url, opt))
		{
			case CONNECT_OK:
				break;
			case CONNECT_UNREACHABLE:
				if (stop_requested)
					return 0;
				retry_later(&retry, server, true);
				continue;
			case CONNECT_REFUSED:
				if (stop_requested)
					return 0;	/* the signal interrupted the connect */
				if (first)
					die_with(2, "%s", err);
				retry_later(&retry, server, false);
				continue;
		}
		if (!reserve(&conn, opt, &res))
		{
			if (stop_requested)
				return 0;
			/* a refusal is fatal at first, except a backup not ready yet */
			if (first && !conn.lost && strstr(err, "not ready") == NULL)
				die_with(2, "%s", err);
			disconnect(&conn);
			retry_later(&retry, server, false);
			continue;
		}
		if (!have || force_restore || strcmp(rv, res.replica_version) != 0 ||
			strcmp(sv, res.min_watermark) < 0)
		{
			if (have)
				note("replacing \"%s\" (replicaVersion %s at %s): the server has replicaVersion %s from %s",
					 file, rv, sv, res.replica_version, res.min_watermark);
			if (!restore(&url, &res, file))
			{
				/*
				 * The server went away while we downloaded: as for a lost
				 * connection, and no longer the first attempt (a refusal is
				 * retried from now on too).
				 */
				if (stop_requested)
					return 0;
				first = false;
				disconnect(&conn);
				retry_later(&retry, server, false);
				continue;
			}
			force_restore = false;
			(void) local_state(file, rv, sv);
		}

		r = zs_replica_open(file, opt->change_log ? ZS_REPLICA_LOG_CHANGES : 0, err, sizeof(err));
		if (r == NULL || !zs_replica_read_state(r, rv, sv))
			die_with(3, "%s", r ? zs_replica_error(r) : err);
		initStringInfo(&start);
		appendStringInfoString(&start, "{\"taskID\":");
		zs_json_append_cstring(&start, opt->task_id);
		appendStringInfoString(&start, ",\"id\":");
		zs_json_append_cstring(&start, opt->id);
		appendStringInfoString(&start, ",\"mode\":\"serving\",\"replicaVersion\":");
		zs_json_append_cstring(&start, rv);
		appendStringInfoString(&start, ",\"watermark\":");
		zs_json_append_cstring(&start, sv);
		appendStringInfoChar(&start, '}');
		if (!send_upstream(&conn, "start-subscription", start.data))
			result = SYNC_RECONNECT;
		else
		{
			note("following %s from %s (replicaVersion %s)", file, sv, rv);
			first = false;
			retry.backoff = 1;
			retry.noted[0] = '\0';
			result = follow(&conn, r, opt);
		}
		zs_replica_close(r);
		disconnect(&conn);
		if (result == SYNC_STOPPED)
			return 0;
		if (result == SYNC_RESTORE)
			force_restore = true;
		else
			sleep(1);
	}
}

/* ---------------------------------------------------------------- litestream restore */

/* litestream restore's flags: those taking a value, and the booleans */
static const char *const restore_value_flags[] = {
	"o", "parallelism", "config", "replica", "generation", "index", "txid", "timestamp", "ca-file", NULL
};
static const char *const restore_bool_flags[] = {
	"if-db-not-exists", "if-replica-exists", "no-expand-env", "v", "no-verify", NULL
};

static bool
flag_in(const char *name, const char *const *flags)
{
	for (int i = 0; flags[i] != NULL; i++)
	{
		if (strcmp(name, flags[i]) == 0)
			return true;
	}
	return false;
}

static void zs_noreturn
restore_usage(const char *fmt,...) pg_attribute_printf(1, 2);

static void
restore_usage(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vnote(fmt, args);
	va_end(args);
	usage();
}

/* The credentials of $ZERO_CHANGE_STREAMER_URI when it names url's server. */
static char *
change_streamer_userinfo(const ZsUrl *url)
{
	const char *uri = getenv("ZERO_CHANGE_STREAMER_URI");
	ZsUrl		cs;

	if (uri == NULL || !zs_url_parse(uri, &cs) || cs.userinfo == NULL ||
		strcmp(cs.host, url->host) != 0 || strcmp(cs.port, url->port) != 0)
		return NULL;
	return cs.userinfo;
}

/*
 * restore: litestream's restore command as zero-cache's view-syncer runs it
 * (ZERO_LITESTREAM_EXECUTABLE, services/litestream/commands.ts):
 *
 *	  restore -if-db-not-exists -if-replica-exists -parallelism N FILE
 *
 * with the backupURL of its snapshot reservation in ZERO_LITESTREAM_BACKUP_URL
 * (http://host:port/replica/<taskID> on a zero_stream server). An existing
 * FILE (with -if-db-not-exists) is left alone; no backup to serve (404 or
 * 503, with -if-replica-exists) exits 0 without creating FILE, which the
 * view-syncer takes as "retry later"; anything else that fails exits
 * non-zero and leaves no FILE. Flags are parsed like Go's flag package
 * (-name, --name, -name=value); litestream's flags that select a backup
 * (-generation, -timestamp, ...) are accepted and ignored, as the server
 * serves one backup only.
 */
static int
restore_command(int argc, char **argv)
{
	bool		if_db_not_exists = false;
	bool		if_replica_exists = false;
	bool		no_verify = false;
	const char *ca_file = NULL;
	const char *output = NULL;
	const char *url_text;
	ZsUrl		url;
	struct stat st;
	int			i;

	for (i = 2; i < argc; i++)
	{
		const char *arg = argv[i];
		const char *eq;
		const char *value;
		char	   *name;

		if (arg[0] != '-' || arg[1] == '\0')
			break;
		if (strcmp(arg, "--") == 0)
		{
			i++;
			break;
		}
		arg += arg[1] == '-' ? 2 : 1;
		eq = strchr(arg, '=');
		name = eq ? pnstrdup(arg, eq - arg) : pstrdup(arg);
		value = eq ? eq + 1 : NULL;
		if (flag_in(name, restore_bool_flags))
		{
			bool		on = true;

			if (value != NULL)
			{
				if (pg_strcasecmp(value, "true") == 0 || strcmp(value, "1") == 0 ||
					pg_strcasecmp(value, "t") == 0)
					on = true;
				else if (pg_strcasecmp(value, "false") == 0 || strcmp(value, "0") == 0 ||
						 pg_strcasecmp(value, "f") == 0)
					on = false;
				else
					restore_usage("invalid boolean value \"%s\" for -%s", value, name);
			}
			if (strcmp(name, "if-db-not-exists") == 0)
				if_db_not_exists = on;
			else if (strcmp(name, "if-replica-exists") == 0)
				if_replica_exists = on;
			else if (strcmp(name, "no-verify") == 0)
				no_verify = on;
		}
		else if (flag_in(name, restore_value_flags))
		{
			if (value == NULL)
			{
				if (i + 1 >= argc)
					restore_usage("flag needs an argument: -%s", name);
				value = argv[++i];
			}
			if (strcmp(name, "o") == 0)
				output = value;
			else if (strcmp(name, "ca-file") == 0)
				ca_file = value;
			else if (strcmp(name, "parallelism") == 0 || strcmp(name, "index") == 0)
			{
				char	   *end;

				errno = 0;
				(void) strtol(value, &end, 10);
				if (errno != 0 || *value == '\0' || *end != '\0')
					restore_usage("invalid value \"%s\" for -%s: not an integer", value, name);
			}
			else if (strcmp(name, "config") != 0)
				note("ignoring -%s %s: the server serves its current backup only", name, value);
		}
		else
			restore_usage("flag provided but not defined: -%s", name);
		pfree(name);
	}
	if (i != argc - 1)
		restore_usage(i == argc ? "restore needs the database path" : "too many arguments after the database path");

	/* restore DB_PATH, or restore -o PATH REPLICA_URL */
	if (strncmp(argv[i], "http://", 7) == 0 || strncmp(argv[i], "https://", 8) == 0)
	{
		url_text = argv[i];
		if (output == NULL)
			restore_usage("restoring from a URL needs -o PATH");
	}
	else
	{
		url_text = getenv("ZERO_LITESTREAM_BACKUP_URL");
		if (output == NULL)
			output = argv[i];
		if (url_text == NULL || url_text[0] == '\0')
			die_with(1, "ZERO_LITESTREAM_BACKUP_URL is not set: it must hold the backupURL of a snapshot reservation (http[s]://host:port/replica/<taskID>)");
	}

	if (stat(output, &st) == 0)
	{
		if (!if_db_not_exists)
			die_with(3, "\"%s\" already exists: not restoring over it", output);
		note("\"%s\" already exists: nothing to restore", output);
		return 0;
	}
	if (!zs_url_parse(url_text, &url) || !zs_url_is_http(&url))
		die_with(2, "unsupported backup URL \"%s\": expected http[s]://host:port/replica/<taskID> of a zero_stream server",
				 url_text);
	zs_client_tls_configure(ca_file, no_verify);
	if (url.userinfo == NULL)
		url.userinfo = change_streamer_userinfo(&url);
	/* restored, or no backup to restore (-if-replica-exists): either is success */
	(void) download_replica(&url, NULL, NULL, if_replica_exists, false, output);
	return 0;
}

/* ---------------------------------------------------------------- status */

static int
print_status(const char *file)
{
	char		rv[ZS_WATERMARK_MAXLEN],
				sv[ZS_WATERMARK_MAXLEN];
	ZsReplica  *r;
	sqlite3    *db;
	sqlite3_stmt *stmt;
	struct stat st;
	StringInfoData out;

	if (stat(file, &st) != 0)
		die_with(3, "\"%s\": %m", file);
	r = zs_replica_open(file, 0, err, sizeof(err));
	if (r == NULL)
		die_with(3, "%s", err);
	if (!zs_replica_read_state(r, rv, sv))
		die_with(3, "\"%s\": %s", file, zs_replica_error(r));
	db = zs_replica_db(r);
	initStringInfo(&out);
	appendStringInfo(&out, "file: %s (%.1f MB)\n", file, st.st_size / 1048576.0);
	appendStringInfo(&out, "replicaVersion: %s\n", rv);
	appendStringInfo(&out, "stateVersion: %s\n", sv);
	if (sqlite3_prepare_v2(db, "SELECT writeTimeMs FROM \"_zero.replicationState\"", -1, &stmt, NULL) == SQLITE_OK &&
		sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL)
	{
		time_t		t = (time_t) (sqlite3_column_int64(stmt, 0) / 1000);
		char		buf[64];

		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
		appendStringInfo(&out, "last write: %s\n", buf);
	}
	sqlite3_finalize(stmt);
	appendStringInfoString(&out, "tables:\n");
	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_zero.%' ESCAPE '\\' ORDER BY name",
						   -1, &stmt, NULL) != SQLITE_OK)
		die_with(3, "%s", sqlite3_errmsg(db));
	while (sqlite3_step(stmt) == SQLITE_ROW)
	{
		const char *name = (const char *) sqlite3_column_text(stmt, 0);
		char	   *sql = psprintf("SELECT count(*) FROM \"%s\"", name);
		sqlite3_stmt *count;

		if (sqlite3_prepare_v2(db, sql, -1, &count, NULL) == SQLITE_OK && sqlite3_step(count) == SQLITE_ROW)
			appendStringInfo(&out, "  %s: %lld rows\n", name, (long long) sqlite3_column_int64(count, 0));
		sqlite3_finalize(count);
		pfree(sql);
	}
	sqlite3_finalize(stmt);
	zs_replica_close(r);
	/* not through stdio, whose failure a later flush reports with a stale errno */
	if (!write_fully(STDOUT_FILENO, out.data, out.len))
		die_with(3, "could not write the status to standard output: %m");
	pfree(out.data);
	return 0;
}

int
main(int argc, char **argv)
{
	Options		opt = {"zero-stream-replica", NULL, false, -1};
	const char *ca_file = NULL;
	bool		no_verify = false;
	int			i;
	struct sigaction sa;

	if (argc < 2)
		usage();
	pg_logging_init(argv[0]);
	zs_json_doc_init(&doc);
	/* beyond a file size limit (ulimit -f) a write fails with EFBIG, and says so */
	signal(SIGXFSZ, SIG_IGN);
	if (strcmp(argv[1], "status") == 0)
	{
		if (argc != 3)
			usage();
		return print_status(argv[2]);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_stop;	/* no SA_RESTART: poll and recv return */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(argv[1], "restore") == 0)
		return restore_command(argc, argv);
	if (strcmp(argv[1], "sync") != 0)
		usage();
	for (i = 2; i < argc && argv[i][0] == '-'; i++)
	{
		if (strcmp(argv[i], "--task-id") == 0 && i + 1 < argc)
			opt.task_id = argv[++i];
		else if (strcmp(argv[i], "--id") == 0 && i + 1 < argc)
			opt.id = argv[++i];
		else if (strcmp(argv[i], "--change-log") == 0)
			opt.change_log = true;
		else if (strcmp(argv[i], "--idle") == 0 && i + 1 < argc)
			opt.idle_seconds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--ca-file") == 0 && i + 1 < argc)
			ca_file = argv[++i];
		else if (strcmp(argv[i], "--no-verify") == 0)
			no_verify = true;
		else
			usage();
	}
	zs_client_tls_configure(ca_file, no_verify);
	if (i != argc - 2)
		usage();
	if (opt.id == NULL)
		opt.id = psprintf("%s-%d", opt.task_id, (int) getpid());
	return sync_replica(argv[i], argv[i + 1], &opt);
}
