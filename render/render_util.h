/* Helpers shared by render/'s own files, not part of its interface. (render/ cannot use
 * lib/src/internal.h: the library's private header stays the library's.) */
#ifndef MEMSNAP_RENDER_UTIL_H
#define MEMSNAP_RENDER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

/* Fills err (when not NULL) with code, no offset and the message, and returns code, so
 * callers write `return msr__render_fail(...)`. */
int msr__render_fail(ms_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Makes *ptr (an array of *cap elements of `elem` bytes) hold at least `need`: doubling
 * from *cap, or from `first` when empty, so appends cost amortised O(1). false, with
 * *ptr and *cap as they were, when the size overflows or memory runs out. */
bool msr__render_grow(void **ptr, size_t *cap, size_t need, size_t elem, size_t first);

/* The three-way compare every sort in render/ orders by: -1, 0 or 1 as a is below,
 * equal to or above b (two values of one arithmetic type, each read twice). */
#define MSR__CMP(a, b) (((a) > (b)) - ((a) < (b)))

/* A sort key and the index it stands for. Ties go to the lower index, so an order sorted
 * by qsort (which is not stable) is the same on every platform. */
typedef struct msr__keyed {
    int64_t key;
    size_t index;
} msr__keyed;

/* qsort comparators of msr__keyed: by key up, or by key down; then by index up. */
int msr__keyed_up(const void *a, const void *b);
int msr__keyed_down(const void *a, const void *b);
/* qsort comparator of size_t values, smallest first. */
int msr__size_up(const void *a, const void *b);

#endif
