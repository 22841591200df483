/*-------------------------------------------------------------------------
 * fuzz_watermark.c
 *	  libFuzzer target for src/codec/watermark.c.
 *
 * The input as a watermark text: what decodes must encode back to the same
 * text (the encoding is canonical; a ".minor" suffix is ignored). The input's
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
	uint64_t	value;

	if (zs_watermark_decode(text, &value))
	{
		char		again[ZS_WATERMARK_MAXLEN];
		size_t		major = strcspn(text, ".");

		zs_watermark_encode(value, again);
		FUZZ_CHECK(strlen(again) == major && memcmp(again, text, major) == 0,
				   "a decoded watermark encodes back to its text");
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
