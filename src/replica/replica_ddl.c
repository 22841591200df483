/*-------------------------------------------------------------------------
 * replica_ddl.c
 *	  Schema changes on a zero-cache-format replica, applied as zero-cache
 *	  1.9.0's replicator applies them (its change processor;
 *	  docs/zero-protocol.md §3.4 and §8): the dispatch of every schema-change
 *	  and backfill tag, the table and index changes, and the helpers the
 *	  column changes (replica_column_ddl.c) and backfills
 *	  (replica_backfill.c) share with them (replica_ddl.h).
 *
 * Names: a table, and an index, is "name" in schema public, else
 * "schema.name" (zero's liteTableName).
 *
 * create-table    the columns in "pos" order with their declared types and
 *                 no defaults (zero drops them there), "_0_version" "text"
 *                 last without a default; a column_metadata row per column
 *                 in the spec's member order, with the column's BackfillID
 *                 as "backfill"; tableMetadata.upstreamMetadata from
 *                 "metadata". The key's unique index is its own
 *                 create-index message, as in zero.
 * rename-table    ALTER TABLE RENAME TO; tableMetadata and column_metadata
 *                 follow the name.
 * update-table-metadata  tableMetadata.upstreamMetadata.
 * drop-table      DROP TABLE IF EXISTS, and its metadata rows.
 * create-index    CREATE [UNIQUE] INDEX "name" ON "table" ("c" ASC|DESC, ...)
 *                 in the spec's column order.
 * drop-index      DROP INDEX IF EXISTS.
 *
 * Versions (zero's bumpVersions): add-column without a backfill,
 * update-column beyond metadata, drop-column, rename-table (the new name)
 * and backfill-completed set tableMetadata.minRowVersion to the
 * transaction's version and log a reset; create-table (unless it backfills
 * every column), create-index (unless every column of the table is being
 * backfilled), rename-table (the old name) and drop-table log a reset. A
 * reset is a changeLog2 row on a serving replica and, on any replica, makes
 * the commit run PRAGMA optimize. After a schema change the table and
 * statement caches are forgotten.
 *
 * Bad input (an unknown table or column, a spec without a dataType, a
 * malformed backfill) is an error naming the change, never a crash.
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

/* ---------------------------------------------------------------- helpers */

bool
zs_replica_ddl_table_id(ZsReplica *r, const ZsJsonDoc *doc, int obj, const char *name_key,
						const char *what, ZsReplicaTableId *id)
{
	id->schema = zs_json_get_string(doc, obj, "schema");
	id->name = zs_json_get_string(doc, obj, name_key);
	id->lite = NULL;
	if (id->schema == NULL || id->name == NULL || id->name[0] == '\0')
		return zs_replica_set_error(r, "%s without a schema and %s", what, name_key);
	id->lite = zs_replica_table_name(id->schema, id->name);
	return true;
}

void
zs_replica_ddl_free_table_id(ZsReplicaTableId *id)
{
	if (id->lite != NULL)
		pfree(id->lite);
	id->lite = NULL;
}

/* The table's cache entry; an error naming the change if it has no such table. */
TableInfo *
zs_replica_ddl_known_table(ZsReplica *r, const char *table, const char *what)
{
	TableInfo  *t = zs_replica_table_info(r, table);

	if (t == NULL && r->error[0] == '\0')
		zs_replica_set_error(r, "%s: unknown table \"%s\"", what, table);
	return t;
}

/* Run a statement with text parameters (a NULL one binds NULL). */
bool
zs_replica_ddl_run(ZsReplica *r, const char *sql, int nparams,...)
{
	sqlite3_stmt *stmt = zs_replica_statement(r, sql);
	va_list		args;

	if (stmt == NULL)
		return false;
	va_start(args, nparams);
	for (int i = 1; i <= nparams; i++)
	{
		const char *value = va_arg(args, const char *);

		if (value != NULL)
			sqlite3_bind_text(stmt, i, value, -1, SQLITE_TRANSIENT);
	}
	va_end(args);
	return zs_replica_step_done(r, stmt);
}

/* JSON.stringify of a parsed value: its text without insignificant whitespace. */
char *
zs_replica_ddl_compact_json(const ZsJsonDoc *doc, int node)
{
	const char *p = zs_json_raw(doc, node);
	int			len = doc->nodes[node].raw_len;
	bool		in_string = false;
	StringInfoData s;

	initStringInfo(&s);
	for (int i = 0; i < len; i++)
	{
		char		c = p[i];

		if (in_string)
		{
			if (c == '\\' && i + 1 < len)
			{
				appendStringInfoChar(&s, c);
				c = p[++i];
			}
			else if (c == '"')
				in_string = false;
		}
		else if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
			continue;
		else if (c == '"')
			in_string = true;
		appendStringInfoChar(&s, c);
	}
	return s.data;
}

/* A member that is present and not null (JavaScript's truthy object). */
bool
zs_replica_ddl_present(const ZsJsonDoc *doc, int node)
{
	return node >= 0 && doc->nodes[node].type != ZS_JSON_NULL;
}

/* ---------------------------------------------------------------- metadata */

/* tableMetadata.upstreamMetadata (zero's setUpstreamMetadata) */
bool
zs_replica_ddl_set_upstream_metadata(ZsReplica *r, const ZsReplicaTableId *id, const ZsJsonDoc *doc, int metadata)
{
	char	   *text = zs_replica_ddl_compact_json(doc, metadata);
	bool		ok;

	ok = zs_replica_ddl_run(r, "INSERT INTO \"_zero.tableMetadata\" (\"schema\", \"table\", \"upstreamMetadata\") VALUES (?, ?, ?) "
							"ON CONFLICT (\"schema\", \"table\") DO UPDATE SET \"upstreamMetadata\" = excluded.\"upstreamMetadata\"",
							3, id->schema, id->name, text);
	pfree(text);
	return ok;
}

/*
 * minRowVersion = the transaction's version, and a reset: every row of the
 * table counts as changed (zero's bumpVersions).
 */
bool
zs_replica_ddl_bump_versions(ZsReplica *r, const ZsReplicaTableId *id)
{
	return zs_replica_ddl_run(r, "INSERT INTO \"_zero.tableMetadata\" (\"schema\", \"table\", \"minRowVersion\") VALUES (?, ?, ?) "
							  "ON CONFLICT (\"schema\", \"table\") DO UPDATE SET \"minRowVersion\" = excluded.\"minRowVersion\"",
							  3, id->schema, id->name, r->txn_watermark) &&
		zs_replica_log_reset(r, id->lite);
}

/* ---------------------------------------------------------------- tables */

static bool
apply_create_table(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			spec = zs_json_get(doc, change, "spec");
	int			columns = zs_json_get(doc, spec, "columns");
	int			metadata = zs_json_get(doc, change, "metadata");
	int			backfill = zs_json_get(doc, change, "backfill");
	int			n = 0,
				nbackfill = 0,
				i = 0;
	ZsReplicaColumn *cols = NULL;
	ZsReplicaColumn *sorted = NULL;
	int64	   *pos = NULL;
	ZsReplicaTableId		id;
	bool		ok = false;

	if (!zs_replica_ddl_table_id(r, doc, spec, "name", "create-table spec", &id))
		return false;
	if (columns < 0 || doc->nodes[columns].type != ZS_JSON_OBJECT || doc->nodes[columns].count == 0)
	{
		zs_replica_set_error(r, "create-table \"%s\": the spec has no columns", id.lite);
		goto done;
	}
	if (backfill >= 0 && doc->nodes[backfill].type == ZS_JSON_OBJECT)
		nbackfill = doc->nodes[backfill].count;
	n = doc->nodes[columns].count;
	cols = palloc0(sizeof(ZsReplicaColumn) * n);
	sorted = palloc0(sizeof(ZsReplicaColumn) * n);
	pos = palloc(sizeof(int64) * n);
	for (int c = doc->nodes[columns].first_child; c >= 0; c = doc->nodes[c].next, i++)
	{
		int			p = zs_json_get(doc, c, "pos");
		int			bf = zs_json_get(doc, backfill, zs_json_key(doc, c));
		int			j = i;
		int64		column_pos;

		if (!zs_replica_column_from_spec(r, doc, zs_json_key(doc, c), c, "create-table", &cols[i]))
			goto done;
		if (p < 0 || doc->nodes[p].type != ZS_JSON_NUMBER || !zs_json_int64(doc, p, &column_pos))
		{
			zs_replica_set_error(r, "create-table \"%s\": column \"%s\" has no pos", id.lite, cols[i].name);
			goto done;
		}
		if (zs_replica_ddl_present(doc, bf))
			cols[i].backfill = zs_replica_ddl_compact_json(doc, bf);
		/* insertion by pos, stable */
		while (j > 0 && pos[j - 1] > column_pos)
		{
			sorted[j] = sorted[j - 1];
			pos[j] = pos[j - 1];
			j--;
		}
		sorted[j] = cols[i];
		pos[j] = column_pos;
	}

	if (zs_replica_ddl_present(doc, metadata) && !zs_replica_ddl_set_upstream_metadata(r, &id, doc, metadata))
		goto done;
	if (!zs_replica_create_table_columns(r, id.lite, sorted, n, NULL))
		goto done;
	for (i = 0; i < n; i++)
		if (!zs_replica_insert_column_metadata(r, id.lite, &cols[i]))
			goto done;
	ok = (nbackfill == n) || zs_replica_log_reset(r, id.lite);

done:
	for (i = 0; cols != NULL && i < n; i++)
		if (cols[i].backfill != NULL)
			pfree((char *) cols[i].backfill);
	if (cols != NULL)
	{
		pfree(cols);
		pfree(sorted);
		pfree(pos);
	}
	zs_replica_ddl_free_table_id(&id);
	return ok;
}

static bool
apply_rename_table(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	ZsReplicaTableId		old_id,
				new_id;
	StringInfo	s = &r->sql;
	bool		ok;

	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "old"), "name", "rename-table old", &old_id))
		return false;
	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "new"), "name", "rename-table new", &new_id))
	{
		zs_replica_ddl_free_table_id(&old_id);
		return false;
	}
	ok = zs_replica_ddl_known_table(r, old_id.lite, "rename-table") != NULL &&
		zs_replica_ddl_run(r, "UPDATE \"_zero.tableMetadata\" SET \"schema\" = ?, \"table\" = ? WHERE \"schema\" = ? AND \"table\" = ?",
						   4, new_id.schema, new_id.name, old_id.schema, old_id.name);
	if (ok)
	{
		resetStringInfo(s);
		appendStringInfoString(s, "ALTER TABLE ");
		zs_replica_append_ident(s, old_id.lite);
		appendStringInfoString(s, " RENAME TO ");
		zs_replica_append_ident(s, new_id.lite);
		ok = zs_replica_exec(r, s->data) &&
			zs_replica_ddl_run(r, "UPDATE \"_zero.column_metadata\" SET table_name = ? WHERE table_name = ?",
							   2, new_id.lite, old_id.lite) &&
			zs_replica_ddl_bump_versions(r, &new_id) &&
			zs_replica_log_reset(r, old_id.lite);
	}
	zs_replica_ddl_free_table_id(&old_id);
	zs_replica_ddl_free_table_id(&new_id);
	return ok;
}

static bool
apply_update_table_metadata(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			metadata = zs_json_get(doc, change, "new");
	ZsReplicaTableId		id;
	bool		ok;

	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "table"), "name", "update-table-metadata table", &id))
		return false;
	if (metadata < 0 || doc->nodes[metadata].type != ZS_JSON_OBJECT)
		ok = zs_replica_set_error(r, "update-table-metadata of \"%s\" without a \"new\" object", id.lite);
	else
		ok = zs_replica_ddl_set_upstream_metadata(r, &id, doc, metadata);
	zs_replica_ddl_free_table_id(&id);
	return ok;
}

static bool
apply_drop_table(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	ZsReplicaTableId		id;
	StringInfo	s = &r->sql;
	bool		ok;

	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "id"), "name", "drop-table id", &id))
		return false;
	ok = zs_replica_ddl_run(r, "DELETE FROM \"_zero.tableMetadata\" WHERE \"schema\" = ? AND \"table\" = ?",
							2, id.schema, id.name);
	if (ok)
	{
		resetStringInfo(s);
		appendStringInfoString(s, "DROP TABLE IF EXISTS ");
		zs_replica_append_ident(s, id.lite);
		ok = zs_replica_exec(r, s->data) &&
			zs_replica_ddl_run(r, "DELETE FROM \"_zero.column_metadata\" WHERE table_name = ?", 1, id.lite) &&
			zs_replica_log_reset(r, id.lite);
	}
	zs_replica_ddl_free_table_id(&id);
	return ok;
}

/* ---------------------------------------------------------------- indexes */

static bool
apply_create_index(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			spec = zs_json_get(doc, change, "spec");
	int			columns = zs_json_get(doc, spec, "columns");
	int			unique = zs_json_get(doc, spec, "unique");
	StringInfo	s = &r->sql;
	TableInfo  *t;
	ZsReplicaTableId		table,
				index;
	bool		ok = false;

	if (!zs_replica_ddl_table_id(r, doc, spec, "tableName", "create-index spec", &table))
		return false;
	if (!zs_replica_ddl_table_id(r, doc, spec, "name", "create-index spec", &index))
	{
		zs_replica_ddl_free_table_id(&table);
		return false;
	}
	if ((t = zs_replica_ddl_known_table(r, table.lite, "create-index")) == NULL)
		goto done;
	if (columns < 0 || doc->nodes[columns].type != ZS_JSON_OBJECT || doc->nodes[columns].count == 0)
	{
		zs_replica_set_error(r, "create-index \"%s\": the spec has no columns", index.lite);
		goto done;
	}
	resetStringInfo(s);
	appendStringInfoString(s, unique >= 0 && doc->nodes[unique].type == ZS_JSON_TRUE ?
						   "CREATE UNIQUE INDEX " : "CREATE INDEX ");
	zs_replica_append_ident(s, index.lite);
	appendStringInfoString(s, " ON ");
	zs_replica_append_ident(s, table.lite);
	appendStringInfoString(s, " (");
	for (int c = doc->nodes[columns].first_child; c >= 0; c = doc->nodes[c].next)
	{
		if (!zs_json_str_eq(doc, c, "ASC") && !zs_json_str_eq(doc, c, "DESC"))
		{
			zs_replica_set_error(r, "create-index \"%s\": column \"%s\" is neither ASC nor DESC",
								 index.lite, zs_json_key(doc, c));
			goto done;
		}
		/* SQLite would take an unknown quoted name for a string: an index on a constant */
		if (!zs_replica_table_has_column(t, zs_json_key(doc, c)))
		{
			zs_replica_set_error(r, "create-index \"%s\": table \"%s\" has no column \"%s\"",
								 index.lite, table.lite, zs_json_key(doc, c));
			goto done;
		}
		if (c != doc->nodes[columns].first_child)
			appendStringInfoChar(s, ',');
		zs_replica_append_ident(s, zs_json_key(doc, c));
		appendStringInfo(s, " %s", zs_json_str(doc, c));
	}
	appendStringInfoChar(s, ')');
	/* an index over a table whose every column is being backfilled is no reset */
	ok = zs_replica_exec(r, s->data) &&
		(t->nbackfilling == t->ncols - 1 || zs_replica_log_reset(r, table.lite));

done:
	zs_replica_ddl_free_table_id(&table);
	zs_replica_ddl_free_table_id(&index);
	return ok;
}

static bool
apply_drop_index(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	StringInfo	s = &r->sql;
	ZsReplicaTableId		id;
	bool		ok;

	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "id"), "name", "drop-index id", &id))
		return false;
	resetStringInfo(s);
	appendStringInfoString(s, "DROP INDEX IF EXISTS ");
	zs_replica_append_ident(s, id.lite);
	ok = zs_replica_exec(r, s->data);
	zs_replica_ddl_free_table_id(&id);
	return ok;
}

/* ---------------------------------------------------------------- dispatch */

typedef bool (*SchemaChangeFunc) (ZsReplica *r, const ZsJsonDoc *doc, int change);

/* By tag, from ZS_REPLICA_TAG_CREATE_TABLE on */
static const struct
{
	ZsReplicaChangeTag tag;
	SchemaChangeFunc apply;
	bool		changes_tables; /* the caches must be forgotten after it */
}			schema_changes[] =
{
	{ZS_REPLICA_TAG_CREATE_TABLE, apply_create_table, true},
	{ZS_REPLICA_TAG_RENAME_TABLE, apply_rename_table, true},
	{ZS_REPLICA_TAG_UPDATE_TABLE_METADATA, apply_update_table_metadata, false},
	{ZS_REPLICA_TAG_ADD_COLUMN, zs_replica_column_add, true},
	{ZS_REPLICA_TAG_UPDATE_COLUMN, zs_replica_column_update, true},
	{ZS_REPLICA_TAG_DROP_COLUMN, zs_replica_column_drop, true},
	{ZS_REPLICA_TAG_DROP_TABLE, apply_drop_table, true},
	{ZS_REPLICA_TAG_CREATE_INDEX, apply_create_index, true},
	{ZS_REPLICA_TAG_DROP_INDEX, apply_drop_index, true},
	{ZS_REPLICA_TAG_BACKFILL, zs_replica_backfill_apply, false},
	{ZS_REPLICA_TAG_BACKFILL_COMPLETED, zs_replica_backfill_complete, true},
};

bool
zs_replica_apply_schema_change(ZsReplica *r, const ZsJsonDoc *doc, int change,
							   ZsReplicaChangeTag tag)
{
	int			i = (int) tag - ZS_REPLICA_TAG_CREATE_TABLE;
	bool		ok;

	if (i < 0 || i >= (int) lengthof(schema_changes))
		return zs_replica_set_error(r, "not a schema change or backfill");
	Assert(schema_changes[i].tag == tag);
	ok = schema_changes[i].apply(r, doc, change);
	if (schema_changes[i].changes_tables)
	{
		/* cached shapes and statements describe the tables as they were */
		zs_replica_forget_statements(r);
		zs_replica_forget_tables(r);
	}
	return ok;
}
