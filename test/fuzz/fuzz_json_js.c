/*-------------------------------------------------------------------------
 * fuzz_json_js.c
 *	  libFuzzer target for src/codec/json_js.c: any bytes as a JSON text to
 *	  re-write as JavaScript's BigIntJSON.stringify(BigIntJSON.parse(text)).
 *
 * It must succeed exactly when the exact reader accepts the text, and then
 * write one JSON value that the reader accepts. For UTF-8 input (all that
 * PostgreSQL's json type holds) the output is UTF-8 too, and a fixed point:
 * re-writing it changes nothing, as JavaScript's own parse and stringify
 * of its output would not. Containers keep their number of elements, and
 * objects never gain members.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "mb/pg_wchar.h"

#include "codec/json_js.h"
#include "codec/json_read.h"
#include "fuzz.h"

static ZsJsonDoc in_doc;
static ZsJsonDoc out_doc;
static bool ready = false;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *) data;
	StringInfoData out,
				again;
	bool		ok;
	bool		parses;
	bool		utf8;

	if (!ready)
	{
		zs_json_doc_init(&in_doc);
		zs_json_doc_init(&out_doc);
		ready = true;
	}
	initStringInfo(&out);
	ok = zs_json_append_js_reparsed(&out, text, (int) size);
	parses = zs_json_parse(&in_doc, text, (int) size);
	FUZZ_CHECK(ok == parses, "re-writes exactly what the reader accepts");
	if (!ok)
	{
		pfree(out.data);
		return 0;
	}

	FUZZ_CHECK(zs_json_parse(&out_doc, out.data, out.len), "the output is JSON");
	FUZZ_CHECK(out_doc.nodes[0].type == in_doc.nodes[0].type ||
			   (in_doc.nodes[0].type == ZS_JSON_NUMBER && out_doc.nodes[0].type == ZS_JSON_NULL),
			   "the root keeps its type (a number may become null)");
	FUZZ_CHECK(out_doc.nnodes <= in_doc.nnodes, "no values are added");
	if (in_doc.nodes[0].type == ZS_JSON_ARRAY)
		FUZZ_CHECK(out_doc.nodes[0].count == in_doc.nodes[0].count, "an array keeps its length");
	if (in_doc.nodes[0].type == ZS_JSON_OBJECT)
		FUZZ_CHECK(out_doc.nodes[0].count <= in_doc.nodes[0].count, "an object gains no members");

	utf8 = pg_encoding_verifymbstr(PG_UTF8, text, (int) size) == (int) size;
	if (utf8)
	{
		FUZZ_CHECK(pg_encoding_verifymbstr(PG_UTF8, out.data, out.len) == out.len,
				   "UTF-8 in, UTF-8 out");
		initStringInfo(&again);
		FUZZ_CHECK(zs_json_append_js_reparsed(&again, out.data, out.len), "the output re-writes");
		FUZZ_CHECK(again.len == out.len && memcmp(again.data, out.data, out.len) == 0,
				   "re-writing the output changes nothing");
		pfree(again.data);
	}
	pfree(out.data);
	return 0;
}
