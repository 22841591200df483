/*-------------------------------------------------------------------------
 * replica_sqlite.c
 *	  The SQLite side of a replica: opening the file, errors, SQL text, the
 *	  prepared-statement cache, binding JSON values to statements, and the
 *	  transaction bracket.
 *
 * The file is opened in WAL mode with synchronous = NORMAL and foreign keys
 * off; a file that is not SQLite fails on the first of these pragmas. In the
 * backend everything the handle allocates lives in its own memory context,
 * which zs_replica_close() deletes.
 *
 * Transactions (begin, savepoint, release and commit through the statement
 * cache; a rollback, rare, through sqlite3_exec): zs_replica_begin() opens
 * a SQLite transaction (BEGIN IMMEDIATE) unless one is open, and a
 * SAVEPOINT for the upstream transaction; zs_replica_commit() sets
 * stateVersion and writeTimeMs (and, after a schema change, runs PRAGMA
 * optimize as zero-cache does, with the analysis limit newer SQLite
 * versions set by themselves) and releases the savepoint,
 * zs_replica_rollback() rolls back to it (and
 * forgets the caches, which may describe what it undid), and
 * zs_replica_flush() commits the SQLite transaction with every upstream
 * transaction committed since the last flush.
 *
 * Values: numbers that are integers within int64 are stored as INTEGER
 * exactly, other numbers as REAL, booleans as 0/1, strings as TEXT, and
 * arrays and objects (arrays, bytea, ...) as their compact JSON text.
 *
 * Prepared statements are cached by their SQL text, which is determined
 * by the table and its columns in order; each table also keeps the
 * INSERT OR REPLACE of its last row shape (replica_apply.c), valid while
 * stmt_generation, which every reset of the cache bumps, is unchanged.
 *
 * Runs of rows: consecutive INSERT OR REPLACEs of one table and shape are
 * written as one statement of up to ZS_REPLICA_BATCH_ROWS rows (a bulk
 * transaction's rows cost SQLite about half as much that way), or of about
 * ZS_REPLICA_BATCH_BYTES of text values. Their values are copied; the run
 * is written before any other statement runs, or the database is handed
 * out, so that every statement, and every reader, sees the rows in the
 * order they came; a rollback drops it. A run that fails fails every later
 * statement of its transaction with its error, until the rollback.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#include "utils/memutils.h"
#endif

#include <sys/time.h>
#include <unistd.h>

#include "replica/replica_apply.h"
#include "replica/replica_internal.h"

#define REPLICA_BUSY_TIMEOUT_MS 60000
#define ZS_REPLICA_BATCH_ROWS 32	/* a power of two: see zs_replica_batch_flush */
#define ZS_REPLICA_BATCH_BYTES (1024 * 1024)	/* a run's text values, at most about */

/* ---------------------------------------------------------------- basics */

bool
zs_replica_set_error(ZsReplica *r, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, args);
	va_end(args);
	return false;
}

const char *
zs_replica_error(const ZsReplica *r)
{
	return r->error;
}

struct sqlite3 *
zs_replica_db(ZsReplica *r)
{
	/* a failure fails the next statement too (and is in zs_replica_error()) */
	(void) zs_replica_batch_flush(r);
	return r->db;
}

void *
zs_replica_alloc(ZsReplica *r, Size size)
{
#ifdef FRONTEND
	return palloc(size);
#else
	return MemoryContextAlloc(r->mcxt, size);
#endif
}

char *
zs_replica_strdup(ZsReplica *r, const char *s)
{
	size_t		len = strlen(s);
	char	   *copy = zs_replica_alloc(r, len + 1);

	memcpy(copy, s, len + 1);
	return copy;
}

/* text between quote characters, a quote inside doubled (SQL identifiers and literals) */
void
zs_replica_append_quoted(StringInfo s, const char *text, char quote)
{
	const char *run = text;
	const char *q;

	appendStringInfoChar(s, quote);
	/* runs up to and including each quote, which is then doubled */
	while ((q = strchr(run, quote)) != NULL)
	{
		appendBinaryStringInfo(s, run, q - run + 1);
		appendStringInfoChar(s, quote);
		run = q + 1;
	}
	appendStringInfoString(s, run);
	appendStringInfoChar(s, quote);
}

/* the quoted member names of a row object, each followed by sep */
void
zs_replica_append_member_names(StringInfo s, const ZsJsonDoc *doc, int row,
							   const char *sep)
{
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next)
	{
		zs_replica_append_ident(s, zs_json_key(doc, c));
		appendStringInfoString(s, sep);
	}
}

/* ---------------------------------------------------------------- statements */

bool
zs_replica_exec(ZsReplica *r, const char *sql)
{
	char	   *msg = NULL;

	if ((r->batch.nrows > 0 || r->batch.failed) && !zs_replica_batch_flush(r))
		return false;
	if (sqlite3_exec(r->db, sql, NULL, NULL, &msg) != SQLITE_OK)
	{
		zs_replica_set_error(r, "%s (in: %.120s)", msg ? msg : sqlite3_errmsg(r->db), sql);
		sqlite3_free(msg);
		return false;
	}
	return true;
}

void
zs_replica_forget_statements(ZsReplica *r)
{
	for (int j = 0; j < ZS_REPLICA_STMT_CACHE_SIZE; j++)
		if (r->stmts[j].sql != NULL)
		{
			sqlite3_finalize(r->stmts[j].stmt);
			pfree(r->stmts[j].sql);
			r->stmts[j].sql = NULL;
		}
	r->nstmts = 0;
	r->stmt_generation++;
}

/* A prepared statement for this SQL text, from the cache or new. */
sqlite3_stmt *
zs_replica_statement(ZsReplica *r, const char *sql)
{
	uint32		h = 2166136261u;
	uint32		i;

	if ((r->batch.nrows > 0 || r->batch.failed) && !zs_replica_batch_flush(r))
		return NULL;
	for (const char *p = sql; *p; p++)
		h = (h ^ (unsigned char) *p) * 16777619u;
	for (i = h & (ZS_REPLICA_STMT_CACHE_SIZE - 1);; i = (i + 1) & (ZS_REPLICA_STMT_CACHE_SIZE - 1))
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
	if (r->nstmts >= ZS_REPLICA_STMT_CACHE_SIZE / 2)
	{
		zs_replica_forget_statements(r);
		i = h & (ZS_REPLICA_STMT_CACHE_SIZE - 1);
	}
	{
		CachedStmt *c = &r->stmts[i];

		if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->stmt, NULL) != SQLITE_OK)
		{
			zs_replica_set_error(r, "%s (in: %.200s)", sqlite3_errmsg(r->db), sql);
			return NULL;
		}
		c->sql = zs_replica_strdup(r, sql);
		r->nstmts++;
		return c->stmt;
	}
}

bool
zs_replica_step_done(ZsReplica *r, sqlite3_stmt *stmt)
{
	int			rc = sqlite3_step(stmt);

	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
	{
		zs_replica_set_error(r, "%s (in: %.200s)", sqlite3_errmsg(r->db), sqlite3_sql(stmt));
		sqlite3_reset(stmt);
		return false;
	}
	sqlite3_reset(stmt);
	return true;
}

/* ---------------------------------------------------------------- values */

/*
 * A JSON node as the replica stores it (see "Values" above); a text is
 * the node's own, in doc.
 */
static void
node_value(const ZsJsonDoc *doc, int node, ZsBatchValue *v, const char **text)
{
	const ZsJsonNode *n = &doc->nodes[node];

	switch (n->type)
	{
		case ZS_JSON_TRUE:
		case ZS_JSON_FALSE:
			v->type = 'i';
			v->i = n->type == ZS_JSON_TRUE;
			break;
		case ZS_JSON_NUMBER:
			v->type = zs_json_int64(doc, node, &v->i) ? 'i' : 'f';
			if (v->type == 'f')
				v->f = zs_json_double(doc, node);
			break;
		case ZS_JSON_STRING:
			v->type = 't';
			*text = zs_json_str(doc, node);
			v->len = n->str_len;
			break;
		case ZS_JSON_ARRAY:
		case ZS_JSON_OBJECT:
			v->type = 't';
			*text = zs_json_raw(doc, node);
			v->len = n->raw_len;
			break;
		default:
			v->type = 'n';
			break;
	}
}

/* Bind a value, its text (if one) kept by the caller until the statement is reset. */
static void
bind_value(sqlite3_stmt *stmt, int idx, const ZsBatchValue *v, const char *text)
{
	switch (v->type)
	{
		case 'i':
			sqlite3_bind_int64(stmt, idx, v->i);
			break;
		case 'f':
			sqlite3_bind_double(stmt, idx, v->f);
			break;
		case 't':
			sqlite3_bind_text(stmt, idx, text, v->len, SQLITE_STATIC);
			break;
		default:
			sqlite3_bind_null(stmt, idx);
			break;
	}
}

void
zs_replica_bind_node(sqlite3_stmt *stmt, int idx, const ZsJsonDoc *doc, int node)
{
	ZsBatchValue v;
	const char *text = NULL;

	node_value(doc, node, &v, &text);
	bind_value(stmt, idx, &v, text);
}

/* ---------------------------------------------------------------- runs */

/* Forget the pending run's rows, giving back a large run's memory. */
static void
batch_clear(ZsReplica *r)
{
	StringInfo	text = &r->batch.text;

	r->batch.nrows = 0;
	r->batch.nvalues = 0;
	if (text->maxlen > 4 * ZS_REPLICA_BATCH_BYTES)
	{
		pfree(text->data);
		text->maxlen = 1024;
		text->data = zs_replica_alloc(r, text->maxlen);
	}
	resetStringInfo(text);
}

/* Drop the pending run, and a failed one's error (a rollback undoes them). */
static void
batch_discard(ZsReplica *r)
{
	batch_clear(r);
	r->batch.failed = false;
}

/* The run failed: so does everything after it in its transaction. */
static bool
batch_failed(ZsReplica *r)
{
	batch_clear(r);
	r->batch.failed = true;
	strlcpy(r->batch.failure, r->error, sizeof(r->batch.failure));
	return false;
}

bool
zs_replica_batch_row(ZsReplica *r, const char *head, int head_len, int ncols)
{
	ZsReplicaBatch *b = &r->batch;

	if (b->nrows > 0 &&
		(b->ncols != ncols || b->head.len != head_len || memcmp(b->head.data, head, head_len) != 0))
	{
		/* head may be a cached statement's text, which the flush may finalize */
		char	   *copy = zs_replica_alloc(r, head_len + 1);
		bool		ok;

		memcpy(copy, head, head_len);
		ok = zs_replica_batch_flush(r);
		resetStringInfo(&b->head);
		appendBinaryStringInfo(&b->head, copy, head_len);
		pfree(copy);
		if (!ok)
			return false;
	}
	else if (b->nrows == 0)
	{
		resetStringInfo(&b->head);
		appendBinaryStringInfo(&b->head, head, head_len);
	}
	if (b->nrows == 0)
	{
		int			limit = sqlite3_limit(r->db, SQLITE_LIMIT_VARIABLE_NUMBER, -1);

		b->ncols = ncols;
		b->maxrows = Max(1, Min(ZS_REPLICA_BATCH_ROWS, limit / Max(ncols, 1)));
		if (b->maxrows * ncols > b->maxvalues)
		{
			if (b->values)
				pfree(b->values);
			b->maxvalues = b->maxrows * ncols;
			b->values = zs_replica_alloc(r, sizeof(ZsBatchValue) * b->maxvalues);
		}
	}
	b->nvalues = b->nrows * b->ncols;
	return true;
}

/* The next value of the row: space for it, or a lost one if too many. */
static ZsBatchValue *
batch_value(ZsReplica *r)
{
	ZsReplicaBatch *b = &r->batch;
	static ZsBatchValue spare;

	if (b->nvalues >= (b->nrows + 1) * b->ncols)
		return &spare;			/* more values than columns: cannot be */
	return &b->values[b->nvalues++];
}

static void
batch_text(ZsReplica *r, const char *text, int len)
{
	ZsBatchValue *v = batch_value(r);

	v->type = 't';
	v->i = r->batch.text.len;
	v->len = len;
	appendBinaryStringInfo(&r->batch.text, text, len);
}

void
zs_replica_batch_text(ZsReplica *r, const char *text)
{
	batch_text(r, text, strlen(text));
}

/* As zs_replica_bind_node binds it. */
void
zs_replica_batch_node(ZsReplica *r, const ZsJsonDoc *doc, int node)
{
	ZsBatchValue v;
	const char *text = NULL;

	node_value(doc, node, &v, &text);
	if (v.type == 't')
		batch_text(r, text, v.len);
	else
		*batch_value(r) = v;
}

bool
zs_replica_batch_end_row(ZsReplica *r)
{
	ZsReplicaBatch *b = &r->batch;

	if (b->nvalues != (b->nrows + 1) * b->ncols)
	{
		zs_replica_set_error(r, "a row of %d values for %d columns (in: %.200s)",
							 b->nvalues - b->nrows * b->ncols, b->ncols, b->head.data);
		return batch_failed(r);
	}
	b->nrows++;
	return (b->nrows < b->maxrows && b->text.len < ZS_REPLICA_BATCH_BYTES) ||
		zs_replica_batch_flush(r);
}

/* Rows [first, first + nrows) of the run, as one statement. */
static bool
batch_write(ZsReplica *r, int first, int nrows)
{
	ZsReplicaBatch *b = &r->batch;
	sqlite3_stmt *stmt;
	bool		ok;

	resetStringInfo(&b->sql);
	appendBinaryStringInfo(&b->sql, b->head.data, b->head.len);
	appendStringInfoString(&b->sql, " VALUES ");
	for (int row = 0; row < nrows; row++)
	{
		appendStringInfoString(&b->sql, row == 0 ? "(" : ",(");
		for (int c = 0; c < b->ncols; c++)
			appendStringInfoString(&b->sql, c == 0 ? "?" : ",?");
		appendStringInfoChar(&b->sql, ')');
	}
	if ((stmt = zs_replica_statement(r, b->sql.data)) == NULL)
		return false;
	for (int k = 0; k < nrows * b->ncols; k++)
	{
		const ZsBatchValue *v = &b->values[first * b->ncols + k];

		bind_value(stmt, k + 1, v, v->type == 't' ? b->text.data + v->i : NULL);
	}
	ok = zs_replica_step_done(r, stmt);
	/* the statement holds no pointer into the text once it is reset */
	sqlite3_clear_bindings(stmt);
	return ok;
}

/*
 * Write the pending run: in statements of a power of two rows each, the
 * largest that fit (a run of 13 is 8, 4 and 1), so that one shape has at
 * most six statements in the cache whatever its runs' lengths.
 */
bool
zs_replica_batch_flush(ZsReplica *r)
{
	ZsReplicaBatch *b = &r->batch;
	int			nrows = b->nrows;
	int			first = 0;

	if (b->failed)
		return zs_replica_set_error(r, "%s", b->failure);
	if (nrows == 0)
		return true;
	/* the statements are no others: nothing pending while they are looked up */
	b->nrows = 0;
	for (int size = ZS_REPLICA_BATCH_ROWS; size >= 1; size /= 2)
		while (nrows - first >= size)
		{
			if (!batch_write(r, first, size))
				return batch_failed(r);
			first += size;
		}
	batch_clear(r);
	return true;
}

/* ---------------------------------------------------------------- open */

void
zs_sqlite_configure(void)
{
	static bool configured = false;

	if (configured)
		return;
	configured = true;
	/* SQLITE_MISUSE if SQLite is already initialized: then it stays as it is */
	(void) sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

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
	zs_sqlite_configure();
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
	initStringInfo(&r->relation_text);
	initStringInfo(&r->batch.head);
	initStringInfo(&r->batch.text);
	initStringInfo(&r->batch.sql);
	zs_json_doc_init(&r->relation_doc);
	zs_json_doc_init(&r->change_doc);
	sqlite3_busy_timeout(db, REPLICA_BUSY_TIMEOUT_MS);
#ifndef FRONTEND
	MemoryContextSwitchTo(old);
#endif

	/* a foreign or corrupt file fails here, on its first read */
	if (!zs_replica_exec(r, "PRAGMA journal_mode = WAL") ||
		!zs_replica_exec(r, "PRAGMA synchronous = NORMAL") ||
		!zs_replica_exec(r, "PRAGMA cache_size = -65536") ||
		!zs_replica_exec(r, "PRAGMA foreign_keys = OFF"))
	{
		snprintf(err, errlen, "could not use \"%s\" as a SQLite replica: %s", path, r->error);
		zs_replica_close(r);
		return NULL;
	}
	return r;
}

void
zs_replica_close(ZsReplica *r)
{
	if (r == NULL)
		return;
	batch_discard(r);
	zs_replica_forget_statements(r);
	zs_replica_forget_tables(r);
	if (r->in_sql_txn)
		(void) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close_v2(r->db);
#ifdef FRONTEND
	pfree(r->sql.data);
	pfree(r->rowkey.data);
	pfree(r->relation_text.data);
	pfree(r->batch.head.data);
	pfree(r->batch.text.data);
	pfree(r->batch.sql.data);
	if (r->batch.values)
		pfree(r->batch.values);
	zs_json_doc_free(&r->relation_doc);
	zs_json_doc_free(&r->change_doc);
	if (r->relation_table)
		pfree(r->relation_table);
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

/* ---------------------------------------------------------------- transactions */

int64
zs_replica_now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/*
 * Run a statement without parameters through the statement cache: the
 * transaction bracket of every upstream transaction, which sqlite3_exec
 * would compile each time (a third of a single-row transaction's cost).
 */
static bool
run_cached(ZsReplica *r, const char *sql)
{
	sqlite3_stmt *stmt = zs_replica_statement(r, sql);

	return stmt != NULL && zs_replica_step_done(r, stmt);
}

bool
zs_replica_begin(ZsReplica *r, const char *watermark)
{
	r->error[0] = '\0';
	if (r->in_upstream_txn)
		return zs_replica_set_error(r, "begin %s inside the open transaction %s", watermark, r->txn_watermark);
	if (!r->in_sql_txn)
	{
		if (!run_cached(r, "BEGIN IMMEDIATE"))
			return false;
		r->in_sql_txn = true;
	}
	if (!run_cached(r, "SAVEPOINT upstream"))
		return false;
	r->in_upstream_txn = true;
	strlcpy(r->txn_watermark, watermark, sizeof(r->txn_watermark));
	r->pos = 0;
	r->schema_changed = false;
	return true;
}

bool
zs_replica_commit(ZsReplica *r, const char *watermark)
{
	sqlite3_stmt *stmt;

	r->error[0] = '\0';
	if (!r->in_upstream_txn)
		return zs_replica_set_error(r, "commit %s outside a transaction", watermark);
	if (strcmp(watermark, r->txn_watermark) != 0)
		return zs_replica_set_error(r, "commit watermark %s does not match begin's %s",
									watermark, r->txn_watermark);
	stmt = zs_replica_statement(r, "UPDATE \"_zero.replicationState\" SET stateVersion = ?, writeTimeMs = ?");
	if (stmt == NULL)
		return false;
	sqlite3_bind_text(stmt, 1, watermark, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 2, zs_replica_now_ms());
	if (!zs_replica_step_done(r, stmt))
		return false;
	if (r->schema_changed &&
		!zs_replica_exec(r, "PRAGMA analysis_limit = 400; PRAGMA optimize"))
		return false;
	if (!run_cached(r, "RELEASE upstream"))
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
	batch_discard(r);
	/* the caches may describe tables or columns this transaction added */
	zs_replica_forget_statements(r);
	zs_replica_forget_tables(r);
	if (!zs_replica_exec(r, "ROLLBACK TO upstream") || !zs_replica_exec(r, "RELEASE upstream"))
		return false;
	r->in_upstream_txn = false;
	return true;
}

bool
zs_replica_in_transaction(const ZsReplica *r)
{
	return r->in_upstream_txn;
}

const char *
zs_replica_state_version(const ZsReplica *r)
{
	return r->state_version;
}

bool
zs_replica_flush(ZsReplica *r)
{
	r->error[0] = '\0';
	if (r->in_upstream_txn)
		return zs_replica_set_error(r, "flush inside the open transaction %s", r->txn_watermark);
	if (!r->in_sql_txn)
		return true;
	if (!run_cached(r, "COMMIT"))
		return false;
	r->in_sql_txn = false;
	return true;
}
