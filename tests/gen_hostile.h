/* Hostile inputs of issue 34 ("linear in every count", "memory bounded by the file"),
 * written byte by byte as Python's pickler would write them (protocol 4, keys memoized,
 * so an event costs about 35 bytes). Header-only, for tests/test_hostile_bounds.c, which also writes
 * them on their own (`test_hostile_bounds OUTDIR KIND N`) for timing by hand:
 *
 *   oom_each N      N allocations, each followed by an `oom` event, nothing freed
 *   devices N       N devices, each one allocation and one `oom`
 *   stacks N        N allocations never freed, each with a stack of its own
 *   segments N      N segments of 2 MiB, 60 allocations of 512 bytes in each, never freed
 *   lists N         `]` then `]a` N times: one list of N empty lists, no STOP
 *   pushes N        `N` N times: N values on the stack, no STOP
 *   memos N         `N` then MEMOIZE N times: N memo entries, no STOP
 *   strings N       N distinct 4-byte strings, each popped, no STOP
 */
#ifndef MEMSNAP_TEST_GEN_HOSTILE_H
#define MEMSNAP_TEST_GEN_HOSTILE_H

#include "pickle_writer.h"

/* Memoized strings: the first use of each is written and put in the memo (MEMOIZE),
 * later uses are fetched (BINGET / LONG_BINGET). */
typedef struct hg {
    pk w;
    const char *keys[32];
    uint32_t key_memo[32];
    size_t n_keys;
    uint32_t memo;
} hg;

static void hg_put_memo(hg *g)
{
    g->memo++;
    op(&g->w, (char)0x94); /* MEMOIZE, as protocol 4 writes it */
}

static void hg_get(hg *g, uint32_t i)
{
    if (i < 256) {
        unsigned char b[2] = {'h', (unsigned char)i};
        put(&g->w, b, 2);
    } else {
        unsigned char b[5] = {'j', (unsigned char)i, (unsigned char)(i >> 8),
                              (unsigned char)(i >> 16), (unsigned char)(i >> 24)};
        put(&g->w, b, 5);
    }
}

/* An integer as Python's pickler writes it: BININT1, BININT2 or BININT when it fits. */
static void hg_num(hg *g, int64_t v)
{
    if (v >= 0 && v < 256) {
        unsigned char b[2] = {'K', (unsigned char)v};
        put(&g->w, b, 2);
    } else if (v >= 0 && v < 65536) {
        unsigned char b[3] = {'M', (unsigned char)v, (unsigned char)(v >> 8)};
        put(&g->w, b, 3);
    } else {
        num(&g->w, v);
    }
}

/* A string used many times (keys, actions, a file name). */
static void hg_key(hg *g, const char *s)
{
    for (size_t k = 0; k < g->n_keys; k++)
        if (!strcmp(g->keys[k], s)) {
            hg_get(g, g->key_memo[k]);
            return;
        }
    str(&g->w, s);
    if (g->n_keys < 32) {
        g->keys[g->n_keys] = s;
        g->key_memo[g->n_keys++] = g->memo;
    }
    hg_put_memo(g);
}

/* A container opcode that Python's pickler memoizes. */
static void hg_open(hg *g, char c)
{
    op(&g->w, c);
    hg_put_memo(g);
}

/* {'segments': [], 'device_traces': [  -- then one trace per hg_trace_begin/end. */
static void hg_begin(hg *g)
{
    unsigned char h[2] = {0x80, 4};
    put(&g->w, h, 2);
    hg_open(g, '}');
    op(&g->w, '(');
    hg_key(g, "segments");
    hg_open(g, ']');
    hg_key(g, "device_traces");
    hg_open(g, ']');
    op(&g->w, '(');
}

static void hg_end(hg *g)
{
    op(&g->w, 'e'); /* the traces into device_traces */
    op(&g->w, 'u');
    op(&g->w, '.');
}

/* One trace entry; `line` >= 0 gives it a one-frame stack of its own (frame line
 * `line`), else no frames. Entries go into the trace between MARK and APPENDS, which the
 * caller writes (batches of at most 1000, as Python does). */
static void hg_event(hg *g, const char *action, int64_t addr, int64_t size, int64_t t,
                     int64_t line)
{
    hg_open(g, '}');
    op(&g->w, '(');
    hg_key(g, "action");
    hg_key(g, action);
    hg_key(g, "addr");
    hg_num(g, addr);
    hg_key(g, "size");
    hg_num(g, size);
    hg_key(g, "stream");
    hg_num(g, 0);
    hg_key(g, "time_us");
    hg_num(g, t);
    hg_key(g, "frames");
    hg_open(g, ']');
    if (line >= 0) {
        hg_open(g, '}');
        op(&g->w, '(');
        hg_key(g, "filename");
        hg_key(g, "model.py");
        hg_key(g, "line");
        hg_num(g, line);
        hg_key(g, "name");
        hg_key(g, "forward");
        op(&g->w, 'u');
        op(&g->w, 'a');
    }
    op(&g->w, 'u');
}

/* Events of one trace are appended in batches, as Python's pickler does. */
typedef struct hg_batch {
    hg *g;
    int n;
    int64_t t; /* the next entry's time_us */
} hg_batch;

static void hg_trace_begin(hg *g, hg_batch *b)
{
    hg_open(g, ']');
    op(&g->w, '(');
    b->g = g;
    b->n = 0;
}

static void hg_next(hg_batch *b)
{
    if (++b->n == 1000) {
        op(&b->g->w, 'e');
        op(&b->g->w, '(');
        b->n = 0;
    }
}

static void hg_trace_end(hg_batch *b)
{
    op(&b->g->w, 'e');
}

/* A snapshot of one device's trace: hg_one_begin, its entries (hg_entry, a microsecond
 * apart from 1000), hg_one_end. */
static void hg_one_begin(hg *g, hg_batch *b)
{
    hg_begin(g);
    hg_trace_begin(g, b);
    b->t = 1000;
}

static void hg_entry(hg_batch *b, const char *action, int64_t addr, int64_t size, int64_t line)
{
    hg_event(b->g, action, addr, size, b->t++, line);
    hg_next(b);
}

static void hg_one_end(hg_batch *b)
{
    hg_trace_end(b);
    hg_end(b->g);
}

/* Low addresses fit BININT, as a small file would have them. */
static const int64_t HG_BASE = (int64_t)1 << 30;

/* N allocations of 512 bytes at rising addresses in one segment, each followed by an
 * oom asking for 1 GiB: the live set grows by one at every OOM. */
static void hg_oom_each(hg *g, int n)
{
    hg_batch b;
    hg_one_begin(g, &b);
    hg_entry(&b, "segment_alloc", HG_BASE, (int64_t)n * 512 + (2 << 20), -1);
    for (int k = 0; k < n; k++) {
        hg_entry(&b, "alloc", HG_BASE + (int64_t)k * 512, 512, -1);
        hg_entry(&b, "oom", 1 << 20, (int64_t)1 << 30, -1);
    }
    hg_one_end(&b);
}

/* N devices, each with one allocation and one oom. */
static void hg_devices(hg *g, int n)
{
    hg_begin(g);
    int64_t t = 1000;
    for (int d = 0; d < n; d++) {
        hg_batch b;
        hg_trace_begin(g, &b);
        hg_event(g, "alloc", HG_BASE, 512, t++, -1);
        hg_event(g, "oom", 1 << 20, (int64_t)1 << 30, t++, -1);
        hg_trace_end(&b);
    }
    hg_end(g);
}

/* N segments of 2 MiB at rising addresses, each then given 60 allocations of 512 bytes,
 * none freed: 61 blocks a segment (the free rest), more segments than a state shows. */
static void hg_segments(hg *g, int n)
{
    hg_batch b;
    hg_one_begin(g, &b);
    const int64_t seg = (int64_t)2 << 20;
    for (int k = 0; k < n; k++) {
        hg_entry(&b, "segment_alloc", HG_BASE + k * seg, seg, -1);
        for (int j = 0; j < 60; j++)
            hg_entry(&b, "alloc", HG_BASE + k * seg + j * 512, 512, -1);
    }
    hg_one_end(&b);
}

/* N allocations never freed, each made at its own line: N distinct stacks. */
static void hg_stacks(hg *g, int n)
{
    hg_batch b;
    hg_one_begin(g, &b);
    for (int k = 0; k < n; k++)
        hg_entry(&b, "alloc", HG_BASE + (int64_t)k * 512, 512, k + 1);
    hg_one_end(&b);
}

/* `]` then `]a` N times, and nothing else: every list is an object the VM keeps. */
static void hg_lists(hg *g, int n)
{
    op(&g->w, ']');
    for (int k = 0; k < n; k++) {
        op(&g->w, ']');
        op(&g->w, 'a');
    }
}

/* `N` (None) N times: every value stays on the stack. */
static void hg_pushes(hg *g, int n)
{
    for (int k = 0; k < n; k++)
        op(&g->w, 'N');
}

/* One None memoized N times: a memo entry per byte. */
static void hg_memos(hg *g, int n)
{
    op(&g->w, 'N');
    for (int k = 0; k < n; k++)
        op(&g->w, (char)0x94);
}

/* N distinct strings of 4 bytes (base 64 digits), each popped at once: the VM interns
 * every one. */
static void hg_strings(hg *g, int n)
{
    static const char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int k = 0; k < n; k++) {
        char s[5] = {digits[k & 63], digits[(k >> 6) & 63], digits[(k >> 12) & 63],
                     digits[(k >> 18) & 63], 0};
        str(&g->w, s);
        op(&g->w, '0');
    }
}

#endif
