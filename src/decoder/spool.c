/*-------------------------------------------------------------------------
 * spool.c
 *	  Memory-then-file record staging for the decoder.
 *
 * Records stay in memory up to a limit, then all of them go to a temporary
 * file (fd.c's, deleted when the spool is cleared or the process exits).
 * The file is created with interXact = true: the write callback runs
 * inside the reorder buffer's replay transaction, which is always aborted,
 * and a transaction-scoped file would vanish with it. Writes are buffered
 * here and reads go through a buffer of their own, so that the file can be
 * handed to another process once every record is written (zs_spool_file:
 * the server reads the rest of a large round from it,
 * live/live_round.c). Records are in that module's format,
 * ZsRoundRecord headers followed by their change, at the same offsets in
 * memory and in the file.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/fd.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "decoder/spool.h"

/* The file is written and read in chunks of this size (or one larger record). */
#define SPOOL_IO_BYTES (256 * 1024)

struct ZsSpool
{
	MemoryContext context;
	Size		memory_limit;
	StringInfoData memory;		/* every record while below the limit */
	File		file;			/* -1 until spilled */
	off_t		file_size;		/* bytes written to the file */
	StringInfoData pending;		/* records not yet written to the file */
	StringInfoData chunk;		/* what was last read from the file */
	off_t		chunk_offset;	/* its offset in the file */
	Size		bytes;			/* of every record */
	Size		read_offset;	/* of the next record to read */
	int64		records;
	ZsSpoolRecord last;			/* the last record's header */
};

ZsSpool *
zs_spool_create(MemoryContext context, Size memory_limit)
{
	ZsSpool    *spool = MemoryContextAllocZero(context, sizeof(ZsSpool));
	MemoryContext old = MemoryContextSwitchTo(context);

	spool->context = context;
	spool->memory_limit = memory_limit;
	spool->file = -1;
	initStringInfo(&spool->memory);
	initStringInfo(&spool->pending);
	initStringInfo(&spool->chunk);
	MemoryContextSwitchTo(old);
	return spool;
}

static void
write_file(ZsSpool *spool, const char *data, Size len)
{
	while (len > 0)
	{
		int			amount = (int) Min(len, (Size) SPOOL_IO_BYTES * 64);
		int			written = FileWrite(spool->file, (char *) data, amount, spool->file_size,
										WAIT_EVENT_BUFFILE_WRITE);

		if (written != amount)
		{
			/* a short write sets no errno: take it as a full disk */
			if (written >= 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write to zero_stream spill file \"%s\": %m",
							FilePathName(spool->file))));
		}
		spool->file_size += amount;
		data += amount;
		len -= amount;
	}
}

static void
flush_pending(ZsSpool *spool)
{
	write_file(spool, spool->pending.data, spool->pending.len);
	resetStringInfo(&spool->pending);
}

static void
spill_to_file(ZsSpool *spool)
{
	spool->file = OpenTemporaryFile(true);
	spool->file_size = 0;
	write_file(spool, spool->memory.data, spool->memory.len);
	resetStringInfo(&spool->memory);
}

void
zs_spool_append(ZsSpool *spool, const ZsSpoolRecord *header, const char *data)
{
	spool->bytes += sizeof(ZsSpoolRecord) + header->len;
	spool->records++;
	spool->last = *header;
	if (spool->file < 0 && spool->bytes > spool->memory_limit)
		spill_to_file(spool);
	if (spool->file >= 0)
	{
		appendBinaryStringInfo(&spool->pending, (const char *) header, sizeof(ZsSpoolRecord));
		appendBinaryStringInfo(&spool->pending, data, header->len);
		if (spool->pending.len >= SPOOL_IO_BYTES)
			flush_pending(spool);
		return;
	}
	appendBinaryStringInfo(&spool->memory, (const char *) header, sizeof(ZsSpoolRecord));
	appendBinaryStringInfo(&spool->memory, data, header->len);
}

void
zs_spool_set_memory_limit(ZsSpool *spool, Size memory_limit)
{
	spool->memory_limit = memory_limit;
}

Size
zs_spool_bytes(ZsSpool *spool)
{
	return spool->bytes;
}

int64
zs_spool_records(ZsSpool *spool, ZsSpoolRecord *last)
{
	if (spool->records > 0)
		*last = spool->last;
	return spool->records;
}

const char *
zs_spool_file(ZsSpool *spool)
{
	if (spool->file < 0)
		return NULL;
	flush_pending(spool);
	return FilePathName(spool->file);
}

void
zs_spool_start_read(ZsSpool *spool)
{
	spool->read_offset = 0;
	if (spool->file >= 0)
		flush_pending(spool);
	resetStringInfo(&spool->chunk);
	spool->chunk_offset = 0;
}

Size
zs_spool_read_offset(ZsSpool *spool)
{
	return spool->read_offset;
}

/* The file's bytes [offset, offset + len), through the read chunk. */
static const char *
file_bytes(ZsSpool *spool, off_t offset, Size len)
{
	int			want;
	int			got;

	if (offset >= spool->chunk_offset &&
		offset + (off_t) len <= spool->chunk_offset + spool->chunk.len)
		return spool->chunk.data + (offset - spool->chunk_offset);
	if (offset + (off_t) len > spool->file_size)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("zero_stream spill file \"%s\" ends inside a record", FilePathName(spool->file))));
	want = (int) Min((off_t) Max(len, (Size) SPOOL_IO_BYTES), spool->file_size - offset);
	resetStringInfo(&spool->chunk);
	enlargeStringInfo(&spool->chunk, want);
	got = FileRead(spool->file, spool->chunk.data, want, offset, WAIT_EVENT_BUFFILE_READ);
	if (got != want)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read zero_stream spill file \"%s\": read %d of %d bytes: %m",
						FilePathName(spool->file), got, want)));
	spool->chunk.len = got;
	spool->chunk_offset = offset;
	return spool->chunk.data;
}

bool
zs_spool_read(ZsSpool *spool, ZsSpoolRecord *header, StringInfo data)
{
	const char *src;

	resetStringInfo(data);
	if (spool->file >= 0)
	{
		if ((off_t) spool->read_offset >= spool->file_size)
			return false;
		memcpy(header, file_bytes(spool, spool->read_offset, sizeof(ZsSpoolRecord)),
			   sizeof(ZsSpoolRecord));
		src = file_bytes(spool, spool->read_offset + sizeof(ZsSpoolRecord), header->len);
	}
	else
	{
		if (spool->read_offset >= (Size) spool->memory.len)
			return false;
		memcpy(header, spool->memory.data + spool->read_offset, sizeof(ZsSpoolRecord));
		src = spool->memory.data + spool->read_offset + sizeof(ZsSpoolRecord);
	}
	enlargeStringInfo(data, header->len);
	memcpy(data->data, src, header->len);
	spool->read_offset += sizeof(ZsSpoolRecord) + header->len;
	data->len = header->len;
	data->data[data->len] = '\0';
	return true;
}

/* Do not keep a buffer that a big batch grew. */
static void
shrink(ZsSpool *spool, StringInfo buf, Size keep)
{
	if (buf->maxlen > (int) keep)
	{
		MemoryContext old = MemoryContextSwitchTo(spool->context);

		pfree(buf->data);
		initStringInfo(buf);
		MemoryContextSwitchTo(old);
	}
	resetStringInfo(buf);
}

void
zs_spool_clear(ZsSpool *spool)
{
	/* a temporary file is deleted when closed (a reader that has it open reads on) */
	if (spool->file >= 0)
		FileClose(spool->file);
	spool->file = -1;
	spool->file_size = 0;
	shrink(spool, &spool->memory, spool->memory_limit * 2);
	shrink(spool, &spool->pending, SPOOL_IO_BYTES * 2);
	shrink(spool, &spool->chunk, SPOOL_IO_BYTES * 2);
	spool->chunk_offset = 0;
	spool->bytes = 0;
	spool->read_offset = 0;
	spool->records = 0;
}
