/*-------------------------------------------------------------------------
 * replica_backfill.c
 *	  Backfills on a zero-cache-format replica: the backfill data change and
 *	  backfill-completed, as zero-cache 1.9.0's replicator applies them
 *	  (docs/zero-protocol.md §3.4 and §8).
 *
 * backfill        a data change. For each row of rowValues (the row key's
 *                 values, then "columns"'), INSERT ... ON CONFLICT (row key)
 *                 DO UPDATE of the columns no newer replicated change wrote:
 *                 changeLog2 (which replica_apply.c keeps for every table
 *                 with columns being backfilled) says whether the row was
 *                 deleted after the backfill's snapshot "watermark" (the row
 *                 is skipped) or set, and then with which version each
 *                 backfilling column was written (a column written after the
 *                 watermark keeps its value). A new row gets _0_version = the
 *                 snapshot watermark; an existing row keeps its _0_version.
 * backfill-completed  clears column_metadata.backfill of the row key's and
 *                 the backfilled columns, and bumps the table's versions
 *                 (replica_ddl.c).
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "codec/json_out.h"
#include "replica/replica_apply.h"
#include "replica/replica_ddl.h"

/* ---------------------------------------------------------------- backfills */

/* The columns of a backfill: the row key's, then the backfilled ones. */
typedef struct Backfill
{
	const char *table;
	const char *watermark;		/* the backfill's snapshot */
	int			nkeys;
	int			ncols;			/* keys included */
	const char **cols;
	int		   *nodes;			/* a row's values */
	char	  **versions;		/* changeLog2's version of each column */
	bool	   *update;
} Backfill;

/* The row's changeLog2 entry: 'd', 's' (with versions) or '\0' for none. */
static char
latest_row_op(ZsReplica *r, Backfill *b, char *state_version)
{
	sqlite3_stmt *stmt;
	char		op = '\0';

	for (int i = 0; i < b->ncols; i++)
		b->versions[i] = NULL;
	stmt = zs_replica_statement(r, "SELECT c.op, c.\"stateVersion\", j.key, j.value FROM \"_zero.changeLog2\" c "
								"LEFT JOIN json_each(c.\"backfillingColumnVersions\") j "
								"WHERE c.\"table\" = ? AND c.\"rowKey\" = ?");
	if (stmt == NULL)
		return '\0';
	sqlite3_bind_text(stmt, 1, b->table, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, r->rowkey.data, r->rowkey.len, SQLITE_STATIC);
	while (sqlite3_step(stmt) == SQLITE_ROW)
	{
		const char *row_op = (const char *) sqlite3_column_text(stmt, 0);
		const char *row_version = (const char *) sqlite3_column_text(stmt, 1);
		const char *col = (const char *) sqlite3_column_text(stmt, 2);
		const char *version = (const char *) sqlite3_column_text(stmt, 3);

		op = row_op ? row_op[0] : '\0';
		strlcpy(state_version, row_version ? row_version : "", ZS_WATERMARK_MAXLEN);
		for (int i = 0; col != NULL && version != NULL && i < b->ncols; i++)
			if (b->versions[i] == NULL && strcmp(b->cols[i], col) == 0)
				b->versions[i] = pstrdup(version);
	}
	sqlite3_reset(stmt);
	return op;
}

/* One row of rowValues, unless newer replicated changes wrote all of it. */
static bool
backfill_row(ZsReplica *r, const ZsJsonDoc *doc, Backfill *b, int values)
{
	StringInfo	s = &r->sql;
	sqlite3_stmt *stmt;
	char		state_version[ZS_WATERMARK_MAXLEN];
	char		op;
	int			nupdates = 0,
				i = 0;

	if (doc->nodes[values].type != ZS_JSON_ARRAY || doc->nodes[values].count != b->ncols)
		return zs_replica_set_error(r, "backfill of \"%s\": a row of rowValues does not have %d values",
									b->table, b->ncols);
	for (int v = doc->nodes[values].first_child; v >= 0; v = doc->nodes[v].next)
		b->nodes[i++] = v;
	resetStringInfo(&r->rowkey);
	zs_replica_append_row_key(&r->rowkey, doc, b->nkeys, b->cols, b->nodes);
	op = latest_row_op(r, b, state_version);
	/* columns set after the snapshot keep their values */
	for (i = 0; i < b->ncols; i++)
	{
		b->update[i] = (op != 's' || b->versions[i] == NULL ||
						strcmp(b->versions[i], b->watermark) <= 0);
		nupdates += b->update[i];
		if (b->versions[i] != NULL)
			pfree(b->versions[i]);
	}
	if (r->error[0] != '\0')
		return false;
	/* a row deleted after the snapshot stays deleted */
	if ((op == 'd' && strcmp(state_version, b->watermark) > 0) || nupdates == 0)
		return true;

	resetStringInfo(s);
	appendStringInfoString(s, "INSERT INTO ");
	zs_replica_append_ident(s, b->table);
	appendStringInfoString(s, " (");
	for (i = 0; i < b->ncols; i++)
	{
		zs_replica_append_ident(s, b->cols[i]);
		appendStringInfoChar(s, ',');
	}
	appendStringInfoString(s, "\"_0_version\") VALUES (");
	for (i = 0; i < b->ncols; i++)
		appendStringInfoString(s, "?,");
	appendStringInfoString(s, "?) ON CONFLICT (");
	for (i = 0; i < b->nkeys; i++)
	{
		if (i > 0)
			appendStringInfoChar(s, ',');
		zs_replica_append_ident(s, b->cols[i]);
	}
	appendStringInfoString(s, ") DO UPDATE SET ");
	for (i = 0; i < b->ncols; i++)
	{
		if (!b->update[i])
			continue;
		if (--nupdates < 0)
			break;
		zs_replica_append_ident(s, b->cols[i]);
		appendStringInfoString(s, "=excluded.");
		zs_replica_append_ident(s, b->cols[i]);
		if (nupdates > 0)
			appendStringInfoChar(s, ',');
	}
	if ((stmt = zs_replica_statement(r, s->data)) == NULL)
		return false;
	for (i = 0; i < b->ncols; i++)
		zs_replica_bind_node(stmt, i + 1, doc, b->nodes[i]);
	sqlite3_bind_text(stmt, b->ncols + 1, b->watermark, -1, SQLITE_STATIC);
	return zs_replica_step_done(r, stmt);
}

/* The row key's and the backfilled columns of a backfill(-completed). */
static bool
backfill_columns(ZsReplica *r, const ZsJsonDoc *doc, int change, const char *what,
				 const char *table, Backfill *b)
{
	int			relation = zs_json_get(doc, change, "relation");
	int			keys = zs_json_get(doc, zs_json_get(doc, relation, "rowKey"), "columns");
	int			columns = zs_json_get(doc, change, "columns");
	int			n = 0;

	memset(b, 0, sizeof(*b));
	b->table = table;
	if (keys < 0 || doc->nodes[keys].type != ZS_JSON_ARRAY || doc->nodes[keys].count == 0 ||
		doc->nodes[keys].count > ZS_MAX_KEY_COLUMNS)
		return zs_replica_set_error(r, "%s of \"%s\" without rowKey columns", what, table);
	if (columns < 0 || doc->nodes[columns].type != ZS_JSON_ARRAY)
		return zs_replica_set_error(r, "%s of \"%s\" without \"columns\"", what, table);
	b->nkeys = doc->nodes[keys].count;
	b->ncols = b->nkeys + doc->nodes[columns].count;
	b->cols = palloc(sizeof(char *) * b->ncols);
	b->nodes = palloc(sizeof(int) * b->ncols);
	b->versions = palloc0(sizeof(char *) * b->ncols);
	b->update = palloc(sizeof(bool) * b->ncols);
	for (int list = keys; list >= 0; list = (list == keys ? columns : -1))
		for (int c = doc->nodes[list].first_child; c >= 0; c = doc->nodes[c].next)
		{
			if (doc->nodes[c].type != ZS_JSON_STRING)
				return zs_replica_set_error(r, "%s of \"%s\": a column name that is not a string",
											what, table);
			b->cols[n++] = zs_json_str(doc, c);
		}
	return true;
}

static void
free_backfill(Backfill *b)
{
	if (b->cols != NULL)
	{
		pfree(b->cols);
		pfree(b->nodes);
		pfree(b->versions);
		pfree(b->update);
	}
}

bool
zs_replica_backfill_apply(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			rows = zs_json_get(doc, change, "rowValues");
	ZsReplicaTableId		id;
	Backfill	b;
	bool		ok;

	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "relation"), "name", "backfill relation", &id))
		return false;
	ok = backfill_columns(r, doc, change, "backfill", id.lite, &b) &&
		zs_replica_ddl_known_table(r, id.lite, "backfill") != NULL;
	if (ok && (b.watermark = zs_json_get_string(doc, change, "watermark")) == NULL)
		ok = zs_replica_set_error(r, "backfill of \"%s\" without a watermark", id.lite);
	if (ok && (rows < 0 || doc->nodes[rows].type != ZS_JSON_ARRAY))
		ok = zs_replica_set_error(r, "backfill of \"%s\" without rowValues", id.lite);
	for (int v = ok ? doc->nodes[rows].first_child : -1; v >= 0 && ok; v = doc->nodes[v].next)
		ok = backfill_row(r, doc, &b, v);
	free_backfill(&b);
	zs_replica_ddl_free_table_id(&id);
	return ok;
}

bool
zs_replica_backfill_complete(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	ZsReplicaTableId		id;
	Backfill	b;
	bool		ok;

	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "relation"), "name", "backfill-completed relation", &id))
		return false;
	ok = backfill_columns(r, doc, change, "backfill-completed", id.lite, &b) &&
		zs_replica_ddl_known_table(r, id.lite, "backfill-completed") != NULL;
	for (int i = 0; ok && i < b.ncols; i++)
		ok = zs_replica_ddl_run(r, "UPDATE \"_zero.column_metadata\" SET backfill = NULL WHERE table_name = ? AND column_name = ?",
								2, id.lite, b.cols[i]);
	ok = ok && zs_replica_ddl_bump_versions(r, &id);
	free_backfill(&b);
	zs_replica_ddl_free_table_id(&id);
	return ok;
}
