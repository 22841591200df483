/*-------------------------------------------------------------------------
 * replica_apply.h
 *	  Apply Zero change messages to a SQLite file in zero-cache's replica
 *	  format (docs/zero-protocol.md §8): replicated tables with "_0_version",
 *	  "_zero.replicationConfig", "_zero.replicationState",
 *	  "_zero.changeLog2" and column metadata.
 *
 * Shared by the extension (initial copy, replicator worker) and the
 * zero-stream-replica client; compiles as backend or frontend code.
 * Functions return false with zs_replica_error() set instead of throwing,
 * so each caller reports in its own way.
 *
 * Transactions: every upstream transaction is a SAVEPOINT inside one SQLite
 * transaction that zs_replica_flush() commits, so a caller groups as many
 * upstream transactions per SQLite commit as it likes, and a rollback
 * abandons exactly one.
 *
 * Changes: the row changes (insert, update, delete, truncate), every
 * schema change zero-cache sends (create-table, rename-table,
 * update-table-metadata, add-column, update-column, drop-column,
 * drop-table, create-index, drop-index) and backfills (backfill,
 * backfill-completed), applied as zero-cache's replicator applies them.
 *
 * Implemented by replica_apply.c (change messages), replica_ddl.c,
 * replica_column_ddl.c and replica_backfill.c (schema changes and
 * backfills), replica_schema.c (the "_zero.*" tables, replicated tables,
 * the table cache) and replica_sqlite.c (the file, statements, values,
 * transactions), which share replica_internal.h; the handle and column
 * types are replica_types.h.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICA_APPLY_H
#define ZS_REPLICA_APPLY_H

#include "codec/json_read.h"
#include "codec/watermark.h"
#include "replica/replica_types.h"

typedef struct ZsReplicaTable
{
	const char *schema;
	const char *name;
	int			ncolumns;
	ZsReplicaColumn *columns;
	const char *key_index;		/* name of the unique index, or NULL */
	int			nkeys;
	const char **key_columns;
} ZsReplicaTable;

/* Open (or create) a replica file; NULL with err filled on failure. */
extern ZsReplica *zs_replica_open(const char *path, int flags, char *err, int errlen);
extern void zs_replica_close(ZsReplica *r);

/*
 * This process's SQLite settings, before its first connection (later
 * calls change nothing): no memory statistics, which cost a mutex and
 * counters on every allocation.
 */
extern void zs_sqlite_configure(void);

/* Remove a SQLite file and its -wal, -shm and -journal companions, if present. */
extern bool zs_replica_remove_files(const char *path, char *err, int errlen);
extern const char *zs_replica_error(const ZsReplica *r);

/* Write the "_zero.*" tables of a new replica at replicaVersion. */
extern bool zs_replica_init(ZsReplica *r, const char *replica_version,
							const char *publications_json, const char *context_json);

/*
 * Read replicaVersion and stateVersion. False (with the reason) when the
 * file is not a Zero replica, or is one that was never completed.
 */
extern bool zs_replica_read_state(ZsReplica *r, char *replica_version, char *state_version);

/*
 * The same for a file opened directly with SQLite (the snapshot copies hold
 * their own read transaction); false with the reason in error.
 */
struct sqlite3;
extern bool zs_replica_db_read_state(struct sqlite3 *db, char *replica_version,
									 char *state_version, char *error, size_t error_size);

/* The table name a replica uses: "name" for schema public, else "schema.name". */
extern char *zs_replica_table_name(const char *schema, const char *name);

extern bool zs_replica_create_table(ZsReplica *r, const ZsReplicaTable *table);

/* Upstream transactions. */
extern bool zs_replica_begin(ZsReplica *r, const char *watermark);
/*
 * A change object: doc may come from a parse that deferred its "relation"
 * (zs_json_parse_deferring for a stored change, as the replicator reads
 * it; zs_json_parse_deferring_at for a change in a frame, as
 * zero-stream-replica reads it); the relation is then read by the replica
 * and kept until a change with another relation's text.
 */
extern bool zs_replica_apply_change(ZsReplica *r, const ZsJsonDoc *doc, int change);
extern bool zs_replica_commit(ZsReplica *r, const char *watermark);
extern bool zs_replica_rollback(ZsReplica *r);

/* What zs_replica_apply_message did with a message */
typedef enum ZsReplicaMessageResult
{
	ZS_REPLICA_MESSAGE_APPLIED, /* begin, data, commit or rollback, applied */
	ZS_REPLICA_MESSAGE_NOT_MINE,	/* another type (status, error): the caller's */
	ZS_REPLICA_MESSAGE_FAILED	/* not applied: zs_replica_error() says why */
} ZsReplicaMessageResult;

/*
 * One downstream message of the change stream (docs/zero-protocol.md §2.4):
 * ["begin",{...},{"commitWatermark":w}], ["data",{...}],
 * ["commit",{...},{"watermark":w}] or ["rollback",...].
 */
extern ZsReplicaMessageResult zs_replica_apply_message(ZsReplica *r, const ZsJsonDoc *doc,
													   int message);

/* Is an upstream transaction open (begun, not yet committed or rolled back)? */
extern bool zs_replica_in_transaction(const ZsReplica *r);

/* The open upstream transaction's commit watermark (for error reports), or NULL. */
extern const char *zs_replica_transaction_watermark(const ZsReplica *r);

/* Commit the SQLite transaction holding the committed upstream transactions. */
extern bool zs_replica_flush(ZsReplica *r);

/* Last committed (flushed or not) stateVersion. */
extern const char *zs_replica_state_version(const ZsReplica *r);

/* Rows applied since open (insert/update/delete), for progress and benchmarks. */
extern uint64 zs_replica_rows_applied(const ZsReplica *r);

/* The open sqlite3 handle, for callers that read (status, backup). */
struct sqlite3;
extern struct sqlite3 *zs_replica_db(ZsReplica *r);

#endif							/* ZS_REPLICA_APPLY_H */
