/* Three-way comparison (-1, 0, 1) for qsort comparators: one rule, so an ordering written
 * as "by this key, then that one" is one line a key instead of an if-chain each.
 * Json-local for now: lib/src/common may grow the same helper (issue 36); the two are
 * to become one. */
#ifndef MEMSNAP_JSON_CMP_H
#define MEMSNAP_JSON_CMP_H

#include <stdint.h>

static inline int ms__json_cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static inline int ms__json_cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

/* A comparison by two keys: the first's, or where it ties the second's. */
static inline int ms__json_cmp_then(int first, int second)
{
    return first ? first : second;
}

/* Not for NaN (it compares equal to everything). */
static inline int ms__json_cmp_dbl(double a, double b)
{
    return (a > b) - (a < b);
}

#endif
