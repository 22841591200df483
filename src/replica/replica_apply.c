/*-------------------------------------------------------------------------
 * replica_apply.c
 *	  Apply Zero change messages to a zero-cache-format SQLite replica.
 *
 * Semantics follow zero-cache's change processor (zero-protocol.md §8):
 *   insert   -> INSERT OR REPLACE with _0_version = the commit watermark;
 *   update   -> UPDATE the present columns WHERE the row key (the "key"
 *               object when the key changed or under REPLICA IDENTITY FULL,
 *               else the key columns of "new"), and an upsert if no row
 *               matched; columns absent from "new" (unchanged TOAST) keep
 *               their stored values;
 *   delete   -> DELETE WHERE the row key;
 *   truncate -> DELETE every row of each relation;
 *   commit   -> the watermark must equal begin's; stateVersion and
 *               writeTimeMs are set in the same SQLite transaction.
 * The row key matches the replica's unique index when the key object has
 * all of its columns (so FULL identity does not compare every column), and
 * comparisons use IS so NULLs match. Without such an index (REPLICA
 * IDENTITY FULL and no key) the table can hold identical rows, and an
 * update or delete must change exactly one of them, as upstream did: it
 * addresses the rowid of the first match,
 *   ... WHERE rowid = (SELECT rowid FROM t WHERE a IS ? AND ... LIMIT 1),
 * and an update that matched nothing inserts the new row. A column the
 * table does not have yet is added; a table that is not in the replica
 * (published after the copy) is created from the row, with its row key as
 * unique index unless the identity is FULL (every column, not a key).
 *
 * Values: numbers that are integers within int64 are stored as INTEGER
 * exactly, other numbers as REAL, booleans as 0/1, strings as TEXT, and
 * arrays and objects (arrays, bytea, ...) as their compact JSON text.
 *
 * Prepared statements are cached by their SQL text, which is determined
 * by the table and the set of columns.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#include "utils/memutils.h"
#endif

#include <sqlite3.h>
#include <sys/time.h>
#include <unistd.h>

#include "codec/json_out.h"
#include "replica/replica_apply.h"

#define STMT_CACHE_SIZE 256		/* power of two */
#define REPLICA_BUSY_TIMEOUT_MS 60000

typedef struct CachedStmt
{
	char	   *sql;
	sqlite3_stmt *stmt;
} CachedStmt;

typedef struct TableInfo
{
	char	   *name;
	int			ncols;
	int			maxcols;
	char	  **cols;
	int			nkeys;			/* columns of the first unique index */
	char	  **keys;
	struct TableInfo *next;
} TableInfo;

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
	char		state_version[ZS_WATERMARK_MAXLEN];
	uint64		rows_applied;

	CachedStmt	stmts[STMT_CACHE_SIZE];
	int			nstmts;
	TableInfo  *tables;

	StringInfoData sql;			/* scratch */
	StringInfoData rowkey;		/* scratch */
};

/* The members of a row that identify it. */
typedef struct RowKey
{
	bool		unique;			/* the columns of the table's unique index */
	int			n;
	int			nodes[ZS_MAX_KEY_COLUMNS];
	const char *names[ZS_MAX_KEY_COLUMNS];
} RowKey;

/* ---------------------------------------------------------------- basics */

static bool
set_error(ZsReplica *r, const char *fmt,...) pg_attribute_printf(2, 3);

static bool
set_error(ZsReplica *r, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, args);
	va_end(args);
	return false;
}

static bool
sqlite_error(ZsReplica *r, const char *what)
{
	return set_error(r, "%s: %s", what, sqlite3_errmsg(r->db));
}

const char *
zs_replica_error(const ZsReplica *r)
{
	return r->error;
}

struct sqlite3 *
zs_replica_db(ZsReplica *r)
{
	return r->db;
}

const char *
zs_replica_state_version(const ZsReplica *r)
{
	return r->state_version;
}

uint64
zs_replica_rows_applied(const ZsReplica *r)
{
	return r->rows_applied;
}

static void *
replica_alloc(ZsReplica *r, Size size)
{
#ifdef FRONTEND
	return palloc(size);
#else
	return MemoryContextAlloc(r->mcxt, size);
#endif
}

static char *
replica_strdup(ZsReplica *r, const char *s)
{
	size_t		len = strlen(s);
	char	   *copy = replica_alloc(r, len + 1);

	memcpy(copy, s, len + 1);
	return copy;
}

static bool
exec(ZsReplica *r, const char *sql)
{
	char	   *msg = NULL;

	if (sqlite3_exec(r->db, sql, NULL, NULL, &msg) != SQLITE_OK)
	{
		set_error(r, "%s (in: %.120s)", msg ? msg : sqlite3_errmsg(r->db), sql);
		sqlite3_free(msg);
		return false;
	}
	return true;
}

/* text between quote characters, a quote inside doubled (SQL identifiers and literals) */
static void
append_quoted(StringInfo s, const char *text, char quote)
{
	appendStringInfoChar(s, quote);
	for (const char *p = text; *p; p++)
	{
		if (*p == quote)
			appendStringInfoChar(s, quote);
		appendStringInfoChar(s, *p);
	}
	appendStringInfoChar(s, quote);
}

#define append_ident(s, ident) append_quoted((s), (ident), '"')
#define append_literal(s, text) append_quoted((s), (text), '\'')

/* the quoted member names of a row object, each followed by sep */
static void
append_member_names(StringInfo s, const ZsJsonDoc *doc, int row, const char *sep)
{
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next)
	{
		append_ident(s, zs_json_key(doc, c));
		appendStringInfoString(s, sep);
	}
}

static void
forget_statements(ZsReplica *r)
{
	for (int j = 0; j < STMT_CACHE_SIZE; j++)
		if (r->stmts[j].sql != NULL)
		{
			sqlite3_finalize(r->stmts[j].stmt);
			pfree(r->stmts[j].sql);
			r->stmts[j].sql = NULL;
		}
	r->nstmts = 0;
}

/* A prepared statement for this SQL text, from the cache or new. */
static sqlite3_stmt *
statement(ZsReplica *r, const char *sql)
{
	uint32		h = 2166136261u;
	uint32		i;

	for (const char *p = sql; *p; p++)
		h = (h ^ (unsigned char) *p) * 16777619u;
	for (i = h & (STMT_CACHE_SIZE - 1);; i = (i + 1) & (STMT_CACHE_SIZE - 1))
	{
		CachedStmt *c = &r->stmts[i];

		if (c->sql == NULL)
			break;
		if (strcmp(c->sql, sql) == 0)
		{
			sqlite3_reset(c->stmt);
			sqlite3_clear_bindings(c->stmt);
			return c->stmt;
		}
	}
	/* keep the table at most half full: start over when it fills */
	if (r->nstmts >= STMT_CACHE_SIZE / 2)
	{
		forget_statements(r);
		i = h & (STMT_CACHE_SIZE - 1);
	}
	{
		CachedStmt *c = &r->stmts[i];

		if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->stmt, NULL) != SQLITE_OK)
		{
			set_error(r, "%s (in: %.200s)", sqlite3_errmsg(r->db), sql);
			return NULL;
		}
		c->sql = replica_strdup(r, sql);
		r->nstmts++;
		return c->stmt;
	}
}

static bool
step_done(ZsReplica *r, sqlite3_stmt *stmt)
{
	int			rc = sqlite3_step(stmt);

	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
	{
		set_error(r, "%s (in: %.200s)", sqlite3_errmsg(r->db), sqlite3_sql(stmt));
		sqlite3_reset(stmt);
		return false;
	}
	sqlite3_reset(stmt);
	return true;
}

/* ---------------------------------------------------------------- open */

ZsReplica *
zs_replica_open(const char *path, int flags, char *err, int errlen)
{
	ZsReplica  *r;
	sqlite3    *db = NULL;
	int			oflags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
#ifndef FRONTEND
	MemoryContext mcxt = AllocSetContextCreate(CurrentMemoryContext, "zero_stream replica",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(mcxt);
#endif

	if (flags & ZS_REPLICA_CREATE)
		oflags |= SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(path, &db, oflags, NULL) != SQLITE_OK)
	{
		snprintf(err, errlen, "could not open SQLite file \"%s\": %s", path,
				 db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
#ifndef FRONTEND
		MemoryContextSwitchTo(old);
		MemoryContextDelete(mcxt);
#endif
		return NULL;
	}
	r = palloc0(sizeof(ZsReplica));
	r->db = db;
	r->flags = flags;
#ifndef FRONTEND
	r->mcxt = mcxt;
#endif
	initStringInfo(&r->sql);
	initStringInfo(&r->rowkey);
	sqlite3_busy_timeout(db, REPLICA_BUSY_TIMEOUT_MS);
#ifndef FRONTEND
	MemoryContextSwitchTo(old);
#endif

	/* a foreign or corrupt file fails here, on its first read */
	if (!exec(r, "PRAGMA journal_mode = WAL") ||
		!exec(r, "PRAGMA synchronous = NORMAL") ||
		!exec(r, "PRAGMA cache_size = -65536") ||
		!exec(r, "PRAGMA foreign_keys = OFF"))
	{
		snprintf(err, errlen, "could not use \"%s\" as a SQLite replica: %s", path, r->error);
		zs_replica_close(r);
		return NULL;
	}
	return r;
}

static void
forget_tables(ZsReplica *r)
{
	for (TableInfo *t = r->tables, *next; t != NULL; t = next)
	{
		next = t->next;
		for (int i = 0; i < t->ncols; i++)
			pfree(t->cols[i]);
		for (int i = 0; i < t->nkeys; i++)
			pfree(t->keys[i]);
		if (t->cols)
			pfree(t->cols);
		if (t->keys)
			pfree(t->keys);
		pfree(t->name);
		pfree(t);
	}
	r->tables = NULL;
}

void
zs_replica_close(ZsReplica *r)
{
	if (r == NULL)
		return;
	forget_statements(r);
	forget_tables(r);
	if (r->in_sql_txn)
		(void) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close_v2(r->db);
#ifdef FRONTEND
	pfree(r->sql.data);
	pfree(r->rowkey.data);
	pfree(r);
#else
	{
		MemoryContext mcxt = r->mcxt;

		pfree(r);
		MemoryContextDelete(mcxt);
	}
#endif
}

bool
zs_replica_remove_files(const char *path, char *err, int errlen)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};

	for (int i = 0; i < (int) lengthof(suffixes); i++)
	{
		char	   *file = psprintf("%s%s", path, suffixes[i]);

		if (unlink(file) != 0 && errno != ENOENT)
		{
			snprintf(err, errlen, "could not remove \"%s\": %s", file, strerror(errno));
			pfree(file);
			return false;
		}
		pfree(file);
	}
	return true;
}

/* ---------------------------------------------------------------- schema */

static const char *const replica_schema_sql =
"CREATE TABLE \"_zero.versionHistory\" ("
"  dataVersion INTEGER NOT NULL, schemaVersion INTEGER NOT NULL,"
"  minSafeVersion INTEGER NOT NULL, lock INTEGER PRIMARY KEY DEFAULT 1 CHECK (lock=1));"
"INSERT INTO \"_zero.versionHistory\" (dataVersion, schemaVersion, minSafeVersion) VALUES (13, 13, 1);"
"CREATE TABLE \"_zero.replicationConfig\" ("
"  replicaVersion TEXT NOT NULL, publications TEXT NOT NULL,"
"  initialSyncContext TEXT DEFAULT '{}', lock INTEGER PRIMARY KEY DEFAULT 1 CHECK (lock=1));"
"CREATE TABLE \"_zero.replicationState\" ("
"  stateVersion TEXT NOT NULL, writeTimeMs INTEGER,"
"  lock INTEGER PRIMARY KEY DEFAULT 1 CHECK (lock=1));"
"CREATE TABLE \"_zero.changeLog2\" ("
"  \"stateVersion\" TEXT NOT NULL, \"pos\" INT NOT NULL, \"table\" TEXT NOT NULL,"
"  \"rowKey\" TEXT NOT NULL, \"op\" TEXT NOT NULL, \"backfillingColumnVersions\" TEXT DEFAULT '{}',"
"  PRIMARY KEY(\"stateVersion\", \"pos\"), UNIQUE(\"table\", \"rowKey\"));"
"CREATE TABLE \"_zero.runtimeEvents\" ("
"  event TEXT PRIMARY KEY ON CONFLICT REPLACE, timestamp TEXT NOT NULL DEFAULT (current_timestamp));"
"INSERT INTO \"_zero.runtimeEvents\" (event) VALUES ('sync');"
"CREATE TABLE \"_zero.column_metadata\" ("
"  table_name TEXT NOT NULL, column_name TEXT NOT NULL, upstream_type TEXT NOT NULL,"
"  is_not_null INTEGER NOT NULL, is_enum INTEGER NOT NULL, is_array INTEGER NOT NULL,"
"  character_max_length INTEGER, backfill TEXT, PRIMARY KEY (table_name, column_name));"
"CREATE TABLE \"_zero.tableMetadata\" ("
"  \"schema\" TEXT NOT NULL, \"table\" TEXT NOT NULL, \"minRowVersion\" TEXT NOT NULL DEFAULT \"00\","
"  \"upstreamMetadata\" TEXT, \"metadata\" TEXT, PRIMARY KEY (\"schema\", \"table\"));";

static int64
now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

bool
zs_replica_init(ZsReplica *r, const char *replica_version,
				const char *publications_json, const char *context_json)
{
	sqlite3_stmt *stmt;

	if (!exec(r, "BEGIN IMMEDIATE"))
		return false;
	if (!exec(r, replica_schema_sql))
		goto fail;
	if ((stmt = statement(r, "INSERT INTO \"_zero.replicationConfig\" (replicaVersion, publications, initialSyncContext) VALUES (?, ?, ?)")) == NULL)
		goto fail;
	sqlite3_bind_text(stmt, 1, replica_version, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 2, publications_json, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 3, context_json, -1, SQLITE_TRANSIENT);
	if (!step_done(r, stmt))
		goto fail;
	if ((stmt = statement(r, "INSERT INTO \"_zero.replicationState\" (stateVersion, writeTimeMs) VALUES (?, ?)")) == NULL)
		goto fail;
	sqlite3_bind_text(stmt, 1, replica_version, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(stmt, 2, now_ms());
	if (!step_done(r, stmt))
		goto fail;
	if (!exec(r, "COMMIT"))
		goto fail;
	strlcpy(r->state_version, replica_version, sizeof(r->state_version));
	return true;

fail:
	(void) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
	return false;
}

bool
zs_replica_read_state(ZsReplica *r, char *replica_version, char *state_version)
{
	sqlite3_stmt *stmt;
	int			rc;

	stmt = statement(r, "SELECT c.replicaVersion, s.stateVersion FROM \"_zero.replicationConfig\" c, \"_zero.replicationState\" s");
	if (stmt == NULL)
		return set_error(r, "not a Zero replica (%s)", sqlite3_errmsg(r->db));
	rc = sqlite3_step(stmt);
	if (rc != SQLITE_ROW)
	{
		if (rc == SQLITE_DONE)
			set_error(r, "the replica has no replicationConfig/replicationState row");
		else
			sqlite_error(r, "could not read the replica's state");
		sqlite3_reset(stmt);
		return false;
	}
	strlcpy(replica_version, (const char *) sqlite3_column_text(stmt, 0), ZS_WATERMARK_MAXLEN);
	strlcpy(state_version, (const char *) sqlite3_column_text(stmt, 1), ZS_WATERMARK_MAXLEN);
	sqlite3_reset(stmt);
	strlcpy(r->state_version, state_version, sizeof(r->state_version));
	return true;
}

char *
zs_replica_table_name(const char *schema, const char *name)
{
	if (strcmp(schema, "public") == 0)
		return pstrdup(name);
	return psprintf("%s.%s", schema, name);
}

/* Columns and first unique index of a table; NULL if it does not exist. */
static TableInfo *
table_info(ZsReplica *r, const char *name)
{
	TableInfo  *t;
	sqlite3_stmt *stmt;
	char	   *index_name = NULL;

	for (t = r->tables; t != NULL; t = t->next)
		if (strcmp(t->name, name) == 0)
			return t;

	stmt = statement(r, "SELECT name FROM pragma_table_info(?)");
	if (stmt == NULL)
		return NULL;
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(stmt) == SQLITE_ROW)
	{
		if (t == NULL)
		{
			t = replica_alloc(r, sizeof(TableInfo));
			memset(t, 0, sizeof(*t));
			t->name = replica_strdup(r, name);
			t->maxcols = 16;
			t->cols = replica_alloc(r, sizeof(char *) * t->maxcols);
		}
		if (t->ncols == t->maxcols)
		{
			t->maxcols *= 2;
			t->cols = repalloc(t->cols, sizeof(char *) * t->maxcols);
		}
		t->cols[t->ncols++] = replica_strdup(r, (const char *) sqlite3_column_text(stmt, 0));
	}
	sqlite3_reset(stmt);
	if (t == NULL)
		return NULL;

	stmt = statement(r, "SELECT name FROM pragma_index_list(?) WHERE \"unique\" ORDER BY seq DESC LIMIT 1");
	if (stmt == NULL)
		return NULL;
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		index_name = pstrdup((const char *) sqlite3_column_text(stmt, 0));
	sqlite3_reset(stmt);
	if (index_name != NULL)
	{
		stmt = statement(r, "SELECT name FROM pragma_index_info(?) ORDER BY seqno");
		if (stmt == NULL)
			return NULL;
		sqlite3_bind_text(stmt, 1, index_name, -1, SQLITE_TRANSIENT);
		t->keys = replica_alloc(r, sizeof(char *) * ZS_MAX_KEY_COLUMNS);
		while (sqlite3_step(stmt) == SQLITE_ROW && t->nkeys < ZS_MAX_KEY_COLUMNS)
			t->keys[t->nkeys++] = replica_strdup(r, (const char *) sqlite3_column_text(stmt, 0));
		sqlite3_reset(stmt);
		pfree(index_name);
	}
	t->next = r->tables;
	r->tables = t;
	return t;
}

static bool
has_column(const TableInfo *t, const char *col)
{
	for (int i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i], col) == 0)
			return true;
	return false;
}

static void
add_column_info(ZsReplica *r, TableInfo *t, const char *col)
{
	if (t->ncols == t->maxcols)
	{
		t->maxcols *= 2;
		t->cols = repalloc(t->cols, sizeof(char *) * t->maxcols);
	}
	t->cols[t->ncols++] = replica_strdup(r, col);
}

static void
append_declared_type(StringInfo s, const ZsReplicaColumn *c)
{
	StringInfoData t;

	initStringInfo(&t);
	appendStringInfoString(&t, c->upstream_type);
	if (c->not_null)
		appendStringInfoString(&t, "|NOT_NULL");
	if (c->is_enum)
		appendStringInfoString(&t, "|TEXT_ENUM");
	if (c->is_array)
		appendStringInfoString(&t, "|TEXT_ARRAY");
	append_ident(s, t.data);
	pfree(t.data);
}

bool
zs_replica_create_table(ZsReplica *r, const ZsReplicaTable *table)
{
	char	   *name = zs_replica_table_name(table->schema, table->name);
	StringInfo	s = &r->sql;
	sqlite3_stmt *stmt;
	bool		ok = false;

	resetStringInfo(s);
	appendStringInfoString(s, "CREATE TABLE ");
	append_ident(s, name);
	appendStringInfoString(s, " (\n");
	for (int i = 0; i < table->ncolumns; i++)
	{
		append_ident(s, table->columns[i].name);
		appendStringInfoChar(s, ' ');
		append_declared_type(s, &table->columns[i]);
		appendStringInfoString(s, ",\n");
	}
	appendStringInfoString(s, "\"_0_version\" \"text\" DEFAULT ");
	append_literal(s, r->state_version);
	appendStringInfoString(s, "\n)");
	if (!exec(r, s->data))
		goto done;
	if (table->nkeys > 0)
	{
		resetStringInfo(s);
		appendStringInfoString(s, "CREATE UNIQUE INDEX ");
		if (table->key_index != NULL && strcmp(table->schema, "public") == 0)
			append_ident(s, table->key_index);
		else
		{
			char	   *iname = psprintf("%s.%s", table->schema,
										 table->key_index ? table->key_index : "key");

			append_ident(s, iname);
			pfree(iname);
		}
		appendStringInfoString(s, " ON ");
		append_ident(s, name);
		appendStringInfoString(s, " (");
		for (int i = 0; i < table->nkeys; i++)
		{
			if (i > 0)
				appendStringInfoChar(s, ',');
			append_ident(s, table->key_columns[i]);
			appendStringInfoString(s, " ASC");
		}
		appendStringInfoChar(s, ')');
		if (!exec(r, s->data))
			goto done;
	}
	for (int i = 0; i < table->ncolumns; i++)
	{
		const ZsReplicaColumn *c = &table->columns[i];

		stmt = statement(r, "INSERT INTO \"_zero.column_metadata\" (table_name, column_name, upstream_type, is_not_null, is_enum, is_array, character_max_length) VALUES (?, ?, ?, ?, ?, ?, ?)");
		if (stmt == NULL)
			goto done;
		sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(stmt, 2, c->name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(stmt, 3, c->upstream_type, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(stmt, 4, c->not_null);
		sqlite3_bind_int(stmt, 5, c->is_enum);
		sqlite3_bind_int(stmt, 6, c->is_array);
		if (c->char_max_length >= 0)
			sqlite3_bind_int(stmt, 7, c->char_max_length);
		if (!step_done(r, stmt))
			goto done;
	}
	ok = true;
done:
	pfree(name);
	return ok;
}

/* ---------------------------------------------------------------- values */

static void
bind_node(sqlite3_stmt *stmt, int idx, const ZsJsonDoc *doc, int node)
{
	const ZsJsonNode *n = &doc->nodes[node];
	int64		i;

	switch (n->type)
	{
		case ZS_JSON_NULL:
			sqlite3_bind_null(stmt, idx);
			break;
		case ZS_JSON_TRUE:
			sqlite3_bind_int(stmt, idx, 1);
			break;
		case ZS_JSON_FALSE:
			sqlite3_bind_int(stmt, idx, 0);
			break;
		case ZS_JSON_NUMBER:
			if (zs_json_int64(doc, node, &i))
				sqlite3_bind_int64(stmt, idx, i);
			else
				sqlite3_bind_double(stmt, idx, zs_json_double(doc, node));
			break;
		case ZS_JSON_STRING:
			sqlite3_bind_text(stmt, idx, zs_json_str(doc, node), n->str_len, SQLITE_STATIC);
			break;
		case ZS_JSON_ARRAY:
		case ZS_JSON_OBJECT:
			sqlite3_bind_text(stmt, idx, zs_json_raw(doc, node), n->raw_len, SQLITE_STATIC);
			break;
	}
}

/* ---------------------------------------------------------------- tables */

/* The relation's replica table name, from {"schema":..,"name":..}. */
static char *
relation_table(ZsReplica *r, const ZsJsonDoc *doc, int relation)
{
	int			schema = zs_json_get(doc, relation, "schema");
	int			name = zs_json_get(doc, relation, "name");

	if (schema < 0 || name < 0 ||
		doc->nodes[schema].type != ZS_JSON_STRING || doc->nodes[name].type != ZS_JSON_STRING)
	{
		set_error(r, "change has no relation schema and name");
		return NULL;
	}
	return zs_replica_table_name(zs_json_str(doc, schema), zs_json_str(doc, name));
}

/* rowKey.columns of a relation, as member names (at most ZS_MAX_KEY_COLUMNS). */
static int
relation_key_columns(const ZsJsonDoc *doc, int relation, const char **names)
{
	int			cols = zs_json_get(doc, zs_json_get(doc, relation, "rowKey"), "columns");
	int			n = 0;

	if (cols < 0 || doc->nodes[cols].type != ZS_JSON_ARRAY)
		return 0;
	for (int c = doc->nodes[cols].first_child; c >= 0 && n < ZS_MAX_KEY_COLUMNS; c = doc->nodes[c].next)
		if (doc->nodes[c].type == ZS_JSON_STRING)
			names[n++] = zs_json_str(doc, c);
	return n;
}

/*
 * The table for a row change: created from the row if missing, with any
 * column of the row it lacks added.
 */
static TableInfo *
row_table(ZsReplica *r, const char *name, const ZsJsonDoc *doc, int row,
		  const ZsJsonDoc *kdoc, int relation)
{
	TableInfo  *t = table_info(r, name);
	StringInfo	s = &r->sql;

	if (t == NULL && r->error[0] != '\0')
		return NULL;
	if (t == NULL)
	{
		const char *keys[ZS_MAX_KEY_COLUMNS];
		int			identity = zs_json_get(kdoc, zs_json_get(kdoc, relation, "rowKey"), "type");
		int			nkeys = 0;

		/* FULL identity names every column: that is no key, rows may repeat */
		if (!zs_json_str_eq(kdoc, identity, "full"))
			nkeys = relation_key_columns(kdoc, relation, keys);

		resetStringInfo(s);
		appendStringInfoString(s, "CREATE TABLE ");
		append_ident(s, name);
		appendStringInfoString(s, " (");
		append_member_names(s, doc, row, ", ");
		appendStringInfoString(s, "\"_0_version\" \"text\")");
		if (!exec(r, s->data))
			return NULL;
		if (nkeys > 0)
		{
			char	   *iname = psprintf("%s_key", name);

			resetStringInfo(s);
			appendStringInfoString(s, "CREATE UNIQUE INDEX ");
			append_ident(s, iname);
			appendStringInfoString(s, " ON ");
			append_ident(s, name);
			appendStringInfoString(s, " (");
			for (int i = 0; i < nkeys; i++)
			{
				if (i > 0)
					appendStringInfoChar(s, ',');
				append_ident(s, keys[i]);
			}
			appendStringInfoChar(s, ')');
			pfree(iname);
			if (!exec(r, s->data))
				return NULL;
		}
		if ((t = table_info(r, name)) == NULL)
		{
			set_error(r, "table \"%s\" vanished after CREATE TABLE", name);
			return NULL;
		}
		return t;
	}
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next)
	{
		const char *col = zs_json_key(doc, c);

		if (has_column(t, col))
			continue;
		resetStringInfo(s);
		appendStringInfoString(s, "ALTER TABLE ");
		append_ident(s, name);
		appendStringInfoString(s, " ADD COLUMN ");
		append_ident(s, col);
		if (!exec(r, s->data))
			return NULL;
		add_column_info(r, t, col);
		/* statements naming the table were compiled for the old shape */
		forget_statements(r);
	}
	return t;
}

/*
 * Members of obj that identify the row: the table's unique index when obj
 * has all of its columns, else the relation's rowKey columns, else every
 * member.
 */
static void
select_key(const TableInfo *t, const ZsJsonDoc *doc, int obj, int relation, RowKey *key)
{
	const char *names[ZS_MAX_KEY_COLUMNS];
	int			n;

	key->n = 0;
	key->unique = false;
	if (t->nkeys > 0)
	{
		for (n = 0; n < t->nkeys; n++)
		{
			key->nodes[n] = zs_json_get(doc, obj, t->keys[n]);
			key->names[n] = t->keys[n];
			if (key->nodes[n] < 0)
				break;
		}
		if (n == t->nkeys)
		{
			key->n = n;
			key->unique = true;
			return;
		}
	}
	n = relation_key_columns(doc, relation, names);
	for (key->n = 0; key->n < n; key->n++)
	{
		key->nodes[key->n] = zs_json_get(doc, obj, names[key->n]);
		key->names[key->n] = names[key->n];
		if (key->nodes[key->n] < 0)
			break;
	}
	if (n > 0 && key->n == n)
		return;
	key->n = 0;
	for (int c = doc->nodes[obj].first_child; c >= 0 && key->n < ZS_MAX_KEY_COLUMNS; c = doc->nodes[c].next)
	{
		key->nodes[key->n] = c;
		key->names[key->n] = zs_json_key(doc, c);
		key->n++;
	}
}

static bool
same_key(const ZsJsonDoc *doc, const RowKey *a, const RowKey *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++)
	{
		const ZsJsonNode *x = &doc->nodes[a->nodes[i]];
		const ZsJsonNode *y = &doc->nodes[b->nodes[i]];

		if (strcmp(a->names[i], b->names[i]) != 0 || x->raw_len != y->raw_len ||
			memcmp(doc->text + x->raw_start, doc->text + y->raw_start, x->raw_len) != 0)
			return false;
	}
	return true;
}

/*
 * The name that reaches SQLite's rowid in a table: "rowid", unless a
 * column of that name (in any case) hides it, then "_rowid_" or "oid";
 * NULL when columns hide all three.
 */
static const char *
rowid_name(const TableInfo *t)
{
	static const char *const aliases[] = {"rowid", "_rowid_", "oid"};

	for (int a = 0; a < (int) lengthof(aliases); a++)
	{
		bool		hidden = false;

		for (int i = 0; i < t->ncols && !hidden; i++)
			hidden = (pg_strcasecmp(t->cols[i], aliases[a]) == 0);
		if (!hidden)
			return aliases[a];
	}
	return NULL;
}

/*
 * The WHERE clause of an update or delete, the key's values bound in order
 * after any earlier parameters. A key that is not the table's unique index
 * may match several identical rows, of which exactly one is meant.
 */
static bool
append_where_key(ZsReplica *r, StringInfo s, const char *table, const TableInfo *t,
				 const RowKey *key)
{
	const char *rowid = NULL;

	if (!key->unique)
	{
		if ((rowid = rowid_name(t)) == NULL)
			return set_error(r, "table \"%s\" has columns rowid, _rowid_ and oid: "
							 "one of its identical rows cannot be addressed", table);
		appendStringInfo(s, " WHERE %s = (SELECT %s FROM ", rowid, rowid);
		append_ident(s, table);
	}
	appendStringInfoString(s, " WHERE ");
	for (int i = 0; i < key->n; i++)
	{
		if (i > 0)
			appendStringInfoString(s, " AND ");
		append_ident(s, key->names[i]);
		appendStringInfoString(s, " IS ?");
	}
	if (rowid != NULL)
		appendStringInfoString(s, " LIMIT 1)");
	return true;
}

/* changeLog2 bookkeeping of a serving replica */
static bool
log_row(ZsReplica *r, const char *table, const ZsJsonDoc *doc, const RowKey *key, const char *op)
{
	sqlite3_stmt *stmt;

	if (!(r->flags & ZS_REPLICA_LOG_CHANGES))
		return true;
	resetStringInfo(&r->rowkey);
	appendStringInfoChar(&r->rowkey, '{');
	for (int i = 0; i < key->n; i++)
	{
		const ZsJsonNode *n = &doc->nodes[key->nodes[i]];

		if (i > 0)
			appendStringInfoChar(&r->rowkey, ',');
		zs_json_append_cstring(&r->rowkey, key->names[i]);
		appendStringInfoChar(&r->rowkey, ':');
		appendBinaryStringInfo(&r->rowkey, doc->text + n->raw_start, n->raw_len);
	}
	appendStringInfoChar(&r->rowkey, '}');
	stmt = statement(r, "INSERT OR REPLACE INTO \"_zero.changeLog2\" (\"stateVersion\", \"pos\", \"table\", \"rowKey\", \"op\") VALUES (?, ?, ?, ?, ?)");
	if (stmt == NULL)
		return false;
	sqlite3_bind_text(stmt, 1, r->txn_watermark, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 2, r->pos++);
	sqlite3_bind_text(stmt, 3, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 4, r->rowkey.data, r->rowkey.len, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 5, op, -1, SQLITE_STATIC);
	return step_done(r, stmt);
}

/* INSERT OR REPLACE the members of row. */
static bool
upsert(ZsReplica *r, const char *table, const ZsJsonDoc *doc, int row)
{
	StringInfo	s = &r->sql;
	sqlite3_stmt *stmt;
	int			idx = 1;

	resetStringInfo(s);
	appendStringInfoString(s, "INSERT OR REPLACE INTO ");
	append_ident(s, table);
	appendStringInfoString(s, " (");
	append_member_names(s, doc, row, ",");
	appendStringInfoString(s, "\"_0_version\") VALUES (");
	for (int i = 0; i < doc->nodes[row].count; i++)
		appendStringInfoString(s, "?,");
	appendStringInfoString(s, "?)");
	if ((stmt = statement(r, s->data)) == NULL)
		return false;
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next)
		bind_node(stmt, idx++, doc, c);
	sqlite3_bind_text(stmt, idx, r->txn_watermark, -1, SQLITE_STATIC);
	return step_done(r, stmt);
}

static bool
apply_insert(ZsReplica *r, const ZsJsonDoc *doc, int change, int relation, const char *table)
{
	int			row = zs_json_get(doc, change, "new");
	TableInfo  *t;
	RowKey		key;

	if (row < 0 || doc->nodes[row].type != ZS_JSON_OBJECT)
		return set_error(r, "insert without a \"new\" row");
	if ((t = row_table(r, table, doc, row, doc, relation)) == NULL)
		return false;
	if (!upsert(r, table, doc, row))
		return false;
	select_key(t, doc, row, relation, &key);
	return log_row(r, table, doc, &key, "s");
}

static bool
apply_update(ZsReplica *r, const ZsJsonDoc *doc, int change, int relation, const char *table)
{
	int			row = zs_json_get(doc, change, "new");
	int			old = zs_json_get(doc, change, "key");
	StringInfo	s = &r->sql;
	TableInfo  *t;
	sqlite3_stmt *stmt;
	RowKey		key,
				new_key;
	int			idx = 1;

	if (row < 0 || doc->nodes[row].type != ZS_JSON_OBJECT)
		return set_error(r, "update without a \"new\" row");
	if ((t = row_table(r, table, doc, row, doc, relation)) == NULL)
		return false;
	if (old < 0 || doc->nodes[old].type != ZS_JSON_OBJECT)
		old = row;
	select_key(t, doc, old, relation, &key);
	if (key.n == 0)
		return set_error(r, "update of table \"%s\" without a row key", table);

	resetStringInfo(s);
	appendStringInfoString(s, "UPDATE ");
	append_ident(s, table);
	appendStringInfoString(s, " SET ");
	append_member_names(s, doc, row, " = ?,");
	appendStringInfoString(s, "\"_0_version\" = ?");
	if (!append_where_key(r, s, table, t, &key) ||
		(stmt = statement(r, s->data)) == NULL)
		return false;
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next)
		bind_node(stmt, idx++, doc, c);
	sqlite3_bind_text(stmt, idx++, r->txn_watermark, -1, SQLITE_STATIC);
	for (int i = 0; i < key.n; i++)
		bind_node(stmt, idx++, doc, key.nodes[i]);
	if (!step_done(r, stmt))
		return false;
	if (sqlite3_changes(r->db) == 0 && !upsert(r, table, doc, row))
		return false;

	if (old == row)
		return log_row(r, table, doc, &key, "s");
	/* the row moved to a new key: the old one is deleted */
	select_key(t, doc, row, relation, &new_key);
	if (!same_key(doc, &key, &new_key) && !log_row(r, table, doc, &key, "d"))
		return false;
	return log_row(r, table, doc, &new_key, "s");
}

static bool
apply_delete(ZsReplica *r, const ZsJsonDoc *doc, int change, int relation, const char *table)
{
	int			key = zs_json_get(doc, change, "key");
	StringInfo	s = &r->sql;
	TableInfo  *t;
	sqlite3_stmt *stmt;
	RowKey		rk;

	if (key < 0 || doc->nodes[key].type != ZS_JSON_OBJECT)
		return set_error(r, "delete from \"%s\" without a \"key\"", table);
	if ((t = table_info(r, table)) == NULL)
		return r->error[0] ? false : true;	/* nothing to delete */
	select_key(t, doc, key, relation, &rk);
	if (rk.n == 0)
		return set_error(r, "delete from \"%s\" with an empty key", table);
	resetStringInfo(s);
	appendStringInfoString(s, "DELETE FROM ");
	append_ident(s, table);
	if (!append_where_key(r, s, table, t, &rk) ||
		(stmt = statement(r, s->data)) == NULL)
		return false;
	for (int i = 0; i < rk.n; i++)
		bind_node(stmt, i + 1, doc, rk.nodes[i]);
	if (!step_done(r, stmt))
		return false;
	return log_row(r, table, doc, &rk, "d");
}

static bool
apply_truncate(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			rels = zs_json_get(doc, change, "relations");

	if (rels < 0 || doc->nodes[rels].type != ZS_JSON_ARRAY)
		return set_error(r, "truncate without \"relations\"");
	for (int rel = doc->nodes[rels].first_child; rel >= 0; rel = doc->nodes[rel].next)
	{
		char	   *table = relation_table(r, doc, rel);
		StringInfo	s = &r->sql;
		sqlite3_stmt *stmt;
		bool		ok = true;

		if (table == NULL)
			return false;
		if (table_info(r, table) != NULL)
		{
			resetStringInfo(s);
			appendStringInfoString(s, "DELETE FROM ");
			append_ident(s, table);
			ok = exec(r, s->data);
		}
		else if (r->error[0] != '\0')
			ok = false;
		if (ok && (r->flags & ZS_REPLICA_LOG_CHANGES))
		{
			stmt = statement(r, "DELETE FROM \"_zero.changeLog2\" WHERE \"table\" = ?");
			ok = stmt != NULL;
			if (ok)
			{
				sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
				ok = step_done(r, stmt);
			}
			if (ok)
				stmt = statement(r, "INSERT OR REPLACE INTO \"_zero.changeLog2\" (\"stateVersion\", \"pos\", \"table\", \"rowKey\", \"op\") VALUES (?, -1, ?, ?, 't')");
			ok = ok && stmt != NULL;
			if (ok)
			{
				sqlite3_bind_text(stmt, 1, r->txn_watermark, -1, SQLITE_STATIC);
				sqlite3_bind_text(stmt, 2, table, -1, SQLITE_TRANSIENT);
				sqlite3_bind_text(stmt, 3, r->txn_watermark, -1, SQLITE_STATIC);
				ok = step_done(r, stmt);
			}
		}
		pfree(table);
		if (!ok)
			return false;
	}
	return true;
}

/* ---------------------------------------------------------------- transactions */

bool
zs_replica_begin(ZsReplica *r, const char *watermark)
{
	r->error[0] = '\0';
	if (r->in_upstream_txn)
		return set_error(r, "begin %s inside the open transaction %s", watermark, r->txn_watermark);
	if (!r->in_sql_txn)
	{
		if (!exec(r, "BEGIN IMMEDIATE"))
			return false;
		r->in_sql_txn = true;
	}
	if (!exec(r, "SAVEPOINT upstream"))
		return false;
	r->in_upstream_txn = true;
	strlcpy(r->txn_watermark, watermark, sizeof(r->txn_watermark));
	r->pos = 0;
	return true;
}

bool
zs_replica_apply_change(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			tag = zs_json_get(doc, change, "tag");
	int			relation;
	char	   *table;
	bool		ok;

	r->error[0] = '\0';
	if (!r->in_upstream_txn)
		return set_error(r, "change outside a transaction");
	if (tag < 0 || doc->nodes[tag].type != ZS_JSON_STRING)
		return set_error(r, "change without a \"tag\"");
	if (zs_json_str_eq(doc, tag, "truncate"))
		return apply_truncate(r, doc, change);

	if (!zs_json_str_eq(doc, tag, "insert") && !zs_json_str_eq(doc, tag, "update") &&
		!zs_json_str_eq(doc, tag, "delete"))
		return set_error(r, "unsupported change \"%s\"", zs_json_str(doc, tag));
	relation = zs_json_get(doc, change, "relation");
	if ((table = relation_table(r, doc, relation)) == NULL)
		return false;
	if (zs_json_str_eq(doc, tag, "insert"))
		ok = apply_insert(r, doc, change, relation, table);
	else if (zs_json_str_eq(doc, tag, "update"))
		ok = apply_update(r, doc, change, relation, table);
	else
		ok = apply_delete(r, doc, change, relation, table);
	pfree(table);
	if (ok)
		r->rows_applied++;
	return ok;
}

bool
zs_replica_commit(ZsReplica *r, const char *watermark)
{
	sqlite3_stmt *stmt;

	r->error[0] = '\0';
	if (!r->in_upstream_txn)
		return set_error(r, "commit %s outside a transaction", watermark);
	if (strcmp(watermark, r->txn_watermark) != 0)
		return set_error(r, "commit watermark %s does not match begin's %s",
						 watermark, r->txn_watermark);
	stmt = statement(r, "UPDATE \"_zero.replicationState\" SET stateVersion = ?, writeTimeMs = ?");
	if (stmt == NULL)
		return false;
	sqlite3_bind_text(stmt, 1, watermark, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 2, now_ms());
	if (!step_done(r, stmt) || !exec(r, "RELEASE upstream"))
		return false;
	r->in_upstream_txn = false;
	strlcpy(r->state_version, watermark, sizeof(r->state_version));
	return true;
}

bool
zs_replica_rollback(ZsReplica *r)
{
	r->error[0] = '\0';
	if (!r->in_upstream_txn)
		return true;
	/* the caches may describe tables or columns this transaction added */
	forget_statements(r);
	forget_tables(r);
	if (!exec(r, "ROLLBACK TO upstream") || !exec(r, "RELEASE upstream"))
		return false;
	r->in_upstream_txn = false;
	return true;
}

int
zs_replica_apply_message(ZsReplica *r, const ZsJsonDoc *doc, int message)
{
	int			type = zs_json_at(doc, message, 0);
	int			body = zs_json_at(doc, message, 1);
	int			extra = zs_json_at(doc, message, 2);
	const char *watermark;

	if (zs_json_str_eq(doc, type, "data"))
		return zs_replica_apply_change(r, doc, body) ? 1 : -1;
	if (zs_json_str_eq(doc, type, "begin"))
	{
		if ((watermark = zs_json_get_string(doc, extra, "commitWatermark")) == NULL)
			return set_error(r, "begin without a commitWatermark") ? 1 : -1;
		return zs_replica_begin(r, watermark) ? 1 : -1;
	}
	if (zs_json_str_eq(doc, type, "commit"))
	{
		if ((watermark = zs_json_get_string(doc, extra, "watermark")) == NULL)
			return set_error(r, "commit without a watermark") ? 1 : -1;
		return zs_replica_commit(r, watermark) ? 1 : -1;
	}
	if (zs_json_str_eq(doc, type, "rollback"))
		return zs_replica_rollback(r) ? 1 : -1;
	return 0;
}

bool
zs_replica_in_transaction(const ZsReplica *r)
{
	return r->in_upstream_txn;
}

bool
zs_replica_flush(ZsReplica *r)
{
	r->error[0] = '\0';
	if (r->in_upstream_txn)
		return set_error(r, "flush inside the open transaction %s", r->txn_watermark);
	if (!r->in_sql_txn)
		return true;
	if (!exec(r, "COMMIT"))
		return false;
	r->in_sql_txn = false;
	return true;
}
