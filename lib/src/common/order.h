/* The library's one three-way comparison, for every qsort and bsearch comparator:
 * -1, 0 or 1 as a is below, equal to or above b. A descending order swaps the operands.
 * Keys are compared, never subtracted, so no difference can overflow. Included by
 * internal.h. */
#ifndef MEMSNAP_ORDER_H
#define MEMSNAP_ORDER_H

#include <stddef.h>
#include <stdint.h>

/* Each operand is evaluated twice: pass plain values or fields. */
#define MS__CMP(a, b) (((a) > (b)) - ((a) < (b)))
/* Ties on the first key are broken by the second, and by the third. */
#define MS__CMP2(a1, b1, a2, b2) ((a1) != (b1) ? MS__CMP(a1, b1) : MS__CMP(a2, b2))
#define MS__CMP3(a1, b1, a2, b2, a3, b3)                                                    \
    ((a1) != (b1) ? MS__CMP(a1, b1) : MS__CMP2(a2, b2, a3, b3))

/* Comparators of arrays of plain values (order.c), ascending. */
int ms__cmp_u32(const void *a, const void *b);
int ms__cmp_u64(const void *a, const void *b);
int ms__cmp_i64(const void *a, const void *b);
int ms__cmp_double(const void *a, const void *b);

/* The one binary search: `out` = the first index `mid` of [0, n) at which `before` (an
 * expression of mid, true for a prefix of the indexes and false after) is false; n when
 * it never is. */
#define MS__PARTITION(out, n, mid, before)                                                    \
    do {                                                                                      \
        size_t lo_ = 0, hi_ = (n);                                                            \
        while (lo_ < hi_) {                                                                   \
            size_t mid = lo_ + (hi_ - lo_) / 2;                                               \
            if (before)                                                                       \
                lo_ = mid + 1;                                                                \
            else                                                                              \
                hi_ = mid;                                                                    \
        }                                                                                     \
        (out) = lo_;                                                                          \
    } while (0)

/* The first index of the ascending v[0..n) whose value is above key; n when none. */
static inline size_t ms__first_above_i64(const int64_t *v, size_t n, int64_t key)
{
    size_t at;
    MS__PARTITION(at, n, mid, v[mid] <= key);
    return at;
}

/* The first index of the ascending v[0..n) whose value is not below key; n when none. */
size_t ms__lower_u64(const uint64_t *v, size_t n, uint64_t key);
/* The same for n records of `size` bytes at base, sorted by qsort comparator cmp. */
size_t ms__lower_bound(const void *base, size_t n, size_t size, const void *key,
                       int (*cmp)(const void *, const void *));

/* Of n > 0 records sorted by an int64_t field (records `stride` bytes apart, the field
 * `off` bytes in), the last whose field is at or below `key`; 0 when none is, which the
 * caller tells apart by the first record. MS__LAST_AT_OR_BELOW(arr, n, field, key) for
 * an array: the iteration, phase or segment an event falls in. */
static inline size_t ms__last_at_or_below(const void *base, size_t n, size_t stride, size_t off,
                                          int64_t key)
{
    const char *p = (const char *)base + off;
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (*(const int64_t *)(const void *)(p + mid * stride) <= key)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}
#define MS__LAST_AT_OR_BELOW(arr, n, field, key)                                              \
    ms__last_at_or_below((arr), (n), sizeof *(arr),                                           \
                         (size_t)((const char *)&(arr)->field - (const char *)(arr)), (key))

#endif
