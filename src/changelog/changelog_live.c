/*-------------------------------------------------------------------------
 * changelog_live.c
 *	  The decoder's latest round, in shared memory before it is stored, and
 *	  the pages live subscribers read from it (issue 14).
 *
 * Subscribers pull committed pages from the change log (architecture.md
 * §4), so a live subscriber used to wait for the decoder's store of every
 * round: its local commit, then a page read. Now the decoder publishes each
 * round's rows here first (as much of the round as fits in
 * zero_stream.live_buffer), then stores the round. The server serves a
 * subscriber from here when its position is exactly where the round starts
 * (the last row stored when the round was published) or inside the round,
 * and from the log otherwise: one subscriber may take one round from here
 * and the next from the log, never a row twice (positions are keys) nor a
 * row of another round.
 *
 * Why a subscriber may see a row before it is stored (zero-cache's
 * forwarder does the same, docs/zero-protocol.md §2.7): every row comes
 * from WAL that is flushed, and decoding after a crash starts from the
 * origin progress of the last store, so the same transactions are stored
 * again with the same watermarks and the same changes. A subscriber that
 * got ahead of the log after a crash resumes from its own watermark, and
 * the rows at or below it are skipped (§2.7 item 7, subscription.c). A new
 * lineage ends such subscriptions, as every other of the old lineage.
 *
 * The round is cleared when the decoder starts, when it starts a new
 * lineage, and when it fails, so a round the decoder will not store does
 * not outlive its decoder.
 *
 * Record format in data[]: a header (RoundRow), then the change text, then
 * padding to MAXALIGN.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/lwlock.h"

#include "changelog/changelog.h"
#include "changelog/changelog_live.h"
#include "shmem.h"

typedef struct RoundRow
{
	int32		change_len;
	int64		pos;
	char		watermark[ZS_WATERMARK_MAXLEN];
} RoundRow;

#define ROW_SIZE(change_len) MAXALIGN(MAXALIGN(sizeof(RoundRow)) + (change_len))

static inline RoundRow *
row_at(Size offset)
{
	return (RoundRow *) (zs_live->data + offset);
}

static inline const char *
row_change(const RoundRow *row)
{
	return (const char *) row + MAXALIGN(sizeof(RoundRow));
}

void
zs_live_clear(void)
{
	if (zs_live == NULL)
		return;
	/* also from an error while a round was being published */
	if (!LWLockHeldByMeInMode(zs_live->lock, LW_EXCLUSIVE))
		LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	zs_live->valid = false;
	zs_live->nrows = 0;
	zs_live->used = 0;
	LWLockRelease(zs_live->lock);
}

bool
zs_live_begin(const char *replica_version, const char *after_watermark, int64 after_pos)
{
	if (zs_live == NULL)
		return false;
	LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	zs_live->valid = false;
	zs_live->nrows = 0;
	zs_live->used = 0;
	strlcpy(zs_live->replica_version, replica_version, sizeof(zs_live->replica_version));
	strlcpy(zs_live->after_watermark, after_watermark, sizeof(zs_live->after_watermark));
	zs_live->after_pos = after_pos;
	return true;
}

bool
zs_live_add(const char *watermark, int64 pos, const char *change, int change_len)
{
	RoundRow   *row;

	Assert(LWLockHeldByMeInMode(zs_live->lock, LW_EXCLUSIVE));
	if (zs_live->used + ROW_SIZE(change_len) > zs_live->capacity)
		return false;
	row = row_at(zs_live->used);
	row->change_len = change_len;
	row->pos = pos;
	strlcpy(row->watermark, watermark, sizeof(row->watermark));
	memcpy((char *) row_change(row), change, change_len);
	zs_live->used += ROW_SIZE(change_len);
	zs_live->nrows++;
	strlcpy(zs_live->last_watermark, watermark, sizeof(zs_live->last_watermark));
	return true;
}

void
zs_live_end(void)
{
	Assert(LWLockHeldByMeInMode(zs_live->lock, LW_EXCLUSIVE));
	zs_live->valid = zs_live->nrows > 0;
	LWLockRelease(zs_live->lock);
}

bool
zs_live_head(const char *replica_version, char *watermark)
{
	bool		have;

	if (zs_live == NULL)
		return false;
	LWLockAcquire(zs_live->lock, LW_SHARED);
	have = zs_live->valid && strcmp(zs_live->replica_version, replica_version) == 0;
	if (have)
		strlcpy(watermark, zs_live->last_watermark, ZS_WATERMARK_MAXLEN);
	LWLockRelease(zs_live->lock);
	return have;
}

/* (a, ap) compared with (b, bp), as the log orders its keys */
static int
key_cmp(const char *a, int64 ap, const char *b, int64 bp)
{
	int			c = strcmp(a, b);

	if (c != 0)
		return c;
	return ap < bp ? -1 : ap > bp ? 1 : 0;
}

ZsChangeLogPage *
zs_live_read_page(const char *replica_version, const char *after_watermark, int64 after_pos,
				  int limit)
{
	ZsChangeLogPage *page = NULL;
	Size		offset = 0;
	int			first = -1;

	if (zs_live == NULL)
		return NULL;
	LWLockAcquire(zs_live->lock, LW_SHARED);
	if (!zs_live->valid || strcmp(zs_live->replica_version, replica_version) != 0)
		goto done;

	/*
	 * The round serves positions from its start (the last stored row when
	 * it was published) to its last row but one; anything else is read
	 * from the log.
	 */
	if (key_cmp(after_watermark, after_pos, zs_live->after_watermark, zs_live->after_pos) == 0)
		first = 0;
	else
	{
		for (int i = 0; i < zs_live->nrows; i++)
		{
			RoundRow   *row = row_at(offset);

			offset += ROW_SIZE(row->change_len);
			if (key_cmp(row->watermark, row->pos, after_watermark, after_pos) == 0)
			{
				first = i + 1;
				break;
			}
		}
		if (first < 0 || first >= zs_live->nrows)
			goto done;
	}
	if (first == 0)
		offset = 0;

	page = palloc0(sizeof(ZsChangeLogPage));
	strlcpy(page->after_watermark, after_watermark, sizeof(page->after_watermark));
	page->after_pos = after_pos;
	page->nrows = Min(limit, zs_live->nrows - first);
	page->full = first + page->nrows < zs_live->nrows;
	page->rows = palloc(sizeof(ZsChangeLogRow) * page->nrows);
	for (int i = 0; i < page->nrows; i++)
	{
		RoundRow   *row = row_at(offset);

		zs_changelog_row_set(&page->rows[i], row->watermark, row->pos, row_change(row),
							 row->change_len);
		offset += ROW_SIZE(row->change_len);
	}
done:
	LWLockRelease(zs_live->lock);
	return page;
}
