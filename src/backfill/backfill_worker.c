/*-------------------------------------------------------------------------
 * backfill_worker.c
 *	  Read a table's row keys and backfilled columns at one snapshot and
 *	  send them to the decoder as zero's backfill messages
 *	  (docs/zero-protocol.md §3.4, zero-cache's backfill-stream.ts).
 *
 * A column added with a volatile default (now(), nextval(), ...) or a
 * table added to a publication has values the stream never carried. The
 * decoder asks this worker to read them; the worker:
 *   1. creates an ephemeral logical slot, as the walsender's
 *      CREATE_REPLICATION_SLOT ... USE_SNAPSHOT does, to get a snapshot that
 *      holds exactly the transactions that committed before the slot's
 *      consistent point (creating it waits for the transactions running
 *      then, as zero-cache's backfill does);
 *   2. locks the table (by its OID: no DROP, rewrite or rename can commit
 *      from then on) and checks that it still exists, then, on that
 *      snapshot, that the request still describes the published table
 *      (zs_schema_backfill_table); if not, it stops and the decoder retries
 *      once the schema change that explains it is stored;
 *   3. checks that the table was not rewritten after the snapshot (a
 *      rewrite is not MVCC-safe: the snapshot would see it empty), nor
 *      renamed, nor its columns (names resolve in the present catalog);
 *   4. reads the row key and the backfilled columns with a cursor, encodes
 *      each row as the stream encodes values, and sends a "backfill"
 *      message whenever ZS_BACKFILL_CHUNK_BYTES of values are gathered,
 *      then "backfill-completed". The queue is bounded: when the decoder
 *      is busy with the stream, this worker waits, so memory stays bounded
 *      for any table size.
 * The messages' "watermark" is the watermark of the consistent point minus
 * one byte: no commit record can start there, and every transaction that
 * committed at or before it is in the snapshot, so a replica may overwrite
 * a column whose version is at or below it (a commit starting exactly at
 * the consistent point is not in the snapshot; see decoder/lineage.c).
 *
 * The worker writes nothing; if it fails or is stopped, the decoder starts
 * the backfill again later, from the "backfilling" table. The decoder stops
 * it with SIGTERM (its request changed, a command waits for the table):
 * that cancels what it is doing and it exits with a LOG line, as it does
 * when it finds the table dropped or changed, not with an error.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type_d.h"
#include "nodes/makefuncs.h"
#include "utils/lsyscache.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "replication/logical.h"
#include "replication/slot.h"
#include "replication/snapbuild.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "codec/json_out.h"
#include "codec/json_read.h"
#include "codec/watermark.h"
#include "backfill/backfill_worker.h"
#include "decoding/change_encode.h"
#include "decoding/snapshot.h"
#include "decoding/output_plugin.h"
#include "decoding/schema_backfill.h"
#include "guc.h"
#include "shmem.h"

#define BACKFILL_FETCH_ROWS 1000

/* SIGTERM: the decoder (or a shutdown) asks this worker to stop */
static volatile sig_atomic_t stop_requested = false;

typedef struct Backfill
{
	shm_mq_handle *queue;
	ZsBackfillTable table;
	char		watermark[ZS_WATERMARK_MAXLEN];
	XLogRecPtr	snapshot_lsn;
	int64		rows;
	int64		total_rows;
	int64		total_bytes;
	StringInfoData common;		/* "relation":…,"columns":…,"watermark":… */
} Backfill;

static void
send_message(Backfill *b, char kind, StringInfo json)
{
	StringInfoData buf;
	ZsBackfillMessage header;
	shm_mq_result res;

	memset(&header, 0, sizeof(header));
	header.kind = kind;
	header.snapshot_lsn = b->snapshot_lsn;
	header.rows = b->rows;
	header.total_rows = b->total_rows;
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, (char *) &header, sizeof(header));
	appendBinaryStringInfo(&buf, json->data, json->len);
	res = shm_mq_send(b->queue, buf.len, buf.data, false, true);
	pfree(buf.data);
	if (res != SHM_MQ_SUCCESS)
	{
		/* the decoder stopped listening: it restarts the backfill itself */
		ereport(LOG,
				(errmsg("zero_stream backfill of \"%s\".\"%s\" stopped: the decoder went away",
						b->table.schema, b->table.name)));
		proc_exit(0);
	}
}

static void
append_status(StringInfo out, const Backfill *b)
{
	appendStringInfo(out, ",\"status\":{\"rows\":" INT64_FORMAT ",\"totalRows\":" INT64_FORMAT
					 ",\"totalBytes\":" INT64_FORMAT "}}",
					 b->rows, b->total_rows, b->total_bytes);
}

/* {"tag":"backfill",...,"rowValues":[rows],"status":{...}} */
static void
send_rows(Backfill *b, StringInfo rows)
{
	StringInfoData json;

	initStringInfo(&json);
	appendStringInfoString(&json, "{\"tag\":\"backfill\",");
	appendBinaryStringInfo(&json, b->common.data, b->common.len);
	appendStringInfoString(&json, ",\"rowValues\":[");
	appendBinaryStringInfo(&json, rows->data, rows->len);
	appendStringInfoChar(&json, ']');
	append_status(&json, b);
	send_message(b, ZS_BACKFILL_ROWS, &json);
	pfree(json.data);
}

static void
send_completed(Backfill *b)
{
	StringInfoData json;

	initStringInfo(&json);
	appendStringInfoString(&json, "{\"tag\":\"backfill-completed\",");
	appendBinaryStringInfo(&json, b->common.data, b->common.len);
	append_status(&json, b);
	send_message(b, ZS_BACKFILL_COMPLETED, &json);
	pfree(json.data);
}

/* "relation":{"schema","name","rowKey":{"columns":[…]}},"columns":[…],"watermark":"…" */
static void
build_common(Backfill *b)
{
	const ZsBackfillTable *t = &b->table;

	initStringInfo(&b->common);
	appendStringInfoString(&b->common, "\"relation\":{\"schema\":");
	zs_json_append_cstring(&b->common, t->schema);
	appendStringInfoString(&b->common, ",\"name\":");
	zs_json_append_cstring(&b->common, t->name);
	appendStringInfoString(&b->common, ",\"rowKey\":{\"columns\":[");
	for (int i = 0; i < t->nkeys; i++)
	{
		if (i > 0)
			appendStringInfoChar(&b->common, ',');
		zs_json_append_cstring(&b->common, t->names[i]);
	}
	appendStringInfoString(&b->common, "]}},\"columns\":[");
	for (int i = t->nkeys; i < t->ncolumns; i++)
	{
		if (i > t->nkeys)
			appendStringInfoChar(&b->common, ',');
		zs_json_append_cstring(&b->common, t->names[i]);
	}
	appendStringInfoString(&b->common, "],\"watermark\":");
	zs_json_append_cstring(&b->common, b->watermark);
}

static char *
select_list(const ZsBackfillTable *t, const char *(*wrap) (const char *col))
{
	StringInfoData sql;

	initStringInfo(&sql);
	for (int i = 0; i < t->ncolumns; i++)
		appendStringInfo(&sql, "%s%s", i > 0 ? (wrap ? " + " : ", ") : "",
						 wrap ? wrap(quote_identifier(t->names[i])) : quote_identifier(t->names[i]));
	return sql.data;
}

static const char *
column_bytes(const char *col)
{
	return psprintf("coalesce(sum(coalesce(pg_column_size(%s), 0)), 0)", col);
}

/*
 * "FROM [ONLY] table [WHERE filters]": what the publications publish of the
 * table, as zero-cache selects it. A partitioned table (published through
 * its root) is read with its partitions, any other without its
 * inheritance children, as the stream carries them.
 */
static char *
from_clause(const ZsBackfillTable *t, Oid relid, const char *qualified)
{
	return psprintf("FROM %s%s%s%s", get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE ? "" : "ONLY ",
					qualified, t->row_filter ? " WHERE " : "", t->row_filter ? t->row_filter : "");
}

/* totalRows and totalBytes, as zero-cache counts them (its status object) */
static void
count_table(Backfill *b, const char *from)
{
	char	   *sql = psprintf("SELECT count(*)::int8, (%s)::int8 %s",
							   b->table.ncolumns > 0 ? select_list(&b->table, column_bytes) : "0",
							   from);
	bool		isnull;

	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not count the rows (%s)", from)));
	b->total_rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	b->total_bytes = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
}

static void
postpone(const char *qualified, const char *why)
{
	ereport(LOG,
			(errmsg("zero_stream backfill of %s postponed: %s", qualified, why),
			 errhint("The decoder retries with a newer snapshot.")));
	proc_exit(0);
}

/* The relationOID of a request's table metadata (InvalidOid if it has none) */
static Oid
request_relid(const char *request)
{
	ZsJsonDoc	doc;
	int			table,
				metadata,
				oid;
	int64		relid = 0;

	zs_json_doc_init(&doc);
	if (zs_json_parse(&doc, request, strlen(request)) &&
		(table = zs_json_get(&doc, 0, "table")) >= 0 &&
		(metadata = zs_json_get(&doc, table, "metadata")) >= 0 &&
		(oid = zs_json_get(&doc, metadata, "relationOID")) >= 0)
		(void) zs_json_int64(&doc, oid, &relid);
	zs_json_doc_free(&doc);
	return (Oid) relid;
}

/*
 * Lock the table for the rest of the backfill, by OID, before anything
 * reads it or resolves its name: a DROP that committed since the snapshot
 * (or that we waited for) leaves no table, and stops the backfill quietly;
 * from then on no DROP, rewrite or rename of it can commit (a command that
 * waits for the lock makes the decoder stop this worker, see backfill.c).
 * A partitioned table's partitions cannot be dropped or detached without
 * this lock on it either.
 */
static void
lock_table(Oid relid, const char *request)
{
	if (!OidIsValid(relid))
		return;					/* zs_schema_backfill_table() says why */
	LockRelationOid(relid, AccessShareLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
	{
		ereport(LOG,
				(errmsg("zero_stream backfill stopped: its table (OID %u) was dropped after the backfill's snapshot",
						relid),
				 errdetail("The request was %s.", request),
				 errhint("The decoder ends the backfill once it has stored the drop.")));
		proc_exit(0);
	}
}

/*
 * The table as the snapshot sees it must be the table as it is now, once
 * lock_table() has locked it (no DDL can commit on it from then on):
 *  - not rewritten after the snapshot (ALTER TABLE ... TYPE, a volatile
 *    default, VACUUM FULL): rewrites are not MVCC-safe, the snapshot would
 *    see the new files empty; every leaf's file is compared;
 *  - the same name for the same relation, and each column's name for the
 *    same attnum: the queries resolve names in the present catalog, the
 *    request was checked against the snapshot's.
 * If not, stop: the decoder retries with a newer snapshot.
 */
static void
check_table_unchanged(const ZsBackfillTable *t, Oid relid, const char *qualified)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *same;

	if (SPI_execute_with_args("SELECT coalesce(bool_and(c.relfilenode IS NOT DISTINCT FROM pg_relation_filenode(c.oid)"
							  "                         AND pg_relation_filenode(c.oid) IS NOT NULL), true) "
							  "  FROM pg_partition_tree($1) p JOIN pg_class c ON c.oid = p.relid "
							  " WHERE p.isleaf",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not read the files of %s", qualified)));
	same = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (same == NULL || strcmp(same, "t") != 0)
		postpone(qualified, "the table was rewritten after the backfill's snapshot");
	if (RangeVarGetRelid(makeRangeVar(t->schema, t->name, -1), NoLock, true) != relid)
		postpone(qualified, "the table was renamed or replaced after the backfill's snapshot");
	for (int i = 0; i < t->ncolumns; i++)
		if (get_attnum(relid, t->names[i]) != t->attnums[i])
			postpone(qualified, psprintf("column \"%s\" was renamed or replaced after the backfill's snapshot",
										 t->names[i]));
}

/* The relation the encoder writes rowValues with: key columns, then the backfilled ones. */
static ZsRelation *
describe(const ZsBackfillTable *t, Oid relid)
{
	ZsPgoutputMsg rel;

	memset(&rel, 0, sizeof(rel));
	rel.type = ZS_PGO_RELATION;
	rel.relid = relid;
	rel.nspname = t->schema;
	rel.relname = t->name;
	rel.replident = 'd';
	rel.natts = t->ncolumns;
	rel.attrs = palloc0(sizeof(ZsRelationAttr) * Max(t->ncolumns, 1));
	for (int i = 0; i < t->ncolumns; i++)
	{
		rel.attrs[i].name = t->names[i];
		rel.attrs[i].typid = t->typids[i];
		rel.attrs[i].typmod = -1;
		rel.attrs[i].is_key = i < t->nkeys;
	}
	zs_encode_prepare(zs_relcache_update(&rel));
	return zs_relcache_lookup(relid);
}

static void
stream_rows(Backfill *b, Oid relid)
{
	const ZsBackfillTable *t = &b->table;
	char	   *qualified = psprintf("%s.%s", quote_identifier(t->schema), quote_identifier(t->name));
	char	   *from = from_clause(t, relid, qualified);
	ZsRelation *rel = describe(t, relid);
	ZsTuple    *tuple = palloc0(sizeof(ZsTuple));
	StringInfoData rows;
	SPIPlanPtr	plan;
	Portal		portal;
	MemoryContext fetch_context = AllocSetContextCreate(CurrentMemoryContext, "zero_stream backfill fetch",
														ALLOCSET_DEFAULT_SIZES);
	int64		rows_in_chunk = 0;

	check_table_unchanged(t, relid, qualified);
	count_table(b, from);
	ereport(LOG,
			(errmsg("zero_stream backfill of %s (%s) at watermark %s: " INT64_FORMAT " rows",
					qualified, select_list(t, NULL), b->watermark, b->total_rows)));

	plan = SPI_prepare(psprintf("SELECT %s %s", t->ncolumns > 0 ? select_list(t, NULL) : "NULL", from),
					   0, NULL);
	if (plan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not prepare the backfill of %s: %s", qualified,
								 SPI_result_code_string(SPI_result))));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	tuple->natts = t->ncolumns;
	initStringInfo(&rows);
	for (;;)
	{
		MemoryContext old;

		SPI_cursor_fetch(portal, true, BACKFILL_FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		/* zero-cache cannot backfill rows it could not identify again */
		if (t->nkeys == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot backfill %s: it has rows and no PRIMARY KEY or replica identity index", qualified),
					 errhint("Add a primary key (or empty the table); the backfill is retried.")));
		old = MemoryContextSwitchTo(fetch_context);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			for (int c = 0; c < t->ncolumns; c++)
			{
				char	   *value = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1);

				tuple->cols[c].kind = value ? ZS_PGO_COL_TEXT : ZS_PGO_COL_NULL;
				tuple->cols[c].data = value;
				tuple->cols[c].len = value ? strlen(value) : 0;
			}
			if (rows_in_chunk > 0)
				appendStringInfoChar(&rows, ',');
			zs_encode_row_values(&rows, rel, tuple);
			rows_in_chunk++;
			b->rows++;
			if (rows.len >= ZS_BACKFILL_CHUNK_BYTES)
			{
				send_rows(b, &rows);
				resetStringInfo(&rows);
				rows_in_chunk = 0;
			}
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(fetch_context);
		SPI_freetuptable(SPI_tuptable);
		zs_worker_check_interrupts();
	}
	if (rows_in_chunk > 0)
		send_rows(b, &rows);
	SPI_cursor_close(portal);
	send_completed(b);
	ereport(LOG,
			(errmsg("zero_stream backfill of %s completed: " INT64_FORMAT " rows",
					qualified, b->rows)));
}

/* A unique name for the ephemeral slot: "<slot>_bf_<pid>" */
static char *
snapshot_slot_name(void)
{
	char	   *base = zs_effective_slot_name();
	char	   *suffix = psprintf("_bf_%d", MyProcPid);

	if (strlen(base) + strlen(suffix) >= NAMEDATALEN)
		base[NAMEDATALEN - 1 - strlen(suffix)] = '\0';
	return psprintf("%s%s", base, suffix);
}

static void
run_backfill(shm_mq_handle *queue, const char *request)
{
	Backfill	b;
	LogicalDecodingContext *ctx;
	char	   *schema;
	char	   *mismatch;

	memset(&b, 0, sizeof(b));
	b.queue = queue;
	zs_relcache_init(TopMemoryContext, zs_cdc_schema_name());

	/* 1. a snapshot of exactly the transactions before a consistent point */
	ctx = zs_snapshot_slot_create(snapshot_slot_name(), &b.snapshot_lsn);
	zs_watermark_encode(b.snapshot_lsn - 1, b.watermark);
	zs_snapshot_begin(ctx);

	/* 2. the table, locked, and the request must still describe it as published */
	lock_table(request_relid(request), request);
	schema = zs_snapshot_published_schema(zs_publication_list());
	mismatch = zs_schema_backfill_table(schema, strlen(schema), request, strlen(request), &b.table);
	if (mismatch != NULL)
	{
		ereport(LOG,
				(errmsg("zero_stream backfill postponed: %s", mismatch),
				 errdetail("The request was %s.", request),
				 errhint("The decoder retries once it has stored the schema change that explains it.")));
		proc_exit(0);
	}
	build_common(&b);

	/* 3. the rows */
	stream_rows(&b, (Oid) b.table.relid);

	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
	FreeDecodingContext(ctx);
	ReplicationSlotRelease();	/* an ephemeral slot is dropped */
}

/*
 * SIGTERM cancels what the worker is doing (an ERROR at the next interrupt
 * check), which zs_backfill_main() turns into a quiet exit.
 */
static void
handle_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	stop_requested = true;
	InterruptPending = true;
	QueryCancelPending = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

void
zs_backfill_main(Datum main_arg)
{
	dsm_segment *seg;
	shm_toc    *toc;
	shm_mq	   *mq;
	shm_mq_handle *queue;
	char	   *request;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "zero_stream backfill");
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream backfill: the decoder's shared memory segment is gone")));
	toc = shm_toc_attach(ZS_BACKFILL_SHM_MAGIC, dsm_segment_address(seg));
	if (toc == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("zero_stream backfill: bad shared memory segment")));
	request = pstrdup(shm_toc_lookup(toc, ZS_BACKFILL_KEY_REQUEST, false));
	mq = shm_toc_lookup(toc, ZS_BACKFILL_KEY_QUEUE, false);
	shm_mq_set_sender(mq, MyProc);
	queue = shm_mq_attach(mq, seg, NULL);

	BackgroundWorkerInitializeConnection(zs_database, NULL, 0);
	pgstat_report_appname("zero_stream backfill");
	zs_set_canonical_session("zero_stream backfill");
	zs_output_plugin_allow();
	pqsignal(SIGTERM, handle_sigterm);
	PG_TRY();
	{
		run_backfill(queue, request);
	}
	PG_CATCH();
	{
		if (!stop_requested)
			PG_RE_THROW();
		/* the transaction and the ephemeral slot go with the process */
		MemoryContextSwitchTo(TopMemoryContext);
		FlushErrorState();
		ereport(LOG,
				(errmsg("zero_stream backfill stopped when asked to"),
				 errdetail("The request was %s.", request)));
		proc_exit(0);
	}
	PG_END_TRY();
	proc_exit(0);
}
