/*-------------------------------------------------------------------------
 * watermark.h
 *	  Zero "lexi versions": order-preserving text encoding of commit LSNs.
 *
 * A watermark is base36(v) prefixed by one base36 digit holding
 * len(base36(v)) - 1, so byte-wise comparison equals numeric comparison.
 * Compiles as backend or frontend code (the unit tests use the latter).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_WATERMARK_H
#define ZS_WATERMARK_H

#include <stdbool.h>
#include <stdint.h>

/* a commit's watermark: 1 prefix digit + at most 13 base36 digits + NUL */
#define ZS_LSN_WATERMARK_MAXLEN 16

/*
 * Any state version: "<major>" or "<major>.<minor>", the minor counting the
 * synthetic (backfill) transactions after a major (docs/zero-protocol.md
 * §4.4).
 */
#define ZS_WATERMARK_MAXLEN (2 * ZS_LSN_WATERMARK_MAXLEN)

extern void zs_watermark_encode(uint64_t value, char *out);
extern bool zs_watermark_decode(const char *text, uint64_t *value);

/*
 * The state version after "<major>[.<minor>]": "<major>.<minor + 1>".
 * Returns false if the text is not a state version.
 */
extern bool zs_watermark_next_minor(const char *text, char *out);
extern void zs_lsn_format(uint64_t lsn, char *out);	/* "0000001B/3C4D5E6F" */

#endif							/* ZS_WATERMARK_H */
