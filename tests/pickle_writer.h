/* A pickle writer for tests that craft snapshots byte by byte: a growing buffer and the
 * few opcodes they need. Header-only (static functions), included by one test file each. */
#ifndef MEMSNAP_TEST_PICKLE_WRITER_H
#define MEMSNAP_TEST_PICKLE_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pk {
    unsigned char *p;
    size_t n, cap;
} pk;

static void put(pk *w, const void *src, size_t n)
{
    if (w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->n + n)
            cap *= 2;
        unsigned char *p = realloc(w->p, cap);
        if (!p) {
            fprintf(stderr, "out of memory writing a pickle\n");
            exit(2);
        }
        w->p = p;
        w->cap = cap;
    }
    memcpy(w->p + w->n, src, n);
    w->n += n;
}

static inline void op(pk *w, char c)
{
    put(w, &c, 1);
}

static inline void str(pk *w, const char *s) /* SHORT_BINUNICODE */
{
    size_t n = strlen(s);
    unsigned char h[2] = {0x8c, (unsigned char)n};
    put(w, h, 2);
    put(w, s, n);
}

static inline void num(pk *w, int64_t v)
{
    if (v >= INT32_MIN && v <= INT32_MAX) { /* BININT */
        uint32_t u = (uint32_t)(int32_t)v;
        unsigned char b[5] = {'J', (unsigned char)u, (unsigned char)(u >> 8),
                              (unsigned char)(u >> 16), (unsigned char)(u >> 24)};
        put(w, b, 5);
        return;
    }
    unsigned char b[10] = {0x8a, 8}; /* LONG1, 8 bytes little-endian two's complement */
    uint64_t u = (uint64_t)v;
    for (int k = 0; k < 8; k++)
        b[2 + k] = (unsigned char)(u >> (8 * k));
    put(w, b, 10);
}

/* The start of a snapshot, protocol 2: `{'segments': [], 'device_traces': [` with the
 * outer list made; the caller adds its devices' traces and closes it. */
static inline void snapshot_begin(pk *w)
{
    unsigned char h[2] = {0x80, 2};
    put(w, h, 2);
    op(w, '}');
    op(w, '(');
    str(w, "segments");
    op(w, ']');
    str(w, "device_traces");
    op(w, ']');
}

#endif
