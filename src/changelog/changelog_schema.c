/*-------------------------------------------------------------------------
 * changelog_schema.c
 *	  The change log's schema and its lineage.
 *
 * The tables of "<app>_<shard>/cdc" as zero-cache's migrations leave them
 * (the change log stored in chunks, codec/changelog_chunk.h, with
 * zero-cache's changeLog a view over them), created when missing, checked
 * when present, and a log of rows that another writer kept converted into
 * chunks; and a new lineage: the log emptied, replicationConfig and
 * replicationState written, and the seed transaction. Runs inside the
 * caller's transaction with SPI connected.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "changelog/changelog.h"
#include "changelog/changelog_spi.h"
#include "changelog/changelog_writer.h"
#include "ownership.h"

#define ZS_SCHEMA_VERSION 6

static void
lock_schema_migration(void)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];

	values[0] = CStringGetTextDatum(psprintf("migrate-schema:%s", zs_cdc_schema_name()));
	changelog_exec_args("SELECT pg_advisory_xact_lock(hashtext($1))", 1, types, values, NULL,
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

	changelog_exec(psprintf("SELECT count(*) = 8 FROM pg_catalog.pg_class c "
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
	changelog_exec(psprintf("CREATE TABLE IF NOT EXISTS %s.\"changeLogChunks\" ("
					  "\"watermark\" TEXT COLLATE \"C\" NOT NULL, \"pos\" INT8 NOT NULL, "
					  "\"firstWatermark\" TEXT COLLATE \"C\" NOT NULL, \"firstPos\" INT8 NOT NULL, "
					  "\"rows\" INT4 NOT NULL, \"size\" INT4 NOT NULL, \"chunk\" BYTEA NOT NULL, "
					  "PRIMARY KEY (\"watermark\", \"pos\")) "
					  "WITH (autovacuum_vacuum_cost_delay = 0)", s),
			 SPI_OK_UTILITY);
	changelog_exec(psprintf("ALTER TABLE %s.\"changeLogChunks\" ALTER COLUMN \"chunk\" SET STORAGE EXTERNAL", s),
			 SPI_OK_UTILITY);
	changelog_exec(psprintf("CREATE TABLE IF NOT EXISTS %s.\"replicationState\" ("
					  "\"lastWatermark\" TEXT NOT NULL, \"owner\" TEXT, \"ownerAddress\" TEXT, "
					  "\"lock\" INTEGER PRIMARY KEY DEFAULT 1 CHECK (lock=1))", s),
			 SPI_OK_UTILITY);
	changelog_exec(psprintf("CREATE TABLE IF NOT EXISTS %s.\"replicationConfig\" ("
					  "\"replicaVersion\" TEXT NOT NULL, \"publications\" TEXT[] NOT NULL, "
					  "\"resetRequired\" BOOL, "
					  "\"lock\" INTEGER PRIMARY KEY DEFAULT 1 CHECK (lock=1))", s),
			 SPI_OK_UTILITY);
	changelog_exec(psprintf("CREATE TABLE IF NOT EXISTS %s.\"tableMetadata\" ("
					  "\"schema\" TEXT NOT NULL, \"table\" TEXT NOT NULL, "
					  "\"metadata\" JSONB NOT NULL, PRIMARY KEY (\"schema\", \"table\"))", s),
			 SPI_OK_UTILITY);
	changelog_exec(psprintf("CREATE TABLE IF NOT EXISTS %s.\"backfilling\" ("
					  "\"schema\" TEXT NOT NULL, \"table\" TEXT NOT NULL, "
					  "\"column\" TEXT NOT NULL, \"backfill\" JSONB NOT NULL, "
					  "PRIMARY KEY (\"schema\", \"table\", \"column\"))", s),
			 SPI_OK_UTILITY);
	/* zero_stream's own: the published schema at the log's head */
	changelog_exec(psprintf("CREATE TABLE IF NOT EXISTS %s.\"publishedSchema\" ("
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
	changelog_exec(psprintf("CREATE OR REPLACE FUNCTION %s.\"changeLogRows\"(chunk bytea, "
					  "OUT \"watermark\" text, OUT \"pos\" int8, OUT \"change\" json, OUT \"precommit\" text) "
					  "RETURNS SETOF record LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE "
					  "AS '$libdir/zero_stream', 'zs_changelog_chunk_rows'", s),
			 SPI_OK_UTILITY);
	changelog_exec(psprintf("CREATE OR REPLACE VIEW %1$s.\"changeLog\" AS "
					  "SELECT r.\"watermark\" COLLATE \"C\" AS \"watermark\", r.\"pos\", r.\"change\", r.\"precommit\" "
					  "  FROM %1$s.\"changeLogChunks\" c CROSS JOIN LATERAL %1$s.\"changeLogRows\"(c.\"chunk\") r", s),
			 SPI_OK_UTILITY);
}

/* Is changeLog a table (a log of rows) rather than our view? */
static bool
row_table_exists(void)
{
	changelog_exec(psprintf("SELECT c.relkind = 'r' FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
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

	changelog_exec(psprintf("SELECT \"owner\" FROM %s.\"replicationState\" FOR UPDATE", s), SPI_OK_SELECT);
	if (SPI_processed == 1)
		owner = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (owner != NULL && !zs_owner_is_this_decoder(owner))
	{
		ereport(LOG,
				(errmsg("the change log %s is one of rows that %s writes: it stays as it is", s, owner),
				 errdetail("zero_stream stores its log in chunks; it converts a log of rows only when it is its own, and takes one over only with zero_stream.resync().")));
		return false;
	}
	changelog_exec(psprintf("LOCK TABLE %s.\"changeLog\" IN EXCLUSIVE MODE", s), SPI_OK_UTILITY);
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
	changelog_exec(psprintf("DROP TABLE %s.\"changeLog\"", s), SPI_OK_UTILITY);
	changelog_exec(psprintf("SELECT count(*) FROM %s.\"changeLogChunks\"", s), SPI_OK_SELECT);
	ereport(LOG,
			(errmsg("converted the change log's " INT64_FORMAT " rows into %s chunks",
					rows, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
			 errdetail("%s.\"changeLog\" is now a view over %s.\"changeLogChunks\".", s, s)));
	return true;
}

void
zs_changelog_ensure_schema(void)
{
	char	   *s = changelog_quoted_schema();
	bool		isnull;
	int			version;
	bool		exist;

	lock_schema_migration();
	exist = tables_exist();
	if (!exist)
	{
		changelog_exec(psprintf("CREATE SCHEMA IF NOT EXISTS %s", s), SPI_OK_UTILITY);
		changelog_exec(psprintf("CREATE TABLE IF NOT EXISTS %s.\"versionHistory\" ("
						  "\"dataVersion\" int NOT NULL, \"schemaVersion\" int NOT NULL, "
						  "\"minSafeVersion\" int NOT NULL, "
						  "lock char(1) NOT NULL DEFAULT 'v' PRIMARY KEY CHECK (lock = 'v'))", s),
				 SPI_OK_UTILITY);
	}
	changelog_exec(psprintf("SELECT \"schemaVersion\" FROM %s.\"versionHistory\"", s), SPI_OK_SELECT);
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
	changelog_exec(psprintf("INSERT INTO %s.\"versionHistory\" "
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

	changelog_exec(psprintf("SELECT \"replicaVersion\" FROM %s.\"replicationConfig\"", changelog_quoted_schema()),
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
	char	   *s = changelog_quoted_schema();
	Oid			types[3] = {TEXTOID, TEXTARRAYOID, TEXTOID};
	Datum		values[3];
	char	   *owner;

	lock_schema_migration();
	/* taken over while our slot and copy were made: not ours to empty */
	if (!take_over && zs_changelog_taken_over(&owner))
		zs_changelog_report_taken_over(owner);
	/* the storer's lock order (docs/zero-protocol.md §6.3) */
	changelog_exec(psprintf("TRUNCATE %s.\"replicationState\", %s.\"changeLogChunks\", "
					  "%s.\"replicationConfig\", %s.\"tableMetadata\", %s.\"backfilling\", "
					  "%s.\"publishedSchema\"",
					  s, s, s, s, s, s),
			 SPI_OK_UTILITY);

	values[0] = CStringGetTextDatum(replica_version);
	values[1] = zs_publication_array(publications);
	values[2] = CStringGetTextDatum(zs_owner_identity());

	changelog_exec_args(psprintf("INSERT INTO %s.\"replicationConfig\" (\"replicaVersion\", \"publications\") "
						   "SELECT $1, array_agg(p ORDER BY p) FROM unnest($2::text[]) p", s),
				  2, types, values, NULL, SPI_OK_INSERT);
	changelog_exec_args(psprintf("INSERT INTO %s.\"replicationState\" (\"lastWatermark\", \"owner\", \"ownerAddress\") "
						   "VALUES ($1, $3, NULL)", s),
				  3, types, values, NULL, SPI_OK_INSERT);
	/* a log of rows another writer kept (convert_row_table): ours now */
	if (row_table_exists())
	{
		changelog_exec(psprintf("DROP TABLE %s.\"changeLog\"", s), SPI_OK_UTILITY);
		create_view(s);
	}
	/* the seed transaction, through the writer (its commit as zero-cache's: no precommit) */
	zs_changelog_writer_open();
	zs_changelog_writer_add(replica_version, 0, "{\"tag\":\"begin\"}", 15, NULL);
	zs_changelog_writer_add(replica_version, 1, "{\"tag\":\"commit\"}", 16, NULL);
	zs_changelog_writer_close();
}
