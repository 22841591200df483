/*-------------------------------------------------------------------------
 * changelog_chunk.c
 *	  The change log's chunk format (see changelog_chunk.h): rows encoded
 *	  one after the other, compressed as a whole.
 *
 * A chunk's rows share most of their text (a row change repeats its
 * relation object, its column names, its watermark), so compressing them
 * together is what makes the log cheap: lz4, as PostgreSQL's
 * default_toast_compression = lz4 does, where the server was built with
 * it; pglz otherwise. The reader trusts nothing: lengths are checked
 * against what is left, the decompressed length against the header's, and
 * row keys must increase, so a damaged chunk is an error, never a row
 * read from the wrong place.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "common/pg_lzcompress.h"
#include "port/pg_crc32c.h"
#ifdef USE_LZ4
#include <lz4.h>
#endif

#include "codec/changelog_chunk.h"

#define ROW_COMMIT		0x01
#define ROW_WATERMARK	0x02
#define ROW_PRECOMMIT	0x04

bool
zs_chunk_lz4_available(void)
{
#ifdef USE_LZ4
	return true;
#else
	return false;
#endif
}

void
zs_chunk_builder_init(ZsChunkBuilder *b)
{
	initStringInfo(&b->raw);
	zs_chunk_builder_reset(b);
}

void
zs_chunk_builder_reset(ZsChunkBuilder *b)
{
	resetStringInfo(&b->raw);
	b->nrows = 0;
	b->first_watermark[0] = '\0';
	b->first_pos = 0;
	b->last_watermark[0] = '\0';
	b->last_pos = 0;
}

static void
append_varint(StringInfo out, uint64_t v)
{
	while (v >= 0x80)
	{
		appendStringInfoChar(out, (char) ((v & 0x7F) | 0x80));
		v >>= 7;
	}
	appendStringInfoChar(out, (char) v);
}

static void
append_short_text(StringInfo out, const char *s)
{
	size_t		len = strlen(s);

	Assert(len < ZS_WATERMARK_MAXLEN);
	appendStringInfoChar(out, (char) len);
	appendBinaryStringInfo(out, s, (int) len);
}

void
zs_chunk_builder_add(ZsChunkBuilder *b, const char *watermark, int64_t pos,
					 const char *change, int change_len, const char *precommit)
{
	bool		new_watermark = b->nrows == 0 || strcmp(watermark, b->last_watermark) != 0;
	bool		commit = precommit != NULL && strcmp(precommit, watermark) == 0;
	uint8_t		flags = 0;

	if (commit)
		flags |= ROW_COMMIT;
	if (new_watermark)
		flags |= ROW_WATERMARK;
	if (precommit != NULL && !commit)
		flags |= ROW_PRECOMMIT;
	appendStringInfoChar(&b->raw, (char) flags);
	if (new_watermark)
		append_short_text(&b->raw, watermark);
	/* zigzag: small magnitudes of either sign take one byte */
	append_varint(&b->raw, ((uint64_t) pos << 1) ^ (uint64_t) (pos >> 63));
	append_varint(&b->raw, (uint64_t) change_len);
	appendBinaryStringInfo(&b->raw, change, change_len);
	if (flags & ROW_PRECOMMIT)
		append_short_text(&b->raw, precommit);
	if (b->nrows == 0)
	{
		strlcpy(b->first_watermark, watermark, sizeof(b->first_watermark));
		b->first_pos = pos;
	}
	if (new_watermark)
		strlcpy(b->last_watermark, watermark, sizeof(b->last_watermark));
	b->last_pos = pos;
	b->nrows++;
}

static void
put_u32(char *p, uint32_t v)
{
	p[0] = (char) (v & 0xFF);
	p[1] = (char) ((v >> 8) & 0xFF);
	p[2] = (char) ((v >> 16) & 0xFF);
	p[3] = (char) ((v >> 24) & 0xFF);
}

static uint32_t
get_u32(const unsigned char *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) |
		((uint32_t) p[3] << 24);
}

/* CRC-32C of the rows' encoding, as PostgreSQL checks its WAL records */
static uint32_t
rows_crc(const char *raw, size_t len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, raw, len);
	FIN_CRC32C(crc);
	return (uint32_t) crc;
}

static void
put_header(char *h, ZsChunkCompression compression, const char *raw, uint32_t rawlen)
{
	h[0] = ZS_CHUNK_FORMAT;
	h[1] = (char) compression;
	h[2] = 0;
	h[3] = 0;
	put_u32(h + 4, rawlen);
	put_u32(h + 8, rows_crc(raw, rawlen));
}

void
zs_chunk_pack(const ZsChunkBuilder *b, ZsChunkCompression compression, StringInfo out)
{
	int			start = out->len;
	int			room;
	int			packed = -1;

	Assert(b->raw.len <= ZS_CHUNK_MAX_RAW);
#ifndef USE_LZ4
	if (compression == ZS_CHUNK_LZ4)
		compression = ZS_CHUNK_PGLZ;
#endif
	if (compression == ZS_CHUNK_PGLZ)
		room = PGLZ_MAX_OUTPUT(b->raw.len);
#ifdef USE_LZ4
	else if (compression == ZS_CHUNK_LZ4)
		room = LZ4_compressBound(b->raw.len);
#endif
	else
		room = 0;
	/* a compressed form that might not fit: stored as it is */
	if ((size_t) room + ZS_CHUNK_HEADER + out->len > ZS_CHUNK_MAX_RAW + 1024 * 1024 / 2)
		compression = ZS_CHUNK_NONE;
	enlargeStringInfo(out, ZS_CHUNK_HEADER + Max(compression == ZS_CHUNK_NONE ? 0 : room, b->raw.len));
	if (compression == ZS_CHUNK_PGLZ)
		packed = pglz_compress(b->raw.data, b->raw.len, out->data + start + ZS_CHUNK_HEADER,
							   PGLZ_strategy_default);
#ifdef USE_LZ4
	else if (compression == ZS_CHUNK_LZ4)
		packed = LZ4_compress_default(b->raw.data, out->data + start + ZS_CHUNK_HEADER,
									  b->raw.len, room);
#endif
	/* incompressible (or too small to try): stored as it is */
	if (packed <= 0 || packed >= b->raw.len)
	{
		compression = ZS_CHUNK_NONE;
		memcpy(out->data + start + ZS_CHUNK_HEADER, b->raw.data, b->raw.len);
		packed = b->raw.len;
	}
	put_header(out->data + start, compression, b->raw.data, (uint32_t) b->raw.len);
	out->len = start + ZS_CHUNK_HEADER + packed;
	out->data[out->len] = '\0';
}

bool
zs_chunk_unpack(const char *stored, size_t len, StringInfo raw, const char **error)
{
	const unsigned char *h = (const unsigned char *) stored;
	uint32_t	rawlen;
	const char *body = stored + ZS_CHUNK_HEADER;
	int			bodylen;
	int			got;

	resetStringInfo(raw);
	if (len < ZS_CHUNK_HEADER)
	{
		*error = "shorter than a chunk's header";
		return false;
	}
	if (h[0] != ZS_CHUNK_FORMAT || h[2] != 0 || h[3] != 0)
	{
		*error = "not a chunk of a format this version reads";
		return false;
	}
	rawlen = get_u32(h + 4);
	if (rawlen > ZS_CHUNK_MAX_RAW || len - ZS_CHUNK_HEADER > ZS_CHUNK_MAX_RAW + 1024 * 1024 / 2)
	{
		*error = "a chunk larger than any the writer makes";
		return false;
	}
	bodylen = (int) (len - ZS_CHUNK_HEADER);
	/*
	 * No method makes more than 255 bytes of one (lz4's bound; pglz's is
	 * lower): a damaged length does not make a reader allocate its claim.
	 */
	if ((uint64_t) rawlen > (uint64_t) bodylen * 255 + 64)
	{
		*error = "a chunk whose stated length no compression reaches from its size";
		return false;
	}
	switch (h[1])
	{
		case ZS_CHUNK_NONE:
			if ((uint32_t) bodylen != rawlen)
			{
				*error = "an uncompressed chunk whose length is not its header's";
				return false;
			}
			appendBinaryStringInfo(raw, body, bodylen);
			got = bodylen;
			break;
		case ZS_CHUNK_PGLZ:
			enlargeStringInfo(raw, (int) rawlen);
			got = pglz_decompress(body, bodylen, raw->data, (int32) rawlen, true);
			break;
		case ZS_CHUNK_LZ4:
#ifdef USE_LZ4
			enlargeStringInfo(raw, (int) rawlen);
			got = LZ4_decompress_safe(body, raw->data, bodylen, (int) rawlen);
			break;
#else
			*error = "a chunk compressed with lz4, which this build does not have";
			return false;
#endif
		default:
			*error = "a chunk of an unknown compression method";
			return false;
	}
	if (got < 0 || (uint32_t) got != rawlen)
	{
		*error = "a chunk that does not decompress to its stated length";
		resetStringInfo(raw);
		return false;
	}
	raw->len = got;
	raw->data[raw->len] = '\0';
	if (rows_crc(raw->data, raw->len) != get_u32(h + 8))
	{
		*error = "a chunk whose rows do not match its checksum";
		resetStringInfo(raw);
		return false;
	}
	return true;
}

void
zs_chunk_reader_init(ZsChunkReader *r, const char *raw, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->data = raw;
	r->len = len;
}

static bool
read_varint(ZsChunkReader *r, uint64_t *v)
{
	uint64_t	result = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		uint8_t		byte;

		if (r->off >= r->len)
			return false;
		byte = (uint8_t) r->data[r->off++];
		if (shift == 63 && byte > 1)
			return false;
		result |= (uint64_t) (byte & 0x7F) << shift;
		if ((byte & 0x80) == 0)
		{
			*v = result;
			return true;
		}
	}
	return false;
}

static bool
read_short_text(ZsChunkReader *r, char *out)
{
	uint8_t		len;

	if (r->off >= r->len)
		return false;
	len = (uint8_t) r->data[r->off++];
	if (len >= ZS_WATERMARK_MAXLEN || len > r->len - r->off)
		return false;
	memcpy(out, r->data + r->off, len);
	out[len] = '\0';
	/* a text is stored without NULs */
	if (strlen(out) != len)
		return false;
	r->off += len;
	return true;
}

int
zs_chunk_key_cmp(const char *w1, int64_t p1, const char *w2, int64_t p2)
{
	int			c = strcmp(w1, w2);

	if (c != 0)
		return c;
	return p1 < p2 ? -1 : p1 > p2 ? 1 : 0;
}

int
zs_chunk_reader_next(ZsChunkReader *r, const char **error)
{
	uint8_t		flags;
	uint64_t	zz;
	uint64_t	len;
	char		prev_watermark[ZS_WATERMARK_MAXLEN];
	int64_t		prev_pos = r->pos;

	if (r->off >= r->len)
		return 0;
	strlcpy(prev_watermark, r->watermark, sizeof(prev_watermark));
	flags = (uint8_t) r->data[r->off++];
	if ((flags & ~(ROW_COMMIT | ROW_WATERMARK | ROW_PRECOMMIT)) != 0 ||
		((flags & ROW_COMMIT) && (flags & ROW_PRECOMMIT)))
	{
		*error = "a row with unknown flags";
		return -1;
	}
	if (r->nrows == 0 && !(flags & ROW_WATERMARK))
	{
		*error = "a first row without a watermark";
		return -1;
	}
	if ((flags & ROW_WATERMARK) && !read_short_text(r, r->watermark))
	{
		*error = "a row whose watermark runs past the chunk";
		return -1;
	}
	if (!read_varint(r, &zz))
	{
		*error = "a row whose position runs past the chunk";
		return -1;
	}
	r->pos = (int64_t) (zz >> 1) ^ -(int64_t) (zz & 1);
	if (!read_varint(r, &len) || len > r->len - r->off || len > (uint64_t) INT32_MAX)
	{
		*error = "a row whose change runs past the chunk";
		return -1;
	}
	r->change = r->data + r->off;
	r->change_len = (int) len;
	r->off += len;
	r->is_commit = (flags & ROW_COMMIT) != 0;
	r->has_precommit = (flags & (ROW_COMMIT | ROW_PRECOMMIT)) != 0;
	if (flags & ROW_PRECOMMIT)
	{
		if (!read_short_text(r, r->precommit))
		{
			*error = "a row whose precommit runs past the chunk";
			return -1;
		}
	}
	else if (r->is_commit)
		strlcpy(r->precommit, r->watermark, sizeof(r->precommit));
	else
		r->precommit[0] = '\0';
	if (r->nrows > 0 && zs_chunk_key_cmp(prev_watermark, prev_pos, r->watermark, r->pos) >= 0)
	{
		*error = "rows out of key order";
		return -1;
	}
	r->nrows++;
	return 1;
}
