/*-------------------------------------------------------------------------
 * replica_apply.c
 *	  Apply Zero change messages to a zero-cache-format SQLite replica: the
 *	  dispatch of begin, data, commit and rollback, and the row changes
 *	  insert, update, delete and truncate.
 *
 * Semantics follow zero-cache's change processor (docs/zero-protocol.md §8):
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
 * and an update that matched nothing inserts the new row. Tables and
 * columns come typed from schema-change messages (replica_ddl.c); for a
 * stream without them, a column the table does not have yet is added
 * untyped, and a table that is not in the replica is created from the row,
 * with its row key as unique index unless the identity is FULL (every
 * column, not a key).
 *
 * changeLog2 (zero's ChangeLog): a serving replica (ZS_REPLICA_LOG_CHANGES)
 * logs every row change; any replica logs the row changes of a table with
 * columns being backfilled, with the versions of the backfilling columns
 * each change wrote ("backfillingColumnVersions", merged with json_patch),
 * so that a backfill does not overwrite newer values (replica_ddl.c). A
 * rowKey is the key's members in name order (zero's normalizedKeyOrder).
 * Schema changes log a table-wide reset ('r', pos -1) on serving replicas.
 *
 * Schema changes and backfills are replica_ddl.c; the SQLite side
 * (statements, values, transactions) is replica_sqlite.c; the tables, made
 * from rows here, and their cache are replica_schema.c.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "codec/json_out.h"
#include "replica/replica_apply.h"
#include "replica/replica_internal.h"

/* The members of a row that identify it. */
typedef struct RowKey
{
	bool		unique;			/* the columns of the table's unique index */
	int			n;
	int			nodes[ZS_MAX_KEY_COLUMNS];
	const char *names[ZS_MAX_KEY_COLUMNS];
} RowKey;

/*
 * A change's relation object: in the change's own document, or, when that
 * deferred it, in the replica's cache of the last relation read.
 */
typedef struct ChangeRelation
{
	const ZsJsonDoc *doc;
	int			node;
} ChangeRelation;

/* ---------------------------------------------------------------- rows */

/* The relation's replica table name, from {"schema":..,"name":..}. */
static char *
relation_table(ZsReplica *r, const ZsJsonDoc *doc, int relation)
{
	int			schema = zs_json_get(doc, relation, "schema");
	int			name = zs_json_get(doc, relation, "name");

	if (schema < 0 || name < 0 ||
		doc->nodes[schema].type != ZS_JSON_STRING || doc->nodes[name].type != ZS_JSON_STRING)
	{
		zs_replica_set_error(r, "change has no relation schema and name");
		return NULL;
	}
	return zs_replica_table_name(zs_json_str(doc, schema), zs_json_str(doc, name));
}

/*
 * Members of obj that identify the row: the table's unique index when obj
 * has all of its columns, else the relation's rowKey columns, else every
 * member.
 */
static void
select_key(const TableInfo *t, const ZsJsonDoc *doc, int obj, const ChangeRelation *rel, RowKey *key)
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
	n = zs_replica_relation_key_columns(rel->doc, rel->node, names);
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
			return zs_replica_set_error(r, "table \"%s\" has columns rowid, _rowid_ and oid: "
										"one of its identical rows cannot be addressed", table);
		appendStringInfo(s, " WHERE %s = (SELECT %s FROM ", rowid, rowid);
		zs_replica_append_ident(s, table);
	}
	appendStringInfoString(s, " WHERE ");
	for (int i = 0; i < key->n; i++)
	{
		if (i > 0)
			appendStringInfoString(s, " AND ");
		zs_replica_append_ident(s, key->names[i]);
		appendStringInfoString(s, " IS ?");
	}
	if (rowid != NULL)
		appendStringInfoString(s, " LIMIT 1)");
	return true;
}

/*
 * The rowKey text zero-cache logs: a compact JSON object of the key's
 * members in name order.
 */
void
zs_replica_append_row_key(StringInfo s, const ZsJsonDoc *doc, int n,
						  const char *const *names, const int *nodes)
{
	int			order[ZS_MAX_KEY_COLUMNS];

	n = Min(n, ZS_MAX_KEY_COLUMNS);
	for (int i = 0; i < n; i++)
	{
		int			j = i;

		while (j > 0 && strcmp(names[order[j - 1]], names[i]) > 0)
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	appendStringInfoChar(s, '{');
	for (int i = 0; i < n; i++)
	{
		const ZsJsonNode *node = &doc->nodes[nodes[order[i]]];

		if (i > 0)
			appendStringInfoChar(s, ',');
		zs_json_append_cstring(s, names[order[i]]);
		appendStringInfoChar(s, ':');
		appendBinaryStringInfo(s, doc->text + node->raw_start, node->raw_len);
	}
	appendStringInfoChar(s, '}');
}

/*
 * changeLog2 row of a row change: on a serving replica, and on any replica
 * while the table has columns being backfilled. A set ('s') of such a table
 * records the version of each backfilling column the row has (row: the
 * change's row object), merged into what the row's entry had.
 */
static bool
log_row(ZsReplica *r, const char *table, const TableInfo *t, const ZsJsonDoc *doc,
		const RowKey *key, const char *op, int row)
{
	bool		backfilling = (t != NULL && t->nbackfilling > 0);
	sqlite3_stmt *stmt;
	StringInfoData versions;
	bool		ok;

	if (!(r->flags & ZS_REPLICA_LOG_CHANGES) && !backfilling)
		return true;
	resetStringInfo(&r->rowkey);
	zs_replica_append_row_key(&r->rowkey, doc, key->n, key->names, key->nodes);
	if (op[0] != 's' || !backfilling)
	{
		stmt = zs_replica_statement(r, "INSERT OR REPLACE INTO \"_zero.changeLog2\" (\"stateVersion\", \"pos\", \"table\", \"rowKey\", \"op\") VALUES (?, ?, ?, ?, ?)");
		if (stmt == NULL)
			return false;
		sqlite3_bind_text(stmt, 1, r->txn_watermark, -1, SQLITE_STATIC);
		sqlite3_bind_int64(stmt, 2, r->pos++);
		sqlite3_bind_text(stmt, 3, table, -1, SQLITE_STATIC);
		sqlite3_bind_text(stmt, 4, r->rowkey.data, r->rowkey.len, SQLITE_STATIC);
		sqlite3_bind_text(stmt, 5, op, -1, SQLITE_STATIC);
		return zs_replica_step_done(r, stmt);
	}

	initStringInfo(&versions);
	appendStringInfoChar(&versions, '{');
	for (int i = 0; i < t->nbackfilling; i++)
	{
		if (zs_json_get(doc, row, t->backfilling[i]) < 0)
			continue;
		if (versions.len > 1)
			appendStringInfoChar(&versions, ',');
		zs_json_append_cstring(&versions, t->backfilling[i]);
		appendStringInfoChar(&versions, ':');
		zs_json_append_cstring(&versions, r->txn_watermark);
	}
	appendStringInfoChar(&versions, '}');
	stmt = zs_replica_statement(r, "INSERT INTO \"_zero.changeLog2\" (\"stateVersion\", \"pos\", \"table\", \"rowKey\", \"op\", \"backfillingColumnVersions\") "
								"VALUES (?, ?, ?, ?, ?, json(?)) ON CONFLICT (\"table\", \"rowKey\") DO UPDATE "
								"SET \"stateVersion\" = excluded.\"stateVersion\", \"pos\" = excluded.\"pos\", \"op\" = excluded.\"op\", "
								"\"backfillingColumnVersions\" = json_patch(\"backfillingColumnVersions\", excluded.\"backfillingColumnVersions\")");
	ok = (stmt != NULL);
	if (ok)
	{
		sqlite3_bind_text(stmt, 1, r->txn_watermark, -1, SQLITE_STATIC);
		sqlite3_bind_int64(stmt, 2, r->pos++);
		sqlite3_bind_text(stmt, 3, table, -1, SQLITE_STATIC);
		sqlite3_bind_text(stmt, 4, r->rowkey.data, r->rowkey.len, SQLITE_STATIC);
		sqlite3_bind_text(stmt, 5, op, -1, SQLITE_STATIC);
		sqlite3_bind_text(stmt, 6, versions.data, versions.len, SQLITE_STATIC);
		ok = zs_replica_step_done(r, stmt);
	}
	pfree(versions.data);
	return ok;
}

/*
 * A table-wide reset ('r') after a schema change, on a serving replica:
 * zero's logResetOp (one row per transaction at pos -1, the last table's).
 */
bool
zs_replica_log_reset(ZsReplica *r, const char *table)
{
	sqlite3_stmt *stmt;

	r->schema_changed = true;
	if (!(r->flags & ZS_REPLICA_LOG_CHANGES))
		return true;
	stmt = zs_replica_statement(r, "INSERT OR REPLACE INTO \"_zero.changeLog2\" (\"stateVersion\", \"pos\", \"table\", \"rowKey\", \"op\") VALUES (?, -1, ?, ?, 'r')");
	if (stmt == NULL)
		return false;
	sqlite3_bind_text(stmt, 1, r->txn_watermark, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, table, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 3, r->txn_watermark, -1, SQLITE_STATIC);
	return zs_replica_step_done(r, stmt);
}

/*
 * The table's cached INSERT OR REPLACE if row has the members of the last
 * row upserted into it, in the same order; NULL otherwise. A bulk load's
 * rows all have one shape, so most rows neither build SQL nor look up a
 * statement by its text.
 */
static sqlite3_stmt *
cached_upsert(const ZsReplica *r, const TableInfo *t, const ZsJsonDoc *doc, int row)
{
	int			i = 0;

	if (t->upsert == NULL || t->upsert_generation != r->stmt_generation ||
		doc->nodes[row].count != t->nshape)
		return NULL;
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next, i++)
		if (strcmp(zs_json_key(doc, c), t->shape[i]) != 0)
			return NULL;
	return t->upsert;
}

/* Prepare the INSERT OR REPLACE of row's members and cache it with their shape. */
static sqlite3_stmt *
prepare_upsert(ZsReplica *r, const char *table, TableInfo *t, const ZsJsonDoc *doc, int row)
{
	StringInfo	s = &r->sql;
	sqlite3_stmt *stmt;
	int			n = doc->nodes[row].count;
	int			i = 0;
	int			head_len;

	resetStringInfo(s);
	appendStringInfoString(s, "INSERT OR REPLACE INTO ");
	zs_replica_append_ident(s, table);
	appendStringInfoString(s, " (");
	zs_replica_append_member_names(s, doc, row, ",");
	appendStringInfoString(s, "\"_0_version\")");
	head_len = s->len;
	appendStringInfoString(s, " VALUES (");
	for (int k = 0; k < n; k++)
		appendStringInfoString(s, "?,");
	appendStringInfoString(s, "?)");
	if ((stmt = zs_replica_statement(r, s->data)) == NULL)
		return NULL;

	/* the shape names the table's own column strings, which outlive it */
	t->upsert = NULL;
	if (n > t->maxshape)
	{
		if (t->shape)
			pfree(t->shape);
		t->maxshape = Max(n, 16);
		t->shape = zs_replica_alloc(r, sizeof(char *) * t->maxshape);
	}
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next, i++)
	{
		const char *key = zs_json_key(doc, c);

		t->shape[i] = NULL;
		for (int k = 0; k < t->ncols && t->shape[i] == NULL; k++)
			if (strcmp(t->cols[k], key) == 0)
				t->shape[i] = t->cols[k];
		if (t->shape[i] == NULL)
			return stmt;		/* not a known column (cannot be): no cache */
	}
	t->nshape = n;
	t->upsert = stmt;
	t->upsert_head_len = head_len;
	t->upsert_generation = r->stmt_generation;
	return stmt;
}

/*
 * INSERT OR REPLACE the members of row (every one a column of t). A row
 * of the table's cached shape joins the run of rows (replica_sqlite.c)
 * when nothing else is written per row (a serving replica writes its
 * changeLog2 row, and a backfilling table its versions, after each) and
 * it is not large (its copy would cost more than the statement it saves).
 */
static bool
upsert(ZsReplica *r, const char *table, TableInfo *t, const ZsJsonDoc *doc, int row)
{
	bool		join_run = !(r->flags & ZS_REPLICA_LOG_CHANGES) && t->nbackfilling == 0 &&
		doc->nodes[row].raw_len < 256 * 1024;
	sqlite3_stmt *stmt;
	int			idx = 1;

	/* a row written now comes after the pending run (which may reset the cache) */
	if (!join_run && !zs_replica_batch_flush(r))
		return false;
	stmt = cached_upsert(r, t, doc, row);
	if (stmt == NULL && (stmt = prepare_upsert(r, table, t, doc, row)) == NULL)
		return false;
	if (join_run && stmt == t->upsert)
	{
		if (!zs_replica_batch_row(r, sqlite3_sql(stmt), t->upsert_head_len, t->nshape + 1))
			return false;
		for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next)
			zs_replica_batch_node(r, doc, c);
		zs_replica_batch_text(r, r->txn_watermark);
		return zs_replica_batch_end_row(r);
	}
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next)
		zs_replica_bind_node(stmt, idx++, doc, c);
	sqlite3_bind_text(stmt, idx, r->txn_watermark, -1, SQLITE_STATIC);
	return zs_replica_step_done(r, stmt);
}

/* ---------------------------------------------------------------- changes */

/*
 * The table a row goes to, created or given the row's new columns if need
 * be; a row of the table's last upserted shape has only known columns.
 */
static TableInfo *
row_table(ZsReplica *r, const char *table, const ZsJsonDoc *doc, int row, const ChangeRelation *rel)
{
	TableInfo  *t = zs_replica_table_info(r, table);

	if (t != NULL && cached_upsert(r, t, doc, row) != NULL)
		return t;
	return zs_replica_row_table(r, table, doc, row, rel->doc, rel->node);
}

static bool
apply_insert(ZsReplica *r, const ZsJsonDoc *doc, int change, const ChangeRelation *rel, const char *table)
{
	int			row = zs_json_get(doc, change, "new");
	TableInfo  *t;
	RowKey		key;

	if (row < 0 || doc->nodes[row].type != ZS_JSON_OBJECT)
		return zs_replica_set_error(r, "insert without a \"new\" row");
	if ((t = row_table(r, table, doc, row, rel)) == NULL)
		return false;
	if (!upsert(r, table, t, doc, row))
		return false;
	select_key(t, doc, row, rel, &key);
	return log_row(r, table, t, doc, &key, "s", row);
}

static bool
apply_update(ZsReplica *r, const ZsJsonDoc *doc, int change, const ChangeRelation *rel, const char *table)
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
		return zs_replica_set_error(r, "update without a \"new\" row");
	if ((t = row_table(r, table, doc, row, rel)) == NULL)
		return false;
	if (old < 0 || doc->nodes[old].type != ZS_JSON_OBJECT)
		old = row;
	select_key(t, doc, old, rel, &key);
	if (key.n == 0)
		return zs_replica_set_error(r, "update of table \"%s\" without a row key", table);

	resetStringInfo(s);
	appendStringInfoString(s, "UPDATE ");
	zs_replica_append_ident(s, table);
	appendStringInfoString(s, " SET ");
	zs_replica_append_member_names(s, doc, row, " = ?,");
	appendStringInfoString(s, "\"_0_version\" = ?");
	if (!append_where_key(r, s, table, t, &key) ||
		(stmt = zs_replica_statement(r, s->data)) == NULL)
		return false;
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next)
		zs_replica_bind_node(stmt, idx++, doc, c);
	sqlite3_bind_text(stmt, idx++, r->txn_watermark, -1, SQLITE_STATIC);
	for (int i = 0; i < key.n; i++)
		zs_replica_bind_node(stmt, idx++, doc, key.nodes[i]);
	if (!zs_replica_step_done(r, stmt))
		return false;
	if (sqlite3_changes(r->db) == 0 && !upsert(r, table, t, doc, row))
		return false;

	if (old == row)
		return log_row(r, table, t, doc, &key, "s", row);
	/* the row moved to a new key: the old one is deleted */
	select_key(t, doc, row, rel, &new_key);
	if (!same_key(doc, &key, &new_key) && !log_row(r, table, t, doc, &key, "d", -1))
		return false;
	return log_row(r, table, t, doc, &new_key, "s", row);
}

static bool
apply_delete(ZsReplica *r, const ZsJsonDoc *doc, int change, const ChangeRelation *rel, const char *table)
{
	int			key = zs_json_get(doc, change, "key");
	StringInfo	s = &r->sql;
	TableInfo  *t;
	sqlite3_stmt *stmt;
	RowKey		rk;

	if (key < 0 || doc->nodes[key].type != ZS_JSON_OBJECT)
		return zs_replica_set_error(r, "delete from \"%s\" without a \"key\"", table);
	if ((t = zs_replica_table_info(r, table)) == NULL)
		return r->error[0] ? false : true;	/* nothing to delete */
	select_key(t, doc, key, rel, &rk);
	if (rk.n == 0)
		return zs_replica_set_error(r, "delete from \"%s\" with an empty key", table);
	resetStringInfo(s);
	appendStringInfoString(s, "DELETE FROM ");
	zs_replica_append_ident(s, table);
	if (!append_where_key(r, s, table, t, &rk) ||
		(stmt = zs_replica_statement(r, s->data)) == NULL)
		return false;
	for (int i = 0; i < rk.n; i++)
		zs_replica_bind_node(stmt, i + 1, doc, rk.nodes[i]);
	if (!zs_replica_step_done(r, stmt))
		return false;
	return log_row(r, table, t, doc, &rk, "d", -1);
}

static bool
apply_truncate(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			rels = zs_json_get(doc, change, "relations");

	if (rels < 0 || doc->nodes[rels].type != ZS_JSON_ARRAY)
		return zs_replica_set_error(r, "truncate without \"relations\"");
	for (int rel = doc->nodes[rels].first_child; rel >= 0; rel = doc->nodes[rel].next)
	{
		char	   *table = relation_table(r, doc, rel);
		StringInfo	s = &r->sql;
		sqlite3_stmt *stmt;
		bool		ok = true;

		if (table == NULL)
			return false;
		if (zs_replica_table_info(r, table) != NULL)
		{
			resetStringInfo(s);
			appendStringInfoString(s, "DELETE FROM ");
			zs_replica_append_ident(s, table);
			ok = zs_replica_exec(r, s->data);
		}
		else if (r->error[0] != '\0')
			ok = false;
		if (ok && (r->flags & ZS_REPLICA_LOG_CHANGES))
		{
			stmt = zs_replica_statement(r, "DELETE FROM \"_zero.changeLog2\" WHERE \"table\" = ?");
			ok = stmt != NULL;
			if (ok)
			{
				sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
				ok = zs_replica_step_done(r, stmt);
			}
			if (ok)
				stmt = zs_replica_statement(r, "INSERT OR REPLACE INTO \"_zero.changeLog2\" (\"stateVersion\", \"pos\", \"table\", \"rowKey\", \"op\") VALUES (?, -1, ?, ?, 't')");
			ok = ok && stmt != NULL;
			if (ok)
			{
				sqlite3_bind_text(stmt, 1, r->txn_watermark, -1, SQLITE_STATIC);
				sqlite3_bind_text(stmt, 2, table, -1, SQLITE_TRANSIENT);
				sqlite3_bind_text(stmt, 3, r->txn_watermark, -1, SQLITE_STATIC);
				ok = zs_replica_step_done(r, stmt);
			}
		}
		pfree(table);
		if (!ok)
			return false;
	}
	return true;
}

/*
 * The deferred relation object of a row change (zs_json_parse_deferring):
 * read into relation_doc, with its table's name, unless it is the text of
 * the last one read. A bulk load's rows all carry the same relation.
 */
static bool
read_relation(ZsReplica *r, const ZsJsonDoc *doc, int node)
{
	const char *text = zs_json_raw(doc, node);
	int			len = doc->nodes[node].raw_len;
	char	   *table;

	if (r->relation_table != NULL && r->relation_text.len == len &&
		memcmp(r->relation_text.data, text, len) == 0)
		return true;
	if (r->relation_table != NULL)
	{
		pfree(r->relation_table);
		r->relation_table = NULL;
	}
	resetStringInfo(&r->relation_text);
	appendBinaryStringInfo(&r->relation_text, text, len);
	if (!zs_json_parse(&r->relation_doc, r->relation_text.data, len))
		return zs_replica_set_error(r, "change's relation is not JSON: %s", r->relation_doc.error);
	if ((table = relation_table(r, &r->relation_doc, 0)) == NULL)
		return false;
	/* kept across calls: in the replica's memory, not the caller's */
	r->relation_table = zs_replica_strdup(r, table);
	pfree(table);
	return true;
}

/* The tags' names, in ZsReplicaChangeTag's order */
static const char *const change_tag_names[] = {
	"insert", "update", "delete", "truncate",
	"create-table", "rename-table", "update-table-metadata", "add-column", "update-column",
	"drop-column", "drop-table", "create-index", "drop-index", "backfill", "backfill-completed",
};

StaticAssertDecl(lengthof(change_tag_names) == ZS_REPLICA_TAG_UNKNOWN,
				 "change_tag_names must name every ZsReplicaChangeTag");

ZsReplicaChangeTag
zs_replica_change_tag(const ZsJsonDoc *doc, int tag)
{
	for (int i = 0; i < (int) lengthof(change_tag_names); i++)
	{
		if (zs_json_str_eq(doc, tag, change_tag_names[i]))
			return (ZsReplicaChangeTag) i;
	}
	return ZS_REPLICA_TAG_UNKNOWN;
}

bool
zs_replica_apply_change(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			tag_node = zs_json_get(doc, change, "tag");
	ZsReplicaChangeTag tag;
	ChangeRelation rel;
	char	   *table;
	bool		ok;

	r->error[0] = '\0';
	if (!r->in_upstream_txn)
		return zs_replica_set_error(r, "change outside a transaction");
	if (tag_node < 0 || doc->nodes[tag_node].type != ZS_JSON_STRING)
		return zs_replica_set_error(r, "change without a \"tag\"");
	tag = zs_replica_change_tag(doc, tag_node);
	if (tag == ZS_REPLICA_TAG_UNKNOWN)
		return zs_replica_set_error(r, "unsupported change \"%s\"", zs_json_str(doc, tag_node));
	if (tag == ZS_REPLICA_TAG_TRUNCATE)
		return apply_truncate(r, doc, change);

	if (tag != ZS_REPLICA_TAG_INSERT && tag != ZS_REPLICA_TAG_UPDATE &&
		tag != ZS_REPLICA_TAG_DELETE)
	{
		int			deferred = zs_json_get(doc, change, "relation");

		/* schema changes and backfills read their relation: the whole change, parsed */
		if (deferred >= 0 && doc->nodes[deferred].deferred)
		{
			const ZsJsonNode *c = &doc->nodes[change];

			if (!zs_json_parse(&r->change_doc, doc->text + c->raw_start, c->raw_len))
				return zs_replica_set_error(r, "change is not JSON: %s", r->change_doc.error);
			return zs_replica_apply_change(r, &r->change_doc, 0);
		}
		return zs_replica_apply_schema_change(r, doc, change, tag);
	}
	rel.doc = doc;
	rel.node = zs_json_get(doc, change, "relation");
	if (rel.node >= 0 && doc->nodes[rel.node].deferred)
	{
		if (!read_relation(r, doc, rel.node))
			return false;
		rel.doc = &r->relation_doc;
		rel.node = 0;
		table = r->relation_table;
	}
	else if ((table = relation_table(r, doc, rel.node)) == NULL)
		return false;
	switch (tag)
	{
		case ZS_REPLICA_TAG_INSERT:
			ok = apply_insert(r, doc, change, &rel, table);
			break;
		case ZS_REPLICA_TAG_UPDATE:
			ok = apply_update(r, doc, change, &rel, table);
			break;
		default:
			ok = apply_delete(r, doc, change, &rel, table);
			break;
	}
	if (table != r->relation_table)
		pfree(table);
	if (ok)
		r->rows_applied++;
	return ok;
}

uint64
zs_replica_rows_applied(const ZsReplica *r)
{
	return r->rows_applied;
}

/* ---------------------------------------------------------------- messages */

ZsReplicaMessageResult
zs_replica_apply_message(ZsReplica *r, const ZsJsonDoc *doc, int message)
{
	int			type = zs_json_at(doc, message, 0);
	int			body = zs_json_at(doc, message, 1);
	int			extra = zs_json_at(doc, message, 2);
	const char *watermark;
	bool		ok;

	if (zs_json_str_eq(doc, type, "data"))
		ok = zs_replica_apply_change(r, doc, body);
	else if (zs_json_str_eq(doc, type, "begin"))
	{
		if ((watermark = zs_json_get_string(doc, extra, "commitWatermark")) == NULL)
			ok = zs_replica_set_error(r, "begin without a commitWatermark");
		else
			ok = zs_replica_begin(r, watermark);
	}
	else if (zs_json_str_eq(doc, type, "commit"))
	{
		if ((watermark = zs_json_get_string(doc, extra, "watermark")) == NULL)
			ok = zs_replica_set_error(r, "commit without a watermark");
		else
			ok = zs_replica_commit(r, watermark);
	}
	else if (zs_json_str_eq(doc, type, "rollback"))
		ok = zs_replica_rollback(r);
	else
		return ZS_REPLICA_MESSAGE_NOT_MINE;
	return ok ? ZS_REPLICA_MESSAGE_APPLIED : ZS_REPLICA_MESSAGE_FAILED;
}

const char *
zs_replica_transaction_watermark(const ZsReplica *r)
{
	return r->in_upstream_txn ? r->txn_watermark : NULL;
}
