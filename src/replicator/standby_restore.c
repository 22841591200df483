/*-------------------------------------------------------------------------
 * standby_restore.c
 *	  A standby's backup replica and its primary: the copy it is rebuilt
 *	  from, and the position the primary's purge keeps for it.
 *
 * On a standby the replicator follows the replicated change log into the
 * standby's own backup replica, so that after a promotion /snapshot
 * answers at once and the purge floor has its backup. Two things only the
 * primary can give (server/standby_snapshot.c is its side):
 *  - a file to start from: the primary's backup replica, copied
 *    consistently there and read here in chunks, when the standby has
 *    none, one of another lineage, or one the primary's purge has passed
 *    (it was down longer than subscriber_retention). A file that a base
 *    backup copied along with the data directory may be torn (SQLite
 *    writes it while the backup reads), so only a file restored here is
 *    followed: a marker beside it names the inode it was restored into;
 *  - a hold on its purge floor: the position is reported about once a
 *    second, and the primary keeps it for subscriber_retention.
 * The primary is reached as PostgreSQL's slot sync worker reaches it,
 * through libpqwalreceiver with primary_conninfo, in zero_stream.database
 * (its dbname is replaced); the role needs EXECUTE on the functions.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "catalog/pg_type.h"
#include "common/file_perm.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "compat/varlena_access.h"
#include "compat/walreceiver.h"
#include "guc.h"
#include "replica/replica_apply.h"
#include "replicator/standby_restore.h"
#include "shmem.h"
#include "standby_hold.h"

/* bytes read from the primary's copy per query */
#define RESTORE_CHUNK_BYTES (8 * 1024 * 1024)

#define REPORT_INTERVAL_MS 1000
#define REPORT_WARNING_INTERVAL_MS (60 * 1000)

static WalReceiverConn *primary = NULL;

/*
 * Settings that keep a call to an unreachable or frozen primary from
 * blocking the replicator for minutes (TCP's own timeouts): before the
 * user's, so that theirs win.
 */
#define CONNECT_SETTINGS "connect_timeout=10 keepalives=1 keepalives_idle=10 " \
	"keepalives_interval=5 keepalives_count=3 tcp_user_timeout=30000"

/* "'value'" for a keyword/value conninfo string */
static void
append_conninfo_value(StringInfo buf, const char *value)
{
	appendStringInfoChar(buf, '\'');
	for (const char *p = value; *p; p++)
	{
		if (*p == '\'' || *p == '\\')
			appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '\'');
}

/* a URI query parameter's value, percent-encoded */
static void
append_uri_value(StringInfo buf, const char *value)
{
	for (const char *p = value; *p; p++)
	{
		if (isalnum((unsigned char) *p) || strchr("-_.~", *p))
			appendStringInfoChar(buf, *p);
		else
			appendStringInfo(buf, "%%%02X", (unsigned char) *p);
	}
}

/*
 * primary_conninfo in zero_stream.database (its dbname replaced: the
 * primary's zero_stream is there), with CONNECT_SETTINGS; in either of
 * libpq's forms, where a later keyword wins.
 */
static char *
primary_conninfo(void)
{
	StringInfoData conninfo;

	initStringInfo(&conninfo);
	if (strncmp(PrimaryConnInfo, "postgresql://", 13) == 0 ||
		strncmp(PrimaryConnInfo, "postgres://", 11) == 0)
	{
		char	   *settings = pstrdup(CONNECT_SETTINGS);

		for (char *p = settings; *p; p++)
			if (*p == ' ')
				*p = '&';
		appendStringInfo(&conninfo, "%s%c%s&dbname=", PrimaryConnInfo,
						 strchr(PrimaryConnInfo, '?') ? '&' : '?', settings);
		append_uri_value(&conninfo, zs_database);
	}
	else
	{
		appendStringInfo(&conninfo, CONNECT_SETTINGS " %s dbname=", PrimaryConnInfo);
		append_conninfo_value(&conninfo, zs_database);
	}
	return conninfo.data;
}

/* The connection to the primary, made if needed; NULL with *error. */
static WalReceiverConn *
connect_primary(char **error)
{
	char	   *conninfo;
	MemoryContext old;

	if (primary != NULL)
		return primary;
	if (PrimaryConnInfo == NULL || PrimaryConnInfo[0] == '\0')
	{
		*error = pstrdup("primary_conninfo is not set");
		return NULL;
	}
	load_file("libpqwalreceiver", false);
	/* the connection outlives the caller's memory (the replicator's loop resets it) */
	old = MemoryContextSwitchTo(TopMemoryContext);
	conninfo = primary_conninfo();
	primary = zs_walrcv_connect_sql(conninfo, "zero_stream replicator", error);
	pfree(conninfo);
	MemoryContextSwitchTo(old);
	return primary;
}

void
zs_standby_disconnect(void)
{
	if (primary != NULL)
		walrcv_disconnect(primary);
	primary = NULL;
}

/*
 * Run a query on the primary and hand its first row to consume (NULL: no
 * row expected). Each query is its own local transaction: turning the
 * result's text into values reads the catalogs. False with *error when the
 * primary cannot be reached or the query fails (the connection is closed
 * then); consume's errors are raised.
 */
typedef void (*RowConsumer) (TupleTableSlot *slot, void *arg);

static bool
query_primary(const char *sql, int ntypes, Oid *types, RowConsumer consume, void *arg,
			  char **error)
{
	WalRcvExecResult *res;
	bool		ok = false;
	MemoryContext caller = CurrentMemoryContext;

	if (connect_primary(error) == NULL)
		return false;
	StartTransactionCommand();
	res = walrcv_exec(primary, sql, ntypes, types);
	if (res->status != WALRCV_OK_TUPLES && res->status != WALRCV_OK_COMMAND)
		*error = pstrdup(res->err ? res->err : "no result");
	else if (consume == NULL)
		ok = true;
	else
	{
		TupleTableSlot *slot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);

		if (res->status == WALRCV_OK_TUPLES &&
			tuplestore_gettupleslot(res->tuplestore, true, false, slot))
		{
			consume(slot, arg);
			ok = true;
		}
		else
			*error = pstrdup("the query returned no row");
		ExecDropSingleTupleTableSlot(slot);
	}
	walrcv_clear_result(res);
	CommitTransactionCommand();
	MemoryContextSwitchTo(caller);
	if (!ok)
		zs_standby_disconnect();
	return ok;
}

/* marker beside the file: the device and inode it was restored into */
static char *
marker_path(const char *path)
{
	return psprintf("%s.standby", path);
}

static char *
file_identity(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return NULL;
	return psprintf("%llu %llu\n", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
}

bool
zs_standby_restore_trusted(const char *path)
{
	char	   *identity = file_identity(path);
	char		buf[128];
	int			fd;
	ssize_t		n;

	if (identity == NULL)
		return false;
	fd = open(marker_path(path), O_RDONLY | PG_BINARY, 0);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strcmp(buf, identity) == 0;
}

void
zs_standby_untrust(const char *path)
{
	char	   *marker = marker_path(path);

	if (unlink(marker) != 0 && errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not remove \"%s\": %m", marker)));
}

static void
write_file(int fd, const char *path, const char *data, Size len)
{
	while (len > 0)
	{
		ssize_t		n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write \"%s\": %m", path)));
		data += n;
		len -= n;
	}
}

static void
write_marker(const char *path)
{
	char	   *marker = marker_path(path);
	char	   *tmp = psprintf("%s.tmp", marker);
	char	   *identity = file_identity(path);
	int			fd;

	if (identity == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat \"%s\": %m", path)));
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create \"%s\": %m", tmp)));
	write_file(fd, tmp, identity, strlen(identity));
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync \"%s\": %m", tmp)));
	CloseTransientFile(fd);
	(void) durable_rename(tmp, marker, ERROR);
}

/* what backup_replica_copy() answers */
typedef struct CopyRow
{
	int64		size;
	char	   *replica_version;
	char	   *watermark;
} CopyRow;

static void
take_copy_row(TupleTableSlot *slot, void *arg)
{
	CopyRow    *row = arg;
	bool		isnull[3];
	Datum		size = slot_getattr(slot, 1, &isnull[0]);
	Datum		replica_version = slot_getattr(slot, 2, &isnull[1]);
	Datum		watermark = slot_getattr(slot, 3, &isnull[2]);

	if (isnull[0] || isnull[1] || isnull[2])
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("the primary described its copy of the backup replica with NULLs")));
	row->size = DatumGetInt64(size);
	row->replica_version = MemoryContextStrdup(TopMemoryContext, TextDatumGetCString(replica_version));
	row->watermark = MemoryContextStrdup(TopMemoryContext, TextDatumGetCString(watermark));
}

/* what backup_replica_read() answers: written to the file */
typedef struct ChunkWrite
{
	int			fd;
	const char *path;
	Size		written;
} ChunkWrite;

static void
write_chunk(TupleTableSlot *slot, void *arg)
{
	ChunkWrite *w = arg;
	bool		isnull;
	Datum		d = slot_getattr(slot, 1, &isnull);
	bytea	   *chunk;

	w->written = 0;
	if (isnull)
		return;
	chunk = DatumGetByteaPP(d);
	write_file(w->fd, w->path, VARDATA_ANY(chunk), VARSIZE_ANY_EXHDR(chunk));
	w->written = VARSIZE_ANY_EXHDR(chunk);
}

bool
zs_standby_restore(const char *path, const char *lineage, char *replica_version,
				   char *watermark, char **error)
{
	Oid			copy_types[3] = {INT8OID, TEXTOID, TEXTOID};
	Oid			read_types[1] = {BYTEAOID};
	char	   *tmp = psprintf("%s.tmp", path);
	char		err[512];
	CopyRow		copy;
	ChunkWrite	w;
	int64		done = 0;
	TimestampTz start = GetCurrentTimestamp();

	zs_set_backup_state(ZS_BACKUP_RESTORING, "copying the primary's backup replica", NULL);
	zs_standby_hold_note(zs_standby_name());
	if (!query_primary(psprintf("SELECT size, replica_version, watermark FROM zero_stream.backup_replica_copy(%s, %s)",
								quote_literal_cstr(zs_standby_name()), quote_literal_cstr(lineage)),
					   3, copy_types, take_copy_row, &copy, error))
		return false;
	if (copy.size <= 0)
	{
		*error = psprintf("the primary's copy of its backup replica has " INT64_FORMAT " bytes", copy.size);
		return false;
	}
	strlcpy(replica_version, copy.replica_version, ZS_WATERMARK_MAXLEN);
	strlcpy(watermark, copy.watermark, ZS_WATERMARK_MAXLEN);

	/* the old file's WAL must not be applied to the new one */
	if (!zs_replica_remove_files(tmp, err, sizeof(err)))
		ereport(ERROR, (errcode_for_file_access(), errmsg("%s", err)));
	w.path = tmp;
	w.written = 0;
	/* not a transient file: it outlives the transaction of each query */
	w.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY, pg_file_create_mode);
	if (w.fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create \"%s\": %m", tmp)));
	while (done < copy.size)
	{
		zs_worker_check_interrupts();
		*error = NULL;
		if (!query_primary(psprintf("SELECT zero_stream.backup_replica_read(" INT64_FORMAT ", %d)",
									done, RESTORE_CHUNK_BYTES),
						   1, read_types, write_chunk, &w, error) ||
			w.written == 0)
		{
			if (w.written == 0 && *error == NULL)
				*error = psprintf("the primary's copy of its backup replica ended at " INT64_FORMAT " of " INT64_FORMAT " bytes",
								  done, copy.size);
			else
				*error = psprintf("reading at " INT64_FORMAT " of " INT64_FORMAT " bytes: %s",
								  done, copy.size, *error);
			close(w.fd);
			(void) zs_replica_remove_files(tmp, err, sizeof(err));
			return false;
		}
		done += w.written;
		zs_set_backup_state(ZS_BACKUP_RESTORING,
							psprintf("copying the primary's backup replica: " INT64_FORMAT " of " INT64_FORMAT " MB",
									 done >> 20, copy.size >> 20),
							NULL);
	}
	if (pg_fsync(w.fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync \"%s\": %m", tmp)));
	close(w.fd);
	/* the old file's marker goes first: a new file may reuse its inode */
	zs_standby_untrust(path);
	if (!zs_replica_remove_files(path, err, sizeof(err)))
		ereport(ERROR, (errcode_for_file_access(), errmsg("%s", err)));
	(void) durable_rename(tmp, path, ERROR);
	write_marker(path);
	ereport(LOG,
			(errmsg("backup replica \"%s\" restored from the primary: replicaVersion %s at %s (" INT64_FORMAT " bytes in %.1f s)",
					path, replica_version, watermark, copy.size,
					(double) (GetCurrentTimestamp() - start) / USECS_PER_SEC)));
	pfree(copy.replica_version);
	pfree(copy.watermark);
	return true;
}

void
zs_standby_report_position(const char *replica_version, const char *watermark)
{
	static TimestampTz last_report = 0;
	static TimestampTz last_warning = 0;
	TimestampTz now = GetCurrentTimestamp();
	MemoryContext context = CurrentMemoryContext;
	char	   *volatile error = NULL;
	char	   *sql;
	volatile bool ok = false;

	if (!TimestampDifferenceExceeds(last_report, now, REPORT_INTERVAL_MS))
		return;
	last_report = now;
	/* a promotion reads the primary's hold of this name back: not ours to keep */
	zs_standby_hold_note(zs_standby_name());
	sql = psprintf("SELECT FROM zero_stream.hold_backup_position(%s, %s, %s)",
				   quote_literal_cstr(zs_standby_name()),
				   quote_literal_cstr(replica_version),
				   quote_literal_cstr(watermark));
	/* a report that fails must not stop the replica from following */
	PG_TRY();
	{
		char	   *why = NULL;

		ok = query_primary(sql, 0, NULL, NULL, NULL, &why);
		error = why;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		MemoryContextSwitchTo(context);
		zs_standby_disconnect();
		error = edata->message;
		ok = false;
	}
	PG_END_TRY();
	if (ok)
		return;
	if (TimestampDifferenceExceeds(last_warning, now, REPORT_WARNING_INTERVAL_MS))
	{
		last_warning = now;
		ereport(WARNING,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not tell the primary where this standby's backup replica is: %s", error),
				 errdetail("The primary keeps the change log for this standby's backup replica for zero_stream.subscriber_retention after the last report; "
						   "past that, the standby copies the primary's backup replica again."),
				 errhint("The standby's replicator reaches the primary with primary_conninfo, in database \"%s\"; "
						 "its role needs EXECUTE on zero_stream.hold_backup_position(text, text, text).",
						 zs_database)));
	}
}
