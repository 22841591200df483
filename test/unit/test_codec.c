/*
 * Unit tests for the change-log codec (docs/zero-protocol.md §3.6, zero-cache's
 * change-log-codec.test.ts fixtures): every kind of stored change rebuilds
 * to the exact wire message, bigints, NUL, quotes, backslashes and unicode
 * untouched, and classification by the leading tag only.
 */
#include "postgres_fe.h"

#include "codec/change_message.h"
#include "unit.h"

static void
check(const char *watermark, const char *change, ZsMessageType type, const char *expected)
{
	StringInfoData out;

	initStringInfo(&out);
	CHECK(zs_change_message_append(&out, watermark, change, (int) strlen(change)) == type,
		  "type of %s", change);
	CHECK_STR(out.data, expected);
	pfree(out.data);
}

int
main(void)
{
	check("718sh0nk8", "{\"tag\":\"begin\",\"json\":\"s\",\"skipAck\":true}", ZS_MSG_BEGIN,
		  "[\"begin\",{\"tag\":\"begin\",\"json\":\"s\",\"skipAck\":true},{\"commitWatermark\":\"718sh0nk8\"}]");
	check("718sh0nk8", "{\"tag\":\"begin\"}", ZS_MSG_BEGIN,
		  "[\"begin\",{\"tag\":\"begin\"},{\"commitWatermark\":\"718sh0nk8\"}]");
	check("718sh0nk8",
		  "{\"tag\":\"insert\",\"relation\":{\"schema\":\"public\",\"name\":\"foo\",\"rowKey\":{\"columns\":[\"id\"]}},"
		  "\"new\":{\"id\":9007199254740993,\"nested\":{\"big\":-9007199254740994},"
		  "\"escapedNul\":\"before\\u0000after\",\"quotes\":\"\\\"q\\\" \\\\b\",\"unicode\":\"\xc3\xa9\xf0\x9f\x98\x80\","
		  "\"empty\":{},\"list\":[]}}",
		  ZS_MSG_DATA,
		  "[\"data\",{\"tag\":\"insert\",\"relation\":{\"schema\":\"public\",\"name\":\"foo\",\"rowKey\":{\"columns\":[\"id\"]}},"
		  "\"new\":{\"id\":9007199254740993,\"nested\":{\"big\":-9007199254740994},"
		  "\"escapedNul\":\"before\\u0000after\",\"quotes\":\"\\\"q\\\" \\\\b\",\"unicode\":\"\xc3\xa9\xf0\x9f\x98\x80\","
		  "\"empty\":{},\"list\":[]}}]");
	check("0a", "{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"t\"},\"column\":{\"name\":\"c\",\"spec\":{\"pos\":2,\"dataType\":\"text\"}}}",
		  ZS_MSG_DATA,
		  "[\"data\",{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"t\"},\"column\":{\"name\":\"c\",\"spec\":{\"pos\":2,\"dataType\":\"text\"}}}]");
	check("0a", "{\"tag\":\"truncate\",\"relations\":[{\"schema\":\"public\",\"name\":\"t\"}]}", ZS_MSG_DATA,
		  "[\"data\",{\"tag\":\"truncate\",\"relations\":[{\"schema\":\"public\",\"name\":\"t\"}]}]");
	check("0a", "{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"t\",\"rowKey\":{\"columns\":[\"id\"]}},"
		  "\"columns\":[\"c\"],\"watermark\":\"0a\",\"rowValues\":[[12345678901234567890,\"x\"]]}",
		  ZS_MSG_DATA,
		  "[\"data\",{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"t\",\"rowKey\":{\"columns\":[\"id\"]}},"
		  "\"columns\":[\"c\"],\"watermark\":\"0a\",\"rowValues\":[[12345678901234567890,\"x\"]]}]");
	check("0b", "{\"tag\":\"commit\",\"flags\":0,\"commitLsn\":\"00000000/0000000B\",\"commitTimeMs\":1}", ZS_MSG_COMMIT,
		  "[\"commit\",{\"tag\":\"commit\",\"flags\":0,\"commitLsn\":\"00000000/0000000B\",\"commitTimeMs\":1},{\"watermark\":\"0b\"}]");
	check("0b", "{\"tag\":\"commit\"}", ZS_MSG_COMMIT,
		  "[\"commit\",{\"tag\":\"commit\"},{\"watermark\":\"0b\"}]");
	check("0b", "{\"tag\":\"rollback\"}", ZS_MSG_ROLLBACK, "[\"rollback\",{\"tag\":\"rollback\"}]");

	/* only the leading tag counts: a value that looks like a begin is data */
	check("0c", "{\"tag\":\"insert\",\"new\":{\"v\":\"{\\\"tag\\\":\\\"begin\\\"\"}}", ZS_MSG_DATA,
		  "[\"data\",{\"tag\":\"insert\",\"new\":{\"v\":\"{\\\"tag\\\":\\\"begin\\\"\"}}]");
	/* tags that merely start like one of ours */
	CHECK(zs_change_message_type("{\"tag\":\"beginning\"}", 19) == ZS_MSG_DATA,
		  "a tag that only starts like begin is data");
	CHECK(zs_change_message_type("{\"tag\":\"commi", 13) == ZS_MSG_DATA, "truncated tag is data");
	CHECK(zs_change_message_type("", 0) == ZS_MSG_DATA, "empty is data");

	return unit_report("test_codec");
}
