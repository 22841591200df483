/*-------------------------------------------------------------------------
 * spool.c
 *	  Memory-then-file record staging for the decoder.
 *
 * The temporary file is created with interXact = true: the write callback
 * runs inside the reorder buffer's replay transaction, which is always
 * aborted, and a transaction-scoped file would vanish with it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/buffile.h"
#include "utils/memutils.h"

#include "decoder/spool.h"

struct ZsSpool
{
	MemoryContext context;
	Size		memory_limit;
	StringInfoData memory;		/* records while below the limit */
	BufFile    *file;			/* all records once spilled */
	Size		bytes;
	Size		read_offset;	/* into memory, when not spilled */
};

ZsSpool *
zs_spool_create(MemoryContext context, Size memory_limit)
{
	ZsSpool    *spool = MemoryContextAllocZero(context, sizeof(ZsSpool));
	MemoryContext old = MemoryContextSwitchTo(context);

	spool->context = context;
	spool->memory_limit = memory_limit;
	initStringInfo(&spool->memory);
	MemoryContextSwitchTo(old);
	return spool;
}

static void
spill_to_file(ZsSpool *spool)
{
	MemoryContext old = MemoryContextSwitchTo(spool->context);

	spool->file = BufFileCreateTemp(true);
	BufFileWrite(spool->file, spool->memory.data, spool->memory.len);
	MemoryContextSwitchTo(old);
	resetStringInfo(&spool->memory);
}

void
zs_spool_append(ZsSpool *spool, const ZsSpoolRecord *header, const char *data)
{
	spool->bytes += sizeof(ZsSpoolRecord) + header->len;
	if (spool->file == NULL && spool->bytes > spool->memory_limit)
		spill_to_file(spool);
	if (spool->file != NULL)
	{
		BufFileWrite(spool->file, (void *) header, sizeof(ZsSpoolRecord));
		BufFileWrite(spool->file, (void *) data, header->len);
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

void
zs_spool_start_read(ZsSpool *spool)
{
	spool->read_offset = 0;
	if (spool->file != NULL && BufFileSeek(spool->file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind zero_stream spill file: %m")));
}

static void
read_exact(BufFile *file, void *dest, size_t len)
{
	size_t		got = BufFileRead(file, dest, len);

	if (got != len)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read zero_stream spill file: read only %zu of %zu bytes",
						got, len)));
}

bool
zs_spool_read(ZsSpool *spool, ZsSpoolRecord *header, StringInfo data)
{
	resetStringInfo(data);
	if (spool->file != NULL)
	{
		if (BufFileRead(spool->file, header, sizeof(ZsSpoolRecord)) == 0)
			return false;
		enlargeStringInfo(data, header->len);
		read_exact(spool->file, data->data, header->len);
	}
	else
	{
		if (spool->read_offset >= (Size) spool->memory.len)
			return false;
		memcpy(header, spool->memory.data + spool->read_offset, sizeof(ZsSpoolRecord));
		spool->read_offset += sizeof(ZsSpoolRecord);
		enlargeStringInfo(data, header->len);
		memcpy(data->data, spool->memory.data + spool->read_offset, header->len);
		spool->read_offset += header->len;
	}
	data->len = header->len;
	data->data[data->len] = '\0';
	return true;
}

void
zs_spool_clear(ZsSpool *spool)
{
	if (spool->file != NULL)
	{
		BufFileClose(spool->file);
		spool->file = NULL;
	}
	/* do not keep a huge buffer around after a big batch */
	if (spool->memory.maxlen > (int) spool->memory_limit * 2)
	{
		pfree(spool->memory.data);
		{
			MemoryContext old = MemoryContextSwitchTo(spool->context);

			initStringInfo(&spool->memory);
			MemoryContextSwitchTo(old);
		}
	}
	resetStringInfo(&spool->memory);
	spool->bytes = 0;
	spool->read_offset = 0;
}
