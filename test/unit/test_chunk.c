/*
 * Unit tests for the change log's chunk format (src/codec/changelog_chunk.c):
 * rows round-trip byte for byte through every compression (keys, changes
 * with NULs and long texts, precommits of all three kinds), a chunk of
 * many rows compresses, and damaged chunks (truncated, a flipped byte, a
 * wrong length, an unknown format or method, rows out of order) are
 * errors, never rows; a flipped byte anywhere fails the checksum.
 */
#include "postgres_fe.h"

#include "codec/changelog_chunk.h"
#include "unit.h"

#define NROWS 300

static const char *
change_of(int i, StringInfo buf)
{
	resetStringInfo(buf);
	if (i % 100 == 0)
		appendStringInfoString(buf, "{\"tag\":\"begin\"}");
	else if (i % 100 == 99)
		appendStringInfoString(buf, "{\"tag\":\"commit\"}");
	else
	{
		appendStringInfo(buf, "{\"tag\":\"insert\",\"relation\":{\"schema\":\"public\",\"name\":\"items\","
						 "\"rowKey\":{\"columns\":[\"id\"],\"type\":\"default\"}},\"new\":{\"id\":%d,"
						 "\"v\":\"row %d\"}}", i, i);
		if (i == 7)
			appendBinaryStringInfo(buf, "\0nul", 4);
		if (i == 8)
			for (int k = 0; k < 5000; k++)
				appendStringInfoChar(buf, (char) ('a' + k % 26));
	}
	return buf->data;
}

static void
key_of(int i, char *watermark, int64_t *pos)
{
	/* three transactions of 100 rows; the second has a minor version */
	static const char *const wms[] = {"0a", "0b.01", "0c"};

	strcpy(watermark, wms[i / 100]);
	*pos = (i % 100) - (i / 100 == 2 ? 1 : 0);	/* one negative pos */
}

static void
build(ZsChunkBuilder *b)
{
	StringInfoData change;

	initStringInfo(&change);
	zs_chunk_builder_init(b);
	for (int i = 0; i < NROWS; i++)
	{
		char		wm[ZS_WATERMARK_MAXLEN];
		int64_t		pos;
		const char *precommit = NULL;

		key_of(i, wm, &pos);
		change_of(i, &change);
		if (i % 100 == 99)
			precommit = wm;
		else if (i == 150)
			precommit = "0b";	/* other than the watermark */
		zs_chunk_builder_add(b, wm, pos, change.data, change.len, precommit);
	}
	pfree(change.data);
}

static void
check_rows(const char *raw, size_t len, const char *what)
{
	ZsChunkReader r;
	StringInfoData change;
	const char *error = NULL;
	int			n = 0;
	int			rc;

	initStringInfo(&change);
	zs_chunk_reader_init(&r, raw, len);
	while ((rc = zs_chunk_reader_next(&r, &error)) == 1)
	{
		char		wm[ZS_WATERMARK_MAXLEN];
		int64_t		pos;

		key_of(n, wm, &pos);
		change_of(n, &change);
		CHECK(strcmp(r.watermark, wm) == 0 && r.pos == pos, "%s: row %d key %s/%lld", what, n,
			  r.watermark, (long long) r.pos);
		CHECK(r.change_len == change.len && memcmp(r.change, change.data, change.len) == 0,
			  "%s: row %d change", what, n);
		if (n % 100 == 99)
			CHECK(r.is_commit && r.has_precommit && strcmp(r.precommit, wm) == 0,
				  "%s: row %d is a commit", what, n);
		else if (n == 150)
			CHECK(!r.is_commit && r.has_precommit && strcmp(r.precommit, "0b") == 0,
				  "%s: row 150's precommit", what);
		else
			CHECK(!r.is_commit && !r.has_precommit, "%s: row %d has no precommit", what, n);
		n++;
	}
	CHECK(rc == 0, "%s: ends cleanly (%s)", what, error ? error : "");
	CHECK(n == NROWS, "%s: %d rows", what, n);
	pfree(change.data);
}

/* unpack must fail, or the rows must not parse: never NROWS good rows */
static void
check_damaged(const char *stored, size_t len, const char *what)
{
	StringInfoData raw;
	const char *error = NULL;

	initStringInfo(&raw);
	if (zs_chunk_unpack(stored, len, &raw, &error))
	{
		ZsChunkReader r;
		int			rc;
		int			n = 0;

		zs_chunk_reader_init(&r, raw.data, raw.len);
		while ((rc = zs_chunk_reader_next(&r, &error)) == 1)
			n++;
		CHECK(rc == -1 || n != NROWS, "%s: damage noticed", what);
	}
	else
		CHECK(error != NULL && error[0] != '\0', "%s: an error message", what);
	pfree(raw.data);
}

static void
round_trip(ZsChunkCompression compression, const char *what)
{
	ZsChunkBuilder b;
	StringInfoData stored;
	StringInfoData raw;
	const char *error = NULL;

	build(&b);
	CHECK(b.nrows == NROWS, "%s: builder counts rows", what);
	CHECK_STR(b.first_watermark, "0a");
	CHECK(b.first_pos == 0, "first pos");
	CHECK_STR(b.last_watermark, "0c");
	CHECK(b.last_pos == 98, "last pos %lld", (long long) b.last_pos);
	initStringInfo(&stored);
	appendStringInfoString(&stored, "prefix");	/* pack appends */
	zs_chunk_pack(&b, compression, &stored);
	if (compression != ZS_CHUNK_NONE)
		CHECK((size_t) stored.len - 6 < (size_t) b.raw.len / 4,
			  "%s compresses %d bytes to %d", what, b.raw.len, stored.len - 6);
	CHECK((unsigned char) stored.data[7] == (compression == ZS_CHUNK_LZ4 && !zs_chunk_lz4_available() ?
											 ZS_CHUNK_PGLZ : compression),
		  "%s: method byte %d", what, stored.data[7]);
	initStringInfo(&raw);
	CHECK(zs_chunk_unpack(stored.data + 6, stored.len - 6, &raw, &error), "%s unpacks: %s", what,
		  error ? error : "");
	CHECK(raw.len == b.raw.len && memcmp(raw.data, b.raw.data, raw.len) == 0,
		  "%s: the rows' encoding comes back", what);
	check_rows(raw.data, raw.len, what);

	/* damage */
	check_damaged(stored.data + 6, 5, "truncated header");
	check_damaged(stored.data + 6, stored.len - 7, "truncated body");
	for (int at = 8; at < stored.len - 6; at += 97)
	{
		char	   *copy = pnstrdup(stored.data + 6, stored.len - 6);

		/* the checksum catches what still decompresses and parses */
		copy[at] ^= 0x5A;
		{
			StringInfoData r2;
			const char *e2 = NULL;

			initStringInfo(&r2);
			CHECK(!zs_chunk_unpack(copy, stored.len - 6, &r2, &e2) && e2 != NULL,
				  "%s: a flipped byte at %d is an error", what, at);
			pfree(r2.data);
		}
		pfree(copy);
	}
	{
		char	   *copy = pnstrdup(stored.data + 6, stored.len - 6);

		copy[0] = 9;
		check_damaged(copy, stored.len - 6, "unknown format");
		copy[0] = ZS_CHUNK_FORMAT;
		copy[1] = 7;
		check_damaged(copy, stored.len - 6, "unknown method");
		copy[1] = stored.data[7];
		copy[4] ^= 1;
		check_damaged(copy, stored.len - 6, "a wrong stated length");
		pfree(copy);
	}
	pfree(stored.data);
	pfree(raw.data);
	pfree(b.raw.data);
}

static void
bad_rows(void)
{
	ZsChunkReader r;
	const char *error = NULL;
	/* flags, watermark "0b", pos 1 (zigzag 2), change "x"; then "0a" after it */
	static const char out_of_order[] = "\x02\x02" "0b" "\x02\x01x" "\x02\x02" "0a" "\x02\x01x";
	static const char same_key[] = "\x02\x02" "0b" "\x02\x01x" "\x00" "\x02\x01x";
	static const char no_first_wm[] = "\x00" "\x02\x01x";
	static const char long_change[] = "\x02\x02" "0b" "\x02\x7fx";
	static const char bad_flags[] = "\x42\x02" "0b" "\x02\x01x";
	static const char endless_varint[] = "\x02\x02" "0b" "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
	/* ten bytes whose last carries bits past the 64th */
	static const char wide_varint[] = "\x02\x02" "0b" "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02" "\x01x";
	/* ten bytes within 64 bits: the largest zigzag position, read */
	static const char max_varint[] = "\x02\x02" "0b" "\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01" "\x01x";

	zs_chunk_reader_init(&r, out_of_order, sizeof(out_of_order) - 1);
	CHECK(zs_chunk_reader_next(&r, &error) == 1, "first row");
	CHECK(zs_chunk_reader_next(&r, &error) == -1, "a row before the previous one");
	zs_chunk_reader_init(&r, same_key, sizeof(same_key) - 1);
	CHECK(zs_chunk_reader_next(&r, &error) == 1 && zs_chunk_reader_next(&r, &error) == -1,
		  "a repeated key");
	zs_chunk_reader_init(&r, no_first_wm, sizeof(no_first_wm) - 1);
	CHECK(zs_chunk_reader_next(&r, &error) == -1, "a first row without watermark");
	zs_chunk_reader_init(&r, long_change, sizeof(long_change) - 1);
	CHECK(zs_chunk_reader_next(&r, &error) == -1, "a change past the end");
	zs_chunk_reader_init(&r, bad_flags, sizeof(bad_flags) - 1);
	CHECK(zs_chunk_reader_next(&r, &error) == -1, "unknown flags");
	zs_chunk_reader_init(&r, endless_varint, sizeof(endless_varint) - 1);
	CHECK(zs_chunk_reader_next(&r, &error) == -1, "an 11-byte varint");
	zs_chunk_reader_init(&r, wide_varint, sizeof(wide_varint) - 1);
	CHECK(zs_chunk_reader_next(&r, &error) == -1, "a varint past 64 bits");
	zs_chunk_reader_init(&r, max_varint, sizeof(max_varint) - 1);
	CHECK(zs_chunk_reader_next(&r, &error) == 1 && r.pos == INT64_MAX, "the largest position, %lld",
		  (long long) r.pos);
	zs_chunk_reader_init(&r, "", 0);
	CHECK(zs_chunk_reader_next(&r, &error) == 0, "an empty chunk has no rows");
}

int
main(void)
{
	round_trip(ZS_CHUNK_NONE, "none");
	round_trip(ZS_CHUNK_PGLZ, "pglz");
	round_trip(ZS_CHUNK_LZ4, "lz4");
	bad_rows();
	CHECK(zs_chunk_key_cmp("0a", 5, "0a", 6) < 0 && zs_chunk_key_cmp("0b", 0, "0a", 6) > 0 &&
		  zs_chunk_key_cmp("0a", 6, "0a", 6) == 0, "key order");
	return unit_report("test_chunk");
}
