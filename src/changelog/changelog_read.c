/*-------------------------------------------------------------------------
 * changelog_read.c
 *	  Reading the committed change log: keyset pages in (watermark, pos)
 *	  order, with each row's wire message built once (the server's catch-up
 *	  and live pages) or row by row as stored (the replicator), and the
 *	  oldest watermark still stored (snapshot reservations). Every function
 *	  runs inside the caller's transaction with SPI connected.
 *
 * A page is an index range scan of the chunks' primary key (each chunk
 * keyed by its last row) wherever it starts, read straight through the
 * index, each chunk decompressed once and its rows read in order; the
 * server shares one page among every subscriber at the same position. A
 * chunk that does not decompress or parse ends the page with an error
 * naming it (the reader decides what that stops), never a skipped row.
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
#include "codec/changelog_chunk.h"
#include "compat/executor.h"
#include "compat/varlena_access.h"
#include "guc.h"

/*
 * A page read through changeLogChunks' primary key (watermark, pos of each
 * chunk's last row), without the executor and SPI. The chunks after
 * (w, p) in key order are those with watermark = w and pos > p, then those
 * with watermark > w: two index scans, one after the other. The first
 * chunk may begin before (w, p): its rows up to there are skipped.
 */
typedef struct ZsChangeLogKeyScan
{
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	ZsChangeLogKeyed keyed;
	Datum		after_watermark;
	char		after_text[ZS_WATERMARK_MAXLEN];
	int64		after_pos;
	bool		greater;		/* past the chunks of after_watermark */
	bool		in_chunk;		/* reader holds a chunk's rows */
	bool		past_after;		/* rows from here on are after (w, p) */
	char		chunk_watermark[ZS_WATERMARK_MAXLEN];	/* the chunk's key */
	int64		chunk_pos;
	StringInfoData raw;			/* the chunk's rows' encoding (or the cache's) */
	bool		cached;			/* reader reads chunk_cache.raw */
	ZsChunkReader reader;
	MemoryContext chunk_context;	/* the current chunk's detoasted value */
} ZsChangeLogKeyScan;

/*
 * The last chunk a scan decoded, kept for the next scan of this process: a
 * subscriber's pages are often smaller than a chunk (a slow subscriber's
 * backlog leaves room for a few rows), and each would decompress the same
 * chunk again and read it from its start to its position. A chunk is
 * never changed once written (a new tuple version has another TID), so the
 * table, the TID and the key identify its rows. at is where the last row
 * a scan returned from it ends: a scan from that row goes on from there.
 * One scan uses it at a time (in_use); another reads privately. (A scan
 * ended by an ERROR leaves it in use: the workers that read the log exit
 * on one, and a backend would only read privately from then on.)
 */
typedef struct ChunkCache
{
	MemoryContext context;		/* raw's */
	bool		valid;
	bool		in_use;
	Oid			relid;
	ItemPointerData tid;
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
	StringInfoData raw;
	bool		at_valid;
	ZsChunkReader at;
} ChunkCache;

static ChunkCache chunk_cache;

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

static AttrNumber
column_of(Relation heap, const char *name, Oid type)
{
	AttrNumber	att = get_attnum(RelationGetRelid(heap), name);

	if (att == InvalidAttrNumber || get_atttype(RelationGetRelid(heap), att) != type)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s.\"changeLogChunks\" has no column \"%s\" of type %s",
						zs_cdc_schema_name(), name, format_type_be(type)),
				 errhint("The change log's tables are zero_stream's own; drop schema %s to let zero_stream start a new change log.",
						 quote_identifier(zs_cdc_schema_name()))));
	return att;
}

bool
zs_changelog_open_keyed(LOCKMODE lockmode, ZsChangeLogKeyed *keyed)
{
	Oid			relid;
	Relation	heap;
	Relation	index;
	Oid			index_oid;

	relid = RangeVarGetRelid(makeRangeVar(zs_cdc_schema_name(), "changeLogChunks", -1),
							 lockmode, true);
	if (!OidIsValid(relid))
		return false;
	heap = table_open(relid, NoLock);
	keyed->watermark_att = column_of(heap, "watermark", TEXTOID);
	keyed->pos_att = column_of(heap, "pos", INT8OID);
	keyed->first_watermark_att = column_of(heap, "firstWatermark", TEXTOID);
	keyed->rows_att = column_of(heap, "rows", INT4OID);
	keyed->chunk_att = column_of(heap, "chunk", BYTEAOID);
	index_oid = zs_relation_primary_key_index(heap);
	index = OidIsValid(index_oid) ? index_open(index_oid, AccessShareLock) : NULL;
	if (heap->rd_rel->relkind != RELKIND_RELATION || heap->rd_rel->relhassubclass ||
		index == NULL || index->rd_rel->relam != BTREE_AM_OID ||
		IndexRelationGetNumberOfKeyAttributes(index) != 2 ||
		index->rd_indoption[0] != 0 || index->rd_indoption[1] != 0 ||
		index->rd_index->indkey.values[0] != keyed->watermark_att ||
		index->rd_index->indkey.values[1] != keyed->pos_att ||
		index->rd_opcintype[0] != TEXTOID || index->rd_opcintype[1] != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s.\"changeLogChunks\" is not keyed as zero_stream creates it",
						zs_cdc_schema_name()),
				 errdetail("Its primary key must be (watermark, pos), and it may have no children."),
				 errhint("The change log's tables are zero_stream's own; drop schema %s to let zero_stream start a new change log.",
						 quote_identifier(zs_cdc_schema_name()))));
	keyed->heap = heap;
	keyed->index = index;
	return true;
}

/* The change log as the reader finds it: chunks, or an ERROR saying why not. */
static void
open_chunks(LOCKMODE lockmode, ZsChangeLogKeyed *keyed)
{
	if (!ActiveSnapshotSet())
		elog(ERROR, "reading the change log needs an active snapshot");
	if (!zs_changelog_open_keyed(lockmode, keyed))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("change log %s has no changeLogChunks table", zs_cdc_schema_name()),
				 errdetail("A change log written before zero_stream 0.4.0 stores rows; the decoder of a primary converts it into chunks when it starts."),
				 errhint("Restart the primary with this version of zero_stream, then let this server replay its WAL.")));
}

/* The chunk's key in slot; false if it is NULL (someone altered the table). */
static bool
chunk_key(const ZsChangeLogKeyed *keyed, TupleTableSlot *slot, char *watermark, int64 *pos)
{
	bool		wm_null;
	bool		pos_null;
	Datum		d;

	/* (the columns are NOT NULL, unless someone altered the table) */
	d = slot_getattr(slot, keyed->watermark_att, &wm_null);
	watermark[0] = '\0';
	if (!wm_null)
		text_to_cstring_buffer(DatumGetTextPP(d), watermark, ZS_WATERMARK_MAXLEN);
	d = slot_getattr(slot, keyed->pos_att, &pos_null);
	*pos = pos_null ? 0 : DatumGetInt64(d);
	return !wm_null && !pos_null;
}

/*
 * The chunk in slot, whose key chunk_key read, unpacked into raw: NULL, or
 * why it cannot be read (naming it by its key).
 */
static char *
unpack_chunk(const ZsChangeLogKeyed *keyed, TupleTableSlot *slot, bool key_ok, StringInfo raw,
			 const char *watermark, int64 pos)
{
	bool		isnull;
	Datum		d;
	const char *error = NULL;

	d = slot_getattr(slot, keyed->chunk_att, &isnull);
	if (isnull)
		error = "its chunk is NULL";
	else if (!key_ok)
		error = "its key is NULL";
	else
	{
		bytea	   *chunk = DatumGetByteaPP(d);

		if (zs_chunk_unpack(VARDATA_ANY(chunk), VARSIZE_ANY_EXHDR(chunk), raw, &error))
			return NULL;
	}
	return psprintf("change-log chunk %s/" INT64_FORMAT " of %s cannot be read: %s",
					watermark, pos, zs_cdc_schema_name(), error);
}

/*
 * Open a scan after (after_watermark, after_pos) through the chunks'
 * primary key; NULL if there are no chunks.
 */
static ZsChangeLogKeyScan *
key_scan_open(const char *after_watermark, int64 after_pos)
{
	ZsChangeLogKeyScan *ks;
	ScanKeyData keys[2];

	if (!ActiveSnapshotSet())
		elog(ERROR, "reading the change log needs an active snapshot");
	ks = palloc0(sizeof(ZsChangeLogKeyScan));
	if (!zs_changelog_open_keyed(AccessShareLock, &ks->keyed))
	{
		pfree(ks);
		return NULL;
	}
	ks->heap = ks->keyed.heap;
	ks->index = ks->keyed.index;
	ks->after_watermark = CStringGetTextDatum(after_watermark);
	strlcpy(ks->after_text, after_watermark, sizeof(ks->after_text));
	ks->after_pos = after_pos;
	ks->slot = table_slot_create(ks->heap, NULL);
	ks->chunk_context = AllocSetContextCreate(CurrentMemoryContext, "zero_stream change-log chunk",
											  ALLOCSET_DEFAULT_SIZES);
	initStringInfo(&ks->raw);
	ks->scan = zs_index_beginscan(ks->heap, ks->index, GetActiveSnapshot(), 2, 0);
	zs_changelog_key_init(&keys[0], ks->index, 0, BTEqualStrategyNumber, ks->after_watermark);
	zs_changelog_key_init(&keys[1], ks->index, 1, BTGreaterStrategyNumber, Int64GetDatum(after_pos));
	index_rescan(ks->scan, keys, 2, NULL, 0);
	return ks;
}

/* Is the slot's chunk the one in chunk_cache? */
static bool
cached_chunk(ZsChangeLogKeyScan *ks)
{
	return chunk_cache.valid && chunk_cache.relid == RelationGetRelid(ks->heap) &&
		ItemPointerEquals(&chunk_cache.tid, &ks->slot->tts_tid) &&
		chunk_cache.pos == ks->chunk_pos &&
		strcmp(chunk_cache.watermark, ks->chunk_watermark) == 0;
}

/* The next chunk in key order into the reader; false after the last. */
static bool
key_scan_next_chunk(ZsChangeLogScan *scan)
{
	ZsChangeLogKeyScan *ks = scan->key_scan;
	MemoryContext old;
	StringInfo	raw;
	bool		key_ok;
	char	   *error;

	MemoryContextReset(ks->chunk_context);
	while (!index_getnext_slot(ks->scan, ForwardScanDirection, ks->slot))
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
	key_ok = chunk_key(&ks->keyed, ks->slot, ks->chunk_watermark, &ks->chunk_pos);
	ks->in_chunk = true;
	if (ks->cached)
	{
		/* this scan had the cache: it still does, for this chunk */
		if (cached_chunk(ks))
		{
			zs_chunk_reader_init(&ks->reader, chunk_cache.raw.data, chunk_cache.raw.len);
			return true;
		}
		chunk_cache.valid = false;
		chunk_cache.at_valid = false;
	}
	else if (!chunk_cache.in_use)
	{
		ks->cached = true;
		chunk_cache.in_use = true;
		if (cached_chunk(ks))
		{
			/* a scan from the row the last one ended at goes on from there */
			if (chunk_cache.at_valid &&
				zs_chunk_key_cmp(chunk_cache.at.watermark, chunk_cache.at.pos,
								 ks->after_text, ks->after_pos) == 0)
			{
				ks->reader = chunk_cache.at;
				ks->past_after = true;
			}
			else
				zs_chunk_reader_init(&ks->reader, chunk_cache.raw.data, chunk_cache.raw.len);
			return true;
		}
		chunk_cache.valid = false;
		chunk_cache.at_valid = false;
	}
	if (ks->cached)
	{
		if (chunk_cache.context == NULL)
		{
			chunk_cache.context = AllocSetContextCreate(TopMemoryContext, "zero_stream change-log chunk cache",
														ALLOCSET_DEFAULT_SIZES);
			old = MemoryContextSwitchTo(chunk_cache.context);
			initStringInfo(&chunk_cache.raw);
			MemoryContextSwitchTo(old);
		}
		/* a huge chunk's buffer does not stay allocated */
		if (chunk_cache.raw.maxlen > 4 * 1024 * 1024)
		{
			MemoryContextReset(chunk_cache.context);
			old = MemoryContextSwitchTo(chunk_cache.context);
			initStringInfo(&chunk_cache.raw);
			MemoryContextSwitchTo(old);
		}
		raw = &chunk_cache.raw;
	}
	else
		raw = &ks->raw;
	old = MemoryContextSwitchTo(ks->chunk_context);
	error = unpack_chunk(&ks->keyed, ks->slot, key_ok, raw, ks->chunk_watermark, ks->chunk_pos);
	MemoryContextSwitchTo(old);
	if (error != NULL)
	{
		scan->error = pstrdup(error);
		ks->in_chunk = false;
		return false;
	}
	if (ks->cached)
	{
		chunk_cache.valid = true;
		chunk_cache.relid = RelationGetRelid(ks->heap);
		chunk_cache.tid = ks->slot->tts_tid;
		strlcpy(chunk_cache.watermark, ks->chunk_watermark, sizeof(chunk_cache.watermark));
		chunk_cache.pos = ks->chunk_pos;
	}
	zs_chunk_reader_init(&ks->reader, raw->data, raw->len);
	return true;
}

/* The next row after (w, p) in key order into scan's current row. */
static bool
key_scan_next(ZsChangeLogScan *scan)
{
	ZsChangeLogKeyScan *ks = scan->key_scan;
	ZsChunkReader *r = &ks->reader;

	for (;;)
	{
		const char *error = NULL;
		int			rc;

		if (!ks->in_chunk && !key_scan_next_chunk(scan))
			return false;
		rc = zs_chunk_reader_next(r, &error);
		if (rc == 0)
		{
			/* a chunk ends at its key: anything else is damage */
			if (r->nrows == 0 ||
				zs_chunk_key_cmp(r->watermark, r->pos, ks->chunk_watermark, ks->chunk_pos) != 0)
				error = "its last row is not its key";
			else
			{
				ks->in_chunk = false;
				continue;
			}
		}
		if (error != NULL)
		{
			scan->error = psprintf("change-log chunk %s/" INT64_FORMAT " of %s cannot be read: %s",
								   ks->chunk_watermark, ks->chunk_pos, zs_cdc_schema_name(), error);
			return false;
		}
		if (!ks->past_after)
		{
			if (zs_chunk_key_cmp(r->watermark, r->pos, ks->after_text, ks->after_pos) <= 0)
				continue;
			ks->past_after = true;
		}
		strlcpy(scan->watermark, r->watermark, sizeof(scan->watermark));
		scan->pos = r->pos;
		scan->change = r->change;
		scan->change_len = r->change_len;
		if (ks->cached)
		{
			chunk_cache.at = *r;
			chunk_cache.at_valid = true;
		}
		return true;
	}
}

static void
key_scan_end(ZsChangeLogKeyScan *ks)
{
	if (ks->cached)
		chunk_cache.in_use = false;
	index_endscan(ks->scan);
	ExecDropSingleTupleTableSlot(ks->slot);
	MemoryContextDelete(ks->chunk_context);
	index_close(ks->index, NoLock);
	table_close(ks->heap, NoLock);
	pfree(DatumGetPointer(ks->after_watermark));
	pfree(ks->raw.data);
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

void
zs_changelog_scan_begin(ZsChangeLogScan *scan, const char *after_watermark, int64 after_pos,
						int limit, const char *upto)
{
	scan->next = 0;
	scan->limit = limit;
	scan->full = false;
	scan->error = NULL;
	strlcpy(scan->upto, upto ? upto : "", sizeof(scan->upto));
	scan->key_scan = key_scan_open(after_watermark, after_pos);
	/* a standby that has not replayed its primary's conversion yet */
	if (scan->key_scan == NULL)
		scan->error = psprintf("change log %s has no changeLogChunks table yet: it is a log of rows that the primary's decoder converts when it starts with zero_stream 0.4.0",
							   zs_cdc_schema_name());
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
	if (scan->next >= (uint64) scan->limit || scan->error != NULL)
		return false;
	if (!key_scan_next(scan) || past_upto(scan))
		return false;
	scan->full = (++scan->next == (uint64) scan->limit);
	return true;
}

/* a round reads many pages in one transaction: free each one's scan */
void
zs_changelog_scan_end(ZsChangeLogScan *scan)
{
	if (scan->key_scan != NULL)
		key_scan_end(scan->key_scan);
	scan->key_scan = NULL;
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
	page->error = scan.error;
	zs_changelog_scan_end(&scan);
	return page;
}

void
zs_changelog_read_floor(char *floor)
{
	char	   *sql = psprintf("SELECT \"firstWatermark\" FROM %s.\"changeLogChunks\" ORDER BY \"watermark\", \"pos\" LIMIT 1",
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
 * stored: the first chunk whose key is at or after (watermark, any pos)
 * holds the transaction's first stored row if any is stored, found by one
 * descent of the primary key. The oldest watermark, by contrast, is the
 * first live entry of the key, behind every entry the purge deleted and
 * vacuum has not yet removed.
 */
bool
zs_changelog_holds_position(const char *watermark, int64 pos)
{
	ZsChangeLogKeyed keyed;
	ScanKeyData key;
	TupleTableSlot *slot;
	IndexScanDesc scan;
	Datum		arg = CStringGetTextDatum(watermark);
	bool		found = false;

	open_chunks(AccessShareLock, &keyed);
	slot = table_slot_create(keyed.heap, NULL);
	scan = zs_index_beginscan(keyed.heap, keyed.index, GetActiveSnapshot(), 1, 0);
	zs_changelog_key_init(&key, keyed.index, 0, BTGreaterEqualStrategyNumber, arg);
	index_rescan(scan, &key, 1, NULL, 0);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		StringInfoData raw;
		char		chunk_watermark[ZS_WATERMARK_MAXLEN];
		int64		chunk_pos;
		char	   *error;
		ZsChunkReader r;
		const char *row_error = NULL;
		int			rc;

		bool		key_ok = chunk_key(&keyed, slot, chunk_watermark, &chunk_pos);

		initStringInfo(&raw);
		error = unpack_chunk(&keyed, slot, key_ok, &raw, chunk_watermark, chunk_pos);
		if (error != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s", error)));
		zs_chunk_reader_init(&r, raw.data, raw.len);
		while ((rc = zs_chunk_reader_next(&r, &row_error)) == 1)
		{
			int			c = strcmp(r.watermark, watermark);

			if (c > 0 || (c == 0 && r.pos > pos))
				break;
			if (c == 0)
			{
				found = true;
				break;
			}
		}
		if (rc == -1)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("change-log chunk %s/" INT64_FORMAT " of %s cannot be read: %s",
							chunk_watermark, chunk_pos, zs_cdc_schema_name(), row_error)));
		pfree(raw.data);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(keyed.index, NoLock);
	table_close(keyed.heap, NoLock);
	return found;
}
