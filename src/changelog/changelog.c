/*-------------------------------------------------------------------------
 * changelog.c
 *	  SPI access to the change log.
 *
 * Rows are written in batches with the table AM's multi-insert
 * (changelog_insert.c). A change log whose table was altered is written
 * with one constant statement that unnests four arrays, so a batch of any
 * size uses the same saved plan (zero-cache does the same with
 * json_to_recordset, rocicorp/mono#3511). Either way the change texts go
 * in as-is: they are our own JSON.stringify-exact output, and json's input
 * function would only re-parse them.
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
#include "changelog/changelog_insert.h"
#include "extension_version.h"
#include "guc.h"
#include "ownership.h"

#define ZS_SCHEMA_VERSION 6

typedef struct ChangelogWriter
{
	MemoryContext batch_context;	/* reset after every INSERT */
	bool		multi_insert;	/* this transaction's rows go to changelog_insert.c */
	SPIPlanPtr	insert_plan;
	SPIPlanPtr	owner_plan;		/* the state row's owner, FOR UPDATE */
	SPIPlanPtr	head_plan;		/* lastWatermark = $1 */
	char	   *insert_plan_schema;
	int			capacity;
	int			count;
	Datum	   *watermarks;
	Datum	   *positions;
	Datum	   *changes;
	Datum	   *precommits;
	bool	   *precommit_nulls;
} ChangelogWriter;

static ChangelogWriter writer;

/* the last row this process wrote (its transaction committed, or we exit) */
static char last_row_watermark[ZS_WATERMARK_MAXLEN];
static int64 last_row_pos;
static bool last_row_known = false;

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

	exec_sql(psprintf("SELECT count(*) = 7 FROM pg_catalog.pg_class c "
					  "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
					  " WHERE n.nspname = %s AND c.relkind = 'r' AND c.relname IN "
					  "  ('versionHistory', 'changeLog', 'replicationState', 'replicationConfig', "
					  "   'tableMetadata', 'backfilling', 'publishedSchema')",
					  quote_literal_cstr(zs_cdc_schema_name())),
			 SPI_OK_SELECT);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* The tables after versionHistory, as zero-cache's migrations leave them. */
static void
create_tables(const char *s)
{
	/*
	 * zero-cache's columns, with the watermark in the "C" collation:
	 * watermarks are ordered byte by byte (§4), whatever the database's
	 * collation, and the primary key's comparisons (one per stored row)
	 * become memcmp instead of strcoll. Queries with text parameters use
	 * the column's collation, so zero-cache's reads order the same way.
	 *
	 * The purge deletes millions of rows at a time from the log's start,
	 * and the space comes back only once autovacuum has vacuumed them: with
	 * its default cost delay that took minutes on a 7 GB log, and a second
	 * burst of ten million rows grew the table by 2.5 GB where, unthrottled,
	 * it grew by 0.4 GB, at the same store rate (bench/purge.sh).
	 */
	exec_sql(psprintf("CREATE TABLE IF NOT EXISTS %s.\"changeLog\" ("
					  "\"watermark\" TEXT COLLATE \"C\", \"pos\" INT8, \"change\" JSON NOT NULL, "
					  "\"precommit\" TEXT, PRIMARY KEY (\"watermark\", \"pos\")) "
					  "WITH (autovacuum_vacuum_cost_delay = 0)", s),
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
		create_tables(s);
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
	exec_sql(psprintf("TRUNCATE %s.\"replicationState\", %s.\"changeLog\", "
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
	exec_sql_args(psprintf("INSERT INTO %s.\"changeLog\" (\"watermark\", \"pos\", \"change\", \"precommit\") "
						   "VALUES ($1, 0, '{\"tag\":\"begin\"}', NULL), ($1, 1, '{\"tag\":\"commit\"}', NULL)", s),
				  1, types, values, NULL, SPI_OK_INSERT);
	strlcpy(last_row_watermark, replica_version, sizeof(last_row_watermark));
	last_row_pos = 1;
	last_row_known = true;
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
zs_changelog_report_taken_over(const char *owner)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("changeLog ownership has been assumed by %s", owner ? owner : "nobody"),
			 errdetail("This decoder is %s; another change streamer now writes %s, and this one stops writing it.",
					   zs_owner_identity(), zs_cdc_schema_name()),
			 errhint("Stop the other change streamer, then SELECT zero_stream.resync() to start a new change log here.")));
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

void
zs_changelog_read_last_row(void)
{
	bool		isnull;
	Datum		pos;

	/* a backward scan of the primary key; purge keeps the newest transaction */
	exec_sql(psprintf("SELECT watermark, pos FROM %s.\"changeLog\" "
					  "ORDER BY watermark DESC, pos DESC LIMIT 1", quoted_schema()),
			 SPI_OK_SELECT);
	last_row_known = SPI_processed == 1;
	if (!last_row_known)
		return;
	strlcpy(last_row_watermark, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
			sizeof(last_row_watermark));
	pos = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	last_row_pos = DatumGetInt64(pos);
}

/* A statement the writer runs in every store, planned once. */
static SPIPlanPtr
keep_plan(const char *sql, int nargs, Oid *types)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, types);

	if (plan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("SPI_prepare failed: %s", SPI_result_code_string(SPI_result))));
	if (SPI_keepplan(plan) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("SPI_keepplan failed")));
	return plan;
}

static void
prepare_writer(void)
{
	char	   *schema = zs_cdc_schema_name();
	Oid			types[4] = {TEXTARRAYOID, INT8ARRAYOID, JSONARRAYOID, TEXTARRAYOID};

	if (writer.batch_context == NULL)
		writer.batch_context = AllocSetContextCreate(TopMemoryContext,
													 "zero_stream changelog batch",
													 ALLOCSET_DEFAULT_SIZES);
	if (writer.capacity != zs_changelog_batch_size)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		if (writer.capacity > 0)
		{
			pfree(writer.watermarks);
			pfree(writer.positions);
			pfree(writer.changes);
			pfree(writer.precommits);
			pfree(writer.precommit_nulls);
		}
		writer.capacity = zs_changelog_batch_size;
		writer.watermarks = palloc(sizeof(Datum) * writer.capacity);
		writer.positions = palloc(sizeof(Datum) * writer.capacity);
		writer.changes = palloc(sizeof(Datum) * writer.capacity);
		writer.precommits = palloc(sizeof(Datum) * writer.capacity);
		writer.precommit_nulls = palloc(sizeof(bool) * writer.capacity);
		MemoryContextSwitchTo(old);
	}
	if (writer.insert_plan == NULL || strcmp(writer.insert_plan_schema, schema) != 0)
	{
		Oid			head_types[1] = {TEXTOID};

		writer.insert_plan = keep_plan(psprintf("INSERT INTO %s.\"changeLog\" "
												"(\"watermark\", \"pos\", \"change\", \"precommit\") "
												"SELECT * FROM unnest($1, $2, $3, $4)",
												quote_identifier(schema)),
									   4, types);
		writer.owner_plan = keep_plan(psprintf("SELECT \"owner\" FROM %s.\"replicationState\" FOR UPDATE",
											   quote_identifier(schema)),
									  0, NULL);
		writer.head_plan = keep_plan(psprintf("UPDATE %s.\"replicationState\" SET \"lastWatermark\" = $1",
											  quote_identifier(schema)),
									 1, head_types);
		writer.insert_plan_schema = MemoryContextStrdup(TopMemoryContext, schema);
	}
	writer.count = 0;
}

static void
flush_rows(void)
{
	int			dims[1];
	int			lbs[1] = {1};
	Datum		args[4];
	int			rc;
	MemoryContext old;

	if (writer.count == 0)
		return;
	old = MemoryContextSwitchTo(writer.batch_context);
	if (writer.multi_insert)
	{
		zs_changelog_insert_rows(writer.count, writer.watermarks, writer.positions,
								 writer.changes, writer.precommits, writer.precommit_nulls);
		MemoryContextSwitchTo(old);
		MemoryContextReset(writer.batch_context);
		writer.count = 0;
		return;
	}
	dims[0] = writer.count;
	args[0] = PointerGetDatum(construct_array(writer.watermarks, writer.count, TEXTOID,
											  -1, false, TYPALIGN_INT));
	args[1] = PointerGetDatum(construct_array(writer.positions, writer.count, INT8OID,
											  8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[2] = PointerGetDatum(construct_array(writer.changes, writer.count, JSONOID,
											  -1, false, TYPALIGN_INT));
	args[3] = PointerGetDatum(construct_md_array(writer.precommits, writer.precommit_nulls,
												 1, dims, lbs, TEXTOID, -1, false,
												 TYPALIGN_INT));
	rc = SPI_execute_plan(writer.insert_plan, args, NULL, false, 0);
	if (rc != SPI_OK_INSERT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("change-log insert failed: %s", SPI_result_code_string(rc))));
	MemoryContextSwitchTo(old);
	MemoryContextReset(writer.batch_context);
	writer.count = 0;
}

/*
 * The installed SQL must be one this library writes the log of, read at
 * every store, in the store's transaction (and before the purge and the
 * saved positions write): an ALTER EXTENSION ... UPDATE to
 * a version this library does not know (a newer package installed, the
 * server not restarted yet) stops the decoder before its next store. An
 * update to a version it writes for (an older library's SQL brought up to
 * this one) goes on without a pause.
 */
void
zs_changelog_check_sql_version(void)
{
	static char *accepted = NULL;	/* the last version seen, fit to write */
	char	   *installed = zs_installed_sql_version();
	ZsSqlFit	fit;

	if (installed != NULL && accepted != NULL && strcmp(installed, accepted) == 0)
		return;
	fit = zs_sql_fit(installed);
	if (!zs_sql_fit_writable(fit))
		ereport(ERROR,
				(errcode(fit == ZS_SQL_NOT_INSTALLED ? ERRCODE_UNDEFINED_OBJECT :
						 ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s", zs_sql_fit_message(installed, fit)),
				 errhint("%s", zs_sql_fit_hint(fit))));
	if (accepted != NULL)
	{
		ereport(LOG,
				(errmsg("the extension's SQL objects are now version %s (they were %s); the decoder goes on",
						installed, accepted)));
		pfree(accepted);
	}
	accepted = MemoryContextStrdup(TopMemoryContext, installed);
}

void
zs_changelog_begin(void)
{
	char	   *owner;

	prepare_writer();
	writer.multi_insert = zs_changelog_insert_open(zs_cdc_schema_name());
	/* the row stays locked until our commit: no takeover can interleave */
	if (SPI_execute_plan(writer.owner_plan, NULL, NULL, false, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not read the change log's owner")));
	owner = state_row_value();
	if (owner == NULL || strcmp(owner, zs_owner_identity()) != 0)
		zs_changelog_report_taken_over(owner);
	zs_changelog_check_sql_version();
}

void
zs_changelog_add(const char *watermark, int64 pos, const char *change, int change_len,
				 bool is_commit)
{
	MemoryContext old = MemoryContextSwitchTo(writer.batch_context);
	int			i = writer.count;
	text	   *wm = cstring_to_text(watermark);

	writer.watermarks[i] = PointerGetDatum(wm);
	writer.positions[i] = Int64GetDatum(pos);
	writer.changes[i] = PointerGetDatum(cstring_to_text_with_len(change, change_len));
	writer.precommits[i] = PointerGetDatum(wm);
	writer.precommit_nulls[i] = !is_commit;
	writer.count++;
	strlcpy(last_row_watermark, watermark, sizeof(last_row_watermark));
	last_row_pos = pos;
	last_row_known = true;
	MemoryContextSwitchTo(old);
	if (writer.count >= writer.capacity)
		flush_rows();
}

void
zs_changelog_finish(const char *last_watermark)
{
	Datum		values[1];

	flush_rows();
	if (writer.multi_insert)
		zs_changelog_insert_close();
	writer.multi_insert = false;
	values[0] = CStringGetTextDatum(last_watermark);
	if (SPI_execute_plan(writer.head_plan, values, NULL, false, 0) != SPI_OK_UPDATE)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not update the change log's head")));
}

bool
zs_changelog_last_row(char *watermark, int64 *pos)
{
	if (!last_row_known)
		return false;
	strlcpy(watermark, last_row_watermark, ZS_WATERMARK_MAXLEN);
	*pos = last_row_pos;
	return true;
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

	/* schema rows go alone, after the rows before them, with their bookkeeping */
	flush_rows();
	zs_changelog_add(watermark, pos, change, change_len, false);
	flush_rows();
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
