/*-------------------------------------------------------------------------
 * replica_ddl.c
 *	  Schema changes and backfills on a zero-cache-format replica, applied
 *	  as zero-cache 1.9.0's replicator applies them (its change processor;
 *	  docs/zero-protocol.md §3.4 and §8).
 *
 * Names: a table, and an index, is "name" in schema public, else
 * "schema.name" (zero's liteTableName). Declared types come from the
 * ColumnSpec (dataType, notNull, pgTypeClass, elemPgTypeClass), through the
 * same ZsReplicaColumn and zs_replica_append_declared_type() as the
 * initial copy's, e.g. "int4|NOT_NULL", "text[]|TEXT_ARRAY", "mood|TEXT_ENUM".
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
 * add-column      ALTER TABLE ADD "c" "declared type" [DEFAULT d], d being
 *                 the Postgres default where zero keeps one (a number,
 *                 true/false as 1/0, a quoted literal with a cast, an empty
 *                 array as '[]'); any other default is an error, as in zero
 *                 (whose change source sends such a column with a backfill
 *                 and no default instead).
 * update-column   a new name: ALTER TABLE RENAME COLUMN. A new declared type
 *                 (type, NOT NULL, enum or array): zero's rebuild, since
 *                 SQLite cannot alter a column: CREATE TABLE "tmp.<t>" with
 *                 the column's new declaration (without a default) and every
 *                 other column as SQLite reports it (type, NOT NULL, default;
 *                 SQLite reports a declared "text" as "TEXT", and so the new
 *                 table declares it, as zero's does),
 *                 copy the rows, DROP TABLE, rename "tmp.<t>" to <t>, create
 *                 the table's indexes again (in name order). Anything else
 *                 (a new default) only updates column_metadata.
 * drop-column     drops the indexes using the column (SQLite refuses to drop
 *                 an indexed column; Postgres dropped them with it), then
 *                 ALTER TABLE DROP.
 * drop-table      DROP TABLE IF EXISTS, and its metadata rows.
 * create-index    CREATE [UNIQUE] INDEX "name" ON "table" ("c" ASC|DESC, ...)
 *                 in the spec's column order.
 * drop-index      DROP INDEX IF EXISTS.
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
 *                 the backfilled columns.
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
 * Where zero-cache 1.9.0 fails and this file does not: a column whose type
 * has an element type but is no array (a scalar point, line, box, ...,
 * which zero sends with elemPgTypeClass "b") is declared with its plain type
 * as the initial copy declares it, not "point|TEXT_ARRAY" (on which zero's
 * own assertion stops its replicator); a dropped column's indexes are
 * dropped with it. Bad input (an unknown table or column, a spec without a
 * dataType, a malformed backfill) is an error naming the change, never a
 * crash.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "codec/json_out.h"
#include "replica/replica_internal.h"

/* A table (or index) of a change: {"schema":..,"name":..} */
typedef struct TableId
{
	const char *schema;
	const char *name;
	char	   *lite;			/* the replica's name (palloc'd) */
} TableId;

/* ---------------------------------------------------------------- helpers */

static bool
table_id(ZsReplica *r, const ZsJsonDoc *doc, int obj, const char *name_key,
		 const char *what, TableId *id)
{
	id->schema = zs_json_get_string(doc, obj, "schema");
	id->name = zs_json_get_string(doc, obj, name_key);
	id->lite = NULL;
	if (id->schema == NULL || id->name == NULL || id->name[0] == '\0')
		return zs_replica_set_error(r, "%s without a schema and %s", what, name_key);
	id->lite = zs_replica_table_name(id->schema, id->name);
	return true;
}

static void
free_table_id(TableId *id)
{
	if (id->lite != NULL)
		pfree(id->lite);
	id->lite = NULL;
}

/* The table's cache entry; an error naming the change if it has no such table. */
static TableInfo *
known_table(ZsReplica *r, const char *table, const char *what)
{
	TableInfo  *t = zs_replica_table_info(r, table);

	if (t == NULL && r->error[0] == '\0')
		zs_replica_set_error(r, "%s: unknown table \"%s\"", what, table);
	return t;
}

/* Run a statement with text parameters (a NULL one binds NULL). */
static bool
run(ZsReplica *r, const char *sql, int nparams,...)
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
static char *
compact_json(const ZsJsonDoc *doc, int node)
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
static bool
present(const ZsJsonDoc *doc, int node)
{
	return node >= 0 && doc->nodes[node].type != ZS_JSON_NULL;
}

/* ---------------------------------------------------------------- metadata */

/* tableMetadata.upstreamMetadata (zero's setUpstreamMetadata) */
static bool
set_upstream_metadata(ZsReplica *r, const TableId *id, const ZsJsonDoc *doc, int metadata)
{
	char	   *text = compact_json(doc, metadata);
	bool		ok;

	ok = run(r, "INSERT INTO \"_zero.tableMetadata\" (\"schema\", \"table\", \"upstreamMetadata\") VALUES (?, ?, ?) "
			 "ON CONFLICT (\"schema\", \"table\") DO UPDATE SET \"upstreamMetadata\" = excluded.\"upstreamMetadata\"",
			 3, id->schema, id->name, text);
	pfree(text);
	return ok;
}

/*
 * minRowVersion = the transaction's version, and a reset: every row of the
 * table counts as changed (zero's bumpVersions).
 */
static bool
bump_versions(ZsReplica *r, const TableId *id)
{
	return run(r, "INSERT INTO \"_zero.tableMetadata\" (\"schema\", \"table\", \"minRowVersion\") VALUES (?, ?, ?) "
			   "ON CONFLICT (\"schema\", \"table\") DO UPDATE SET \"minRowVersion\" = excluded.\"minRowVersion\"",
			   3, id->schema, id->name, r->txn_watermark) &&
		zs_replica_log_reset(r, id->lite);
}

/* column_metadata of a changed column (zero's ColumnMetadataStore.update) */
static bool
update_column_metadata(ZsReplica *r, const char *table, const char *old_name,
					   const ZsReplicaColumn *c)
{
	sqlite3_stmt *stmt;

	stmt = zs_replica_statement(r, "UPDATE \"_zero.column_metadata\" SET column_name = ?, upstream_type = ?, "
								"is_not_null = ?, is_enum = ?, is_array = ?, character_max_length = ? "
								"WHERE table_name = ? AND column_name = ?");
	if (stmt == NULL)
		return false;
	zs_replica_bind_column_metadata(stmt, 1, c);
	sqlite3_bind_text(stmt, 7, table, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 8, old_name, -1, SQLITE_TRANSIENT);
	return zs_replica_step_done(r, stmt);
}

/* ---------------------------------------------------------------- column specs */

/*
 * A ColumnSpec as the replica declares it (zero's mapPostgresToLiteColumn
 * and pgColumnSpecToMetadata): an array is a type with an element type
 * class and "[]" in its name; enum is the type class of the element (of an
 * array) or of the type.
 */
static bool
column_from_spec(ZsReplica *r, const ZsJsonDoc *doc, const char *name, int spec,
				 const char *what, ZsReplicaColumn *c)
{
	const char *type = zs_json_get_string(doc, spec, "dataType");
	const char *type_class = zs_json_get_string(doc, spec, "pgTypeClass");
	const char *elem_class = zs_json_get_string(doc, spec, "elemPgTypeClass");
	int			not_null = zs_json_get(doc, spec, "notNull");
	int			max_length = zs_json_get(doc, spec, "characterMaximumLength");
	const char *class;
	int64		length;

	memset(c, 0, sizeof(*c));
	c->char_max_length = -1;
	if (name == NULL || name[0] == '\0')
		return zs_replica_set_error(r, "%s: a column without a name", what);
	if (spec < 0 || doc->nodes[spec].type != ZS_JSON_OBJECT)
		return zs_replica_set_error(r, "%s: column \"%s\" has no spec", what, name);
	if (type == NULL || type[0] == '\0' || strchr(type, '|') != NULL)
		return zs_replica_set_error(r, "%s: column \"%s\" has no valid dataType", what, name);
	c->name = name;
	c->upstream_type = type;
	c->not_null = (not_null >= 0 && doc->nodes[not_null].type == ZS_JSON_TRUE);
	c->is_array = (elem_class != NULL && strstr(type, "[]") != NULL);
	class = c->is_array ? elem_class : type_class;
	c->is_enum = (class != NULL && strcmp(class, "e") == 0);
	if (max_length >= 0 && doc->nodes[max_length].type == ZS_JSON_NUMBER &&
		zs_json_int64(doc, max_length, &length) && length >= 0 && length <= PG_INT32_MAX)
		c->char_max_length = (int) length;
	return true;
}

static bool
is_word(const char *p, const char *end)
{
	if (p >= end)
		return false;
	for (; p < end; p++)
		if (!(isalnum((unsigned char) *p) || *p == '_') || (unsigned char) *p >= 0x80)
			return false;
	return true;
}

/* "::name[]" to the end */
static bool
is_array_cast(const char *p)
{
	size_t		len = strlen(p);

	return len > 4 && strncmp(p, "::", 2) == 0 && strcmp(p + len - 2, "[]") == 0 &&
		is_word(p + 2, p + len - 2);
}

/* -?digits(.digits)? */
static bool
is_number_literal(const char *p)
{
	const char *start;

	if (*p == '-')
		p++;
	for (start = p; isdigit((unsigned char) *p); p++)
		;
	if (p == start)
		return false;
	if (*p == '.')
	{
		for (start = ++p; isdigit((unsigned char) *p); p++)
			;
		if (p == start)
			return false;
	}
	return *p == '\0';
}

/*
 * '<text>'::name: the length of '<text>', or 0. As JavaScript's
 * /^('.*')::(\w+)$/ reads it: the last "::", a quote before it, no line
 * terminator inside. '<text>' must also be one SQL string literal (quotes
 * inside doubled), as Postgres writes a constant: it is copied into the
 * ALTER TABLE, and anything else (say 'x'; DROP TABLE t; SELECT 'y') would
 * run as SQL of its own.
 */
static int
quoted_with_cast(const char *d)
{
	const char *cast = NULL;

	if (d[0] != '\'')
		return 0;
	for (const char *p = d; (p = strstr(p, "::")) != NULL; p++)
		cast = p;
	if (cast == NULL || cast - d < 2 || cast[-1] != '\'' || !is_word(cast + 2, cast + strlen(cast)))
		return 0;
	for (const char *p = d; p < cast; p++)
		if (*p == '\n' || *p == '\r' ||
			((unsigned char) p[0] == 0xE2 && (unsigned char) p[1] == 0x80 &&
			 ((unsigned char) p[2] == 0xA8 || (unsigned char) p[2] == 0xA9)))
			return 0;
	for (const char *p = d + 1; p < cast - 1; p++)
		if (*p == '\'' && (++p >= cast - 1 || *p != '\''))
			return 0;
	return (int) (cast - d);
}

/*
 * The SQLite default of a Postgres default expression, appended to out
 * (nothing for none): zero's mapPostgresToLiteDefault.
 */
static bool
lite_default(ZsReplica *r, const char *table, const char *column, const char *dflt,
			 StringInfo out)
{
	int			quoted;

	if (dflt == NULL || dflt[0] == '\0')
		return true;
	if (is_number_literal(dflt))
		appendStringInfoString(out, dflt);
	else if (strcmp(dflt, "true") == 0 || strcmp(dflt, "false") == 0)
		appendStringInfoChar(out, dflt[0] == 't' ? '1' : '0');
	else if ((quoted = quoted_with_cast(dflt)) > 0)
		appendBinaryStringInfo(out, dflt, quoted);
	else
	{
		const char *p = dflt;
		bool		empty_array = false;

		if (pg_strncasecmp(p, "ARRAY", 5) == 0)
		{
			for (p += 5; isspace((unsigned char) *p); p++)
				;
			if (*p == '[')
			{
				for (p++; isspace((unsigned char) *p); p++)
					;
				empty_array = (*p == ']' && is_array_cast(p + 1));
			}
		}
		else if (strncmp(p, "'{}'", 4) == 0)
			empty_array = is_array_cast(p + 4);
		if (!empty_array)
			return zs_replica_set_error(r, "Unsupported default value for %s.%s: %s",
										table, column, dflt);
		appendStringInfoString(out, "'[]'");
	}
	return true;
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
	TableId		id;
	bool		ok = false;

	if (!table_id(r, doc, spec, "name", "create-table spec", &id))
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

		if (!column_from_spec(r, doc, zs_json_key(doc, c), c, "create-table", &cols[i]))
			goto done;
		if (p < 0 || doc->nodes[p].type != ZS_JSON_NUMBER || !zs_json_int64(doc, p, &column_pos))
		{
			zs_replica_set_error(r, "create-table \"%s\": column \"%s\" has no pos", id.lite, cols[i].name);
			goto done;
		}
		if (present(doc, bf))
			cols[i].backfill = compact_json(doc, bf);
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

	if (present(doc, metadata) && !set_upstream_metadata(r, &id, doc, metadata))
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
	free_table_id(&id);
	return ok;
}

static bool
apply_rename_table(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	TableId		old_id,
				new_id;
	StringInfo	s = &r->sql;
	bool		ok;

	if (!table_id(r, doc, zs_json_get(doc, change, "old"), "name", "rename-table old", &old_id))
		return false;
	if (!table_id(r, doc, zs_json_get(doc, change, "new"), "name", "rename-table new", &new_id))
	{
		free_table_id(&old_id);
		return false;
	}
	ok = known_table(r, old_id.lite, "rename-table") != NULL &&
		run(r, "UPDATE \"_zero.tableMetadata\" SET \"schema\" = ?, \"table\" = ? WHERE \"schema\" = ? AND \"table\" = ?",
			4, new_id.schema, new_id.name, old_id.schema, old_id.name);
	if (ok)
	{
		resetStringInfo(s);
		appendStringInfoString(s, "ALTER TABLE ");
		append_ident(s, old_id.lite);
		appendStringInfoString(s, " RENAME TO ");
		append_ident(s, new_id.lite);
		ok = zs_replica_exec(r, s->data) &&
			run(r, "UPDATE \"_zero.column_metadata\" SET table_name = ? WHERE table_name = ?",
				2, new_id.lite, old_id.lite) &&
			bump_versions(r, &new_id) &&
			zs_replica_log_reset(r, old_id.lite);
	}
	free_table_id(&old_id);
	free_table_id(&new_id);
	return ok;
}

static bool
apply_update_table_metadata(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			metadata = zs_json_get(doc, change, "new");
	TableId		id;
	bool		ok;

	if (!table_id(r, doc, zs_json_get(doc, change, "table"), "name", "update-table-metadata table", &id))
		return false;
	if (metadata < 0 || doc->nodes[metadata].type != ZS_JSON_OBJECT)
		ok = zs_replica_set_error(r, "update-table-metadata of \"%s\" without a \"new\" object", id.lite);
	else
		ok = set_upstream_metadata(r, &id, doc, metadata);
	free_table_id(&id);
	return ok;
}

static bool
apply_drop_table(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	TableId		id;
	StringInfo	s = &r->sql;
	bool		ok;

	if (!table_id(r, doc, zs_json_get(doc, change, "id"), "name", "drop-table id", &id))
		return false;
	ok = run(r, "DELETE FROM \"_zero.tableMetadata\" WHERE \"schema\" = ? AND \"table\" = ?",
			 2, id.schema, id.name);
	if (ok)
	{
		resetStringInfo(s);
		appendStringInfoString(s, "DROP TABLE IF EXISTS ");
		append_ident(s, id.lite);
		ok = zs_replica_exec(r, s->data) &&
			run(r, "DELETE FROM \"_zero.column_metadata\" WHERE table_name = ?", 1, id.lite) &&
			zs_replica_log_reset(r, id.lite);
	}
	free_table_id(&id);
	return ok;
}

/* ---------------------------------------------------------------- columns */

static bool
apply_add_column(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			column = zs_json_get(doc, change, "column");
	int			metadata = zs_json_get(doc, change, "tableMetadata");
	int			backfill = zs_json_get(doc, change, "backfill");
	const char *name = zs_json_get_string(doc, column, "name");
	int			spec = zs_json_get(doc, column, "spec");
	StringInfo	s = &r->sql;
	ZsReplicaColumn c;
	TableId		id;
	bool		ok = false;

	if (!table_id(r, doc, zs_json_get(doc, change, "table"), "name", "add-column table", &id))
		return false;
	memset(&c, 0, sizeof(c));
	if (present(doc, metadata) && !set_upstream_metadata(r, &id, doc, metadata))
		goto done;
	if (known_table(r, id.lite, "add-column") == NULL ||
		!column_from_spec(r, doc, name, spec, "add-column", &c))
		goto done;

	resetStringInfo(s);
	appendStringInfoString(s, "ALTER TABLE ");
	append_ident(s, id.lite);
	appendStringInfoString(s, " ADD ");
	append_ident(s, name);
	appendStringInfoChar(s, ' ');
	zs_replica_append_declared_type(s, &c);
	{
		StringInfoData dflt;

		initStringInfo(&dflt);
		ok = lite_default(r, id.lite, name, zs_json_get_string(doc, spec, "dflt"), &dflt);
		if (dflt.len > 0)
			appendStringInfo(s, " DEFAULT %s", dflt.data);
		pfree(dflt.data);
	}
	if (!ok || !zs_replica_exec(r, s->data))
	{
		ok = false;
		goto done;
	}
	if (present(doc, backfill))
		c.backfill = compact_json(doc, backfill);
	ok = zs_replica_insert_column_metadata(r, id.lite, &c) &&
		(c.backfill != NULL || bump_versions(r, &id));

done:
	if (c.backfill != NULL)
		pfree((char *) c.backfill);
	free_table_id(&id);
	return ok;
}

/*
 * Indexes of a table as CREATE INDEX statements, in name order, with the
 * column old renamed to new (zero's listIndexes and createLiteIndexStatement).
 */
static bool
append_index_statements(ZsReplica *r, StringInfo s, const char *table,
						const char *old_name, const char *new_name)
{
	sqlite3_stmt *stmt;
	char	   *index = NULL;
	int			rc;

	stmt = zs_replica_statement(r, "SELECT m.name, il.\"unique\", ix.name, ix.\"desc\" FROM sqlite_master m "
								"JOIN pragma_index_list(m.tbl_name) il ON il.name = m.name "
								"JOIN pragma_index_xinfo(m.name) ix "
								"WHERE m.type = 'index' AND m.tbl_name = ? AND m.sql IS NOT NULL AND ix.key = 1 "
								"ORDER BY m.name, ix.seqno");
	if (stmt == NULL)
		return false;
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
	{
		const char *name = (const char *) sqlite3_column_text(stmt, 0);
		const char *col = (const char *) sqlite3_column_text(stmt, 2);

		if (col == NULL)
		{
			zs_replica_set_error(r, "index \"%s\" of \"%s\" has an expression: it cannot be rebuilt", name, table);
			break;
		}
		if (index == NULL || strcmp(index, name) != 0)
		{
			if (index != NULL)
			{
				appendStringInfoString(s, ");");
				pfree(index);
			}
			index = pstrdup(name);
			appendStringInfoString(s, sqlite3_column_int(stmt, 1) ? "CREATE UNIQUE INDEX " : "CREATE INDEX ");
			append_ident(s, name);
			appendStringInfoString(s, " ON ");
			append_ident(s, table);
			appendStringInfoString(s, " (");
		}
		else
			appendStringInfoChar(s, ',');
		append_ident(s, strcmp(col, old_name) == 0 ? new_name : col);
		appendStringInfoString(s, sqlite3_column_int(stmt, 3) ? " DESC" : " ASC");
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		zs_replica_set_error(r, "reading the indexes of \"%s\": %s", table, sqlite3_errmsg(r->db));
	sqlite3_reset(stmt);
	if (index != NULL)
	{
		appendStringInfoString(s, ");");
		pfree(index);
	}
	return r->error[0] == '\0';
}

/*
 * The table again with column old_name declared as c (zero's way of
 * changing a column's type in SQLite): a new table "tmp.<table>" with the
 * same columns in the same order, the rows copied, the old table dropped,
 * the new one renamed, the indexes created again.
 */
static bool
rebuild_table(ZsReplica *r, const char *table, const char *old_name, const ZsReplicaColumn *c)
{
	StringInfo	s = &r->sql;
	StringInfoData dest,
				src,
				pk;
	char	   *tmp = psprintf("tmp.%s", table);
	sqlite3_stmt *stmt;
	bool		found = false;
	bool		ok;

	initStringInfo(&dest);
	initStringInfo(&src);
	initStringInfo(&pk);
	resetStringInfo(s);
	appendStringInfoString(s, "CREATE TABLE ");
	append_ident(s, tmp);
	appendStringInfoString(s, " (\n");
	stmt = zs_replica_statement(r, "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid");
	ok = (stmt != NULL);
	if (ok)
	{
		sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
		while (sqlite3_step(stmt) == SQLITE_ROW)
		{
			const char *name = (const char *) sqlite3_column_text(stmt, 0);
			const char *type = (const char *) sqlite3_column_text(stmt, 1);
			const char *dflt = (const char *) sqlite3_column_text(stmt, 3);
			bool		changed = (strcmp(name, old_name) == 0);

			if (dest.len > 0)
			{
				appendStringInfoString(s, ",\n");
				appendStringInfoChar(&dest, ',');
				appendStringInfoChar(&src, ',');
			}
			append_ident(s, changed ? c->name : name);
			appendStringInfoChar(s, ' ');
			if (changed)
				zs_replica_append_declared_type(s, c);
			else
			{
				append_ident(s, type ? type : "");
				if (sqlite3_column_int(stmt, 2))
					appendStringInfoString(s, " NOT NULL");
				if (dflt != NULL && dflt[0] != '\0')
					appendStringInfo(s, " DEFAULT %s", dflt);
			}
			append_ident(&dest, changed ? c->name : name);
			append_ident(&src, name);
			found |= changed;
		}
		sqlite3_reset(stmt);
		stmt = zs_replica_statement(r, "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk");
		ok = (stmt != NULL);
	}
	if (ok)
	{
		sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
		while (sqlite3_step(stmt) == SQLITE_ROW)
		{
			const char *name = (const char *) sqlite3_column_text(stmt, 0);

			if (pk.len > 0)
				appendStringInfoChar(&pk, ',');
			append_ident(&pk, strcmp(name, old_name) == 0 ? c->name : name);
		}
		sqlite3_reset(stmt);
		if (!found)
			ok = zs_replica_set_error(r, "update-column: table \"%s\" has no column \"%s\"", table, old_name);
	}
	if (ok)
	{
		if (pk.len > 0)
			appendStringInfo(s, ",\nPRIMARY KEY (%s)", pk.data);
		appendStringInfoString(s, "\n);INSERT INTO ");
		append_ident(s, tmp);
		appendStringInfo(s, " (%s) SELECT %s FROM ", dest.data, src.data);
		append_ident(s, table);
		appendStringInfoString(s, ";DROP TABLE ");
		append_ident(s, table);
		appendStringInfoString(s, ";ALTER TABLE ");
		append_ident(s, tmp);
		appendStringInfoString(s, " RENAME TO ");
		append_ident(s, table);
		appendStringInfoChar(s, ';');
		ok = append_index_statements(r, s, table, old_name, c->name);
	}
	if (ok)
	{
		/* the SQL is in r->sql, which the statements above no longer need */
		zs_replica_forget_statements(r);
		ok = zs_replica_exec(r, s->data);
	}
	pfree(dest.data);
	pfree(src.data);
	pfree(pk.data);
	pfree(tmp);
	return ok;
}

static bool
apply_update_column(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			old_col = zs_json_get(doc, change, "old");
	int			new_col = zs_json_get(doc, change, "new");
	const char *old_name = zs_json_get_string(doc, old_col, "name");
	const char *new_name = zs_json_get_string(doc, new_col, "name");
	ZsReplicaColumn old_c,
				new_c;
	StringInfoData old_type,
				new_type;
	StringInfo	s = &r->sql;
	TableInfo  *t;
	TableId		id;
	bool		ok = false;

	if (!table_id(r, doc, zs_json_get(doc, change, "table"), "name", "update-column table", &id))
		return false;
	initStringInfo(&old_type);
	initStringInfo(&new_type);
	if (!column_from_spec(r, doc, old_name, zs_json_get(doc, old_col, "spec"), "update-column old", &old_c) ||
		!column_from_spec(r, doc, new_name, zs_json_get(doc, new_col, "spec"), "update-column new", &new_c) ||
		(t = known_table(r, id.lite, "update-column")) == NULL)
		goto done;
	if (!zs_replica_table_has_column(t, old_name))
	{
		zs_replica_set_error(r, "update-column: table \"%s\" has no column \"%s\"", id.lite, old_name);
		goto done;
	}
	zs_replica_append_declared_type(&old_type, &old_c);
	zs_replica_append_declared_type(&new_type, &new_c);
	if (strcmp(old_name, new_name) == 0 && strcmp(old_type.data, new_type.data) == 0)
	{
		/* a default or a length: the declaration stays */
		ok = update_column_metadata(r, id.lite, old_name, &new_c);
		goto done;
	}
	if (strcmp(old_type.data, new_type.data) != 0)
		ok = rebuild_table(r, id.lite, old_name, &new_c);
	else
	{
		resetStringInfo(s);
		appendStringInfoString(s, "ALTER TABLE ");
		append_ident(s, id.lite);
		appendStringInfoString(s, " RENAME ");
		append_ident(s, old_name);
		appendStringInfoString(s, " TO ");
		append_ident(s, new_name);
		ok = zs_replica_exec(r, s->data);
	}
	ok = ok && update_column_metadata(r, id.lite, old_name, &new_c) && bump_versions(r, &id);

done:
	pfree(old_type.data);
	pfree(new_type.data);
	free_table_id(&id);
	return ok;
}

static bool
apply_drop_column(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	const char *column = zs_json_get_string(doc, change, "column");
	StringInfo	s = &r->sql;
	sqlite3_stmt *stmt;
	TableInfo  *t;
	TableId		id;
	bool		ok = false;

	if (!table_id(r, doc, zs_json_get(doc, change, "table"), "name", "drop-column table", &id))
		return false;
	if ((t = known_table(r, id.lite, "drop-column")) == NULL)
		goto done;
	if (column == NULL || !zs_replica_table_has_column(t, column))
	{
		zs_replica_set_error(r, "drop-column: table \"%s\" has no column \"%s\"", id.lite,
							 column ? column : "(none)");
		goto done;
	}

	/* SQLite refuses to drop an indexed column: its indexes go first */
	resetStringInfo(s);
	stmt = zs_replica_statement(r, "SELECT DISTINCT m.name FROM sqlite_master m JOIN pragma_index_xinfo(m.name) ix "
								"WHERE m.type = 'index' AND m.tbl_name = ? AND m.sql IS NOT NULL AND ix.name = ?");
	if (stmt == NULL)
		goto done;
	sqlite3_bind_text(stmt, 1, id.lite, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 2, column, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(stmt) == SQLITE_ROW)
	{
		appendStringInfoString(s, "DROP INDEX ");
		append_ident(s, (const char *) sqlite3_column_text(stmt, 0));
		appendStringInfoChar(s, ';');
	}
	sqlite3_reset(stmt);
	appendStringInfoString(s, "ALTER TABLE ");
	append_ident(s, id.lite);
	appendStringInfoString(s, " DROP ");
	append_ident(s, column);
	ok = zs_replica_exec(r, s->data) &&
		run(r, "DELETE FROM \"_zero.column_metadata\" WHERE table_name = ? AND column_name = ?",
			2, id.lite, column) &&
		bump_versions(r, &id);

done:
	free_table_id(&id);
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
	TableId		table,
				index;
	bool		ok = false;

	if (!table_id(r, doc, spec, "tableName", "create-index spec", &table))
		return false;
	if (!table_id(r, doc, spec, "name", "create-index spec", &index))
	{
		free_table_id(&table);
		return false;
	}
	if ((t = known_table(r, table.lite, "create-index")) == NULL)
		goto done;
	if (columns < 0 || doc->nodes[columns].type != ZS_JSON_OBJECT || doc->nodes[columns].count == 0)
	{
		zs_replica_set_error(r, "create-index \"%s\": the spec has no columns", index.lite);
		goto done;
	}
	resetStringInfo(s);
	appendStringInfoString(s, unique >= 0 && doc->nodes[unique].type == ZS_JSON_TRUE ?
						   "CREATE UNIQUE INDEX " : "CREATE INDEX ");
	append_ident(s, index.lite);
	appendStringInfoString(s, " ON ");
	append_ident(s, table.lite);
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
		append_ident(s, zs_json_key(doc, c));
		appendStringInfo(s, " %s", zs_json_str(doc, c));
	}
	appendStringInfoChar(s, ')');
	/* an index over a table whose every column is being backfilled is no reset */
	ok = zs_replica_exec(r, s->data) &&
		(t->nbackfilling == t->ncols - 1 || zs_replica_log_reset(r, table.lite));

done:
	free_table_id(&table);
	free_table_id(&index);
	return ok;
}

static bool
apply_drop_index(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	StringInfo	s = &r->sql;
	TableId		id;
	bool		ok;

	if (!table_id(r, doc, zs_json_get(doc, change, "id"), "name", "drop-index id", &id))
		return false;
	resetStringInfo(s);
	appendStringInfoString(s, "DROP INDEX IF EXISTS ");
	append_ident(s, id.lite);
	ok = zs_replica_exec(r, s->data);
	free_table_id(&id);
	return ok;
}

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
	append_ident(s, b->table);
	appendStringInfoString(s, " (");
	for (i = 0; i < b->ncols; i++)
	{
		append_ident(s, b->cols[i]);
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
		append_ident(s, b->cols[i]);
	}
	appendStringInfoString(s, ") DO UPDATE SET ");
	for (i = 0; i < b->ncols; i++)
	{
		if (!b->update[i])
			continue;
		if (--nupdates < 0)
			break;
		append_ident(s, b->cols[i]);
		appendStringInfoString(s, "=excluded.");
		append_ident(s, b->cols[i]);
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

static bool
apply_backfill(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			rows = zs_json_get(doc, change, "rowValues");
	TableId		id;
	Backfill	b;
	bool		ok;

	if (!table_id(r, doc, zs_json_get(doc, change, "relation"), "name", "backfill relation", &id))
		return false;
	ok = backfill_columns(r, doc, change, "backfill", id.lite, &b) &&
		known_table(r, id.lite, "backfill") != NULL;
	if (ok && (b.watermark = zs_json_get_string(doc, change, "watermark")) == NULL)
		ok = zs_replica_set_error(r, "backfill of \"%s\" without a watermark", id.lite);
	if (ok && (rows < 0 || doc->nodes[rows].type != ZS_JSON_ARRAY))
		ok = zs_replica_set_error(r, "backfill of \"%s\" without rowValues", id.lite);
	for (int v = ok ? doc->nodes[rows].first_child : -1; v >= 0 && ok; v = doc->nodes[v].next)
		ok = backfill_row(r, doc, &b, v);
	free_backfill(&b);
	free_table_id(&id);
	return ok;
}

static bool
apply_backfill_completed(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	TableId		id;
	Backfill	b;
	bool		ok;

	if (!table_id(r, doc, zs_json_get(doc, change, "relation"), "name", "backfill-completed relation", &id))
		return false;
	ok = backfill_columns(r, doc, change, "backfill-completed", id.lite, &b) &&
		known_table(r, id.lite, "backfill-completed") != NULL;
	for (int i = 0; ok && i < b.ncols; i++)
		ok = run(r, "UPDATE \"_zero.column_metadata\" SET backfill = NULL WHERE table_name = ? AND column_name = ?",
				 2, id.lite, b.cols[i]);
	ok = ok && bump_versions(r, &id);
	free_backfill(&b);
	free_table_id(&id);
	return ok;
}

/* ---------------------------------------------------------------- dispatch */

typedef bool (*SchemaChangeFunc) (ZsReplica *r, const ZsJsonDoc *doc, int change);

static const struct
{
	const char *tag;
	SchemaChangeFunc apply;
	bool		changes_tables; /* the caches must be forgotten after it */
}			schema_changes[] =
{
	{"create-table", apply_create_table, true},
	{"rename-table", apply_rename_table, true},
	{"update-table-metadata", apply_update_table_metadata, false},
	{"add-column", apply_add_column, true},
	{"update-column", apply_update_column, true},
	{"drop-column", apply_drop_column, true},
	{"drop-table", apply_drop_table, true},
	{"create-index", apply_create_index, true},
	{"drop-index", apply_drop_index, true},
	{"backfill", apply_backfill, false},
	{"backfill-completed", apply_backfill_completed, true},
};

int
zs_replica_apply_schema_change(ZsReplica *r, const ZsJsonDoc *doc, int change, int tag)
{
	for (int i = 0; i < (int) lengthof(schema_changes); i++)
	{
		bool		ok;

		if (!zs_json_str_eq(doc, tag, schema_changes[i].tag))
			continue;
		ok = schema_changes[i].apply(r, doc, change);
		if (schema_changes[i].changes_tables)
		{
			/* cached shapes and statements describe the tables as they were */
			zs_replica_forget_statements(r);
			zs_replica_forget_tables(r);
		}
		return ok ? 1 : -1;
	}
	return 0;
}
