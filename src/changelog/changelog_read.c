/*-------------------------------------------------------------------------
 * changelog_read.c
 *	  Reading the committed change log: keyset pages in (watermark, pos)
 *	  order, with each row's wire message built once (the server's catch-up
 *	  and live pages) or row by row as stored (the replicator), and the
 *	  oldest watermark still stored (snapshot reservations). Every function
 *	  runs inside the caller's transaction with SPI connected.
 *
 * A page is read with one prepared keyset query, so a page costs an index
 * range scan wherever it starts; the server shares one page among every
 * subscriber at the same position.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "changelog/changelog.h"
#include "codec/change_message.h"
#include "guc.h"

static SPIPlanPtr page_plan = NULL;

void
zs_changelog_row_set(ZsChangeLogRow *row, const char *watermark, int64 pos,
					 const char *change, int change_len)
{
	StringInfoData msg;

	strlcpy(row->watermark, watermark, sizeof(row->watermark));
	row->pos = pos;
	/* sized for the envelope (zs_append_change_message): no 1 kB default per row */
	msg.maxlen = change_len + ZS_WATERMARK_MAXLEN + 40;
	msg.data = palloc(msg.maxlen);
	resetStringInfo(&msg);
	row->is_commit = zs_append_change_message(&msg, watermark, change, change_len) == ZS_MSG_COMMIT;
	row->message = msg.data;
	row->message_len = msg.len;
}

static void
prepare_page_plan(void)
{
	Oid			types[3] = {TEXTOID, INT8OID, INT8OID};
	SPIPlanPtr	plan;

	if (page_plan != NULL)
		return;
	plan = SPI_prepare(psprintf("SELECT watermark, pos, change::text FROM %s.\"changeLog\" "
								"WHERE (watermark, pos) > ($1, $2) "
								"ORDER BY watermark, pos LIMIT $3",
								quote_identifier(zs_cdc_schema_name())),
					   3, types);
	if (plan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not prepare the change-log page query: %s",
						SPI_result_code_string(SPI_result))));
	SPI_keepplan(plan);
	page_plan = plan;
}

void
zs_changelog_scan_begin(ZsChangeLogScan *scan, const char *after_watermark, int64 after_pos,
						int limit)
{
	Datum		args[3];
	int			rc;

	prepare_page_plan();
	args[0] = CStringGetTextDatum(after_watermark);
	args[1] = Int64GetDatum(after_pos);
	args[2] = Int64GetDatum(limit);
	rc = SPI_execute_plan(page_plan, args, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not read the change log: %s", SPI_result_code_string(rc))));
	pfree(DatumGetPointer(args[0]));
	scan->result = SPI_tuptable;
	scan->next = 0;
	scan->full = (SPI_processed == (uint64) limit);
}

bool
zs_changelog_scan_next(ZsChangeLogScan *scan)
{
	HeapTuple	tuple;
	TupleDesc	desc = scan->result->tupdesc;
	bool		isnull;
	text	   *change;

	if (scan->next >= scan->result->numvals)
		return false;
	tuple = scan->result->vals[scan->next++];
	text_to_cstring_buffer(DatumGetTextPP(SPI_getbinval(tuple, desc, 1, &isnull)),
						   scan->watermark, sizeof(scan->watermark));
	scan->pos = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
	change = DatumGetTextPP(SPI_getbinval(tuple, desc, 3, &isnull));
	scan->change = VARDATA_ANY(change);
	scan->change_len = VARSIZE_ANY_EXHDR(change);
	return true;
}

/* a round reads many pages in one transaction: free each one's result */
void
zs_changelog_scan_end(ZsChangeLogScan *scan)
{
	SPI_freetuptable(scan->result);
	scan->result = NULL;
}

ZsChangeLogPage *
zs_changelog_read_page(const char *after_watermark, int64 after_pos, int limit)
{
	ZsChangeLogPage *page = palloc0(sizeof(ZsChangeLogPage));
	ZsChangeLogScan scan;

	zs_changelog_scan_begin(&scan, after_watermark, after_pos, limit);
	strlcpy(page->after_watermark, after_watermark, sizeof(page->after_watermark));
	page->after_pos = after_pos;
	page->full = scan.full;
	page->rows = palloc(sizeof(ZsChangeLogRow) * Max(scan.result->numvals, 1));
	while (zs_changelog_scan_next(&scan))
		zs_changelog_row_set(&page->rows[page->nrows++], scan.watermark, scan.pos,
							 scan.change, scan.change_len);
	zs_changelog_scan_end(&scan);
	return page;
}

void
zs_changelog_read_floor(char *floor)
{
	char	   *sql = psprintf("SELECT \"watermark\" FROM %s.\"changeLog\" ORDER BY \"watermark\", \"pos\" LIMIT 1",
							   quote_identifier(zs_cdc_schema_name()));

	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not read the change log's oldest watermark")));
	floor[0] = '\0';
	if (SPI_processed == 1)
		strlcpy(floor, SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
				ZS_WATERMARK_MAXLEN);
}
