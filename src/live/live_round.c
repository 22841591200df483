/*-------------------------------------------------------------------------
 * live_round.c
 *	  The decoder's latest round, in shared memory before it is stored, and
 *	  the pages live subscribers read from it.
 *
 * Subscribers pull committed pages from the change log (architecture.md
 * §4); a live subscriber that did so would wait for the decoder's store of
 * every round: its local commit, then a page read. So the decoder
 * publishes each round's rows here first (as much of the round as fits in
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
 * A round larger than the buffer (one transaction of a bulk import or a
 * migration) goes on in the decoder's spool file (decoder/spool.c writes
 * its records in this module's format, ZsRoundRecord): once the shared part
 * is published, the decoder publishes the file's path, where the records
 * that did not fit start in it, how many there are and the last one's key.
 * So a live subscriber gets the whole round while the decoder stores it,
 * not only its first part, and nothing is written twice for it. The server
 * reads the file without the lock (see read_rest), and remembers where the
 * pages it read end (a subscriber's next page continues there without
 * reading from the start).
 *
 * Record format in data[]: a header (RoundRow), then the change text, then
 * padding to MAXALIGN. In the spool's file: a ZsRoundRecord, then the
 * change text.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "utils/wait_event.h"

#include "changelog/changelog.h"
#include "live/live_round.h"
#include "shmem.h"

/* (a round's rows are the decoder's, with LSN watermarks, as in its spool) */
typedef struct RoundRow
{
	int32		change_len;
	int64		pos;
	char		watermark[ZS_LSN_WATERMARK_MAXLEN];
} RoundRow;

#define ROW_SIZE(change_len) MAXALIGN(MAXALIGN(sizeof(RoundRow)) + (change_len))

/* The server reads the rest's file in chunks of this size (or one larger record). */
#define REST_READ_BYTES		(1024 * 1024)

/*
 * The server: where the pages it read from the rest's file ended, so that
 * the next page of a subscriber there continues at that offset. A position
 * not found here (a subscriber whose page was cut by its backlog room, or
 * one that reconnected inside the round) is looked for from the nearest
 * cursor before it.
 */
typedef struct RestCursor
{
	uint64		round;			/* 0: unused */
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
	Size		offset;			/* of the record after it, in the file */
	int64		index;			/* that record's number in the rest */
} RestCursor;

#define REST_CURSORS 64

static RestCursor rest_cursors[REST_CURSORS];
static int	rest_cursor_next = 0;

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
	zs_live->has_rest = false;
	LWLockRelease(zs_live->lock);
}

bool
zs_live_begin(const char *replica_version, const char *after_watermark, int64 after_pos)
{
	if (zs_live == NULL)
		return false;
	LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	zs_live->has_rest = false;
	zs_live->round++;
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
	zs_live->last_pos = pos;
	return true;
}

void
zs_live_end(void)
{
	Assert(LWLockHeldByMeInMode(zs_live->lock, LW_EXCLUSIVE));
	zs_live->valid = zs_live->nrows > 0;
	LWLockRelease(zs_live->lock);
	/* what is published is there to be sent: the server looks at once */
	zs_wake_worker(ZS_WORKER_SERVER);
}

void
zs_live_rest_publish(const char *path, Size offset, int64 rows,
					 const char *last_watermark, int64 last_pos)
{
	if (zs_live == NULL || rows <= 0)
		return;
	LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	strlcpy(zs_live->rest_path, path, sizeof(zs_live->rest_path));
	zs_live->rest_offset = offset;
	zs_live->rest_rows = rows;
	zs_live->has_rest = true;
	zs_live->valid = true;		/* also if no row fitted in data[] */
	strlcpy(zs_live->last_watermark, last_watermark, sizeof(zs_live->last_watermark));
	zs_live->last_pos = last_pos;
	LWLockRelease(zs_live->lock);
	zs_wake_worker(ZS_WORKER_SERVER);
}

void
zs_live_rest_drop(void)
{
	if (zs_live == NULL)
		return;
	LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	zs_live->has_rest = false;
	LWLockRelease(zs_live->lock);
}

bool
zs_live_head(const char *replica_version, char *watermark, int64 *pos)
{
	bool		have;

	if (zs_live == NULL)
		return false;
	LWLockAcquire(zs_live->lock, LW_SHARED);
	have = zs_live->valid && strcmp(zs_live->replica_version, replica_version) == 0;
	if (have)
	{
		strlcpy(watermark, zs_live->last_watermark, ZS_WATERMARK_MAXLEN);
		*pos = zs_live->last_pos;
	}
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

static RestCursor *
find_rest_cursor(uint64 round, const char *watermark, int64 pos)
{
	for (int i = 0; i < REST_CURSORS; i++)
	{
		RestCursor *c = &rest_cursors[i];

		if (c->round == round && key_cmp(c->watermark, c->pos, watermark, pos) == 0)
			return c;
	}
	return NULL;
}

/* The cursor of this round with the greatest key below (watermark, pos). */
static RestCursor *
rest_cursor_before(uint64 round, const char *watermark, int64 pos)
{
	RestCursor *best = NULL;

	for (int i = 0; i < REST_CURSORS; i++)
	{
		RestCursor *c = &rest_cursors[i];

		if (c->round == round && key_cmp(c->watermark, c->pos, watermark, pos) < 0 &&
			(best == NULL || key_cmp(c->watermark, c->pos, best->watermark, best->pos) > 0))
			best = c;
	}
	return best;
}

static void
remember_rest_cursor(uint64 round, const char *watermark, int64 pos, Size offset, int64 index)
{
	RestCursor *c = find_rest_cursor(round, watermark, pos);

	if (c == NULL)
	{
		c = &rest_cursors[rest_cursor_next];
		rest_cursor_next = (rest_cursor_next + 1) % REST_CURSORS;
	}
	c->round = round;
	strlcpy(c->watermark, watermark, sizeof(c->watermark));
	c->pos = pos;
	c->offset = offset;
	c->index = index;
}

/* What the server needs of the rest's state, taken under the lock. */
typedef struct RestView
{
	uint64		round;
	char		path[MAXPGPATH];
	Size		offset;			/* of its first record in the file */
	int64		rows;
} RestView;

/* The server's reader of the rest's file, in chunks. */
typedef struct RestReader
{
	int			fd;
	const char *path;
	off_t		size;			/* of the file */
	char	   *buf;
	Size		buf_size;
	Size		buf_len;
	Size		buf_offset;		/* the file's offset of buf[0] */
	bool		failed;			/* a read failed (errno says why) */
} RestReader;

/* The file's bytes [offset, offset + len) in buf; NULL past its end or on a read error. */
static const char *
rest_bytes(RestReader *r, Size offset, Size len)
{
	ssize_t		got;

	if (offset >= r->buf_offset && offset + len <= r->buf_offset + r->buf_len)
		return r->buf + (offset - r->buf_offset);
	if ((off_t) (offset + len) > r->size)
		return NULL;
	if (Max(len, REST_READ_BYTES) > r->buf_size)
	{
		r->buf_size = Max(len, REST_READ_BYTES);
		r->buf = repalloc(r->buf, r->buf_size);
	}
	pgstat_report_wait_start(WAIT_EVENT_BUFFILE_READ);
	got = pg_pread(r->fd, r->buf, r->buf_size, (off_t) offset);
	pgstat_report_wait_end();
	if (got < (ssize_t) len)
	{
		r->failed = true;
		if (got >= 0)
			errno = EIO;		/* shorter than its size said */
		return NULL;
	}
	r->buf_offset = offset;
	r->buf_len = (Size) got;
	return r->buf;
}

/* The record at *offset (moved past it); false if the file ends before. */
static bool
rest_record(RestReader *r, Size *offset, ZsRoundRecord *header, const char **change)
{
	const char *bytes = rest_bytes(r, *offset, sizeof(ZsRoundRecord));

	if (bytes == NULL)
		return false;
	memcpy(header, bytes, sizeof(ZsRoundRecord));
	*change = rest_bytes(r, *offset + sizeof(ZsRoundRecord), header->len);
	if (*change == NULL)
		return false;
	*offset += sizeof(ZsRoundRecord) + header->len;
	return true;
}

/*
 * A page of the round's rest after (after_watermark, after_pos), or from
 * its first record; NULL if the position is not in it, or if the file is
 * gone. Read without the lock: the spool's file is complete before the
 * round's rest is published, and is not written again; once the round is
 * stored the decoder deletes it (a reader that has it open reads on; one
 * that opens it then finds no file and reads the log, which has the round
 * by then). A temporary file's name is not used again within a decoder's
 * lifetime, and a new decoder clears the round before it spools anything.
 */
static ZsChangeLogPage *
read_rest(const RestView *view, const char *after_watermark, int64 after_pos, int limit)
{
	RestReader	r;
	RestCursor *cursor = NULL;
	Size		offset = view->offset;
	int64		index = 0;
	ZsRoundRecord header;
	const char *change;
	ZsChangeLogPage *page = NULL;
	bool		trouble = false;

	r.fd = OpenTransientFile(view->path, O_RDONLY | PG_BINARY);
	if (r.fd < 0)
	{
		if (errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", view->path),
					 errdetail("The round's rows are sent from the change log once stored.")));
		return NULL;			/* (ENOENT: stored since) */
	}
	r.path = view->path;
	r.size = lseek(r.fd, 0, SEEK_END);
	r.buf_size = REST_READ_BYTES;
	r.buf = palloc(r.buf_size);
	r.buf_len = 0;
	r.buf_offset = 0;
	r.failed = false;

	cursor = find_rest_cursor(view->round, after_watermark, after_pos);
	if (cursor != NULL)
	{
		offset = cursor->offset;
		index = cursor->index;
	}
	else
	{
		/*
		 * Not where a page ended: the first record after the position, read
		 * on from the nearest such place before it (or the rest's start).
		 */
		RestCursor *before = rest_cursor_before(view->round, after_watermark, after_pos);

		if (before != NULL)
		{
			offset = before->offset;
			index = before->index;
		}
		for (;;)
		{
			Size		at = offset;

			if (index >= view->rows || !rest_record(&r, &offset, &header, &change))
			{
				trouble = true; /* the position is before the round's last row */
				goto done;
			}
			if (key_cmp(header.watermark, header.pos, after_watermark, after_pos) > 0)
			{
				offset = at;
				break;
			}
			index++;
			zs_worker_check_interrupts();
		}
	}

	page = palloc0(sizeof(ZsChangeLogPage));
	strlcpy(page->after_watermark, after_watermark, sizeof(page->after_watermark));
	page->after_pos = after_pos;
	page->rows = palloc(sizeof(ZsChangeLogRow) * Max(1, Min((int64) limit, view->rows - index)));
	while (page->nrows < limit && index < view->rows)
	{
		if (!rest_record(&r, &offset, &header, &change))
		{
			page = NULL;		/* cut short: the log, once stored */
			trouble = true;
			goto done;
		}
		zs_changelog_row_set(&page->rows[page->nrows++], header.watermark, header.pos,
							 change, header.len);
		index++;
	}
	page->full = index < view->rows;
	if (page->nrows > 0)
	{
		ZsChangeLogRow *last = &page->rows[page->nrows - 1];

		remember_rest_cursor(view->round, last->watermark, last->pos, offset, index);
	}
done:
	/* the file is only a shortcut: its trouble is a warning, the log has the rows */
	if (r.failed)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", view->path),
				 errdetail("The round's rows are sent from the change log once stored.")));
	else if (trouble)
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file \"%s\" ends before the %lld rows of its round's rest",
						view->path, (long long) view->rows),
				 errdetail("The round's rows are sent from the change log once stored.")));
	CloseTransientFile(r.fd);
	pfree(r.buf);
	return page;
}

ZsChangeLogPage *
zs_live_read_page(const char *replica_version, const char *after_watermark, int64 after_pos,
				  int limit)
{
	ZsChangeLogPage *page = NULL;
	Size		offset = 0;
	int			first = -1;
	int			cmp;
	bool		in_rest = false;
	RestView	rest;

	if (zs_live == NULL)
		return NULL;
	LWLockAcquire(zs_live->lock, LW_SHARED);
	if (!zs_live->valid || strcmp(zs_live->replica_version, replica_version) != 0)
		goto done;
	rest.round = zs_live->round;
	strlcpy(rest.path, zs_live->rest_path, sizeof(rest.path));
	rest.offset = zs_live->rest_offset;
	rest.rows = zs_live->rest_rows;

	/*
	 * The round serves positions from its start (the last stored row when
	 * it was published) to its last row but one, in data[] and then in its
	 * file (where a page read from it ended, or found by reading on from
	 * the nearest such place before it); anything else is read from the log
	 * (catching-up subscribers behind the round cost no search).
	 */
	cmp = key_cmp(after_watermark, after_pos, zs_live->after_watermark, zs_live->after_pos);
	if (cmp < 0 ||
		key_cmp(after_watermark, after_pos, zs_live->last_watermark, zs_live->last_pos) >= 0)
		goto done;
	if (cmp == 0)
		first = 0;
	else if (zs_live->has_rest && find_rest_cursor(rest.round, after_watermark, after_pos) != NULL)
	{
		in_rest = true;
		goto done;
	}
	else
	{
		/* the first row after the position (a subscriber's is a row's key, or (W, -1)) */
		for (int i = 0; i < zs_live->nrows; i++)
		{
			RoundRow   *row = row_at(offset);

			if (key_cmp(row->watermark, row->pos, after_watermark, after_pos) > 0)
			{
				first = i;
				break;
			}
			offset += ROW_SIZE(row->change_len);
		}
	}
	if (first < 0 || first >= zs_live->nrows)
	{
		/* past data[] (within the round, as checked above): in the file */
		in_rest = zs_live->has_rest;
		goto done;
	}

	page = palloc0(sizeof(ZsChangeLogPage));
	strlcpy(page->after_watermark, after_watermark, sizeof(page->after_watermark));
	page->after_pos = after_pos;
	page->nrows = Min(limit, zs_live->nrows - first);
	page->full = first + page->nrows < zs_live->nrows || zs_live->has_rest;
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
	if (in_rest)
		page = read_rest(&rest, after_watermark, after_pos, limit);
	return page;
}
