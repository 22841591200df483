/*-------------------------------------------------------------------------
 * changelog.c
 *	  The change log's schema changes: the published schema the head was
 *	  written with, and zero-cache's bookkeeping of schema changes
 *	  (tableMetadata, backfilling) with the backfill requests it holds.
 *
 * The log is stored in chunks (codec/changelog_chunk.h), written by
 * changelog_writer.c; its tables and lineage are changelog_schema.c's, its
 * state row changelog_state.c's. Runs inside the caller's transaction with
 * SPI connected.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "changelog/changelog.h"
#include "changelog/changelog_spi.h"
#include "changelog/changelog_writer.h"
#include "guc.h"
#include "ownership.h"

char *
zs_changelog_read_published_schema(void)
{
	changelog_exec(psprintf("SELECT \"snapshot\" FROM %s.\"publishedSchema\"", changelog_quoted_schema()),
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
	changelog_exec_args(psprintf("INSERT INTO %s.\"publishedSchema\" (\"snapshot\") VALUES ($1) "
						   "ON CONFLICT (lock) DO UPDATE SET \"snapshot\" = excluded.\"snapshot\"",
						   changelog_quoted_schema()),
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
		changelog_exec_args(psprintf(bookkeeping[i][1], changelog_quoted_schema()), 1, types, values, NULL,
					  strncmp(bookkeeping[i][1], "INSERT", 6) == 0 ? SPI_OK_INSERT :
					  strncmp(bookkeeping[i][1], "UPDATE", 6) == 0 ? SPI_OK_UPDATE : SPI_OK_DELETE);
	}
}

List *
zs_changelog_read_backfill_requests(void)
{
	List	   *requests = NIL;

	changelog_exec(psprintf("SELECT json_build_object('table', json_build_object('schema', b.\"schema\", "
					  "         'name', b.\"table\", 'metadata', t.\"metadata\"), "
					  "       'columns', json_object_agg(b.\"column\", b.\"backfill\" "
					  "         ORDER BY b.\"backfill\"->'attNum', b.\"column\"))::text "
					  "  FROM %1$s.\"backfilling\" b LEFT JOIN %1$s.\"tableMetadata\" t "
					  "       ON t.\"schema\" = b.\"schema\" AND t.\"table\" = b.\"table\" "
					  " GROUP BY b.\"schema\", b.\"table\", t.\"metadata\" "
					  " ORDER BY b.\"schema\", b.\"table\"", changelog_quoted_schema()),
			 SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
		requests = lappend(requests, SPI_getvalue(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc, 1));
	return requests;
}
