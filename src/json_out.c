/*-------------------------------------------------------------------------
 * json_out.c
 *	  JSON.stringify-compatible strings and numbers.
 *
 * zero-cache serializes with JavaScript, and zero_stream's stored change
 * text must be byte-identical to it, so numbers are rendered from their
 * shortest round-trip digits with ECMAScript's Number::toString rules
 * (integer form up to 21 digits, "0.000001" down to 1e-6, exponent form
 * beyond), and strings escape exactly what JSON.stringify escapes.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include <math.h>

#include "common/shortest_dec.h"

#include "mb/pg_wchar.h"

#include "json_out.h"

void
zs_json_append_string(StringInfo out, const char *s, int len)
{
	static const char hex[] = "0123456789abcdef";
	int			run_start = 0;

	enlargeStringInfo(out, len + 2);
	appendStringInfoCharMacro(out, '"');
	for (int i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];
		const char *esc = NULL;
		char		ubuf[7];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		switch (c)
		{
			case '"':
				esc = "\\\"";
				break;
			case '\\':
				esc = "\\\\";
				break;
			case '\b':
				esc = "\\b";
				break;
			case '\f':
				esc = "\\f";
				break;
			case '\n':
				esc = "\\n";
				break;
			case '\r':
				esc = "\\r";
				break;
			case '\t':
				esc = "\\t";
				break;
			default:
				ubuf[0] = '\\';
				ubuf[1] = 'u';
				ubuf[2] = '0';
				ubuf[3] = '0';
				ubuf[4] = hex[c >> 4];
				ubuf[5] = hex[c & 0xF];
				ubuf[6] = '\0';
				esc = ubuf;
				break;
		}
		appendBinaryStringInfo(out, s + run_start, i - run_start);
		appendStringInfoString(out, esc);
		run_start = i + 1;
	}
	appendBinaryStringInfo(out, s + run_start, len - run_start);
	appendStringInfoCharMacro(out, '"');
}

void
zs_json_append_cstring(StringInfo out, const char *s)
{
	zs_json_append_string(out, s, (int) strlen(s));
}

/*
 * Render digits d[0..k-1] with decimal exponent n (value = 0.d * 10^n) in
 * exponent form: "1e+21", "1.5e-7".
 */
static void
append_exponent_form(StringInfo out, const char *d, int k, int n)
{
	int			e = n - 1;

	appendStringInfoCharMacro(out, d[0]);
	if (k > 1)
	{
		appendStringInfoCharMacro(out, '.');
		appendBinaryStringInfo(out, d + 1, k - 1);
	}
	appendStringInfo(out, "e%c%d", e < 0 ? '-' : '+', e < 0 ? -e : e);
}

/*
 * Render digits d[0..k-1] with decimal exponent n (value = 0.d * 10^n) per
 * ECMAScript Number::toString.
 */
static void
append_js_digits(StringInfo out, bool negative, const char *d, int k, int n)
{
	if (negative)
		appendStringInfoCharMacro(out, '-');
	if (k <= n && n <= 21)
	{
		appendBinaryStringInfo(out, d, k);
		for (int i = k; i < n; i++)
			appendStringInfoCharMacro(out, '0');
	}
	else if (0 < n && n <= 21)
	{
		appendBinaryStringInfo(out, d, n);
		appendStringInfoCharMacro(out, '.');
		appendBinaryStringInfo(out, d + n, k - n);
	}
	else if (-6 < n && n <= 0)
	{
		appendStringInfoString(out, "0.");
		for (int i = 0; i < -n; i++)
			appendStringInfoCharMacro(out, '0');
		appendBinaryStringInfo(out, d, k);
	}
	else
		append_exponent_form(out, d, k, n);
}

/*
 * Split a decimal literal into significant digits and exponent. Returns the
 * number of significant digits (0 for a zero value), or -1 if malformed.
 */
static int
parse_decimal(const char *s, int len, bool *negative, char *digits,
			  int maxdigits, int *exponent)
{
	int			i = 0;
	int			k = 0;
	int			point_shift = 0;	/* digits seen before the point */
	bool		seen_point = false;
	bool		seen_digit = false;
	long		e = 0;

	*negative = false;
	if (i < len && (s[i] == '-' || s[i] == '+'))
		*negative = (s[i++] == '-');
	for (; i < len; i++)
	{
		char		c = s[i];

		if (c == '.' && !seen_point)
		{
			seen_point = true;
			continue;
		}
		if (c < '0' || c > '9')
			break;
		seen_digit = true;
		if (k == 0 && c == '0')
		{
			/* leading zero: only shifts the exponent after the point */
			if (seen_point)
				point_shift--;
			continue;
		}
		if (k >= maxdigits)
			return -1;
		digits[k++] = c;
		if (!seen_point)
			point_shift++;
	}
	if (!seen_digit)
		return -1;
	if (i < len && (s[i] == 'e' || s[i] == 'E'))
	{
		bool		eneg = false;
		bool		edigit = false;

		i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			eneg = (s[i++] == '-');
		for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
		{
			edigit = true;
			if (e < 100000)
				e = e * 10 + (s[i] - '0');
		}
		if (!edigit)
			return -1;
		if (eneg)
			e = -e;
	}
	if (i != len)
		return -1;
	while (k > 0 && digits[k - 1] == '0')
		k--;
	*exponent = point_shift + (int) e;
	return k;
}

/*
 * Does the integer with digits d[0..k-1] and decimal exponent n exceed
 * 2^53 - 1? Only called for integer-valued numbers (k <= n).
 */
static bool
exceeds_safe_integer(const char *d, int k, int n)
{
	static const char max_safe[] = "9007199254740991";
	char		padded[17];

	if (n != 16)
		return n > 16;
	memset(padded, '0', 16);
	memcpy(padded, d, k);
	padded[16] = '\0';
	return strcmp(padded, max_safe) > 0;
}

static bool
append_decimal(StringInfo out, const char *s, int len, bool no_bigint)
{
	char		digits[64];
	bool		negative;
	int			n;
	int			k = parse_decimal(s, len, &negative, digits, sizeof(digits), &n);

	if (k < 0)
		return false;
	if (k == 0)
	{
		/* JavaScript prints -0 as 0 */
		appendStringInfoCharMacro(out, '0');
		return true;
	}
	if (no_bigint && k <= n && n <= 21 && exceeds_safe_integer(digits, k, n))
	{
		if (negative)
			appendStringInfoCharMacro(out, '-');
		append_exponent_form(out, digits, k, n);
		return true;
	}
	append_js_digits(out, negative, digits, k, n);
	return true;
}

bool
zs_json_append_decimal_text(StringInfo out, const char *s, int len)
{
	return append_decimal(out, s, len, false);
}

/*
 * Ryu (PostgreSQL's float8out) gives the shortest round-trip digits, the
 * same digits JavaScript prints; only their spelling differs.
 */
static void
append_double(StringInfo out, double value, bool no_bigint)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];
	int			len;

	if (isnan(value) || isinf(value))
	{
		appendStringInfoString(out, "null");
		return;
	}
	len = double_to_shortest_decimal_buf(value, buf);
	(void) append_decimal(out, buf, len, no_bigint);
}

bool
zs_json_append_decimal_no_bigint(StringInfo out, const char *s, int len)
{
	return append_decimal(out, s, len, true);
}

void
zs_json_append_double(StringInfo out, double value)
{
	append_double(out, value, false);
}

void
zs_json_append_double_no_bigint(StringInfo out, double value)
{
	append_double(out, value, true);
}

void
zs_append_utf8(StringInfo out, unsigned int cp)
{
	unsigned char buf[4];

	unicode_to_utf8((pg_wchar) cp, buf);
	appendBinaryStringInfo(out, (const char *) buf, pg_utf_mblen(buf));
}
