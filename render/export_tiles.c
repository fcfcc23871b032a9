/* The view's pyramid, its tiles (export_tiles.h): which events a window holds, its chart
 * built on the whole trace or on a slice, the later groupings' charts built along on the
 * same slice and columns, and two threads that build while the writer takes them in
 * order. Split from chart_export.c, which chooses the windows and writes the page. */
#include "export_tiles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/order.h"

msr_chart_rect msr__export_area(const msr_chart_export_opts *o)
{
    return (msr_chart_rect){0, 0, o->width > 0 ? o->width : 1320, o->height > 0 ? o->height : 560};
}

/* The axis's length: seconds, or on the run axis (src->warp set by the exporter only
 * when it has breaks) its units. */
double msr__export_span(const msr_chart_source *src)
{
    size_t n_ev = src->trace->n;
    double span = n_ev > 1 ? msr__slice_x(src, n_ev - 1) : 0;
    span = span > 0 ? span : 1e-6;
    return src->warp ? msr_chart_warp_u(src->warp, span) : span;
}

/* A slice's allocation numbers mean nothing once the next window is cut: the whole
 * timeline's instead (global NULL: the chart was built on the whole trace). */
static void globalize(tile *t, const size_t *global)
{
    for (size_t g = 0; global && !t->rc && g < t->ch->n_groups; g++)
        if (t->ch->groups[g].alloc >= 0)
            t->ch->groups[g].alloc = (int64_t)global[t->ch->groups[g].alloc];
}

/* The later groupings' tiles of `t`'s window (b->with), from the source and columns
 * that built `t`: each window is sliced and aggregated once for all groupings. */
static void build_along(const builder *b, const tile *t, const msr_chart_source *src,
                        const msr_chart_spec *spec, const size_t *global)
{
    if (t->rc)
        return;
    size_t k = (size_t)(t - b->t);
    for (int mode = 0; mode < N_MODES; mode++) {
        if (!b->with[mode])
            continue;
        tile *u = &b->later[mode][b->level][k];
        msr_chart_spec s = *spec;
        s.by = u->by;
        u->crowded = t->crowded;
        u->n_events = t->n_events;
        ms_error_clear(&u->err);
        msr__chart_aux aux = {t->ch, &u->runs, b->life_x, global};
        u->rc = msr__chart_build_aux(&u->ch, src, &s, b->area, &aux, &u->err);
        globalize(u, global);
        u->done = true;
    }
}

/* Builds tile `t` on the whole trace or on a slice cut by `sl`; reads only shared,
 * unchanging inputs (the snapshot's site cache is filled before threads start). */
static void build_tile(builder *b, msr__slicer *sl, tile *t)
{
    const msr_chart_source *src = b->src;
    const msr_chart_export_opts *o = b->o;
    size_t n_ev = src->trace->n;
    const msr_chart_warp *w = b->warp;
    /* On the run axis a window [lo, hi) in axis units holds the events whose times the
     * (monotone) warp maps into it. */
    int64_t e0 = msr__slice_first_event(src, w ? msr_chart_warp_t(w, t->lo) : t->lo, false);
    int64_t e1 = msr__slice_first_event(src, w ? msr_chart_warp_t(w, t->hi) : t->hi, true);
    /* Columns as the chart cuts them, near enough for a count. The count only decides
     * whether to go deeper (crowded above 1% of the events): once past that it stops, so
     * the coarse levels do not pay a pass over the trace. A tile past the mark alone puts
     * the level's sum past it, so each tile may stop on its own count, or on its count
     * and those its level's tiles handed in before (b->crowded_sum): the deep levels'
     * hundreds of small windows, which never pass the mark alone, then stop counting
     * once a few have. */
    const int64_t *t_us = src->trace->time_us;
    double per_us = floor(b->area.w) / ((t->hi - t->lo) * 1e6);
    int64_t t_lo = (n_ev ? t_us[0] : 0) + (int64_t)(t->lo * 1e6);
    int64_t prev_col = INT64_MIN;
    size_t crowded = 0;
    double per_u = floor(b->area.w) / (t->hi - t->lo);
    /* The whole trace's charts (level 0, one per grouping) each count alone. */
    bool pool = b->count && b->level > 0;
    size_t others = pool ? atomic_load(&b->crowded_sum) : 0;
    for (int64_t e = e0; b->count && e < e1 && (others + crowded) * 100 <= n_ev; e++) {
        int64_t col = w ? (int64_t)((msr_chart_warp_u(w, (double)(t_us[e] - t_us[0]) / 1e6) -
                                     t->lo) * per_u)
                        : (int64_t)((double)(t_us[e] - t_lo) * per_us);
        crowded += col == prev_col;
        prev_col = col;
    }
    t->crowded = crowded;
    if (pool)
        atomic_fetch_add(&b->crowded_sum, crowded);
    t->n_events = (size_t)(e1 - e0);
    msr_chart_spec spec = {0};
    spec.x_mode = w ? MSR_CHART_X_RUN : MSR_CHART_X_TIME;
    spec.keep_time_axis = true; /* no times: the page labels instants as events */
    spec.by = t->by;
    spec.has_from = spec.has_to = true;
    spec.from = t->lo;
    spec.to = t->hi;
    spec.y_fit = b->y_fit;
    ms_error_clear(&t->err);
    /* The whole trace needs no slice. */
    if (e0 == 0 && (size_t)e1 == n_ev) {
        spec.highlights = o->highlights;
        spec.n_highlights = o->n_highlights;
        msr__chart_aux aux = {NULL, &t->runs, b->life_x, NULL};
        t->rc = msr__chart_build_aux(&t->ch, src, &spec, b->area, &aux, &t->err);
        build_along(b, t, src, &spec, NULL);
        return;
    }
    /* Windows of a quarter of the events or more are charted as the whole trace charts
     * them (the page's format since the pyramid was built: these were once built on the
     * whole trace); a slice costs only its window. */
    bool as_whole = (size_t)(e1 - e0) * 4 >= n_ev;
    size_t nh = 0;
    t->rc = msr__slicer_cut(sl, e0, e1, as_whole, o->highlights, o->n_highlights, &nh, &t->err);
    spec.highlights = sl->hl;
    spec.n_highlights = nh;
    if (!t->rc) {
        msr__chart_aux aux = {NULL, &t->runs, b->life_x, sl->global};
        t->rc = msr__chart_build_aux(&t->ch, &sl->out, &spec, b->area, &aux, &t->err);
    }
    build_along(b, t, &sl->out, &spec, sl->global);
    /* The slice's allocation numbers mean nothing once the next window is cut. */
    globalize(t, sl->global);
}

/* Claims the next tile under the lock, when there is one and room for its chart. */
static bool claim(builder *b, size_t *k)
{
    if (b->stop || b->claimed >= b->n || b->claimed >= b->written + b->ahead)
        return false;
    *k = b->claimed++;
    return true;
}

static void *helper_main(void *arg)
{
    builder *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        size_t k;
        if (claim(b, &k)) {
            pthread_mutex_unlock(&b->mu);
            build_tile(b, b->sl[1], &b->t[k]);
            pthread_mutex_lock(&b->mu);
            b->t[k].done = true;
            pthread_cond_broadcast(&b->cv);
            continue;
        }
        if (b->stop || b->claimed >= b->n)
            break;
        pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int msr__run_tiles(builder *b, bool two, take_fn take, void *ctx)
{
    b->claimed = b->written = 0;
    b->stop = false;
    pthread_t helper;
    bool helped = false;
    if (two && b->n > 1) {
        pthread_mutex_init(&b->mu, NULL);
        pthread_cond_init(&b->cv, NULL);
        helped = pthread_create(&helper, NULL, helper_main, b) == 0;
        if (!helped) {
            pthread_cond_destroy(&b->cv);
            pthread_mutex_destroy(&b->mu);
        }
    }
    int rc = 0;
    if (helped)
        pthread_mutex_lock(&b->mu);
    while (b->written < b->n) {
        tile *t = &b->t[b->written];
        size_t k;
        if (t->done) {
            if (helped)
                pthread_mutex_unlock(&b->mu);
            /* Without a writer the tiles keep their results, failures included. */
            rc = !take ? 0 : t->rc ? t->rc : take(ctx, b->written, t);
            if (helped)
                pthread_mutex_lock(&b->mu);
            b->written++;
            if (rc) {
                b->stop = true;
                if (helped)
                    pthread_cond_broadcast(&b->cv);
                break;
            }
            if (helped)
                pthread_cond_broadcast(&b->cv);
        } else if (claim(b, &k)) {
            if (helped)
                pthread_mutex_unlock(&b->mu);
            build_tile(b, b->sl[0], &b->t[k]);
            if (helped)
                pthread_mutex_lock(&b->mu);
            b->t[k].done = true;
        } else {
            pthread_cond_wait(&b->cv, &b->mu); /* only with a helper building t */
        }
    }
    if (helped) {
        pthread_mutex_unlock(&b->mu);
        pthread_join(helper, NULL);
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
    }
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    return MSR__CMP(*(const int64_t *)a, *(const int64_t *)b);
}

/* What a slicer holds for a window of `events` events and `allocs` allocations, `alive`
 * of them carried in (chart_slice.c): action, time, address and size per event; the
 * allocation, its global and category index per allocation; the carried-in list. */
static uint64_t slice_bytes(uint64_t events, uint64_t allocs, uint64_t alive)
{
    return 25 * (events + 2) + 64 * allocs + 8 * alive;
}

int msr__export_work_levels(const msr_chart_source *src, int max_levels, size_t n_highlights,
                           uint64_t memory, bool *two)
{
    const ms_timeline *tl = src->tl;
    size_t n_ev = src->trace->n, na = tl->n_allocs;
    uint64_t budget = 2 * ((uint64_t)n_ev + na) + ((uint64_t)4 << 20);
    /* The slicers' own index of the allocations (order, their events, per-block frees). */
    uint64_t base = 32 * (uint64_t)na;
    /* Every life in every window, and still within the budget; every window as large as
     * the trace, on two threads, within the memory: nothing to count. */
    uint64_t windows = ((uint64_t)1 << max_levels) - 1;
    uint64_t whole = slice_bytes(n_ev, (uint64_t)na + n_highlights, na);
    if (windows * (na + 1) <= budget && base + 2 * whole <= memory)
        return max_levels;
    /* Each window's first event, as build_tile finds it, for every level. */
    size_t nq = (size_t)windows;
    int64_t *start = malloc((nq + 1) * sizeof *start), *pos = malloc((nq + 1) * sizeof *pos);
    int64_t *diff = calloc(nq + 2, sizeof *diff), *made = calloc(nq + 2, sizeof *made);
    if (!start || !pos || !diff || !made) {
        free(start);
        free(pos);
        free(diff);
        free(made);
        *two = false;
        return 1;
    }
    double span = msr__export_span(src);
    const msr_chart_warp *w = src->warp;
    size_t q = 0;
    for (int level = 0; level < max_levels; level++) {
        size_t n_tiles = (size_t)1 << level;
        for (size_t k = 0; k < n_tiles; k++) {
            double lo = span * (double)k / (double)n_tiles;
            start[q++] = msr__slice_first_event(src, w ? msr_chart_warp_t(w, lo) : lo, false);
        }
    }
    memcpy(pos, start, nq * sizeof *pos);
    pos[nq] = (int64_t)n_ev; /* the last window's end */
    qsort(pos, nq + 1, sizeof *pos, cmp_i64);
    /* Lives alive at a window's start (made before it, freed at or after it): +1 from
     * the first start after the alloc to the last start not after the free. And lives
     * made before each start (`made`, summed below), for those a window makes. */
    for (size_t i = 0; i < na; i++) {
        const ms_alloc *a = &tl->allocs[i];
        size_t i0 = ms__first_above_i64(pos, nq + 1, a->alloc_event);
        size_t i1 = a->free_event < 0 ? nq + 1 : ms__first_above_i64(pos, nq + 1, a->free_event);
        if (i0 < i1) {
            diff[i0]++;
            diff[i1]--;
        }
        if (a->alloc_event >= 0)
            made[i0]++;
    }
    for (size_t i = 1; i <= nq; i++) {
        diff[i] += diff[i - 1];
        made[i] += made[i - 1];
    }
    uint64_t used = 0, most = 0;
    int levels = max_levels;
    q = 0;
    for (int level = 0; level < max_levels; level++) {
        size_t n_tiles = (size_t)1 << level;
        /* A level's windows share its events (each level walks them once); the lives
         * they carry in are what grows with the windows. */
        uint64_t work = 0, biggest = 0;
        for (size_t k = 0; k < n_tiles; k++, q++) {
            /* The count at this start: any equal position holds it (the last one). */
            size_t at = ms__first_above_i64(pos, nq + 1, start[q]) - 1;
            work += (uint64_t)diff[at];
            /* The window ends where the next begins (the trace's end for the last). */
            int64_t end = k + 1 < n_tiles ? start[q + 1] : (int64_t)n_ev;
            size_t at_end = ms__first_above_i64(pos, nq + 1, end) - 1;
            uint64_t made_in = (uint64_t)(made[at_end] - made[at]);
            uint64_t bytes = slice_bytes((uint64_t)(end - start[q]),
                                         (uint64_t)diff[at] + made_in + n_highlights,
                                         (uint64_t)diff[at]);
            biggest = bytes > biggest ? bytes : biggest;
        }
        used += work;
        /* Level 0 is the whole trace, charted without a slice. */
        uint64_t slices = level > 0 ? (most > biggest ? most : biggest) : 0;
        if (level > 0 && (used > budget || base + slices > memory)) {
            levels = level;
            break;
        }
        most = slices;
    }
    /* A slicer per thread, each as large as the largest window it cuts. */
    if (base + 2 * most > memory)
        *two = false;
    free(start);
    free(pos);
    free(diff);
    free(made);
    return levels;
}

void msr__free_tiles(tile *t, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        msr_chart_free(t[k].ch);
        t[k].ch = NULL;
        msr__band_runs_free(&t[k].runs);
    }
}

