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
extern void zs_append_utf8(StringInfo out, unsigned int cp);

/*
 * Append a decimal number given as text (e.g. PostgreSQL float output or a
 * JSON number literal) formatted as JavaScript would print the same digits.
 * Returns false, appending nothing, if the text is not a finite decimal.
 */
extern bool zs_json_append_decimal_text(StringInfo out, const char *s, int len);

/*
 * Same, for a decimal text known to be exactly representable as a double
 * (at most 15 significant digits), writing integers beyond 2^53 in exponent
 * form like zs_json_append_double_no_bigint.
 */
extern bool zs_json_append_decimal_no_bigint(StringInfo out, const char *s, int len);

/* Append a double as JavaScript prints it; NaN and infinities become null. */
extern void zs_json_append_double(StringInfo out, double value);

/*
 * Like zs_json_append_double, but a value that JavaScript would print as an
 * integer beyond 2^53 is written in exponent form, so that BigInt-aware
 * JSON readers keep reading it as a double.
 */
extern void zs_json_append_double_no_bigint(StringInfo out, double value);

#endif							/* ZS_JSON_OUT_H */
