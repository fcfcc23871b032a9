/* The allocator's state at any instant against torch.cuda.memory_snapshot() on the GPU:
 * testdata/seg_*.pickle called memory_snapshot() at known instants of seeded churn on two
 * streams (default settings, expandable_segments, max_split_size_mb:20, a recording that
 * starts after a model was built, roundup_power2_divisions:4) and kept every segment and
 * block. At each instant the rebuilt segments and blocks equal them exactly (addresses,
 * sizes, states, requested sizes of active blocks, stream, pool, expandable), and so do
 * the free totals per segment type and stream, the one-state-at-a-time replay
 * (ms_heap_visit_each), the fragmentation series (ms_heap_frag_build) and
 * `memsnap segments --json --event N`. */
#include "chart.h"
#include "check.h"
#include "memsnap/allocator.h"
#include "segments_chart.h"

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig\n";
}

static const char *const FILES[] = {"seg_churn", "seg_expandable", "seg_max_split",
                                    "seg_late_start", "seg_roundup"};

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *key)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return v ? v : "";
}

/* The truth's segments by address (memory_snapshot() lists them in its own order). */
static const cJSON *truth_segment(const cJSON *segs, uint64_t address)
{
    const cJSON *g;
    cJSON_ArrayForEach(g, segs) if ((uint64_t)num(g, "address") == address) return g;
    return NULL;
}

static void check_state(const char *ctx, const ms_snapshot *s, const ms_heap *h, const cJSON *inst)
{
    const cJSON *segs = cJSON_GetObjectItemCaseSensitive(inst, "segments");
    CHECK_EQ_INT_IN(ctx, h->n_segments, (size_t)cJSON_GetArraySize(segs));
    for (size_t k = 0; k < h->n_segments; k++) {
        const ms_heap_segment *g = &h->segments[k];
        const cJSON *t = truth_segment(segs, g->address);
        if (!t) {
            check_fail("%s: segment %#llx is not in memory_snapshot()", ctx,
                       (unsigned long long)g->address);
            continue;
        }
        CHECK_EQ_INT_IN(ctx, g->total_size, (uint64_t)num(t, "total_size"));
        CHECK_EQ_INT_IN(ctx, g->stream_raw, (uint64_t)num(t, "stream"));
        CHECK_EQ_INT_IN(ctx, g->is_expandable,
                        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "is_expandable")));
        CHECK_EQ_STR_IN(ctx, g->is_small ? "small" : "large", str(t, "segment_type"));
        const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(t, "blocks");
        CHECK_EQ_INT_IN(ctx, g->n_blocks, (size_t)cJSON_GetArraySize(blocks));
        size_t b = g->first_block;
        const cJSON *tb;
        cJSON_ArrayForEach(tb, blocks)
        {
            if (b >= g->first_block + g->n_blocks)
                break;
            const ms_heap_block *ours = &h->blocks[b++];
            CHECK_EQ_INT_IN(ctx, ours->address, (uint64_t)num(tb, "address"));
            CHECK_EQ_INT_IN(ctx, ours->size, (uint64_t)num(tb, "size"));
            CHECK_EQ_STR_IN(ctx, ms_block_state_name(ours->state), str(tb, "state"));
            /* A free block keeps its last user's request in memory_snapshot(); only an
             * active block's means something. */
            if (ours->state != MS_BLOCK_INACTIVE)
                CHECK_EQ_INT_IN(ctx, ours->requested_size, (uint64_t)num(tb, "requested_size"));
        }
    }
    const cJSON *counters = cJSON_GetObjectItemCaseSensitive(inst, "counters");
    CHECK_EQ_INT_IN(ctx, h->reserved_bytes, (uint64_t)num(counters, "reserved_bytes"));
    CHECK_EQ_INT_IN(ctx, h->allocated_bytes, (uint64_t)num(counters, "allocated_bytes"));
    CHECK_EQ_INT_IN(ctx, h->active_bytes, (uint64_t)num(counters, "active_bytes"));
    const cJSON *free = cJSON_GetObjectItemCaseSensitive(inst, "free");
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(free, "total");
    CHECK_EQ_INT_IN(ctx, h->inactive_bytes, (uint64_t)num(total, "bytes"));
    CHECK_EQ_INT_IN(ctx, h->inactive_count, (uint64_t)num(total, "blocks"));
    CHECK_EQ_INT_IN(ctx, h->largest_inactive, (uint64_t)num(total, "largest"));
    /* Per segment type and per stream, from the per-pool-and-stream sums. */
    ms_heap_pool_stats *ps = NULL;
    size_t n = 0;
    ms_error err;
    CHECK_EQ_INT_IN(ctx, ms_heap_pool_stats_of(&ps, &n, h, &err), 0);
    const cJSON *per_type = cJSON_GetObjectItemCaseSensitive(free, "per_segment_type");
    const cJSON *per_stream = cJSON_GetObjectItemCaseSensitive(free, "per_stream");
    size_t types_seen = 0, streams_seen = 0;
    for (int small = 0; small < 2; small++) {
        uint64_t bytes = 0, blocks = 0, largest = 0;
        for (size_t i = 0; i < n; i++)
            if (ps[i].is_small == (bool)small) {
                bytes += ps[i].free_bytes;
                blocks += ps[i].free_blocks;
                largest = ps[i].largest_free > largest ? ps[i].largest_free : largest;
            }
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(per_type, small ? "small" : "large");
        if (!t) {
            CHECK_EQ_INT_IN(ctx, blocks, 0);
            continue;
        }
        types_seen++;
        CHECK_EQ_INT_IN(ctx, bytes, (uint64_t)num(t, "bytes"));
        CHECK_EQ_INT_IN(ctx, blocks, (uint64_t)num(t, "blocks"));
        CHECK_EQ_INT_IN(ctx, largest, (uint64_t)num(t, "largest"));
    }
    const cJSON *st;
    cJSON_ArrayForEach(st, per_stream)
    {
        uint64_t stream = strtoull(st->string, NULL, 10), bytes = 0, blocks = 0, largest = 0;
        for (size_t i = 0; i < n; i++)
            if (ps[i].stream_raw == stream) {
                bytes += ps[i].free_bytes;
                blocks += ps[i].free_blocks;
                largest = ps[i].largest_free > largest ? ps[i].largest_free : largest;
            }
        streams_seen++;
        CHECK_EQ_INT_IN(ctx, bytes, (uint64_t)num(st, "bytes"));
        CHECK_EQ_INT_IN(ctx, blocks, (uint64_t)num(st, "blocks"));
        CHECK_EQ_INT_IN(ctx, largest, (uint64_t)num(st, "largest"));
    }
    CHECK_EQ_INT_IN(ctx, types_seen, (size_t)cJSON_GetArraySize(per_type));
    (void)s;
    ms_free(ps);
}

typedef struct visit_ctx {
    ms_heap **each;
    size_t seen;
    bool same;
    bool totals; /* ms_heap_visit_totals_each: the totals, no segment or block lent */
} visit_ctx;

/* A visited state is the one ms_heap_build_each keeps (its totals alone, when lent). */
static int same_as_kept(void *ctx, size_t k, const ms_heap *h, ms_error *err)
{
    (void)err;
    visit_ctx *v = ctx;
    const ms_heap *e = v->each[k];
    v->seen++;
    v->same &= e->n_segments == h->n_segments && e->n_blocks == h->n_blocks;
    if (v->totals)
        v->same &= e->reserved_bytes == h->reserved_bytes &&
                   e->allocated_bytes == h->allocated_bytes && e->active_bytes == h->active_bytes &&
                   e->inactive_bytes == h->inactive_bytes && e->inactive_count == h->inactive_count &&
                   e->largest_inactive == h->largest_inactive &&
                   e->approximate == h->approximate && !strcmp(e->note, h->note) && !h->segments &&
                   !h->blocks;
    else
        v->same &= !memcmp(e->segments, h->segments, h->n_segments * sizeof *h->segments) &&
                   !memcmp(e->blocks, h->blocks, h->n_blocks * sizeof *h->blocks);
    return 0;
}

static void one(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "testdata/%s.pickle", name);
    cJSON *truth = check_truth_load(name);
    ms_snapshot *s = NULL;
    ms_error err;
    if (!truth || ms_snapshot_read_file(&s, path, NULL, &err)) {
        check_fail("%s: cannot load the recording or its truth", name);
        cJSON_Delete(truth);
        return;
    }
    const cJSON *instants = cJSON_GetObjectItemCaseSensitive(truth, "instants");
    size_t n = (size_t)cJSON_GetArraySize(instants);
    CHECK_TRUE_IN(name, n >= 7);
    int64_t *events = calloc(n, sizeof *events);
    ms_heap **each = calloc(n, sizeof *each);
    size_t k = 0;
    const cJSON *inst;
    /* The instant's own memory_snapshot() call is trace entry event_index: the state is
     * the one right after the entry before it. */
    cJSON_ArrayForEach(inst, instants) events[k++] = (int64_t)num(inst, "event_index") - 1;
    CHECK_EQ_INT_IN(name, ms_heap_build_each(each, s, 0, events, n, &err), 0);
    ms_heap_frag *frag = NULL;
    CHECK_EQ_INT_IN(name, ms_heap_frag_build(&frag, s, 0, &err), 0);
    k = 0;
    cJSON_ArrayForEach(inst, instants)
    {
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s %s (event %lld)", name, str(inst, "label"),
                 (long long)events[k]);
        const ms_heap *h = each[k];
        if (h) {
            check_state(ctx, s, h, inst);
            if (frag) {
                const cJSON *total = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(inst, "free"), "total");
                int64_t e = events[k];
                CHECK_EQ_INT_IN(ctx, e < 0 ? frag->start_free_bytes : frag->free_bytes[e],
                                (uint64_t)num(total, "bytes"));
                CHECK_EQ_INT_IN(ctx, e < 0 ? frag->start_largest_free : frag->largest_free[e],
                                (uint64_t)num(total, "largest"));
                CHECK_EQ_INT_IN(ctx, e < 0 ? frag->start_free_blocks : frag->free_blocks[e],
                                (uint32_t)num(total, "blocks"));
            }
        }
        k++;
    }
    /* One state at a time gives the states ms_heap_build_each keeps. */
    for (int totals = 0; totals < 2; totals++) {
        visit_ctx v = {each, 0, true, totals == 1};
        CHECK_EQ_INT_IN(name,
                        (totals ? ms_heap_visit_totals_each : ms_heap_visit_each)(
                            s, 0, events, n, same_as_kept, &v, &err),
                        0);
        CHECK_EQ_INT_IN(name, v.seen, n);
        CHECK_TRUE_IN(name, v.same);
    }
    /* The lives alive at each instant (ms_timeline_alive_counts, the view's bound on a
     * state's blocks) are memory_snapshot()'s active blocks there. */
    ms_timeline *tl = NULL;
    size_t *lives = calloc(n, sizeof *lives);
    CHECK_EQ_INT_IN(name, ms_timeline_build(&tl, s, 0, MS_TIMELINE_ALLOCS, &err), 0);
    if (tl && lives)
        CHECK_EQ_INT_IN(name, ms_timeline_alive_counts(tl, events, n, lives, &err), 0);
    k = 0;
    cJSON_ArrayForEach(inst, instants)
    {
        size_t active = 0;
        const cJSON *g, *bl;
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(inst, "segments"))
            cJSON_ArrayForEach(bl, cJSON_GetObjectItemCaseSensitive(g, "blocks"))
                active += strcmp(str(bl, "state"), "inactive") != 0;
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s %s: lives alive", name, str(inst, "label"));
        CHECK_EQ_INT_IN(ctx, lives ? lives[k] : 0, active);
        k++;
    }
    free(lives);
    ms_timeline_free(tl);
    /* A recording that starts after the model was built: before its first event every
     * active block is known only from the final segments, and there are as many as the
     * allocator counted alive when the recording began. */
    if (!strcmp(name, "seg_late_start") && each[0]) {
        const cJSON *c0 = cJSON_GetObjectItemCaseSensitive(truth, "counters_at_start");
        size_t alive = (size_t)(num(c0, "allocation.all.allocated") - num(c0, "allocation.all.freed"));
        size_t active = 0, rebuilt = 0;
        for (size_t b = 0; b < each[0]->n_blocks; b++) {
            active += each[0]->blocks[b].state != MS_BLOCK_INACTIVE;
            rebuilt += each[0]->blocks[b].state != MS_BLOCK_INACTIVE && each[0]->blocks[b].alloc_event < 0;
        }
        CHECK_EQ_INT_IN(name, active, alive);
        CHECK_EQ_INT_IN(name, rebuilt, alive);
        CHECK_TRUE_IN(name, each[0]->approximate); /* sizes of the later-freed ones inferred */
    }
    ms_heap_frag_free(frag);
    ms_heap_free_each(each, n);
    free(each);
    free(events);
    ms_snapshot_free(s);
    cJSON_Delete(truth);
}

/* The command prints the same states: every instant of one recording through
 * `memsnap segments --json --event N`. */
static void cli(const char *bin, const char *name)
{
    cJSON *truth = check_truth_load(name);
    if (!truth) {
        check_fail("%s: no truth", name);
        return;
    }
    char cmd[4096];
    size_t len = (size_t)snprintf(cmd, sizeof cmd, "'%s' segments --json testdata/%s.pickle", bin, name);
    const cJSON *inst;
    const cJSON *instants = cJSON_GetObjectItemCaseSensitive(truth, "instants");
    cJSON_ArrayForEach(inst, instants) len += (size_t)snprintf(
        cmd + len, sizeof cmd - len, " --event %lld", (long long)num(inst, "event_index") - 1);
    int status;
    char *out = check_run(cmd, &status);
    CHECK_EQ_INT_IN(name, status, 0);
    cJSON *doc = out ? cJSON_Parse(out) : NULL;
    CHECK_TRUE_IN(name, doc != NULL);
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "files"), 0),
                               "devices"),
                           0),
        "at");
    CHECK_EQ_INT_IN(name, cJSON_GetArraySize(at), cJSON_GetArraySize(instants));
    int i = 0;
    cJSON_ArrayForEach(inst, instants)
    {
        const cJSON *a = cJSON_GetArrayItem(at, i++);
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s cli %s", name, str(inst, "label"));
        CHECK_EQ_INT_IN(ctx, (int64_t)num(a, "event"), (int64_t)num(inst, "event_index") - 1);
        const cJSON *segs = cJSON_GetObjectItemCaseSensitive(inst, "segments");
        const cJSON *ours = cJSON_GetObjectItemCaseSensitive(a, "segments");
        CHECK_EQ_INT_IN(ctx, cJSON_GetArraySize(ours), cJSON_GetArraySize(segs));
        const cJSON *g;
        cJSON_ArrayForEach(g, ours)
        {
            const cJSON *t = truth_segment(segs, (uint64_t)num(g, "address"));
            CHECK_TRUE_IN(ctx, t != NULL);
            if (!t)
                continue;
            static const char *const SEG_KEYS[] = {"total_size", "stream", "allocated_size",
                                                   "active_size", "requested_size"};
            for (size_t q = 0; q < sizeof SEG_KEYS / sizeof *SEG_KEYS; q++)
                CHECK_EQ_INT_IN(ctx, (uint64_t)num(g, SEG_KEYS[q]), (uint64_t)num(t, SEG_KEYS[q]));
            CHECK_EQ_STR_IN(ctx, str(g, "segment_type"), str(t, "segment_type"));
            const cJSON *tb = cJSON_GetObjectItemCaseSensitive(t, "blocks");
            const cJSON *ob = cJSON_GetObjectItemCaseSensitive(g, "blocks");
            CHECK_EQ_INT_IN(ctx, cJSON_GetArraySize(ob), cJSON_GetArraySize(tb));
            for (int b = 0; b < cJSON_GetArraySize(ob) && b < cJSON_GetArraySize(tb); b++) {
                const cJSON *x = cJSON_GetArrayItem(ob, b), *y = cJSON_GetArrayItem(tb, b);
                CHECK_EQ_INT_IN(ctx, (uint64_t)num(x, "address"), (uint64_t)num(y, "address"));
                CHECK_EQ_INT_IN(ctx, (uint64_t)num(x, "size"), (uint64_t)num(y, "size"));
                CHECK_EQ_STR_IN(ctx, str(x, "state"), str(y, "state"));
            }
        }
        const cJSON *total = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(inst, "free"), "total");
        CHECK_EQ_INT_IN(ctx, (uint64_t)num(a, "free_in_reserved_bytes"), (uint64_t)num(total, "bytes"));
        CHECK_EQ_INT_IN(ctx, (uint64_t)num(a, "free_blocks"), (uint64_t)num(total, "blocks"));
        CHECK_EQ_INT_IN(ctx, (uint64_t)num(a, "largest_free_block_bytes"), (uint64_t)num(total, "largest"));
    }
    cJSON_Delete(doc);
    free(out);
    cJSON_Delete(truth);
}

/* render --show fragmentation: over events, each column of the lower panel holds the
 * highest and lowest free bytes, the highest largest block and block count of the events
 * in it, from the series (a column's own events, and the state it starts in). */
static void panel(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "testdata/%s.pickle", name);
    ms_snapshot *s = NULL;
    ms_timeline *t = NULL;
    ms_heap_frag *f = NULL;
    msr_chart *ch = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, path, NULL, &err) ||
        ms_timeline_build(&t, s, 0, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS, &err) ||
        ms_heap_frag_build(&f, s, 0, &err)) {
        check_fail("%s: %s", name, err.message);
        goto done;
    }
    msr_chart_source src = {.snap = s, .trace = ms_snapshot_trace(s, 0), .tl = t, .label = name};
    msr_chart_spec spec = {.x_mode = MSR_CHART_X_EVENTS, .fragmentation = true};
    /* Without the series the panel is refused, not drawn empty. */
    CHECK_EQ_INT_IN(name, msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 900, 600}, &err),
                    MS_ERR_ARG);
    src.frag = f;
    CHECK_EQ_INT_IN(name, msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 900, 600}, &err), 0);
    if (!ch)
        goto done;
    CHECK_TRUE_IN(name, ch->has_frag && ch->frag_rect.x == ch->plot.x &&
                            ch->frag_rect.w == ch->plot.w &&
                            ch->frag_rect.y > ch->plot.y + ch->plot.h);
    size_t n = src.trace->n, checked = 0;
    for (size_t c = 0; c < ch->n_cols; c++) {
        /* event i spans [i, i+1) on this axis: the column's events and the one before */
        double lo = ch->x_lo + (double)c * ch->dx, hi = lo + ch->dx;
        int64_t first = (int64_t)ceil(lo), last = (int64_t)ceil(hi) - 1;
        if (c + 1 == ch->n_cols)
            last = (int64_t)n - 1;
        if (first > last || first >= (int64_t)n)
            continue;
        int64_t fmax = -1, fmin = INT64_MAX, lmax = -1, bmax = -1;
        for (int64_t e = first - 1; e <= last; e++) {
            uint64_t fb = e < 0 ? f->start_free_bytes : f->free_bytes[e];
            uint64_t lb = e < 0 ? f->start_largest_free : f->largest_free[e];
            uint32_t bb = e < 0 ? f->start_free_blocks : f->free_blocks[e];
            fmax = (int64_t)fb > fmax ? (int64_t)fb : fmax;
            fmin = (int64_t)fb < fmin ? (int64_t)fb : fmin;
            lmax = (int64_t)lb > lmax ? (int64_t)lb : lmax;
            bmax = (int64_t)bb > bmax ? (int64_t)bb : bmax;
        }
        CHECK_EQ_INT_IN(name, ch->frag_free[c], fmax);
        CHECK_EQ_INT_IN(name, ch->frag_free_low[c], fmin);
        CHECK_EQ_INT_IN(name, ch->frag_largest[c], lmax);
        CHECK_EQ_INT_IN(name, ch->frag_blocks[c], bmax);
        checked++;
    }
    CHECK_TRUE_IN(name, checked > 100);
done:
    msr_chart_free(ch);
    ms_heap_frag_free(f);
    ms_timeline_free(t);
    ms_snapshot_free(s);
}

/* The picture's layouts: a row per segment up to 40, packed rows up to 300, the overview
 * beyond; each draws (a state of n segments of 2 and 20 MiB, each a block allocated, one
 * free and one pending free). */
static void layouts(void)
{
    static const size_t N[3] = {40, 150, 500};
    for (int k = 0; k < 3; k++) {
        size_t n = N[k];
        ms_heap h;
        memset(&h, 0, sizeof h);
        h.segments = calloc(n, sizeof *h.segments);
        h.blocks = calloc(3 * n, sizeof *h.blocks);
        uint64_t addr = (uint64_t)1 << 40;
        for (size_t i = 0; h.segments && h.blocks && i < n; i++) {
            uint64_t sz = (i % 7 ? 2u : 20u) << 20, a = sz / 2, b = sz / 4;
            h.segments[i] = (ms_heap_segment){addr, sz, 0, false, sz == (2u << 20), {0, 0},
                                              h.n_blocks, 3};
            h.blocks[h.n_blocks++] = (ms_heap_block){addr, a, a, MS_BLOCK_ACTIVE_ALLOCATED, 1,
                                                     MS_NO_STACK, false};
            h.blocks[h.n_blocks++] = (ms_heap_block){addr + a, b, 0, MS_BLOCK_INACTIVE, -1,
                                                     MS_NO_STACK, false};
            h.blocks[h.n_blocks++] = (ms_heap_block){addr + a + b, sz - a - b, 1,
                                                     MS_BLOCK_ACTIVE_PENDING_FREE, 2, MS_NO_STACK,
                                                     false};
            h.reserved_bytes += sz;
            addr += sz + ((uint64_t)2 << 20);
        }
        h.n_segments = n;
        CHECK_EQ_INT((int)msr_segments_layout_of(&h, 1230),
                     (int)(k == 0 ? MSR_SEGMENTS_ROWS : k == 1 ? MSR_SEGMENTS_PACKED
                                                              : MSR_SEGMENTS_OVERVIEW));
        msr_segments_panel p = {&h, NULL, "synthetic"};
        msr_segments_figure f = {NULL, &p, 1, MSR_SEG_BY_CATEGORY, "layouts"};
        char dir[] = "/tmp/memsnap-segpic-XXXXXX", path[256];
        ms_error err;
        if (mkdtemp(dir)) {
            snprintf(path, sizeof path, "%s/s.svg", dir);
            CHECK_EQ_INT(msr_segments_chart_write(path, &f, NULL, &err), 0);
            snprintf(path, sizeof path, "%s/s.png", dir);
            CHECK_EQ_INT(msr_segments_chart_write(path, &f, NULL, &err), 0);
            check_remove_dir(dir);
        }
        free(h.segments);
        free(h.blocks);
    }
}

int main(void)
{
    layouts();
    for (size_t i = 0; i < sizeof FILES / sizeof *FILES; i++)
        one(FILES[i]);
    panel("seg_churn");
    const char *bin;
    char dir[] = "/tmp/memsnap-segments-XXXXXX";
    if (check_cli_setup(&bin, dir) == 0) {
        cli(bin, "seg_churn");
        cli(bin, "seg_late_start");
        check_remove_dir(dir);
    } else {
        check_fail("no memsnap binary to run");
    }
    return check_finish("test_segments");
}
