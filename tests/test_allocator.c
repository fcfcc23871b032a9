/* The allocator state rebuilt by replaying the trace (lib/src/analysis/allocator.c)
 * against the allocator's own: at the end of every bundled snapshot the rebuilt segments
 * and blocks equal the file's final `segments` exactly (addresses, sizes, states,
 * requested sizes), and mid-trace states agree with what the trace says is alive. */
#include "check.h"
#include "memsnap/allocator.h"

static uint64_t round512(uint64_t n)
{
    return n < 512 ? 512 : (n + 511) / 512 * 512;
}

/* The rebuilt end state against the file's final segments of one device. */
static void check_end(const char *name, const ms_snapshot *s, int device)
{
    const ms_trace *tr = ms_snapshot_trace(s, device);
    ms_heap *h = NULL;
    ms_error err;
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s device %d", name, device);
    if (ms_heap_build(&h, s, device, (int64_t)tr->n - 1, &err)) {
        check_fail("%s: heap: %s", ctx, err.message);
        return;
    }
    size_t nseg, nblk;
    const ms_segment *fs = ms_snapshot_segments(s, &nseg);
    const ms_block *fb = ms_snapshot_blocks(s, &nblk);
    /* The file lists segments in its own order; ours are by address. */
    size_t want = 0;
    uint64_t inactive = 0, allocated = 0, reserved = 0;
    for (size_t k = 0; k < nseg; k++) {
        if (fs[k].device != device)
            continue;
        want++;
        reserved += fs[k].total_size;
        size_t j = 0;
        while (j < h->n_segments && h->segments[j].address != fs[k].address)
            j++;
        if (j == h->n_segments) {
            check_fail("%s: segment at %#llx missing from the rebuilt state", ctx,
                       (unsigned long long)fs[k].address);
            continue;
        }
        const ms_heap_segment *g = &h->segments[j];
        CHECK_EQ_INT_IN(ctx, g->total_size, fs[k].total_size);
        CHECK_EQ_INT_IN(ctx, g->is_expandable, fs[k].is_expandable);
        CHECK_EQ_INT_IN(ctx, g->stream_raw, fs[k].stream_raw);
        CHECK_EQ_INT_IN(ctx, g->n_blocks, fs[k].n_blocks);
        for (size_t b = 0; b < g->n_blocks && b < fs[k].n_blocks; b++) {
            const ms_heap_block *ours = &h->blocks[g->first_block + b];
            const ms_block *theirs = &fb[fs[k].first_block + b];
            CHECK_EQ_INT_IN(ctx, ours->address, theirs->address);
            CHECK_EQ_INT_IN(ctx, ours->size, theirs->size);
            CHECK_EQ_INT_IN(ctx, ours->state, theirs->state);
            /* A free block keeps the allocator's stale request of its last user; only
             * active blocks' requests mean something. */
            if (theirs->state != MS_BLOCK_INACTIVE)
                CHECK_EQ_INT_IN(ctx, ours->requested_size, theirs->requested_size);
            if (theirs->state == MS_BLOCK_INACTIVE)
                inactive += theirs->size;
            if (theirs->state == MS_BLOCK_ACTIVE_ALLOCATED)
                allocated += theirs->size;
        }
    }
    CHECK_EQ_INT_IN(ctx, h->n_segments, want);
    CHECK_EQ_INT_IN(ctx, h->inactive_bytes, inactive);
    CHECK_EQ_INT_IN(ctx, h->allocated_bytes, allocated);
    CHECK_EQ_INT_IN(ctx, h->reserved_bytes, reserved);
    CHECK_EQ_INT_IN(ctx, h->inconsistencies, 0);
    ms_heap_free(h);
}

/* Mid-trace: every allocation the timeline says is alive right after an event has an
 * active block at its address, at least its request rounded; every block lies in its
 * segment, blocks tile their segment without gaps, and no two free blocks touch (the
 * allocator merges them). Checked after the peak and halfway through. */
static void check_mid(const char *name, const ms_snapshot *s, const ms_timeline *t,
                      int64_t event)
{
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s event %lld", name, (long long)event);
    ms_heap *h = NULL;
    ms_error err;
    if (ms_heap_build(&h, s, t->device, event, &err)) {
        check_fail("%s: heap: %s", ctx, err.message);
        return;
    }
    ms_alloc *alive = NULL;
    size_t n = 0;
    if (ms_timeline_alive_at(&alive, &n, s, t, event, &err)) {
        check_fail("%s: alive: %s", ctx, err.message);
        ms_heap_free(h);
        return;
    }
    size_t found = 0, big_enough = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t b = 0; b < h->n_blocks; b++) {
            if (h->blocks[b].address != alive[i].addr)
                continue;
            if (h->blocks[b].state != MS_BLOCK_INACTIVE)
                found++;
            if (h->blocks[b].size >= round512(alive[i].size))
                big_enough++;
            break;
        }
    }
    CHECK_EQ_INT_IN(ctx, found, n);
    CHECK_EQ_INT_IN(ctx, big_enough, n);
    size_t gaps = 0, touching = 0;
    uint64_t active = 0;
    for (size_t k = 0; k < h->n_segments; k++) {
        const ms_heap_segment *g = &h->segments[k];
        uint64_t at = g->address;
        for (size_t b = g->first_block; b < g->first_block + g->n_blocks; b++) {
            if (h->blocks[b].address != at)
                gaps++;
            at = h->blocks[b].address + h->blocks[b].size;
            if (b > g->first_block && h->blocks[b].state == MS_BLOCK_INACTIVE &&
                h->blocks[b - 1].state == MS_BLOCK_INACTIVE)
                touching++;
            if (h->blocks[b].state != MS_BLOCK_INACTIVE)
                active++;
        }
        if (at != g->address + g->total_size)
            gaps++;
    }
    CHECK_EQ_INT_IN(ctx, gaps, 0);
    CHECK_EQ_INT_IN(ctx, touching, 0);
    /* Reserved bytes follow the timeline's reserved curve exactly. */
    CHECK_EQ_INT_IN(ctx, h->reserved_bytes, event >= 0 ? t->reserved[event] : t->reserved_start);
    (void)active;
    ms_free(alive);
    ms_heap_free(h);
}

static void one(const char *name, ms_snapshot *s, void *arg)
{
    (void)arg;
    ms_error err;
    for (int d = 0; d < ms_snapshot_device_count(s); d++)
        check_end(name, s, d);
    int device = ms_snapshot_busiest_device(s);
    ms_timeline *t = NULL;
    if (ms_timeline_build(&t, s, device, MS_TIMELINE_CURVES, &err)) {
        check_fail("%s: timeline: %s", name, err.message);
    } else if (t->n_events > 0) {
        check_mid(name, s, t, t->peak_event);
        check_mid(name, s, t, -1);
        for (int k = 1; k <= 12; k++)
            check_mid(name, s, t, (int64_t)t->n_events * k / 13);
    }
    ms_timeline_free(t);
}

/* The rounding rule of the allocator, with and without power-of-two divisions. */
static void check_rounding(void)
{
    CHECK_EQ_INT(ms_alloc_block_size(NULL, 1), 512);
    CHECK_EQ_INT(ms_alloc_block_size(NULL, 512), 512);
    CHECK_EQ_INT(ms_alloc_block_size(NULL, 513), 1024);
    CHECK_EQ_INT(ms_alloc_block_size(NULL, 268446208), 268446208);
    CHECK_EQ_INT(ms_alloc_block_size(NULL, 268446209), 268446720);
}

int main(void)
{
    check_rounding();
    size_t files = check_each_read(one, NULL);
    CHECK_TRUE(files >= 10);
    return check_finish("test_allocator");
}
