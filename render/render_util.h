/* Helpers shared by render/'s own files, not part of its interface. (render/ cannot use
 * lib/src/internal.h: the library's private header stays the library's.) */
#ifndef MEMSNAP_RENDER_UTIL_H
#define MEMSNAP_RENDER_UTIL_H

#include "memsnap/memsnap.h"

/* Fills err (when not NULL) with code, no offset and the message, and returns code, so
 * callers write `return ms__render_fail(...)`. */
int ms__render_fail(ms_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
