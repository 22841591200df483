/*-------------------------------------------------------------------------
 * replica_sync.c
 *	  zero-stream-replica sync: keep a SQLite replica current from a
 *	  zero_stream server (replica_sync.h).
 *
 * Each round reserves a snapshot on /replication/v7/subscribe; when FILE is
 * missing, of another replicaVersion, or older than the server's
 * minWatermark, it downloads the backup replica the reservation points at
 * (replica_download.c), then subscribes from FILE's stateVersion on the
 * same connection and applies every frame (replica_frame.c), committing to
 * SQLite when the socket is drained and acking each frame once applied. A
 * frame's commits are in SQLite before its ack, except when the frame also
 * begins a transaction that is still open when the socket drains: the ack
 * is sent anyway, because the server paces a subscriber by its acks and a
 * large transaction would otherwise stall. The file's stateVersion, not the
 * server's acked watermark, is where a restart resumes.
 *
 * A server that cannot be reached is retried with a back-off up to
 * RECONNECT_MAX_S, on the first attempt too, and so is a lost connection;
 * each reason is noted once per outage, not at every attempt. A refusal is
 * fatal on the first attempt. WrongReplicaVersion or WatermarkTooOld leads
 * to a fresh restore.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sys/stat.h>
#include <unistd.h>

#include "codec/json_out.h"
#include "client/replica_cli.h"
#include "client/replica_download.h"
#include "client/replica_frame.h"
#include "client/replica_sync.h"

#define RECONNECT_MAX_S 10

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

typedef enum ZsSyncResult
{
	SYNC_STOPPED,				/* signal or --idle: exit 0 */
	SYNC_RECONNECT,				/* connection lost: try again */
	SYNC_RESTORE				/* the server says the replica cannot continue */
} ZsSyncResult;

static void
replica_failed(ZsReplica *r, const char *what)
{
	zs_replica_cli_die(3, "%s: %s", what, zs_replica_error(r));
}

/*
 * Restore the reservation's backup into FILE. The backupURL's credentials
 * are those of the server URL. False, with the reason in zs_replica_cli_err, if the
 * transfer failed on the way (the caller reconnects and tries again).
 */
static bool
restore(const ZsUrl *server, const ZsReservation *res, const char *file)
{
	ZsUrl		url;

	if (!zs_url_parse(res->backup_url, &url) || !zs_url_is_http(&url))
		zs_replica_cli_die(2, "unsupported backupURL \"%s\"", res->backup_url);
	url.userinfo = server->userinfo;
	return zs_replica_download(&url, res->replica_version, res->min_watermark, false, true, file);
}

/*
 * Apply the subscription's frames until it ends: committing to SQLite and
 * acking when the socket is drained.
 */
static ZsSyncResult
follow(ZsSubscribeConn *conn, ZsReplica *r, const ZsSyncOptions *opt)
{
	double		last_message = zs_replica_cli_now_seconds();
	double		started = zs_replica_cli_now_seconds();
	uint64		rows_at_start = zs_replica_rows_applied(r);

	for (;;)
	{
		ZsSubscribeNext n = zs_subscribe_next(conn, 1000);

		if (n == ZS_SUBSCRIBE_TEXT)
		{
			switch (zs_replica_frame_apply(conn, r))
			{
				case ZS_REPLICA_FRAME_APPLIED:
					break;
				case ZS_REPLICA_FRAME_RECONNECT:
					return SYNC_RECONNECT;
				case ZS_REPLICA_FRAME_RESTORE:
					return SYNC_RESTORE;
			}
			last_message = zs_replica_cli_now_seconds();
			/* more already buffered: keep the SQLite transaction open for it */
			if (conn->reader.input.len > conn->reader.input_pos)
				continue;
		}
		/* the socket is drained: make what is applied durable, then ack it */
		if (!zs_replica_in_transaction(r) && !zs_replica_flush(r))
			replica_failed(r, "commit");
		if (!zs_subscribe_send_acks(conn))
		{
			zs_replica_cli_note("%s", zs_replica_cli_err);
			return SYNC_RECONNECT;
		}
		if (n == ZS_SUBSCRIBE_CLOSED)
		{
			zs_replica_cli_note("%s", zs_replica_cli_err);
			if (!zs_replica_rollback(r))
				replica_failed(r, "rollback");
			return SYNC_RECONNECT;
		}
		if (zs_replica_cli_stop_requested ||
			(opt->idle_seconds >= 0 && n == ZS_SUBSCRIBE_TIMEOUT &&
			 zs_replica_cli_now_seconds() - last_message >= opt->idle_seconds))
		{
			if (!zs_replica_rollback(r) || !zs_replica_flush(r))
				replica_failed(r, "rollback");
			zs_replica_cli_note("stopped at stateVersion %s (" UINT64_FORMAT " rows applied in %.2f s)",
								zs_replica_state_version(r), zs_replica_rows_applied(r) - rows_at_start,
								zs_replica_cli_now_seconds() - started);
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
	r = zs_replica_open(file, 0, zs_replica_cli_err, sizeof(zs_replica_cli_err));
	if (r == NULL)
		zs_replica_cli_die(3, "%s", zs_replica_cli_err);
	if (!zs_replica_read_state(r, rv, sv))
		zs_replica_cli_die(3, "\"%s\": %s", file, zs_replica_error(r));
	zs_replica_close(r);
	return true;
}

/*
 * Wait before the next attempt, after a failure whose reason is in zs_replica_cli_err. A
 * reason is noted the first time it comes in an outage; a server that
 * cannot be reached says so with the back-off's limit, since the attempts
 * that follow are not noted.
 */
static void
retry_later(Retry *retry, const char *server, bool unreachable)
{
	if (strcmp(zs_replica_cli_err, retry->noted) != 0)
	{
		if (unreachable)
			zs_replica_cli_note("server at %s not reachable (%s); retrying with back-off up to %d s",
								server, zs_replica_cli_err, RECONNECT_MAX_S);
		else
			zs_replica_cli_note("%s; retrying in %d s", zs_replica_cli_err, retry->backoff);
		strlcpy(retry->noted, zs_replica_cli_err, sizeof(retry->noted));
	}
	/* a signal ends the sleep; the caller then sees zs_replica_cli_stop_requested */
	sleep(retry->backoff);
	retry->backoff = Min(retry->backoff * 2, RECONNECT_MAX_S);
}

int
zs_replica_sync(const char *url_text, const char *file, const ZsSyncOptions *opt)
{
	ZsUrl		url;
	char	   *server;			/* the URL without credentials, for notes */
	bool		first = true;
	bool		force_restore = false;
	Retry		retry = {1, ""};

	if (!zs_url_parse(url_text, &url) || !zs_url_is_websocket(&url))
		zs_replica_cli_die(1, "not a ws:// or wss:// URL: %s", url_text);
	server = psprintf("%s://%s:%s", url.scheme, url.host, url.port);

	for (;;)
	{
		ZsSubscribeConn conn;
		ZsReservation res;
		char		rv[ZS_WATERMARK_MAXLEN] = "",
					sv[ZS_WATERMARK_MAXLEN] = "";
		bool		have = local_state(file, rv, sv);
		ZsReplica  *r;
		ZsSyncResult result;
		StringInfoData start;

		if (zs_replica_cli_stop_requested)
			return 0;
		switch (zs_subscribe_connect(&conn, &url, opt->task_id))
		{
			case ZS_SUBSCRIBE_OK:
				break;
			case ZS_SUBSCRIBE_UNREACHABLE:
				if (zs_replica_cli_stop_requested)
					return 0;
				retry_later(&retry, server, true);
				continue;
			case ZS_SUBSCRIBE_REFUSED:
				if (zs_replica_cli_stop_requested)
					return 0;	/* the signal interrupted the connect */
				if (first)
					zs_replica_cli_die(2, "%s", zs_replica_cli_err);
				retry_later(&retry, server, false);
				continue;
		}
		if (!zs_subscribe_reserve(&conn, opt->task_id, &res))
		{
			if (zs_replica_cli_stop_requested)
				return 0;
			/* a refusal is fatal at first, except a backup not ready yet */
			if (first && !conn.lost && strstr(zs_replica_cli_err, "not ready") == NULL)
				zs_replica_cli_die(2, "%s", zs_replica_cli_err);
			zs_subscribe_disconnect(&conn);
			retry_later(&retry, server, false);
			continue;
		}
		if (!have || force_restore || strcmp(rv, res.replica_version) != 0 ||
			strcmp(sv, res.min_watermark) < 0)
		{
			if (have)
				zs_replica_cli_note("replacing \"%s\" (replicaVersion %s at %s): the server has replicaVersion %s from %s",
									file, rv, sv, res.replica_version, res.min_watermark);
			if (!restore(&url, &res, file))
			{
				/*
				 * The server went away while we downloaded: as for a lost
				 * connection, and no longer the first attempt (a refusal is
				 * retried from now on too).
				 */
				if (zs_replica_cli_stop_requested)
					return 0;
				first = false;
				zs_subscribe_disconnect(&conn);
				retry_later(&retry, server, false);
				continue;
			}
			force_restore = false;
			(void) local_state(file, rv, sv);
		}

		r = zs_replica_open(file, opt->change_log ? ZS_REPLICA_LOG_CHANGES : 0, zs_replica_cli_err,
							sizeof(zs_replica_cli_err));
		if (r == NULL || !zs_replica_read_state(r, rv, sv))
			zs_replica_cli_die(3, "%s", r ? zs_replica_error(r) : zs_replica_cli_err);
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
		if (!zs_subscribe_send_upstream(&conn, "start-subscription", start.data))
			result = SYNC_RECONNECT;
		else
		{
			zs_replica_cli_note("following %s from %s (replicaVersion %s)", file, sv, rv);
			first = false;
			retry.backoff = 1;
			retry.noted[0] = '\0';
			result = follow(&conn, r, opt);
		}
		zs_replica_close(r);
		zs_subscribe_disconnect(&conn);
		if (result == SYNC_STOPPED)
			return 0;
		if (result == SYNC_RESTORE)
			force_restore = true;
		else
			sleep(1);
	}
}
