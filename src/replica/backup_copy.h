/*-------------------------------------------------------------------------
 * backup_copy.h
 *	  Snapshot reservations and consistent copies of the backup replica,
 *	  for subscribers that start without a usable replica
 *	  (docs/zero-protocol.md §2.5-2.6).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_BACKUP_COPY_H
#define ZS_BACKUP_COPY_H

#include "lib/stringinfo.h"

#include "codec/watermark.h"

/*
 * The body of a reservation's status: {"tag":<tag>,"backupURL":...,
 * "replicaVersion":...,"minWatermark":...,"replicaSize":n}. backupURL
 * points at this server (host as the client addressed it); minWatermark is
 * the oldest watermark of the change log. The backup watermark now, where
 * a restored copy resumes, is returned in *watermark: the reservation pins
 * the change log there. Runs a short transaction of its own. False with
 * *error if there is no backup replica to serve.
 */
extern bool zs_snapshot_reserve(const char *host, const char *task_id, const char *tag,
								StringInfo body, char *watermark, char **error);

/* "/replica/<taskID>": the task, or NULL for another path */
extern char *zs_snapshot_request_task(const char *path);

/*
 * A consistent copy of the backup replica, made in steps (SQLite online
 * backup from one read transaction). start: NULL with *error on failure.
 * step: copies up to pages pages; 1 when complete, 0 if more remains, -1
 * with *error. finish: the copy as the open descriptor of an already
 * removed file, with its size, replicaVersion and stateVersion (-1 with
 * *error); it frees everything, as abort does for an unfinished copy.
 */
typedef struct ZsSnapshotCopy ZsSnapshotCopy;

extern ZsSnapshotCopy *zs_snapshot_copy_start(char **error);
extern int	zs_snapshot_copy_step(ZsSnapshotCopy *copy, int pages, char **error);
extern int	zs_snapshot_copy_finish(ZsSnapshotCopy *copy, off_t *size, char *replica_version,
									char *watermark, char **error);
extern void zs_snapshot_copy_abort(ZsSnapshotCopy *copy);

#endif							/* ZS_BACKUP_COPY_H */
