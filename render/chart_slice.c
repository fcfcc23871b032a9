/* Slices of a trace (see chart_slice.h) and the window charts built on them. A slice
 * keeps the whole timeline's order of allocations and x values, so a chart of it equals
 * msr_chart_build() of the same window on the whole trace (tests/test_chart_export.c). */
#include "chart_slice.h"

#include <stdlib.h>
#include <string.h>

#include "chart_export.h"
#include "render_util.h"

/* ------------------------------------------------------------------ slices */

static const ms_alloc *slicer_allocs;

static int cmp_alloc_event(const void *a, const void *b)
{
    const ms_alloc *x = &slicer_allocs[*(const size_t *)a];
    const ms_alloc *y = &slicer_allocs[*(const size_t *)b];
    int c = MSR__CMP(x->alloc_event, y->alloc_event);
    return c ? c : msr__size_up(a, b);
}

int msr__slicer_init(msr__slicer *s, const msr_chart_source *src, size_t n_highlights,
                    ms_error *err)
{
    memset(s, 0, sizeof *s);
    s->src = src;
    const ms_timeline *tl = src->tl;
    size_t n = tl->n_allocs;
    /* Where each highlighted allocation went: only looked up with highlights. */
    s->slice_of = n_highlights ? malloc((n ? n : 1) * sizeof *s->slice_of) : NULL;
    s->hl = calloc(n_highlights ? n_highlights : 1, sizeof *s->hl);
    s->order_ev = malloc((n ? 2 * n : 1) * sizeof *s->order_ev);
    if ((n_highlights && !s->slice_of) || !s->hl || !s->order_ev)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory slicing the trace");
    if (s->slice_of)
        memset(s->slice_of, 0xff, (n ? n : 1) * sizeof *s->slice_of); /* -1 */
    s->first_oom = -1;
    const uint8_t *oom = src->trace->n ? memchr(src->trace->action, MS_ACT_OOM, src->trace->n)
                                       : NULL;
    if (oom)
        s->first_oom = (int64_t)(oom - src->trace->action);
    /* The timeline keeps its allocations by alloc event, none from before the trace as a
     * rule: then order[] is the identity, and is left out (NULL). */
    size_t k = 0;
    for (; k < n; k++) {
        int64_t a = tl->allocs[k].alloc_event;
        if (a < 0 || (k && a < s->order_ev[2 * (k - 1)]))
            break;
        s->order_ev[2 * k] = a;
        s->order_ev[2 * k + 1] = tl->allocs[k].free_event;
    }
    if (k == n) {
        s->n_order = n;
    } else {
        s->order = calloc(n ? n : 1, sizeof *s->order);
        s->pre = calloc(n ? n : 1, sizeof *s->pre);
        if (!s->order || !s->pre)
            return msr__render_fail(err, MS_ERR_NOMEM, "out of memory slicing the trace");
        bool sorted = true;
        for (size_t i = 0; i < n; i++) {
            if (tl->allocs[i].alloc_event < 0) {
                s->pre[s->n_pre++] = i;
                continue;
            }
            if (s->n_order && tl->allocs[s->order[s->n_order - 1]].alloc_event >
                                  tl->allocs[i].alloc_event)
                sorted = false;
            s->order[s->n_order++] = i;
        }
        if (!sorted) { /* only guards the sweep */
            slicer_allocs = tl->allocs;
            qsort(s->order, s->n_order, sizeof *s->order, cmp_alloc_event);
        }
        for (size_t j = 0; j < s->n_order; j++) {
            s->order_ev[2 * j] = tl->allocs[s->order[j]].alloc_event;
            s->order_ev[2 * j + 1] = tl->allocs[s->order[j]].free_event;
        }
    }
    size_t n_blocks = s->n_order / MSR__SLICER_BLOCK + 1;
    s->block_free = malloc(n_blocks * sizeof *s->block_free);
    if (!s->block_free)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory slicing the trace");
    for (size_t b = 0; b < n_blocks; b++) {
        int64_t most = -1;
        for (size_t j = b * MSR__SLICER_BLOCK; j < s->n_order && j < (b + 1) * MSR__SLICER_BLOCK;
             j++) {
            int64_t f = s->order_ev[2 * j + 1];
            f = f < 0 ? INT64_MAX : f; /* never freed: alive at every window */
            most = f > most ? f : most;
        }
        s->block_free[b] = most;
    }
    return 0;
}

int msr__slicer_init_shared(msr__slicer *s, const msr__slicer *base, size_t n_highlights,
                           ms_error *err)
{
    memset(s, 0, sizeof *s);
    s->src = base->src;
    s->order = base->order;
    s->order_ev = base->order_ev;
    s->n_order = base->n_order;
    s->pre = base->pre;
    s->block_free = base->block_free;
    s->n_pre = base->n_pre;
    s->first_oom = base->first_oom;
    s->shared = true;
    size_t n = s->src->tl->n_allocs;
    s->slice_of = n_highlights ? malloc((n ? n : 1) * sizeof *s->slice_of) : NULL;
    s->hl = calloc(n_highlights ? n_highlights : 1, sizeof *s->hl);
    if ((n_highlights && !s->slice_of) || !s->hl)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory slicing the trace");
    if (s->slice_of)
        memset(s->slice_of, 0xff, (n ? n : 1) * sizeof *s->slice_of); /* -1 */
    return 0;
}

void msr__slicer_free(msr__slicer *s)
{
    if (!s->shared) {
        free(s->order);
        free(s->order_ev);
        free(s->pre);
        free(s->block_free);
    }
    free(s->alive);
    free(s->action);
    free(s->addr);
    free(s->size);
    free(s->time_us);
    free(s->allocs);
    free(s->global);
    free(s->cat_of);
    free(s->slice_of);
    free(s->hl);
}

void msr__slicer_restart(msr__slicer *s)
{
    s->next = 0;
    s->n_alive = 0;
}

static bool slicer_add_alive(msr__slicer *s, size_t i)
{
    if (!msr__render_grow((void **)&s->alive, &s->cap_alive, s->n_alive + 1, sizeof *s->alive,
                         1024))
        return false;
    s->alive[s->n_alive++] = i;
    return true;
}

static bool slicer_room(msr__slicer *s, size_t events, size_t allocs)
{
    if (events > s->cap_events) {
        size_t c = events;
#define GROW(p) do { void *q = realloc(p, c * sizeof *(p)); if (!q) return false; p = q; } while (0)
        GROW(s->action);
        GROW(s->addr);
        GROW(s->size);
        GROW(s->time_us);
        s->cap_events = c;
    }
    if (allocs > s->cap_allocs) {
        size_t c = allocs;
        GROW(s->allocs);
        GROW(s->global);
        GROW(s->cat_of);
        s->cap_allocs = c;
#undef GROW
    }
    return true;
}

static int64_t renumber(int64_t e, int64_t e0, int64_t e1, int64_t shift)
{
    if (e < 0)
        return -1;
    if (e < e0)
        return -1;
    if (e >= e1)
        return -1;
    return e - e0 + shift;
}

/* The slice of events [e0, e1) (e0 > 0: with the stand-in event first). Windows must come
 * in increasing order between msr__slicer_restart() calls. */
int msr__slicer_cut(msr__slicer *s, int64_t e0, int64_t e1, bool as_whole,
                   const msr_chart_highlight *hl, size_t n_hl, size_t *n_hl_out, ms_error *err)
{
    const ms_timeline *tl = s->src->tl;
    const ms_trace *tr = s->src->trace;
    if (n_hl && !s->slice_of)
        return msr__render_fail(err, MS_ERR_ARG, "the slicer was made for no highlights");
    /* The alive list drops what died before the window, then takes what was made
     * before it and lives into it, keeping order[]'s order. */
    const int64_t *ev = s->order_ev;
    size_t k = 0;
    for (size_t i = 0; i < s->n_alive; i++) {
        int64_t f = ev[2 * s->alive[i] + 1];
        if (f < 0 || f >= e0)
            s->alive[k++] = s->alive[i];
    }
    s->n_alive = k;
    for (; s->next < s->n_order && ev[2 * s->next] < e0; s->next++) {
        /* A block made wholly before the window and freed wholly before it adds no one
         * (most are: allocations die young), so it is passed over in one step. */
        size_t b = s->next / MSR__SLICER_BLOCK, b_end = (b + 1) * MSR__SLICER_BLOCK;
        if (s->next % MSR__SLICER_BLOCK == 0 && b_end <= s->n_order &&
            ev[2 * (b_end - 1)] < e0 && s->block_free[b] < e0) {
            s->next = b_end - 1;
            continue;
        }
        int64_t f = ev[2 * s->next + 1];
        if ((f < 0 || f >= e0) && !slicer_add_alive(s, s->next))
            return msr__render_fail(err, MS_ERR_NOMEM, "out of memory slicing the trace");
    }
    /* The window's own allocations: order[] is by alloc event, so a search finds them. */
    size_t first = s->next, last = s->n_order;
    for (size_t lo = first; lo < last;) {
        size_t mid = lo + (last - lo) / 2;
        if (ev[2 * mid] < e1)
            lo = mid + 1;
        else
            last = mid;
    }
    int64_t shift = e0 > 0 ? 1 : 0;
    size_t trail = as_whole && (size_t)e1 < tr->n ? 1 : 0;
    size_t n_ev = (size_t)(e1 - e0) + (size_t)shift + trail;
    size_t n_al = s->n_alive + (last - first) + s->n_pre + (as_whole ? n_hl : 0);
    if (!slicer_room(s, n_ev ? n_ev : 1, n_al ? n_al : 1))
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory slicing the trace");
    size_t m = (size_t)(e1 - e0);
    bool oom_in = as_whole && shift && s->first_oom >= 0 && s->first_oom < e0;
    bool oom_after = trail && s->first_oom >= e1;
    /* Action and time are the slice's own: the stand-ins are no events of the trace, and
     * the one before the window sits at the trace's first time, so x values stay the
     * whole trace's. The other columns are borrowed from the trace, from the event before
     * the window to the one after it: a stand-in's curves are then those of its neighbour
     * in the trace (the state carried into the window, before it; after it, a state no
     * column reads), and addr and size are read only at OOM events, so they are the
     * slice's own only when a stand-in is the trace's first OOM. */
    if (shift) {
        s->action[0] = oom_in ? MS_ACT_OOM : MS_ACT_OTHER; /* no column shows it */
        s->time_us[0] = tr->time_us[0];
    }
    memcpy(s->action + shift, tr->action + e0, m * sizeof *s->action);
    memcpy(s->time_us + shift, tr->time_us + e0, m * sizeof *s->time_us);
    if (trail) {
        /* Right of the window (event e1 already lies past it): no column sees it. */
        s->action[(size_t)shift + m] = oom_after ? MS_ACT_OOM : MS_ACT_OTHER;
        s->time_us[(size_t)shift + m] = tr->time_us[tr->n - 1];
    }
    const uint64_t *addr = tr->addr + e0 - shift, *size = tr->size + e0 - shift;
    if (oom_in || oom_after) {
        memcpy(s->addr + shift, tr->addr + e0, m * sizeof *s->addr);
        memcpy(s->size + shift, tr->size + e0, m * sizeof *s->size);
        if (shift) {
            s->addr[0] = oom_in ? tr->addr[s->first_oom] : 0;
            s->size[0] = oom_in ? tr->size[s->first_oom] : 0;
        }
        if (trail) {
            s->addr[(size_t)shift + m] = oom_after ? tr->addr[s->first_oom] : 0;
            s->size[(size_t)shift + m] = oom_after ? tr->size[s->first_oom] : 0;
        }
        addr = s->addr;
        size = s->size;
    }
    int64_t *act = tl->active + e0 - shift, *res = tl->reserved + e0 - shift; /* read only */

    /* The slice keeps the whole timeline's order of allocations (those made before the
     * window, those made in it, those from before the trace), so band choices that tie on
     * score fall the same way. Those made before the window are made at the stand-in
     * event, so they stack above those from before the trace, as in the whole trace. */
    size_t na = 0;
    for (size_t i = 0; i < s->n_alive; i++)
        s->global[na++] = s->order ? s->order[s->alive[i]] : s->alive[i];
    if (s->order)
        memcpy(s->global + na, s->order + first, (last - first) * sizeof *s->global);
    else
        for (size_t j = first; j < last; j++)
            s->global[na + j - first] = j;
    na += last - first;
    for (size_t i = 0; i < s->n_pre; i++) {
        const ms_alloc *a = &tl->allocs[s->pre[i]];
        if (a->free_event >= 0 && a->free_event < e0)
            continue;
        s->global[na++] = s->pre[i];
    }
    for (size_t i = 0; i < na; i++) {
        ms_alloc a = tl->allocs[s->global[i]];
        bool before = a.alloc_event >= 0 && a.alloc_event < e0;
        a.alloc_event = before ? 0 : renumber(a.alloc_event, e0, e1, shift);
        a.free_event = renumber(a.free_event, e0, e1, shift);
        a.free_requested_event = renumber(a.free_requested_event, e0, e1, shift);
        s->allocs[i] = a;
    }
    /* Where the highlighted allocations went (only they are looked up). */
    for (size_t i = 0; n_hl && i < na; i++)
        s->slice_of[s->global[i]] = (int32_t)i;
    /* A whole-trace chart gives every highlighted allocation its leak band, in the window
     * or not: those outside come too, made and freed at the stand-ins, so they hold no
     * bytes in any column and score nothing, as outside the window they do. */
    for (size_t h = 0; as_whole && h < n_hl; h++) {
        if (s->slice_of[hl[h].alloc] >= 0)
            continue;
        ms_alloc a = tl->allocs[hl[h].alloc];
        int64_t after = shift + (int64_t)m; /* the stand-in after the window */
        a.alloc_event = a.alloc_event < 0 ? -1 : a.alloc_event < e0 ? 0 : after;
        a.free_event = a.free_event < 0 || a.free_event >= e1 ? -1 : 0;
        a.free_requested_event =
            a.free_requested_event < 0 || a.free_requested_event >= e1 ? -1
            : a.free_requested_event < e0                               ? 0
                                                                        : after;
        s->global[na] = hl[h].alloc;
        s->allocs[na] = a;
        s->slice_of[hl[h].alloc] = (int32_t)na;
        na++;
    }
    size_t nh = 0;
    for (size_t h = 0; h < n_hl; h++) {
        int32_t i = s->slice_of[hl[h].alloc];
        if (i >= 0)
            s->hl[nh++] = (msr_chart_highlight){(size_t)i, hl[h].label, hl[h].suspect,
                                               hl[h].alive_end};
    }
    *n_hl_out = nh;
    for (size_t i = 0; n_hl && i < na; i++)
        s->slice_of[s->global[i]] = -1;

    s->trace = *tr;
    s->trace.n = n_ev;
    s->trace.action = s->action;
    s->trace.addr = addr;
    s->trace.size = size;
    s->trace.time_us = s->time_us;
    s->trace.stack = NULL;
    s->trace.stream = NULL;
    s->trace.compile_context = s->trace.user_metadata = NULL; /* indexed by the whole trace */
    s->tl = *tl;
    s->tl.n_events = n_ev;
    s->tl.active = act;
    s->tl.reserved = res;
    s->tl.active_start = shift ? tl->active[e0 - 1] : tl->active_start;
    s->tl.reserved_start = shift ? tl->reserved[e0 - 1] : tl->reserved_start;
    s->tl.allocs = s->allocs;
    s->tl.n_allocs = na;
    s->tl.peak_alive = NULL;
    s->tl.n_peak_alive = 0;
    /* The categories know the whole timeline's allocations: the slice says which. */
    const size_t *cat = s->global;
    if (s->src->category_alloc) {
        for (size_t i = 0; i < na; i++)
            s->cat_of[i] = s->src->category_alloc[s->global[i]];
        cat = s->cat_of;
    }
    s->out = (msr_chart_source){.snap = s->src->snap, .trace = &s->trace, .tl = &s->tl,
                               .label = s->src->label, .ranges = s->src->ranges,
                               .n_ranges = s->src->n_ranges, .categories = s->src->categories,
                               .category_alloc = cat, .group_rules = s->src->group_rules,
                               .group_of_stack = s->src->group_of_stack,
                               /* The slice starts at the trace's first time (the stand-in
                                * sits there), so the trace's warp needs no shift. */
                               .warp = s->src->warp};
    return 0;
}

/* ------------------------------------------------------------------ windows */

double msr__slice_x(const msr_chart_source *src, size_t e)
{
    return (double)(src->trace->time_us[e] - src->trace->time_us[0]) / 1e6;
}

/* First event whose x is at least (strict: above) `x`; the comparison is the one the
 * chart's column test makes, so a slice holds exactly the events its columns see. */
int64_t msr__slice_first_event(const msr_chart_source *src, double x, bool strict)
{
    size_t lo = 0, hi = src->trace->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        double v = msr__slice_x(src, mid);
        if (strict ? v <= x : v < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int64_t)lo;
}

/* Makes a chart built on a slice look like one built on the whole trace. */
static void unslice(msr_chart *ch, const msr__slicer *sl, int64_t e0)
{
    int64_t shift = e0 > 0 ? 1 : 0;
    for (size_t c = 0; c < ch->n_cols; c++) {
        int64_t e = ch->col_event[c];
        if (e == MSR_CHART_NO_EVENT || (e < 0 && !shift))
            continue;
        ch->col_event[c] = e < 0 ? e : e - shift + e0;
    }
    for (size_t g = 0; g < ch->n_groups; g++)
        if (ch->groups[g].alloc >= 0)
            ch->groups[g].alloc = (int64_t)sl->global[ch->groups[g].alloc];
}

int msr_chart_build_window(msr_chart **out, const msr_chart_source *src, const msr_chart_spec *spec,
                          msr_chart_rect area, ms_error *err)
{
    if (!out)
        return msr__render_fail(err, MS_ERR_ARG, "no output pointer");
    *out = NULL;
    bool run = spec && spec->x_mode == MSR_CHART_X_RUN && src && src->warp;
    if (!spec || !src || !src->trace || !src->tl || (spec->x_mode != MSR_CHART_X_TIME && !run) ||
        !spec->has_from || !spec->has_to || !(spec->to > spec->from) ||
        (src->tl->n_allocs && !src->tl->allocs) || src->tl->n_events != src->trace->n ||
        (src->tl->n_events && (!src->tl->active || !src->tl->reserved)))
        return msr__render_fail(err, MS_ERR_ARG, "a window chart needs a time (or run axis with "
                                                "its warp) window and a timeline with curves "
                                                "and allocations");
    for (size_t h = 0; h < spec->n_highlights; h++)
        if (!spec->highlights || spec->highlights[h].alloc >= src->tl->n_allocs)
            return msr__render_fail(err, MS_ERR_ARG, "highlighted allocation is not in the timeline");
    msr__slicer sl;
    int rc = msr__slicer_init(&sl, src, spec->n_highlights, err);
    /* The run axis's window in seconds: the warp is monotone, so its events are those. */
    double from = run ? msr_chart_warp_t(src->warp, spec->from) : spec->from;
    double to = run ? msr_chart_warp_t(src->warp, spec->to) : spec->to;
    int64_t e0 = msr__slice_first_event(src, from, false);
    int64_t e1 = msr__slice_first_event(src, to, true);
    if (e1 < e0)
        e1 = e0;
    size_t nh = 0;
    if (!rc)
        rc = msr__slicer_cut(&sl, e0, e1, true, spec->highlights, spec->n_highlights, &nh, err);
    if (!rc) {
        msr_chart_spec s = *spec;
        s.highlights = sl.hl;
        s.n_highlights = nh;
        rc = msr_chart_build(out, &sl.out, &s, area, err);
    }
    if (!rc)
        unslice(*out, &sl, e0);
    msr__slicer_free(&sl);
    return rc;
}
