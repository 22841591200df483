/*-------------------------------------------------------------------------
 * unit.h
 *	  Minimal assertion helpers for the frontend unit tests.
 *
 * Each test binary prints "N passed, M failed" as its last line and exits
 * non-zero on any failure.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_UNIT_H
#define ZS_UNIT_H

#include <stdio.h>
#include <string.h>

static int	unit_passed = 0;
static int	unit_failed = 0;

#define CHECK(cond, ...) \
	do { \
		if (cond) \
			unit_passed++; \
		else \
		{ \
			unit_failed++; \
			fprintf(stderr, "%s:%d: FAILED: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} while (0)

#define CHECK_STR(actual, expected) \
	CHECK(strcmp((actual), (expected)) == 0, "got <%s>, expected <%s>", (actual), (expected))

static inline int
unit_report(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, unit_passed, unit_failed);
	return unit_failed == 0 ? 0 : 1;
}

#endif							/* ZS_UNIT_H */
