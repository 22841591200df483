/*-------------------------------------------------------------------------
 * shmem.h
 *	  The one shared-memory struct: what the workers publish for each other
 *	  and for the SQL functions, which alone turn its states into text (a
 *	  subscriber's mode also names it in zero_stream.subscriber_positions).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SHMEM_H
#define ZS_SHMEM_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#include "codec/watermark.h"
#include "compat/noreturn.h"

#define ZS_ERROR_LEN 1024
#define ZS_NAME_LEN 64

/* A server connection's kind and progress (zero_stream.subscribers()) */
typedef enum ZsSubscriberMode
{
	ZS_SUB_MODE_NONE,			/* no subscription (yet) */
	ZS_SUB_MODE_SERVING,
	ZS_SUB_MODE_BACKUP,
	ZS_SUB_MODE_SNAPSHOT		/* a snapshot reservation */
} ZsSubscriberMode;

typedef enum ZsSubscriberState
{
	ZS_SUB_CONNECTING,
	ZS_SUB_CATCHING_UP,
	ZS_SUB_LIVE,
	ZS_SUB_FAILED,				/* told an error, waiting for its ack */
	ZS_SUB_RESERVED,
	ZS_SUB_SENDING_SNAPSHOT,
	ZS_SUB_CLOSING
} ZsSubscriberState;

/* "serving", "backup", "snapshot"; NULL for none */
extern const char *zs_subscriber_mode_name(ZsSubscriberMode mode);

/* One connection of the subscriber server, as zero_stream.subscribers() shows it. */
typedef struct ZsSubscriberSlot
{
	bool		in_use;
	char		id[ZS_NAME_LEN];
	char		address[ZS_NAME_LEN];
	ZsSubscriberMode mode;
	int			protocol;
	ZsSubscriberState state;
	char		replica_version[ZS_WATERMARK_MAXLEN];	/* of its subscription or reservation */
	char		watermark_sent[ZS_WATERMARK_MAXLEN];
	char		watermark_acked[ZS_WATERMARK_MAXLEN];
	int64		messages_sent;
	int64		messages_acked;
	int64		backlog_bytes;	/* output not yet taken by the socket */
	TimestampTz connected_since;
} ZsSubscriberSlot;

/*
 * A subscriber that disconnected: the change log keeps what it needs for
 * zero_stream.subscriber_retention after it left, so that it can come back
 * without restoring (the purge floor counts it until then). The decoder
 * keeps these and the connected subscribers' positions in the table
 * zero_stream.subscriber_positions (decoder/subscriber_positions.c) and
 * reads them back after a restart or a crash: restored entries. There are
 * max_subscribers + ZS_EXTRA_DEPARTED of them, after the subscriber slots
 * (zs_departed_entries()): every connection of a restart, and then some.
 */
#define ZS_EXTRA_DEPARTED 64

typedef struct ZsDepartedSubscriber
{
	char		id[ZS_NAME_LEN];	/* subscriber id, or a reservation's task */
	ZsSubscriberMode mode;		/* serving, backup, or snapshot: a reservation */
	bool		restored;		/* read back after a restart */
	char		replica_version[ZS_WATERMARK_MAXLEN];	/* its lineage */
	char		watermark[ZS_WATERMARK_MAXLEN];
	TimestampTz departed_at;	/* 0: unused */
} ZsDepartedSubscriber;

/* The background workers, each with its slot in shared memory */
typedef enum ZsWorkerKind
{
	ZS_WORKER_DECODER,
	ZS_WORKER_SERVER,
	ZS_WORKER_REPLICATOR
} ZsWorkerKind;

#define ZS_NUM_WORKERS (ZS_WORKER_REPLICATOR + 1)

typedef struct ZsWorkerSlot
{
	int			pid;			/* 0 while not running */
	Latch	   *latch;
	uint32		starts;			/* since the postmaster started */
	char		last_error[ZS_ERROR_LEN];	/* the error it last stopped on */
	TimestampTz last_error_time;
} ZsWorkerSlot;

/* What the decoder is doing (zero_stream.status().state) */
typedef enum ZsDecoderState
{
	ZS_DECODER_NOT_STARTED,
	ZS_DECODER_STARTING,
	ZS_DECODER_WAITING_FOR_EXTENSION,
	ZS_DECODER_WAITING_FOR_UPDATE,	/* the installed SQL is one this library cannot write for */
	ZS_DECODER_CREATING_SLOT,
	ZS_DECODER_INITIAL_COPY,
	ZS_DECODER_STREAMING,
	ZS_DECODER_TAKEN_OVER,		/* another change streamer owns the log: waits for resync() */
	ZS_DECODER_STANDBY,			/* in recovery: follows the replicated log, decodes nothing */
	ZS_DECODER_FAILED			/* stopped on an error, the postmaster restarts it */
} ZsDecoderState;

#define ZS_DECODER_STATES (ZS_DECODER_FAILED + 1)

/* status().state: the one place where the decoder's state becomes text */
extern const char *zs_decoder_state_name(ZsDecoderState state);

/* Where the backup replica stands (zero_stream.status().backup_state) */
typedef enum ZsBackupState
{
	ZS_BACKUP_NOT_STARTED,
	ZS_BACKUP_WAITING_FOR_DECODER,
	ZS_BACKUP_MISSING,			/* the file does not exist */
	ZS_BACKUP_STALE,			/* of another lineage: backup_detail says which */
	ZS_BACKUP_REPLACED,			/* closed for a new initial copy */
	ZS_BACKUP_RESTORING,		/* on a standby: copying the primary's */
	ZS_BACKUP_FOLLOWING,
	ZS_BACKUP_FAILED			/* the replicator stopped on an error */
} ZsBackupState;

#define ZS_BACKUP_STATES (ZS_BACKUP_FAILED + 1)

/* status().backup_state's word for a state */
extern const char *zs_backup_state_name(ZsBackupState state);

#define ZS_LAG_REPORT_LEN 256

/* Why the decoder is to start a new lineage (decoder/resync.c takes it). */
typedef enum ZsResyncCause
{
	ZS_RESYNC_NONE,				/* nothing asked */
	ZS_RESYNC_ASKED,			/* zero_stream.resync() */
	ZS_RESYNC_FAILURE			/* a failure: the lineage cannot continue */
} ZsResyncCause;

/* What zero_stream's SQL functions ask the decoder for. */
typedef enum ZsDecoderRequest
{
	ZS_ASK_RESYNC,				/* a new lineage (zero_stream.resync()) */
	ZS_ASK_PURGE				/* a purge now (zero_stream.purge()) */
} ZsDecoderRequest;

#define ZS_SERVER_REFUSAL_KINDS 5

/*
 * The initial copy's progress: the table it copies (the table_no-th of
 * ntables) and its rows so far against the planner's estimate. table_no 0:
 * no copy runs.
 */
typedef struct ZsCopyProgress
{
	int			table_no;
	int			ntables;
	char		table[4 * NAMEDATALEN + 8];	/* schema.name, quoted where needed */
	int64		rows;
	int64		estimated;
} ZsCopyProgress;

/* A backfill's progress; rows and total once the worker has sent some. */
typedef enum ZsBackfillPhase
{
	ZS_BACKFILL_IDLE,			/* none runs */
	ZS_BACKFILL_STARTING,
	ZS_BACKFILL_SENDING
} ZsBackfillPhase;

typedef struct ZsBackfillProgress
{
	ZsBackfillPhase phase;
	char		table[4 * NAMEDATALEN + 8];	/* "schema"."name" */
	int64		rows;
	int64		total;
} ZsBackfillProgress;

/*
 * What holds the purge floor, or why nothing is purged (purge_floor.c
 * finds it and puts it into words).
 */
typedef enum ZsPurgeHolderKind
{
	ZS_HOLDER_UNKNOWN,			/* no purge has looked yet */
	ZS_HOLDER_WAITING_FOR_BACKUP,	/* the backup replica vouches once it
									 * reaches watermark (the gate) */
	ZS_HOLDER_BACKUP,			/* the backup replica */
	ZS_HOLDER_SUBSCRIBER,		/* a connected subscriber or reservation */
	ZS_HOLDER_DEPARTED,			/* one that left, still retained */
	ZS_HOLDER_NOTHING,			/* nothing vouches for a watermark */
	ZS_HOLDER_PURGE_LOCK		/* the oldest chunk is locked */
} ZsPurgeHolderKind;

typedef struct ZsPurgeHolder
{
	ZsPurgeHolderKind kind;
	ZsBackupState backup_state; /* WAITING_FOR_BACKUP, NOTHING: the backup's then */
	char		watermark[ZS_WATERMARK_MAXLEN];	/* WAITING_FOR_BACKUP: the gate */
	char		backup_watermark[ZS_WATERMARK_MAXLEN];	/* WAITING_FOR_BACKUP: where it is */
	ZsSubscriberMode mode;		/* SUBSCRIBER, DEPARTED */
	char		id[ZS_NAME_LEN];
	char		address[ZS_NAME_LEN];	/* SUBSCRIBER */
	TimestampTz departed_at;	/* DEPARTED */
	bool		restored;		/* DEPARTED: left before the restart */
	int			retention_ms;	/* DEPARTED */
} ZsPurgeHolder;

/* What holds the purge floor, in words (palloc'd); NULL when unknown. */
extern char *zs_purge_holder_text(const ZsPurgeHolder *holder);

typedef struct ZsSharedState
{
	LWLock	   *lock;

	ZsWorkerSlot workers[ZS_NUM_WORKERS];

	/* decoder */
	ZsDecoderState decoder_state;
	ZsResyncCause resync_cause; /* a new lineage asked for, and by whom */
	char		reset_reason[ZS_ERROR_LEN];	/* ZS_RESYNC_FAILURE: what failed */
	char		slot_name[NAMEDATALEN];
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		last_watermark[ZS_WATERMARK_MAXLEN];
	XLogRecPtr	confirmed_lsn;

	/* progress since the postmaster started */
	uint64		txns_stored;
	uint64		changes_stored;
	uint64		local_commits;
	TimestampTz last_store_time;	/* our last change-log commit */
	TimestampTz last_upstream_commit_time;	/* of the newest stored txn */

	ZsCopyProgress copy_progress;	/* the initial copy's */
	ZsBackfillProgress backfill_progress;	/* the running backfill's */

	/* the backup replica, kept by the replicator */
	uint32		backup_generation;	/* bumped before the decoder replaces the file */
	uint32		backup_released;	/* generation whose file the replicator closed */
	ZsBackupState backup_state;
	char		backup_detail[128];
	char		backup_watermark[ZS_WATERMARK_MAXLEN];	/* replica's stateVersion */
	uint64		backup_rows_applied;

	/* purging the change log (the decoder's) */
	bool		purge_requested;	/* zero_stream.purge() */
	uint64		purge_runs;		/* purges completed since the postmaster started */
	bool		purge_waits_for_backup; /* wake the decoder when the backup moves */
	uint64		backup_moves;	/* counts changes of backup_state and backup_watermark */
	int64		last_purge_rows;
	int64		last_purge_bytes;
	uint64		purged_rows;	/* in all */
	uint64		purged_bytes;
	TimestampTz last_purge_time;
	bool		has_purge_floor;	/* the last purge had a floor: purge_floor */
	char		purge_floor[ZS_WATERMARK_MAXLEN];
	ZsPurgeHolder purge_holder; /* what holds the floor, or why no purge */
	bool		positions_restored; /* the decoder read back the saved positions */
	char		standby_held_as[ZS_NAME_LEN];	/* standby_hold.c */
	/* this server's promotion since the postmaster started (0: none) */
	TimestampTz promoted_at;
	TimeLineID	promoted_from_timeline;

	/* values stored as text because they could not be encoded */
	uint64		value_errors;
	char		last_value_error[ZS_ERROR_LEN];
	TimestampTz last_value_error_time;

	/* the latest lag report (a lagReport JSON object) and its number */
	char		lag_report[ZS_LAG_REPORT_LEN];
	uint64		lag_report_generation;

	/* why and when the decoder last started a new lineage on its own */
	char		last_reset[ZS_ERROR_LEN];
	TimestampTz last_reset_time;
	uint64		resets;			/* how many times, since the postmaster started */

	/*
	 * the server's refusals of peers, by kind (server/peer_log.h's
	 * ZsPeerEvent: limit, authentication, handshake timeout, policy, TLS)
	 */
	uint64		server_refusals[ZS_SERVER_REFUSAL_KINDS];

	/* the decoder's most recent error, kept until its next successful store */
	char		last_error[ZS_ERROR_LEN];
	TimestampTz last_error_time;

	/*
	 * the server's connections: max_subscribers slots, then max_departed
	 * departed entries
	 */
	int			max_subscribers;
	int			max_departed;
	ZsSubscriberSlot subscribers[FLEXIBLE_ARRAY_MEMBER];
} ZsSharedState;

extern ZsSharedState *zs_shared;

/*
 * Does a connection's slot hold the purge floor at its acked watermark: a
 * subscription or a reservation that was not failed? (The floor, its saved
 * copy and a failing server's departures count the same ones.)
 */
static inline bool
zs_slot_holds_floor(const ZsSubscriberSlot *s)
{
	return s->in_use && s->mode != ZS_SUB_MODE_NONE && s->state != ZS_SUB_FAILED;
}

static inline ZsDepartedSubscriber *
zs_departed_entries(void)
{
	return (ZsDepartedSubscriber *) &zs_shared->subscribers[zs_shared->max_subscribers];
}

/*
 * The decoder's latest round of decoded rows, published before it is
 * stored, for live subscribers; zero_stream.live_buffer bytes of records,
 * the rest of a larger round in the decoder's spool file (their format is
 * live/live_round.c's). NULL when disabled.
 */
typedef struct ZsLiveRound
{
	LWLock	   *lock;
	Size		capacity;		/* bytes of data[] */
	bool		valid;			/* holds a round of this lineage */
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		after_watermark[ZS_WATERMARK_MAXLEN];	/* the last stored row */
	int64		after_pos;
	char		last_watermark[ZS_WATERMARK_MAXLEN];	/* the round's last row */
	int64		last_pos;		/* (published so far) */
	int			nrows;
	Size		used;
	uint64		round;			/* bumped by each round published */
	/* the rows that did not fit in data[]: in the decoder's spool file */
	bool		has_rest;
	char		rest_path[MAXPGPATH];	/* from the data directory */
	Size		rest_offset;	/* of the first such record in it */
	int64		rest_rows;
	char		data[FLEXIBLE_ARRAY_MEMBER];
} ZsLiveRound;

extern ZsLiveRound *zs_live;

extern void zs_shared_state_install_hooks(void);

/* For the SQL functions: an ERROR unless loaded through shared_preload_libraries. */
extern void zs_require_shared_state(void);

/*
 * Start-up shared by the workers: SIGTERM/SIGHUP handlers, the connection
 * to zero_stream.database, the application name, and the worker's pid and
 * latch in its slot, cleared again when it exits.
 */
extern void zs_worker_attach(ZsWorkerKind kind, const char *name);

/*
 * This server's timeline: where WAL is inserted on a primary, where replay
 * is on a standby.
 */
extern TimeLineID zs_current_timeline(void);

/*
 * A worker's check between two units of work, busy or idle:
 * CHECK_FOR_INTERRUPTS(), and an exit (as WL_EXIT_ON_PM_DEATH's) once the
 * postmaster has died. A loop that has more to do does not wait on its
 * latch, where the postmaster's death would otherwise be noticed, so every
 * loop of a worker calls this once per page, row or message: a worker of a
 * dead server never goes on writing (the change log, a replica file) while
 * PostgreSQL refuses to start the data directory again.
 */
extern void zs_worker_check_interrupts(void);

/*
 * In a worker's PG_CATCH: record the error in its slot (and the decoder's
 * or backup's state), then re-throw; the postmaster restarts the worker.
 */
extern void zs_worker_fail(ZsWorkerKind kind, MemoryContext context) zs_noreturn;

/*
 * Ask the decoder for something (a resync() request replaces a failure's
 * pending one), and wake it.
 * *purge_runs, if not NULL, is read under the same lock: a purge that
 * completes after it saw the request. Returns the decoder's pid; an ERROR
 * if it does not run.
 */
extern int	zs_ask_decoder(ZsDecoderRequest request, uint64 *purge_runs);

/* The worker's latch, to wake it; NULL if it is not running. */
extern Latch *zs_worker_latch(ZsWorkerKind kind);
/* Set a worker's latch, if it is running. */
extern void zs_wake_worker(ZsWorkerKind kind);

extern void zs_set_decoder_state(ZsDecoderState state);
extern void zs_set_backup_state(ZsBackupState state, const char *detail, const char *watermark);
/* The backup replica has every transaction up to watermark: rows_applied so far. */
extern void zs_set_backup_progress(const char *watermark, uint64 rows_applied);
extern void zs_set_last_error(const char *message);

/* One more refusal of a peer by the server, of that kind (< ZS_SERVER_REFUSAL_KINDS). */
extern void zs_count_server_refusal(int kind);
extern void zs_set_last_reset(const char *message);

/*
 * A failure the stream cannot get past (a streamed publication dropped):
 * the decoder's next start begins a new lineage, saying why.
 */
extern void zs_request_reset(const char *reason);
extern void zs_record_value_error(const char *message);

/*
 * After a change-log commit by the decoder: publish the new head and the
 * counts, and wake the server and the replicator, who may now read the new
 * rows. upstream_commit_time is 0 for transactions that are not upstream
 * commits (backfills).
 */
extern void zs_publish_stored(const char *head, uint64 ntxns, uint64 nchanges,
							  TimestampTz upstream_commit_time);

/*
 * On a standby: the replicated change log's lineage and head, as WAL replay
 * brought them; wakes the server and the replicator when they moved.
 */
extern void zs_publish_followed(const char *replica_version, const char *head);

/*
 * With zs_shared->lock held exclusively: a subscription of (id, mode) is
 * connected and holds its own position, so a departed or restored entry
 * of the same id and mode (an earlier connection of the same subscriber,
 * e.g. before its restart) is superseded and forgotten.
 */
extern void zs_forget_departed_locked(const char *id, ZsSubscriberMode mode);

/*
 * A subscriber (serving or backup mode) of lineage replica_version left,
 * having acked watermark; or a snapshot reservation's connection was ended
 * by the server (its failure). A restored entry keeps its departed_at. If
 * every entry is taken, the one that left first gives way (with a LOG).
 */
extern void zs_record_departed_subscriber(const char *id, ZsSubscriberMode mode,
										  const char *replica_version, const char *watermark);
extern void zs_restore_departed_subscriber(const ZsDepartedSubscriber *entry);

/* How many departed entries are retained (zs_departed_is_retained). */
extern int	zs_count_retained(int retention_ms);

/*
 * Is a departed entry still retained: of this lineage (any, if
 * replica_version is ""), left less than retention_ms ago?
 */
extern bool zs_departed_is_retained(const ZsDepartedSubscriber *d, const char *replica_version,
									TimestampTz now, int retention_ms);

#endif							/* ZS_SHMEM_H */
