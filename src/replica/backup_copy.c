/*-------------------------------------------------------------------------
 * backup_copy.c
 *	  Snapshot reservations and consistent copies of the backup replica.
 *
 * A reservation answers "where do I restore from": a backupURL on this
 * server, the replicaVersion, and minWatermark, the oldest watermark the
 * change log still holds (zero-cache 1.9.0's meaning): a replica of the
 * same replicaVersion at or after it can catch up from the log and need not
 * restore. The reservation pins the log at the backup watermark of the
 * moment, the position a restored copy resumes from.
 *
 * The copy itself is made on request with SQLite's online-backup API, a few
 * pages per step so the server loop keeps serving meanwhile. The source
 * connection holds one read transaction from the first step to the last:
 * with the replica in WAL mode that pins one committed state while the
 * replicator goes on writing, so the copy never restarts and is never a
 * torn file. Its replicaVersion and stateVersion are read in that same
 * transaction; the stateVersion is at least the reservation's minWatermark
 * because the backup only moves forward.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "changelog/changelog.h"
#include "guc.h"
#include "replica/backup_file.h"
#include "codec/json_out.h"
#include "replica/replica_apply.h"
#include "shmem.h"
#include "spi_xact.h"
#include "replica/backup_copy.h"

#define REPLICA_PATH_PREFIX "/replica/"

/* The oldest watermark in the change log (the seed's, until purging exists). */
static void
read_log_floor(char *floor)
{
	zs_spi_xact_begin(NULL);
	zs_changelog_read_floor(floor);
	zs_spi_xact_commit();
}

bool
zs_snapshot_reserve(const char *host, const char *task_id, const char *tag,
					StringInfo body, char *watermark, char **error)
{
	char	   *path = zs_replica_file_path();
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		floor[ZS_WATERMARK_MAXLEN];
	struct stat st;
	bool		following;

	if (path == NULL)
	{
		*error = pstrdup("backups are not configured");
		return false;
	}
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	following = (zs_shared->backup_state == ZS_BACKUP_FOLLOWING);
	strlcpy(watermark, zs_shared->backup_watermark, ZS_WATERMARK_MAXLEN);
	strlcpy(replica_version, zs_shared->replica_version, sizeof(replica_version));
	LWLockRelease(zs_shared->lock);
	if (!following || watermark[0] == '\0' || stat(path, &st) != 0)
	{
		*error = pstrdup("the backup replica is not ready: it does not follow the change log yet (see zero_stream.status().backup_state)");
		return false;
	}
	read_log_floor(floor);
	if (floor[0] == '\0')
		strlcpy(floor, replica_version, sizeof(floor));

	appendStringInfoString(body, "{\"tag\":");
	zs_json_append_cstring(body, tag);
	appendStringInfoString(body, ",\"backupURL\":");
	{
		StringInfoData url;

		initStringInfo(&url);
		appendStringInfo(&url, "http://%s" REPLICA_PATH_PREFIX,
						 host ? host : psprintf("127.0.0.1:%d", zs_port));
		for (const char *p = task_id; *p; p++)
		{
			if (isalnum((unsigned char) *p) || strchr("-_.~", *p))
				appendStringInfoChar(&url, *p);
			else
				appendStringInfo(&url, "%%%02X", (unsigned char) *p);
		}
		zs_json_append_cstring(body, url.data);
	}
	appendStringInfoString(body, ",\"replicaVersion\":");
	zs_json_append_cstring(body, replica_version);
	appendStringInfoString(body, ",\"minWatermark\":");
	zs_json_append_cstring(body, floor);
	appendStringInfo(body, ",\"replicaSize\":" INT64_FORMAT "}", (int64) st.st_size);
	return true;
}

char *
zs_snapshot_request_task(const char *path)
{
	const char *p;
	StringInfoData task;

	if (strncmp(path, REPLICA_PATH_PREFIX, strlen(REPLICA_PATH_PREFIX)) != 0)
		return NULL;
	p = path + strlen(REPLICA_PATH_PREFIX);
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

struct ZsSnapshotCopy
{
	sqlite3    *src;			/* holds one read transaction throughout */
	sqlite3    *dst;
	sqlite3_backup *backup;
	char	   *path;			/* the copy, removed once open */
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		watermark[ZS_WATERMARK_MAXLEN];
};

/* replicaVersion and stateVersion, read inside the source's read transaction */
static bool
read_copy_state(sqlite3 *db, char *replica_version, char *watermark)
{
	sqlite3_stmt *stmt;
	bool		ok = false;

	if (sqlite3_prepare_v2(db, "SELECT c.replicaVersion, s.stateVersion FROM \"_zero.replicationConfig\" c, \"_zero.replicationState\" s",
						   -1, &stmt, NULL) != SQLITE_OK)
		return false;
	if (sqlite3_step(stmt) == SQLITE_ROW)
	{
		strlcpy(replica_version, (const char *) sqlite3_column_text(stmt, 0), ZS_WATERMARK_MAXLEN);
		strlcpy(watermark, (const char *) sqlite3_column_text(stmt, 1), ZS_WATERMARK_MAXLEN);
		ok = true;
	}
	sqlite3_finalize(stmt);
	return ok;
}

static void
remove_copy(ZsSnapshotCopy *copy)
{
	char		err[512];

	if (copy->path != NULL && !zs_replica_remove_files(copy->path, err, sizeof(err)))
		ereport(LOG, (errmsg("%s", err)));
}

void
zs_snapshot_copy_abort(ZsSnapshotCopy *copy)
{
	if (copy->backup != NULL)
		sqlite3_backup_finish(copy->backup);
	if (copy->dst != NULL)
		sqlite3_close(copy->dst);
	if (copy->src != NULL)
		sqlite3_close(copy->src);	/* ends the read transaction */
	copy->backup = NULL;
	copy->dst = copy->src = NULL;
	remove_copy(copy);
}

ZsSnapshotCopy *
zs_snapshot_copy_start(char **error)
{
	static uint32 counter = 0;
	char	   *path = zs_replica_file_path();
	ZsSnapshotCopy *copy;

	if (path == NULL)
	{
		*error = pstrdup("backups are not configured");
		return NULL;
	}
	copy = palloc0(sizeof(ZsSnapshotCopy));
	copy->path = psprintf("%s.snapshot.%d.%u", path, MyProcPid, ++counter);
	if (sqlite3_open_v2(path, &copy->src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
	{
		*error = psprintf("could not open the backup replica: %s", sqlite3_errmsg(copy->src));
		goto fail;
	}
	sqlite3_busy_timeout(copy->src, 10000);

	/*
	 * One read transaction for the whole copy: in WAL mode it pins a single
	 * committed state while the replicator goes on writing, so the copy can
	 * be made in steps without ever restarting or tearing.
	 */
	if (sqlite3_exec(copy->src, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
		!read_copy_state(copy->src, copy->replica_version, copy->watermark))
	{
		*error = psprintf("could not read the backup replica's state: %s", sqlite3_errmsg(copy->src));
		goto fail;
	}
	if (sqlite3_open_v2(copy->path, &copy->dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
	{
		*error = psprintf("could not create \"%s\": %s", copy->path, sqlite3_errmsg(copy->dst));
		goto fail;
	}
	copy->backup = sqlite3_backup_init(copy->dst, "main", copy->src, "main");
	if (copy->backup == NULL)
	{
		*error = psprintf("could not copy the backup replica: %s", sqlite3_errmsg(copy->dst));
		goto fail;
	}
	return copy;

fail:
	zs_snapshot_copy_abort(copy);
	pfree(copy);
	return NULL;
}

int
zs_snapshot_copy_step(ZsSnapshotCopy *copy, int pages, char **error)
{
	int			rc = sqlite3_backup_step(copy->backup, pages);

	if (rc == SQLITE_DONE)
		return 1;
	if (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		return 0;
	*error = psprintf("could not copy the backup replica: %s", sqlite3_errstr(rc));
	return -1;
}

int
zs_snapshot_copy_finish(ZsSnapshotCopy *copy, off_t *size, char *replica_version,
						char *watermark, char **error)
{
	int			fd = -1;
	struct stat st;

	sqlite3_backup_finish(copy->backup);
	copy->backup = NULL;
	if (sqlite3_close(copy->dst) != SQLITE_OK)
		*error = psprintf("could not write \"%s\": %s", copy->path, sqlite3_errmsg(copy->dst));
	else
	{
		copy->dst = NULL;
		fd = open(copy->path, O_RDONLY | PG_BINARY, 0);
		if (fd < 0 || fstat(fd, &st) != 0)
		{
			*error = psprintf("could not open \"%s\": %m", copy->path);
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
		else
			*size = st.st_size;
	}
	strlcpy(replica_version, copy->replica_version, ZS_WATERMARK_MAXLEN);
	strlcpy(watermark, copy->watermark, ZS_WATERMARK_MAXLEN);
	/* the open descriptor keeps the data; nothing is left behind on disk */
	zs_snapshot_copy_abort(copy);
	return fd;
}
