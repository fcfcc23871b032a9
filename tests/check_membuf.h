/* A cairo write function into memory, for the tests and benches that keep what a writer
 * emits (render/png_write.c, cairo's own): the bytes, NUL-terminated so a test may read
 * SVG as text; `fail_after` makes a write fail, as a full disk would. */
#ifndef MEMSNAP_TEST_CHECK_MEMBUF_H
#define MEMSNAP_TEST_CHECK_MEMBUF_H

#include <cairo.h>
#include <stdlib.h>
#include <string.h>

typedef struct membuf {
    unsigned char *p;
    size_t n, cap;
    size_t fail_after; /* 0: never fail; else the write that reaches this many bytes fails */
} membuf;

static inline cairo_status_t to_mem(void *closure, const unsigned char *data, unsigned int len)
{
    membuf *b = closure;
    if (b->fail_after && b->n + len >= b->fail_after)
        return CAIRO_STATUS_WRITE_ERROR;
    if (b->n + len + 1 > b->cap) {
        size_t cap = (b->n + len + 1) * 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            return CAIRO_STATUS_NO_MEMORY;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = '\0';
    return CAIRO_STATUS_SUCCESS;
}

#endif
