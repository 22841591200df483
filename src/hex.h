/*-------------------------------------------------------------------------
 * hex.h
 *	  The value of one hexadecimal digit.
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

#endif							/* ZS_HEX_H */
