/*-------------------------------------------------------------------------
 * value_encode.c
 *	  Encode pgoutput text values the way zero-cache's change source does.
 *
 * zero-cache parses each text value with a per-type parser and then
 * serializes the row with a BigInt-aware JSON.stringify. We go straight
 * from the text to the same JSON bytes, without building values: int8
 * digits are copied verbatim, floats keep their shortest digits and are
 * re-spelled the JavaScript way, dates and times become milliseconds.
 *
 * Where zero-cache 1.9.0 produces a wrong value we produce the right one in
 * the same JSON type (test/golden/README.md): pre-1970 fractional
 * timestamps, numerics that would print as integers beyond 2^53, NULL array
 * elements, and dates beyond JavaScript's Date range.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include <math.h>

#include "catalog/pg_type_d.h"

#include "decoding/value_encode.h"
#include "codec/hex.h"
#include "codec/json_js.h"
#include "codec/json_out.h"

#define MS_PER_DAY		INT64CONST(86400000)
#define US_PER_SECOND	INT64CONST(1000000)
/* JavaScript's Date covers 100,000,000 days either side of the epoch */
#define JS_DATE_MAX_MS	INT64CONST(8640000000000000)
/* array_out nests at most MAXDIM (6) levels; anything deeper is malformed */
#define ARRAY_MAX_DEPTH	6

ZsValueKind
zs_value_kind_for_type(unsigned int typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
			return ZS_KIND_INTEGER;
		case FLOAT4OID:
		case FLOAT8OID:
			return ZS_KIND_FLOAT;
		case NUMERICOID:
			return ZS_KIND_NUMERIC;
		case BOOLOID:
			return ZS_KIND_BOOL;
		case JSONOID:
		case JSONBOID:
			return ZS_KIND_JSON_TEXT;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return ZS_KIND_TIMESTAMP;
		case DATEOID:
			return ZS_KIND_DATE;
		case TIMEOID:
			return ZS_KIND_TIME;
		case TIMETZOID:
			return ZS_KIND_TIMETZ;
		case BYTEAOID:
			return ZS_KIND_BYTEA;
		default:
			return ZS_KIND_STRING;
	}
}

static bool
text_equals(const char *text, int len, const char *literal)
{
	return (size_t) len == strlen(literal) && memcmp(text, literal, len) == 0;
}

/* Days from 1970-01-01 to an astronomical-year proleptic Gregorian date. */
static int64
days_from_civil(int64 y, int m, int d)
{
	int64		era;
	int64		yoe;
	int64		doy;
	int64		doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Parse exactly n digits at *p; advances *p. */
static bool
parse_fixed_digits(const char **p, const char *end, int n, int *value)
{
	int			v = 0;

	if (end - *p < n)
		return false;
	for (int i = 0; i < n; i++)
	{
		char		c = (*p)[i];

		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*value = v;
	return true;
}

/*
 * "YYYY[Y...]-MM-DD" -> year, month, day; advances *p. At most 7 year digits:
 * PostgreSQL's dates end in 5874897 AD, and the milliseconds of a longer
 * year would overflow int64.
 */
static bool
parse_date_part(const char **p, const char *end, int64 *year, int *month, int *day)
{
	int64		y = 0;
	int			ndigits = 0;

	while (*p < end && **p >= '0' && **p <= '9' && ndigits < 7)
	{
		y = y * 10 + (**p - '0');
		(*p)++;
		ndigits++;
	}
	if (ndigits < 4 || *p >= end || **p != '-')
		return false;
	(*p)++;
	if (!parse_fixed_digits(p, end, 2, month) || *p >= end || **p != '-')
		return false;
	(*p)++;
	if (!parse_fixed_digits(p, end, 2, day))
		return false;
	*year = y;
	return *month >= 1 && *month <= 12 && *day >= 1 && *day <= 31;
}

/* "HH:MM:SS[.ffffff]" -> microseconds since midnight; advances *p. */
static bool
parse_time_part(const char **p, const char *end, int64 *us)
{
	int			h,
				m,
				s;
	int64		frac = 0;
	int			scale = 100000;

	if (!parse_fixed_digits(p, end, 2, &h) || *p >= end || **p != ':')
		return false;
	(*p)++;
	if (!parse_fixed_digits(p, end, 2, &m) || *p >= end || **p != ':')
		return false;
	(*p)++;
	if (!parse_fixed_digits(p, end, 2, &s))
		return false;
	if (*p < end && **p == '.')
	{
		(*p)++;
		if (*p >= end || **p < '0' || **p > '9')
			return false;
		while (*p < end && **p >= '0' && **p <= '9')
		{
			frac += (**p - '0') * scale;
			scale /= 10;
			(*p)++;
		}
	}
	*us = ((int64) h * 3600 + m * 60 + s) * US_PER_SECOND + frac;
	return true;
}

/* "+HH[:MM[:SS]]" or "-..." -> offset seconds east of UTC; advances *p. */
static bool
parse_zone_offset(const char **p, const char *end, int *offset)
{
	int			sign,
				h,
				m = 0,
				s = 0;

	if (*p >= end || (**p != '+' && **p != '-'))
		return false;
	sign = (**p == '-') ? -1 : 1;
	(*p)++;
	if (!parse_fixed_digits(p, end, 2, &h))
		return false;
	if (*p < end && **p == ':')
	{
		(*p)++;
		if (!parse_fixed_digits(p, end, 2, &m))
			return false;
		if (*p < end && **p == ':')
		{
			(*p)++;
			if (!parse_fixed_digits(p, end, 2, &s))
				return false;
		}
	}
	*offset = sign * (h * 3600 + m * 60 + s);
	return true;
}

static bool
parse_bc_suffix(const char **p, const char *end, int64 *year)
{
	if (end - *p == 3 && memcmp(*p, " BC", 3) == 0)
	{
		/* 1 BC is astronomical year 0 */
		*year = 1 - *year;
		*p = end;
	}
	return *p == end;
}

static bool
append_timestamp(StringInfo out, const char *text, int len)
{
	const char *p = text;
	const char *end = text + len;
	int64		year;
	int			month,
				day;
	int64		time_us;
	int			offset = 0;
	int64		millis;
	int64		rem_us;

	if (text_equals(text, len, "infinity") || text_equals(text, len, "-infinity"))
	{
		appendStringInfoString(out, "null");
		return true;
	}
	if (!parse_date_part(&p, end, &year, &month, &day) || p >= end || *p != ' ')
		return false;
	p++;
	if (!parse_time_part(&p, end, &time_us))
		return false;
	if (p < end && (*p == '+' || *p == '-') && !parse_zone_offset(&p, end, &offset))
		return false;
	if (!parse_bc_suffix(&p, end, &year))
		return false;

	/*
	 * Microseconds since the epoch overflow int64 near the end of
	 * PostgreSQL's range (294276 AD), so keep milliseconds and the sub-ms
	 * part apart: millis + rem_us / 1000, both truncated toward zero as
	 * zero-cache computes them, so that its double rounds identically.
	 */
	millis = (days_from_civil(year, month, day) * 86400 - offset) * 1000 + time_us / 1000;
	rem_us = time_us % 1000;
	if (millis < 0 && rem_us > 0)
	{
		millis += 1;
		rem_us -= 1000;
	}

	/*
	 * Beyond JavaScript's Date range zero-cache cannot read the value at
	 * all; write the exact number of milliseconds instead of a double that
	 * would drop the fraction.
	 */
	if (millis > JS_DATE_MAX_MS || millis < -JS_DATE_MAX_MS)
		return zs_json_append_exact_millis(out, millis, (int) rem_us);
	zs_json_append_millis(out, millis, (int) rem_us);
	return true;
}

static bool
append_date(StringInfo out, const char *text, int len)
{
	const char *p = text;
	const char *end = text + len;
	int64		year;
	int			month,
				day;

	if (text_equals(text, len, "infinity") || text_equals(text, len, "-infinity"))
	{
		appendStringInfoString(out, "null");
		return true;
	}
	if (!parse_date_part(&p, end, &year, &month, &day) || !parse_bc_suffix(&p, end, &year))
		return false;
	zs_json_append_millis(out, days_from_civil(year, month, day) * MS_PER_DAY, 0);
	return true;
}

static bool
append_time(StringInfo out, const char *text, int len, bool with_zone)
{
	const char *p = text;
	const char *end = text + len;
	int64		us;
	int64		ms;
	int			offset = 0;

	if (!parse_time_part(&p, end, &us))
		return false;
	if (with_zone && !parse_zone_offset(&p, end, &offset))
		return false;
	if (p != end)
		return false;
	ms = us / 1000;
	if (with_zone)
	{
		ms -= (int64) offset * 1000;
		if (ms < 0)
			ms += MS_PER_DAY;
		else if (ms > MS_PER_DAY)
			ms -= MS_PER_DAY;
	}
	appendStringInfo(out, INT64_FORMAT, ms);
	return true;
}

static bool
append_bytea(StringInfo out, const char *text, int len)
{
	if (len < 2 || text[0] != '\\' || text[1] != 'x' || (len - 2) % 2 != 0)
		return false;
	appendStringInfoString(out, "{\"type\":\"Buffer\",\"data\":[");
	for (int i = 2; i < len; i += 2)
	{
		int			hi = zs_hex_value(text[i]);
		int			lo = zs_hex_value(text[i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		if (i > 2)
			appendStringInfoCharMacro(out, ',');
		appendStringInfo(out, "%d", hi * 16 + lo);
	}
	appendStringInfoString(out, "]}");
	return true;
}

static bool
append_integer(StringInfo out, const char *text, int len)
{
	int			start = (len > 0 && text[0] == '-') ? 1 : 0;

	if (len <= start)
		return false;
	/* a leading zero would not be JSON (PostgreSQL never writes one) */
	if (text[start] == '0' && len > start + 1)
		return false;
	for (int i = start; i < len; i++)
		if (text[i] < '0' || text[i] > '9')
			return false;
	appendBinaryStringInfo(out, text, len);
	return true;
}

static bool
is_nonfinite(const char *text, int len)
{
	return text_equals(text, len, "NaN") || text_equals(text, len, "Infinity") ||
		text_equals(text, len, "-Infinity");
}

/*
 * zero-cache reads a numeric as Number(text): the nearest double, so 1e-1000
 * is 0 and 2e308 is null (Infinity). Integers beyond 2^53 are written in
 * exponent form (a documented correction: zero-cache prints them as bare
 * integers, which its own BigInt-aware readers then misread).
 */
static bool
append_numeric(StringInfo out, const char *text, int len)
{
	if (is_nonfinite(text, len))
	{
		appendStringInfoString(out, "null");
		return true;
	}
	return zs_json_append_number_text_no_bigint(out, text, len);
}

bool
zs_value_append(StringInfo out, ZsValueKind kind, const char *text, int len)
{
	switch (kind)
	{
		case ZS_KIND_STRING:
		case ZS_KIND_JSON_TEXT:
			zs_json_append_string(out, text, len);
			return true;
		case ZS_KIND_INTEGER:
			return append_integer(out, text, len);
		case ZS_KIND_FLOAT:
			if (is_nonfinite(text, len))
			{
				appendStringInfoString(out, "null");
				return true;
			}
			return zs_json_append_shortest_text(out, text, len);
		case ZS_KIND_NUMERIC:
			return append_numeric(out, text, len);
		case ZS_KIND_BOOL:
			if (text_equals(text, len, "t"))
				appendStringInfoString(out, "true");
			else if (text_equals(text, len, "f"))
				appendStringInfoString(out, "false");
			else
				return false;
			return true;
		case ZS_KIND_JSON_PARSED:
			return zs_json_append_js_reparsed(out, text, len);
		case ZS_KIND_TIMESTAMP:
			return append_timestamp(out, text, len);
		case ZS_KIND_DATE:
			return append_date(out, text, len);
		case ZS_KIND_TIME:
			return append_time(out, text, len, false);
		case ZS_KIND_TIMETZ:
			return append_time(out, text, len, true);
		case ZS_KIND_BYTEA:
			return append_bytea(out, text, len);
	}
	return false;
}

/* ---------------------------------------------------------------------
 * Arrays: PostgreSQL's array_out text, e.g. {1,2}, {{"a b",NULL}},
 * [0:1]={x,y}. Elements are quoted when they contain special characters,
 * with backslash escapes inside quotes; an unquoted NULL is SQL NULL.
 * --------------------------------------------------------------------- */

typedef struct ArrayCursor
{
	const char *p;
	const char *end;
	char		delim;
	ZsValueKind elem_kind;
	StringInfoData elem;		/* scratch for one element's unescaped text */
} ArrayCursor;

static bool
array_copy_element(ArrayCursor *a, StringInfo out)
{
	bool		quoted = false;

	resetStringInfo(&a->elem);
	if (a->p < a->end && *a->p == '"')
	{
		quoted = true;
		a->p++;
		for (;;)
		{
			if (a->p >= a->end)
				return false;
			if (*a->p == '"')
			{
				a->p++;
				break;
			}
			if (*a->p == '\\')
			{
				a->p++;
				if (a->p >= a->end)
					return false;
			}
			appendStringInfoCharMacro(&a->elem, *a->p);
			a->p++;
		}
	}
	else
	{
		while (a->p < a->end && *a->p != a->delim && *a->p != '}')
		{
			if (*a->p == '\\')
			{
				a->p++;
				if (a->p >= a->end)
					return false;
			}
			appendStringInfoCharMacro(&a->elem, *a->p);
			a->p++;
		}
	}
	if (!quoted && a->elem.len == 4 && pg_strncasecmp(a->elem.data, "NULL", 4) == 0)
	{
		appendStringInfoString(out, "null");
		return true;
	}
	return zs_value_append(out, a->elem_kind, a->elem.data, a->elem.len);
}

static bool
array_copy_level(ArrayCursor *a, StringInfo out, int depth)
{
	bool		first = true;

	if (depth >= ARRAY_MAX_DEPTH || a->p >= a->end || *a->p != '{')
		return false;
	a->p++;
	appendStringInfoCharMacro(out, '[');
	if (a->p < a->end && *a->p == '}')
	{
		a->p++;
		appendStringInfoCharMacro(out, ']');
		return true;
	}
	for (;;)
	{
		bool		ok;

		if (!first)
			appendStringInfoCharMacro(out, ',');
		first = false;
		if (a->p < a->end && *a->p == '{')
			ok = array_copy_level(a, out, depth + 1);
		else
			ok = array_copy_element(a, out);
		if (!ok || a->p >= a->end)
			return false;
		if (*a->p == a->delim)
		{
			a->p++;
			continue;
		}
		if (*a->p == '}')
		{
			a->p++;
			appendStringInfoCharMacro(out, ']');
			return true;
		}
		return false;
	}
}

bool
zs_value_append_array(StringInfo out, ZsValueKind elem_kind, char delim,
				const char *text, int len)
{
	ArrayCursor a;
	bool		ok;

	a.p = text;
	a.end = text + len;
	a.delim = delim;
	a.elem_kind = (elem_kind == ZS_KIND_JSON_TEXT) ? ZS_KIND_JSON_PARSED : elem_kind;

	/* explicit bounds decoration: "[0:1]={...}" */
	if (a.p < a.end && *a.p == '[')
	{
		const char *eq = memchr(a.p, '=', len);

		if (eq == NULL)
			return false;
		a.p = eq + 1;
	}
	initStringInfo(&a.elem);
	ok = array_copy_level(&a, out, 0) && a.p == a.end;
	pfree(a.elem.data);
	return ok;
}
