/*-------------------------------------------------------------------------
 * replica_sync.h
 *	  zero-stream-replica sync: restore if needed, then follow the server's
 *	  change stream into a SQLite replica until stopped (replica_sync.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICA_SYNC_H
#define ZS_REPLICA_SYNC_H

/* sync's options */
typedef struct ZsSyncOptions
{
	const char *task_id;		/* reservation and subscription task */
	const char *id;				/* subscriber id */
	bool		change_log;		/* keep "_zero.changeLog2" (a serving replica) */
	int			idle_seconds;	/* stop after so long without a message; -1: never */
} ZsSyncOptions;

/*
 * Keep FILE current from the server at url_text (ws[s]://...). Returns 0
 * once stopped by a signal or --idle; a refusal, a protocol error or an
 * unusable FILE exits (replica_cli.h).
 */
extern int	zs_replica_sync(const char *url_text, const char *file, const ZsSyncOptions *opt);

#endif							/* ZS_REPLICA_SYNC_H */
