/*
 * Unit tests for lexi-version watermarks: the worked examples of
 * docs/zero-protocol.md §4.2 (zero-cache's lsn.test.ts and lexi-version.ts
 * fixtures), ordering, and rejection of malformed input.
 */
#include "postgres_fe.h"

#include "codec/watermark.h"
#include "unit.h"

static void
check_encode(uint64_t value, const char *expected)
{
	char		buf[ZS_WATERMARK_MAXLEN];
	uint64_t	back = 0;

	zs_watermark_encode(value, buf);
	CHECK_STR(buf, expected);
	CHECK(zs_watermark_decode(buf, &back) && back == value,
		  "decode(%s) does not round-trip", buf);
}

int
main(void)
{
	char		a[ZS_WATERMARK_MAXLEN];
	char		b[ZS_WATERMARK_MAXLEN];
	char		lsn[32];
	uint64_t	v;

	check_encode(0, "00");
	check_encode(10, "0a");
	check_encode(35, "0z");
	check_encode(36, "110");
	check_encode(46655, "2zzz");
	check_encode(16777216, "49zlds");
	check_encode(4294967296ULL, "61z141z4");
	check_encode((0x16ULL << 32) + 0xB374D848ULL, "718sh0nk8");
	check_encode(UINT64_MAX, "c3w5e11264sgsf");

	/* byte order equals numeric order across length changes */
	for (uint64_t x = 1; x < (1ULL << 62); x = x * 7 + 3)
	{
		zs_watermark_encode(x, a);
		zs_watermark_encode(x + 1, b);
		CHECK(strcmp(a, b) < 0, "%s !< %s", a, b);
	}

	/* minor versions (backfills) decode their major part */
	CHECK(zs_watermark_decode("718sh0nk8.01", &v) && v == (0x16ULL << 32) + 0xB374D848ULL,
		  "major part of a minor version");

	/* the state versions of backfill transactions (zero's stateVersionToString) */
	CHECK(zs_watermark_next_minor("61aiujf4", a), "next minor of a major");
	CHECK_STR(a, "61aiujf4.01");
	CHECK(zs_watermark_next_minor("61aiujf4.01", a), "next minor of a minor");
	CHECK_STR(a, "61aiujf4.02");
	CHECK(zs_watermark_next_minor("61aiujf4.0z", a), "minor 35 -> 36");
	CHECK_STR(a, "61aiujf4.110");
	CHECK(strcmp("61aiujf4.0z", a) < 0 && strcmp(a, "61aiujf5") < 0,
		  "minors sort after their major and before the next");
	zs_watermark_encode(UINT64_MAX, b);
	CHECK(zs_watermark_next_minor(b, a) && strlen(a) < ZS_WATERMARK_MAXLEN,
		  "the longest major with a minor fits");
	CHECK(!zs_watermark_next_minor("", a), "empty");
	CHECK(!zs_watermark_next_minor("61aiujf4.", a), "empty minor");
	CHECK(!zs_watermark_next_minor("61aiujf4.01.01", a), "two minors");
	CHECK(!zs_watermark_next_minor("61aiujf4.x", a), "malformed minor");
	CHECK(!zs_watermark_next_minor("6zzz", a), "malformed major");

	/* malformed */
	CHECK(!zs_watermark_decode("", &v), "empty");
	CHECK(!zs_watermark_decode("0", &v), "prefix only");
	CHECK(!zs_watermark_decode("1a", &v), "prefix says 2 digits, has 1");
	CHECK(!zs_watermark_decode("0A", &v), "upper case");
	CHECK(!zs_watermark_decode("10a", &v), "leading zero digit");
	CHECK(!zs_watermark_decode("0-", &v), "bad digit");
	CHECK(!zs_watermark_decode("dzzzzzzzzzzzzzz", &v), "too long");
	CHECK(!zs_watermark_decode("czzzzzzzzzzzzz", &v), "overflows 64 bits");

	zs_lsn_format((0x16ULL << 32) + 0xB374D848ULL, lsn);
	CHECK_STR(lsn, "00000016/B374D848");
	zs_lsn_format(0, lsn);
	CHECK_STR(lsn, "00000000/00000000");

	return unit_report("test_watermark");
}
