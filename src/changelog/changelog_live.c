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
 * A round larger than the buffer (one transaction of a bulk import or a
 * migration) continues in a temporary file, "round.<n>" of a FileSet that
 * the running decoder owns: the decoder writes the rows that did not fit
 * there in chunks, publishing each (its bytes and rows) once written, and
 * deletes the file once the round is stored. So a live subscriber gets the
 * whole round while the decoder stores it, not only its first part. The
 * server reads the file without the lock (see read_rest), and remembers
 * where the pages it read end (a subscriber's next page continues there
 * without reading from the start). The file doubles what the decoder's
 * spool writes for such a round (sharing the spool's own file would need
 * it reopened in every transaction: a file set's files are closed at each
 * transaction's end), so it is not written when temp_file_limit could not
 * hold both.
 *
 * Record format in data[]: a header (RoundRow), then the change text, then
 * padding to MAXALIGN. In the file: a header, then the change text.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>

#include "lib/stringinfo.h"
#include "storage/fd.h"
#include "storage/fileset.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

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

/* The rest's file is written, and published, in chunks of this size. */
#define REST_CHUNK_BYTES	(256 * 1024)

/* The server reads the file in chunks of this size (or one larger record). */
#define REST_READ_BYTES		(1024 * 1024)

/* The decoder: the rest of the round it is publishing. */
static File rest_file = -1;
static off_t rest_written = 0;
static int64 rest_rows_written = 0;
static StringInfoData rest_chunk;
static int64 rest_chunk_rows = 0;
static char rest_last_watermark[ZS_WATERMARK_MAXLEN];
static int64 rest_last_pos;

/*
 * The server: where the pages it read from the rest's file ended, so that
 * the next page of a subscriber there continues at that offset. A position
 * not found here (a subscriber that reconnected inside the round) is looked
 * up by reading the file from its start.
 */
typedef struct RestCursor
{
	uint64		round;			/* 0: unused */
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
	off_t		offset;			/* of the record after it */
	int64		index;			/* that record's number in the file */
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

static void
rest_file_name(char *name, uint64 round)
{
	snprintf(name, MAXPGPATH, "round." UINT64_FORMAT, round);
}

/* The decoder: stop writing the rest (its file is deleted by the caller). */
static void
close_rest_writer(void)
{
	if (rest_file >= 0)
		FileClose(rest_file);
	rest_file = -1;
}

/*
 * Under the exclusive lock: the round no longer continues in a file.
 * Returns true if it did (the caller deletes the file once the lock is
 * released: no reader has it open then, nor opens it again).
 */
static bool
forget_rest_locked(char *name)
{
	bool		had = zs_live->has_rest;

	Assert(LWLockHeldByMeInMode(zs_live->lock, LW_EXCLUSIVE));
	rest_file_name(name, zs_live->round);
	zs_live->has_rest = false;
	zs_live->rest_bytes = 0;
	zs_live->rest_rows = 0;
	return had;
}

void
zs_live_clear(void)
{
	FileSet		fileset;
	bool		delete_files;

	if (zs_live == NULL)
		return;
	/* also from an error while a round was being published */
	if (!LWLockHeldByMeInMode(zs_live->lock, LW_EXCLUSIVE))
		LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	zs_live->valid = false;
	zs_live->nrows = 0;
	zs_live->used = 0;
	zs_live->has_rest = false;
	zs_live->rest_bytes = 0;
	zs_live->rest_rows = 0;
	/* our files, or those a decoder before us left behind */
	delete_files = zs_live->fileset_used;
	fileset = zs_live->fileset;
	zs_live->fileset_used = false;
	LWLockRelease(zs_live->lock);
	close_rest_writer();
	if (delete_files)
		FileSetDeleteAll(&fileset);
}

void
zs_live_prepare_rest(void)
{
	FileSet		fileset;

	if (zs_live == NULL)
		return;
	FileSetInit(&fileset);
	LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	Assert(!zs_live->fileset_used);
	zs_live->fileset = fileset;
	zs_live->fileset_ready = true;
	LWLockRelease(zs_live->lock);
}

bool
zs_live_begin(const char *replica_version, const char *after_watermark, int64 after_pos)
{
	char		name[MAXPGPATH];

	if (zs_live == NULL)
		return false;
	LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	/* a previous round's file is dropped once it is stored; not left here */
	if (forget_rest_locked(name))
	{
		LWLockRelease(zs_live->lock);
		FileSetDelete(&zs_live->fileset, name, false);
		LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	}
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
}

static void
wake_server(void)
{
	Latch	   *server = zs_worker_latch(ZS_WORKER_SERVER);

	if (server != NULL)
		SetLatch(server);
}

bool
zs_live_rest_begin(Size round_bytes)
{
	char		name[MAXPGPATH];

	Assert(rest_file < 0);
	if (zs_live == NULL || !zs_live->fileset_ready)
		return false;
	/* the spool holds the round too: both must fit in temp_file_limit */
	if (temp_file_limit >= 0 && (double) round_bytes * 2 > (double) temp_file_limit * 1024)
		return false;
	LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	zs_live->fileset_used = true;	/* from here on there is something to delete */
	rest_file_name(name, zs_live->round);
	LWLockRelease(zs_live->lock);

	rest_file = FileSetCreate(&zs_live->fileset, name);
	rest_written = 0;
	rest_rows_written = 0;
	if (rest_chunk.data == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&rest_chunk);
		enlargeStringInfo(&rest_chunk, REST_CHUNK_BYTES);
		MemoryContextSwitchTo(old);
	}
	resetStringInfo(&rest_chunk);
	rest_chunk_rows = 0;
	return true;
}

/* Write the chunk, then publish it: readers never see a partial record. */
static void
flush_rest_chunk(void)
{
	int			written;

	if (rest_chunk.len == 0)
		return;
	written = FileWrite(rest_file, rest_chunk.data, rest_chunk.len, rest_written,
						WAIT_EVENT_BUFFILE_WRITE);
	if (written != rest_chunk.len)
	{
		/* a short write sets no errno: take it as a full disk */
		if (written >= 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write to file \"%s\": %m", FilePathName(rest_file))));
	}
	rest_written += rest_chunk.len;
	rest_rows_written += rest_chunk_rows;
	resetStringInfo(&rest_chunk);
	rest_chunk_rows = 0;

	LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	zs_live->has_rest = true;
	zs_live->valid = true;		/* also if no row fitted in data[] */
	zs_live->rest_bytes = rest_written;
	zs_live->rest_rows = rest_rows_written;
	strlcpy(zs_live->last_watermark, rest_last_watermark, sizeof(zs_live->last_watermark));
	zs_live->last_pos = rest_last_pos;
	LWLockRelease(zs_live->lock);
	wake_server();
}

void
zs_live_rest_add(const char *watermark, int64 pos, const char *change, int change_len)
{
	RoundRow	header;

	Assert(rest_file >= 0);
	memset(&header, 0, sizeof(header));
	header.change_len = change_len;
	header.pos = pos;
	strlcpy(header.watermark, watermark, sizeof(header.watermark));
	appendBinaryStringInfo(&rest_chunk, (const char *) &header, sizeof(header));
	appendBinaryStringInfo(&rest_chunk, change, change_len);
	rest_chunk_rows++;
	strlcpy(rest_last_watermark, watermark, sizeof(rest_last_watermark));
	rest_last_pos = pos;
	if (rest_chunk.len >= REST_CHUNK_BYTES)
		flush_rest_chunk();
}

void
zs_live_rest_end(void)
{
	Assert(rest_file >= 0);
	flush_rest_chunk();
	close_rest_writer();
}

void
zs_live_rest_drop(void)
{
	char		name[MAXPGPATH];
	bool		had;

	if (zs_live == NULL)
		return;
	LWLockAcquire(zs_live->lock, LW_EXCLUSIVE);
	had = forget_rest_locked(name);
	LWLockRelease(zs_live->lock);
	if (had)
		FileSetDelete(&zs_live->fileset, name, false);
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

static void
remember_rest_cursor(uint64 round, const char *watermark, int64 pos, off_t offset, int64 index)
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

/* The server's view of the rest's file: its published bytes, read in chunks. */
typedef struct RestReader
{
	File		file;
	off_t		end;			/* bytes published */
	char	   *buf;
	int			buf_size;
	int			buf_len;
	off_t		buf_offset;		/* the file's offset of buf[0] */
} RestReader;

/* Make [offset, offset + len) of the file readable in buf; false past its end. */
static bool
rest_load(RestReader *r, off_t offset, Size len)
{
	int			want;
	int			got;

	if (offset >= r->buf_offset && offset + (off_t) len <= r->buf_offset + r->buf_len)
		return true;
	if (offset + (off_t) len > r->end)
		return false;
	want = (int) Min((off_t) Max(len, REST_READ_BYTES), r->end - offset);
	if (want > r->buf_size)
	{
		r->buf = repalloc(r->buf, want);
		r->buf_size = want;
	}
	got = FileRead(r->file, r->buf, want, offset, WAIT_EVENT_BUFFILE_READ);
	if (got != want)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": read %d of %d bytes",
						FilePathName(r->file), got, want)));
	r->buf_offset = offset;
	r->buf_len = got;
	return true;
}

/* The record at offset: false past the published end. */
static bool
rest_record(RestReader *r, off_t offset, RoundRow *header, const char **change)
{
	if (!rest_load(r, offset, sizeof(RoundRow)))
		return false;
	memcpy(header, r->buf + (offset - r->buf_offset), sizeof(RoundRow));
	/* records are published whole */
	if (header->change_len < 0 ||
		!rest_load(r, offset, sizeof(RoundRow) + header->change_len))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("record at offset %lld of file \"%s\" is cut short",
						(long long) offset, FilePathName(r->file))));
	*change = r->buf + (offset - r->buf_offset) + sizeof(RoundRow);
	return true;
}

/* What the server needs of the rest's state, taken under the lock. */
typedef struct RestView
{
	FileSet		fileset;
	uint64		round;
	off_t		bytes;
	int64		rows;
} RestView;

/*
 * A page of the round's rest after (after_watermark, after_pos), or from
 * its first record; NULL if the position is not in it, or if the file is
 * gone. Read without the lock: the file of a round is named after it, and
 * what is published of it never changes; once the round is stored the
 * decoder deletes it (a reader that has it open reads on; one that opens it
 * then finds no file and reads the log, which has the round by then).
 */
static ZsChangeLogPage *
read_rest(const RestView *view, const char *after_watermark, int64 after_pos, bool from_start,
		  int limit)
{
	FileSet		fileset = view->fileset;
	uint64		round = view->round;
	int64		total = view->rows;
	char		name[MAXPGPATH];
	RestReader	r;
	RestCursor *cursor = NULL;
	off_t		offset = 0;
	int64		index = 0;
	RoundRow	header;
	const char *change;
	ZsChangeLogPage *page;

	rest_file_name(name, round);
	r.file = FileSetOpen(&fileset, name, O_RDONLY);
	if (r.file <= 0)
	{
		elog(DEBUG1, "the rest of round " UINT64_FORMAT " is gone: reading the change log", round);
		return NULL;
	}
	r.end = view->bytes;
	r.buf_size = REST_READ_BYTES;
	r.buf = palloc(r.buf_size);
	r.buf_len = 0;
	r.buf_offset = 0;

	if (!from_start)
	{
		cursor = find_rest_cursor(round, after_watermark, after_pos);
		if (cursor != NULL)
		{
			offset = cursor->offset;
			index = cursor->index;
		}
		else
		{
			/* not where a page ended: look for it from the start */
			bool		found = false;

			while (!found && rest_record(&r, offset, &header, &change))
			{
				offset += sizeof(RoundRow) + header.change_len;
				index++;
				found = key_cmp(header.watermark, header.pos, after_watermark, after_pos) == 0;
			}
			if (!found)
			{
				FileClose(r.file);
				pfree(r.buf);
				return NULL;
			}
		}
	}

	page = palloc0(sizeof(ZsChangeLogPage));
	strlcpy(page->after_watermark, after_watermark, sizeof(page->after_watermark));
	page->after_pos = after_pos;
	page->rows = palloc(sizeof(ZsChangeLogRow) * Max(1, Min((int64) limit, total - index)));
	while (page->nrows < limit && index < total && rest_record(&r, offset, &header, &change))
	{
		zs_changelog_row_set(&page->rows[page->nrows++], header.watermark, header.pos,
							 change, header.change_len);
		offset += sizeof(RoundRow) + header.change_len;
		index++;
	}
	/* not full at what is published so far: the decoder's next chunk wakes us */
	page->full = index < total;
	FileClose(r.file);
	pfree(r.buf);
	if (page->nrows > 0)
	{
		ZsChangeLogRow *last = &page->rows[page->nrows - 1];

		remember_rest_cursor(round, last->watermark, last->pos, offset, index);
	}
	return page;
}

ZsChangeLogPage *
zs_live_read_page(const char *replica_version, const char *after_watermark, int64 after_pos,
				  int limit)
{
	ZsChangeLogPage *page = NULL;
	Size		offset = 0;
	int			first = -1;
	bool		in_rest = false;
	RestView	rest;

	if (zs_live == NULL)
		return NULL;
	LWLockAcquire(zs_live->lock, LW_SHARED);
	if (!zs_live->valid || strcmp(zs_live->replica_version, replica_version) != 0)
		goto done;
	rest.fileset = zs_live->fileset;
	rest.round = zs_live->round;
	rest.bytes = zs_live->rest_bytes;
	rest.rows = zs_live->rest_rows;

	/*
	 * The round serves positions from its start (the last stored row when
	 * it was published) to its last row but one, in data[] and then in its
	 * file (where a page read from it ended, or found by reading it);
	 * anything else is read from the log.
	 */
	if (key_cmp(after_watermark, after_pos, zs_live->after_watermark, zs_live->after_pos) == 0)
		first = 0;
	else if (zs_live->has_rest && find_rest_cursor(rest.round, after_watermark, after_pos) != NULL)
		in_rest = true;
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
		in_rest = first < 0 && zs_live->has_rest;
		if (first < 0)
			goto done;
	}
	if (first >= zs_live->nrows)
	{
		in_rest = zs_live->has_rest;
		goto done;
	}
	if (first == 0)
		offset = 0;

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
	/* the file from its start after data[]'s last row, else after the position */
	if (in_rest)
		page = read_rest(&rest, after_watermark, after_pos, first >= 0, limit);
	return page;
}
