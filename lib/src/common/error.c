#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

const char *ms_code_name(int code)
{
    switch (code) {
#define MS_X_NAME(name, value, text) \
    case value:                      \
        return #name;
        MS_ERROR_LIST(MS_X_NAME)
#undef MS_X_NAME
    }
    return "MS_ERR_UNKNOWN";
}

const char *ms_code_text(int code)
{
    switch (code) {
#define MS_X_TEXT(name, value, text) \
    case value:                      \
        return text;
        MS_ERROR_LIST(MS_X_TEXT)
#undef MS_X_TEXT
    }
    return "unknown error";
}

void ms_error_clear(ms_error *err)
{
    if (!err)
        return;
    err->code = MS_OK;
    err->offset = MS_NO_OFFSET;
    err->message[0] = '\0';
}

int ms_error_set(ms_error *err, int code, int64_t offset, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        err->offset = offset;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

bool ms__grow(void **ptr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return false;
        n *= 2;
    }
    size_t bytes;
    if (!ms__mul(n, elem, &bytes))
        return false;
    void *p = realloc(*ptr, bytes);
    if (!p)
        return false;
    *ptr = p;
    *cap = n;
    return true;
}

/* The safe values, whatever the environment says: reading MEMSNAP_MAX_INPUT or
 * MEMSNAP_THREADS is the program's business (cli/options.c), not the library's. */
ms_limits ms_limits_default(void)
{
    ms_limits l;
    l.max_depth = 10000;
    l.max_memo = (uint64_t)1 << 28;
    l.max_objects = (uint64_t)1 << 27;
    l.max_string = (uint64_t)1 << 28;
    l.max_events = (uint64_t)1 << 31;
    l.parallel_min_bytes = (uint64_t)8 << 20;
    l.max_expansion = 64;
    l.max_input_bytes = (uint64_t)64 << 30;
    l.threads = 2;
    l.max_memory = 0;
    return l;
}

void ms_free(void *p)
{
    free(p);
}

void ms__free_each(void *const *ptrs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ptrs[i]);
}
