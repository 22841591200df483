/*-------------------------------------------------------------------------
 * stage.c
 *	  The decoder's first phase: each pgoutput message the output plugin
 *	  writes is parsed, encoded once as Zero change JSON and staged in the
 *	  spool, a whole upstream transaction at a time.
 *
 * The write callback runs inside the reorder buffer's replay transaction,
 * on historic catalog snapshots: it must not write to tables. It finds its
 * state (ZsStage) through the decoding context and passes the message, the
 * transaction and the batch to one handler per message type:
 *   BEGIN     the transaction's watermark; skipped if not above the log's
 *             head (stored before a crash: exactly once, second line);
 *   row       INSERT/UPDATE/DELETE encoded through the relation cache
 *             (our own tables are never streamed);
 *   TRUNCATE  one message for the relations that are published;
 *   MESSAGE   the DDL capture's (signed: decoding/capture_message.c):
 *             its schema, diffed against the baseline into zero's
 *             schema-change messages, or a partition's rows, at the
 *             message's place;
 *             a lag report handed to lag_report.c;
 *   COMMIT    closes the transaction: the batch counts it.
 * A backfill running meanwhile is told when a change may move the keys it
 * reads (backfill/backfill.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "replication/logicalproto.h"
#include "utils/memutils.h"

#include "backfill/backfill.h"
#include "codec/json_read.h"
#include "decoder/capture_key.h"
#include "decoder/lag_report.h"
#include "decoder/stage.h"
#include "decoding/partition_diff.h"
#include "decoding/partition_rows.h"
#include "decoding/relcache.h"
#include "decoding/change_encode.h"
#include "decoding/schema_diff.h"
#include "guc.h"
#include "shmem.h"

/* the rows of a stored transaction that are not changes: begin and commit */
#define ZS_TXN_ENVELOPE_ROWS 2

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

void
zs_stage_init(ZsStage *stage, MemoryContext context, Size memory_limit,
			  const char *stored_head, ZsBackfill *backfill)
{
	memset(stage, 0, sizeof(*stage));
	stage->stored_head = stored_head;
	stage->backfill = backfill;
	stage->batch.spool = zs_spool_create(context, memory_limit);
	stage->message_context = AllocSetContextCreate(context, "zero_stream message",
												   ALLOCSET_DEFAULT_SIZES);
	stage->msg.old_tuple = &stage->old_tuple;
	stage->msg.new_tuple = &stage->new_tuple;
	initStringInfo(&stage->change_text);
}

void
zs_stage_set_baseline(ZsStage *stage, const char *schema, int len)
{
	ZsJsonDoc	doc;
	MemoryContext old;

	if (stage->schema_baseline != NULL)
		pfree(stage->schema_baseline);
	stage->schema_baseline = MemoryContextAlloc(TopMemoryContext, len + 1);
	memcpy(stage->schema_baseline, schema, len);
	stage->schema_baseline[len] = '\0';

	if (stage->leaves != NULL)
		pfree(stage->leaves);
	stage->leaves = NULL;
	stage->nleaves = 0;
	old = MemoryContextSwitchTo(TopMemoryContext);
	zs_json_doc_init(&doc);
	if (zs_json_parse(&doc, stage->schema_baseline, len))
		stage->nleaves = zs_partition_all_leaves(&doc, &stage->leaves);
	zs_json_doc_free(&doc);
	MemoryContextSwitchTo(old);
}

void
zs_stage_clear_batch(ZsStageBatch *batch)
{
	zs_spool_clear(batch->spool);
	batch->ntxns = 0;
	batch->nchanges = 0;
	batch->baseline_changed = false;
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

void
zs_stage_error_context(void *arg)
{
	const ZsDecodePosition *position = &((const ZsStage *) arg)->position;
	const char *relation = NULL;

	if (position->message != 0 && OidIsValid(position->relid))
		relation = zs_relcache_name(position->relid);
	if (position->message == 0)
		errcontext("decoding WAL at %X/%X", LSN_FORMAT_ARGS(position->lsn));
	else if (relation != NULL)
		errcontext("decoding pgoutput message \"%s\" for relation %s in transaction %u at %X/%X",
				   message_name(position->message), relation, position->xid,
				   LSN_FORMAT_ARGS(position->lsn));
	else
		errcontext("decoding pgoutput message \"%s\" in transaction %u at %X/%X",
				   message_name(position->message), position->xid, LSN_FORMAT_ARGS(position->lsn));
}

/* The encoded row in out, as the transaction's next row. */
static void
stage_row(ZsStageTxn *txn, ZsStageBatch *batch, const StringInfo out,
		  bool is_commit, bool is_schema)
{
	ZsSpoolRecord header;

	/* a commit record replays its whole transaction: a row at a time */
	zs_worker_check_interrupts();
	memset(&header, 0, sizeof(header));
	memcpy(header.watermark, txn->watermark, sizeof(header.watermark));
	header.pos = txn->pos++;
	header.len = out->len;
	header.is_commit = is_commit;
	header.is_schema = is_schema;
	zs_spool_append(batch->spool, &header, out->data);
}

static void
stage_begin(const ZsPgoutputMsg *msg, ZsStageTxn *txn, ZsStageBatch *batch,
			const char *stored_head, StringInfo out)
{
	zs_watermark_encode(msg->final_lsn, txn->watermark);
	txn->xid = msg->xid;
	txn->pos = 0;
	txn->skip = strcmp(txn->watermark, stored_head) <= 0;
	if (txn->skip)
		return;
	zs_encode_begin(out, msg);
	stage_row(txn, batch, out, false, false);
}

static void
stage_commit(const ZsPgoutputMsg *msg, ZsStageTxn *txn, ZsStageBatch *batch, StringInfo out)
{
	if (txn->skip)
		return;
	zs_encode_commit(out, msg);
	stage_row(txn, batch, out, true, false);
	batch->ntxns++;
	batch->nchanges += txn->pos - ZS_TXN_ENVELOPE_ROWS;
	memcpy(batch->last_watermark, txn->watermark, sizeof(batch->last_watermark));
	batch->last_end_lsn = msg->end_lsn;
	batch->last_commit_time = (TimestampTz) msg->commit_time;
}

static void
stage_row_change(const ZsPgoutputMsg *msg, ZsStage *stage, StringInfo out)
{
	ZsStageTxn *txn = &stage->txn;
	ZsStageBatch *batch = &stage->batch;
	ZsRelation *rel;

	if (txn->skip || zs_partition_root_listed(stage->leaves, stage->nleaves, msg->relid))
		return;
	rel = zs_relcache_lookup(msg->relid);
	if (zs_relcache_is_own(rel))
		return;
	switch (msg->type)
	{
		case ZS_PGO_INSERT:
			zs_encode_insert(out, rel, msg);
			break;
		case ZS_PGO_UPDATE:
			if (msg->relid == zs_backfill_relid(stage->backfill))
			{
				int			nkeys;
				const char *const *keys = zs_backfill_key_columns(stage->backfill, &nkeys);

				if (zs_encode_update_changes_columns(rel, msg, keys, nkeys))
					zs_backfill_key_changed(stage->backfill, txn->watermark);
			}
			zs_encode_update(out, rel, msg);
			break;
		default:
			zs_encode_delete(out, rel, msg);
			break;
	}
	stage_row(txn, batch, out, false, false);
}

static void
stage_truncate(const ZsPgoutputMsg *msg, ZsStageTxn *txn, ZsStageBatch *batch,
			   ZsBackfill *backfill, StringInfo out)
{
	if (txn->skip)
		return;
	/* backfill rows read before it must not bring truncated rows back */
	for (int i = 0; i < msg->nrelids; i++)
		if (zs_pgoutput_relid_at(msg, i) == zs_backfill_relid(backfill))
			zs_backfill_key_changed(backfill, txn->watermark);
	if (zs_encode_truncate(out, msg))
		stage_row(txn, batch, out, false, false);
}

/*
 * The rows of a leaf partition that joined or left a root, carried by the
 * DDL capture (decoding/partition_rows.c): the root's relation as it is
 * here, then each row as the root's insert or delete, at the message's
 * place in the transaction.
 */
static void
stage_partition_rows(const char *content, int len, bool signed_content, ZsStageTxn *txn,
					 ZsStageBatch *batch, ZsStage *stage, StringInfo out)
{
	ZsPartitionRows rows;
	ZsPgoutputMsg row;
	const char *error;
	/* the capture's own is exact or a bug; an unsigned one may be anyone's */
	int			elevel = signed_content ? ERROR : WARNING;

	error = zs_partition_rows_open(&rows, content, len);
	if (error != NULL)
	{
		ereport(elevel,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("malformed partition rows message in the transaction of watermark %s: %s",
						txn->watermark, error)));
		zs_partition_rows_close(&rows);
		return;
	}
	zs_encode_prepare(zs_relcache_update(&rows.relation));
	memset(&row, 0, sizeof(row));
	row.old_tuple = &stage->old_tuple;
	row.new_tuple = &stage->new_tuple;
	while (zs_partition_rows_next(&rows, &row, &error))
	{
		resetStringInfo(out);
		stage_row_change(&row, stage, out);
	}
	if (error != NULL)
		ereport(elevel,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("malformed partition rows message in the transaction of watermark %s: %s",
						txn->watermark, error)));
	zs_partition_rows_close(&rows);
}

/*
 * The content of one of the DDL capture's messages: signed with the
 * stream's capture key in this transaction (decoding/capture_message.c),
 * or as it is where the stream has no key yet (*signed_content false: SQL
 * before 0.5.1, whose capture did not sign). False for anything else, which
 * is ignored: any role that can call pg_logical_emit_message can write a
 * message with our prefix.
 */
static bool
capture_content(const ZsPgoutputMsg *msg, const ZsStageTxn *txn, ZsStage *stage,
				const char **content, int *len, bool *signed_content)
{
	uint8		key[ZS_CAPTURE_KEY_LEN];
	const char *error = "Table zero_stream.capture_key holds no key";

	*signed_content = false;
	switch (zs_capture_key_read(key))
	{
		case ZS_CAPTURE_KEY_NO_TABLE:
			if (!stage->unsigned_said)
				ereport(WARNING,
						(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
						 errmsg("taking the DDL capture's messages unsigned: the extension's SQL objects predate version 0.5.1"),
						 errdetail("Until they are updated, a role that can execute pg_logical_emit_message() can write rows or schema changes into every replica."),
						 errhint("Run ALTER EXTENSION zero_stream UPDATE, with no DDL running meanwhile.")));
			stage->unsigned_said = true;
			*content = msg->content;
			*len = msg->content_len;
			return true;
		case ZS_CAPTURE_KEY_FOUND:
			error = zs_capture_message_open(msg->prefix, txn->xid, msg->content,
											msg->content_len, key, content, len);
			break;
		case ZS_CAPTURE_KEY_MISSING:
			break;
	}
	if (error == NULL)
	{
		*signed_content = true;
		return true;
	}
	ereport(WARNING,
			(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
			 errmsg("ignoring a \"%s\" message that the DDL capture did not write, in the transaction of watermark %s",
					msg->prefix, txn->watermark),
			 errdetail("%s.", error),
			 errhint("Any role that can execute pg_logical_emit_message() can write a message with this prefix; only the capture's signed messages change the replicas.")));
	return false;
}

/*
 * A logical message. The DDL capture's, written in the DDL's transaction
 * and signed (capture_content): "zero_stream/rows" carries a partition's
 * rows (stage_partition_rows); "zero_stream/ddl" the new published schema,
 * and the leaf partitions whose joining or leaving the stream accounts for
 * (joined empty, or carried before it), or, for a TRUNCATE of partitions
 * whose rows it did not carry, no schema and the leaves emptied: the
 * difference from the schema at this point of the stream (root tables
 * reset for leaves not accounted for, or emptied) becomes zero's
 * schema-change messages, in the transaction, at the message's place. A lag report's
 * (non-transactional) is handed to lag_report.c. Anything else (an
 * application's messages, transactional or not, or one with our prefix
 * that does not verify) is not data; a transaction that holds only such a
 * message is stored as an empty begin/commit, as zero-cache stores it.
 */
static void
stage_message(const ZsPgoutputMsg *msg, ZsStageTxn *txn, ZsStageBatch *batch,
			  ZsStage *stage, StringInfo out)
{
	ZsJsonDoc	doc;
	const char *tag;
	int			schema;
	int			empty;
	char	  **changes;
	const char *error;
	const char *own[2];
	int			n;
	const char *content;
	int			len;
	bool		signed_content;
	int			emptied = -1;
	const char *next = NULL;
	int			next_len = 0;

	if (!(msg->flags & ZS_PGO_MESSAGE_TRANSACTIONAL) &&
		strcmp(msg->prefix, zs_lag_report_prefix()) == 0)
	{
		zs_lag_report_received(msg->content, msg->content_len);
		return;
	}
	if (!(msg->flags & ZS_PGO_MESSAGE_TRANSACTIONAL) || txn->skip)
		return;
	if (strcmp(msg->prefix, ZS_ROWS_MESSAGE_PREFIX) != 0 &&
		strcmp(msg->prefix, ZS_DDL_MESSAGE_PREFIX) != 0)
		return;
	if (!capture_content(msg, txn, stage, &content, &len, &signed_content))
		return;
	if (strcmp(msg->prefix, ZS_ROWS_MESSAGE_PREFIX) == 0)
	{
		stage_partition_rows(content, len, signed_content, txn, batch, stage, out);
		return;
	}
	zs_json_doc_init(&doc);
	if (!zs_json_parse(&doc, content, len) || doc.nodes[0].type != ZS_JSON_OBJECT ||
		(tag = zs_json_get_string(&doc, 0, "tag")) == NULL ||
		((schema = zs_json_get(&doc, 0, "schema")) < 0 &&
		 (emptied = zs_json_get(&doc, 0, "emptiedLeaves")) < 0))
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("ignoring a malformed schema-change message in the transaction of watermark %s",
						txn->watermark)));
		zs_json_doc_free(&doc);
		return;
	}
	emptied = zs_json_get(&doc, 0, "emptiedLeaves");
	/* without a schema (a TRUNCATE's emptied leaves) the schema is unchanged */
	if (schema >= 0)
	{
		next = zs_json_raw(&doc, schema);
		next_len = doc.nodes[schema].raw_len;
	}
	else if (stage->schema_baseline != NULL)
	{
		next = stage->schema_baseline;
		next_len = strlen(stage->schema_baseline);
	}
	own[0] = zs_cdc_schema_name();
	own[1] = ZS_EXTENSION_SCHEMA;
	/* before 0.5.0 the capture listed only the leaves that joined empty */
	empty = zs_json_get(&doc, 0, "accountedLeaves");
	if (empty < 0)
		empty = zs_json_get(&doc, 0, "emptyLeaves");
	if (stage->schema_baseline == NULL)
		n = 0;					/* nothing to compare with: take it as the baseline */
	else
		n = zs_schema_diff(stage->schema_baseline, strlen(stage->schema_baseline),
						   next, next_len,
						   empty >= 0 ? zs_json_raw(&doc, empty) : NULL,
						   empty >= 0 ? doc.nodes[empty].raw_len : 0,
						   emptied >= 0 ? zs_json_raw(&doc, emptied) : NULL,
						   emptied >= 0 ? doc.nodes[emptied].raw_len : 0,
						   tag, own, lengthof(own), &changes, &error);
	if (n < 0)
	{
		/* the capture's own is exact or a bug; an unsigned one may be anyone's */
		ereport(signed_content ? ERROR : WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("cannot compare published schemas: %s", error)));
		zs_json_doc_free(&doc);
		return;
	}
	for (int i = 0; i < n; i++)
	{
		resetStringInfo(out);
		appendStringInfoString(out, changes[i]);
		stage_row(txn, batch, out, false, true);
	}
	if (schema >= 0)
		zs_stage_set_baseline(stage, next, next_len);
	/* (stored again even when only roots were reset: it asks for their backfills) */
	if (schema >= 0 || n > 0)
		batch->baseline_changed = true;
	zs_json_doc_free(&doc);
}

/*
 * Writer callback: ctx->out holds exactly one pgoutput message. Runs inside
 * the reorder buffer's replay transaction; it must not write to tables.
 */
void
zs_stage_write(LogicalDecodingContext *ctx, XLogRecPtr lsn, TransactionId xid, bool last_write)
{
	ZsStage    *stage = (ZsStage *) ctx->output_writer_private;
	ZsPgoutputMsg *msg = &stage->msg;
	ZsStageTxn *txn = &stage->txn;
	ZsStageBatch *batch = &stage->batch;
	StringInfo	out = &stage->change_text;
	MemoryContext old = MemoryContextSwitchTo(stage->message_context);
	const char *error;

	stage->position.lsn = lsn;
	stage->position.xid = xid;
	stage->position.message = ctx->out->len > 0 ? ctx->out->data[0] : 0;
	stage->position.relid = InvalidOid;
	error = zs_pgoutput_parse(ctx->out->data, ctx->out->len, msg);
	if (error != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("malformed pgoutput message at %X/%X: %s", LSN_FORMAT_ARGS(lsn), error)));

	if (msg->type == ZS_PGO_INSERT || msg->type == ZS_PGO_UPDATE ||
		msg->type == ZS_PGO_DELETE || msg->type == ZS_PGO_RELATION)
		stage->position.relid = msg->relid;
	resetStringInfo(out);
	switch (msg->type)
	{
		case ZS_PGO_BEGIN:
			stage_begin(msg, txn, batch, stage->stored_head, out);
			break;
		case ZS_PGO_COMMIT:
			stage_commit(msg, txn, batch, out);
			break;
		case ZS_PGO_RELATION:
			zs_encode_prepare(zs_relcache_update(msg));
			break;
		case ZS_PGO_INSERT:
		case ZS_PGO_UPDATE:
		case ZS_PGO_DELETE:
			stage_row_change(msg, stage, out);
			break;
		case ZS_PGO_TRUNCATE:
			stage_truncate(msg, txn, batch, stage->backfill, out);
			break;
		case ZS_PGO_MESSAGE:
			stage_message(msg, txn, batch, stage, out);
			break;
		default:
			/* types and origins carry no change rows */
			break;
	}
	stage->position.message = 0;
	MemoryContextSwitchTo(old);
	MemoryContextReset(stage->message_context);
}

void
zs_stage_prepare_write(LogicalDecodingContext *ctx, XLogRecPtr lsn, TransactionId xid,
					   bool last_write)
{
	resetStringInfo(ctx->out);
}
