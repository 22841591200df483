/*-------------------------------------------------------------------------
 * change_json.c
 *	  Encode pgoutput text values the way zero-cache's change source does.
 *
 * zero-cache parses each text value with a per-type parser and then
 * serializes the row with a BigInt-aware JSON.stringify. We go straight
 * from the text to the same JSON bytes, without building values: int8
 * digits are copied verbatim, floats keep their shortest digits and are
 * re-spelled the JavaScript way, dates and times become milliseconds.
 *
 * Where zero-cache 1.9.0 produces a wrong value we produce the right one in
 * the same JSON type (shared/docs/golden/README.md): pre-1970 fractional
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

#include "change_json.h"
#include "hex.h"
#include "json_out.h"

#define MS_PER_DAY		INT64CONST(86400000)
#define US_PER_SECOND	INT64CONST(1000000)
#define JSON_MAX_DEPTH	512

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

/* "YYYY[Y...]-MM-DD" -> year, month, day; advances *p. */
static bool
parse_date_part(const char **p, const char *end, int64 *year, int *month, int *day)
{
	int64		y = 0;
	int			ndigits = 0;

	while (*p < end && **p >= '0' && **p <= '9' && ndigits < 9)
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
	int64		us;
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

	us = days_from_civil(year, month, day) * 86400 * US_PER_SECOND + time_us
		- (int64) offset * US_PER_SECOND;

	/*
	 * Same arithmetic as zero-cache: whole milliseconds plus the sub-ms part
	 * scaled separately, both truncated toward zero, so the double rounds
	 * identically.
	 */
	millis = us / 1000;
	rem_us = us % 1000;
	zs_json_append_double_no_bigint(out, (double) millis + (double) (rem_us * 1000) * 1e-6);
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
	zs_json_append_double_no_bigint(out, (double) (days_from_civil(year, month, day) * MS_PER_DAY));
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

/* Significant digits of a plain decimal (numeric_out never uses exponents). */
static int
significant_digits(const char *text, int len)
{
	int			first = -1;
	int			last = -1;
	int			count = 0;

	for (int i = 0; i < len; i++)
	{
		if (text[i] >= '1' && text[i] <= '9')
		{
			if (first < 0)
				first = i;
			last = i;
		}
	}
	if (first < 0)
		return 0;
	for (int i = first; i <= last; i++)
		if (text[i] >= '0' && text[i] <= '9')
			count++;
	return count;
}

static bool
append_numeric(StringInfo out, const char *text, int len)
{
	char		buf[128];
	char	   *endp;
	double		value;

	if (is_nonfinite(text, len))
	{
		appendStringInfoString(out, "null");
		return true;
	}
	if (len <= 0)
		return false;

	/*
	 * A decimal of at most 15 significant digits (DBL_DIG) reads back from
	 * a double unchanged, so its own digits are the shortest ones.
	 */
	if (significant_digits(text, len) <= 15)
		return zs_json_append_decimal_no_bigint(out, text, len);
	if (len < (int) sizeof(buf))
	{
		memcpy(buf, text, len);
		buf[len] = '\0';
		value = strtod(buf, &endp);
		if (*endp != '\0')
			return false;
	}
	else
	{
		char	   *copy = pnstrdup(text, len);

		value = strtod(copy, &endp);
		if (*endp != '\0')
		{
			pfree(copy);
			return false;
		}
		pfree(copy);
	}
	zs_json_append_double_no_bigint(out, value);
	return true;
}

/* ---------------------------------------------------------------------
 * Parsed JSON (elements of json[] / jsonb[]): re-serialized compactly as
 * JSON.stringify(BigIntJSON.parse(text)) would.
 * --------------------------------------------------------------------- */

typedef struct JsonCursor
{
	const char *p;
	const char *end;
} JsonCursor;

static void
skip_ws(JsonCursor *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}


/* Decode a JSON string literal at c->p into raw UTF-8, then re-escape it. */
static bool
json_copy_string(JsonCursor *c, StringInfo out)
{
	StringInfoData raw;
	bool		ok = false;

	if (c->p >= c->end || *c->p != '"')
		return false;
	c->p++;
	initStringInfo(&raw);
	while (c->p < c->end)
	{
		char		ch = *c->p++;

		if (ch == '"')
		{
			ok = true;
			break;
		}
		if (ch != '\\')
		{
			appendStringInfoCharMacro(&raw, ch);
			continue;
		}
		if (c->p >= c->end)
			break;
		ch = *c->p++;
		switch (ch)
		{
			case '"':
			case '\\':
			case '/':
				appendStringInfoCharMacro(&raw, ch);
				break;
			case 'b':
				appendStringInfoCharMacro(&raw, '\b');
				break;
			case 'f':
				appendStringInfoCharMacro(&raw, '\f');
				break;
			case 'n':
				appendStringInfoCharMacro(&raw, '\n');
				break;
			case 'r':
				appendStringInfoCharMacro(&raw, '\r');
				break;
			case 't':
				appendStringInfoCharMacro(&raw, '\t');
				break;
			case 'u':
				{
					unsigned int cp;
					unsigned int lo;

					if (c->end - c->p < 4 || !zs_hex4_value(c->p, &cp))
						goto done;
					c->p += 4;
					if (cp >= 0xD800 && cp <= 0xDBFF && c->end - c->p >= 6 &&
						c->p[0] == '\\' && c->p[1] == 'u' && zs_hex4_value(c->p + 2, &lo) &&
						lo >= 0xDC00 && lo <= 0xDFFF)
					{
						cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
						c->p += 6;
					}
					/* a lone surrogate cannot be valid UTF-8: keep it escaped */
					if (cp >= 0xD800 && cp <= 0xDFFF)
						appendStringInfo(&raw, "\\u%04x", cp);
					else
						zs_append_utf8(&raw, cp);
					break;
				}
			default:
				goto done;
		}
	}
done:
	if (ok)
		zs_json_append_string(out, raw.data, raw.len);
	pfree(raw.data);
	return ok;
}

static bool
json_copy_number(JsonCursor *c, StringInfo out)
{
	const char *start = c->p;
	bool		integral = true;

	if (c->p < c->end && *c->p == '-')
		c->p++;
	while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' ||
							 *c->p == 'e' || *c->p == 'E' || *c->p == '+' || *c->p == '-'))
	{
		if (*c->p == '.' || *c->p == 'e' || *c->p == 'E')
			integral = false;
		c->p++;
	}
	if (c->p == start)
		return false;
	/* BigIntJSON keeps integer literals exact; "-0" is a double -0 though */
	if (integral && !text_equals(start, (int) (c->p - start), "-0"))
		return append_integer(out, start, (int) (c->p - start));
	return zs_json_append_decimal_text(out, start, (int) (c->p - start));
}

static bool json_copy_value(JsonCursor *c, StringInfo out, int depth);

static bool
json_copy_container(JsonCursor *c, StringInfo out, int depth, char open, char close)
{
	bool		first = true;

	if (depth > JSON_MAX_DEPTH)
		return false;
	c->p++;
	appendStringInfoCharMacro(out, open);
	skip_ws(c);
	if (c->p < c->end && *c->p == close)
	{
		c->p++;
		appendStringInfoCharMacro(out, close);
		return true;
	}
	for (;;)
	{
		if (!first)
			appendStringInfoCharMacro(out, ',');
		first = false;
		skip_ws(c);
		if (open == '{')
		{
			if (!json_copy_string(c, out))
				return false;
			skip_ws(c);
			if (c->p >= c->end || *c->p != ':')
				return false;
			c->p++;
			appendStringInfoCharMacro(out, ':');
		}
		if (!json_copy_value(c, out, depth + 1))
			return false;
		skip_ws(c);
		if (c->p < c->end && *c->p == ',')
		{
			c->p++;
			continue;
		}
		if (c->p < c->end && *c->p == close)
		{
			c->p++;
			appendStringInfoCharMacro(out, close);
			return true;
		}
		return false;
	}
}

static bool
json_copy_literal(JsonCursor *c, StringInfo out, const char *literal)
{
	size_t		n = strlen(literal);

	if ((size_t) (c->end - c->p) < n || memcmp(c->p, literal, n) != 0)
		return false;
	c->p += n;
	appendStringInfoString(out, literal);
	return true;
}

static bool
json_copy_value(JsonCursor *c, StringInfo out, int depth)
{
	skip_ws(c);
	if (c->p >= c->end)
		return false;
	switch (*c->p)
	{
		case '{':
			return json_copy_container(c, out, depth, '{', '}');
		case '[':
			return json_copy_container(c, out, depth, '[', ']');
		case '"':
			return json_copy_string(c, out);
		case 't':
			return json_copy_literal(c, out, "true");
		case 'f':
			return json_copy_literal(c, out, "false");
		case 'n':
			return json_copy_literal(c, out, "null");
		default:
			return json_copy_number(c, out);
	}
}

static bool
append_parsed_json(StringInfo out, const char *text, int len)
{
	JsonCursor	c = {text, text + len};

	if (!json_copy_value(&c, out, 0))
		return false;
	skip_ws(&c);
	return c.p == c.end;
}

bool
zs_append_value(StringInfo out, ZsValueKind kind, const char *text, int len)
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
			return zs_json_append_decimal_text(out, text, len);
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
			return append_parsed_json(out, text, len);
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
	return zs_append_value(out, a->elem_kind, a->elem.data, a->elem.len);
}

static bool
array_copy_level(ArrayCursor *a, StringInfo out, int depth)
{
	bool		first = true;

	if (depth > JSON_MAX_DEPTH || a->p >= a->end || *a->p != '{')
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
zs_append_array(StringInfo out, ZsValueKind elem_kind, char delim,
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
