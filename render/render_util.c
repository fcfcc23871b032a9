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

int msr__keyed_up(const void *a, const void *b)
{
    const msr__keyed *x = a, *y = b;
    int c = MSR__CMP(x->key, y->key);
    return c ? c : MSR__CMP(x->index, y->index);
}

int msr__keyed_down(const void *a, const void *b)
{
    const msr__keyed *x = a, *y = b;
    int c = MSR__CMP(y->key, x->key);
    return c ? c : MSR__CMP(x->index, y->index);
}

int msr__size_up(const void *a, const void *b)
{
    return MSR__CMP(*(const size_t *)a, *(const size_t *)b);
}
