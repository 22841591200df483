/*-------------------------------------------------------------------------
 * json_out.h
 *	  JSON text output that matches JavaScript's JSON.stringify byte for
 *	  byte: string escaping and Number-to-string formatting.
 *
 * Compiles as backend or frontend code.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_JSON_OUT_H
#define ZS_JSON_OUT_H

#include "lib/stringinfo.h"

extern void zs_json_append_string(StringInfo out, const char *s, int len);
extern void zs_json_append_cstring(StringInfo out, const char *s);

/* The UTF-8 encoding of one code point (for decoding \u escapes). */
extern void zs_json_append_utf8(StringInfo out, unsigned int cp);

/*
 * Append a decimal given as its shortest round-trip digits (PostgreSQL's
 * float output with extra_float_digits=1) spelled as JavaScript prints
 * the same number. Returns false, appending nothing, if the text is not a
 * decimal ("[-]digits[.digits][e[+-]digits]").
 */
extern bool zs_json_append_shortest_text(StringInfo out, const char *s, int len);

/*
 * A decimal of at most 20 significant digits spelled exactly, JavaScript's
 * way, integers beyond 2^53 in exponent form (a longer one is rounded to a
 * double). False if the text is not a decimal.
 */
extern bool zs_json_append_exact_decimal_no_bigint(StringInfo out, const char *s, int len);

/*
 * JSON.stringify(Number(s)) for any decimal text, of any length or
 * exponent: the correctly rounded double, printed as JavaScript prints it
 * (so 1e-1000 is 0, 2e308 is null, 1e64 is 1e+64). False, appending
 * nothing, if the text is not a decimal.
 */
extern bool zs_json_append_number_text(StringInfo out, const char *s, int len);

/*
 * The same, except that a value JavaScript would print as an integer beyond
 * 2^53 is written in exponent form, like zs_json_append_double_no_bigint.
 */
extern bool zs_json_append_number_text_no_bigint(StringInfo out, const char *s, int len);

/* Append an integer in decimal (as INT64_FORMAT prints it). */
extern void zs_json_append_int64(StringInfo out, int64 value);

/*
 * Append a double as JavaScript prints it; NaN and infinities become null.
 * The change log writes numbers from their text (zs_json_append_number_text)
 * and times through zs_json_append_millis, never from a double; these two
 * are the general form both rest on, which the unit tests hold the fast
 * paths to (test/unit/test_json.c compares zs_json_append_millis with the
 * double it computes, for millions of values).
 */
extern void zs_json_append_double(StringInfo out, double value);

/*
 * Like zs_json_append_double, but a value that JavaScript would print as an
 * integer beyond 2^53 is written in exponent form, so that BigInt-aware
 * JSON readers keep reading it as a double.
 */
extern void zs_json_append_double_no_bigint(StringInfo out, double value);

/*
 * Append millis + sub_us / 1000 milliseconds (sub_us in (-1000, 1000), of
 * the sign of millis) as zero-cache computes and prints it: the double
 * millis + sub_us * 1000 * 1e-6, like zs_json_append_double_no_bigint, but
 * without a shortest-digits search where the decimal itself is the answer.
 */
extern void zs_json_append_millis(StringInfo out, int64 millis, int sub_us);

/*
 * The same milliseconds as the exact decimal, not the double (values beyond
 * what JavaScript's Date holds), like zs_json_append_exact_decimal_no_bigint.
 */
extern bool zs_json_append_exact_millis(StringInfo out, int64 millis, int sub_us);

#endif							/* ZS_JSON_OUT_H */
