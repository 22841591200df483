/*-------------------------------------------------------------------------
 * changelog_writer.c
 *	  The change log's writer: rows gathered into chunks
 *	  (codec/changelog_chunk.h) of at most changelog_chunk_size of changes,
 *	  each compressed and inserted into changeLogChunks keyed by its last
 *	  row (changelog_insert.c; through SPI into a table someone altered);
 *	  the store's bracket around them (the owner checked at its begin, the
 *	  head moved at its end) and the last row written.
 *
 * A store writes what its local commit holds: its last chunk is written
 * at zs_changelog_finish however small, so no transaction waits for a
 * chunk to fill. A transaction larger than a chunk is split over several,
 * so memory stays bounded. The change texts go in as-is: they are our own
 * JSON.stringify-exact output.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "changelog/changelog_insert.h"
#include "changelog/changelog_writer.h"
#include "codec/changelog_chunk.h"
#include "extension_version.h"
#include "guc.h"
#include "ownership.h"

typedef struct ChangelogWriter
{
	MemoryContext context;		/* the chunk being built, the packed one */
	bool		direct;			/* this transaction's chunks go to changelog_insert.c */
	SPIPlanPtr	insert_plan;
	SPIPlanPtr	owner_plan;		/* the state row's owner, FOR UPDATE */
	SPIPlanPtr	head_plan;		/* lastWatermark = $1 */
	char	   *plan_schema;
	ZsChunkBuilder chunk;
	StringInfoData packed;		/* a varlena header, then the stored chunk */
} ChangelogWriter;

#define CHUNK_COLUMNS 7

static ChangelogWriter writer;

/* the last row this process wrote (its transaction committed, or we exit) */
static char last_row_watermark[ZS_WATERMARK_MAXLEN];
static int64 last_row_pos;
static bool last_row_known = false;

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

	if (writer.context == NULL)
	{
		MemoryContext old;

		writer.context = AllocSetContextCreate(TopMemoryContext, "zero_stream changelog writer",
											   ALLOCSET_DEFAULT_SIZES);
		old = MemoryContextSwitchTo(writer.context);
		zs_chunk_builder_init(&writer.chunk);
		initStringInfo(&writer.packed);
		MemoryContextSwitchTo(old);
	}
	if (writer.insert_plan == NULL || strcmp(writer.plan_schema, schema) != 0)
	{
		Oid			types[CHUNK_COLUMNS] = {TEXTOID, INT8OID, TEXTOID, INT8OID, INT4OID, INT4OID, BYTEAOID};
		Oid			head_types[1] = {TEXTOID};

		writer.insert_plan = keep_plan(psprintf("INSERT INTO %s.\"changeLogChunks\" "
												"(\"watermark\", \"pos\", \"firstWatermark\", \"firstPos\", "
												"\"rows\", \"size\", \"chunk\") VALUES ($1, $2, $3, $4, $5, $6, $7)",
												quote_identifier(schema)),
									   CHUNK_COLUMNS, types);
		writer.owner_plan = keep_plan(psprintf("SELECT \"owner\" FROM %s.\"replicationState\" FOR UPDATE",
											   quote_identifier(schema)),
									  0, NULL);
		writer.head_plan = keep_plan(psprintf("UPDATE %s.\"replicationState\" SET \"lastWatermark\" = $1",
											  quote_identifier(schema)),
									 1, head_types);
		writer.plan_schema = MemoryContextStrdup(TopMemoryContext, schema);
	}
}

void
zs_changelog_writer_open(void)
{
	prepare_writer();
	zs_chunk_builder_reset(&writer.chunk);
	writer.direct = zs_changelog_insert_open(zs_cdc_schema_name());
}

/* The chunk gathered so far, compressed and inserted; false if it was empty. */
static bool
write_chunk(void)
{
	ZsChunkBuilder *b = &writer.chunk;
	Datum		values[CHUNK_COLUMNS];
	MemoryContext old;

	if (b->nrows == 0)
		return false;
	old = MemoryContextSwitchTo(writer.context);
	/* the stored chunk after a varlena header: the bytea datum itself */
	resetStringInfo(&writer.packed);
	appendBinaryStringInfo(&writer.packed, "\0\0\0\0", VARHDRSZ);
	zs_chunk_pack(b, (ZsChunkCompression) zs_changelog_compression, &writer.packed);
	SET_VARSIZE(writer.packed.data, writer.packed.len);
	values[0] = CStringGetTextDatum(b->last_watermark);
	values[1] = Int64GetDatum(b->last_pos);
	values[2] = CStringGetTextDatum(b->first_watermark);
	values[3] = Int64GetDatum(b->first_pos);
	values[4] = Int32GetDatum(b->nrows);
	values[5] = Int32GetDatum(b->raw.len);
	values[6] = PointerGetDatum(writer.packed.data);
	MemoryContextSwitchTo(old);
	if (writer.direct)
		zs_changelog_insert_chunk(values);
	else
	{
		int			rc = SPI_execute_plan(writer.insert_plan, values, NULL, false, 0);

		if (rc != SPI_OK_INSERT)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg_internal("change-log insert failed: %s", SPI_result_code_string(rc))));
	}
	pfree(DatumGetPointer(values[0]));
	pfree(DatumGetPointer(values[2]));
	zs_chunk_builder_reset(b);
	/* a huge transaction's buffers do not stay allocated */
	if (writer.packed.maxlen > 4 * zs_changelog_chunk_kb * 1024)
	{
		old = MemoryContextSwitchTo(writer.context);
		pfree(writer.packed.data);
		initStringInfo(&writer.packed);
		pfree(b->raw.data);
		initStringInfo(&b->raw);
		MemoryContextSwitchTo(old);
	}
	return true;
}

bool
zs_changelog_writer_close(void)
{
	bool		wrote = write_chunk();

	if (writer.direct)
		zs_changelog_insert_close();
	writer.direct = false;
	return wrote;
}

bool
zs_changelog_writer_add(const char *watermark, int64 pos, const char *change, int change_len,
						const char *precommit)
{
	MemoryContext old;
	bool		wrote = false;
	/* the row's encoding at most: flags, two texts, two varints */
	Size		row_max = (Size) change_len + 2 * ZS_WATERMARK_MAXLEN + 24;

	if (row_max > ZS_CHUNK_MAX_RAW)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a change of %d bytes at %s/" INT64_FORMAT " is larger than a change-log chunk can hold",
						change_len, watermark, pos)));
	/* a chunk closes before a row would take it past its size, or past the limit */
	if (writer.chunk.nrows > 0 &&
		((Size) writer.chunk.raw.len + row_max > (Size) zs_changelog_chunk_kb * 1024 ||
		 (Size) writer.chunk.raw.len + row_max > ZS_CHUNK_MAX_RAW))
		wrote = write_chunk();
	old = MemoryContextSwitchTo(writer.context);
	zs_chunk_builder_add(&writer.chunk, watermark, pos, change, change_len, precommit);
	MemoryContextSwitchTo(old);
	strlcpy(last_row_watermark, watermark, sizeof(last_row_watermark));
	last_row_pos = pos;
	last_row_known = true;
	/* a row as large as a chunk (or larger) is a chunk of its own */
	if (writer.chunk.raw.len >= zs_changelog_chunk_kb * 1024)
		wrote |= write_chunk();
	return wrote;
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

	zs_changelog_writer_open();
	/* the row stays locked until our commit: no takeover can interleave */
	if (SPI_execute_plan(writer.owner_plan, NULL, NULL, false, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not read the change log's owner")));
	owner = NULL;
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		owner = isnull ? NULL : TextDatumGetCString(d);
	}
	if (owner == NULL || strcmp(owner, zs_owner_identity()) != 0)
		zs_changelog_report_taken_over(owner);
	zs_changelog_check_sql_version();
}

void
zs_changelog_add(const char *watermark, int64 pos, const char *change, int change_len,
				 bool is_commit)
{
	zs_changelog_writer_add(watermark, pos, change, change_len, is_commit ? watermark : NULL);
}

void
zs_changelog_finish(const char *last_watermark)
{
	Datum		values[1];

	zs_changelog_writer_close();
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

void
zs_changelog_read_last_row(void)
{
	bool		isnull;
	Datum		pos;

	/* the last chunk's key is its last row; purge keeps the newest transaction */
	if (SPI_execute(psprintf("SELECT watermark, pos FROM %s.\"changeLogChunks\" "
							 "ORDER BY watermark DESC, pos DESC LIMIT 1",
							 quote_identifier(zs_cdc_schema_name())), true, 1) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not read the change log's last row")));
	last_row_known = SPI_processed == 1;
	if (!last_row_known)
		return;
	strlcpy(last_row_watermark, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
			sizeof(last_row_watermark));
	pos = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	last_row_pos = DatumGetInt64(pos);
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
