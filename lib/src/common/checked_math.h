/* The library's rule for absurd numbers in a snapshot (docs/security.md): a size beyond
 * what a GPU could hold, or a time whose differences cannot be represented, is bad
 * input, reported with the byte offset of its entry -- never a wrapped sum.
 *
 * - Every size read from the file (trace entries, segments, blocks) is below
 *   MS_MAX_BYTES (2^56 B = 64 PiB), checked once where it is read.
 * - Sums of sizes (live, reserved, reconstructed bytes) are kept within +-MS_MAX_BYTES
 *   where they are formed: each step adds less than 2^56 to a value within 2^56, so one
 *   compare after the step suffices and nothing can overflow before it.
 * - Every time_us (trace entries, annotations) lies strictly within +-MS_MAX_TIME_US
 *   (2^62 us, about 146,000 years), so the difference of any two times fits an int64. */
#ifndef MEMSNAP_CHECKED_MATH_H
#define MEMSNAP_CHECKED_MATH_H

#include <stdbool.h>
#include <stdint.h>

#define MS_MAX_BYTES ((uint64_t)1 << 56)
#define MS_MAX_TIME_US ((int64_t)1 << 62)

/* A size (or a sum of sizes) within the ceiling. Negative values, seen as unsigned,
 * are far beyond it. */
static inline bool ms__size_ok(uint64_t v)
{
    return v < MS_MAX_BYTES;
}

/* A signed running sum of sizes within +-MS_MAX_BYTES. */
static inline bool ms__sum_ok(int64_t v)
{
    return (uint64_t)v + MS_MAX_BYTES <= 2 * MS_MAX_BYTES;
}

/* -2^62 < t < 2^62, in one compare. */
static inline bool ms__time_ok(int64_t t)
{
    return (uint64_t)t + (uint64_t)(MS_MAX_TIME_US - 1) < ((uint64_t)1 << 63) - 1;
}

#endif
