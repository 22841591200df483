/*-------------------------------------------------------------------------
 * backup_copy.c
 *	  Consistent copies of the backup replica, which the server sends as
 *	  snapshots to the tasks holding a reservation (server/reservations.c).
 *
 * A copy is made on request with SQLite's online-backup API, a few
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

#include "miscadmin.h"
#include "storage/fd.h"

#include "replica/backup_file.h"
#include "replica/replica_apply.h"
#include "replica/backup_copy.h"

struct ZsBackupCopy
{
	sqlite3    *src;			/* holds one read transaction throughout */
	sqlite3    *dst;
	sqlite3_backup *backup;
	char	   *path;			/* the copy, removed once open */
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		watermark[ZS_WATERMARK_MAXLEN];
};

static void
remove_copy(ZsBackupCopy *copy)
{
	char		err[512];

	if (copy->path != NULL && !zs_replica_remove_files(copy->path, err, sizeof(err)))
		ereport(LOG, (errcode_for_file_access(), errmsg("%s", err)));
}

void
zs_backup_copy_abort(ZsBackupCopy *copy)
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

ZsBackupCopy *
zs_backup_copy_start(char **error)
{
	static uint32 counter = 0;
	char	   *path = zs_replica_file_path();
	ZsBackupCopy *copy;
	char		state_error[256];

	if (path == NULL)
	{
		*error = pstrdup("backups are not configured");
		return NULL;
	}
	copy = palloc0(sizeof(ZsBackupCopy));
	copy->path = psprintf("%s.snapshot.%d.%u", path, MyProcPid, ++counter);
	zs_sqlite_configure();
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
	if (sqlite3_exec(copy->src, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
	{
		*error = psprintf("could not read the backup replica: %s", sqlite3_errmsg(copy->src));
		goto fail;
	}
	if (!zs_replica_db_read_state(copy->src, copy->replica_version, copy->watermark,
								  state_error, sizeof(state_error)))
	{
		*error = psprintf("could not read the backup replica's state: %s", state_error);
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
	zs_backup_copy_abort(copy);
	pfree(copy);
	return NULL;
}

int
zs_backup_copy_step(ZsBackupCopy *copy, int pages, char **error)
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
zs_backup_copy_finish(ZsBackupCopy *copy, off_t *size, char *replica_version,
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
	zs_backup_copy_abort(copy);
	return fd;
}
