/* Phases of a run: the one pairing of record_function START/END annotations into
 * ranges (every view that reads annotations reads these), and the trace cut into
 * setup, forward, backward, optimizer-step and gap phases (the cut the categories make,
 * inferred from stacks when there are no annotations). */
#include <stdlib.h>
#include <string.h>

#include "cat_internal.h"
#include "compile_internal.h"
#include "addrmap.h"
#include "internal.h"
#include "phases_internal.h"

/* Outer first: by start, then the longer one. */
static int range_cmp(const void *a, const void *b)
{
    const ms_annotation_range *x = a, *y = b;
    if (x->start_us != y->start_us)
        return x->start_us < y->start_us ? -1 : 1;
    if (x->end_us != y->end_us)
        return x->end_us > y->end_us ? -1 : 1;
    return (x->name > y->name) - (x->name < y->name);
}

int ms_annotation_ranges(ms_annotation_range **out, size_t *n_out, const ms_snapshot *s,
                         int device, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    size_t na = 0;
    const ms_annotation *a = s ? ms_snapshot_annotations(s, &na) : NULL;
    if (!a || !na)
        return 0;
    ms_annotation_range *r = NULL;
    size_t n = 0, cap = 0;
    /* The ranges still open, as one stack per name: name -> the innermost one's index in
     * r, and below[i] the one it was opened inside. An END closes the top of its own
     * name's stack, so pairing costs O(1) per annotation however badly the names nest
     * (one stack of all open ranges searched back for the name was quadratic). */
    uint32_t *below = NULL;
    size_t capbelow = 0;
    ms_addrmap top = {NULL, NULL, 0, 0};
    if (!ms__addrmap_init(&top, 64))
        goto nomem;
    for (size_t i = 0; i < na; i++) {
        /* Annotations without a device belong to every device. */
        if (a[i].device != device && a[i].device >= 0)
            continue;
        if (n >= MS_ADDRMAP_NONE - 1)
            goto nomem; /* indices are 32-bit; 4G annotations cannot be read anyway */
        if (a[i].is_start) {
            if (!ms__grow((void **)&r, &cap, n + 1, sizeof *r) ||
                !ms__grow((void **)&below, &capbelow, n + 1, sizeof *below))
                goto nomem;
            r[n] = (ms_annotation_range){a[i].time_us, INT64_MAX, a[i].name, 0, false, true};
            below[n] = ms__addrmap_get(&top, a[i].name);
            if (!ms__addrmap_put(&top, a[i].name, (uint32_t)n))
                goto nomem;
            n++;
            continue;
        }
        /* The innermost open range of the same name; ranges of other names opened inside
         * it stay open (a crossing pair still closes at its own END). */
        size_t j = ms__addrmap_find(&top, a[i].name);
        if (j != SIZE_MAX) {
            uint32_t k = top.vals[j];
            r[k].end_us = a[i].time_us;
            r[k].open_end = false;
            if (below[k] != MS_ADDRMAP_NONE)
                top.vals[j] = below[k];
            else
                ms__addrmap_remove_at(&top, j);
            continue;
        }
        /* Its START was lost from a wrapped buffer: it opens at the earliest time. */
        if (!ms__grow((void **)&r, &cap, n + 1, sizeof *r) ||
            !ms__grow((void **)&below, &capbelow, n + 1, sizeof *below))
            goto nomem;
        below[n] = MS_ADDRMAP_NONE;
        r[n++] = (ms_annotation_range){INT64_MIN, a[i].time_us, a[i].name, 0, true, false};
    }
    free(below);
    below = NULL;
    ms__addrmap_free(&top);
    if (n > 1)
        qsort(r, n, sizeof *r, range_cmp);
    /* Depth: how many ranges contain it (a stack of the ends of the enclosing ones). */
    int64_t *ends = malloc((n ? n : 1) * sizeof *ends);
    if (!ends)
        goto nomem;
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        while (ne && ends[ne - 1] <= r[i].start_us)
            ne--;
        r[i].depth = ne > (size_t)INT32_MAX ? INT32_MAX : (int)ne;
        ends[ne++] = r[i].end_us;
    }
    free(ends);
    *out = r;
    *n_out = n;
    return 0;
nomem:
    free(below);
    ms__addrmap_free(&top);
    free(r);
    return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for annotations");
}

const char *ms_phase_kind_name(ms_phase_kind k)
{
    if (k == MS_PHASE_COMPILE)
        return "compile";
    return (unsigned)k < MS_PHASE_KIND_COUNT ? ms__cat_phase_name((uint8_t)k) : "unknown";
}

int ms__phases_from_ctx(ms_phases **out, const ms__cat_ctx *x, int device, ms_error *err)
{
    /* The compile windows lie over the categories' cut: each phase is cut around them,
     * and each window is a phase of its own. */
    ms__compile_windows cw;
    int rc = ms__compile_windows_find(&cw, x->s, x->tr, x->it, err);
    if (rc)
        return rc;
    size_t cap = x->nsegs + 2 * cw.n;
    ms_phases *p = calloc(1, sizeof *p);
    if (!p || !(p->items = calloc(cap ? cap : 1, sizeof *p->items))) {
        free(p);
        ms__compile_windows_free(&cw);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for phases");
    }
    p->device = device;
    size_t n = 0, w = 0;
    int64_t done = 0; /* events placed so far: a window may swallow whole segments */
    for (size_t k = 0; k < x->nsegs; k++) {
        const ms__cat_seg *g = &x->segs[k];
        int64_t at = g->start > done ? g->start : done;
        while (at < g->end) {
            while (w < cw.n && cw.items[w].end_event <= at)
                w++;
            if (w < cw.n && cw.items[w].start_event <= at) {
                /* Inside a window: one compile phase for all of it. */
                const ms__compile_window *cwin = &cw.items[w];
                if (!n || p->items[n - 1].kind != MS_PHASE_COMPILE ||
                    p->items[n - 1].end_event != at)
                    p->items[n++] = (ms_phase){MS_PHASE_COMPILE, at, cwin->end_event,
                                               cwin->end_event, (uint32_t)w,
                                               MS_PHASE_FROM_COMPILE};
                at = done = cwin->end_event;
                continue;
            }
            int64_t to = w < cw.n && cw.items[w].start_event < g->end ? cw.items[w].start_event
                                                                       : g->end;
            int64_t close = g->close < to ? g->close : to;
            if (g->close >= g->end)
                close = to;
            p->items[n++] = (ms_phase){(ms_phase_kind)g->kind, at, to, close, g->ordinal, g->src};
            at = done = to;
        }
    }
    p->n = n;
    for (size_t k = 0; k < MS__PH_COUNT; k++)
        p->counts[k] = x->counts[k];
    p->counts[MS_PHASE_COMPILE] = cw.n;
    p->sources = x->src_all | (cw.n ? MS_PHASE_FROM_COMPILE : 0);
    p->any = x->have_phases;
    ms__compile_windows_free(&cw);
    *out = p;
    return 0;
}

int ms_phases_find(ms_phases **out, const ms_snapshot *s, const ms_timeline *t,
                   const ms_iterations *it, ms_error *err)
{
    ms_error_clear(err);
    if (!out)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no output pointer");
    *out = NULL;
    if (!s || !t || t->device < 0 || t->device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "phases need a snapshot and timeline");
    ms_iterations *own = NULL;
    if (!it) {
        int rc = ms_iterations_find(&own, s, t->device, t, NULL, err);
        if (rc)
            return rc;
        it = own;
    }
    ms__cat_ctx x;
    int rc = ms__cat_ctx_build(&x, s, t, it, err);
    if (!rc) {
        rc = ms__phases_from_ctx(out, &x, t->device, err);
        ms__cat_ctx_free(&x);
    }
    ms_iterations_free(own);
    return rc;
}

void ms_phases_free(ms_phases *p)
{
    if (!p)
        return;
    free(p->items);
    free(p);
}

size_t ms_phases_at_event(const ms_phases *p, int64_t event)
{
    if (!p || !p->n || event < 0)
        return SIZE_MAX;
    size_t lo = 0, hi = p->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->items[mid].start_event <= event)
            lo = mid;
        else
            hi = mid;
    }
    return event < p->items[lo].end_event ? lo : SIZE_MAX;
}
