/*-------------------------------------------------------------------------
 * changelog_read.c
 *	  Reading the committed change log: keyset pages in (watermark, pos)
 *	  order, with each row's wire message built once (the server's catch-up
 *	  and live pages) or row by row as stored (the replicator), and the
 *	  oldest watermark still stored (snapshot reservations). Every function
 *	  runs inside the caller's transaction with SPI connected.
 *
 * A page is an index range scan of the primary key wherever it starts,
 * read straight through the index (or, if someone changed the table's key,
 * with one prepared keyset query); the server shares one page among every
 * subscriber at the same position.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "changelog/changelog.h"
#include "codec/change_message.h"
#include "compat/executor.h"
#include "guc.h"

static SPIPlanPtr page_plan = NULL;
static SPIPlanPtr holds_plan = NULL;

/*
 * A page read through changeLog's primary key (watermark, pos), as the
 * page query's plan reads it, without the executor and SPI: they took a
 * tenth of the replicator's time (the query's projection, and a copy of
 * every row into SPI's result). The rows after (w, p) in key order are
 * those with watermark = w and pos > p, then those with watermark > w:
 * two index scans, one after the other.
 */
typedef struct ZsChangeLogKeyScan
{
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	AttrNumber	watermark_att;
	AttrNumber	pos_att;
	AttrNumber	change_att;
	Datum		after_watermark;
	bool		greater;		/* past the rows of after_watermark */
	MemoryContext row_context;	/* the current row's detoasted values */
} ZsChangeLogKeyScan;

/* The key of the index's column (0-based) compared by strategy with arg. */
void
zs_changelog_key_init(ScanKey key, Relation index, int column, StrategyNumber strategy, Datum arg)
{
	Oid			type = index->rd_opcintype[column];
	Oid			opno = get_opfamily_member(index->rd_opfamily[column], type, type, strategy);

	if (!OidIsValid(opno))
		elog(ERROR, "missing operator %d for type %u in the change log's primary key",
			 strategy, type);
	ScanKeyEntryInitialize(key, 0, column + 1, strategy, type,
						   index->rd_indcollation[column], get_opcode(opno), arg);
}

bool
zs_changelog_open_keyed(LOCKMODE lockmode, ZsChangeLogKeyed *keyed)
{
	Oid			relid;
	Relation	heap;
	Relation	index;
	Oid			index_oid;
	AttrNumber	watermark_att,
				pos_att,
				change_att;
	Oid			change_type;

	relid = RangeVarGetRelid(makeRangeVar(zs_cdc_schema_name(), "changeLog", -1),
							 lockmode, true);
	if (!OidIsValid(relid))
		return false;
	heap = table_open(relid, NoLock);
	if (heap->rd_rel->relkind != RELKIND_RELATION || heap->rd_rel->relhassubclass)
	{
		table_close(heap, lockmode);
		return false;
	}
	index_oid = zs_relation_primary_key_index(heap);
	watermark_att = get_attnum(relid, "watermark");
	pos_att = get_attnum(relid, "pos");
	change_att = get_attnum(relid, "change");
	change_type = change_att == InvalidAttrNumber ? InvalidOid : get_atttype(relid, change_att);
	if (!OidIsValid(index_oid) || (change_type != JSONOID && change_type != TEXTOID))
	{
		table_close(heap, lockmode);
		return false;
	}
	index = index_open(index_oid, AccessShareLock);
	if (index->rd_rel->relkind != RELKIND_INDEX || index->rd_rel->relam != BTREE_AM_OID ||
		IndexRelationGetNumberOfKeyAttributes(index) != 2 ||
		index->rd_indoption[0] != 0 || index->rd_indoption[1] != 0 ||
		index->rd_index->indkey.values[0] != watermark_att ||
		index->rd_index->indkey.values[1] != pos_att ||
		index->rd_opcintype[0] != TEXTOID || index->rd_opcintype[1] != INT8OID ||
		get_atttype(relid, watermark_att) != TEXTOID || get_atttype(relid, pos_att) != INT8OID)
	{
		index_close(index, AccessShareLock);
		table_close(heap, lockmode);
		return false;
	}
	keyed->heap = heap;
	keyed->index = index;
	keyed->watermark_att = watermark_att;
	keyed->pos_att = pos_att;
	keyed->change_att = change_att;
	return true;
}

/*
 * Open a scan after (after_watermark, after_pos) through the primary key,
 * or NULL if changeLog is not a plain table without children (the query
 * reads those too) whose key is the btree on (watermark text, pos int8)
 * that changelog.c creates, with a change of json or text.
 */
static ZsChangeLogKeyScan *
key_scan_open(const char *after_watermark, int64 after_pos)
{
	ZsChangeLogKeyed keyed;
	ZsChangeLogKeyScan *ks;
	ScanKeyData keys[2];
	Relation	heap;
	Relation	index;

	if (!ActiveSnapshotSet())
		elog(ERROR, "reading the change log needs an active snapshot");
	if (!zs_changelog_open_keyed(AccessShareLock, &keyed))
		return NULL;
	heap = keyed.heap;
	index = keyed.index;

	ks = palloc0(sizeof(ZsChangeLogKeyScan));
	ks->heap = heap;
	ks->index = index;
	ks->watermark_att = keyed.watermark_att;
	ks->pos_att = keyed.pos_att;
	ks->change_att = keyed.change_att;
	ks->after_watermark = CStringGetTextDatum(after_watermark);
	ks->slot = table_slot_create(heap, NULL);
	ks->row_context = AllocSetContextCreate(CurrentMemoryContext, "zero_stream change-log row",
											ALLOCSET_SMALL_SIZES);
	ks->scan = zs_index_beginscan(heap, index, GetActiveSnapshot(), 2, 0);
	zs_changelog_key_init(&keys[0], index, 0, BTEqualStrategyNumber, ks->after_watermark);
	zs_changelog_key_init(&keys[1], index, 1, BTGreaterStrategyNumber, Int64GetDatum(after_pos));
	index_rescan(ks->scan, keys, 2, NULL, 0);
	return ks;
}

/* The next row in key order into scan's current row; false after the last. */
static bool
key_scan_next(ZsChangeLogScan *scan)
{
	ZsChangeLogKeyScan *ks = scan->key_scan;
	TupleTableSlot *slot = ks->slot;
	MemoryContext old;
	text	   *change;
	bool		isnull;

	MemoryContextReset(ks->row_context);
	while (!index_getnext_slot(ks->scan, ForwardScanDirection, slot))
	{
		ScanKeyData key;

		if (ks->greater)
			return false;
		/* a scan has the number of keys it began with: a new one */
		ks->greater = true;
		index_endscan(ks->scan);
		ks->scan = zs_index_beginscan(ks->heap, ks->index, GetActiveSnapshot(), 1, 0);
		zs_changelog_key_init(&key, ks->index, 0, BTGreaterStrategyNumber, ks->after_watermark);
		index_rescan(ks->scan, &key, 1, NULL, 0);
	}
	old = MemoryContextSwitchTo(ks->row_context);
	text_to_cstring_buffer(DatumGetTextPP(slot_getattr(slot, ks->watermark_att, &isnull)),
						   scan->watermark, sizeof(scan->watermark));
	scan->pos = DatumGetInt64(slot_getattr(slot, ks->pos_att, &isnull));
	change = (text *) DatumGetPointer(slot_getattr(slot, ks->change_att, &isnull));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("change %s/" INT64_FORMAT " of the change log is NULL",
						scan->watermark, scan->pos)));
	change = pg_detoast_datum_packed(change);
	MemoryContextSwitchTo(old);
	scan->change = VARDATA_ANY(change);
	scan->change_len = VARSIZE_ANY_EXHDR(change);
	return true;
}

static void
key_scan_end(ZsChangeLogKeyScan *ks)
{
	index_endscan(ks->scan);
	ExecDropSingleTupleTableSlot(ks->slot);
	MemoryContextDelete(ks->row_context);
	index_close(ks->index, NoLock);
	table_close(ks->heap, NoLock);
	pfree(DatumGetPointer(ks->after_watermark));
	pfree(ks);
}

void
zs_changelog_row_set(ZsChangeLogRow *row, const char *watermark, int64 pos,
					 const char *change, int change_len)
{
	StringInfoData msg;

	strlcpy(row->watermark, watermark, sizeof(row->watermark));
	row->pos = pos;
	/* sized for the envelope (zs_change_message_append): no 1 kB default per row */
	msg.maxlen = change_len + ZS_WATERMARK_MAXLEN + 40;
	msg.data = palloc(msg.maxlen);
	resetStringInfo(&msg);
	row->is_commit = zs_change_message_append(&msg, watermark, change, change_len) == ZS_MSG_COMMIT;
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
						int limit, const char *upto)
{
	Datum		args[3];
	int			rc;

	scan->result = NULL;
	scan->next = 0;
	scan->limit = limit;
	scan->full = false;
	strlcpy(scan->upto, upto ? upto : "", sizeof(scan->upto));
	scan->key_scan = key_scan_open(after_watermark, after_pos);
	if (scan->key_scan != NULL)
		return;
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
}

/* the current row is after the head the scan stops at (the page ends) */
static bool
past_upto(ZsChangeLogScan *scan)
{
	if (scan->upto[0] == '\0' || strcmp(scan->watermark, scan->upto) <= 0)
		return false;
	scan->limit = 0;			/* nothing more, and not full */
	return true;
}

bool
zs_changelog_scan_next(ZsChangeLogScan *scan)
{
	HeapTuple	tuple;
	TupleDesc	desc;
	bool		isnull;
	text	   *change;

	if (scan->next >= (uint64) scan->limit)
		return false;
	if (scan->key_scan != NULL)
	{
		if (!key_scan_next(scan) || past_upto(scan))
			return false;
		scan->full = (++scan->next == (uint64) scan->limit);
		return true;
	}
	if (scan->next >= scan->result->numvals)
		return false;
	desc = scan->result->tupdesc;
	tuple = scan->result->vals[scan->next];
	text_to_cstring_buffer(DatumGetTextPP(SPI_getbinval(tuple, desc, 1, &isnull)),
						   scan->watermark, sizeof(scan->watermark));
	if (past_upto(scan))
		return false;
	scan->next++;
	scan->full = (scan->next == (uint64) scan->limit);
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
	if (scan->key_scan != NULL)
		key_scan_end(scan->key_scan);
	else
		SPI_freetuptable(scan->result);
	scan->key_scan = NULL;
	scan->result = NULL;
}

ZsChangeLogPage *
zs_changelog_read_page(const char *after_watermark, int64 after_pos, int limit, const char *upto)
{
	ZsChangeLogPage *page = palloc0(sizeof(ZsChangeLogPage));
	ZsChangeLogScan scan;
	int			size = Min(limit, 64);

	zs_changelog_scan_begin(&scan, after_watermark, after_pos, limit, upto);
	strlcpy(page->after_watermark, after_watermark, sizeof(page->after_watermark));
	page->after_pos = after_pos;
	page->rows = palloc(sizeof(ZsChangeLogRow) * Max(size, 1));
	while (zs_changelog_scan_next(&scan))
	{
		if (page->nrows == size)
		{
			size = Min(limit, size * 2);
			page->rows = repalloc(page->rows, sizeof(ZsChangeLogRow) * size);
		}
		zs_changelog_row_set(&page->rows[page->nrows++], scan.watermark, scan.pos,
							 scan.change, scan.change_len);
	}
	page->full = scan.full;
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

/*
 * Whether a row of the transaction at this watermark, at or before pos, is
 * stored: one descent of the primary key to it (a query, ordered by the
 * key so that no plan scans the table, if the table's shape differs). The
 * oldest watermark, by contrast, is the first live entry of the key,
 * behind every entry the purge deleted and vacuum has not yet removed:
 * after a purge of millions of rows, a walk over all of them.
 */
bool
zs_changelog_holds_position(const char *watermark, int64 pos)
{
	ZsChangeLogKeyed keyed;
	Oid			types[2] = {TEXTOID, INT8OID};
	Datum		args[2];
	bool		found;

	args[0] = CStringGetTextDatum(watermark);
	args[1] = Int64GetDatum(pos);
	if (!ActiveSnapshotSet())
		elog(ERROR, "reading the change log needs an active snapshot");
	if (zs_changelog_open_keyed(AccessShareLock, &keyed))
	{
		ScanKeyData keys[2];
		TupleTableSlot *slot = table_slot_create(keyed.heap, NULL);
		IndexScanDesc scan = zs_index_beginscan(keyed.heap, keyed.index, GetActiveSnapshot(), 2, 0);

		zs_changelog_key_init(&keys[0], keyed.index, 0, BTEqualStrategyNumber, args[0]);
		zs_changelog_key_init(&keys[1], keyed.index, 1, BTLessEqualStrategyNumber, args[1]);
		index_rescan(scan, keys, 2, NULL, 0);
		found = index_getnext_slot(scan, ForwardScanDirection, slot);
		index_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
		index_close(keyed.index, NoLock);
		table_close(keyed.heap, NoLock);
		return found;
	}
	if (holds_plan == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(psprintf("SELECT FROM %s.\"changeLog\" WHERE \"watermark\" = $1 AND \"pos\" <= $2 "
												"ORDER BY \"watermark\", \"pos\" LIMIT 1",
												quote_identifier(zs_cdc_schema_name())),
									   2, types);

		if (plan == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not prepare the change-log position query: %s",
							SPI_result_code_string(SPI_result))));
		SPI_keepplan(plan);
		holds_plan = plan;
	}
	if (SPI_execute_plan(holds_plan, args, NULL, true, 1) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not read the change log at %s/" INT64_FORMAT, watermark, pos)));
	return SPI_processed == 1;
}
