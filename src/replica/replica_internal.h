/*-------------------------------------------------------------------------
 * replica_internal.h
 *	  What the files of the replica library share: the ZsReplica handle
 *	  with its statement and table caches, and the helpers each file lends
 *	  the others. Callers outside the library use replica_apply.h.
 *
 * The library (compiled into the extension, and with -DFRONTEND into
 * zero-stream-replica and the unit test) is these files:
 *   replica_sqlite.c  the SQLite side: opening the file, errors, SQL text,
 *                     the statement cache, binding JSON values, and the
 *                     transaction bracket (a SAVEPOINT per upstream
 *                     transaction inside one SQLite transaction);
 *   replica_schema.c  the "_zero.*" metadata tables, the replicated tables
 *                     and their unique indexes, and the table cache;
 *   replica_apply.c   change messages: begin/data/commit/rollback dispatch,
 *                     a change's tag, insert, update, delete and truncate,
 *                     and the changeLog2 rows they write;
 *   replica_ddl.c     schema-change messages: their dispatch, tables and
 *                     indexes; with replica_column_ddl.c (column changes)
 *                     and replica_backfill.c (backfill,
 *                     backfill-completed), which share replica_ddl.h.
 * The handle's type and the column description are replica_types.h, which
 * this header and replica_apply.h both include.
 * Every function here follows the library's rule: false (or NULL) with
 * r->error set, never a thrown error.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICA_INTERNAL_H
#define ZS_REPLICA_INTERNAL_H

#include <sqlite3.h>

#include "codec/json_read.h"
#include "codec/watermark.h"
#include "replica/replica_types.h"

#define ZS_REPLICA_STMT_CACHE_SIZE 256	/* power of two */

typedef struct CachedStmt
{
	char	   *sql;
	sqlite3_stmt *stmt;
} CachedStmt;

/*
 * The table cache: a table's columns, the columns of its unique index, and
 * the columns being backfilled ("_zero.column_metadata".backfill set), in
 * the table's column order. Forgotten after every schema change.
 */
typedef struct TableInfo
{
	char	   *name;
	int			ncols;
	int			maxcols;
	char	  **cols;
	int			nkeys;			/* columns of the first unique index */
	char	  **keys;
	int			nbackfilling;
	char	  **backfilling;

	/*
	 * The last upserted row's shape (its members in order, pointing into
	 * cols) and the INSERT OR REPLACE prepared for it, valid while
	 * upsert_generation is the statement cache's generation.
	 */
	int			nshape;
	int			maxshape;
	const char **shape;
	sqlite3_stmt *upsert;
	int			upsert_head_len;	/* its text up to " VALUES (" */
	uint32		upsert_generation;
	struct TableInfo *next;
} TableInfo;

/*
 * A run of rows for one multi-row INSERT OR REPLACE (replica_sqlite.c):
 * consecutive rows of one table and shape are written together, up to
 * maxrows a statement, when the run ends (any other statement, a full
 * run). Each value is copied, so the rows outlive the changes they came
 * from.
 */
typedef struct ZsBatchValue
{
	char		type;			/* 'n' NULL, 'i' integer, 'f' real, 't' text */
	int			len;			/* text: its length */
	int64		i;				/* integer; a run's text: its offset in the run's text */
	double		f;
} ZsBatchValue;

typedef struct ZsReplicaBatch
{
	StringInfoData head;		/* "INSERT OR REPLACE INTO t (c, ...)": the run's key */
	int			ncols;			/* values per row */
	int			nrows;			/* rows complete */
	int			nvalues;		/* values appended */
	int			maxrows;		/* rows per statement */
	int			maxvalues;
	ZsBatchValue *values;
	StringInfoData text;		/* the text values */
	StringInfoData sql;			/* scratch: the statement */
	bool		failed;			/* a run failed: everything fails until rollback */
	char		failure[512];	/* and why */
} ZsReplicaBatch;

struct ZsReplica
{
	sqlite3    *db;
	int			flags;
#ifndef FRONTEND
	MemoryContext mcxt;
#endif
	char		error[512];

	bool		in_sql_txn;		/* BEGIN IMMEDIATE issued, not yet flushed */
	bool		in_upstream_txn;	/* a SAVEPOINT is open */
	char		txn_watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;			/* changeLog2 position within the txn */
	bool		schema_changed; /* the open upstream txn changed a table */
	char		state_version[ZS_WATERMARK_MAXLEN];
	uint64		rows_applied;

	CachedStmt	stmts[ZS_REPLICA_STMT_CACHE_SIZE];
	int			nstmts;
	uint32		stmt_generation;	/* counts zs_replica_forget_statements */
	TableInfo  *tables;

	StringInfoData sql;			/* scratch */
	StringInfoData rowkey;		/* scratch */

	/* the last deferred relation read (replica_apply.c), and its table */
	StringInfoData relation_text;
	ZsJsonDoc	relation_doc;
	char	   *relation_table;
	ZsJsonDoc	change_doc;		/* a deferring change, parsed whole */
	ZsReplicaBatch batch;		/* the rows not yet written */
};

/*
 * pg_attribute_printf names the archetype PostgreSQL was configured with
 * (gnu_printf, with gcc), which clang does not know; plain printf checks
 * the same format strings.
 */
#ifdef __clang__
#define ZS_ATTRIBUTE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ZS_ATTRIBUTE_PRINTF(f, a) pg_attribute_printf(f, a)
#endif

/* replica_sqlite.c: errors, memory, SQL text */
extern bool zs_replica_set_error(ZsReplica *r, const char *fmt,...) ZS_ATTRIBUTE_PRINTF(2, 3);
extern void *zs_replica_alloc(ZsReplica *r, Size size);
extern char *zs_replica_strdup(ZsReplica *r, const char *s);
extern void zs_replica_append_quoted(StringInfo s, const char *text, char quote);
extern void zs_replica_append_member_names(StringInfo s, const ZsJsonDoc *doc, int row,
										   const char *sep);

/* An SQL identifier ("...") and an SQL string literal ('...'), quotes doubled */
static inline void
zs_replica_append_ident(StringInfo s, const char *ident)
{
	zs_replica_append_quoted(s, ident, '"');
}

static inline void
zs_replica_append_literal(StringInfo s, const char *text)
{
	zs_replica_append_quoted(s, text, '\'');
}

/* replica_sqlite.c: statements and values */
extern bool zs_replica_exec(ZsReplica *r, const char *sql);
extern sqlite3_stmt *zs_replica_statement(ZsReplica *r, const char *sql);
extern bool zs_replica_step_done(ZsReplica *r, sqlite3_stmt *stmt);
extern void zs_replica_forget_statements(ZsReplica *r);
extern void zs_replica_bind_node(sqlite3_stmt *stmt, int idx, const ZsJsonDoc *doc, int node);

/*
 * The run of rows: a row of head's statement (ncols values, appended with
 * batch_node and batch_text, then batch_end_row), after a pending run of
 * another head is written; batch_flush writes the pending run, which every
 * other statement (zs_replica_statement, zs_replica_exec, zs_replica_db)
 * does first.
 */
extern bool zs_replica_batch_row(ZsReplica *r, const char *head, int head_len, int ncols);
extern void zs_replica_batch_node(ZsReplica *r, const ZsJsonDoc *doc, int node);
extern void zs_replica_batch_text(ZsReplica *r, const char *text);
extern bool zs_replica_batch_end_row(ZsReplica *r);
extern bool zs_replica_batch_flush(ZsReplica *r);
extern int64 zs_replica_now_ms(void);

/* replica_schema.c: the table cache, tables made from rows */
extern TableInfo *zs_replica_table_info(ZsReplica *r, const char *name);
extern void zs_replica_forget_tables(ZsReplica *r);
extern bool zs_replica_table_has_column(const TableInfo *t, const char *col);
extern int	zs_replica_relation_key_columns(const ZsJsonDoc *doc, int relation,
											const char **names);
extern TableInfo *zs_replica_row_table(ZsReplica *r, const char *name, const ZsJsonDoc *doc,
									   int row, const ZsJsonDoc *kdoc, int relation);

/* replica_schema.c: declared types, typed tables, column metadata */
extern void zs_replica_append_declared_type(StringInfo s, const ZsReplicaColumn *c);
extern bool zs_replica_create_table_columns(ZsReplica *r, const char *name,
											const ZsReplicaColumn *columns, int ncolumns,
											const char *version_default);
extern void zs_replica_bind_column_metadata(sqlite3_stmt *stmt, int first,
											const ZsReplicaColumn *c);
extern bool zs_replica_insert_column_metadata(ZsReplica *r, const char *table,
											  const ZsReplicaColumn *c);

/* replica_apply.c: changeLog2 */
extern void zs_replica_append_row_key(StringInfo s, const ZsJsonDoc *doc, int n,
									  const char *const *names, const int *nodes);
extern bool zs_replica_log_reset(ZsReplica *r, const char *table);

/*
 * A change's "tag", read once (zs_replica_change_tag): the row changes
 * (replica_apply.c), then the schema changes and backfills (replica_ddl.c).
 */
typedef enum ZsReplicaChangeTag
{
	ZS_REPLICA_TAG_INSERT,
	ZS_REPLICA_TAG_UPDATE,
	ZS_REPLICA_TAG_DELETE,
	ZS_REPLICA_TAG_TRUNCATE,
	ZS_REPLICA_TAG_CREATE_TABLE,
	ZS_REPLICA_TAG_RENAME_TABLE,
	ZS_REPLICA_TAG_UPDATE_TABLE_METADATA,
	ZS_REPLICA_TAG_ADD_COLUMN,
	ZS_REPLICA_TAG_UPDATE_COLUMN,
	ZS_REPLICA_TAG_DROP_COLUMN,
	ZS_REPLICA_TAG_DROP_TABLE,
	ZS_REPLICA_TAG_CREATE_INDEX,
	ZS_REPLICA_TAG_DROP_INDEX,
	ZS_REPLICA_TAG_BACKFILL,
	ZS_REPLICA_TAG_BACKFILL_COMPLETED,
	ZS_REPLICA_TAG_UNKNOWN		/* not a tag this library applies */
} ZsReplicaChangeTag;

/* replica_apply.c: the tag of a "tag" string node */
extern ZsReplicaChangeTag zs_replica_change_tag(const ZsJsonDoc *doc, int tag);

/* replica_ddl.c: a schema change or backfill (tag from CREATE_TABLE on); false with the error */
extern bool zs_replica_apply_schema_change(ZsReplica *r, const ZsJsonDoc *doc, int change,
										   ZsReplicaChangeTag tag);

#endif							/* ZS_REPLICA_INTERNAL_H */
