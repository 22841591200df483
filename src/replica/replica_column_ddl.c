/*-------------------------------------------------------------------------
 * replica_column_ddl.c
 *	  Column changes on a zero-cache-format replica (add-column,
 *	  update-column, drop-column) and the declaration of a column from its
 *	  ColumnSpec, which create-table (replica_ddl.c) uses too; as
 *	  zero-cache 1.9.0's replicator applies them.
 *
 * Declared types come from the ColumnSpec (dataType, notNull, pgTypeClass,
 * elemPgTypeClass), through the same ZsReplicaColumn and
 * zs_replica_append_declared_type() as the initial copy's, e.g.
 * "int4|NOT_NULL", "text[]|TEXT_ARRAY", "mood|TEXT_ENUM".
 *
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
 *
 * Where zero-cache 1.9.0 fails and this file does not: a column whose type
 * has an element type but is no array (a scalar point, line, box, ...,
 * which zero sends with elemPgTypeClass "b") is declared with its plain type
 * as the initial copy declares it, not "point|TEXT_ARRAY" (on which zero's
 * own assertion stops its replicator); a dropped column's indexes are
 * dropped with it. The versions each change bumps are replica_ddl.c's.
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

/* ---------------------------------------------------------------- metadata */

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
bool
zs_replica_column_from_spec(ZsReplica *r, const ZsJsonDoc *doc, const char *name, int spec,
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

/* ---------------------------------------------------------------- columns */

bool
zs_replica_column_add(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	int			column = zs_json_get(doc, change, "column");
	int			metadata = zs_json_get(doc, change, "tableMetadata");
	int			backfill = zs_json_get(doc, change, "backfill");
	const char *name = zs_json_get_string(doc, column, "name");
	int			spec = zs_json_get(doc, column, "spec");
	StringInfo	s = &r->sql;
	ZsReplicaColumn c;
	ZsReplicaTableId		id;
	bool		ok = false;

	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "table"), "name", "add-column table", &id))
		return false;
	memset(&c, 0, sizeof(c));
	if (zs_replica_ddl_present(doc, metadata) && !zs_replica_ddl_set_upstream_metadata(r, &id, doc, metadata))
		goto done;
	if (zs_replica_ddl_known_table(r, id.lite, "add-column") == NULL ||
		!zs_replica_column_from_spec(r, doc, name, spec, "add-column", &c))
		goto done;

	resetStringInfo(s);
	appendStringInfoString(s, "ALTER TABLE ");
	zs_replica_append_ident(s, id.lite);
	appendStringInfoString(s, " ADD ");
	zs_replica_append_ident(s, name);
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
	if (zs_replica_ddl_present(doc, backfill))
		c.backfill = zs_replica_ddl_compact_json(doc, backfill);
	ok = zs_replica_insert_column_metadata(r, id.lite, &c) &&
		(c.backfill != NULL || zs_replica_ddl_bump_versions(r, &id));

done:
	if (c.backfill != NULL)
		pfree((char *) c.backfill);
	zs_replica_ddl_free_table_id(&id);
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
			zs_replica_append_ident(s, name);
			appendStringInfoString(s, " ON ");
			zs_replica_append_ident(s, table);
			appendStringInfoString(s, " (");
		}
		else
			appendStringInfoChar(s, ',');
		zs_replica_append_ident(s, strcmp(col, old_name) == 0 ? new_name : col);
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
	zs_replica_append_ident(s, tmp);
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
			zs_replica_append_ident(s, changed ? c->name : name);
			appendStringInfoChar(s, ' ');
			if (changed)
				zs_replica_append_declared_type(s, c);
			else
			{
				zs_replica_append_ident(s, type ? type : "");
				if (sqlite3_column_int(stmt, 2))
					appendStringInfoString(s, " NOT NULL");
				if (dflt != NULL && dflt[0] != '\0')
					appendStringInfo(s, " DEFAULT %s", dflt);
			}
			zs_replica_append_ident(&dest, changed ? c->name : name);
			zs_replica_append_ident(&src, name);
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
			zs_replica_append_ident(&pk, strcmp(name, old_name) == 0 ? c->name : name);
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
		zs_replica_append_ident(s, tmp);
		appendStringInfo(s, " (%s) SELECT %s FROM ", dest.data, src.data);
		zs_replica_append_ident(s, table);
		appendStringInfoString(s, ";DROP TABLE ");
		zs_replica_append_ident(s, table);
		appendStringInfoString(s, ";ALTER TABLE ");
		zs_replica_append_ident(s, tmp);
		appendStringInfoString(s, " RENAME TO ");
		zs_replica_append_ident(s, table);
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

bool
zs_replica_column_update(ZsReplica *r, const ZsJsonDoc *doc, int change)
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
	ZsReplicaTableId		id;
	bool		ok = false;

	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "table"), "name", "update-column table", &id))
		return false;
	initStringInfo(&old_type);
	initStringInfo(&new_type);
	if (!zs_replica_column_from_spec(r, doc, old_name, zs_json_get(doc, old_col, "spec"), "update-column old", &old_c) ||
		!zs_replica_column_from_spec(r, doc, new_name, zs_json_get(doc, new_col, "spec"), "update-column new", &new_c) ||
		(t = zs_replica_ddl_known_table(r, id.lite, "update-column")) == NULL)
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
		zs_replica_append_ident(s, id.lite);
		appendStringInfoString(s, " RENAME ");
		zs_replica_append_ident(s, old_name);
		appendStringInfoString(s, " TO ");
		zs_replica_append_ident(s, new_name);
		ok = zs_replica_exec(r, s->data);
	}
	ok = ok && update_column_metadata(r, id.lite, old_name, &new_c) && zs_replica_ddl_bump_versions(r, &id);

done:
	pfree(old_type.data);
	pfree(new_type.data);
	zs_replica_ddl_free_table_id(&id);
	return ok;
}

bool
zs_replica_column_drop(ZsReplica *r, const ZsJsonDoc *doc, int change)
{
	const char *column = zs_json_get_string(doc, change, "column");
	StringInfo	s = &r->sql;
	sqlite3_stmt *stmt;
	TableInfo  *t;
	ZsReplicaTableId		id;
	bool		ok = false;

	if (!zs_replica_ddl_table_id(r, doc, zs_json_get(doc, change, "table"), "name", "drop-column table", &id))
		return false;
	if ((t = zs_replica_ddl_known_table(r, id.lite, "drop-column")) == NULL)
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
		zs_replica_append_ident(s, (const char *) sqlite3_column_text(stmt, 0));
		appendStringInfoChar(s, ';');
	}
	sqlite3_reset(stmt);
	appendStringInfoString(s, "ALTER TABLE ");
	zs_replica_append_ident(s, id.lite);
	appendStringInfoString(s, " DROP ");
	zs_replica_append_ident(s, column);
	ok = zs_replica_exec(r, s->data) &&
		zs_replica_ddl_run(r, "DELETE FROM \"_zero.column_metadata\" WHERE table_name = ? AND column_name = ?",
						   2, id.lite, column) &&
		zs_replica_ddl_bump_versions(r, &id);

done:
	zs_replica_ddl_free_table_id(&id);
	return ok;
}
