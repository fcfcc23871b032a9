/* Helpers shared by render/'s own files, not part of its interface. (render/ cannot use
 * lib/src/internal.h: the library's private header stays the library's.) */
#ifndef MEMSNAP_RENDER_UTIL_H
#define MEMSNAP_RENDER_UTIL_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
