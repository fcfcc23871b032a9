/* The allocator's state at chosen instants, for the view's state panel (docs/view.md,
 * "Allocator states"): segments laid out as `memsnap segments -o` lays them out (a row
 * each for a few, packed in address order for more, the 300 holding the most free memory
 * when there are more), blocks as varint streams with their stack, site and category.
 * Two replays of the allocator: one to size every candidate state, one to write those
 * that fit the budget, by priority. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export_state.h"
#include "export_tiles.h"
#include "seg_draw.h"

#define LEFT 110.0     /* the panel's label column, CSS pixels */
#define RIGHT 16.0
#define ROW_H 14.0
#define ROW_GAP 5.0
#define SEP 4.0
#define ROWS_MAX 40    /* a row per segment up to this many */
#define SEGS_MAX 300   /* segments a state shows: the most free memory first */
/* Blocks a state may show: each is a rectangle of the panel, and past some tens of
 * thousands the panel neither draws in time nor shows a block per pixel. A state whose
 * shown segments hold more is left out (the page points to `memsnap segments --at`).
 * The recordings' states show at most 1,672 (testdata; 421 on the 4M-event trace); an
 * OOM after each of 300,000 allocations held 300,000 in one segment. */
#define BLOCKS_MAX 20000
/* The allocator's smallest segment (a small-pool segment; large ones are 20 MiB, or a
 * request rounded to 2 MiB; expandable ones map 2 MiB pages or more): a state with no
 * more reserved than SEGS_MAX of them shows every segment it has. */
#define SEG_MIN ((int64_t)2 << 20)

typedef struct sizes {
    size_t *est;
    const size_t *at; /* visited instant -> instant */
} sizes;

/* About what a state costs as text, from its totals (ms_heap_visit_totals_each lends
 * no blocks): measured on the benchmark trace's states, a shown segment is about 20
 * base64 characters and a block about 17. SIZE_MAX: too many blocks to show, known when
 * every segment is shown (else writing the state finds out). */
static int size_state(void *ctx, size_t k, const ms_heap *h, ms_error *err)
{
    (void)err;
    sizes *s = ctx;
    size_t segs = h->n_segments < SEGS_MAX ? h->n_segments : SEGS_MAX;
    size_t blocks = h->n_segments ? h->n_blocks / h->n_segments * segs + segs : 0;
    if (blocks > h->n_blocks)
        blocks = h->n_blocks;
    bool all_shown = h->n_segments <= SEGS_MAX;
    s->est[s->at[k]] = all_shown && h->n_blocks > BLOCKS_MAX ? SIZE_MAX
                                                             : 160 + 22 * segs + 18 * blocks;
    return 0;
}

typedef struct writer {
    exporter *x;
    msr__sbuf *b;
    const msr_export_instant *inst; /* the chosen ones, trace order */
    uint8_t *cats;
    size_t cap_cats;
    size_t *idx, *row_of;
    double *x_of;
    double plot_w;
    size_t written;
    /* The budget holds the states' text and what their stacks add to the tables: a state
     * that would pass it is taken back, and the rest are left out. */
    size_t budget, start_n, tables0;
    bool full;
} writer;

static int write_state(void *ctx, size_t k, const ms_heap *h, ms_error *err)
{
    writer *w = ctx;
    exporter *x = w->x;
    msr__sbuf *b = w->b;
    const msr_chart_export_opts *o = x->o;
    if (w->full)
        return 0;
    size_t n = msr__seg_pick(h, w->idx, SEGS_MAX), shown = 0;
    for (size_t i = 0; i < n; i++)
        shown += h->segments[w->idx[i]].n_blocks;
    if (shown > BLOCKS_MAX)
        return 0;
    size_t before = b->n;
    if (h->n_blocks > w->cap_cats) {
        free(w->cats);
        w->cap_cats = h->n_blocks;
        w->cats = malloc(w->cap_cats);
        if (!w->cats)
            return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for a state");
    }
    bool cats = o->block_categories != NULL;
    if (cats) {
        int rc = o->block_categories(o->block_categories_ctx, w->cats, h, err);
        if (rc)
            return rc;
    }
    uint64_t top = 1;
    for (size_t i = 0; i < n; i++)
        if (h->segments[w->idx[i]].total_size > top)
            top = h->segments[w->idx[i]].total_size;
    double ppb = w->plot_w / (double)top;
    size_t rows = n;
    if (n <= ROWS_MAX) {
        for (size_t i = 0; i < n; i++) {
            w->row_of[i] = i;
            w->x_of[i] = 0;
        }
    } else {
        rows = msr__seg_pack(h, w->idx, n, ppb, w->plot_w, SEP, w->row_of, w->x_of);
    }
    const msr_export_instant *in = &w->inst[k];
    const ms_trace *tr = x->src->trace;
    int64_t t = in->event >= 0 && (size_t)in->event < tr->n ? tr->time_us[in->event] - x->t0 : 0;
    msr__sb_printf(b, "%s{\"ev\":%lld,\"t\":%lld,\"lab\":%lld", w->written ? "," : "",
                  (long long)in->event, (long long)t,
                  (long long)(in->label ? msr__st_id(&x->st, in->label) : -1));
    msr__sb_printf(b, ",\"res\":%llu,\"al\":%llu,\"fr\":%llu,\"nf\":%llu,\"big\":%llu",
                  (unsigned long long)h->reserved_bytes, (unsigned long long)h->allocated_bytes,
                  (unsigned long long)h->inactive_bytes, (unsigned long long)h->inactive_count,
                  (unsigned long long)h->largest_inactive);
    msr__sb_printf(b, ",\"ap\":%d,\"note\":%lld,\"nseg\":%zu,\"rows\":%zu,\"ppb\":",
                  h->approximate ? 1 : 0,
                  (long long)(h->approximate ? msr__st_id(&x->st, h->note) : -1), h->n_segments,
                  rows);
    msr__sb_num(b, ppb);
    /* Segments: row, x in quarter pixels, address (the first absolute, then the step
     * from the one before: they go up), size, flags (1 small pool, 2 expandable), blocks,
     * stream (a string). */
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        const ms_heap_segment *g = &h->segments[w->idx[i]];
        char stream[32];
        snprintf(stream, sizeof stream, "%llu", (unsigned long long)g->stream_raw);
        msr__vb_u(&x->v, w->row_of[i]);
        msr__vb_u(&x->v, (uint64_t)llround(w->x_of[i] * 4));
        msr__vb_u(&x->v, g->address - prev);
        prev = g->address;
        msr__vb_u(&x->v, g->total_size);
        msr__vb_u(&x->v, (g->is_small ? 1u : 0u) | (g->is_expandable ? 2u : 0u));
        msr__vb_u(&x->v, g->n_blocks);
        msr__vb_u(&x->v, (uint64_t)msr__st_id(&x->st, stream));
    }
    msr__sb_puts(b, ",\"s\":");
    msr__sb_b64(b, &x->v);
    /* Blocks of the shown segments, in order (each starts where the one before ends):
     * size, state | 4 reconstructed | 8 size estimated; an active block then adds its
     * requested size, stack + 1, site label + 1 and category + 1 (0: none). */
    for (size_t i = 0; i < n; i++) {
        const ms_heap_segment *g = &h->segments[w->idx[i]];
        for (size_t j = g->first_block; j < g->first_block + g->n_blocks; j++) {
            const ms_heap_block *bl = &h->blocks[j];
            bool active = bl->state != MS_BLOCK_INACTIVE;
            msr__vb_u(&x->v, bl->size);
            msr__vb_u(&x->v, (uint64_t)bl->state | (active && bl->alloc_event < 0 ? 4u : 0u) |
                                (active && bl->estimated ? 8u : 0u));
            if (!active)
                continue;
            msr__vb_u(&x->v, bl->requested_size);
            msr__vb_u(&x->v, (uint64_t)(msr__exp_stack_ref(x, bl->stack) + 1));
            msr__vb_u(&x->v, (uint64_t)(msr__exp_site_label(x, bl->stack) + 1));
            msr__vb_u(&x->v, cats && w->cats[j] < MS_CAT_COUNT ? (uint64_t)w->cats[j] + 1 : 0);
        }
    }
    msr__sb_puts(b, ",\"b\":");
    msr__sb_b64(b, &x->v);
    msr__sb_puts(b, "}");
    size_t cost = b->n - w->start_n + msr__exp_tables_estimate(x) - w->tables0;
    if (cost > w->budget) {
        b->n = before;
        if (b->p)
            b->p[b->n] = '\0';
        w->full = true;
        return 0;
    }
    w->written++;
    return 0;
}

int msr__exp_states(exporter *x, msr__sbuf *b, size_t budget, size_t *n_out, ms_error *err)
{
    const msr_chart_export_opts *o = x->o;
    const msr_chart_source *src = x->src;
    *n_out = 0;
    size_t n = o->n_instants;
    if (!n || !src->snap)
        return 0;
    int device = src->tl->device;
    int64_t *events = malloc(n * sizeof *events);
    size_t *est = calloc(n, sizeof *est);
    msr__keyed *r = malloc(n * sizeof *r);
    msr_export_instant *chosen = malloc(n * sizeof *chosen);
    int64_t *chosen_ev = malloc(n * sizeof *chosen_ev);
    int rc = 0;
    if (!events || !est || !r || !chosen || !chosen_ev)
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory for the states");
    for (size_t k = 0; !rc && k < n; k++)
        events[k] = o->instants[k].event;
    /* Only the states that may fit are sized: the replay then ends at the last of them,
     * not at the largest state (an OOM after each of 300,000 never-freed allocations). */
    size_t *alive = rc ? NULL : malloc(n * sizeof *alive);
    size_t *at = rc ? NULL : malloc(n * sizeof *at);
    int64_t *visit = rc ? NULL : malloc(n * sizeof *visit);
    size_t nv = 0;
    if (!rc && (!alive || !at || !visit))
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory for the states");
    if (!rc) {
        /* A lower bound on each state's blocks (each live allocation is one). Where the
         * state shows every segment (its reserved memory holds at most SEGS_MAX of
         * SEG_MIN), one past BLOCKS_MAX is known without replaying the allocator to it. */
        rc = ms_timeline_alive_counts(src->tl, events, n, alive, err);
        const ms_timeline *tl = src->tl;
        for (size_t k = 0; !rc && k < n; k++) {
            est[k] = SIZE_MAX;
            int64_t e = events[k];
            int64_t reserved = e >= 0 && (size_t)e < tl->n_events ? tl->reserved[e]
                                                                  : tl->reserved_start;
            if (alive[k] <= BLOCKS_MAX || reserved > SEGS_MAX * SEG_MIN) {
                at[nv] = k;
                visit[nv++] = events[k];
            }
        }
    }
    sizes sz = {est, at};
    if (!rc && nv)
        rc = ms_heap_visit_totals_each(src->snap, device, visit, nv, size_state, &sz, err);
    free(alive);
    free(at);
    free(visit);
    /* The most important first, as long as they fit. */
    size_t m = 0;
    if (!rc) {
        for (size_t k = 0; k < n; k++)
            r[k] = (msr__keyed){o->instants[k].priority, k};
        qsort(r, n, sizeof *r, msr__keyed_up);
        size_t used = 0;
        bool *take = calloc(n, sizeof *take);
        if (!take)
            rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory for the states");
        for (size_t i = 0; take && i < n; i++)
            if (est[r[i].index] <= budget && used + est[r[i].index] <= budget) {
                used += est[r[i].index];
                take[r[i].index] = true;
            }
        for (size_t k = 0; take && k < n; k++)
            if (take[k]) {
                chosen[m] = o->instants[k];
                chosen_ev[m++] = events[k];
            }
        free(take);
    }
    writer w;
    memset(&w, 0, sizeof w);
    msr_chart_rect area = msr__export_area(o);
    w.x = x;
    w.b = b;
    w.inst = chosen;
    w.plot_w = area.w - LEFT - RIGHT;
    size_t cap = SEGS_MAX;
    w.idx = malloc(cap * sizeof *w.idx);
    w.row_of = malloc(cap * sizeof *w.row_of);
    w.x_of = malloc(cap * sizeof *w.x_of);
    if (!rc && (!w.idx || !w.row_of || !w.x_of))
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory for the states");
    if (!rc && m) {
        msr__sb_printf(b, ",\"states\":{\"x\":%g,\"pw\":%g,\"rh\":%g,\"rg\":%g,\"cat\":[", LEFT,
                      w.plot_w, ROW_H, ROW_GAP);
        for (int c = 0; c < MS_CAT_COUNT; c++)
            msr__sb_printf(b, "%s[%lld,%lld]", c ? "," : "",
                          (long long)msr__exp_colour_id(x, msr__category_rgb((ms_category)c)),
                          (long long)(c < (int)o->n_category_names && o->category_names
                                          ? msr__st_id(&x->st, o->category_names[c])
                                          : -1));
        msr__sb_puts(b, "],\"list\":[");
        w.budget = budget;
        w.start_n = b->n;
        w.tables0 = msr__exp_tables_estimate(x);
        rc = ms_heap_visit_each(src->snap, device, chosen_ev, m, write_state, &w, err);
        msr__sb_puts(b, "]}");
    }
    if (!rc)
        *n_out = w.written;
    free(w.cats);
    free(w.idx);
    free(w.row_of);
    free(w.x_of);
    free(events);
    free(est);
    free(r);
    free(chosen);
    free(chosen_ev);
    return rc;
}
