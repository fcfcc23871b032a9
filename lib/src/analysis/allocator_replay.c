/* The allocator replay's drivers (allocator.c holds the allocator's rules and one
 * event's step): the states at chosen events, one by one or kept, and the fragmentation
 * after every event. Each is one forward pass from the starting state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "internal.h"
#include "memsnap/allocator.h"
#include "timeline_internal.h"

/* The final segment at `address`, or NULL (x->fseg: the device's, by address). */
static const ms_segment *final_segment(const hsim *x, const ms_segment *fs, uint64_t address)
{
    struct fseg_entry key = {address, 0}; /* index 0: the first entry at the address */
    size_t lo = ms__lower_bound(x->fseg, x->nfseg, sizeof *x->fseg, &key,
                                ms__heap_by_final_address);
    return lo < x->nfseg && x->fseg[lo].address == address ? &fs[x->fseg[lo].index] : NULL;
}

/* One block's share of its state's totals (emit and emit_totals). */
static void tally(ms_heap *h, const blk *b, uint64_t *estimated)
{
    if (b->state == MS_BLOCK_ACTIVE_ALLOCATED)
        h->allocated_bytes += b->size;
    if (b->state != MS_BLOCK_INACTIVE) {
        h->active_bytes += b->size;
        if (b->estimated)
            (*estimated)++;
    } else {
        h->inactive_bytes += b->size;
        h->inactive_count++;
        if (b->size > h->largest_inactive)
            h->largest_inactive = b->size;
    }
}

/* The note and the approximate flag, once the blocks are tallied. */
static void finish(const hsim *x, ms_heap *h, uint64_t estimated);

static int emit(hsim *x, ms_heap *h, int device, ms_error *err)
{
    (void)device;
    size_t nseg_f;
    const ms_segment *fs = ms_snapshot_segments(x->s, &nseg_f);
    if (!ms__heap_ord_fill(x))
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    size_t nblocks = 0;
    for (size_t k = 0; k < x->nord; k++)
        for (uint32_t i = x->g[x->ord[k]].first; i != NIL; i = x->b[i].next)
            nblocks++;
    h->segments = calloc(x->nord ? x->nord : 1, sizeof *h->segments);
    h->blocks = calloc(nblocks ? nblocks : 1, sizeof *h->blocks);
    if (!h->segments || !h->blocks)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    uint64_t estimated = 0;
    size_t nb = 0;
    for (size_t k = 0; k < x->nord; k++) {
        const seg *g = &x->g[x->ord[k]];
        ms_heap_segment *o = &h->segments[k];
        o->address = g->start;
        o->total_size = g->end - g->start;
        o->stream_raw = g->stream_raw;
        o->is_expandable = g->expandable;
        o->is_small = g->pool ? g->pool == 1 : (!g->expandable && o->total_size == (2u << 20));
        const ms_segment *f = final_segment(x, fs, g->start);
        if (f) {
            o->pool_id[0] = f->pool_id[0];
            o->pool_id[1] = f->pool_id[1];
            if (f->segment_type != MS_NO_STRING)
                o->is_small = !strcmp(ms_snapshot_string(x->s, f->segment_type), "small");
        }
        o->first_block = nb;
        for (uint32_t i = g->first; i != NIL; i = x->b[i].next) {
            const blk *b = &x->b[i];
            const blk_who *w = &x->who[i];
            ms_heap_block *ob = &h->blocks[nb++];
            *ob = (ms_heap_block){b->addr, b->size, w->req, (ms_block_state)b->state,
                                 w->alloc_event, w->stack, b->estimated};
            tally(h, b, &estimated);
        }
        o->n_blocks = nb - o->first_block;
        h->reserved_bytes += o->total_size;
    }
    h->n_segments = x->nord;
    h->n_blocks = nb;
    finish(x, h, estimated);
    return 0;
}

/* A state's totals, note and approximate flag, as emit gives them, without its
 * segments and blocks: a caller that reads only the totals (the free memory at the
 * peak) need not hold a copy of every block. */
static int emit_totals(hsim *x, ms_heap *h, ms_error *err)
{
    if (!ms__heap_ord_fill(x))
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    uint64_t estimated = 0;
    for (size_t k = 0; k < x->nord; k++) {
        const seg *g = &x->g[x->ord[k]];
        for (uint32_t i = g->first; i != NIL; i = x->b[i].next) {
            tally(h, &x->b[i], &estimated);
            h->n_blocks++;
        }
        h->reserved_bytes += g->end - g->start;
    }
    h->n_segments = x->nord;
    finish(x, h, estimated);
    return 0;
}

static void finish(const hsim *x, ms_heap *h, uint64_t estimated)
{
    h->inconsistencies = x->bad;
    size_t used = 0;
    if (estimated)
        used += (size_t)snprintf(h->note + used, sizeof h->note - used,
                                 "%s%llu block%s alive from before the trace began: sizes "
                                 "estimated from the request",
                                 used ? "; " : "", (unsigned long long)estimated,
                                 estimated == 1 ? "" : "s");
    if (x->bad && used < sizeof h->note)
        used += (size_t)snprintf(h->note + used, sizeof h->note - used,
                                 "%s%llu event%s contradict the rebuilt addresses",
                                 used ? "; " : "", (unsigned long long)x->bad,
                                 x->bad == 1 ? "" : "s");
    h->approximate = estimated > 0 || x->bad > 0;
}

/* What the replay hands each instant: out-of-order events are the caller's error. */
typedef int (*at_fn)(void *ctx, hsim *x, size_t k, bool changed, ms_error *err);

/* One forward replay, stopping right after each of events[0..n) (ascending, each -1 or
 * in the trace) to call fn; `changed` says whether any event touched the state since the
 * previous stop (always true at the first). */
static int replay(const ms_snapshot *s, int device, const int64_t *events, size_t n,
                  unsigned keep, at_fn fn, void *ctx, ms_error *err)
{
    const ms_trace *tr = ms_snapshot_trace(s, device);
    hsim x;
    int rc = ms__heap_begin(&x, s, device, keep, err);
    int64_t next = 0;
    uint64_t changes_then = 0;
    for (size_t k = 0; k < n && !rc; k++) {
        for (; next <= events[k] && !x.nomem; next++)
            ms__heap_step(&x, tr, (size_t)next);
        if (x.nomem) {
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET,
                          "out of memory rebuilding the allocator state");
            break;
        }
        bool changed = k == 0 || x.changes != changes_then;
        changes_then = x.changes;
        rc = fn(ctx, &x, k, changed, err);
    }
    ms__heap_release(&x);
    return rc;
}

typedef struct each_ctx {
    ms_heap **out;
    const int64_t *events;
    int device;
} each_ctx;

/* Where no event touched the state since the previous instant, that heap is shared
 * rather than copied (see ms_heap_build_each). */
static int each_at(void *ctx, hsim *x, size_t k, bool changed, ms_error *err)
{
    each_ctx *c = ctx;
    if (!changed) {
        c->out[k] = c->out[k - 1];
        return 0;
    }
    ms_heap *h = calloc(1, sizeof *h);
    if (!h)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    h->device = c->device;
    h->event = c->events[k];
    c->out[k] = h;
    return emit(x, h, c->device, err);
}

static int check_events(const ms_snapshot *s, int device, const int64_t *events, size_t n,
                        ms_error *err)
{
    if (!s || device < 0 || device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no device %d in this snapshot", device);
    const ms_trace *tr = ms_snapshot_trace(s, device);
    for (size_t k = 0; k < n; k++) {
        if (events[k] < -1 || (events[k] >= 0 && (uint64_t)events[k] >= tr->n))
            return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "event %lld is outside the trace",
                            (long long)events[k]);
        if (k > 0 && events[k] < events[k - 1])
            return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "events are not in trace order");
    }
    return 0;
}

int ms_heap_build_each(ms_heap **out, const ms_snapshot *s, int device, const int64_t *events,
                       size_t n, ms_error *err)
{
    ms_error_clear(err);
    for (size_t k = 0; k < n; k++)
        out[k] = NULL;
    int rc = check_events(s, device, events, n, err);
    if (rc)
        return rc;
    each_ctx c = {out, events, device};
    rc = replay(s, device, events, n, HEAP_WHO, each_at, &c, err);
    if (rc)
        ms_heap_free_each(out, n);
    return rc;
}

void ms_heap_free_each(ms_heap **heaps, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (heaps[k] && (k == 0 || heaps[k] != heaps[k - 1]))
            ms_heap_free(heaps[k]);
    }
    for (size_t k = 0; k < n; k++)
        heaps[k] = NULL;
}

int ms_heap_build(ms_heap **out, const ms_snapshot *s, int device, int64_t event,
                  ms_error *err)
{
    *out = NULL;
    return ms_heap_build_each(out, s, device, &event, 1, err);
}

typedef struct totals_ctx {
    ms_heap *h;
} totals_ctx;

static int totals_at(void *ctx, hsim *x, size_t k, bool changed, ms_error *err)
{
    (void)k;
    (void)changed;
    return emit_totals(x, ((totals_ctx *)ctx)->h, err);
}

int ms__heap_build_totals(ms_heap *out, const ms_snapshot *s, int device, int64_t event,
                          ms_error *err)
{
    ms_error_clear(err);
    memset(out, 0, sizeof *out);
    out->device = device;
    out->event = event;
    int rc = check_events(s, device, &event, 1, err);
    if (rc)
        return rc;
    totals_ctx c = {out};
    return replay(s, device, &event, 1, 0, totals_at, &c, err);
}

void ms_heap_free(ms_heap *h)
{
    if (!h)
        return;
    free(h->segments);
    free(h->blocks);
    free(h);
}

uint64_t ms_heap_usable_free(uint64_t *bytes, uint64_t *largest, const ms_heap *h,
                             uint64_t request_block_bytes, uint64_t stream_raw)
{
    bool small = request_block_bytes <= MS_SMALL_REQUEST_MAX;
    uint64_t n = 0, sum = 0, big = 0;
    for (size_t k = 0; k < h->n_segments; k++) {
        const ms_heap_segment *g = &h->segments[k];
        if (g->stream_raw != stream_raw || g->is_small != small || g->pool_id[0] || g->pool_id[1])
            continue;
        uint64_t seg_big = 0, seg_n = 0;
        sum += ms_heap_segment_free(&seg_big, &seg_n, h, k);
        n += seg_n;
        if (seg_big > big)
            big = seg_big;
    }
    if (bytes)
        *bytes = sum;
    if (largest)
        *largest = big;
    return n;
}

const char *ms_block_state_name(ms_block_state st)
{
    switch (st) {
    case MS_BLOCK_INACTIVE:
        return "inactive";
    case MS_BLOCK_ACTIVE_ALLOCATED:
        return "active_allocated";
    case MS_BLOCK_ACTIVE_PENDING_FREE:
        return "active_pending_free";
    default:
        return "other";
    }
}

/* ------------------------------------------------------------------ one state at a time */

typedef struct visit_ctx {
    ms_heap h;
    const int64_t *events;
    int device;
    bool totals; /* lend the totals only (ms_heap_visit_totals_each) */
    ms_heap_visit_fn fn;
    void *ctx;
} visit_ctx;

static int visit_at(void *ctx, hsim *x, size_t k, bool changed, ms_error *err)
{
    visit_ctx *c = ctx;
    if (changed) {
        free(c->h.segments);
        free(c->h.blocks);
        memset(&c->h, 0, sizeof c->h);
        c->h.device = c->device;
        int rc = c->totals ? emit_totals(x, &c->h, err) : emit(x, &c->h, c->device, err);
        if (rc)
            return rc;
    }
    c->h.event = c->events[k];
    return c->fn(c->ctx, k, &c->h, err);
}

static int visit_each(const ms_snapshot *s, int device, const int64_t *events, size_t n,
                      bool totals, ms_heap_visit_fn fn, void *ctx, ms_error *err)
{
    ms_error_clear(err);
    if (!fn)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no function to visit the states");
    int rc = check_events(s, device, events, n, err);
    if (rc)
        return rc;
    visit_ctx c;
    memset(&c, 0, sizeof c);
    c.events = events;
    c.device = device;
    c.totals = totals;
    c.fn = fn;
    c.ctx = ctx;
    rc = replay(s, device, events, n, totals ? 0 : HEAP_WHO, visit_at, &c, err);
    free(c.h.segments);
    free(c.h.blocks);
    return rc;
}

int ms_heap_visit_each(const ms_snapshot *s, int device, const int64_t *events, size_t n,
                       ms_heap_visit_fn fn, void *ctx, ms_error *err)
{
    return visit_each(s, device, events, n, false, fn, ctx, err);
}

int ms_heap_visit_totals_each(const ms_snapshot *s, int device, const int64_t *events,
                              size_t n, ms_heap_visit_fn fn, void *ctx, ms_error *err)
{
    return visit_each(s, device, events, n, true, fn, ctx, err);
}

/* ------------------------------------------------------------------ fragmentation */

int ms_heap_frag_build(ms_heap_frag **out, const ms_snapshot *s, int device, ms_error *err)
{
    ms_error_clear(err);
    if (!out)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no output pointer");
    *out = NULL;
    if (!s || device < 0 || device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no device %d in this snapshot", device);
    const ms_trace *tr = ms_snapshot_trace(s, device);
    ms_heap_frag *f = calloc(1, sizeof *f);
    size_t n = tr->n ? tr->n : 1;
    if (f) {
        f->free_bytes = malloc(n * sizeof *f->free_bytes);
        f->largest_free = malloc(n * sizeof *f->largest_free);
        f->free_blocks = malloc(n * sizeof *f->free_blocks);
    }
    if (!f || !f->free_bytes || !f->largest_free || !f->free_blocks) {
        ms_heap_frag_free(f);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET,
                        "out of memory for the fragmentation of %zu events", tr->n);
    }
    f->device = device;
    f->n = tr->n;
    hsim x;
    int rc = ms__heap_begin(&x, s, device, HEAP_TRACK, err);
    bool estimated = false;
    for (uint32_t i = 0; !rc && i < x.nb; i++)
        estimated |= x.b[i].estimated && x.b[i].state != BLK_DEAD;
    if (!rc) {
        f->start_free_bytes = x.reserved - x.active_bytes;
        f->start_largest_free = ms__heap_largest_free(&x);
        f->start_free_blocks = (uint32_t)(x.nb - x.nfreeb - x.active_count);
    }
    for (size_t i = 0; !rc && i < tr->n; i++) {
        ms__heap_step(&x, tr, i);
        if (x.nomem) {
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET,
                          "out of memory rebuilding the allocator state");
            break;
        }
        f->free_bytes[i] = x.reserved - x.active_bytes;
        f->largest_free[i] = ms__heap_largest_free(&x);
        f->free_blocks[i] = (uint32_t)(x.nb - x.nfreeb - x.active_count);
    }
    f->inconsistencies = x.bad;
    f->approximate = estimated || x.bad > 0;
    ms__heap_release(&x);
    if (rc) {
        ms_heap_frag_free(f);
        return rc;
    }
    *out = f;
    return 0;
}

void ms_heap_frag_free(ms_heap_frag *f)
{
    if (!f)
        return;
    MS__FREE_ALL(f->free_bytes, f->largest_free, f->free_blocks, f);
}

/* ------------------------------------------------------------------ per pool and stream */

uint64_t ms_heap_segment_free(uint64_t *largest, uint64_t *count, const ms_heap *h, size_t k)
{
    uint64_t sum = 0, big = 0, n = 0;
    if (h && k < h->n_segments) {
        const ms_heap_segment *g = &h->segments[k];
        for (size_t j = g->first_block; j < g->first_block + g->n_blocks; j++) {
            const ms_heap_block *b = &h->blocks[j];
            if (b->state != MS_BLOCK_INACTIVE)
                continue;
            n++;
            sum += b->size;
            if (b->size > big)
                big = b->size;
        }
    }
    if (largest)
        *largest = big;
    if (count)
        *count = n;
    return sum;
}

static int by_pool(const void *a, const void *b)
{
    const ms_heap_pool_stats *x = a, *y = b;
    return MS__CMP2(x->is_small, y->is_small, x->stream_raw, y->stream_raw);
}

int ms_heap_pool_stats_of(ms_heap_pool_stats **out, size_t *n_out, const ms_heap *h,
                          ms_error *err)
{
    ms_error_clear(err);
    *out = NULL;
    *n_out = 0;
    if (!h)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no allocator state");
    ms_heap_pool_stats *p = calloc(h->n_segments ? h->n_segments : 1, sizeof *p);
    if (!p)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    /* One entry per segment first, then sorted and merged: near-linear however many
     * streams a file names. */
    for (size_t k = 0; k < h->n_segments; k++) {
        const ms_heap_segment *g = &h->segments[k];
        ms_heap_pool_stats *q = &p[k];
        q->is_small = g->is_small;
        q->stream_raw = g->stream_raw;
        q->segments = 1;
        q->reserved_bytes = g->total_size;
        q->free_bytes = ms_heap_segment_free(&q->largest_free, &q->free_blocks, h, k);
        for (size_t j = g->first_block; j < g->first_block + g->n_blocks; j++) {
            const ms_heap_block *b = &h->blocks[j];
            if (b->state == MS_BLOCK_ACTIVE_ALLOCATED)
                q->allocated_bytes += b->size;
            if (b->state != MS_BLOCK_INACTIVE)
                q->active_bytes += b->size;
        }
    }
    if (h->n_segments > 1)
        qsort(p, h->n_segments, sizeof *p, by_pool);
    size_t n = 0;
    for (size_t k = 0; k < h->n_segments; k++) {
        if (n && p[n - 1].is_small == p[k].is_small && p[n - 1].stream_raw == p[k].stream_raw) {
            ms_heap_pool_stats *q = &p[n - 1];
            q->segments += p[k].segments;
            q->reserved_bytes += p[k].reserved_bytes;
            q->allocated_bytes += p[k].allocated_bytes;
            q->active_bytes += p[k].active_bytes;
            q->free_bytes += p[k].free_bytes;
            q->free_blocks += p[k].free_blocks;
            if (p[k].largest_free > q->largest_free)
                q->largest_free = p[k].largest_free;
        } else {
            p[n++] = p[k];
        }
    }
    *out = p;
    *n_out = n;
    return 0;
}

int ms_heap_copy(ms_heap **out, const ms_heap *h, ms_error *err)
{
    ms_error_clear(err);
    *out = NULL;
    if (!h)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no allocator state");
    ms_heap *c = malloc(sizeof *c);
    if (c) {
        *c = *h;
        c->segments = malloc((h->n_segments ? h->n_segments : 1) * sizeof *c->segments);
        c->blocks = malloc((h->n_blocks ? h->n_blocks : 1) * sizeof *c->blocks);
    }
    if (!c || !c->segments || !c->blocks) {
        ms_heap_free(c);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    }
    memcpy(c->segments, h->segments, h->n_segments * sizeof *c->segments);
    memcpy(c->blocks, h->blocks, h->n_blocks * sizeof *c->blocks);
    *out = c;
    return 0;
}

int64_t ms_heap_event_at_time(const ms_trace *tr, int64_t time_us)
{
    size_t hint = 0;
    return tr ? ms__event_at_time(tr, time_us, true, &hint) - 1 : -1;
}
