/*-------------------------------------------------------------------------
 * litestream_restore.h
 *	  zero-stream-replica restore: litestream's restore command, as
 *	  zero-cache's view-syncer runs it (litestream_restore.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_LITESTREAM_RESTORE_H
#define ZS_LITESTREAM_RESTORE_H

/*
 * argv[2..] are restore's flags and its database path (or -o PATH and a
 * backup URL). Returns 0 when restored, when FILE is already there
 * (-if-db-not-exists) or when there is no backup to serve
 * (-if-replica-exists); any failure exits.
 */
extern int	zs_litestream_restore(int argc, char **argv);

#endif							/* ZS_LITESTREAM_RESTORE_H */
