/*-------------------------------------------------------------------------
 * replica_test_json_read.c
 *	  Unit tests of the JSON reader the replica library parses changes with
 *	  (src/codec/json_read.c): values, numbers and their limits, malformed
 *	  input, nesting without recursion, deferred members and the cache of
 *	  the last deferred text, unpaired surrogates.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "replica_test.h"

void
test_json_reader(void)
{
	int64		v;
	int			n;
	const char *bad[] = {"", "{", "[1,]", "{\"a\"}", "{\"a\":1,}", "01", "1.", "-", "1e", "tru",
		"\"\\x\"", "\"a\nb\"", "[1] x", "\"abc", "{1:2}", NULL};

	const char *text = " {\"a\" : [1, -0.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"b\":{}} ";

	CHECK(zs_json_parse(&rt_doc, text, strlen(text)), "parse: %s", rt_doc.error);
	n = zs_json_get(&rt_doc, 0, "a");
	CHECK(n > 0 && rt_doc.nodes[n].count == 6, "array count");
	CHECK_STR(zs_json_str(&rt_doc, zs_json_at(&rt_doc, n, 5)), "x\xc3\xa9\xf0\x9f\x98\x80\n");
	CHECK(rt_doc.nodes[zs_json_at(&rt_doc, n, 1)].raw_len == 6, "raw number text");
	CHECK(zs_json_double(&rt_doc, zs_json_at(&rt_doc, n, 1)) == -500.0, "double");
	CHECK(zs_json_get(&rt_doc, 0, "c") == -1, "missing key");
	CHECK(rt_doc.nodes[zs_json_get(&rt_doc, 0, "b")].type == ZS_JSON_OBJECT, "empty object");

	CHECK(zs_json_parse(&rt_doc, "[9223372036854775807,-9223372036854775808,9223372036854775808,9007199254740993,1.0]", 83), "ints");
	CHECK(zs_json_int64(&rt_doc, zs_json_at(&rt_doc, 0, 0), &v) && v == INT64_MAX, "int64 max");
	CHECK(zs_json_int64(&rt_doc, zs_json_at(&rt_doc, 0, 1), &v) && v == INT64_MIN, "int64 min");
	CHECK(!zs_json_int64(&rt_doc, zs_json_at(&rt_doc, 0, 2), &v), "beyond int64 is not an integer");
	CHECK(zs_json_int64(&rt_doc, zs_json_at(&rt_doc, 0, 3), &v) && v == 9007199254740993LL, "2^53+1 exact");
	CHECK(!zs_json_int64(&rt_doc, zs_json_at(&rt_doc, 0, 4), &v), "1.0 is not read as an integer");

	for (int i = 0; bad[i]; i++)
		CHECK(!zs_json_parse(&rt_doc, bad[i], strlen(bad[i])) && rt_doc.error[0], "rejects <%s>", bad[i]);
	{
		/* any depth is read without recursion; unterminated is an error */
		int			depth = 200000;
		char	   *deep = malloc(2 * depth + 1);

		memset(deep, '[', depth);
		memset(deep + depth, ']', depth);
		CHECK(zs_json_parse(&rt_doc, deep, 2 * depth), "nesting %d deep: %s", depth, rt_doc.error);
		CHECK(rt_doc.nnodes == depth && rt_doc.nodes[depth - 1].raw_len == 2, "deep nodes");
		CHECK(!zs_json_parse(&rt_doc, deep, 2 * depth - 1), "unterminated deep array rejected");
		CHECK(strstr(rt_doc.error, "unterminated array") != NULL, "error: %s", rt_doc.error);
		free(deep);
	}
	{
		/* a deferred member: its whole text, strings with brackets and quotes in it included */
		const char *change = "{\"tag\":\"x\",\"relation\":{\"s\":\"a\\\"}]\",\"n\":[1,{\"q\":2}]},"
			"\"new\":{\"relation\":{\"z\":1}}}";
		int			rel,
					row;

		CHECK(zs_json_parse_deferring(&rt_doc, change, strlen(change), "relation"), "deferring: %s", rt_doc.error);
		rel = zs_json_get(&rt_doc, 0, "relation");
		CHECK(rel > 0 && rt_doc.nodes[rel].deferred && rt_doc.nodes[rel].count == 0, "relation deferred");
		CHECK(rt_doc.nodes[rel].raw_len == (int) strlen("{\"s\":\"a\\\"}]\",\"n\":[1,{\"q\":2}]}") && strncmp(zs_json_raw(&rt_doc, rel), "{\"s\":\"a\\\"}]\",\"n\":[1,{\"q\":2}]}", rt_doc.nodes[rel].raw_len) == 0,
			  "deferred text <%.*s>", rt_doc.nodes[rel].raw_len, zs_json_raw(&rt_doc, rel));
		row = zs_json_get(&rt_doc, 0, "new");
		CHECK(row > 0 && !rt_doc.nodes[zs_json_get(&rt_doc, row, "relation")].deferred, "only the root's member is deferred");
		CHECK(!zs_json_parse_deferring(&rt_doc, change, 30, "relation") && strstr(rt_doc.error, "unterminated") != NULL,
			  "an unterminated deferred member: %s", rt_doc.error);
	}
	{
		/*
		 * The doc keeps the last deferred text and steps over the same
		 * bytes by comparing them: the same relation again, one that starts
		 * alike and goes on, one cut inside the kept text, one that ends
		 * right after it, and a row that is no object.
		 */
		const char *rel1 = "{\"s\":\"a}\",\"n\":[1]}";
		const char *cases[][2] = {
			{"{\"relation\":{\"s\":\"a}\",\"n\":[1]},\"new\":{\"id\":1}}", "{\"s\":\"a}\",\"n\":[1]}"},
			{"{\"relation\":{\"s\":\"a}\",\"n\":[1]},\"new\":{\"id\":2}}", "{\"s\":\"a}\",\"n\":[1]}"},
			{"{\"relation\":{\"s\":\"a}\",\"n\":[1],\"m\":{\"k\":[]}},\"new\":{\"id\":3}}", "{\"s\":\"a}\",\"n\":[1],\"m\":{\"k\":[]}}"},
			{"{\"relation\":{\"s\":\"a}\",\"n\":[1]},\"new\":{\"id\":4}}", "{\"s\":\"a}\",\"n\":[1]}"},
		};

		for (int i = 0; i < (int) lengthof(cases); i++)
		{
			int			rel;

			CHECK(zs_json_parse_deferring(&rt_doc, cases[i][0], strlen(cases[i][0]), "relation"),
				  "case %d: %s", i, rt_doc.error);
			rel = zs_json_get(&rt_doc, 0, "relation");
			CHECK(rel > 0 && rt_doc.nodes[rel].deferred &&
				  rt_doc.nodes[rel].raw_len == (int) strlen(cases[i][1]) &&
				  strncmp(zs_json_raw(&rt_doc, rel), cases[i][1], rt_doc.nodes[rel].raw_len) == 0,
				  "case %d: deferred text <%.*s>", i, rel > 0 ? rt_doc.nodes[rel].raw_len : 0,
				  rel > 0 ? zs_json_raw(&rt_doc, rel) : "");
			CHECK(zs_json_get(&rt_doc, zs_json_get(&rt_doc, 0, "new"), "id") > 0, "case %d: the row after it", i);
		}
		/* rel1 is kept: cut inside it, and cut right after it */
		CHECK(!zs_json_parse_deferring(&rt_doc, cases[0][0], 20, "relation") &&
			  strstr(rt_doc.error, "unterminated") != NULL && strstr(rt_doc.error, "offset ") != NULL &&
			  atoi(strstr(rt_doc.error, "offset ") + 7) <= 20,
			  "cut inside the kept text: %s", rt_doc.error);
		CHECK(!zs_json_parse_deferring(&rt_doc, cases[0][0], 12 + strlen(rel1), "relation") &&
			  strstr(rt_doc.error, "unterminated object") != NULL, "cut after the kept text: %s", rt_doc.error);
		CHECK(zs_json_parse_deferring(&rt_doc, "{\"relation\":[1],\"x\":2}", 22, "relation") &&
			  !rt_doc.nodes[zs_json_get(&rt_doc, 0, "relation")].deferred, "an array is read, not deferred");
	}
	/* unpaired surrogates, which PostgreSQL's json accepts, decode to WTF-8 */
	CHECK(zs_json_parse(&rt_doc, "[\"\\ud800x\",\"\\udc00\"]", 20), "lone surrogates: %s", rt_doc.error);
	CHECK_STR(zs_json_str(&rt_doc, zs_json_at(&rt_doc, 0, 0)), "\xed\xa0\x80x");
	CHECK_STR(zs_json_str(&rt_doc, zs_json_at(&rt_doc, 0, 1)), "\xed\xb0\x80");
}

RT_COUNTS(rt_json_read_counts)
