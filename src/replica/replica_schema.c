/*-------------------------------------------------------------------------
 * replica_schema.c
 *	  The schema of a zero-cache-format replica: the "_zero.*" metadata
 *	  tables, the replicated tables with their unique indexes, and the
 *	  table cache.
 *
 * zs_replica_init() writes the metadata tables of a new replica
 * (versionHistory, replicationConfig, replicationState, changeLog2,
 * runtimeEvents, column_metadata, tableMetadata) as zero-cache creates them.
 *
 * Declared types: one function, zs_replica_append_declared_type(), turns a
 * Postgres column (ZsReplicaColumn) into its SQLite declaration, zero's
 * liteTypeString: the upstream type with "|NOT_NULL", "|TEXT_ENUM" and
 * "|TEXT_ARRAY" (in that order) as one quoted identifier, e.g.
 * "int8|NOT_NULL", "mood[]|TEXT_ENUM|TEXT_ARRAY". The initial copy (through
 * zs_replica_create_table) and the schema-change messages (replica_ddl.c,
 * which read ColumnSpecs into ZsReplicaColumns) both use it, and both
 * write "_zero.column_metadata" with zs_replica_insert_column_metadata().
 * The initial copy's tables default "_0_version" to the state version and
 * get their key's unique index here; a create-table message's do not (zero
 * passes no default there, and the index comes as its own create-index).
 *
 * A change to a table the replica lacks (a stream without schema-change
 * messages) creates it from the row, untyped, with its row key as unique
 * index unless the identity is FULL, and a column a row has and its table
 * lacks is added (zs_replica_row_table).
 *
 * The table cache holds each table's columns, the columns of its first
 * unique index and its columns being backfilled, read from SQLite's pragmas
 * and column_metadata at first use; it is forgotten after a schema change
 * and when a rollback may have undone what it describes.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "replica/replica_apply.h"
#include "replica/replica_internal.h"

/* ---------------------------------------------------------------- metadata tables */

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

bool
zs_replica_init(ZsReplica *r, const char *replica_version,
				const char *publications_json, const char *context_json)
{
	sqlite3_stmt *stmt;

	if (!zs_replica_exec(r, "BEGIN IMMEDIATE"))
		return false;
	if (!zs_replica_exec(r, replica_schema_sql))
		goto fail;
	if ((stmt = zs_replica_statement(r, "INSERT INTO \"_zero.replicationConfig\" (replicaVersion, publications, initialSyncContext) VALUES (?, ?, ?)")) == NULL)
		goto fail;
	sqlite3_bind_text(stmt, 1, replica_version, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 2, publications_json, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, 3, context_json, -1, SQLITE_TRANSIENT);
	if (!zs_replica_step_done(r, stmt))
		goto fail;
	if ((stmt = zs_replica_statement(r, "INSERT INTO \"_zero.replicationState\" (stateVersion, writeTimeMs) VALUES (?, ?)")) == NULL)
		goto fail;
	sqlite3_bind_text(stmt, 1, replica_version, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(stmt, 2, zs_replica_now_ms());
	if (!zs_replica_step_done(r, stmt))
		goto fail;
	if (!zs_replica_exec(r, "COMMIT"))
		goto fail;
	strlcpy(r->state_version, replica_version, sizeof(r->state_version));
	return true;

fail:
	(void) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
	return false;
}

bool
zs_replica_db_read_state(struct sqlite3 *db, char *replica_version, char *state_version,
						 char *error, size_t error_size)
{
	sqlite3_stmt *stmt;
	int			rc;

	if (sqlite3_prepare_v2(db, "SELECT c.replicaVersion, s.stateVersion "
						   "FROM \"_zero.replicationConfig\" c, \"_zero.replicationState\" s",
						   -1, &stmt, NULL) != SQLITE_OK)
	{
		snprintf(error, error_size, "not a Zero replica (%s)", sqlite3_errmsg(db));
		return false;
	}
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
	{
		strlcpy(replica_version, (const char *) sqlite3_column_text(stmt, 0), ZS_WATERMARK_MAXLEN);
		strlcpy(state_version, (const char *) sqlite3_column_text(stmt, 1), ZS_WATERMARK_MAXLEN);
	}
	else if (rc == SQLITE_DONE)
		snprintf(error, error_size, "the replica has no replicationConfig/replicationState row");
	else
		snprintf(error, error_size, "could not read the replica's state: %s", sqlite3_errmsg(db));
	sqlite3_finalize(stmt);
	return rc == SQLITE_ROW;
}

bool
zs_replica_read_state(ZsReplica *r, char *replica_version, char *state_version)
{
	char		error[256];

	if (!zs_replica_db_read_state(r->db, replica_version, state_version, error, sizeof(error)))
		return zs_replica_set_error(r, "%s", error);
	strlcpy(r->state_version, state_version, sizeof(r->state_version));
	return true;
}

/* ---------------------------------------------------------------- table cache */

/* Columns and first unique index of a table; NULL if it does not exist. */
TableInfo *
zs_replica_table_info(ZsReplica *r, const char *name)
{
	TableInfo  *t;
	sqlite3_stmt *stmt;
	char	   *index_name = NULL;

	for (t = r->tables; t != NULL; t = t->next)
		if (strcmp(t->name, name) == 0)
			return t;

	stmt = zs_replica_statement(r, "SELECT name FROM pragma_table_info(?)");
	if (stmt == NULL)
		return NULL;
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(stmt) == SQLITE_ROW)
	{
		if (t == NULL)
		{
			t = zs_replica_alloc(r, sizeof(TableInfo));
			memset(t, 0, sizeof(*t));
			t->name = zs_replica_strdup(r, name);
			t->maxcols = 16;
			t->cols = zs_replica_alloc(r, sizeof(char *) * t->maxcols);
		}
		if (t->ncols == t->maxcols)
		{
			t->maxcols *= 2;
			t->cols = repalloc(t->cols, sizeof(char *) * t->maxcols);
		}
		t->cols[t->ncols++] = zs_replica_strdup(r, (const char *) sqlite3_column_text(stmt, 0));
	}
	sqlite3_reset(stmt);
	if (t == NULL)
		return NULL;

	stmt = zs_replica_statement(r, "SELECT name FROM pragma_index_list(?) WHERE \"unique\" ORDER BY seq DESC LIMIT 1");
	if (stmt == NULL)
		return NULL;
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		index_name = pstrdup((const char *) sqlite3_column_text(stmt, 0));
	sqlite3_reset(stmt);
	if (index_name != NULL)
	{
		stmt = zs_replica_statement(r, "SELECT name FROM pragma_index_info(?) ORDER BY seqno");
		if (stmt == NULL)
			return NULL;
		sqlite3_bind_text(stmt, 1, index_name, -1, SQLITE_TRANSIENT);
		t->keys = zs_replica_alloc(r, sizeof(char *) * ZS_MAX_KEY_COLUMNS);
		while (sqlite3_step(stmt) == SQLITE_ROW && t->nkeys < ZS_MAX_KEY_COLUMNS)
		{
			const char *col = (const char *) sqlite3_column_text(stmt, 0);

			/* an expression (no column name) identifies no row: no key */
			if (col == NULL)
			{
				while (t->nkeys > 0)
					pfree(t->keys[--t->nkeys]);
				break;
			}
			t->keys[t->nkeys++] = zs_replica_strdup(r, col);
		}
		sqlite3_reset(stmt);
		pfree(index_name);
	}

	/* the columns being backfilled, in the table's column order */
	stmt = zs_replica_statement(r, "SELECT p.name FROM pragma_table_info(?1) p "
								"JOIN \"_zero.column_metadata\" m ON m.table_name = ?1 AND m.column_name = p.name "
								"WHERE m.backfill IS NOT NULL ORDER BY p.cid");
	if (stmt == NULL)
		return NULL;
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_TRANSIENT);
	t->backfilling = zs_replica_alloc(r, sizeof(char *) * t->ncols);
	while (sqlite3_step(stmt) == SQLITE_ROW && t->nbackfilling < t->ncols)
		t->backfilling[t->nbackfilling++] = zs_replica_strdup(r, (const char *) sqlite3_column_text(stmt, 0));
	sqlite3_reset(stmt);

	t->next = r->tables;
	r->tables = t;
	return t;
}

bool
zs_replica_table_has_column(const TableInfo *t, const char *col)
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
	t->cols[t->ncols++] = zs_replica_strdup(r, col);
}

void
zs_replica_forget_tables(ZsReplica *r)
{
	for (TableInfo *t = r->tables, *next; t != NULL; t = next)
	{
		next = t->next;
		for (int i = 0; i < t->ncols; i++)
			pfree(t->cols[i]);
		for (int i = 0; i < t->nkeys; i++)
			pfree(t->keys[i]);
		for (int i = 0; i < t->nbackfilling; i++)
			pfree(t->backfilling[i]);
		if (t->cols)
			pfree(t->cols);
		if (t->keys)
			pfree(t->keys);
		if (t->backfilling)
			pfree(t->backfilling);
		if (t->shape)
			pfree(t->shape);
		pfree(t->name);
		pfree(t);
	}
	r->tables = NULL;
}

/* ---------------------------------------------------------------- tables */

char *
zs_replica_table_name(const char *schema, const char *name)
{
	if (strcmp(schema, "public") == 0)
		return pstrdup(name);
	return psprintf("%s.%s", schema, name);
}

/* zero's declared type of a column (liteTypeString), quoted */
void
zs_replica_append_declared_type(StringInfo s, const ZsReplicaColumn *c)
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
	zs_replica_append_ident(s, t.data);
	pfree(t.data);
}

/*
 * CREATE TABLE with the columns in the order given, each with its declared
 * type, and "_0_version" last, defaulting to version_default unless that is
 * NULL: zero's createLiteTableStatement, whose text SQLite keeps.
 */
bool
zs_replica_create_table_columns(ZsReplica *r, const char *name,
								const ZsReplicaColumn *columns, int ncolumns,
								const char *version_default)
{
	StringInfo	s = &r->sql;

	resetStringInfo(s);
	appendStringInfoString(s, "CREATE TABLE ");
	zs_replica_append_ident(s, name);
	appendStringInfoString(s, " (\n");
	for (int i = 0; i < ncolumns; i++)
	{
		zs_replica_append_ident(s, columns[i].name);
		appendStringInfoChar(s, ' ');
		zs_replica_append_declared_type(s, &columns[i]);
		appendStringInfoString(s, ",\n");
	}
	appendStringInfoString(s, "\"_0_version\" \"text\"");
	if (version_default != NULL)
	{
		appendStringInfoString(s, " DEFAULT ");
		zs_replica_append_literal(s, version_default);
	}
	appendStringInfoString(s, "\n)");
	return zs_replica_exec(r, s->data);
}

/*
 * Bind a column's "_zero.column_metadata" fields (column_name, upstream_type,
 * is_not_null, is_enum, is_array, character_max_length) to the parameters
 * first .. first + 5 of stmt; a NULL length stays unbound (NULL).
 */
void
zs_replica_bind_column_metadata(sqlite3_stmt *stmt, int first, const ZsReplicaColumn *c)
{
	sqlite3_bind_text(stmt, first, c->name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(stmt, first + 1, c->upstream_type, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(stmt, first + 2, c->not_null);
	sqlite3_bind_int(stmt, first + 3, c->is_enum);
	sqlite3_bind_int(stmt, first + 4, c->is_array);
	if (c->char_max_length >= 0)
		sqlite3_bind_int(stmt, first + 5, c->char_max_length);
}

/* A column's "_zero.column_metadata" row (zero's ColumnMetadataStore.insert). */
bool
zs_replica_insert_column_metadata(ZsReplica *r, const char *table, const ZsReplicaColumn *c)
{
	sqlite3_stmt *stmt;

	stmt = zs_replica_statement(r, "INSERT INTO \"_zero.column_metadata\" (table_name, column_name, upstream_type, is_not_null, is_enum, is_array, character_max_length, backfill) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
	if (stmt == NULL)
		return false;
	sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
	zs_replica_bind_column_metadata(stmt, 2, c);
	if (c->backfill != NULL)
		sqlite3_bind_text(stmt, 8, c->backfill, -1, SQLITE_TRANSIENT);
	return zs_replica_step_done(r, stmt);
}

/*
 * A table of the initial copy: typed columns, "_0_version" defaulting to the
 * state version, the key's unique index, column_metadata.
 */
bool
zs_replica_create_table(ZsReplica *r, const ZsReplicaTable *table)
{
	char	   *name = zs_replica_table_name(table->schema, table->name);
	StringInfo	s = &r->sql;
	bool		ok = false;

	if (!zs_replica_create_table_columns(r, name, table->columns, table->ncolumns,
										 r->state_version))
		goto done;
	if (table->nkeys > 0)
	{
		resetStringInfo(s);
		appendStringInfoString(s, "CREATE UNIQUE INDEX ");
		if (table->key_index != NULL && strcmp(table->schema, "public") == 0)
			zs_replica_append_ident(s, table->key_index);
		else
		{
			char	   *iname = psprintf("%s.%s", table->schema,
										 table->key_index ? table->key_index : "key");

			zs_replica_append_ident(s, iname);
			pfree(iname);
		}
		appendStringInfoString(s, " ON ");
		zs_replica_append_ident(s, name);
		appendStringInfoString(s, " (");
		for (int i = 0; i < table->nkeys; i++)
		{
			if (i > 0)
				appendStringInfoChar(s, ',');
			zs_replica_append_ident(s, table->key_columns[i]);
			appendStringInfoString(s, " ASC");
		}
		appendStringInfoChar(s, ')');
		if (!zs_replica_exec(r, s->data))
			goto done;
	}
	for (int i = 0; i < table->ncolumns; i++)
		if (!zs_replica_insert_column_metadata(r, name, &table->columns[i]))
			goto done;
	ok = true;
done:
	pfree(name);
	return ok;
}

/* rowKey.columns of a relation, as member names (at most ZS_MAX_KEY_COLUMNS). */
int
zs_replica_relation_key_columns(const ZsJsonDoc *doc, int relation,
								const char **names)
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
TableInfo *
zs_replica_row_table(ZsReplica *r, const char *name, const ZsJsonDoc *doc, int row,
					 const ZsJsonDoc *kdoc, int relation)
{
	TableInfo  *t = zs_replica_table_info(r, name);
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
			nkeys = zs_replica_relation_key_columns(kdoc, relation, keys);
		/* SQLite would index a missing column's quoted name as a constant */
		for (int i = 0; i < nkeys; i++)
			if (zs_json_get(doc, row, keys[i]) < 0)
			{
				zs_replica_set_error(r, "a row of the new table \"%s\" has no key column \"%s\"",
									 name, keys[i]);
				return NULL;
			}

		resetStringInfo(s);
		appendStringInfoString(s, "CREATE TABLE ");
		zs_replica_append_ident(s, name);
		appendStringInfoString(s, " (");
		zs_replica_append_member_names(s, doc, row, ", ");
		appendStringInfoString(s, "\"_0_version\" \"text\")");
		if (!zs_replica_exec(r, s->data))
			return NULL;
		if (nkeys > 0)
		{
			char	   *iname = psprintf("%s_key", name);

			resetStringInfo(s);
			appendStringInfoString(s, "CREATE UNIQUE INDEX ");
			zs_replica_append_ident(s, iname);
			appendStringInfoString(s, " ON ");
			zs_replica_append_ident(s, name);
			appendStringInfoString(s, " (");
			for (int i = 0; i < nkeys; i++)
			{
				if (i > 0)
					appendStringInfoChar(s, ',');
				zs_replica_append_ident(s, keys[i]);
			}
			appendStringInfoChar(s, ')');
			pfree(iname);
			if (!zs_replica_exec(r, s->data))
				return NULL;
		}
		if ((t = zs_replica_table_info(r, name)) == NULL)
		{
			zs_replica_set_error(r, "table \"%s\" vanished after CREATE TABLE", name);
			return NULL;
		}
		return t;
	}
	for (int c = doc->nodes[row].first_child; c >= 0; c = doc->nodes[c].next)
	{
		const char *col = zs_json_key(doc, c);

		if (zs_replica_table_has_column(t, col))
			continue;
		resetStringInfo(s);
		appendStringInfoString(s, "ALTER TABLE ");
		zs_replica_append_ident(s, name);
		appendStringInfoString(s, " ADD COLUMN ");
		zs_replica_append_ident(s, col);
		if (!zs_replica_exec(r, s->data))
			return NULL;
		add_column_info(r, t, col);
		/* statements naming the table were compiled for the old shape */
		zs_replica_forget_statements(r);
	}
	return t;
}
