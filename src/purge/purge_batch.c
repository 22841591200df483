/*-------------------------------------------------------------------------
 * purge_batch.c
 *	  Deleting change-log chunks below the purge floor, in bounded batches
 *	  (docs/zero-protocol.md §6.5, zero-cache's purgeRecordsBefore).
 *
 * One batch runs in the caller's transaction with SPI connected:
 *   1. the purge lock (first batch of a purge): the oldest chunk is locked
 *      FOR UPDATE, skipping it if someone holds it (zero-cache's PurgeLocker
 *      keeps a row lock on the oldest row while it needs the log from
 *      there); a held lock means no purge now;
 *   2. at most `limit` chunks whose every row is below the floor are
 *      deleted, in key order, never one that holds the newest stored
 *      transaction (the catch-up boundary): a chunk is keyed by its last
 *      row, so those are the chunks whose key's watermark is below both;
 *      a floor inside a chunk keeps the chunk. They are read through the
 *      primary key and deleted one by one as they are read, with the
 *      table AM (a query, if someone added triggers or rules: it runs
 *      them);
 *   3. ownership is checked after the delete, in the same transaction
 *      (FOR SHARE on the state row): a log another streamer has taken over
 *      is not purged by us.
 * Bounded batches keep each transaction's WAL and lock footprint small, so
 * a purge of millions of rows neither bloats WAL in one commit nor blocks
 * the decoder's stores for long; autovacuum reclaims the space.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "changelog/changelog.h"
#include "codec/watermark.h"
#include "compat/executor.h"
#include "guc.h"
#include "ownership.h"
#include "purge/purge_batch.h"

static const char *
cdc(void)
{
	return quote_identifier(zs_cdc_schema_name());
}

static void
run(const char *sql, int nargs, Oid *types, Datum *values, int expected)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0);

	if (rc != expected)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("change-log purge failed (%s): %s", SPI_result_code_string(rc), sql)));
}

static bool
purge_lock_taken(void)
{
	const char *s = cdc();
	Oid			types[2] = {TEXTOID, INT8OID};
	Datum		values[2];
	bool		isnull;

	run(psprintf("SELECT \"watermark\", \"pos\" FROM %s.\"changeLogChunks\" ORDER BY \"watermark\", \"pos\" LIMIT 1", s),
		0, NULL, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return true;			/* empty: nothing to lock, nothing to purge */
	values[0] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	values[1] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	values[0] = PointerGetDatum(DatumGetTextPCopy(values[0]));
	run(psprintf("SELECT FROM %s.\"changeLogChunks\" WHERE \"watermark\" = $1 AND \"pos\" = $2 "
				 "FOR UPDATE SKIP LOCKED", s),
		2, types, values, SPI_OK_SELECT);
	return SPI_processed == 1;
}

static void
check_ownership(void)
{
	char	   *owner;

	run(psprintf("SELECT \"owner\" FROM %s.\"replicationState\" FOR SHARE", cdc()),
		0, NULL, NULL, SPI_OK_SELECT);
	owner = SPI_processed == 1 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : NULL;
	if (owner == NULL || strcmp(owner, zs_owner_identity()) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("not purging the change log: its ownership has been taken by %s",
						owner ? owner : "nobody"),
				 errdetail("This decoder is %s.", zs_owner_identity())));
}

/*
 * The newest watermark stored (false if the log is empty): the first row
 * visible from the key's end.
 */
static bool
read_newest(const ZsChangeLogKeyed *keyed, Snapshot snapshot, TupleTableSlot *slot,
			char *newest)
{
	IndexScanDesc scan = zs_index_beginscan(keyed->heap, keyed->index, snapshot, 0, 0);
	bool		found;
	bool		isnull;

	index_rescan(scan, NULL, 0, NULL, 0);
	found = index_getnext_slot(scan, BackwardScanDirection, slot);
	if (found)
		text_to_cstring_buffer(DatumGetTextPP(slot_getattr(slot, keyed->watermark_att, &isnull)),
							   newest, ZS_WATERMARK_MAXLEN);
	index_endscan(scan);
	return found;
}

/*
 * A chunk's size as pg_column_size(row.*) counts it: the tuple, with its
 * chunk as stored out of line.
 */
static int64
row_bytes(const ZsChangeLogKeyed *keyed, TupleTableSlot *slot, HeapTuple tuple)
{
	bool		isnull;
	Datum		change = slot_getattr(slot, keyed->chunk_att, &isnull);
	int64		size = tuple->t_len;

	if (!isnull && VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(change)))
		size += toast_datum_size(change) - VARSIZE_ANY(DatumGetPointer(change));
	return size;
}

/*
 * The scan's chunks deleted as they are read, until the rows of those found
 * reach limit.
 */
static void
delete_scanned(const ZsChangeLogKeyed *keyed, Snapshot snapshot, TupleTableSlot *slot,
			   ScanKey keys, int nkeys, int limit, char *after_watermark, int64 *after_pos,
			   int64 *found, int64 *rows, int64 *bytes)
{
	IndexScanDesc scan = zs_index_beginscan(keyed->heap, keyed->index, snapshot, nkeys, 0);
	CommandId	cid = GetCurrentCommandId(true);

	index_rescan(scan, keys, nkeys, NULL, 0);
	while (*found < limit && index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		bool		should_free;
		int32		nrows;
		HeapTuple	tuple;
		TM_FailureData tmfd;
		TM_Result	result;

		text_to_cstring_buffer(DatumGetTextPP(slot_getattr(slot, keyed->watermark_att, &isnull)),
							   after_watermark, ZS_WATERMARK_MAXLEN);
		*after_pos = DatumGetInt64(slot_getattr(slot, keyed->pos_att, &isnull));
		nrows = DatumGetInt32(slot_getattr(slot, keyed->rows_att, &isnull));
		*found += nrows;
		tuple = ExecFetchSlotHeapTuple(slot, false, &should_free);
		result = zs_table_tuple_delete(keyed->heap, &slot->tts_tid, cid, snapshot, &tmfd);
		if (result == TM_Ok)
		{
			*rows += nrows;
			*bytes += row_bytes(keyed, slot, tuple);
		}
		else if (result != TM_Deleted && result != TM_Updated)
			elog(ERROR, "unexpected result %d deleting change %s/" INT64_FORMAT,
				 (int) result, after_watermark, *after_pos);
		if (should_free)
			heap_freetuple(tuple);
	}
	index_endscan(scan);
}

/*
 * The batch through the primary key: rows after (after_watermark,
 * after_pos), below the floor and the newest watermark, each deleted as
 * it is read. Those are the rest of after_watermark's transaction, then
 * the rows of later watermarks: two scans, each starting where its rows
 * start (a batch ends anywhere in a transaction, and a scan from the
 * transaction's first row would walk again over the index entries the
 * earlier batches deleted and vacuum has not yet removed). The delete
 * waits for a row's lockers, as DELETE does; a row someone else deleted
 * meanwhile is counted as found, not deleted. False if there are no
 * chunks (a log of rows not converted yet) or the table has triggers or
 * rules (the query then, which runs them).
 */
static bool
delete_keyed(const char *floor, int limit, char *after_watermark, int64 *after_pos,
			 int64 *found, int64 *rows, int64 *bytes)
{
	ZsChangeLogKeyed keyed;
	Snapshot	snapshot;
	TupleTableSlot *slot;
	ScanKeyData keys[4];
	char		newest[ZS_WATERMARK_MAXLEN];

	PushActiveSnapshot(GetTransactionSnapshot());
	if (!zs_changelog_open_keyed(RowExclusiveLock, &keyed))
	{
		PopActiveSnapshot();
		return false;
	}
	if (keyed.heap->trigdesc != NULL || keyed.heap->rd_rules != NULL)
	{
		index_close(keyed.index, NoLock);
		table_close(keyed.heap, NoLock);
		PopActiveSnapshot();
		return false;
	}
	snapshot = GetActiveSnapshot();
	slot = table_slot_create(keyed.heap, NULL);
	if (read_newest(&keyed, snapshot, slot, newest))
	{
		Datum		after = CStringGetTextDatum(after_watermark);
		Datum		below_floor = CStringGetTextDatum(floor);
		Datum		below_newest = CStringGetTextDatum(newest);
		bool		started = after_watermark[0] != '\0';

		zs_changelog_key_init(&keys[0], keyed.index, 0, BTLessStrategyNumber, below_floor);
		zs_changelog_key_init(&keys[1], keyed.index, 0, BTLessStrategyNumber, below_newest);
		if (started)
		{
			zs_changelog_key_init(&keys[2], keyed.index, 0, BTEqualStrategyNumber, after);
			zs_changelog_key_init(&keys[3], keyed.index, 1, BTGreaterStrategyNumber,
								  Int64GetDatum(*after_pos));
			delete_scanned(&keyed, snapshot, slot, keys, 4, limit, after_watermark, after_pos,
						   found, rows, bytes);
			zs_changelog_key_init(&keys[2], keyed.index, 0, BTGreaterStrategyNumber, after);
		}
		delete_scanned(&keyed, snapshot, slot, keys, started ? 3 : 2, limit,
					   after_watermark, after_pos, found, rows, bytes);
	}
	ExecDropSingleTupleTableSlot(slot);
	index_close(keyed.index, NoLock);
	table_close(keyed.heap, NoLock);
	PopActiveSnapshot();
	CommandCounterIncrement();
	return true;
}

ZsPurgeBatchResult
zs_purge_batch(const char *floor, int limit, char *after_watermark, int64 *after_pos,
			   int64 *rows, int64 *bytes)
{
	const char *s = cdc();
	Oid			types[4] = {TEXTOID, INT4OID, TEXTOID, INT8OID};
	Datum		values[4];
	bool		isnull;
	int64		found = 0;

	*rows = 0;
	*bytes = 0;
	if (after_watermark[0] == '\0' && !purge_lock_taken())
		return ZS_PURGE_BATCH_LOCKED;
	if (delete_keyed(floor, limit, after_watermark, after_pos, &found, rows, bytes))
	{
		check_ownership();
		return found < limit ? ZS_PURGE_BATCH_DONE : ZS_PURGE_BATCH_MORE;
	}
	values[0] = CStringGetTextDatum(floor);
	values[1] = Int32GetDatum(limit);
	values[2] = CStringGetTextDatum(after_watermark);
	values[3] = Int64GetDatum(*after_pos);

	/*
	 * The batch: the chunks after the previous batch's last (keyset
	 * continuation, so no batch walks again over the index entries of
	 * chunks deleted but not yet vacuumed), below the floor and never
	 * holding the newest stored transaction, in key order, up to the one
	 * that brings their rows to `limit` (at most `limit` chunks are read:
	 * each holds a row at least); each is deleted by its TID. The
	 * batch's statement runs without sequential scans, whatever the
	 * table's statistics say: an ordered LIMIT reads the primary key, a
	 * TID list is a TID scan. (A delete of the key range instead was
	 * planned as a sequential scan of the whole log when the table had
	 * never been analyzed, as after a bulk load of ten million rows: one
	 * batch a minute; a list of TIDs, as a sequential scan of a log the
	 * statistics took for small.)
	 */
	run("SELECT set_config('enable_seqscan', 'off', true)", 0, NULL, NULL, SPI_OK_SELECT);
	run(psprintf("WITH candidates AS MATERIALIZED ("
				 "  SELECT ctid AS t, \"watermark\" AS w, \"pos\" AS p, \"rows\" AS n FROM %1$s.\"changeLogChunks\" "
				 "   WHERE (\"watermark\", \"pos\") > ($3, $4) AND \"watermark\" < $1 "
				 "     AND \"watermark\" < (SELECT max(\"watermark\") FROM %1$s.\"changeLogChunks\") "
				 "   ORDER BY \"watermark\", \"pos\" LIMIT $2), "
				 "batch AS MATERIALIZED ("
				 "  SELECT t, w, p, n FROM (SELECT *, sum(n) OVER (ORDER BY w, p) - n AS before FROM candidates) c "
				 "   WHERE before < $2), "
				 "gone AS ("
				 "  DELETE FROM %1$s.\"changeLogChunks\" WHERE ctid = ANY (ARRAY(SELECT t FROM batch)) "
				 "  RETURNING \"rows\", pg_column_size(\"changeLogChunks\".*) AS size) "
				 "SELECT last.w, last.p, (SELECT coalesce(sum(n), 0) FROM batch)::int8, "
				 "       (SELECT coalesce(sum(\"rows\"), 0) FROM gone)::int8, (SELECT coalesce(sum(size), 0) FROM gone)::int8 "
				 "  FROM (SELECT w, p FROM batch ORDER BY w DESC, p DESC LIMIT 1) last", s),
		4, types, values, SPI_OK_SELECT);
	if (SPI_processed == 1)
	{
		HeapTuple	tuple = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		strlcpy(after_watermark, TextDatumGetCString(SPI_getbinval(tuple, desc, 1, &isnull)),
				ZS_WATERMARK_MAXLEN);
		*after_pos = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
		found = DatumGetInt64(SPI_getbinval(tuple, desc, 3, &isnull));
		*rows = DatumGetInt64(SPI_getbinval(tuple, desc, 4, &isnull));
		*bytes = DatumGetInt64(SPI_getbinval(tuple, desc, 5, &isnull));
	}
	check_ownership();
	return found < limit ? ZS_PURGE_BATCH_DONE : ZS_PURGE_BATCH_MORE;
}
