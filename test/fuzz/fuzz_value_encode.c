/*-------------------------------------------------------------------------
 * fuzz_value_encode.c
 *	  libFuzzer target for src/decoding/value_encode.c: any text as a column
 *	  value of every kind, as a scalar and as an array.
 *
 * Input: one byte choosing the kind (low nibble), array or scalar (bit 4)
 * and the array delimiter (bit 5: ';' as box[] uses, else ','), then the
 * value's text. Whatever zs_value_append or zs_value_append_array accepts must be
 * exactly one JSON value (checked with the exact reader), appended after
 * what the buffer held; strings must decode back to the text; UTF-8 text
 * must give UTF-8 JSON.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "mb/pg_wchar.h"

#include "codec/json_read.h"
#include "decoding/value_encode.h"
#include "fuzz.h"

#define NKINDS (ZS_KIND_BYTEA + 1)

static ZsJsonDoc doc;
static bool ready = false;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ZsValueKind kind;
	bool		array;
	char		delim;
	const char *text;
	int			len;
	StringInfoData out;
	const char *json;
	int			json_len;
	bool		ok;

	if (size < 1)
		return 0;
	if (!ready)
	{
		zs_json_doc_init(&doc);
		ready = true;
	}
	kind = (ZsValueKind) ((data[0] & 0x0F) % NKINDS);
	array = (data[0] & 0x10) != 0;
	delim = (data[0] & 0x20) ? ';' : ',';
	text = (const char *) data + 1;
	len = (int) size - 1;

	/* appended after other output, as a row is built */
	initStringInfo(&out);
	appendStringInfoString(&out, "[0,");
	if (array)
		ok = zs_value_append_array(&out, kind, delim, text, len);
	else
		ok = zs_value_append(&out, kind, text, len);
	if (!ok)
	{
		pfree(out.data);
		return 0;
	}
	FUZZ_CHECK(memcmp(out.data, "[0,", 3) == 0, "what was in the buffer is kept");
	json = out.data + 3;
	json_len = out.len - 3;
	if (!zs_json_parse(&doc, json, json_len))
	{
		fprintf(stderr, "kind %d%s: <%.*s> -> <%.*s>: %s\n", (int) kind, array ? " array" : "",
				len, text, json_len, json, doc.error);
		FUZZ_CHECK(false, "an accepted value is one JSON value");
	}
	FUZZ_CHECK(doc.nodes[0].raw_start == 0 && doc.nodes[0].raw_len == json_len,
			   "no whitespace around the value");

	if (array)
		FUZZ_CHECK(doc.nodes[0].type == ZS_JSON_ARRAY, "an array is a JSON array");
	else
	{
		switch (kind)
		{
			case ZS_KIND_STRING:
			case ZS_KIND_JSON_TEXT:
				FUZZ_CHECK(doc.nodes[0].type == ZS_JSON_STRING &&
						   doc.nodes[0].str_len == len &&
						   memcmp(zs_json_str(&doc, 0), text, len) == 0,
						   "a string decodes back to the text");
				break;
			case ZS_KIND_INTEGER:
				FUZZ_CHECK(doc.nodes[0].type == ZS_JSON_NUMBER && json_len == len &&
						   memcmp(json, text, len) == 0, "an integer is copied");
				break;
			case ZS_KIND_BOOL:
				FUZZ_CHECK(doc.nodes[0].type == ZS_JSON_TRUE || doc.nodes[0].type == ZS_JSON_FALSE,
						   "a bool is true or false");
				break;
			case ZS_KIND_FLOAT:
			case ZS_KIND_NUMERIC:
			case ZS_KIND_TIMESTAMP:
			case ZS_KIND_DATE:
				FUZZ_CHECK(doc.nodes[0].type == ZS_JSON_NUMBER || doc.nodes[0].type == ZS_JSON_NULL,
						   "a number or null");
				break;
			case ZS_KIND_TIME:
			case ZS_KIND_TIMETZ:
				{
					int64		ms;

					/*
					 * Not necessarily within a day: the parser takes any two
					 * digits for the hours and the zone, beyond what
					 * PostgreSQL writes
					 */
					FUZZ_CHECK(zs_json_int64(&doc, 0, &ms), "a time is an integer");
					break;
				}
			case ZS_KIND_BYTEA:
				FUZZ_CHECK(doc.nodes[0].type == ZS_JSON_OBJECT &&
						   zs_json_str_eq(&doc, zs_json_get(&doc, 0, "type"), "Buffer") &&
						   doc.nodes[zs_json_get(&doc, 0, "data")].count == (len - 2) / 2,
						   "a bytea is a Buffer of its bytes");
				break;
			case ZS_KIND_JSON_PARSED:
				break;
		}
	}
	if (pg_encoding_verifymbstr(PG_UTF8, text, len) == len)
		FUZZ_CHECK(pg_encoding_verifymbstr(PG_UTF8, json, json_len) == json_len,
				   "UTF-8 text gives UTF-8 JSON");
	pfree(out.data);
	return 0;
}
