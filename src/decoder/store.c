/*-------------------------------------------------------------------------
 * store.c
 *	  The change log's one writer: every row the decoder stores, decoded
 *	  (round.c) or synthetic (a backfill's messages), goes through a store,
 *	  one local transaction, and the change log's head moves (the stream's
 *	  stored_head, and the head published to readers) only when it commits.
 *
 * A store of decoded transactions commits with the replication origin's
 * progress (exactly once across crashes) and without waiting for its
 * flush: the slot is confirmed only once it is (round.c). A backfill's
 * synthetic transactions have no upstream commit to stamp; a promoted
 * standby would not store them again with the same watermarks, so with a
 * failover slot nobody reads them before the standbys have them: the head
 * is published only then.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "pgstat.h"
#include "replication/origin.h"
#include "utils/guc.h"

#include "changelog/changelog.h"
#include "changelog/changelog_writer.h"
#include "codec/watermark.h"
#include "compat/replication.h"
#include "decoder/store.h"
#include "shmem.h"
#include "spi_xact.h"
#include "standby_slots.h"

/* a synthetic transaction: begin (no ack expected for it), the message, commit */
static const char synthetic_begin[] = "{\"tag\":\"begin\",\"json\":\"s\",\"skipAck\":true}";
static const char synthetic_commit[] = "{\"tag\":\"commit\"}";

void
zs_store_begin(ZsStore *st, ZsStream *s, const char *activity)
{
	memset(st, 0, sizeof(*st));
	st->stream = s;
	strlcpy(st->head, s->stored_head, sizeof(st->head));
	zs_spi_xact_begin(activity);
	zs_changelog_begin();
}

void
zs_store_row(ZsStore *st, const char *watermark, int64 pos,
			 const char *change, int change_len, bool is_commit, bool is_schema)
{
	if (is_schema)
		zs_changelog_add_schema(watermark, pos, change, change_len);
	else
		zs_changelog_add(watermark, pos, change, change_len, is_commit);
	if (is_commit)
		strlcpy(st->head, watermark, sizeof(st->head));
}

/* The head moves: in the stream, and for readers. */
static void
move_head(ZsStore *st, const char *head, TimestampTz upstream_commit_time)
{
	strlcpy(st->stream->stored_head, head, sizeof(st->stream->stored_head));
	zs_publish_stored(head, st->ntxns, st->nchanges, upstream_commit_time);
}

void
zs_store_commit_decoded(ZsStore *st, const char *last_watermark, int ntxns,
						int64 nchanges, const ZsStoreProgress *progress)
{
	st->ntxns = ntxns;
	st->nchanges = nchanges;
	zs_changelog_finish(last_watermark);

	/* the commit stamps our progress into the origin, atomically */
	zs_set_xact_origin_commit(progress->end_lsn, progress->commit_time);
	/* not waiting for its flush: the slot is confirmed once it is (round.c) */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	zs_spi_xact_commit();
	SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);
	st->stream->unflushed_store = Max(st->stream->unflushed_store, XactLastCommitEnd);
	zs_set_xact_origin_commit(InvalidXLogRecPtr, 0);
	pgstat_report_stat(false);

	move_head(st, last_watermark, progress->commit_time);
}

/* One synthetic transaction after the head, at watermark at least not_before. */
static void
add_synthetic(ZsStore *st, const char *message, bool is_schema, const char *not_before)
{
	char		watermark[ZS_WATERMARK_MAXLEN];

	if (!zs_watermark_next_minor(st->head, watermark))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the change log's head \"%s\" is not a watermark", st->head)));
	if (not_before != NULL && strcmp(watermark, not_before) < 0)
		strlcpy(watermark, not_before, sizeof(watermark));
	zs_store_row(st, watermark, 0, synthetic_begin, strlen(synthetic_begin), false, false);
	zs_store_row(st, watermark, 1, message, strlen(message), false, is_schema);
	zs_store_row(st, watermark, 2, synthetic_commit, strlen(synthetic_commit), true, false);
	st->ntxns++;
	st->nchanges++;
}

void
zs_store_backfill(ZsStream *s, const ZsBackfillBatch *batch)
{
	ZsStore		st;
	ListCell   *lc;

	zs_store_begin(&st, s, "zero_stream: storing a backfill");
	foreach(lc, batch->rows)
		add_synthetic(&st, (const char *) lfirst(lc), false, NULL);
	if (batch->completed != NULL)
	{
		char		snapshot[ZS_WATERMARK_MAXLEN];

		/* at or after the backfill's snapshot (zero-cache's rule) */
		zs_watermark_encode(batch->completed_lsn - 1, snapshot);
		add_synthetic(&st, batch->completed, true, snapshot);
	}
	zs_changelog_finish(st.head);
	zs_spi_xact_commit();

	/* readers stop at the published head: only once the standbys have them */
	zs_failover_wait_for(XactLastCommitEnd);
	move_head(&st, st.head, 0);
}
