/*-------------------------------------------------------------------------
 * hex.h
 *	  The value of hexadecimal digits.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_HEX_H
#define ZS_HEX_H

/* 0..15, or -1 if c is not a hexadecimal digit */
static inline int
zs_hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The value of four hexadecimal digits at p (a \\u escape); false if one is not */
static inline bool
zs_hex4_value(const char *p, unsigned int *value)
{
	unsigned int v = 0;

	for (int i = 0; i < 4; i++)
	{
		int			h = zs_hex_value(p[i]);

		if (h < 0)
			return false;
		v = v * 16 + h;
	}
	*value = v;
	return true;
}

#endif							/* ZS_HEX_H */
