/*-------------------------------------------------------------------------
 * changelog_chunk.h
 *	  The change log's chunk: the rows of one or more consecutive
 *	  transactions, stored as one compressed value (docs/architecture.md,
 *	  "The chunked change log").
 *
 * A chunk's rows are what changeLog shows, one per change, in key order:
 * (watermark, pos, change, precommit). The stored value is a 12-byte
 * header, then the rows' encoding, compressed or not:
 *
 *	 byte 0      format (1)
 *	 byte 1      compression: 0 none, 1 pglz, 2 lz4
 *	 bytes 2-3   0
 *	 bytes 4-7   length of the rows' encoding, little-endian
 *	 bytes 8-11  CRC-32C of the rows' encoding, little-endian
 *
 * and each row is encoded as
 *
 *	 flags       1 byte: 1 commit (precommit = watermark), 2 a watermark
 *	             follows (else the previous row's), 4 a precommit other
 *	             than the watermark follows
 *	 watermark   1 length byte and the text, if flagged
 *	 pos         zigzag varint
 *	 change      varint length and the text
 *	 precommit   1 length byte and the text, if flagged
 *
 * Compiles as backend or frontend code; errors are returned, never thrown
 * (the fuzzer feeds the reader arbitrary bytes).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGELOG_CHUNK_H
#define ZS_CHANGELOG_CHUNK_H

#include <stdbool.h>
#include <stdint.h>

#include "codec/watermark.h"
#include "lib/stringinfo.h"

#define ZS_CHUNK_FORMAT 1
#define ZS_CHUNK_HEADER 12
/*
 * No chunk holds more than this encoded, nor is stored larger: a chunk,
 * decoded or stored, is one palloc (MaxAllocSize, 1 GB - 1) with room to
 * spare. The writer closes a chunk before a row would take it past its
 * size, so only a single change near 1 GB comes close.
 */
#define ZS_CHUNK_MAX_RAW (0x3FFFFFFF - 1024 * 1024)

typedef enum ZsChunkCompression
{
	ZS_CHUNK_NONE = 0,
	ZS_CHUNK_PGLZ = 1,
	ZS_CHUNK_LZ4 = 2
} ZsChunkCompression;

/* Whether this build can write and read chunks compressed with lz4. */
extern bool zs_chunk_lz4_available(void);

/* The rows of a chunk being built. */
typedef struct ZsChunkBuilder
{
	StringInfoData raw;			/* the rows' encoding */
	int			nrows;
	char		first_watermark[ZS_WATERMARK_MAXLEN];
	int64_t		first_pos;
	char		last_watermark[ZS_WATERMARK_MAXLEN];
	int64_t		last_pos;
} ZsChunkBuilder;

/* An empty builder (its buffer in the current memory context). */
extern void zs_chunk_builder_init(ZsChunkBuilder *b);
extern void zs_chunk_builder_reset(ZsChunkBuilder *b);

/*
 * Append a row; precommit NULL for none. Rows must come in key order
 * (the writer's); a watermark is at most ZS_WATERMARK_MAXLEN - 1 bytes.
 */
extern void zs_chunk_builder_add(ZsChunkBuilder *b, const char *watermark, int64_t pos,
								 const char *change, int change_len, const char *precommit);

/*
 * The stored value of the builder's rows, compressed with compression
 * (none if it would not shrink them), appended to out.
 */
extern void zs_chunk_pack(const ZsChunkBuilder *b, ZsChunkCompression compression,
						  StringInfo out);

/*
 * The rows' encoding of a stored value, into raw (reset first). False,
 * with error set to a static message, if the value is not a chunk of a
 * known format, does not decompress to its stated length or does not
 * match its checksum.
 */
extern bool zs_chunk_unpack(const char *stored, size_t len, StringInfo raw,
							const char **error);

/* Rows of an unpacked chunk, one after the other. */
typedef struct ZsChunkReader
{
	const char *data;
	size_t		len;
	size_t		off;
	int			nrows;			/* rows read so far */
	/* the current row: pointers into data, or into watermark[] */
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64_t		pos;
	const char *change;
	int			change_len;
	bool		is_commit;
	char		precommit[ZS_WATERMARK_MAXLEN];	/* "" for NULL */
	bool		has_precommit;
} ZsChunkReader;

extern void zs_chunk_reader_init(ZsChunkReader *r, const char *raw, size_t len);

/*
 * The next row into r: 1, 0 after the last, -1 (error set) if the encoding
 * is malformed. Rows must be in strictly increasing (watermark, pos) order,
 * watermarks in byte order.
 */
extern int	zs_chunk_reader_next(ZsChunkReader *r, const char **error);

/* strcmp-like order of two row keys */
extern int	zs_chunk_key_cmp(const char *w1, int64_t p1, const char *w2, int64_t p2);

#endif							/* ZS_CHANGELOG_CHUNK_H */
