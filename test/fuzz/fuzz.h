/*-------------------------------------------------------------------------
 * fuzz.h
 *	  Shared helpers of the libFuzzer targets (test/fuzz/fuzz_*.c).
 *
 * The targets compile as frontend code, like the unit tests, with
 * -fsanitize=fuzzer,address,undefined (see test/fuzz/run.sh). Besides the
 * sanitizers' own reports, each target checks properties of what the codec
 * returns; FUZZ_CHECK aborts on a violation, which libFuzzer reports as a
 * crash and saves the input for.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_FUZZ_H
#define ZS_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond, what) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "%s:%d: fuzz check failed: %s (%s)\n", \
					__FILE__, __LINE__, (what), #cond); \
			abort(); \
		} \
	} while (0)

extern int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A small deterministic generator, for choices derived from the input. */
static inline uint32_t
fuzz_next(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 16;
}

#endif							/* ZS_FUZZ_H */
