/*-------------------------------------------------------------------------
 * compat/base64.h
 *	  PostgreSQL's base64 (common/base64.h) on 15 to 18: 18 types the
 *	  binary side as uint8 instead of char. Safe in FRONTEND code.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_BASE64_H
#define ZS_COMPAT_BASE64_H

#include "common/base64.h"

#if PG_VERSION_NUM >= 180000
typedef uint8 zs_b64_byte;
#else
typedef char zs_b64_byte;
#endif

/* len bytes at src as base64 in dst; its length, or -1 */
static inline int
zs_b64_encode(const void *src, int len, char *dst, int dstlen)
{
	return pg_b64_encode((const zs_b64_byte *) src, len, dst, dstlen);
}

/* len base64 characters at src as bytes in dst; their number, or -1 */
static inline int
zs_b64_decode(const char *src, int len, void *dst, int dstlen)
{
	return pg_b64_decode(src, len, (zs_b64_byte *) dst, dstlen);
}

#endif							/* ZS_COMPAT_BASE64_H */
