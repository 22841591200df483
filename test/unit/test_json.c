/*
 * Unit tests for the JSON value encoding (docs/zero-protocol.md §3.7) and the
 * JSON.stringify-compatible output, using values from the golden change
 * log that zero-cache 1.9.0 wrote (test/golden), plus the listed
 * corrections and malformed input.
 */
#include "postgres_fe.h"

#include "catalog/pg_type_d.h"

#include "decoding/value_encode.h"
#include "codec/json_out.h"
#include "codec/json_read.h"
#include "unit.h"

#include "js_reference.h"

static StringInfoData out;

static void
check_value(ZsValueKind kind, const char *text, const char *expected)
{
	resetStringInfo(&out);
	CHECK(zs_value_append(&out, kind, text, (int) strlen(text)),
		  "value <%s> (kind %d) rejected", text, kind);
	CHECK(strcmp(out.data, expected) == 0, "value <%s> (kind %d): got <%s>, expected <%s>",
		  text, kind, out.data, expected);
}

static void
check_array(ZsValueKind kind, const char *text, const char *expected)
{
	resetStringInfo(&out);
	CHECK(zs_value_append_array(&out, kind, ',', text, (int) strlen(text)),
		  "array <%s> rejected", text);
	CHECK(strcmp(out.data, expected) == 0, "array <%s>: got <%s>, expected <%s>",
		  text, out.data, expected);
}

static void
check_rejected(ZsValueKind kind, const char *text)
{
	resetStringInfo(&out);
	CHECK(!zs_value_append(&out, kind, text, (int) strlen(text)),
		  "malformed <%s> (kind %d) accepted as <%s>", text, kind, out.data);
}

static void
check_double(double v, bool no_bigint, const char *expected)
{
	resetStringInfo(&out);
	if (no_bigint)
		zs_json_append_double_no_bigint(&out, v);
	else
		zs_json_append_double(&out, v);
	CHECK_STR(out.data, expected);
}

static void
test_strings(void)
{
	const char	nul_text[] = "before\0after";

	check_value(ZS_KIND_STRING, "plain text", "\"plain text\"");
	check_value(ZS_KIND_STRING, "quotes ' \" and backslash \\ and slash /",
				"\"quotes ' \\\" and backslash \\\\ and slash /\"");
	check_value(ZS_KIND_STRING, "tab\there\nnewline\r\n \x01\x1f\x7f",
				"\"tab\\there\\nnewline\\r\\n \\u0001\\u001f\x7f\"");
	/* unicode, U+2028/2029 and emoji stay raw, as JSON.stringify leaves them */
	check_value(ZS_KIND_STRING, "\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80",
				"\"\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80\"");
	check_value(ZS_KIND_STRING, "\b\f", "\"\\b\\f\"");

	resetStringInfo(&out);
	zs_json_append_string(&out, nul_text, sizeof(nul_text) - 1);
	CHECK_STR(out.data, "\"before\\u0000after\"");
}

static void
test_numbers(void)
{
	check_value(ZS_KIND_INTEGER, "9223372036854775807", "9223372036854775807");
	check_value(ZS_KIND_INTEGER, "-9223372036854775808", "-9223372036854775808");
	check_value(ZS_KIND_INTEGER, "9007199254740993", "9007199254740993");
	check_rejected(ZS_KIND_INTEGER, "12a");
	check_rejected(ZS_KIND_INTEGER, "-");
	check_rejected(ZS_KIND_INTEGER, "");
	/* found by test/fuzz/fuzz_value_encode: "039" was copied, and is not JSON */
	check_rejected(ZS_KIND_INTEGER, "039");
	check_rejected(ZS_KIND_INTEGER, "-00");
	check_value(ZS_KIND_INTEGER, "0", "0");

	/* PostgreSQL's shortest float text, re-spelled as JavaScript prints it */
	check_value(ZS_KIND_FLOAT, "3.141592653589793", "3.141592653589793");
	check_value(ZS_KIND_FLOAT, "1e+20", "100000000000000000000");
	check_value(ZS_KIND_FLOAT, "1e+21", "1e+21");
	check_value(ZS_KIND_FLOAT, "1e-06", "0.000001");
	check_value(ZS_KIND_FLOAT, "1e-07", "1e-7");
	check_value(ZS_KIND_FLOAT, "1.7976931348623157e+308", "1.7976931348623157e+308");
	check_value(ZS_KIND_FLOAT, "5e-324", "5e-324");
	check_value(ZS_KIND_FLOAT, "1.1754944e-38", "1.1754944e-38");
	check_value(ZS_KIND_FLOAT, "0.30000000000000004", "0.30000000000000004");
	check_value(ZS_KIND_FLOAT, "100", "100");
	check_value(ZS_KIND_FLOAT, "-0", "0");
	check_value(ZS_KIND_FLOAT, "NaN", "null");
	check_value(ZS_KIND_FLOAT, "Infinity", "null");
	check_value(ZS_KIND_FLOAT, "-Infinity", "null");
	check_rejected(ZS_KIND_FLOAT, "1.5x");
	check_rejected(ZS_KIND_FLOAT, "e5");

	/* numeric is read as a double, like Number(text) */
	check_value(ZS_KIND_NUMERIC, "1.5", "1.5");
	check_value(ZS_KIND_NUMERIC, "-123.456", "-123.456");
	check_value(ZS_KIND_NUMERIC, "-0.000", "0");
	check_value(ZS_KIND_NUMERIC, "0.000000000000000000000000000001", "1e-30");
	check_value(ZS_KIND_NUMERIC, "100", "100");
	check_value(ZS_KIND_NUMERIC, "NaN", "null");
	/* correction: an integer-looking double beyond 2^53 keeps exponent form */
	check_value(ZS_KIND_NUMERIC, "12345678901234567890", "1.2345678901234567e+19");
	check_value(ZS_KIND_NUMERIC, "9007199254740991", "9007199254740991");
	check_value(ZS_KIND_NUMERIC, "9007199254740992", "9.007199254740992e+15");
	check_value(ZS_KIND_NUMERIC, "9010000000000000", "9.01e+15");
	check_value(ZS_KIND_NUMERIC, "9000000000000000", "9000000000000000");
	check_value(ZS_KIND_NUMERIC, "-100000000000000000000", "-1e+20");
	check_value(ZS_KIND_NUMERIC, "0.1234567890123456789", "0.12345678901234568");
	check_rejected(ZS_KIND_NUMERIC, "1.2.3");

	check_double(0.1, false, "0.1");
	check_double(1e21, false, "1e+21");
	check_double(123e-20, false, "1.23e-18");
	check_double(-1.5, false, "-1.5");
	check_double(1e20, true, "1e+20");
	check_double(-1e20, true, "-1e+20");
}

static void
test_time_values(void)
{
	check_value(ZS_KIND_TIMESTAMP, "2020-02-29 12:34:56.123456", "1582979696123.456");
	check_value(ZS_KIND_TIMESTAMP, "2020-02-29 12:34:56.123456+00", "1582979696123.456");
	check_value(ZS_KIND_TIMESTAMP, "1970-01-01 00:00:00", "0");
	check_value(ZS_KIND_TIMESTAMP, "2021-06-01 02:30:00.5+00", "1622514600500");
	check_value(ZS_KIND_TIMESTAMP, "2021-06-01 12:00:00.5+09:30", "1622514600500");
	check_value(ZS_KIND_TIMESTAMP, "9999-12-31 23:59:59.999999", "253402300800000");
	check_value(ZS_KIND_TIMESTAMP, "0044-03-15 12:00:00 BC", "-63517780800000");
	check_value(ZS_KIND_TIMESTAMP, "4714-11-24 00:00:00+00 BC", "-210866803200000");
	check_value(ZS_KIND_TIMESTAMP, "infinity", "null");
	check_value(ZS_KIND_TIMESTAMP, "-infinity", "null");
	/* corrections: pre-1970 fractions count toward the past */
	check_value(ZS_KIND_TIMESTAMP, "1969-12-31 23:59:59.999999+00", "-0.001");
	check_value(ZS_KIND_TIMESTAMP, "1900-01-01 00:00:00.000001", "-2208988799999.999");
	check_rejected(ZS_KIND_TIMESTAMP, "2020-02-29");
	check_rejected(ZS_KIND_TIMESTAMP, "2020-02-29 12:34");
	check_rejected(ZS_KIND_TIMESTAMP, "2020-13-01 00:00:00");
	check_rejected(ZS_KIND_TIMESTAMP, "2020-02-29 12:34:56 AD");

	check_value(ZS_KIND_DATE, "2020-02-29", "1582934400000");
	check_value(ZS_KIND_DATE, "1969-07-20", "-14256000000");
	check_value(ZS_KIND_DATE, "1970-01-01", "0");
	check_value(ZS_KIND_DATE, "0044-03-15 BC", "-63517824000000");
	check_value(ZS_KIND_DATE, "infinity", "null");
	/* beyond JavaScript's Date range, still a finite double */
	check_value(ZS_KIND_DATE, "5874897-12-31", "1.85331706992e+17");
	check_rejected(ZS_KIND_DATE, "20-01-01");
	/* found by test/fuzz/fuzz_value_encode: a 9-digit year overflowed int64 */
	check_rejected(ZS_KIND_DATE, "587478747-12-31");
	check_rejected(ZS_KIND_TIMESTAMP, "587478747-12-31 00:00:00");
	check_value(ZS_KIND_DATE, "9999999-12-31", "3.155073526944e+17");

	check_value(ZS_KIND_TIME, "12:34:56.789", "45296789");
	check_value(ZS_KIND_TIME, "24:00:00", "86400000");
	check_value(ZS_KIND_TIME, "23:59:59.999999", "86399999");
	check_value(ZS_KIND_TIME, "00:00:00.000001", "0");
	check_value(ZS_KIND_TIME, "13:14:15.5", "47655500");
	check_rejected(ZS_KIND_TIME, "12:34");

	check_value(ZS_KIND_TIMETZ, "12:34:56.789+05:30", "25496789");
	check_value(ZS_KIND_TIMETZ, "12:34:56.789+05", "27296789");
	check_value(ZS_KIND_TIMETZ, "00:00:00+14", "36000000");
	check_value(ZS_KIND_TIMETZ, "23:59:59.999999-08", "28799999");
	check_value(ZS_KIND_TIMETZ, "01:00:00+02", "82800000");
	check_value(ZS_KIND_TIMETZ, "12:00:00+05:30:15", "23385000");
	check_rejected(ZS_KIND_TIMETZ, "12:00:00");
}

static void
test_other_scalars(void)
{
	check_value(ZS_KIND_BOOL, "t", "true");
	check_value(ZS_KIND_BOOL, "f", "false");
	check_rejected(ZS_KIND_BOOL, "true");

	check_value(ZS_KIND_BYTEA, "\\x00ff10", "{\"type\":\"Buffer\",\"data\":[0,255,16]}");
	check_value(ZS_KIND_BYTEA, "\\x", "{\"type\":\"Buffer\",\"data\":[]}");
	check_rejected(ZS_KIND_BYTEA, "\\x0");
	check_rejected(ZS_KIND_BYTEA, "\\xzz");
	check_rejected(ZS_KIND_BYTEA, "abc");

	check_value(ZS_KIND_JSON_TEXT, "{\"b\": 1, \"a\": [1, 2.50]}",
				"\"{\\\"b\\\": 1, \\\"a\\\": [1, 2.50]}\"");

	check_value(ZS_KIND_JSON_PARSED, " {\"a\" : [ 1 , 2.50, 1.0e2, -0, true, null, \"\\u00e9\\ud83d\\ude00\\n\"]} ",
				"{\"a\":[1,2.5,100,0,true,null,\"\xc3\xa9\xf0\x9f\x98\x80\\n\"]}");
	check_value(ZS_KIND_JSON_PARSED, "12345678901234567890", "12345678901234567890");
	check_rejected(ZS_KIND_JSON_PARSED, "{\"a\":}");
	check_rejected(ZS_KIND_JSON_PARSED, "[1,2");
	check_rejected(ZS_KIND_JSON_PARSED, "\"unterminated");
	check_rejected(ZS_KIND_JSON_PARSED, "tru");
	check_rejected(ZS_KIND_JSON_PARSED, "[1] 2");

	CHECK(zs_value_kind_for_type(INT8OID) == ZS_KIND_INTEGER, "int8");
	CHECK(zs_value_kind_for_type(JSONBOID) == ZS_KIND_JSON_TEXT, "jsonb");
	CHECK(zs_value_kind_for_type(TIMESTAMPTZOID) == ZS_KIND_TIMESTAMP, "timestamptz");
	CHECK(zs_value_kind_for_type(UUIDOID) == ZS_KIND_STRING, "uuid");
	CHECK(zs_value_kind_for_type(99999) == ZS_KIND_STRING, "unknown type");
}

static void
test_arrays(void)
{
	check_array(ZS_KIND_INTEGER, "{1,2,3}", "[1,2,3]");
	check_array(ZS_KIND_INTEGER, "{}", "[]");
	check_array(ZS_KIND_INTEGER, "{{1,2},{3,4}}", "[[1,2],[3,4]]");
	check_array(ZS_KIND_INTEGER, "{{1,NULL},{NULL,4}}", "[[1,null],[null,4]]");
	check_array(ZS_KIND_INTEGER, "[0:1]={5,6}", "[5,6]");
	check_array(ZS_KIND_INTEGER, "{0,-1,9007199254740993}", "[0,-1,9007199254740993]");
	check_array(ZS_KIND_STRING, "{a,\"b c\"}", "[\"a\",\"b c\"]");
	/* correction: an unquoted NULL element is null, a quoted one a string */
	check_array(ZS_KIND_STRING, "{\"NULL\",NULL,\"\"}", "[\"NULL\",null,\"\"]");
	check_array(ZS_KIND_STRING, "{\"quote\\\"\",\"back\\\\slash\",\"{brace}\",\"comma,\"}",
				"[\"quote\\\"\",\"back\\\\slash\",\"{brace}\",\"comma,\"]");
	check_array(ZS_KIND_FLOAT, "{1.5,NaN,Infinity,-Infinity,-0,1e-300}",
				"[1.5,null,null,null,0,1e-300]");
	check_array(ZS_KIND_NUMERIC, "{1.5,NaN,12345678901234567890}",
				"[1.5,null,1.2345678901234567e+19]");
	check_array(ZS_KIND_TIMESTAMP, "{\"2020-02-29 12:34:56.123456+00\",infinity}",
				"[1582979696123.456,null]");
	check_array(ZS_KIND_JSON_TEXT, "{\"{\\\"a\\\": 1}\",\"[1, 2]\",null}",
				"[{\"a\":1},[1,2],null]");
	check_array(ZS_KIND_JSON_TEXT, "{null,\"\\\"str\\\"\",12345678901234567890}",
				"[null,\"str\",12345678901234567890]");
	check_array(ZS_KIND_BYTEA, "{\"\\\\x00ff\"}", "[{\"type\":\"Buffer\",\"data\":[0,255]}]");

	{
		const char *boxes = "{\"(1,1),(0,0)\";\"(2,2),(1,1)\"}";

		resetStringInfo(&out);
		CHECK(zs_value_append_array(&out, ZS_KIND_STRING, ';', boxes, (int) strlen(boxes)),
			  "box array with ';' delimiter");
	}
	CHECK_STR(out.data, "[\"(1,1),(0,0)\",\"(2,2),(1,1)\"]");

	resetStringInfo(&out);
	CHECK(!zs_value_append_array(&out, ZS_KIND_INTEGER, ',', "{1,2", 4), "unterminated array");
	resetStringInfo(&out);
	CHECK(!zs_value_append_array(&out, ZS_KIND_INTEGER, ',', "1,2}", 4), "no opening brace");
	resetStringInfo(&out);
	CHECK(!zs_value_append_array(&out, ZS_KIND_INTEGER, ',', "{1,x}", 5), "bad element");
	resetStringInfo(&out);
	CHECK(!zs_value_append_array(&out, ZS_KIND_STRING, ',', "{\"abc}", 6), "unterminated quote");
	resetStringInfo(&out);
	CHECK(!zs_value_append_array(&out, ZS_KIND_INTEGER, ',', "{1}x", 4), "trailing garbage");
}

/* Is this JavaScript output an integer beyond 2^53 (zero's BigInt trap)? */
static bool
is_unsafe_integer_text(const char *s)
{
	const char *digits = (*s == '-') ? s + 1 : s;

	if (strspn(digits, "0123456789") != strlen(digits))
		return false;
	return strlen(digits) > 16 ||
		(strlen(digits) == 16 && strcmp(digits, "9007199254740991") > 0);
}

/*
 * Number(x) then JSON.stringify, against Node's own output for edge inputs:
 * exactly, through zs_json_append_number_text; and as a numeric column
 * value, which differs only by the documented correction (an integer beyond
 * 2^53 is written in exponent form, the same double).
 */
static void
test_js_numbers(void)
{
	for (size_t i = 0; i < lengthof(js_numbers); i++)
	{
		const char *in = js_numbers[i][0];
		const char *expected = js_numbers[i][1];
		bool		nonfinite_text = (strcmp(in, "NaN") == 0 || strstr(in, "Infinity") != NULL);

		if (!nonfinite_text)
		{
			resetStringInfo(&out);
			CHECK(zs_json_append_number_text(&out, in, (int) strlen(in)), "number <%s> rejected", in);
			CHECK(strcmp(out.data, expected) == 0, "Number(<%.40s>): got <%s>, JavaScript <%s>",
				  in, out.data, expected);
		}

		resetStringInfo(&out);
		CHECK(zs_value_append(&out, ZS_KIND_NUMERIC, in, (int) strlen(in)), "numeric <%.40s> rejected", in);
		if (is_unsafe_integer_text(expected))
			CHECK(strchr(out.data, 'e') != NULL && strtod(out.data, NULL) == strtod(expected, NULL),
				  "numeric <%.40s>: got <%s>, expected %s in exponent form", in, out.data, expected);
		else
			CHECK(strcmp(out.data, expected) == 0, "numeric <%.40s>: got <%s>, JavaScript <%s>",
				  in, out.data, expected);
	}
	/* numeric array elements take the same path */
	check_array(ZS_KIND_NUMERIC, "{1e64,NaN}", "[1e+64,null]");
	check_array(ZS_KIND_NUMERIC, "{10000000000000000000000000000000000000000000000000000000000000000}",
				"[1e+64]");
	check_rejected(ZS_KIND_NUMERIC, "");
	check_rejected(ZS_KIND_NUMERIC, "-");
	check_rejected(ZS_KIND_NUMERIC, ".");
	check_rejected(ZS_KIND_NUMERIC, "1e");
	check_rejected(ZS_KIND_NUMERIC, "0x10");
}

/*
 * Doubles of 2^53 and more, where PostgreSQL's float8 output is not the
 * shortest spelling (found by the property test, TAP 014); JavaScript's
 * String() of the same doubles, from Node.
 */
static void
test_large_doubles(void)
{
	check_value(ZS_KIND_FLOAT, "-9.349920999999999e+19", "-93499210000000000000");
	check_value(ZS_KIND_FLOAT, "8.489840000000001e+21", "8.48984e+21");
	check_value(ZS_KIND_FLOAT, "-1.7629982000000002e+20", "-176299820000000000000");
	check_value(ZS_KIND_FLOAT, "2.4167759999999997e+21", "2.416776e+21");
	check_value(ZS_KIND_FLOAT, "1.2345678901234567e+300", "1.2345678901234567e+300");
	check_value(ZS_KIND_NUMERIC, "71877265686685986", "7.187726568668598e+16");
	check_value(ZS_KIND_NUMERIC, "28496888849107710", "2.849688884910771e+16");
	check_double(-93499210000000000000.0, false, "-93499210000000000000");
	check_double(9007199254740992.0, false, "9007199254740992");
	check_double(9007199254740992.0, true, "9.007199254740992e+15");
}

/* json[] elements: BigIntJSON.stringify(BigIntJSON.parse(x)), from Node */
static void
test_js_elements(void)
{
	for (size_t i = 0; i < lengthof(js_elements); i++)
		check_value(ZS_KIND_JSON_PARSED, js_elements[i][0], js_elements[i][1]);

	/* nesting far deeper than any fixed limit, as PostgreSQL accepts it */
	{
		int			depth = 100000;
		char	   *deep = malloc(2 * depth + 2);

		memset(deep, '[', depth);
		deep[depth] = '7';
		memset(deep + depth + 1, ']', depth);
		deep[2 * depth + 1] = '\0';
		resetStringInfo(&out);
		CHECK(zs_value_append(&out, ZS_KIND_JSON_PARSED, deep, 2 * depth + 1), "deep json rejected");
		CHECK(out.len == 2 * depth + 1 && memcmp(out.data, deep, out.len) == 0, "deep json rewritten");
		free(deep);
	}

	/* an object with many repeated keys keeps each key once, last value */
	{
		StringInfoData big;

		initStringInfo(&big);
		appendStringInfoChar(&big, '{');
		for (int i = 0; i < 3000; i++)
			appendStringInfo(&big, "%s\"k%d\":%d", i ? "," : "", i % 1000, i);
		appendStringInfoChar(&big, '}');
		resetStringInfo(&out);
		CHECK(zs_value_append(&out, ZS_KIND_JSON_PARSED, big.data, big.len), "big object rejected");
		CHECK(strncmp(out.data, "{\"k0\":2000,\"k1\":2001,", 21) == 0 && strstr(out.data, "\"k999\":2999}") != NULL, "big object: <%.40s>", out.data);
		pfree(big.data);
	}
}

/* Timestamps at the ends of PostgreSQL's range (beyond JavaScript's Date) */
static void
test_timestamp_range(void)
{
	check_value(ZS_KIND_TIMESTAMP, "294276-12-31 23:59:59.999999", "9224318015999999.999");
	check_value(ZS_KIND_TIMESTAMP, "294276-12-31 23:59:59.999999+00", "9224318015999999.999");
	check_value(ZS_KIND_TIMESTAMP, "294276-12-31 23:59:59", "9.224318015999e+15");
	check_value(ZS_KIND_TIMESTAMP, "294247-01-10 04:00:54.775807", "9223372036854775.807");
	check_value(ZS_KIND_TIMESTAMP, "4714-11-24 00:00:00+00 BC", "-210866803200000");
	/* JavaScript's Date ends at 275760-09-13: still JavaScript's double there */
	check_value(ZS_KIND_TIMESTAMP, "275760-09-13 00:00:00", "8640000000000000");
	check_value(ZS_KIND_TIMESTAMP, "275760-09-12 23:59:59.999999", "8640000000000000");
	/* one ms later zero-cache fails; we write the exact milliseconds */
	check_value(ZS_KIND_TIMESTAMP, "275760-09-13 00:00:00.001", "8640000000000001");
	check_value(ZS_KIND_TIMESTAMP, "275760-09-13 00:00:00.0015", "8640000000000001.5");
	/* years 1-99 are years 1-99, not 1901-1999 */
	check_value(ZS_KIND_DATE, "0099-12-31", "-59011545600000");
	check_value(ZS_KIND_DATE, "0001-01-01", "-62135596800000");
	check_value(ZS_KIND_DATE, "5874897-12-31", "1.85331706992e+17");
}

/*
 * Milliseconds with a microsecond part (timestamps, dates): the decimal
 * fast path must print exactly what the double path prints for the double
 * zero-cache computes, millis + sub_us * 1000 * 1e-6, on every range:
 * around the epoch, today, up to and beyond 2^42 ms (where the fast path
 * stops), before the epoch, and whole milliseconds up to 2^53.
 */
static uint64
next_random(uint64 *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static void
check_millis(int64 millis, int sub_us, const char *expected)
{
	resetStringInfo(&out);
	zs_json_append_millis(&out, millis, sub_us);
	CHECK_STR(out.data, expected);
}

static void
test_millis(void)
{
	static const int64 spans[] = {1000, INT64CONST(1) << 32, INT64CONST(1) << 41,
		INT64CONST(1) << 42, INT64CONST(1) << 44, INT64CONST(8640000000000000)};
	uint64		state = UINT64CONST(0x9e3779b97f4a7c15);
	StringInfoData via_double;

	check_millis(0, 0, "0");
	check_millis(0, 1, "0.001");
	check_millis(0, -1, "-0.001");
	check_millis(1, 500, "1.5");
	check_millis(-1, -500, "-1.5");
	check_millis(INT64CONST(1796000000000), 123, "1796000000000.123");
	check_millis(INT64CONST(1796000000000), 120, "1796000000000.12");
	check_millis(INT64CONST(8640000000000000), 0, "8640000000000000");
	/* 2^53 + 2 ms: beyond the safe integers, as the double path writes it */
	check_millis(INT64CONST(9007199254740994), 0, "9.007199254740994e+15");

	initStringInfo(&via_double);
	for (int s = 0; s < (int) lengthof(spans); s++)
	{
		int			mismatches = 0;
		char		first[200] = "";

		for (int i = 0; i < 200000; i++)
		{
			int64		millis = (int64) (next_random(&state) % (uint64) spans[s]);
			int			sub_us = (int) (next_random(&state) % 1000);

			if (i % 4 == 1)
				sub_us = 0;
			if (i % 2 == 1)
			{
				millis = -millis;
				sub_us = -sub_us;
			}
			resetStringInfo(&out);
			zs_json_append_millis(&out, millis, sub_us);
			resetStringInfo(&via_double);
			zs_json_append_double_no_bigint(&via_double,
											(double) millis + (double) (sub_us * 1000) * 1e-6);
			if (strcmp(out.data, via_double.data) != 0 && mismatches++ == 0)
				snprintf(first, sizeof(first), INT64_FORMAT " ms + %d us: <%s>, the double gives <%s>",
						 millis, sub_us, out.data, via_double.data);
		}
		CHECK(mismatches == 0, "span " INT64_FORMAT ": %d of 200000 differ, first %s",
			  spans[s], mismatches, first);
	}
	pfree(via_double.data);
}

/*
 * The JSON reader's numbers: zs_json_double gives strtod's double, bit for
 * bit, on its exact fast path and around it (17+ digits, exponents beyond
 * 22, 2^53), and zs_json_int64 reads exactly the integers within int64.
 */
static void
check_read_number(ZsJsonDoc *doc, const char *text, int *mismatches, char *first, size_t firstlen)
{
	double		got,
				want = strtod(text, NULL);
	int64		v;
	bool		is_int,
				want_int;
	char	   *end;
	long long	ll;

	if (!zs_json_parse(doc, text, strlen(text)) || doc->nodes[0].type != ZS_JSON_NUMBER)
	{
		if ((*mismatches)++ == 0)
			snprintf(first, firstlen, "%s does not parse", text);
		return;
	}
	got = zs_json_double(doc, 0);
	errno = 0;
	ll = strtoll(text, &end, 10);
	want_int = (*end == '\0' && errno == 0);
	is_int = zs_json_int64(doc, 0, &v);
	if (memcmp(&got, &want, sizeof(double)) != 0 || is_int != want_int ||
		(is_int && v != (int64) ll))
	{
		if ((*mismatches)++ == 0)
			snprintf(first, firstlen, "%s: double %.17g (strtod %.17g), int64 %s",
					 text, got, want, is_int ? "yes" : "no");
	}
}

static void
test_read_numbers(void)
{
	static const char *const edges[] = {"0", "-0", "0.0", "-0.0", "1", "-1", "1.25", "0.1", "0.3",
		"9007199254740992", "9007199254740993", "9007199254740993.0", "9007199254740991.5",
		"1e22", "1e23", "1.5e-22", "1e-23", "123456789012345678", "-123456789012345678",
		"999999999999999999", "1000000000000000000", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "1764583212345.123", "0.000001",
		"2.2250738585072014e-308", "1.7976931348623157e308", "4.9e-324", "1e400", "1E+2", "1e-0",
		"0.00000000000000000000001", "12345678901234567890123", "3.14159265358979323846"};
	uint64		state = UINT64CONST(0x853c49e6748fea9b);
	ZsJsonDoc	doc;
	int			mismatches = 0;
	char		first[200] = "";
	char		text[80];

	zs_json_doc_init(&doc);
	for (int i = 0; i < (int) lengthof(edges); i++)
		check_read_number(&doc, edges[i], &mismatches, first, sizeof(first));
	for (int i = 0; i < 300000; i++)
	{
		uint64		r = next_random(&state);
		int			ndigits = 1 + (int) (r % 20);
		int			point = (int) ((r >> 8) % (ndigits + 1));
		int			len = 0;

		if ((r >> 16) & 1)
			text[len++] = '-';
		for (int d = 0; d < ndigits; d++)
		{
			int			digit = (int) (next_random(&state) % 10);

			if (d == point && d > 0)
				text[len++] = '.';
			/* no leading zero before more digits, as JSON requires */
			if (d == 0 && digit == 0 && point != 1 && ndigits > 1)
				digit = 1 + (int) (r % 9);
			text[len++] = '0' + digit;
		}
		if ((r >> 20) % 3 == 0)
			len += snprintf(text + len, sizeof(text) - len, "e%d", (int) ((r >> 24) % 61) - 30);
		text[len] = '\0';
		check_read_number(&doc, text, &mismatches, first, sizeof(first));
	}
	CHECK(mismatches == 0, "%d numbers read differently from strtod/strtoll, first %s", mismatches, first);
	zs_json_doc_free(&doc);
}

/* zs_json_append_int64 writes what INT64_FORMAT does, at the edges and at random */
static void
test_int64(void)
{
	static const int64 edges[] = {0, 1, -1, 9, 10, -10, 99, 100, PG_INT32_MAX, PG_INT32_MIN,
		(int64) PG_UINT32_MAX, PG_INT64_MAX, PG_INT64_MIN, PG_INT64_MIN + 1, PG_INT64_MAX - 1};
	uint64		state = UINT64CONST(0x2545f4914f6cdd1d);
	char		expected[32];
	int			mismatches = 0;

	for (int i = 0; i < (int) lengthof(edges); i++)
	{
		resetStringInfo(&out);
		zs_json_append_int64(&out, edges[i]);
		snprintf(expected, sizeof(expected), INT64_FORMAT, edges[i]);
		CHECK_STR(out.data, expected);
	}
	for (int i = 0; i < 100000; i++)
	{
		/* every magnitude: shift a random value right by 0..63 bits */
		uint64		r = next_random(&state);
		int64		value = (int64) (r >> (r % 64));

		if (i % 2 && value != PG_INT64_MIN)
			value = -value;
		resetStringInfo(&out);
		zs_json_append_int64(&out, value);
		snprintf(expected, sizeof(expected), INT64_FORMAT, value);
		if (strcmp(out.data, expected) != 0)
			mismatches++;
	}
	CHECK(mismatches == 0, "%d of 100000 random integers differ from INT64_FORMAT", mismatches);
}

int
main(void)
{
	initStringInfo(&out);
	test_strings();
	test_numbers();
	test_time_values();
	test_other_scalars();
	test_arrays();
	test_js_numbers();
	test_large_doubles();
	test_js_elements();
	test_timestamp_range();
	test_millis();
	test_int64();
	test_read_numbers();
	return unit_report("test_json");
}
