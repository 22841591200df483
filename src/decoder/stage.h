/*-------------------------------------------------------------------------
 * stage.h
 *	  The decoder's first phase: pgoutput messages, as the output plugin
 *	  writes them, parsed, encoded as Zero change JSON and staged.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STAGE_H
#define ZS_STAGE_H

#include "lib/stringinfo.h"
#include "replication/logical.h"
#include "utils/timestamp.h"

#include "backfill/backfill.h"
#include "codec/watermark.h"
#include "decoder/spool.h"
#include "decoding/pgoutput_read.h"

/* The upstream transaction whose messages are being staged. */
typedef struct ZsStageTxn
{
	bool		skip;			/* already stored: its messages are dropped */
	uint32		xid;			/* the upstream transaction's (top-level) */
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;			/* the next row's position in it */
} ZsStageTxn;

/* Whole upstream transactions staged for the next local commit. */
typedef struct ZsStageBatch
{
	ZsSpool    *spool;
	int			ntxns;
	uint64		nchanges;
	bool		baseline_changed;	/* schema changes staged: store the baseline, look for backfills */
	char		last_watermark[ZS_WATERMARK_MAXLEN];
	XLogRecPtr	last_end_lsn;
	TimestampTz last_commit_time;
} ZsStageBatch;

/*
 * Where decoding is, for the context line of any error raised meanwhile
 * (as core's apply worker reports the remote transaction it applies).
 */
typedef struct ZsDecodePosition
{
	XLogRecPtr	lsn;			/* of the WAL record being decoded */
	TransactionId xid;			/* of the transaction being replayed */
	char		message;		/* pgoutput message type, 0 outside one */
	Oid			relid;			/* its relation, if any */
} ZsDecodePosition;

/*
 * Everything the write callback works on. The callback finds it through
 * the decoding context's output_writer_private and hands each handler the
 * message, the transaction and the batch it needs.
 */
typedef struct ZsStage
{
	ZsStageTxn	txn;
	ZsStageBatch batch;
	ZsDecodePosition position;
	/* the log's lastWatermark: transactions not above it are skipped */
	const char *stored_head;
	/* the backfill running meanwhile, told of changes that move its keys */
	ZsBackfill *backfill;
	/* an unsigned capture message was taken (SQL before 0.5.1): said once */
	bool		unsigned_said;
	/* the published schema at the current point of the stream (TopMemoryContext) */
	char	   *schema_baseline;
	/*
	 * the baseline's leaf partitions of tables published through their
	 * root (sorted): pgoutput sends such a leaf's changes as its own only
	 * while it is being detached concurrently, before the DDL's end
	 * announces it as a table of its own, with a backfill that copies its
	 * rows then; until then they are no replica's table
	 */
	int64	   *leaves;
	int			nleaves;
	ZsPgoutputMsg msg;
	ZsTuple		old_tuple;
	ZsTuple		new_tuple;
	StringInfoData change_text;
	MemoryContext message_context;	/* reset after each message */
} ZsStage;

/*
 * Set a stage up in context: its spool keeps memory_limit bytes in memory;
 * stored_head is read (never written) at each BEGIN; backfill is the
 * stream's backfills.
 */
extern void zs_stage_init(ZsStage *stage, MemoryContext context, Size memory_limit,
						  const char *stored_head, ZsBackfill *backfill);

/* The output plugin's writer callbacks (ctx->output_writer_private is the ZsStage). */
extern void zs_stage_prepare_write(LogicalDecodingContext *ctx, XLogRecPtr lsn,
								   TransactionId xid, bool last_write);
extern void zs_stage_write(LogicalDecodingContext *ctx, XLogRecPtr lsn,
						   TransactionId xid, bool last_write);

/* errcontext callback while decoding; arg is the ZsStage */
extern void zs_stage_error_context(void *arg);

/* The stored batch is done with: empty it. */
extern void zs_stage_clear_batch(ZsStageBatch *batch);

/* A new schema baseline (len bytes of text), as read from the log or a message. */
extern void zs_stage_set_baseline(ZsStage *stage, const char *schema, int len);

#endif							/* ZS_STAGE_H */
