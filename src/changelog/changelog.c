/*-------------------------------------------------------------------------
 * changelog.c
 *	  SPI access to the change log.
 *
 * The log is stored in chunks (codec/changelog_chunk.h), written by
 * changelog_writer.c; zero-cache's changeLog is a view over the chunks,
 * one row per change, for SQL readers. Here: the schema (and the
 * conversion of a log of rows), the lineage and its seed transaction,
 * ownership, the published schema and zero-cache's bookkeeping of schema
 * changes.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "changelog/changelog.h"
#include "changelog/changelog_writer.h"
#include "guc.h"
#include "ownership.h"

#define ZS_SCHEMA_VERSION 6

static char *
quoted_schema(void)
{
	return (char *) quote_identifier(zs_cdc_schema_name());
}

static void
exec_sql(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("SPI_execute failed (%s): %s",
			 SPI_result_code_string(rc), sql)));
}

static void
exec_sql_args(const char *sql, int nargs, Oid *types, Datum *values,
			  const char *nulls, int expected)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);

	if (rc != expected)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("SPI_execute_with_args failed (%s): %s",
			 SPI_result_code_string(rc), sql)));
}

static void
lock_schema_migration(void)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];

	values[0] = CStringGetTextDatum(psprintf("migrate-schema:%s", zs_cdc_schema_name()));
	exec_sql_args("SELECT pg_advisory_xact_lock(hashtext($1))", 1, types, values, NULL,
				  SPI_OK_SELECT);
}

/*
 * Do all the change log's tables exist? Then the decoder's start runs no
 * DDL: every CREATE ... IF NOT EXISTS, even one that creates nothing, fires
 * the DDL capture's event trigger, which computes the published schema
 * (~20 ms each, most of a restart's time before streaming).
 */
static bool
tables_exist(void)
{
	bool		isnull;

	exec_sql(psprintf("SELECT count(*) = 8 FROM pg_catalog.pg_class c "
					  "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
					  " WHERE n.nspname = %s AND ((c.relkind = 'r' AND c.relname IN "
					  "  ('versionHistory', 'changeLogChunks', 'replicationState', 'replicationConfig', "
					  "   'tableMetadata', 'backfilling', 'publishedSchema')) "
					  "  OR (c.relkind = 'v' AND c.relname = 'changeLog'))",
					  quote_literal_cstr(zs_cdc_schema_name())),
			 SPI_OK_SELECT);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* The tables after versionHistory, as zero-cache's migrations leave them. */
static void
create_tables(const char *s)
{
	/*
	 * The chunks, keyed by their last row (watermark, pos): the chunk that
	 * holds the first row after a position is the first whose key is past
	 * it. Watermarks in the "C" collation: they are ordered byte by byte
	 * (§4), whatever the database's collation, and the key's comparisons
	 * become memcmp instead of strcoll. A chunk is compressed already
	 * (EXTERNAL: not compressed again; out of line when large).
	 *
	 * The purge deletes whole chunks from the log's start, and the space
	 * comes back only once autovacuum has vacuumed them: with its default
	 * cost delay that can take minutes on a large log.
	 */
	exec_sql(psprintf("CREATE TABLE IF NOT EXISTS %s.\"changeLogChunks\" ("
					  "\"watermark\" TEXT COLLATE \"C\" NOT NULL, \"pos\" INT8 NOT NULL, "
					  "\"firstWatermark\" TEXT COLLATE \"C\" NOT NULL, \"firstPos\" INT8 NOT NULL, "
					  "\"rows\" INT4 NOT NULL, \"size\" INT4 NOT NULL, \"chunk\" BYTEA NOT NULL, "
					  "PRIMARY KEY (\"watermark\", \"pos\")) "
					  "WITH (autovacuum_vacuum_cost_delay = 0)", s),
			 SPI_OK_UTILITY);
	exec_sql(psprintf("ALTER TABLE %s.\"changeLogChunks\" ALTER COLUMN \"chunk\" SET STORAGE EXTERNAL", s),
			 SPI_OK_UTILITY);
	exec_sql(psprintf("CREATE TABLE IF NOT EXISTS %s.\"replicationState\" ("
					  "\"lastWatermark\" TEXT NOT NULL, \"owner\" TEXT, \"ownerAddress\" TEXT, "
					  "\"lock\" INTEGER PRIMARY KEY DEFAULT 1 CHECK (lock=1))", s),
			 SPI_OK_UTILITY);
	exec_sql(psprintf("CREATE TABLE IF NOT EXISTS %s.\"replicationConfig\" ("
					  "\"replicaVersion\" TEXT NOT NULL, \"publications\" TEXT[] NOT NULL, "
					  "\"resetRequired\" BOOL, "
					  "\"lock\" INTEGER PRIMARY KEY DEFAULT 1 CHECK (lock=1))", s),
			 SPI_OK_UTILITY);
	exec_sql(psprintf("CREATE TABLE IF NOT EXISTS %s.\"tableMetadata\" ("
					  "\"schema\" TEXT NOT NULL, \"table\" TEXT NOT NULL, "
					  "\"metadata\" JSONB NOT NULL, PRIMARY KEY (\"schema\", \"table\"))", s),
			 SPI_OK_UTILITY);
	exec_sql(psprintf("CREATE TABLE IF NOT EXISTS %s.\"backfilling\" ("
					  "\"schema\" TEXT NOT NULL, \"table\" TEXT NOT NULL, "
					  "\"column\" TEXT NOT NULL, \"backfill\" JSONB NOT NULL, "
					  "PRIMARY KEY (\"schema\", \"table\", \"column\"))", s),
			 SPI_OK_UTILITY);
	/* zero_stream's own: the published schema at the log's head */
	exec_sql(psprintf("CREATE TABLE IF NOT EXISTS %s.\"publishedSchema\" ("
					  "\"snapshot\" TEXT NOT NULL, "
					  "\"lock\" INTEGER PRIMARY KEY DEFAULT 1 CHECK (lock=1))", s),
			 SPI_OK_UTILITY);
}

/*
 * zero-cache's changeLog, one row per change, as a view over the chunks,
 * for SQL readers (the golden comparisons, operators' queries); its rows
 * come from the chunks' own function, kept in the schema so that the log
 * does not depend on the extension's objects.
 */
static void
create_view(const char *s)
{
	exec_sql(psprintf("CREATE OR REPLACE FUNCTION %s.\"changeLogRows\"(chunk bytea, "
					  "OUT \"watermark\" text, OUT \"pos\" int8, OUT \"change\" json, OUT \"precommit\" text) "
					  "RETURNS SETOF record LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE "
					  "AS '$libdir/zero_stream', 'zs_changelog_chunk_rows'", s),
			 SPI_OK_UTILITY);
	exec_sql(psprintf("CREATE OR REPLACE VIEW %1$s.\"changeLog\" AS "
					  "SELECT r.\"watermark\" COLLATE \"C\" AS \"watermark\", r.\"pos\", r.\"change\", r.\"precommit\" "
					  "  FROM %1$s.\"changeLogChunks\" c CROSS JOIN LATERAL %1$s.\"changeLogRows\"(c.\"chunk\") r", s),
			 SPI_OK_UTILITY);
}

/* Is changeLog a table (a log of rows) rather than our view? */
static bool
row_table_exists(void)
{
	exec_sql(psprintf("SELECT c.relkind = 'r' FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
					  "  ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = 'changeLog'",
					  quote_literal_cstr(zs_cdc_schema_name())),
			 SPI_OK_SELECT);
	return SPI_processed == 1 &&
		strcmp(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), "t") == 0;
}

/*
 * A change log of rows (zero_stream's before 0.4.0) becomes chunks, in key
 * order, in the decoder's start-up transaction: the lineage, the head and
 * every position stay, and memory stays bounded (a cursor, chunks of
 * changelog_chunk_size). Only a log that is this decoder's (or no one's):
 * one another change streamer owns (a zero-cache replication-manager's)
 * is left as it is, for its writer, until zero_stream.resync() takes it
 * over (zs_changelog_initialize). The state row stays locked, and the
 * table too, so that no one writes either until the conversion commits.
 * False if the log was left as it is.
 */
static bool
convert_row_table(const char *s)
{
	Portal		portal;
	SPIPlanPtr	plan;
	int64		rows = 0;
	MemoryContext batch;
	char	   *owner = NULL;

	exec_sql(psprintf("SELECT \"owner\" FROM %s.\"replicationState\" FOR UPDATE", s), SPI_OK_SELECT);
	if (SPI_processed == 1)
		owner = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (owner != NULL && !zs_owner_is_this_decoder(owner))
	{
		ereport(LOG,
				(errmsg("the change log %s is one of rows that %s writes: it stays as it is", s, owner),
				 errdetail("zero_stream stores its log in chunks; it converts a log of rows only when it is its own, and takes one over only with zero_stream.resync().")));
		return false;
	}
	exec_sql(psprintf("LOCK TABLE %s.\"changeLog\" IN EXCLUSIVE MODE", s), SPI_OK_UTILITY);
	plan = SPI_prepare(psprintf("SELECT \"watermark\"::text, \"pos\", \"change\"::text, \"precommit\" "
								"  FROM %s.\"changeLog\" ORDER BY \"watermark\" COLLATE \"C\", \"pos\"", s),
					   0, NULL);
	if (plan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("SPI_prepare failed: %s", SPI_result_code_string(SPI_result))));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	zs_changelog_writer_open();
	batch = AllocSetContextCreate(CurrentMemoryContext, "zero_stream changelog conversion",
								  ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		MemoryContext old;
		SPITupleTable *fetched;
		uint64		nfetched;

		/* a writer through SPI (an altered chunk table) resets SPI's globals */
		SPI_cursor_fetch(portal, true, 1000);
		fetched = SPI_tuptable;
		nfetched = SPI_processed;
		if (nfetched == 0)
			break;
		old = MemoryContextSwitchTo(batch);
		for (uint64 i = 0; i < nfetched; i++)
		{
			HeapTuple	tuple = fetched->vals[i];
			TupleDesc	desc = fetched->tupdesc;
			bool		isnull;
			char	   *watermark = SPI_getvalue(tuple, desc, 1);
			int64		pos = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
			char	   *change = SPI_getvalue(tuple, desc, 3);
			char	   *precommit = SPI_getvalue(tuple, desc, 4);

			if (watermark == NULL || strlen(watermark) >= ZS_WATERMARK_MAXLEN ||
				(precommit != NULL && strlen(precommit) >= ZS_WATERMARK_MAXLEN) || change == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("change-log row %s/" INT64_FORMAT " cannot be converted into a chunk",
								watermark ? watermark : "(null)", pos),
						 errdetail("Its watermark or precommit is longer than a state version, or its change is NULL."),
						 errhint("Drop schema %s to let zero_stream start a new change log.", s)));
			zs_changelog_writer_add(watermark, pos, change, strlen(change), precommit);
			rows++;
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch);
		SPI_freetuptable(fetched);
	}
	MemoryContextDelete(batch);
	SPI_cursor_close(portal);
	zs_changelog_writer_close();
	SPI_freeplan(plan);
	exec_sql(psprintf("DROP TABLE %s.\"changeLog\"", s), SPI_OK_UTILITY);
	exec_sql(psprintf("SELECT count(*) FROM %s.\"changeLogChunks\"", s), SPI_OK_SELECT);
	ereport(LOG,
			(errmsg("converted the change log's " INT64_FORMAT " rows into %s chunks",
					rows, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
			 errdetail("%s.\"changeLog\" is now a view over %s.\"changeLogChunks\".", s, s)));
	return true;
}

void
zs_changelog_ensure_schema(void)
{
	char	   *s = quoted_schema();
	bool		isnull;
	int			version;
	bool		exist;

	lock_schema_migration();
	exist = tables_exist();
	if (!exist)
	{
		exec_sql(psprintf("CREATE SCHEMA IF NOT EXISTS %s", s), SPI_OK_UTILITY);
		exec_sql(psprintf("CREATE TABLE IF NOT EXISTS %s.\"versionHistory\" ("
						  "\"dataVersion\" int NOT NULL, \"schemaVersion\" int NOT NULL, "
						  "\"minSafeVersion\" int NOT NULL, "
						  "lock char(1) NOT NULL DEFAULT 'v' PRIMARY KEY CHECK (lock = 'v'))", s),
				 SPI_OK_UTILITY);
	}
	exec_sql(psprintf("SELECT \"schemaVersion\" FROM %s.\"versionHistory\"", s), SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											  1, &isnull));
		if (version != ZS_SCHEMA_VERSION)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("change-log schema %s is at version %d, zero_stream needs version %d",
							zs_cdc_schema_name(), version, ZS_SCHEMA_VERSION),
					 errhint("Let zero-cache migrate it, or drop the schema to start a new change log.")));
	}

	if (!exist)
	{
		create_tables(s);
		if (!row_table_exists() || convert_row_table(s))
			create_view(s);
	}
	exec_sql(psprintf("INSERT INTO %s.\"versionHistory\" "
					  "(\"dataVersion\", \"schemaVersion\", \"minSafeVersion\") "
					  "VALUES (%d, %d, 1) ON CONFLICT (lock) DO NOTHING",
					  s, ZS_SCHEMA_VERSION, ZS_SCHEMA_VERSION),
			 SPI_OK_INSERT);
}

bool
zs_changelog_read_replica_version(char *replica_version)
{
	bool		isnull;
	Datum		d;

	exec_sql(psprintf("SELECT \"replicaVersion\" FROM %s.\"replicationConfig\"", quoted_schema()),
			 SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	strlcpy(replica_version, TextDatumGetCString(d), ZS_WATERMARK_MAXLEN);
	return true;
}

void
zs_changelog_initialize(const char *replica_version, List *publications, bool take_over)
{
	char	   *s = quoted_schema();
	Oid			types[3] = {TEXTOID, TEXTARRAYOID, TEXTOID};
	Datum		values[3];
	char	   *owner;

	lock_schema_migration();
	/* taken over while our slot and copy were made: not ours to empty */
	if (!take_over && zs_changelog_taken_over(&owner))
		zs_changelog_report_taken_over(owner);
	/* the storer's lock order (docs/zero-protocol.md §6.3) */
	exec_sql(psprintf("TRUNCATE %s.\"replicationState\", %s.\"changeLogChunks\", "
					  "%s.\"replicationConfig\", %s.\"tableMetadata\", %s.\"backfilling\", "
					  "%s.\"publishedSchema\"",
					  s, s, s, s, s, s),
			 SPI_OK_UTILITY);

	values[0] = CStringGetTextDatum(replica_version);
	values[1] = zs_publication_array(publications);
	values[2] = CStringGetTextDatum(zs_owner_identity());

	exec_sql_args(psprintf("INSERT INTO %s.\"replicationConfig\" (\"replicaVersion\", \"publications\") "
						   "SELECT $1, array_agg(p ORDER BY p) FROM unnest($2::text[]) p", s),
				  2, types, values, NULL, SPI_OK_INSERT);
	exec_sql_args(psprintf("INSERT INTO %s.\"replicationState\" (\"lastWatermark\", \"owner\", \"ownerAddress\") "
						   "VALUES ($1, $3, NULL)", s),
				  3, types, values, NULL, SPI_OK_INSERT);
	/* a log of rows another writer kept (convert_row_table): ours now */
	if (row_table_exists())
	{
		exec_sql(psprintf("DROP TABLE %s.\"changeLog\"", s), SPI_OK_UTILITY);
		create_view(s);
	}
	/* the seed transaction, through the writer (its commit as zero-cache's: no precommit) */
	zs_changelog_writer_open();
	zs_changelog_writer_add(replica_version, 0, "{\"tag\":\"begin\"}", 15, NULL);
	zs_changelog_writer_add(replica_version, 1, "{\"tag\":\"commit\"}", 16, NULL);
	zs_changelog_writer_close();
}

/* The text column just selected from the single replicationState row, or NULL. */
static char *
state_row_value(void)
{
	bool		isnull;
	Datum		d;

	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("change log %s has no replicationState row", zs_cdc_schema_name()),
				 errhint("Drop schema %s to let zero_stream start a new change log.",
						 quoted_schema())));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? NULL : TextDatumGetCString(d);
}

/* One text column of the single replicationState row, or NULL. */
static char *
read_state_column(const char *column)
{
	exec_sql(psprintf("SELECT %s FROM %s.\"replicationState\"", quote_identifier(column),
					  quoted_schema()),
			 SPI_OK_SELECT);
	return state_row_value();
}

bool
zs_changelog_taken_over(char **owner)
{
	*owner = NULL;
	/* a log not initialized yet has no state row, and no owner */
	exec_sql(psprintf("SELECT \"owner\" FROM %s.\"replicationState\" FOR UPDATE", quoted_schema()),
			 SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	*owner = state_row_value();
	return *owner != NULL && !zs_owner_is_this_decoder(*owner);
}

void
zs_changelog_claim_ownership(const char *address)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	char		nulls[2] = {' ', address ? ' ' : 'n'};
	char	   *owner;

	/* the row stays locked until the caller's commit: no takeover can interleave */
	if (zs_changelog_taken_over(&owner))
		zs_changelog_report_taken_over(owner);
	values[0] = CStringGetTextDatum(zs_owner_identity());
	values[1] = address ? CStringGetTextDatum(address) : (Datum) 0;
	exec_sql_args(psprintf("UPDATE %s.\"replicationState\" SET \"owner\" = $1, \"ownerAddress\" = $2",
						   quoted_schema()),
				  2, types, values, nulls, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("change log %s has no replicationState row", zs_cdc_schema_name())));
}

void
zs_changelog_read_head(char *last_watermark)
{
	strlcpy(last_watermark, read_state_column("lastWatermark"), ZS_WATERMARK_MAXLEN);
}

char *
zs_changelog_read_published_schema(void)
{
	exec_sql(psprintf("SELECT \"snapshot\" FROM %s.\"publishedSchema\"", quoted_schema()),
			 SPI_OK_SELECT);
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

void
zs_changelog_write_published_schema(const char *snapshot)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];

	values[0] = CStringGetTextDatum(snapshot);
	exec_sql_args(psprintf("INSERT INTO %s.\"publishedSchema\" (\"snapshot\") VALUES ($1) "
						   "ON CONFLICT (lock) DO UPDATE SET \"snapshot\" = excluded.\"snapshot\"",
						   quoted_schema()),
				  1, types, values, NULL, SPI_OK_INSERT);
}

/*
 * The tableMetadata and backfilling rows that follow a schema change
 * (docs/zero-protocol.md §6.6), from the change's own JSON ($1).
 */
static const char *const bookkeeping[][2] = {
	{"update-table-metadata",
	"INSERT INTO %1$s.\"tableMetadata\" (\"schema\", \"table\", \"metadata\") "
	"SELECT $1->'table'->>'schema', $1->'table'->>'name', $1->'new' "
	"ON CONFLICT (\"schema\", \"table\") DO UPDATE SET \"metadata\" = excluded.\"metadata\""},
	{"create-table",
	"INSERT INTO %1$s.\"tableMetadata\" (\"schema\", \"table\", \"metadata\") "
	"SELECT $1->'spec'->>'schema', $1->'spec'->>'name', $1->'metadata' WHERE $1 ? 'metadata' "
	"ON CONFLICT (\"schema\", \"table\") DO UPDATE SET \"metadata\" = excluded.\"metadata\""},
	{"create-table",
	"INSERT INTO %1$s.\"backfilling\" (\"schema\", \"table\", \"column\", \"backfill\") "
	"SELECT $1->'spec'->>'schema', $1->'spec'->>'name', b.key, b.value "
	"  FROM jsonb_each(CASE WHEN $1 ? 'backfill' THEN $1->'backfill' ELSE '{}' END) b "
	"ON CONFLICT (\"schema\", \"table\", \"column\") DO UPDATE SET \"backfill\" = excluded.\"backfill\""},
	{"rename-table",
	"UPDATE %1$s.\"tableMetadata\" SET \"schema\" = $1->'new'->>'schema', \"table\" = $1->'new'->>'name' "
	" WHERE \"schema\" = $1->'old'->>'schema' AND \"table\" = $1->'old'->>'name'"},
	{"rename-table",
	"UPDATE %1$s.\"backfilling\" SET \"schema\" = $1->'new'->>'schema', \"table\" = $1->'new'->>'name' "
	" WHERE \"schema\" = $1->'old'->>'schema' AND \"table\" = $1->'old'->>'name'"},
	{"drop-table",
	"DELETE FROM %1$s.\"tableMetadata\" WHERE \"schema\" = $1->'id'->>'schema' AND \"table\" = $1->'id'->>'name'"},
	{"drop-table",
	"DELETE FROM %1$s.\"backfilling\" WHERE \"schema\" = $1->'id'->>'schema' AND \"table\" = $1->'id'->>'name'"},
	{"add-column",
	"INSERT INTO %1$s.\"tableMetadata\" (\"schema\", \"table\", \"metadata\") "
	"SELECT $1->'table'->>'schema', $1->'table'->>'name', $1->'tableMetadata' WHERE $1 ? 'tableMetadata' "
	"ON CONFLICT (\"schema\", \"table\") DO UPDATE SET \"metadata\" = excluded.\"metadata\""},
	{"add-column",
	"INSERT INTO %1$s.\"backfilling\" (\"schema\", \"table\", \"column\", \"backfill\") "
	"SELECT $1->'table'->>'schema', $1->'table'->>'name', $1->'column'->>'name', $1->'backfill' "
	" WHERE $1 ? 'backfill' "
	"ON CONFLICT (\"schema\", \"table\", \"column\") DO UPDATE SET \"backfill\" = excluded.\"backfill\""},
	{"update-column",
	"UPDATE %1$s.\"backfilling\" SET \"column\" = $1->'new'->>'name' "
	" WHERE \"schema\" = $1->'table'->>'schema' AND \"table\" = $1->'table'->>'name' "
	"   AND \"column\" = $1->'old'->>'name' AND $1->'old'->>'name' <> $1->'new'->>'name'"},
	{"drop-column",
	"DELETE FROM %1$s.\"backfilling\" WHERE \"schema\" = $1->'table'->>'schema' "
	"   AND \"table\" = $1->'table'->>'name' AND \"column\" = $1->>'column'"},
	{"backfill-completed",
	"DELETE FROM %1$s.\"backfilling\" WHERE \"schema\" = $1->'relation'->>'schema' "
	"   AND \"table\" = $1->'relation'->>'name' "
	"   AND (\"column\" IN (SELECT jsonb_array_elements_text($1->'columns')) "
	"     OR \"column\" IN (SELECT jsonb_array_elements_text($1->'relation'->'rowKey'->'columns')))"},
};

void
zs_changelog_add_schema(const char *watermark, int64 pos, const char *change, int change_len)
{
	Oid			types[1] = {JSONBOID};
	Datum		values[1];
	Jsonb	   *jsonb;
	JsonbValue *tag;

	/* the row in its chunk, then zero-cache's bookkeeping of it */
	zs_changelog_writer_add(watermark, pos, change, change_len, NULL);
	values[0] = DirectFunctionCall1(jsonb_in, CStringGetDatum(pnstrdup(change, change_len)));
	jsonb = DatumGetJsonbP(values[0]);
	tag = getKeyJsonValueFromContainer(&jsonb->root, "tag", 3, NULL);
	if (tag == NULL || tag->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a schema change has no tag: %s", pnstrdup(change, Min(change_len, 200)))));
	for (int i = 0; i < (int) lengthof(bookkeeping); i++)
	{
		if (strlen(bookkeeping[i][0]) != (size_t) tag->val.string.len ||
			strncmp(bookkeeping[i][0], tag->val.string.val, tag->val.string.len) != 0)
			continue;
		exec_sql_args(psprintf(bookkeeping[i][1], quoted_schema()), 1, types, values, NULL,
					  strncmp(bookkeeping[i][1], "INSERT", 6) == 0 ? SPI_OK_INSERT :
					  strncmp(bookkeeping[i][1], "UPDATE", 6) == 0 ? SPI_OK_UPDATE : SPI_OK_DELETE);
	}
}

List *
zs_changelog_read_backfill_requests(void)
{
	List	   *requests = NIL;

	exec_sql(psprintf("SELECT json_build_object('table', json_build_object('schema', b.\"schema\", "
					  "         'name', b.\"table\", 'metadata', t.\"metadata\"), "
					  "       'columns', json_object_agg(b.\"column\", b.\"backfill\" "
					  "         ORDER BY b.\"backfill\"->'attNum', b.\"column\"))::text "
					  "  FROM %1$s.\"backfilling\" b LEFT JOIN %1$s.\"tableMetadata\" t "
					  "       ON t.\"schema\" = b.\"schema\" AND t.\"table\" = b.\"table\" "
					  " GROUP BY b.\"schema\", b.\"table\", t.\"metadata\" "
					  " ORDER BY b.\"schema\", b.\"table\"", quoted_schema()),
			 SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
		requests = lappend(requests, SPI_getvalue(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc, 1));
	return requests;
}
