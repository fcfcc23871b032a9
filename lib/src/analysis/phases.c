/* Phases of a run: the trace cut into setup, forward, backward, optimizer-step and gap
 * phases (phase_cut.c, inferred from stacks where there are no annotations) with the
 * compile windows laid over it, as the public phase list. */
#include <stdlib.h>
#include <string.h>

#include "phase_cut.h"
#include "compile_internal.h"
#include "internal.h"
#include "iter_internal.h"
#include "phases_internal.h"

/* The public kinds are the categories' internal segment kinds, in their order, then
 * the compile window: one cast turns one into the other. */
_Static_assert((int)MS_PHASE_SETUP == MS__PH_SETUP && (int)MS_PHASE_GAP == MS__PH_GAP &&
                   (int)MS_PHASE_FORWARD == MS__PH_FWD && (int)MS_PHASE_BACKWARD == MS__PH_BWD &&
                   (int)MS_PHASE_OPTIMIZER == MS__PH_OPT && (int)MS_PHASE_COMPILE == MS__PH_COUNT,
               "ms_phase_kind and the categories' segment kinds disagree");

const char *ms_phase_kind_name(ms_phase_kind k)
{
    static const char *const keys[MS_PHASE_KIND_COUNT] = {"setup",    "gap",       "forward",
                                                          "backward", "optimizer", "compile"};
    return (unsigned)k < MS_PHASE_KIND_COUNT ? keys[k] : "unknown";
}

const char *ms_phase_kind_text(ms_phase_kind k)
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
    int rc = ms__compile_windows_find(&cw, x->s, x->tr, x->it, &x->ann, err);
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
    ms__lent l;
    int rc = ms__lent_take(&l, s, t, it, NULL, err);
    if (!rc)
        rc = ms__phases_find_with(out, s, t, l.it, &l.ann, err);
    ms__lent_free(&l);
    return rc;
}

int ms__phases_find_with(ms_phases **out, const ms_snapshot *s, const ms_timeline *t,
                         const ms_iterations *it, const ms__ann *ann, ms_error *err)
{
    ms__cat_ctx x;
    int rc = ms__cat_ctx_build(&x, s, t, it, ann, err);
    if (!rc) {
        rc = ms__phases_from_ctx(out, &x, t->device, err);
        ms__cat_ctx_free(&x);
    }
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
    size_t lo = MS__LAST_AT_OR_BELOW(p->items, p->n, start_event, event);
    return event < p->items[lo].end_event ? lo : SIZE_MAX;
}
