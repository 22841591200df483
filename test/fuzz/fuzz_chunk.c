/*-------------------------------------------------------------------------
 * fuzz_chunk.c
 *	  libFuzzer target for src/codec/changelog_chunk.c.
 *
 * The input as a stored chunk: unpacking and reading its rows never reads
 * outside the input or the decoded buffer, and every row read is within
 * the decoded rows and in increasing key order. The input also as the
 * rows' encoding (reader alone), and as material for a builder: rows built
 * from it pack (with each compression), unpack to the same encoding and
 * read back as the same rows (keys, changes, precommits of every kind).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "codec/changelog_chunk.h"
#include "fuzz.h"

static void
read_all(const char *raw, size_t len)
{
	ZsChunkReader r;
	const char *error = NULL;
	char		prev_wm[ZS_WATERMARK_MAXLEN] = "";
	int64_t		prev_pos = 0;
	int			n = 0;
	int			rc;

	zs_chunk_reader_init(&r, raw, len);
	while ((rc = zs_chunk_reader_next(&r, &error)) == 1)
	{
		FUZZ_CHECK(r.change >= raw && r.change + r.change_len <= raw + len, "change inside");
		FUZZ_CHECK(strlen(r.watermark) < ZS_WATERMARK_MAXLEN, "watermark fits");
		if (n > 0)
			FUZZ_CHECK(zs_chunk_key_cmp(prev_wm, prev_pos, r.watermark, r.pos) < 0, "keys increase");
		strcpy(prev_wm, r.watermark);
		prev_pos = r.pos;
		n++;
	}
	FUZZ_CHECK(rc == 0 || (rc == -1 && error != NULL), "an error has a message");
}

/*
 * The row the byte pair at i makes (the builder's input below): the next
 * watermark (one more character) or a later position in this one, and a
 * change of up to 63 bytes from the input at i; returns its length.
 */
static int
next_row(const uint8_t *data, size_t size, size_t i, char *wm, int64_t *pos)
{
	if (data[i] & 1)
	{
		size_t		l = strlen(wm);

		if (l + 1 < ZS_WATERMARK_MAXLEN)
		{
			wm[l] = (char) ('0' + data[i] % 10);
			wm[l + 1] = '\0';
			*pos = 0;
		}
		else
			(*pos)++;
	}
	else
		*pos += 1 + data[i] / 2;
	return Min(data[i + 1] % 64, (int) (size - i));
}

/* the rows built from the input (below), read back: keys, changes, precommits */
static void
check_rows(const StringInfoData *raw, const uint8_t *data, size_t size, int nrows)
{
	ZsChunkReader r;
	const char *error = NULL;
	char		wm[ZS_WATERMARK_MAXLEN] = "0a";
	int64_t		pos = 0;
	int			n = 0;

	zs_chunk_reader_init(&r, raw->data, raw->len);
	for (size_t i = 0; i + 1 < size; i += 2)
	{
		int			len = next_row(data, size, i, wm, &pos);

		FUZZ_CHECK(zs_chunk_reader_next(&r, &error) == 1, "a built row reads back");
		FUZZ_CHECK(strcmp(r.watermark, wm) == 0 && r.pos == pos, "with its key");
		FUZZ_CHECK(r.change_len == len && memcmp(r.change, data + i, len) == 0, "and its change");
		if (data[i] & 2)
			FUZZ_CHECK(r.is_commit && strcmp(r.precommit, wm) == 0, "a commit's precommit");
		else if (data[i] & 4)
			FUZZ_CHECK(!r.is_commit && r.has_precommit && strcmp(r.precommit, "0z") == 0,
					   "another precommit");
		else
			FUZZ_CHECK(!r.has_precommit, "no precommit");
		n++;
	}
	FUZZ_CHECK(zs_chunk_reader_next(&r, &error) == 0 && n == nrows, "and nothing more");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	StringInfoData raw;
	const char *error = NULL;

	initStringInfo(&raw);
	if (zs_chunk_unpack((const char *) data, size, &raw, &error))
		read_all(raw.data, raw.len);
	else
		FUZZ_CHECK(error != NULL, "a failed unpack has a message");
	read_all((const char *) data, size);

	/* rows from the input: each byte pair a row (watermark step, change length) */
	{
		ZsChunkBuilder b;
		StringInfoData stored;
		char		wm[ZS_WATERMARK_MAXLEN] = "0a";
		int64_t		pos = 0;

		zs_chunk_builder_init(&b);
		for (size_t i = 0; i + 1 < size; i += 2)
		{
			int			len = next_row(data, size, i, wm, &pos);

			zs_chunk_builder_add(&b, wm, pos, (const char *) data + i, len,
								 (data[i] & 2) ? wm : (data[i] & 4) ? "0z" : NULL);
		}
		for (int c = ZS_CHUNK_NONE; c <= ZS_CHUNK_LZ4; c++)
		{
			initStringInfo(&stored);
			zs_chunk_pack(&b, (ZsChunkCompression) c, &stored);
			FUZZ_CHECK(zs_chunk_unpack(stored.data, stored.len, &raw, &error), "a packed chunk unpacks");
			FUZZ_CHECK(raw.len == b.raw.len && memcmp(raw.data, b.raw.data, raw.len) == 0,
					   "and gives its encoding back");
			check_rows(&raw, data, size, b.nrows);
			pfree(stored.data);
		}
		pfree(b.raw.data);
	}
	pfree(raw.data);
	return 0;
}
