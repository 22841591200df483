/*-------------------------------------------------------------------------
 * round.c
 *	  The decoder's second phase: one bounded round of decoding, stored in
 *	  one local transaction, then the slot confirmed.
 *
 * A round:
 *   1. decodes the WAL flushed so far (at most commit_batch_size of staged
 *      changes and ZS_ROUND_WAL_BYTES of WAL); the output plugin's writes
 *      are staged by stage.c;
 *   2. publishes the round to live subscribers (live/live_round.c), then
 *      stores every staged transaction in one local transaction through
 *      SPI, stamped with our replication origin's progress (the commit LSN
 *      end of the last stored upstream transaction);
 *   3. confirms the slot only once that commit is flushed.
 * A failover slot with standbys in synchronized_standby_slots also waits
 * for them (standby_slots.c), twice: a round decodes only WAL they have
 * flushed, so no subscriber gets a transaction a promoted standby would
 * not have; and the slot is confirmed past a transaction only once they
 * have flushed the local commit that stored it, so the slot's copy on a
 * standby never passes a transaction its replicated change log lacks
 * (after a promotion the new primary would skip it forever).
 * Between the decoding phase (historic catalog snapshots) and the SPI phase
 * (present-day catalogs) the system caches are invalidated when they can
 * disagree (switch_catalog_view; docs/pg-internals.md fact 2).
 *
 * Exactly-once: our commit carries the origin progress, and decoding
 * restarts from it (commits before it are skipped by the snapshot builder).
 * As a second line, a transaction whose watermark is not above the stored
 * head is dropped at its BEGIN (stage.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogutils.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/decode.h"
#include "replication/logical.h"
#include "replication/slot.h"
#include "storage/sinval.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/timestamp.h"

#include "backfill/backfill.h"
#include "changelog/changelog.h"
#include "changelog/changelog_writer.h"
#include "live/live_round.h"
#include "decoder/round.h"
#include "decoder/store.h"
#include "guc.h"
#include "shmem.h"
#include "spi_xact.h"
#include "standby_slots.h"

/*
 * WAL read per round at most: a round ends with a confirmation, so the
 * slot's position moves on (and is saved) regularly even while nothing is
 * staged, e.g. while re-reading transactions stored before a crash.
 */
#define ZS_ROUND_WAL_BYTES ((XLogRecPtr) 32 * 1024 * 1024)

static void
store_error_context(void *arg)
{
	const ZsStageBatch *batch = (const ZsStageBatch *) arg;

	errcontext("storing %d transactions up to watermark %s in the change log",
			   batch->ntxns, batch->last_watermark);
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
 * (within wal_writer_delay) or by us once it has waited ZS_CONFIRM_FLUSH_MS.
 */
#define ZS_CONFIRM_FLUSH_MS 20

/*
 * Before storing a round, publish it to live subscribers
 * (live/live_round.c), from the last row stored on: as much of it
 * as fits in the live buffer, then, if the round spilled to the spool's
 * file (a transaction larger than the spool's memory), where the rest is
 * in that file. A round in memory that does not fit (live_buffer below the
 * spool's memory, 1.25 x commit_batch_size) is sent in part, the rest once
 * stored. Not before this process knows that row (at start, it reads it
 * from the log).
 */
static void
publish_round(const ZsStream *s, ZsStageBatch *batch)
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
		!zs_live_begin(s->replica_version, after_watermark, after_pos))
		return;
	initStringInfo(&text);
	zs_spool_start_read(batch->spool);
	for (;;)
	{
		rest_offset = zs_spool_read_offset(batch->spool);
		if (!zs_spool_read(batch->spool, &header, &text))
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
	if (cut && (path = zs_spool_file(batch->spool)) != NULL)
	{
		ZsSpoolRecord last;
		int64		records = zs_spool_records(batch->spool, &last);

		zs_live_rest_publish(path, rest_offset, records - published, last.watermark, last.pos);
	}
}

/* Store the staged transactions in one local transaction (store.c). */
static void
store_batch(ZsStream *s, ZsStageBatch *batch)
{
	ZsStore		st;
	ZsSpoolRecord header;
	StringInfoData text;
	ErrorContextCallback callback;
	ZsStoreProgress progress = {batch->last_end_lsn, batch->last_commit_time};

	callback.callback = store_error_context;
	callback.arg = batch;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	zs_store_begin(&st, s, "zero_stream: storing decoded transactions");
	initStringInfo(&text);
	zs_spool_start_read(batch->spool);
	while (zs_spool_read(batch->spool, &header, &text))
	{
		zs_worker_check_interrupts();
		zs_store_row(&st, header.watermark, header.pos, text.data, text.len,
					 header.is_commit, header.is_schema);
	}
	if (batch->baseline_changed)
		zs_changelog_write_published_schema(s->stage.schema_baseline);
	zs_store_commit_decoded(&st, batch->last_watermark, batch->ntxns, batch->nchanges, &progress);
	error_context_stack = callback.previous;
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
 * and cached plan we use, rebuilt at each round, so it is done only when
 * needed. The two sides can
 * only disagree about a catalog change that happened after the WAL being
 * decoded: its invalidation messages reach this process through the
 * shared queue, which bumps SharedInvalidMessageCounter (a queue overflow
 * too). So we remember the WAL insert position when we last saw the
 * counter move: every catalog change we have heard of committed before it.
 * While decoding has not passed that position, each switch invalidates
 * everything; once it has, historic and present catalogs agree
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
 * Where the standbys of a failover slot have flushed, as of the round's
 * start: the reader reads no record that ends past it. Valid only while
 * standby_capped.
 */
static bool standby_capped = false;
static XLogRecPtr standby_cap = InvalidXLogRecPtr;

/* the WAL a round may read: flushed here, and by the standbys it waits for */
static XLogRecPtr
readable_wal_end(void)
{
	XLogRecPtr	flush = GetFlushRecPtr(NULL);

	return standby_capped ? Min(flush, standby_cap) : flush;
}

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
	int			count;

	if (XLogSegmentOffset(targetPagePtr, state->segcxt.ws_segsize) == 0)
		need = targetPagePtr + Min(reqLen + SizeOfXLogLongPHD - SizeOfXLogShortPHD, XLOG_BLCKSZ);
	if (need > readable_wal_end())
	{
		cut_need = need;
		return XLREAD_WOULDBLOCK;
	}
	count = read_local_xlog_page(state, targetPagePtr, reqLen, targetRecPtr, cur_page);

	/*
	 * The reader keeps the page and serves later records from it without
	 * asking again, up to the length returned: a page the standbys have
	 * only flushed in part must not be valid past their position, or a
	 * record ending after it would be decoded from the cached page.
	 */
	if (count > 0 && standby_capped && targetPagePtr + count > standby_cap)
		count = (int) (standby_cap - targetPagePtr);
	return count;
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
bool
zs_round_run(ZsStream *s, bool *stored)
{
	LogicalDecodingContext *ctx = s->ctx;
	ZsStage    *stage = &s->stage;
	ZsStageBatch *batch = &stage->batch;
	XLogRecPtr	end_of_wal;
	Size		limit = (Size) zs_commit_batch_kb * 1024;
	ErrorContextCallback callback;
	XLogRecPtr	round_start;

	*stored = false;
	standby_capped = zs_failover_waits(&standby_cap);
	end_of_wal = readable_wal_end();
	s->round_held = standby_capped && end_of_wal < GetFlushRecPtr(NULL);
	if (ctx->reader->EndRecPtr >= end_of_wal || end_of_wal < cut_need)
		return false;
	end_of_wal = Min(end_of_wal, ctx->reader->EndRecPtr + ZS_ROUND_WAL_BYTES);
	zs_spool_set_memory_limit(batch->spool, Max(ZS_ROUND_SPOOL_MEMORY, limit + limit / 4));

	round_start = ctx->reader->EndRecPtr;
	switch_catalog_view(round_start);
	callback.callback = zs_stage_error_context;
	callback.arg = stage;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	s->decoding = true;
	while (ctx->reader->EndRecPtr < end_of_wal && zs_spool_bytes(batch->spool) < limit)
	{
		XLogRecord *record;
		char	   *errm = NULL;

		stage->position.lsn = ctx->reader->EndRecPtr;
		stage->position.message = 0;
		CurrentResourceOwner = s->decoding_owner;
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
		CurrentResourceOwner = s->decoding_owner;
		zs_worker_check_interrupts();
	}
	s->decoding = false;
	error_context_stack = callback.previous;
	switch_catalog_view(round_start);
	if (ctx->reader->EndRecPtr == round_start)
		return false;			/* its first record was not all flushed */

	*stored = batch->ntxns > 0;
	if (*stored)
	{
		publish_round(s, batch);
		store_batch(s, batch);
		/* the log has the round now: the spool's file is not to be read */
		zs_live_rest_drop();
	}
	if (batch->baseline_changed)
		zs_backfill_requests_changed(&s->backfill);
	zs_stage_clear_batch(batch);
	/* everything before EndRecPtr is now stored, or was never ours */
	if (s->pending_confirm == InvalidXLogRecPtr)
		s->pending_since = GetCurrentTimestamp();
	s->pending_confirm = ctx->reader->EndRecPtr;
	zs_round_settle(s);
	return true;
}

/*
 * Confirm the standbys' stage if they (when the slot waits for them, at
 * standbys) have flushed its store; else say it is held.
 */
static bool
confirm_if_standbys_have(ZsStream *s, bool wait, XLogRecPtr standbys)
{
	if (wait && s->standby_store != InvalidXLogRecPtr &&
		(standbys == InvalidXLogRecPtr || standbys < s->standby_store))
	{
		s->confirm_held = true;
		return false;
	}
	confirm_position(s->standby_confirm);
	s->standby_confirm = s->standby_store = InvalidXLogRecPtr;
	return true;
}

/*
 * Confirm the slot up to the pending position once our last store is
 * flushed, here and, for a slot that waits for standbys, by them: one
 * confirmation at a time waits for them, so that under a steady load the
 * slot still moves with each of their flush reports (never waiting for
 * them to reach a store that is always newer). Returns how long the
 * caller may sleep before calling again (-1: nothing pending).
 */
long
zs_round_settle(ZsStream *s)
{
	long		waited;
	XLogRecPtr	standbys;
	bool		wait = zs_failover_waits(&standbys);

	s->confirm_held = false;
	/* the confirmation the standbys have, or not yet */
	if (s->standby_confirm != InvalidXLogRecPtr && !confirm_if_standbys_have(s, wait, standbys))
		return zs_poll_interval_ms;
	if (s->pending_confirm == InvalidXLogRecPtr)
		return -1;

	/*
	 * The last store flushed here. Under a steady load each round's store
	 * is newer than the WAL writer's last flush, so after
	 * ZS_CONFIRM_FLUSH_MS it is flushed now, busy or idle.
	 */
	if (s->unflushed_store != InvalidXLogRecPtr && GetFlushRecPtr(NULL) < s->unflushed_store)
	{
		waited = TimestampDifferenceMilliseconds(s->pending_since, GetCurrentTimestamp());
		if (waited < ZS_CONFIRM_FLUSH_MS)
			return Max(1, ZS_CONFIRM_FLUSH_MS - waited);
		XLogFlush(s->unflushed_store);
	}
	/* then the standbys' turn, one confirmation at a time */
	s->standby_confirm = s->pending_confirm;
	s->standby_store = s->unflushed_store;
	s->pending_confirm = s->unflushed_store = InvalidXLogRecPtr;
	return confirm_if_standbys_have(s, wait, standbys) ? -1 : zs_poll_interval_ms;
}

void
zs_round_forget_confirmations(ZsStream *s)
{
	s->pending_confirm = s->unflushed_store = InvalidXLogRecPtr;
	s->standby_confirm = s->standby_store = InvalidXLogRecPtr;
	s->round_held = s->confirm_held = false;
}

XLogReaderRoutine *
zs_round_wal_reader(void)
{
	cut_need = InvalidXLogRecPtr;
	return &streaming_wal_reader;
}
