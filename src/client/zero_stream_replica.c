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
 * ZsSyncOptions of sync:
 *	  --task-id ID     reservation and subscription task (default zero-stream-replica)
 *	  --id ID          subscriber id (default <task-id>-<16 hex digits>, derived
 *	                   from the host's name and FILE's absolute path: a replica
 *	                   restarted on the same file keeps its id, so the server
 *	                   holds one position for it, not one per process)
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
 * (see litestream_restore.c); an https:// backupURL is verified as sync's
 * (-ca-file, -no-verify, or the environment).
 *
 * The tool's files: this one (main, status), replica_sync.c (sync),
 * replica_frame.c (a frame applied), subscribe_connection.c (the
 * connection), replica_download.c (a backup downloaded into place),
 * litestream_restore.c (restore), replica_cli.c (notes, exits, the shared
 * state; replica_cli.h).
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

#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/hashfn.h"
#include "common/logging.h"

#include "client/cli_options.h"
#include "client/litestream_restore.h"
#include "client/replica_cli.h"
#include "client/replica_sync.h"
#include "replica/replica_apply.h"

static void
handle_stop(int signo)
{
	zs_replica_cli_stop_requested = 1;
}

/*
 * The default subscriber id of a replica file: the task id and a hash of
 * the host's name and the file's absolute path (its folder resolved, the
 * file itself may not exist yet). The same file keeps the same id across
 * restarts and restores; another file, or the same path on another host,
 * has another.
 */
static char *
default_id(const char *task_id, const char *file)
{
	char		host[256];
	char		dir[MAXPGPATH];
	char		resolved[PATH_MAX];
	const char *slash = strrchr(file, '/');
	const char *base = slash ? slash + 1 : file;
	StringInfoData key;
	uint64		hash;

	if (gethostname(host, sizeof(host)) != 0)
		strlcpy(host, "localhost", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	if (slash == NULL)
		strlcpy(dir, ".", sizeof(dir));
	else if (slash == file)
		strlcpy(dir, "/", sizeof(dir));
	else
		strlcpy(dir, file, Min(sizeof(dir), (size_t) (slash - file) + 1));
	initStringInfo(&key);
	appendStringInfo(&key, "%s", host);
	appendStringInfoChar(&key, '\0');
	if (realpath(dir, resolved) != NULL)
		appendStringInfo(&key, "%s/%s", resolved, base);
	else if (file[0] == '/' || getcwd(resolved, sizeof(resolved)) == NULL)
		appendStringInfoString(&key, file);
	else
		appendStringInfo(&key, "%s/%s", resolved, file);
	hash = hash_bytes_extended((const unsigned char *) key.data, key.len, 0);
	pfree(key.data);
	return psprintf("%s-%08x%08x", task_id, (uint32) (hash >> 32), (uint32) hash);
}

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
		zs_replica_cli_die(3, "\"%s\": %m", file);
	r = zs_replica_open(file, 0, zs_replica_cli_err, sizeof(zs_replica_cli_err));
	if (r == NULL)
		zs_replica_cli_die(3, "%s", zs_replica_cli_err);
	if (!zs_replica_read_state(r, rv, sv))
		zs_replica_cli_die(3, "\"%s\": %s", file, zs_replica_error(r));
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
		zs_replica_cli_die(3, "%s", sqlite3_errmsg(db));
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
	if (!zs_replica_cli_write_fully(STDOUT_FILENO, out.data, out.len))
		zs_replica_cli_die(3, "could not write the status to standard output: %m");
	pfree(out.data);
	return 0;
}

int
main(int argc, char **argv)
{
	ZsSyncOptions opt = {"zero-stream-replica", NULL, false, -1};
	ZsCliTls	tls;
	int			i;
	struct sigaction sa;
	const ZsCliOption options[] = {
		{"--task-id", ZS_CLI_STRING, &opt.task_id},
		{"--id", ZS_CLI_STRING, &opt.id},
		{"--change-log", ZS_CLI_FLAG, &opt.change_log, true},
		{"--idle", ZS_CLI_INT, &opt.idle_seconds},
	};

	if (argc < 2)
		zs_replica_cli_usage();
	pg_logging_init(argv[0]);
	/* beyond a file size limit (ulimit -f) a write fails with EFBIG, and says so */
	signal(SIGXFSZ, SIG_IGN);
	if (strcmp(argv[1], "status") == 0)
	{
		if (argc != 3)
			zs_replica_cli_usage();
		return print_status(argv[2]);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_stop;	/* no SA_RESTART: poll and recv return */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(argv[1], "restore") == 0)
		return zs_litestream_restore(argc, argv);
	if (strcmp(argv[1], "sync") != 0)
		zs_replica_cli_usage();
	i = zs_cli_parse_options(argc, argv, 2, options, lengthof(options), &tls);
	if (i < 0)
		zs_replica_cli_usage();
	zs_cli_tls_configure(&tls);
	if (i != argc - 2)
		zs_replica_cli_usage();
	if (opt.id == NULL)
		opt.id = default_id(opt.task_id, argv[i + 1]);
	return zs_replica_sync(argv[i], argv[i + 1], &opt);
}
