/*-------------------------------------------------------------------------
 * watermark.c
 *	  Lexi-version watermarks (docs/zero-protocol.md §4).
 *
 * A commit's watermark is the "major" part. Backfill transactions take
 * the minor versions after the last major (zs_watermark_next_minor);
 * decoding reads the major part and ignores a ".minor" suffix.
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "codec/watermark.h"

static const char base36_digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";

static int
base36_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	return -1;
}

void
zs_watermark_encode(uint64_t value, char *out)
{
	char		digits[16];
	int			n = 0;

	do
	{
		digits[n++] = base36_digits[value % 36];
		value /= 36;
	} while (value > 0);

	out[0] = base36_digits[n - 1];
	for (int i = 0; i < n; i++)
		out[1 + i] = digits[n - 1 - i];
	out[n + 1] = '\0';
}

bool
zs_watermark_decode(const char *text, uint64_t *value)
{
	int			prefix;
	size_t		len;
	uint64_t	v = 0;
	const char *dot = strchr(text, '.');

	len = dot ? (size_t) (dot - text) : strlen(text);
	if (len < 2)
		return false;
	prefix = base36_value(text[0]);
	if (prefix < 0 || (size_t) prefix != len - 2)
		return false;
	if (len - 1 > 13)
		return false;
	for (size_t i = 1; i < len; i++)
	{
		int			d = base36_value(text[i]);

		if (d < 0)
			return false;
		/* reject values that overflow 64 bits */
		if (v > (UINT64_MAX - (uint64_t) d) / 36)
			return false;
		v = v * 36 + (uint64_t) d;
	}
	/* a leading zero digit would make the encoding non-canonical */
	if (len > 2 && text[1] == '0')
		return false;
	*value = v;
	return true;
}

void
zs_lsn_format(uint64_t lsn, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	uint32_t	parts[2] = {(uint32_t) (lsn >> 32), (uint32_t) lsn};
	char	   *p = out;

	for (int part = 0; part < 2; part++)
	{
		for (int shift = 28; shift >= 0; shift -= 4)
			*p++ = hex[(parts[part] >> shift) & 0xF];
		if (part == 0)
			*p++ = '/';
	}
	*p = '\0';
}

bool
zs_watermark_next_minor(const char *text, char *out)
{
	const char *dot = strchr(text, '.');
	size_t		major_len = dot ? (size_t) (dot - text) : strlen(text);
	uint64_t	major;
	uint64_t	minor = 0;
	char		major_text[ZS_LSN_WATERMARK_MAXLEN];

	if (major_len >= sizeof(major_text))
		return false;
	memcpy(major_text, text, major_len);
	major_text[major_len] = '\0';
	if (!zs_watermark_decode(major_text, &major) ||
		(dot != NULL && !zs_watermark_decode(dot + 1, &minor)) ||
		(dot != NULL && strchr(dot + 1, '.') != NULL) ||
		minor == UINT64_MAX)
		return false;
	memcpy(out, major_text, major_len);
	out[major_len] = '.';
	zs_watermark_encode(minor + 1, out + major_len + 1);
	return true;
}
