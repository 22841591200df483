/*-------------------------------------------------------------------------
 * shmem.h
 *	  The one shared-memory struct: what the decoder publishes for the
 *	  status functions (and, later, for the server worker).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SHMEM_H
#define ZS_SHMEM_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#include "codec/watermark.h"

#define ZS_ERROR_LEN 1024
#define ZS_NAME_LEN 64

/* One connection of the subscriber server, as zero_stream.subscribers() shows it. */
typedef struct ZsSubscriberSlot
{
	bool		in_use;
	char		id[ZS_NAME_LEN];
	char		address[ZS_NAME_LEN];
	char		mode[16];
	int			protocol;
	char		state[16];
	char		watermark_sent[ZS_WATERMARK_MAXLEN];
	char		watermark_acked[ZS_WATERMARK_MAXLEN];
	int64		messages_sent;
	int64		messages_acked;
	int64		backlog_bytes;	/* output not yet taken by the socket */
	TimestampTz connected_since;
} ZsSubscriberSlot;

typedef struct ZsSharedState
{
	LWLock	   *lock;

	/* decoder process */
	int			decoder_pid;
	Latch	   *decoder_latch;	/* set by committing backends to wake it */
	char		decoder_state[64];
	bool		resync_requested;	/* zero_stream.resync(): start a new lineage */
	char		slot_name[NAMEDATALEN];
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		last_watermark[ZS_WATERMARK_MAXLEN];
	XLogRecPtr	confirmed_lsn;

	/* server process */
	int			server_pid;
	Latch	   *server_latch;	/* set by the decoder after each stored batch */

	/* progress since the postmaster started */
	uint64		txns_stored;
	uint64		changes_stored;
	uint64		local_commits;
	TimestampTz last_store_time;	/* our last change-log commit */
	TimestampTz last_upstream_commit_time;	/* of the newest stored txn */

	/* initial copy: "table 2 of 5, public.t: 1200 of ~5000 rows", or empty */
	char		copy_progress[256];

	/* replicator process and the backup replica */
	int			replicator_pid;
	Latch	   *replicator_latch;	/* set by the decoder after each stored batch */
	uint32		backup_generation;	/* bumped before the decoder replaces the file */
	uint32		backup_released;	/* generation whose file the replicator closed */
	char		backup_state[128];
	char		backup_watermark[ZS_WATERMARK_MAXLEN];	/* replica's stateVersion */
	uint64		backup_rows_applied;

	/* values stored as text because they could not be encoded */
	uint64		value_errors;
	char		last_value_error[ZS_ERROR_LEN];
	TimestampTz last_value_error_time;

	/* most recent error, kept until the next successful store */
	char		last_error[ZS_ERROR_LEN];
	TimestampTz last_error_time;

	/* the server's connections: max_subscribers slots */
	int			max_subscribers;
	ZsSubscriberSlot subscribers[FLEXIBLE_ARRAY_MEMBER];
} ZsSharedState;

extern ZsSharedState *zs_shared;

extern void zs_shared_state_install_hooks(void);

/* The background workers, each publishing its pid and latch here. */
typedef enum ZsWorkerKind
{
	ZS_WORKER_DECODER,
	ZS_WORKER_SERVER,
	ZS_WORKER_REPLICATOR
} ZsWorkerKind;

/*
 * Start-up shared by the workers: SIGTERM/SIGHUP handlers, the connection
 * to zero_stream.database, the application name, and the worker's pid and
 * latch in shared memory, cleared again when it exits.
 */
extern void zs_worker_attach(ZsWorkerKind kind, const char *name);
extern void zs_set_decoder_state(const char *state);
extern void zs_set_last_error(const char *message);
extern void zs_record_value_error(const char *message);

#endif							/* ZS_SHMEM_H */
