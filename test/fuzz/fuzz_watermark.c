/*-------------------------------------------------------------------------
 * fuzz_watermark.c
 *	  libFuzzer target for src/codec/watermark.c.
 *
 * The input as a watermark text: what decodes must encode back to the same
 * text (the encoding is canonical; a ".minor" suffix is ignored), and the
 * state version after it (zs_watermark_next_minor) keeps its major part,
 * counts its minor up by one and sorts after it. The input's
 * first 16 bytes as two numbers: encode/decode round trip, byte order equal
 * to numeric order, and zs_lsn_format's "XXXXXXXX/XXXXXXXX".
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "codec/watermark.h"
#include "fuzz.h"

static uint64_t
read_u64(const uint8_t *p)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static void
check_number(uint64_t v)
{
	char		text[ZS_WATERMARK_MAXLEN];
	char		lsn[18];
	uint64_t	back;
	unsigned int hi,
				lo;

	zs_watermark_encode(v, text);
	FUZZ_CHECK(strlen(text) < ZS_WATERMARK_MAXLEN, "encoding fits its buffer");
	FUZZ_CHECK(zs_watermark_decode(text, &back) && back == v, "encode/decode round trip");

	zs_lsn_format(v, lsn);
	FUZZ_CHECK(strlen(lsn) == 17 && lsn[8] == '/', "LSN format");
	FUZZ_CHECK(sscanf(lsn, "%8X/%8X", &hi, &lo) == 2 &&
			   (((uint64_t) hi << 32) | lo) == v, "LSN format reads back");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text = pnstrdup((const char *) data, size);	/* stops at a NUL */
	char		next[ZS_WATERMARK_MAXLEN];
	uint64_t	value;

	if (zs_watermark_decode(text, &value))
	{
		char		again[ZS_WATERMARK_MAXLEN];
		size_t		major = strcspn(text, ".");

		zs_watermark_encode(value, again);
		FUZZ_CHECK(strlen(again) == major && memcmp(again, text, major) == 0,
				   "a decoded watermark encodes back to its text");
	}
	if (zs_watermark_next_minor(text, next))
	{
		size_t		major = strcspn(text, ".");
		const char *dot = strchr(text, '.');
		uint64_t	minor = 0;
		uint64_t	next_minor;

		FUZZ_CHECK(strlen(next) < ZS_WATERMARK_MAXLEN, "the next version fits its buffer");
		FUZZ_CHECK(zs_watermark_decode(text, &value), "its major part is a watermark");
		FUZZ_CHECK(strncmp(next, text, major) == 0 && next[major] == '.',
				   "the next version keeps the major part");
		FUZZ_CHECK(dot == NULL || zs_watermark_decode(dot + 1, &minor), "the minor part");
		FUZZ_CHECK(zs_watermark_decode(next + major + 1, &next_minor) &&
				   next_minor == minor + 1, "the next minor is one more");
		FUZZ_CHECK(strcmp(text, next) < 0, "the next version sorts after");
	}
	pfree(text);

	if (size >= 16)
	{
		uint64_t	a = read_u64(data);
		uint64_t	b = read_u64(data + 8);
		char		ta[ZS_WATERMARK_MAXLEN];
		char		tb[ZS_WATERMARK_MAXLEN];
		int			cmp;

		check_number(a);
		check_number(b);
		zs_watermark_encode(a, ta);
		zs_watermark_encode(b, tb);
		cmp = strcmp(ta, tb);
		FUZZ_CHECK((a < b && cmp < 0) || (a == b && cmp == 0) || (a > b && cmp > 0),
				   "byte order is numeric order");
	}
	return 0;
}
