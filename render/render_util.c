/* Helpers shared by render/'s files (see render_util.h). */
#include "render_util.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int msr__render_fail(ms_error *err, int code, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        err->offset = MS_NO_OFFSET;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

bool msr__render_grow(void **ptr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : (first ? first : 1);
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return false;
        n *= 2;
    }
    if (elem && n > SIZE_MAX / elem)
        return false;
    void *p = realloc(*ptr, n * elem);
    if (!p)
        return false;
    *ptr = p;
    *cap = n;
    return true;
}
