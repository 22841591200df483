/*-------------------------------------------------------------------------
 * backup_copy.h
 *	  Consistent copies of the backup replica, for subscribers that start
 *	  without a usable replica (docs/zero-protocol.md §2.5-2.6); the server
 *	  serves them under snapshot reservations (server/reservations.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_BACKUP_COPY_H
#define ZS_BACKUP_COPY_H

#include "codec/watermark.h"

/*
 * A consistent copy of the backup replica, made in steps (SQLite online
 * backup from one read transaction). start: NULL with *error on failure.
 * step: copies up to pages pages; 1 when complete, 0 if more remains, -1
 * with *error. finish: the copy as the open descriptor of an already
 * removed file, with its size, replicaVersion and stateVersion (-1 with
 * *error); it frees everything, as abort does for an unfinished copy.
 */
typedef struct ZsBackupCopy ZsBackupCopy;

extern ZsBackupCopy *zs_backup_copy_start(char **error);
extern int	zs_backup_copy_step(ZsBackupCopy *copy, int pages, char **error);
extern int	zs_backup_copy_finish(ZsBackupCopy *copy, off_t *size, char *replica_version,
								  char *watermark, char **error);
extern void zs_backup_copy_abort(ZsBackupCopy *copy);

#endif							/* ZS_BACKUP_COPY_H */
