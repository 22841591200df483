/*-------------------------------------------------------------------------
 * value_encode.h
 *	  Zero's JSON encoding of PostgreSQL column values (docs/zero-protocol.md
 *	  §3.7), from the text output that pgoutput sends.
 *
 * The decoder runs with DateStyle=ISO, TimeZone=UTC, IntervalStyle=postgres,
 * extra_float_digits=1 and bytea_output=hex, so every text form parsed here
 * is the canonical one. Compiles as backend or frontend code.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_VALUE_ENCODE_H
#define ZS_VALUE_ENCODE_H

#include "lib/stringinfo.h"

typedef enum ZsValueKind
{
	ZS_KIND_STRING,				/* text output as a JSON string */
	ZS_KIND_INTEGER,			/* int2/int4/int8/oid: bare digits, any size */
	ZS_KIND_FLOAT,				/* float4/float8: JS number, NaN/Inf -> null */
	ZS_KIND_NUMERIC,			/* numeric: read as a double, NaN/Inf -> null */
	ZS_KIND_BOOL,
	ZS_KIND_JSON_TEXT,			/* json/jsonb column: the JSON text as a string */
	ZS_KIND_JSON_PARSED,		/* json/jsonb array element: the parsed value */
	ZS_KIND_TIMESTAMP,			/* float ms since the Unix epoch */
	ZS_KIND_DATE,				/* ms of UTC midnight */
	ZS_KIND_TIME,				/* integer ms since midnight */
	ZS_KIND_TIMETZ,				/* integer ms since midnight UTC */
	ZS_KIND_BYTEA				/* {"type":"Buffer","data":[...]} */
} ZsValueKind;

/* Kind of a built-in scalar type; everything unknown is a string. */
extern ZsValueKind zs_value_kind_for_type(unsigned int typid);

/*
 * Append the JSON for one non-null value's text. Returns false (with
 * nothing useful appended) if the text is not in the expected form; the
 * caller reports the error, a value is never silently dropped.
 */
extern bool zs_value_append(StringInfo out, ZsValueKind kind,
							const char *text, int len);

/* Same for an array value, whose elements are of elem_kind. */
extern bool zs_value_append_array(StringInfo out, ZsValueKind elem_kind, char delim,
							const char *text, int len);

#endif							/* ZS_VALUE_ENCODE_H */
