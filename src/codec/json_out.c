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

#include "codec/json_out.h"

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

/* Significant digits kept while reading a decimal; more go to strtod. */
#define DIGITS_KEPT 20

/*
 * A decimal literal split into value = (negative ? -1 : 1) * 0.d * 10^n,
 * d being its significant digits without trailing zeros.
 */
typedef struct Decimal
{
	bool		negative;
	char		digits[DIGITS_KEPT];
	int			k;				/* digits kept (0 for a zero value) */
	bool		inexact;		/* nonzero digits beyond DIGITS_KEPT dropped */
	int			n;				/* decimal exponent */
} Decimal;

/*
 * Read "[-+]digits[.digits][e[-+]digits]" (either digit run may be empty,
 * not both). False if malformed.
 */
static bool
parse_decimal(const char *s, int len, Decimal *dec)
{
	int			i = 0;
	int			point_shift = 0;	/* exponent contribution of the digits */
	int			zeros = 0;		/* zeros after the last kept digit */
	bool		seen_point = false;
	bool		seen_digit = false;
	bool		started = false;	/* a nonzero digit was seen */
	long		e = 0;

	dec->negative = false;
	dec->k = 0;
	dec->inexact = false;
	if (i < len && (s[i] == '-' || s[i] == '+'))
		dec->negative = (s[i++] == '-');
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
		if (!started && c == '0')
		{
			/* leading zero: only shifts the exponent after the point */
			if (seen_point)
				point_shift--;
			continue;
		}
		started = true;
		if (!seen_point)
			point_shift++;
		if (c == '0')
		{
			zeros++;
			continue;
		}
		/* a nonzero digit: the zeros before it are significant */
		if (dec->k + zeros + 1 > DIGITS_KEPT)
		{
			dec->inexact = true;
			zeros = 0;
			continue;
		}
		memset(dec->digits + dec->k, '0', zeros);
		dec->k += zeros;
		zeros = 0;
		dec->digits[dec->k++] = c;
	}
	if (!seen_digit)
		return false;
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
			if (e < 1000000)
				e = e * 10 + (s[i] - '0');
		}
		if (!edigit)
			return false;
		if (eneg)
			e = -e;
	}
	if (i != len)
		return false;
	dec->n = point_shift + (int) e;
	return true;
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

/* Spell an exact decimal as JavaScript prints a number of the same digits. */
static void
append_digits(StringInfo out, const Decimal *dec, bool no_bigint)
{
	if (dec->k == 0)
	{
		/* JavaScript prints -0 as 0 */
		appendStringInfoCharMacro(out, '0');
		return;
	}
	if (no_bigint && dec->k <= dec->n && dec->n <= 21 &&
		exceeds_safe_integer(dec->digits, dec->k, dec->n))
	{
		if (dec->negative)
			appendStringInfoCharMacro(out, '-');
		append_exponent_form(out, dec->digits, dec->k, dec->n);
		return;
	}
	append_js_digits(out, dec->negative, dec->digits, dec->k, dec->n);
}

/*
 * The shortest round-trip digits of a double, as JavaScript prints them.
 * Ryu (PostgreSQL's float8out) finds them, except for some doubles of 2^53
 * and more (all integers), where it can return more digits than needed:
 * PostgreSQL prints 8.489840000000001e+21 where JavaScript prints
 * 8.48984e+21, the same double. There, the shortest correctly rounded
 * spelling that reads back as the same double is searched for, which is
 * the digit string ECMAScript's Number::toString specifies.
 */
static int
shortest_digits(double value, char *buf)
{
	int			len = double_to_shortest_decimal_buf(value, buf);

	if (fabs(value) >= 9007199254740992.0)
	{
		char		try[DOUBLE_SHORTEST_DECIMAL_LEN + 8];

		for (int precision = 1; precision < 17; precision++)
		{
			int			n = snprintf(try, sizeof(try), "%.*e", precision - 1, value);

			if (strtod(try, NULL) == value)
			{
				if (n < len)
				{
					memcpy(buf, try, n + 1);
					len = n;
				}
				break;
			}
		}
	}
	return len;
}

static void
append_double(StringInfo out, double value, bool no_bigint)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN + 8];
	int			len;
	Decimal		dec;

	if (isnan(value) || isinf(value))
	{
		appendStringInfoString(out, "null");
		return;
	}
	len = shortest_digits(value, buf);
	if (parse_decimal(buf, len, &dec))
		append_digits(out, &dec, no_bigint);
}

/* Number(text) as a correctly rounded double (strtod is, like JavaScript). */
static double
decimal_text_to_double(const char *s, int len)
{
	char		buf[64];
	char	   *copy = buf;
	double		value;

	if (len >= (int) sizeof(buf))
		copy = palloc(len + 1);
	memcpy(copy, s, len);
	copy[len] = '\0';
	value = strtod(copy, NULL);
	if (copy != buf)
		pfree(copy);
	return value;
}

/*
 * A decimal of at most DBL_DIG (15) significant digits whose magnitude is
 * well inside the normal doubles reads back from a double unchanged, and no
 * shorter decimal reads as the same double: its own digits are the
 * shortest ones, and no conversion is needed.
 */
static bool
is_exact_double_digits(const Decimal *dec)
{
	return !dec->inexact && dec->k <= 15 && dec->n >= -306 && dec->n <= 308;
}

static bool
append_number(StringInfo out, const char *s, int len, bool no_bigint)
{
	Decimal		dec;

	if (!parse_decimal(s, len, &dec))
		return false;
	if (dec.k == 0 && !dec.inexact)
		appendStringInfoCharMacro(out, '0');
	else if (is_exact_double_digits(&dec))
		append_digits(out, &dec, no_bigint);
	else
		append_double(out, decimal_text_to_double(s, len), no_bigint);
	return true;
}

bool
zs_json_append_shortest_text(StringInfo out, const char *s, int len)
{
	Decimal		dec;

	if (!parse_decimal(s, len, &dec))
		return false;
	/*
	 * Longer than any shortest form, beyond the doubles, or 2^53 and more,
	 * where PostgreSQL's digits are not always the shortest: convert.
	 */
	if (dec.inexact || dec.n > 309 || dec.n < -323 || dec.n >= 16)
		append_double(out, decimal_text_to_double(s, len), false);
	else
		append_digits(out, &dec, false);
	return true;
}

bool
zs_json_append_exact_decimal_no_bigint(StringInfo out, const char *s, int len)
{
	Decimal		dec;

	if (!parse_decimal(s, len, &dec))
		return false;
	if (dec.inexact)
		append_double(out, decimal_text_to_double(s, len), true);
	else
		append_digits(out, &dec, true);
	return true;
}

bool
zs_json_append_number_text(StringInfo out, const char *s, int len)
{
	return append_number(out, s, len, false);
}

bool
zs_json_append_number_text_no_bigint(StringInfo out, const char *s, int len)
{
	return append_number(out, s, len, true);
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

/*
 * Below 2^42 the doubles are less than 2^-11 apart, closer than the
 * microsecond grid's 0.001 ms: the decimal of a whole number of
 * microseconds, when its nearest double is the one computed, is the only
 * decimal of that many digits or fewer that reads back as that double, so
 * it is what JavaScript prints. The nearest double of millis.sub is one
 * correctly rounded division of an exact integer.
 */
#define MILLIS_EXACT_LIMIT	(INT64CONST(1) << 42)
#define MAX_SAFE_INTEGER	INT64CONST(9007199254740991)

/*
 * The decimal digits of value, written backwards from end; returns where
 * they start. The hot path's integers (timestamps, LSNs' neighbours) cost a
 * snprintf format parse each otherwise.
 */
static char *
uint64_digits(char *end, uint64 value)
{
	do
	{
		*--end = (char) ('0' + value % 10);
		value /= 10;
	} while (value > 0);
	return end;
}

void
zs_json_append_int64(StringInfo out, int64 value)
{
	char		buf[24];
	char	   *start = uint64_digits(buf + sizeof(buf),
									  value < 0 ? -(uint64) value : (uint64) value);

	if (value < 0)
		*--start = '-';
	appendBinaryStringInfo(out, start, buf + sizeof(buf) - start);
}

/* "[-]millis.sss" (millis + sub_us / 1000 as an exact decimal) in buf; its length */
static int
millis_text(char *buf, size_t size, int64 millis, int sub_us)
{
	char		digits[24];
	char	   *start = uint64_digits(digits + sizeof(digits),
									  millis < 0 ? -(uint64) millis : (uint64) millis);
	int			ndigits = digits + sizeof(digits) - start;
	int			sub = sub_us < 0 ? -sub_us : sub_us;
	int			len = 0;

	Assert(size >= sizeof(digits) + 5 && sub < 1000);
	if (millis < 0 || sub_us < 0)
		buf[len++] = '-';
	memcpy(buf + len, start, ndigits);
	len += ndigits;
	buf[len++] = '.';
	buf[len++] = (char) ('0' + sub / 100);
	buf[len++] = (char) ('0' + sub / 10 % 10);
	buf[len++] = (char) ('0' + sub % 10);
	buf[len] = '\0';
	return len;
}

void
zs_json_append_millis(StringInfo out, int64 millis, int sub_us)
{
	double		value = (double) millis + (double) (sub_us * 1000) * 1e-6;
	char		buf[48];
	int			len;

	if (sub_us == 0 && millis >= -MAX_SAFE_INTEGER && millis <= MAX_SAFE_INTEGER)
	{
		/* a whole number of milliseconds: exact, printed as an integer */
		zs_json_append_int64(out, millis);
		return;
	}
	if (millis > -MILLIS_EXACT_LIMIT && millis < MILLIS_EXACT_LIMIT &&
		value == (double) (millis * 1000 + sub_us) / 1000.0)
	{
		len = millis_text(buf, sizeof(buf), millis, sub_us);
		while (buf[len - 1] == '0')
			len--;
		appendBinaryStringInfo(out, buf, len);
		return;
	}
	append_double(out, value, true);
}

bool
zs_json_append_exact_millis(StringInfo out, int64 millis, int sub_us)
{
	char		buf[48];
	int			len = millis_text(buf, sizeof(buf), millis, sub_us);

	return zs_json_append_exact_decimal_no_bigint(out, buf, len);
}

void
zs_json_append_utf8(StringInfo out, unsigned int cp)
{
	unsigned char buf[4];

	unicode_to_utf8((pg_wchar) cp, buf);
	appendBinaryStringInfo(out, (const char *) buf, pg_utf_mblen(buf));
}
