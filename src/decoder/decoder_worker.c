/*-------------------------------------------------------------------------
 * decoder_worker.c
 *	  The decoder background worker: WAL -> pgoutput -> Zero change log.
 *
 * One loop iteration:
 *   1. decode the WAL flushed so far (bounded by commit_batch_size); the
 *      output plugin's write callback parses each pgoutput message, encodes
 *      the Zero change JSON once and stages it in the spool;
 *   2. store every staged transaction in one local transaction through SPI,
 *      stamped with our replication origin's progress (the commit LSN end of
 *      the last stored upstream transaction);
 *   3. confirm the slot only after that commit; publish progress in shmem.
 * Between the decoding phase (historic catalog snapshots) and the SPI phase
 * (present-day catalogs) the system caches are invalidated both ways
 * (docs/pg-internals.md fact 2).
 *
 * Exactly-once: our commit carries the origin progress, and decoding
 * restarts from it (commits before it are skipped by the snapshot builder).
 * As a second line, a transaction whose watermark is not above the stored
 * head is dropped at its BEGIN.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogrecovery.h"
#include "access/xlogutils.h"
#include "commands/extension.h"
#include "commands/publicationcmds.h"
#include "catalog/pg_publication.h"	/* get_publication_oid on 15 */
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/decode.h"
#include "replication/logicalproto.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/sinval.h"
#include "storage/standby.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"	/* get_publication_oid on 17+ */
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "backfill/backfill.h"
#include "decoding/change_encode.h"
#include "changelog/changelog.h"
#include "compat/replication.h"
#include "changelog/changelog_live.h"
#include "decoder/lag_report.h"
#include "decoder/lineage.h"
#include "decoding/snapshot.h"
#include "guc.h"
#include "decoding/output_plugin.h"
#include "decoding/pgoutput_read.h"
#include "shmem.h"
#include "slot_health.h"
#include "spi_xact.h"
#include "codec/json_read.h"
#include "purge/purge.h"
#include "decoding/schema_diff.h"
#include "decoder/shard_setup.h"
#include "decoder/spool.h"
#include "decoder/subscriber_positions.h"
#include "codec/watermark.h"

PGDLLEXPORT void zs_decoder_main(Datum main_arg);

/*
 * Staged changes beyond this stay on disk, not in memory: at least a
 * quarter more than commit_batch_size, so that a round (which stops at
 * commit_batch_size plus its last transaction) is not written to a file
 * and read back just for its last transaction; only a transaction much
 * larger than a round spills.
 */
#define SPOOL_MEMORY_LIMIT (16 * 1024 * 1024)

/*
 * WAL read per round at most: a round ends with a confirmation, so the
 * slot's position moves on (and is saved) regularly even while nothing is
 * staged, e.g. while re-reading transactions stored before a crash.
 */
#define ROUND_WAL_BYTES ((XLogRecPtr) 32 * 1024 * 1024)

/*
 * How often the idle decoder looks again when the next WAL record is only
 * partly flushed (see read_flushed_wal_page): its rest is in WAL buffers
 * and on its way to disk, with no commit that would wake us.
 */
#define PARTIAL_RECORD_POLL_MS 1

/* the rows of a stored transaction that are not changes: begin and commit */
#define TXN_ENVELOPE_ROWS 2

/* our names for pgoutput's message types are PostgreSQL's */
StaticAssertDecl((int) ZS_PGO_BEGIN == (int) LOGICAL_REP_MSG_BEGIN && (int) ZS_PGO_COMMIT == (int) LOGICAL_REP_MSG_COMMIT &&
				 (int) ZS_PGO_ORIGIN == (int) LOGICAL_REP_MSG_ORIGIN && (int) ZS_PGO_RELATION == (int) LOGICAL_REP_MSG_RELATION &&
				 (int) ZS_PGO_TYPE == (int) LOGICAL_REP_MSG_TYPE && (int) ZS_PGO_INSERT == (int) LOGICAL_REP_MSG_INSERT &&
				 (int) ZS_PGO_UPDATE == (int) LOGICAL_REP_MSG_UPDATE && (int) ZS_PGO_DELETE == (int) LOGICAL_REP_MSG_DELETE &&
				 (int) ZS_PGO_TRUNCATE == (int) LOGICAL_REP_MSG_TRUNCATE && (int) ZS_PGO_MESSAGE == (int) LOGICAL_REP_MSG_MESSAGE,
				 "pgoutput message types");
StaticAssertDecl(ZS_PGO_COL_NULL == LOGICALREP_COLUMN_NULL &&
				 ZS_PGO_COL_UNCHANGED == LOGICALREP_COLUMN_UNCHANGED &&
				 ZS_PGO_COL_TEXT == LOGICALREP_COLUMN_TEXT &&
				 ZS_PGO_COL_BINARY == LOGICALREP_COLUMN_BINARY,
				 "pgoutput column kinds");

/*
 * Where decoding is, for the context line of any error raised meanwhile
 * (as core's apply worker reports the remote transaction it applies).
 */
typedef struct DecodePosition
{
	XLogRecPtr	lsn;			/* of the WAL record being decoded */
	TransactionId xid;			/* of the transaction being replayed */
	char		message;		/* pgoutput message type, 0 outside one */
	Oid			relid;			/* its relation, if any */
} DecodePosition;

/* The upstream transaction whose messages the write callback is receiving. */
typedef struct CurrentTxn
{
	bool		skip;			/* already stored: drop its messages */
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
} CurrentTxn;

/* Whole upstream transactions staged for the next local commit. */
typedef struct Batch
{
	ZsSpool    *spool;
	int			ntxns;
	uint64		nchanges;
	bool		baseline_changed;	/* schema_baseline moved: store it */
	char		last_watermark[ZS_WATERMARK_MAXLEN];
	XLogRecPtr	last_end_lsn;
	TimestampTz last_commit_time;
} Batch;

static CurrentTxn txn;
static Batch batch;
static char stored_head[ZS_WATERMARK_MAXLEN];	/* lastWatermark in the log */
static char lineage[ZS_WATERMARK_MAXLEN];	/* the replicaVersion streamed */
static char purge_gate[ZS_WATERMARK_MAXLEN];	/* the head when the stream started */
static ZsPgoutputMsg msg;
static ZsTuple old_tuple;
static ZsTuple new_tuple;
static StringInfoData change_text;
static MemoryContext message_context;
static ResourceOwner decoding_owner;
static DecodePosition position;
static bool decoding = false;	/* in the decode loop (decode_and_store) */

/* the published schema at the current point of the stream (TopMemoryContext) */
static char *schema_baseline = NULL;
static List *stream_publications = NIL;

static void
set_schema_baseline(const char *snapshot, int len)
{
	if (schema_baseline != NULL)
		pfree(schema_baseline);
	schema_baseline = MemoryContextAlloc(TopMemoryContext, len + 1);
	memcpy(schema_baseline, snapshot, len);
	schema_baseline[len] = '\0';
}

static const char *
message_name(char type)
{
	switch (type)
	{
		case ZS_PGO_BEGIN:
			return "BEGIN";
		case ZS_PGO_COMMIT:
			return "COMMIT";
		case ZS_PGO_RELATION:
			return "RELATION";
		case ZS_PGO_INSERT:
			return "INSERT";
		case ZS_PGO_UPDATE:
			return "UPDATE";
		case ZS_PGO_DELETE:
			return "DELETE";
		case ZS_PGO_TRUNCATE:
			return "TRUNCATE";
		default:
			return "other";
	}
}

static void
decode_error_context(void *arg)
{
	const char *relation = NULL;

	if (position.message != 0 && OidIsValid(position.relid))
		relation = zs_relcache_name(position.relid);
	if (position.message == 0)
		errcontext("decoding WAL at %X/%X", LSN_FORMAT_ARGS(position.lsn));
	else if (relation != NULL)
		errcontext("decoding pgoutput message \"%s\" for relation %s in transaction %u at %X/%X",
				   message_name(position.message), relation, position.xid,
				   LSN_FORMAT_ARGS(position.lsn));
	else
		errcontext("decoding pgoutput message \"%s\" in transaction %u at %X/%X",
				   message_name(position.message), position.xid, LSN_FORMAT_ARGS(position.lsn));
}

static void
store_error_context(void *arg)
{
	errcontext("storing %d transactions up to watermark %s in the change log",
			   batch.ntxns, batch.last_watermark);
}

static void
stage_row(bool is_commit, bool is_schema)
{
	ZsSpoolRecord header;

	memset(&header, 0, sizeof(header));
	memcpy(header.watermark, txn.watermark, sizeof(header.watermark));
	header.pos = txn.pos++;
	header.len = change_text.len;
	header.is_commit = is_commit;
	header.is_schema = is_schema;
	zs_spool_append(batch.spool, &header, change_text.data);
}

static void
stage_change(bool is_commit)
{
	stage_row(is_commit, false);
}

/*
 * A logical message. Ours ("zero_stream/ddl", written by the DDL capture
 * in the DDL's transaction) carries the new published schema: the
 * difference from the schema at this point of the stream becomes zero's
 * schema-change messages, in the transaction, at the message's place. A
 * lag report's (non-transactional) is handed to lag_report.c.
 * Anything else (an application's messages, transactional or not) is not
 * data; a transaction that holds only such a message is stored as an empty
 * begin/commit, as zero-cache stores it.
 */
static void
handle_message(void)
{
	ZsJsonDoc	doc;
	const char *tag;
	int			schema;
	char	  **changes;
	const char *error;
	const char *own[2];
	int			n;

	if (!(msg.flags & ZS_PGO_MESSAGE_TRANSACTIONAL) &&
		strcmp(msg.prefix, zs_lag_report_prefix()) == 0)
	{
		zs_lag_report_received(msg.content, msg.content_len);
		return;
	}
	if (!(msg.flags & ZS_PGO_MESSAGE_TRANSACTIONAL) || txn.skip ||
		strcmp(msg.prefix, ZS_DDL_MESSAGE_PREFIX) != 0)
		return;
	zs_json_doc_init(&doc);
	if (!zs_json_parse(&doc, msg.content, msg.content_len) ||
		(schema = zs_json_get(&doc, 0, "schema")) < 0 ||
		(tag = zs_json_get_string(&doc, 0, "tag")) == NULL)
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("ignoring a malformed schema-change message in the transaction of watermark %s",
						txn.watermark)));
		zs_json_doc_free(&doc);
		return;
	}
	own[0] = zs_cdc_schema_name();
	own[1] = ZS_EXTENSION_SCHEMA;
	if (schema_baseline == NULL)
		n = 0;					/* nothing to compare with: take it as the baseline */
	else
		n = zs_schema_diff(schema_baseline, strlen(schema_baseline),
						   zs_json_raw(&doc, schema), doc.nodes[schema].raw_len,
						   tag, own, lengthof(own), &changes, &error);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("cannot compare published schemas: %s", error)));
	for (int i = 0; i < n; i++)
	{
		resetStringInfo(&change_text);
		appendStringInfoString(&change_text, changes[i]);
		stage_row(false, true);
	}
	set_schema_baseline(zs_json_raw(&doc, schema), doc.nodes[schema].raw_len);
	batch.baseline_changed = true;
	zs_json_doc_free(&doc);
}

static void
handle_begin(void)
{
	zs_watermark_encode(msg.final_lsn, txn.watermark);
	txn.pos = 0;
	txn.skip = strcmp(txn.watermark, stored_head) <= 0;
	if (txn.skip)
		return;
	zs_encode_begin(&change_text, &msg);
	stage_change(false);
}

static void
handle_commit(void)
{
	if (txn.skip)
		return;
	zs_encode_commit(&change_text, &msg);
	stage_change(true);
	batch.ntxns++;
	batch.nchanges += txn.pos - TXN_ENVELOPE_ROWS;
	memcpy(batch.last_watermark, txn.watermark, sizeof(batch.last_watermark));
	batch.last_end_lsn = msg.end_lsn;
	batch.last_commit_time = (TimestampTz) msg.commit_time;
}

static void
handle_row_change(void)
{
	ZsRelation *rel;

	if (txn.skip)
		return;
	rel = zs_relcache_lookup(msg.relid);
	if (zs_relation_is_own(rel))
		return;
	switch (msg.type)
	{
		case ZS_PGO_INSERT:
			zs_encode_insert(&change_text, rel, &msg);
			break;
		case ZS_PGO_UPDATE:
			if (msg.relid == zs_backfill_relid())
			{
				int			nkeys;
				const char *const *keys = zs_backfill_key_columns(&nkeys);

				if (zs_update_changes_columns(rel, &msg, keys, nkeys))
					zs_backfill_key_changed(txn.watermark);
			}
			zs_encode_update(&change_text, rel, &msg);
			break;
		default:
			zs_encode_delete(&change_text, rel, &msg);
			break;
	}
	stage_change(false);
}

/*
 * Writer callback: ctx->out holds exactly one pgoutput message. Runs inside
 * the reorder buffer's replay transaction; it must not write to tables.
 */
static void
decoder_write(LogicalDecodingContext *ctx, XLogRecPtr lsn, TransactionId xid, bool last_write)
{
	MemoryContext old = MemoryContextSwitchTo(message_context);
	const char *error;

	msg.old_tuple = &old_tuple;
	msg.new_tuple = &new_tuple;
	position.lsn = lsn;
	position.xid = xid;
	position.message = ctx->out->len > 0 ? ctx->out->data[0] : 0;
	position.relid = InvalidOid;
	error = zs_pgoutput_parse(ctx->out->data, ctx->out->len, &msg);
	if (error != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("malformed pgoutput message at %X/%X: %s", LSN_FORMAT_ARGS(lsn), error)));

	if (msg.type == ZS_PGO_INSERT || msg.type == ZS_PGO_UPDATE ||
		msg.type == ZS_PGO_DELETE || msg.type == ZS_PGO_RELATION)
		position.relid = msg.relid;
	resetStringInfo(&change_text);
	switch (msg.type)
	{
		case ZS_PGO_BEGIN:
			handle_begin();
			break;
		case ZS_PGO_COMMIT:
			handle_commit();
			break;
		case ZS_PGO_RELATION:
			zs_relcache_update(&msg);
			break;
		case ZS_PGO_INSERT:
		case ZS_PGO_UPDATE:
		case ZS_PGO_DELETE:
			handle_row_change();
			break;
		case ZS_PGO_TRUNCATE:
			if (txn.skip)
				break;
			/* backfill rows read before it must not bring truncated rows back */
			for (int i = 0; i < msg.nrelids; i++)
				if (zs_pgoutput_relid_at(&msg, i) == zs_backfill_relid())
					zs_backfill_key_changed(txn.watermark);
			if (zs_encode_truncate(&change_text, &msg))
				stage_change(false);
			break;
		case ZS_PGO_MESSAGE:
			handle_message();
			break;
		default:
			/* types, origins and logical messages carry no change rows */
			break;
	}
	position.message = 0;
	MemoryContextSwitchTo(old);
	MemoryContextReset(message_context);
}

static void
decoder_prepare_write(LogicalDecodingContext *ctx, XLogRecPtr lsn, TransactionId xid,
					  bool last_write)
{
	resetStringInfo(ctx->out);
}

static void
reset_batch(void)
{
	zs_spool_clear(batch.spool);
	batch.ntxns = 0;
	batch.nchanges = 0;
	batch.baseline_changed = false;
}

/*
 * Stores commit without waiting for their WAL flush (the round's rows are
 * already with live subscribers, and the next round need not wait for the
 * disk). Nothing is lost by it: a store lost in a crash takes its origin
 * progress with it, so decoding starts before it again and stores the
 * same transactions with the same watermarks; a subscriber or the backup
 * replica that had them resumes from its own watermark, as after a live
 * round. Only the slot must never pass a store that is not durable (its
 * restart_lsn would pass WAL we must decode again): it is confirmed once
 * the WAL is flushed up to the last store's commit, by the WAL writer
 * (within wal_writer_delay) or by us when the decoder is idle for
 * CONFIRM_FLUSH_MS.
 */
#define CONFIRM_FLUSH_MS 20

static XLogRecPtr unflushed_store = InvalidXLogRecPtr;	/* its commit's end */
static XLogRecPtr pending_confirm = InvalidXLogRecPtr;
static TimestampTz pending_since = 0;

static long settle_confirmation(bool force);

/*
 * Before storing a round, publish it to live subscribers
 * (changelog/changelog_live.c), from the last row stored on: as much of it
 * as fits in the live buffer, then, if the round spilled to the spool's
 * file (a transaction larger than the spool's memory), where the rest is
 * in that file. A round in memory that does not fit (live_buffer below the
 * spool's memory, 1.25 x commit_batch_size) is sent in part, the rest once
 * stored. Not before this process knows that row (at start, it reads it
 * from the log).
 */
static void
publish_round(void)
{
	char		after_watermark[ZS_WATERMARK_MAXLEN];
	int64		after_pos;
	ZsSpoolRecord header;
	StringInfoData text;
	int64		published = 0;
	Size		rest_offset = 0;
	bool		cut = false;
	const char *path;

	if (!zs_changelog_last_row(after_watermark, &after_pos) ||
		!zs_live_begin(lineage, after_watermark, after_pos))
		return;
	initStringInfo(&text);
	zs_spool_start_read(batch.spool);
	for (;;)
	{
		rest_offset = zs_spool_read_offset(batch.spool);
		if (!zs_spool_read(batch.spool, &header, &text))
			break;
		if (!zs_live_add(header.watermark, header.pos, text.data, text.len))
		{
			cut = true;
			break;
		}
		published++;
	}
	zs_live_end();
	pfree(text.data);
	if (cut && (path = zs_spool_file(batch.spool)) != NULL)
	{
		ZsSpoolRecord last;
		int64		records = zs_spool_records(batch.spool, &last);

		zs_live_rest_publish(path, rest_offset, records - published, last.watermark, last.pos);
	}
}

/* Store the staged transactions in one local transaction. */
static void
store_batch(void)
{
	ZsSpoolRecord header;
	StringInfoData text;
	ErrorContextCallback callback;

	callback.callback = store_error_context;
	callback.arg = NULL;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	zs_spi_xact_begin("zero_stream: storing decoded transactions");

	zs_changelog_begin();
	initStringInfo(&text);
	zs_spool_start_read(batch.spool);
	while (zs_spool_read(batch.spool, &header, &text))
	{
		if (header.is_schema)
			zs_changelog_add_schema(header.watermark, header.pos, text.data, text.len);
		else
			zs_changelog_add(header.watermark, header.pos, text.data, text.len, header.is_commit);
	}
	if (batch.baseline_changed)
		zs_changelog_write_published_schema(schema_baseline);
	zs_changelog_finish(batch.last_watermark);

	/* the commit stamps our progress into the origin, atomically */
	replorigin_session_origin_lsn = batch.last_end_lsn;
	replorigin_session_origin_timestamp = batch.last_commit_time;
	/* not waiting for its flush: the slot is confirmed once it is (below) */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	zs_spi_xact_commit();
	SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);
	unflushed_store = Max(unflushed_store, XactLastCommitEnd);
	error_context_stack = callback.previous;
	replorigin_session_origin_lsn = InvalidXLogRecPtr;
	pgstat_report_stat(false);

	memcpy(stored_head, batch.last_watermark, sizeof(stored_head));
	zs_publish_stored(stored_head, batch.ntxns, batch.nchanges, batch.last_commit_time);
}

static void
confirm_position(XLogRecPtr lsn)
{
	LogicalConfirmReceivedLocation(lsn);
	ReplicationSlotMarkDirty();
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->confirmed_lsn = lsn;
	LWLockRelease(zs_shared->lock);
}

/*
 * Catalog caches are shared by decoding (historic snapshots) and our SPI
 * work (the present): at a switch between the two, entries built on one
 * side can be wrong on the other, and a full InvalidateSystemCaches() is
 * the remedy (docs/pg-internals.md fact 2). It costs every relcache entry
 * and cached plan we use, rebuilt at each round: at 1,000 single-row
 * transactions/s that was 40% of the decoder's time. The two sides can
 * only disagree about a catalog change that happened after the WAL being
 * decoded: its invalidation messages reach this process through the
 * shared queue, which bumps SharedInvalidMessageCounter (a queue overflow
 * too). So we remember the WAL insert position when we last saw the
 * counter move: every catalog change we have heard of committed before it.
 * While decoding has not passed that position, each switch invalidates
 * everything, as before; once it has, historic and present catalogs agree
 * on everything the caches hold, and a change we have not heard of yet
 * still has its messages queued, to be applied at our next lock or
 * transaction start. Checked at both switches, after taking the queued
 * messages.
 */
static uint64 seen_inval_counter = 0;
static XLogRecPtr catalog_change_lsn = InvalidXLogRecPtr;

static void
switch_catalog_view(XLogRecPtr decoding_from)
{
	AcceptInvalidationMessages();
	if (SharedInvalidMessageCounter != seen_inval_counter || catalog_change_lsn == InvalidXLogRecPtr)
	{
		seen_inval_counter = SharedInvalidMessageCounter;
		catalog_change_lsn = GetXLogInsertRecPtr();
	}
	if (decoding_from < catalog_change_lsn)
		InvalidateSystemCaches();
}

/*
 * The WAL position the reader needed when the last round stopped at a
 * record not all flushed: until the flush reaches it, trying again reads
 * nothing (and would only switch the catalog caches back and forth, and
 * assemble a long record again from its start). The flush position only
 * grows, so once reached this never holds a round back again.
 */
static XLogRecPtr cut_need = InvalidXLogRecPtr;

/*
 * The streaming reader's page_read: read_local_xlog_page, except that WAL
 * not flushed yet is not waited for. read_local_xlog_page sleeps in 1 ms
 * steps until it is, and the record at the flush position is often only
 * partly flushed: the WAL writer flushes asynchronous commits (our own
 * stores' among them) up to a page boundary. Waiting inside the reader held
 * every transaction the round had decoded until the rest was flushed, up
 * to wal_writer_delay (200 ms by default), and kept the loop from its other
 * duties meanwhile. Here the reader returns no record (XLREAD_WOULDBLOCK),
 * the round ends with what it decoded, and the next round reads the record
 * again from its start.
 *
 * XLogReadRecord (blocking mode) passes XLREAD_WOULDBLOCK from any page
 * read straight back, before it moves its positions: it returns NULL with
 * no error and reads the same record next time. (read_local_xlog_page_no_wait
 * cannot be used: it writes into state->private_data, which is the decoding
 * context here.) On a segment's first page the reader asks for its data as
 * if the page header were short and reads the long header's 16 more bytes
 * without checking for XLREAD_WOULDBLOCK, so they are required here.
 */
static int
read_flushed_wal_page(XLogReaderState *state, XLogRecPtr targetPagePtr, int reqLen,
					  XLogRecPtr targetRecPtr, char *cur_page)
{
	XLogRecPtr	need = targetPagePtr + reqLen;

	if (XLogSegmentOffset(targetPagePtr, state->segcxt.ws_segsize) == 0)
		need = targetPagePtr + Min(reqLen + SizeOfXLogLongPHD - SizeOfXLogShortPHD, XLOG_BLCKSZ);
	if (need > GetFlushRecPtr(NULL))
	{
		cut_need = need;
		return XLREAD_WOULDBLOCK;
	}
	return read_local_xlog_page(state, targetPagePtr, reqLen, targetRecPtr, cur_page);
}

static XLogReaderRoutine streaming_wal_reader = {
	.page_read = read_flushed_wal_page,
	.segment_open = wal_segment_open,
	.segment_close = wal_segment_close,
};

/*
 * One bounded round: decode what is flushed (at most commit_batch_size of
 * staged changes and ROUND_WAL_BYTES of WAL), store it, confirm. A round
 * ends early at a record that is not all flushed yet. Returns true if WAL
 * was read, so the caller loops again without sleeping; *stored says
 * whether the round stored transactions.
 */
static bool
decode_and_store(LogicalDecodingContext *ctx, bool *stored)
{
	XLogRecPtr	end_of_wal = GetFlushRecPtr(NULL);
	Size		limit = (Size) zs_commit_batch_kb * 1024;
	ErrorContextCallback callback;
	XLogRecPtr	round_start;

	*stored = false;
	if (ctx->reader->EndRecPtr >= end_of_wal || end_of_wal < cut_need)
		return false;
	end_of_wal = Min(end_of_wal, ctx->reader->EndRecPtr + ROUND_WAL_BYTES);
	zs_spool_set_memory_limit(batch.spool, Max(SPOOL_MEMORY_LIMIT, limit + limit / 4));

	round_start = ctx->reader->EndRecPtr;
	switch_catalog_view(round_start);
	callback.callback = decode_error_context;
	callback.arg = NULL;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	decoding = true;
	while (ctx->reader->EndRecPtr < end_of_wal && zs_spool_bytes(batch.spool) < limit)
	{
		XLogRecord *record;
		char	   *errm = NULL;

		position.lsn = ctx->reader->EndRecPtr;
		position.message = 0;
		CurrentResourceOwner = decoding_owner;
		record = XLogReadRecord(ctx->reader, &errm);
		if (errm)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not read WAL: %s", errm)));
		if (record == NULL)
		{
			elog(DEBUG1, "decoding round ends at %X/%X: the record there is not all flushed yet",
				 LSN_FORMAT_ARGS(ctx->reader->EndRecPtr));
			break;
		}
		LogicalDecodingProcessRecord(ctx, ctx->reader);
		/* an aborted replay transaction resets the resource owner */
		CurrentResourceOwner = decoding_owner;
		CHECK_FOR_INTERRUPTS();
	}
	decoding = false;
	error_context_stack = callback.previous;
	switch_catalog_view(round_start);
	if (ctx->reader->EndRecPtr == round_start)
		return false;			/* its first record was not all flushed */

	*stored = batch.ntxns > 0;
	if (*stored)
	{
		publish_round();
		store_batch();
		/* the log has the round now: the spool's file is not to be read */
		zs_live_rest_drop();
	}
	if (batch.baseline_changed)
		zs_backfill_requests_changed();
	reset_batch();
	/* everything before EndRecPtr is now stored, or was never ours */
	if (pending_confirm == InvalidXLogRecPtr)
		pending_since = GetCurrentTimestamp();
	pending_confirm = ctx->reader->EndRecPtr;
	settle_confirmation(false);
	return true;
}

/*
 * Confirm the slot up to the pending position once our last store is
 * flushed; with force (the decoder is idle), flush it now if it has waited
 * CONFIRM_FLUSH_MS. Returns how long the caller may sleep before calling
 * again (-1: nothing pending).
 */
static long
settle_confirmation(bool force)
{
	long		waited;

	if (pending_confirm == InvalidXLogRecPtr)
		return -1;
	if (unflushed_store != InvalidXLogRecPtr && GetFlushRecPtr(NULL) < unflushed_store)
	{
		waited = TimestampDifferenceMilliseconds(pending_since, GetCurrentTimestamp());
		if (!force)
			return Max(1, CONFIRM_FLUSH_MS - waited);
		if (waited < CONFIRM_FLUSH_MS)
			return CONFIRM_FLUSH_MS - waited;
		XLogFlush(unflushed_store);
	}
	confirm_position(pending_confirm);
	pending_confirm = InvalidXLogRecPtr;
	unflushed_store = InvalidXLogRecPtr;
	return -1;
}

/*
 * Log a running-transactions record, from which decoding can later restart.
 *
 * The slot's restart_lsn only moves when decoding passes such records (and
 * the position after them is confirmed). The background writer logs one
 * every 15 s of activity, counted from its own start, and online
 * checkpoints do; a server that crash-restarts more often than that would
 * log none, and every restart would re-read all WAL since the first crash.
 * So the decoder logs one when it starts and at each slot save, as the
 * walsender does when it creates a slot: a crash loop then still leaves
 * restart points behind, and each restart re-reads less.
 */
static void
mark_restart_point(void)
{
	static XLogRecPtr last_insert = InvalidXLogRecPtr;
	XLogRecPtr	insert = GetXLogInsertRecPtr();

	if (insert == last_insert)
		return;					/* nothing written since: no need */
	(void) LogStandbySnapshot();
	last_insert = GetXLogInsertRecPtr();
}

static void
check_server_settings(void)
{
	if (wal_level < WAL_LEVEL_LOGICAL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream requires wal_level = logical (it is \"%s\")",
						GetConfigOption("wal_level", false, false)),
				 errhint("Set wal_level = logical in postgresql.conf and restart the server.")));
	if (max_replication_slots < 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream requires max_replication_slots > 0"),
				 errhint("Set max_replication_slots in postgresql.conf and restart the server.")));
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream cannot decode on a standby")));
}

/* Session settings that make the text of every value canonical. */
static void
set_session_settings(void)
{
	zs_set_canonical_session("zero_stream decoder");
	zs_allow_output_plugin();
}

static bool
extension_exists(void)
{
	bool		exists;

	StartTransactionCommand();
	exists = OidIsValid(get_extension_oid("zero_stream", true));
	CommitTransactionCommand();
	return exists;
}

/* Wait, without spinning, until CREATE EXTENSION zero_stream has run. */
static void
wait_for_extension(void)
{
	bool		logged = false;

	for (;;)
	{
		if (extension_exists())
			return;
		if (!logged)
		{
			char	   *message = psprintf("extension \"zero_stream\" is not installed in database \"%s\"; run CREATE EXTENSION zero_stream there",
										   zs_database);

			ereport(LOG,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("%s", message)));
			zs_set_last_error(message);
			zs_set_decoder_state(ZS_DECODER_WAITING_FOR_EXTENSION);
			logged = true;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
set_up_origin(void)
{
	char	   *name = zs_origin_name();
	RepOriginId origin;

	StartTransactionCommand();
	origin = replorigin_by_name(name, true);
	if (origin == InvalidRepOriginId)
		origin = replorigin_create(name);
	CommitTransactionCommand();
	zs_replorigin_session_setup(origin);
	replorigin_session_origin = origin;
	zs_own_origin = origin;
}

/*
 * The DDL capture announces every change of the published schema from the
 * event trigger, and remembers the last one it announced. A change made
 * without it (the trigger disabled, objects of a publication this version
 * streams for the first time, e.g. Zero's metadata on an existing change
 * log) is announced here, at start, as if an ALTER PUBLICATION had made it:
 * the stream gets its schema changes and backfills at this point.
 */
static void
announce_schema_drift(void)
{
	bool		isnull;

	zs_spi_xact_begin(NULL);
	if (SPI_execute("SELECT zero_stream.announce_published_schema('ALTER PUBLICATION')", false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not compare the published schema with the DDL capture's")));
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		ereport(LOG,
				(errmsg("zero_stream: the published schema changed without the DDL capture (or its publications changed); announcing it in the stream")));
	zs_spi_xact_commit();
}

/* The configured publications must exist; the default one is created. */
static void
ensure_publications(List *publications, bool is_default)
{
	ListCell   *lc;

	zs_spi_xact_begin(NULL);
	foreach(lc, publications)
	{
		char	   *name = (char *) lfirst(lc);

		if (OidIsValid(get_publication_oid(name, true)))
			continue;
		if (!is_default)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("publication \"%s\" named in zero_stream.publications does not exist in database \"%s\"",
							name, zs_database),
					 errhint("Create it (CREATE PUBLICATION %s FOR TABLES IN SCHEMA public), or change zero_stream.publications and restart.",
							 quote_identifier(name))));
		if (SPI_execute(psprintf("CREATE PUBLICATION %s FOR TABLES IN SCHEMA public WITH (publish_via_partition_root = true)",
								 quote_identifier(name)), false, 0) != SPI_OK_UTILITY)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg_internal("could not create publication \"%s\"", name)));
		ereport(LOG,
				(errmsg("zero_stream created publication \"%s\" FOR TABLES IN SCHEMA public WITH (publish_via_partition_root = true), as zero-cache does", name)));
	}
	zs_spi_xact_commit();
}

static void
prepare_change_log(void)
{
	zs_spi_xact_begin(NULL);
	zs_changelog_ensure_schema();
	zs_spi_xact_commit();
}

/*
 * The published schema at the log's head. A log written before schema
 * changes were captured has none: the current one is taken (DDL that ran
 * while the decoder was behind is then not carried, as before).
 */
static void
load_schema_baseline(void)
{
	char	   *snapshot = zs_changelog_read_published_schema();

	if (snapshot == NULL)
	{
		snapshot = zs_snapshot_published_schema(stream_publications);
		zs_changelog_write_published_schema(snapshot);
		ereport(LOG,
				(errmsg("change log %s had no published schema; starting from the current one",
						zs_cdc_schema_name())));
	}
	set_schema_baseline(snapshot, strlen(snapshot));
}

/* the ownerAddress we last wrote (TopMemoryContext), NULL without a server */
static char *owner_address = NULL;

/* After a reload: keep replicationState.ownerAddress current. */
static void
advertise_owner_address(void)
{
	char	   *address = zs_owner_address();

	if ((address == NULL) == (owner_address == NULL) &&
		(address == NULL || strcmp(address, owner_address) == 0))
		return;
	zs_spi_xact_begin(NULL);
	zs_changelog_claim_ownership(address);
	zs_spi_xact_commit();
	owner_address = address ? MemoryContextStrdup(TopMemoryContext, address) : NULL;
}

/* Take the change log (an ERROR if it has been taken over) and read where it stands. */
static void
claim_change_log(void)
{
	zs_spi_xact_begin(NULL);
	owner_address = zs_owner_address();
	if (owner_address)
		owner_address = MemoryContextStrdup(TopMemoryContext, owner_address);
	zs_changelog_claim_ownership(owner_address);
	zs_changelog_read_head(stored_head);
	/* where a round published to live subscribers starts */
	zs_changelog_read_last_row();
	load_schema_baseline();
	zs_spi_xact_commit();
}

static List *
plugin_options(List *publications)
{
	StringInfoData names;
	ListCell   *lc;

	initStringInfo(&names);
	foreach(lc, publications)
	{
		if (names.len > 0)
			appendStringInfoChar(&names, ',');
		appendStringInfoString(&names, quote_identifier((char *) lfirst(lc)));
	}
	/* messages: the DDL capture's, in the transactions that made the DDL */
	return list_make3(makeDefElem("proto_version", (Node *) makeString("1"), -1),
					  makeDefElem("publication_names", (Node *) makeString(names.data), -1),
					  makeDefElem("messages", (Node *) makeString("true"), -1));
}

static LogicalDecodingContext *
start_decoding(List *publications)
{
	LogicalDecodingContext *ctx;
	XLogRecPtr	start = replorigin_session_get_progress(false);
	MemoryContext old;

	/* inside a transaction, so this backend's xmin keeps counting (fact 3) */
	StartTransactionCommand();
	old = MemoryContextSwitchTo(TopMemoryContext);
	ctx = CreateDecodingContext(start, plugin_options(publications), false,
								&streaming_wal_reader,
								decoder_prepare_write, decoder_write, NULL);
	MemoryContextSwitchTo(old);
	CommitTransactionCommand();

	XLogBeginRead(ctx->reader, MyReplicationSlot->data.restart_lsn);
	cut_need = InvalidXLogRecPtr;
	ereport(LOG,
			(errmsg("zero_stream decoding slot \"%s\" from %X/%X (progress %X/%X), change log head %s",
					NameStr(MyReplicationSlot->data.name),
					LSN_FORMAT_ARGS(MyReplicationSlot->data.restart_lsn),
					LSN_FORMAT_ARGS(start), stored_head)));
	return ctx;
}

static void
publish_start(const char *slot_name, const char *replica_version)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->slot_name, slot_name, sizeof(zs_shared->slot_name));
	strlcpy(zs_shared->replica_version, replica_version, sizeof(zs_shared->replica_version));
	strlcpy(zs_shared->last_watermark, stored_head, sizeof(zs_shared->last_watermark));
	strlcpy(lineage, replica_version, sizeof(lineage));
	zs_shared->confirmed_lsn = MyReplicationSlot->data.confirmed_flush;
	zs_shared->decoder_state = ZS_DECODER_STREAMING;
	LWLockRelease(zs_shared->lock);
}

/* A pending resync: zero_stream.resync()'s, or a failure's (with its reason). */
static bool
take_resync_request(char *reason)
{
	bool		requested;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	requested = zs_shared->resync_requested;
	strlcpy(reason, zs_shared->reset_reason, ZS_ERROR_LEN);
	zs_shared->resync_requested = false;
	zs_shared->reset_reason[0] = '\0';
	LWLockRelease(zs_shared->lock);
	return requested;
}

/*
 * A resync a failure asked for is said loudly, as an invalidated slot is
 * (lineage.c): in the log, with what subscribers will see, and in status().
 */
static void
report_forced_reset(const char *reason, const char *replica_version)
{
	if (reason[0] == '\0')
		return;
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s; change log %s of replicaVersion %s cannot continue and a new lineage is started",
					reason, zs_cdc_schema_name(), replica_version),
			 errdetail("Changes of the published tables made while the publication did not exist were never published."),
			 errhint("Subscribers of replicaVersion %s are told WrongReplicaVersion and restore from the new backup replica. "
					 "Do not drop a publication zero_stream streams; change zero_stream.publications instead.",
					 replica_version)));
	zs_set_last_reset(psprintf("%s: change log of replicaVersion %s could not continue; a new lineage was started",
							   reason, replica_version));
}

/*
 * Decoding stops for good at a change after a streamed publication was
 * dropped: pgoutput looks the publication up at each change's historic
 * snapshot, and a publication created again later is another one. Only a
 * new lineage gets past it; ask for one at the next start.
 */
static void
check_dropped_publication(MemoryContext context)
{
	ErrorData  *edata;
	MemoryContext old = MemoryContextSwitchTo(context);

	edata = CopyErrorData();
	MemoryContextSwitchTo(old);
	if (edata->sqlerrcode == ERRCODE_UNDEFINED_OBJECT && edata->message != NULL &&
		strncmp(edata->message, "publication \"", 13) == 0 &&
		strstr(edata->message, "\" does not exist") != NULL)
		zs_request_reset(psprintf("%s at %X/%X, where decoding stopped", edata->message,
								  LSN_FORMAT_ARGS(position.lsn)));
	FreeErrorData(edata);
}

/*
 * PostgreSQL 18's pgoutput skips a publication that no longer exists, with
 * a WARNING, where 15 to 17 stop decoding with the error that
 * check_dropped_publication() turns into a new lineage: the tables of a
 * skipped publication would silently stop reaching the change log. So the
 * decoder looks for its publications itself, at each slot save, on every
 * version, and stops the same way.
 */
static void
check_publications_exist(void)
{
	char	   *missing = NULL;
	ListCell   *lc;

	StartTransactionCommand();
	foreach(lc, stream_publications)
	{
		const char *name = (const char *) lfirst(lc);

		if (!OidIsValid(get_publication_oid(name, true)))
		{
			missing = MemoryContextStrdup(TopMemoryContext, name);
			break;
		}
	}
	CommitTransactionCommand();
	if (missing == NULL)
		return;
	zs_request_reset(psprintf("publication \"%s\" does not exist at %X/%X, where decoding stopped",
							  missing, LSN_FORMAT_ARGS(position.lsn)));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("publication \"%s\" does not exist", missing),
			 errdetail("The decoder streams it (zero_stream.stream_publications()); its tables no longer reach the change log."),
			 errhint("The decoder starts a new lineage; create the publication again if it is not zero_stream's default.")));
}

/* Has another change streamer taken the change log over? (*owner: its owner) */
static bool
change_log_taken_over(char **owner)
{
	bool		taken;

	zs_spi_xact_begin(NULL);
	taken = zs_changelog_taken_over(owner);
	if (taken)
		*owner = MemoryContextStrdup(TopMemoryContext, *owner);
	zs_spi_xact_commit();
	return taken;
}

/*
 * Another change streamer took the change log over (seed 000: the new owner
 * writes replicationState.owner in the transaction that stores its first
 * transaction past the head; this decoder's next store failed its ownership
 * check, and the worker started again). Writing on would interleave two
 * writers in one log; taking it back, or starting a new lineage in it (as a
 * missing or invalidated slot would), would stop the other one. So wait,
 * saying why, without holding the slot (it can be dropped meanwhile), until
 * zero_stream.resync() asks for a new lineage here (the operator has
 * stopped the other writer). The state row's owner keeps the decision
 * across restarts. A dropped extension ends the wait: the next worker waits
 * for CREATE EXTENSION.
 */
static void
wait_while_taken_over(const char *slot_name, const char *taken_by, char *reset_reason)
{
	char	   *message = psprintf("change log %s has been taken over by %s; this decoder (%s) does not write it",
								   zs_cdc_schema_name(), taken_by, zs_owner_identity());
	char		replica_version[ZS_WATERMARK_MAXLEN];

	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s", message),
			 errdetail("Two writers would interleave in one log, and taking it back would stop the other one. "
					   "Replication slot \"%s\", if it exists, holds back WAL while zero_stream waits.",
					   slot_name),
			 errhint("Stop the other change streamer, then SELECT zero_stream.resync() to start a new change log here; "
					 "or drop the slot and DROP EXTENSION zero_stream.")));
	zs_spi_xact_begin(NULL);
	if (!zs_changelog_read_replica_version(replica_version))
		replica_version[0] = '\0';
	zs_spi_xact_commit();
	/* status() shows the slot (and the WAL it holds back) meanwhile */
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->slot_name, slot_name, sizeof(zs_shared->slot_name));
	strlcpy(zs_shared->replica_version, replica_version, sizeof(zs_shared->replica_version));
	LWLockRelease(zs_shared->lock);
	zs_set_last_error(message);
	zs_set_decoder_state(ZS_DECODER_TAKEN_OVER);
	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		/* resync() only: an automatic reset does not override the other writer */
		if (take_resync_request(reset_reason) && reset_reason[0] == '\0')
			return;
		if (!extension_exists())
		{
			ereport(LOG,
					(errmsg("extension \"zero_stream\" was dropped in database \"%s\"; the decoder stops waiting for the change log",
							zs_database)));
			zs_set_decoder_state(ZS_DECODER_WAITING_FOR_EXTENSION);
			proc_exit(1);
		}
	}
}

static void
run_decoder(MemoryContext worker_context)
{
	char	   *slot_name;
	List	   *publications;
	List	   *app_publications;
	bool		default_publication;
	char		replica_version[ZS_WATERMARK_MAXLEN];
	LogicalDecodingContext *ctx;
	TimestampTz last_slot_save = GetCurrentTimestamp();
	char		reset_reason[ZS_ERROR_LEN];
	bool		resync;
	char	   *taken_by;

	check_server_settings();
	zs_live_clear();			/* a round of a decoder before us is not ours to store */
	set_session_settings();
	wait_for_extension();
	zs_set_decoder_state(ZS_DECODER_STARTING);

	slot_name = zs_effective_slot_name();
	app_publications = zs_app_publication_list(&default_publication);
	prepare_change_log();
	/*
	 * DDL of our own (the default publication, Zero's metadata) before our
	 * replication origin is set up: a transaction stamped with our origin
	 * is filtered out of the stream, and with it the DDL capture's message.
	 */
	ensure_publications(app_publications, default_publication);
	zs_shard_setup(app_publications);
	publications = zs_publication_list();
	announce_schema_drift();
	set_up_origin();
	stream_publications = publications;
	/* the initial copy encodes rows through the relation cache */
	zs_relcache_init(worker_context, zs_cdc_schema_name());

	/*
	 * A new lineage when one was asked for while we were not running: by
	 * resync() (no reason), or after a failure (its reason). A log another
	 * change streamer has taken over is neither written nor given a new
	 * lineage (zs_acquire_slot would for a missing slot) until resync().
	 */
	resync = take_resync_request(reset_reason);
	if (!(resync && reset_reason[0] == '\0') && change_log_taken_over(&taken_by))
	{
		wait_while_taken_over(slot_name, taken_by, reset_reason);
		resync = true;
	}
	if (resync)
	{
		zs_spi_xact_begin(NULL);
		if (!zs_changelog_read_replica_version(replica_version))
			strlcpy(replica_version, "(none)", sizeof(replica_version));
		zs_spi_xact_commit();
		report_forced_reset(reset_reason, replica_version);
		zs_replace_lineage(slot_name, publications, replica_version, reset_reason[0] == '\0');
	}
	else
		zs_acquire_slot(slot_name, publications, replica_version);
	claim_change_log();
	zs_backfill_reset();
	strlcpy(purge_gate, stored_head, sizeof(purge_gate));
	/* where subscribers were before a restart, for the first purge */
	zs_positions_restore(replica_version);

	message_context = AllocSetContextCreate(worker_context, "zero_stream message",
											ALLOCSET_DEFAULT_SIZES);
	batch.spool = zs_spool_create(worker_context, SPOOL_MEMORY_LIMIT);
	initStringInfo(&change_text);
	decoding_owner = ResourceOwnerCreate(NULL, "zero_stream decoding");

	ctx = start_decoding(publications);
	publish_start(slot_name, replica_version);
	mark_restart_point();

	/*
	 * pg_cron's shape: each iteration does one bounded unit of work (at most
	 * commit_batch_size of decoded changes), then everything that must not
	 * wait for an idle moment: configuration reload, resync request, slot
	 * save; it sleeps only when there was nothing to decode.
	 */
	for (;;)
	{
		bool		busy;
		bool		round_stored;
		long		sleep_ms;

		CHECK_FOR_INTERRUPTS();
		busy = decode_and_store(ctx, &round_stored);
		/* a backfill's messages, between rounds (backfill/backfill.c) */
		if (zs_backfill_step(stored_head, ctx->reader->EndRecPtr))
			busy = true;
		/*
		 * The purge yields to rounds that stored something, not to WAL
		 * read: its own deletes are WAL the decoder reads (and skips).
		 */
		if (zs_purge_step(purge_gate, busy && round_stored))
			busy = true;
		zs_positions_save_step();
		zs_lag_report_step();

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			advertise_owner_address();
		}
		if (take_resync_request(reset_reason))
		{
			zs_live_clear();
			/* the old slot's position is nothing to confirm on the new one */
			pending_confirm = unflushed_store = InvalidXLogRecPtr;
			FreeDecodingContext(ctx);
			report_forced_reset(reset_reason, replica_version);
			zs_restart_lineage(slot_name, publications, replica_version, reset_reason[0] == '\0');
			claim_change_log();
			zs_backfill_reset();
			strlcpy(purge_gate, stored_head, sizeof(purge_gate));
			ctx = start_decoding(publications);
			publish_start(slot_name, replica_version);
			continue;
		}
		if (TimestampDifferenceExceeds(last_slot_save, GetCurrentTimestamp(),
									   zs_slot_save_interval_ms))
		{
			mark_restart_point();
			ReplicationSlotSave();
			last_slot_save = GetCurrentTimestamp();
			check_publications_exist();
			/* the server checks its health, if there is one: it never waits for us */
			if (zs_port == 0)
				zs_warn_if_slot_at_risk();
		}
		if (busy)
			continue;
		sleep_ms = settle_confirmation(true);
		sleep_ms = sleep_ms < 0 ? zs_poll_interval_ms : Min(sleep_ms, zs_poll_interval_ms);
		/* the next record was only partly flushed (or more WAL is, since) */
		if (ctx->reader->EndRecPtr < GetFlushRecPtr(NULL))
			sleep_ms = Min(sleep_ms, PARTIAL_RECORD_POLL_MS);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

void
zs_decoder_main(Datum main_arg)
{
	MemoryContext worker_context;

	zs_worker_attach(ZS_WORKER_DECODER, "zero_stream decoder");
	worker_context = AllocSetContextCreate(TopMemoryContext, "zero_stream decoder",
										   ALLOCSET_DEFAULT_SIZES);

	PG_TRY();
	{
		run_decoder(worker_context);
	}
	PG_CATCH();
	{
		if (decoding)
			check_dropped_publication(worker_context);
		/* a round published but not stored is stored by the next decoder */
		zs_live_clear();
		zs_worker_fail(ZS_WORKER_DECODER, worker_context);
	}
	PG_END_TRY();
}
