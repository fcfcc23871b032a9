/* Where the memory goes: a category for every allocation, from the phase it was made in
 * (forward, backward, optimizer step, or between them: the trace cut of phase_cut.c) and
 * whether it outlived it. The second look that needs every allocation's category
 * (reused gradients, late parameters, the backward's workspace) is in
 * categories_refine.c. */
#include <stdlib.h>
#include <string.h>

#include "cat_internal.h"
#include "internal.h"
#include "memsnap/phases.h"
#include "phases_internal.h"

static const char *const CAT_NAMES[MS_CAT_COUNT] = {
    "parameter", "gradient", "optimizer_state", "activation",
    "temporary", "workspace", "input",          "other"};

const char *ms_category_name(ms_category c)
{
    return (unsigned)c < MS_CAT_COUNT ? CAT_NAMES[c] : "unknown";
}

MS__KEY_TEXT_LOOKUPS(MS_CAT_REASON_LIST, ms_category_reason, MS_CATR_COUNT, ms_category_reason_name,
                     ms_category_reason_text)

bool ms_category_reason_weak(ms_category_reason r)
{
    return r == MS_CATR_WORKSPACE_PATTERN || r == MS_CATR_PRETRACE_KEPT ||
           r == MS_CATR_SETUP_ALIVE || r == MS_CATR_NO_PHASES || r == MS_CATR_BACKWARD_REUSED ||
           r == MS_CATR_LATE_PARAMETER || r == MS_CATR_NO_STACKS ||
           r == MS_CATR_MIRRORED_PARAMETER;
}

const char *ms_formula_form_name(ms_formula_form f)
{
    return f == MS_FORM_TRAINING ? "training" : f == MS_FORM_INFERENCE ? "inference" : "unknown";
}

static bool alive_at(const ms_alloc *a, int64_t boundary)
{
    /* Alive when the events before `boundary` have happened. */
    return a->free_event < 0 || a->free_event >= boundary;
}

static ms_category classify(const ms__cat_ctx *x, const ms_alloc *a, uint8_t *why,
                            uint8_t *origin, size_t *seg, size_t *hint)
{
    uint8_t sf = a->stack != MS_NO_STACK && a->stack < ms_snapshot_stack_count(x->s)
                     ? x->stack_flags[a->stack]
                     : 0;
    *origin = MS__PH_GAP;
    if (sf & CS_WS) {
        *why = MS_CATR_WORKSPACE_FRAMES;
        return MS_CAT_WORKSPACE;
    }
    if (a->alloc_event < 0) {
        if (x->have_phases && alive_at(a, x->last_phase_start + 1)) {
            *why = MS_CATR_PRETRACE_KEPT;
            return MS_CAT_PARAMETER;
        }
        *why = MS_CATR_PRETRACE;
        return MS_CAT_OTHER;
    }
    if (!x->have_phases) {
        *why = MS_CATR_NO_PHASES;
        return MS_CAT_OTHER;
    }
    size_t k = ms__cat_seg_near(x, a->alloc_event, hint);
    const ms__cat_seg *g = &x->segs[k];
    const ms__cat_seg *next = k + 1 < x->nsegs ? &x->segs[k + 1] : NULL;
    *origin = g->kind;
    *seg = k;
    /* Without stacks only annotations cut the trace; with none for forward or backward,
     * a setup that runs into the iterations and the gaps between optimizer steps hold
     * the forward and backward passes, and "made before the first step and alive" or
     * "made and freed between steps" would name activations and gradients parameters
     * and temporaries. Say that it cannot be told instead. */
    if (x->no_stacks && !x->counts[MS__PH_FWD] && !x->counts[MS__PH_BWD] &&
        (g->kind == MS__PH_GAP ||
         (g->kind == MS__PH_SETUP && x->loop_start >= 0 && a->alloc_event >= x->loop_start))) {
        *why = MS_CATR_NO_STACKS;
        return MS_CAT_OTHER;
    }
    /* What a forward, backward or optimizer step frees before it closes was its own. */
    if ((g->kind == MS__PH_FWD || g->kind == MS__PH_BWD || g->kind == MS__PH_OPT) &&
        !alive_at(a, g->close)) {
        *why = MS_CATR_PHASE_FREED;
        return MS_CAT_TEMPORARY;
    }
    switch (g->kind) {
    case MS__PH_SETUP:
        /* The batch for the first forward: made in its iteration, or (a sample input
         * for a lazy module's first forward) freed before the first optimizer step,
         * when every parameter is alive. */
        if (next && next->kind == MS__PH_FWD && !(sf & CS_MODULE) && alive_at(a, g->end) &&
            ((x->iter_start >= 0 && a->alloc_event >= x->iter_start) ||
             (x->first_step != SIZE_MAX && a->free_event >= 0 &&
              a->free_event < x->segs[x->first_step].start))) {
            *why = MS_CATR_INPUT;
            return MS_CAT_INPUT;
        }
        if (!alive_at(a, g->end)) {
            *why = MS_CATR_SETUP_FREED;
            return MS_CAT_TEMPORARY;
        }
        *why = (sf & CS_MODULE) ? MS_CATR_SETUP_MODULE : MS_CATR_SETUP_ALIVE;
        return MS_CAT_PARAMETER;
    case MS__PH_FWD:
        /* Without C++ frames a library workspace looks like an activation of the first
         * forward that is never freed, while every later forward frees its own. */
        if (!x->cpp_stacks && g->ordinal == 0 && x->counts[MS__PH_FWD] >= 2 &&
            a->free_event < 0) {
            *why = MS_CATR_WORKSPACE_PATTERN;
            return MS_CAT_WORKSPACE;
        }
        *why = MS_CATR_FORWARD_KEPT;
        return MS_CAT_ACTIVATION;
    case MS__PH_BWD:
        *why = MS_CATR_BACKWARD_KEPT;
        return MS_CAT_GRADIENT;
    case MS__PH_OPT:
        *why = MS_CATR_OPTIMIZER_KEPT;
        return MS_CAT_OPTIMIZER_STATE;
    default: /* a gap between phases */
        /* The batch for the next forward, when made in that forward's iteration (with
         * none found, any allocation of the gap alive when it begins); what the gap
         * makes for the iteration before (outputs post-processed, cached) is not. */
        if (next && next->kind == MS__PH_FWD && alive_at(a, next->start) &&
            (!x->it || !x->it->n ||
             ms__cat_iter_of(x, a->alloc_event) == ms__cat_iter_of(x, next->start))) {
            *why = MS_CATR_INPUT;
            return MS_CAT_INPUT;
        }
        if (!alive_at(a, next ? next->close : g->end)) {
            *why = MS_CATR_GAP_FREED;
            return MS_CAT_TEMPORARY;
        }
        *why = MS_CATR_GAP_KEPT;
        return MS_CAT_OTHER;
    }
}

/* The flags that make an allocation a candidate for a refinement, from what the
 * classification had at hand; the refinements then look only at these. */
ms_category ms__cat_classify_near(const ms__cat_ctx *x, const ms_alloc *a, uint8_t *why,
                                  uint8_t *origin, size_t *hint)
{
    size_t k = SIZE_MAX;
    ms_category c = classify(x, a, why, origin, &k, hint);
    if (k == SIZE_MAX)
        return c;
    if (*why == MS_CATR_FORWARD_KEPT && a->free_event >= 0) {
        /* Alive after the backward its forward saved it for, and freed before the next
         * forward began (where zero_grad frees gradients, and before outputs kept for
         * an iteration are replaced). */
        size_t j = x->bwd_after[k];
        if (j != SIZE_MAX && a->free_event >= x->segs[j].close) {
            size_t f = j + 1;
            while (f < x->nsegs && x->segs[f].kind != MS__PH_FWD)
                f++;
            if (f == x->nsegs || a->free_event < x->segs[f].start)
                *origin |= MS__CAT_REUSE_CAND;
        }
    }
    /* Two backwards after it at least: what the last iteration before the snapshot made
     * and held (a loss kept when it was taken) is "never freed" by the trace's end. */
    if (a->free_event < 0 && a->size > 0 && x->counts[MS__PH_BWD] >= 2 && x->iter_start >= 0 &&
        a->alloc_event >= x->iter_start && a->alloc_event < x->segs[x->prev_bwd].start &&
        (c == MS_CAT_ACTIVATION || c == MS_CAT_INPUT || c == MS_CAT_OTHER ||
         *why == MS_CATR_WORKSPACE_PATTERN) &&
        *why != MS_CATR_NO_STACKS && *why != MS_CATR_NO_PHASES)
        *origin |= MS__CAT_LATE_CAND;
    return c;
}

/* The categories of some allocations (`allocs`, lives of the device's trace) when their
 * refinement needs every allocation's: the whole device classified, each of `allocs`
 * found by the event that made it. Made before the trace, an allocation is refined by
 * nothing and keeps the category it has. */
static int classify_from_all(const ms__cat_ctx *x, const ms_snapshot *s, int device,
                             const ms_alloc *allocs, size_t n, uint8_t *cat, ms_error *err)
{
    ms_timeline *full = NULL;
    int rc = ms_timeline_build(&full, s, device, MS_TIMELINE_ALLOCS, err);
    if (rc)
        return rc;
    size_t m = full->n_allocs, nev = full->n_events, bytes;
    uint8_t *fc = malloc(m ? m : 1), *fw = malloc(m ? m : 1), *fo = malloc(m ? m : 1);
    uint32_t *at = ms__mul(nev ? nev : 1, sizeof *at, &bytes) ? malloc(bytes) : NULL;
    if (!fc || !fw || !fo || !at) {
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for categories");
    } else {
        memset(at, 0xff, nev * sizeof *at);
        size_t hint = SIZE_MAX;
        for (size_t i = 0; i < m; i++) {
            fc[i] = (uint8_t)ms__cat_classify_near(x, &full->allocs[i], &fw[i], &fo[i], &hint);
            int64_t e = full->allocs[i].alloc_event;
            if (e >= 0 && (uint64_t)e < nev && i < UINT32_MAX)
                at[e] = (uint32_t)i;
        }
        if (ms__cat_refine(x, full->allocs, m, fc, fw, fo))
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for categories");
        for (size_t i = 0; i < n && !rc; i++) {
            int64_t e = allocs[i].alloc_event;
            if (e < 0 || (uint64_t)e >= nev || at[e] == UINT32_MAX)
                continue;
            cat[i] = fc[at[e]];
        }
    }
    free(fc);
    free(fw);
    free(fo);
    free(at);
    ms_timeline_free(full);
    return rc;
}

int ms_categories_sum(int64_t bytes[MS_CAT_COUNT], const ms_snapshot *s, const ms_timeline *t,
                      const ms_iterations *it, const ms_alloc *allocs, size_t n, ms_error *err)
{
    return ms_categories_sum_phases(bytes, NULL, s, t, it, allocs, n, err);
}

int ms_categories_sum_phases(int64_t bytes[MS_CAT_COUNT], ms_phases **phases,
                             const ms_snapshot *s, const ms_timeline *t, const ms_iterations *it,
                             const ms_alloc *allocs, size_t n, ms_error *err)
{
    if (phases)
        *phases = NULL;
    ms_error_clear(err);
    for (int c = 0; c < MS_CAT_COUNT; c++)
        bytes[c] = 0;
    if (!s || !t || t->device < 0 || t->device >= ms_snapshot_device_count(s) ||
        (n && !allocs))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "categories need a snapshot and timeline");
    ms__lent l;
    int rc = ms__lent_take(&l, s, t, it, NULL, err);
    if (!rc)
        rc = ms__categories_sum_with(bytes, phases, s, t, l.it, &l.ann, allocs, n, err);
    ms__lent_free(&l);
    return rc;
}

int ms__categories_sum_with(int64_t bytes[MS_CAT_COUNT], ms_phases **phases,
                            const ms_snapshot *s, const ms_timeline *t, const ms_iterations *it,
                            const ms__ann *ann, const ms_alloc *allocs, size_t n, ms_error *err)
{
    if (phases)
        *phases = NULL;
    for (int c = 0; c < MS_CAT_COUNT; c++)
        bytes[c] = 0;
    ms__cat_ctx x;
    int rc = ms__cat_ctx_build(&x, s, t, it, ann, err);
    uint8_t *cat = NULL, *why = NULL, *origin = NULL;
    if (!rc) {
        cat = calloc(n ? n : 1, 1);
        why = calloc(n ? n : 1, 1);
        origin = calloc(n ? n : 1, 1);
        if (!cat || !why || !origin)
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for categories");
    }
    if (!rc) {
        size_t hint = SIZE_MAX;
        for (size_t i = 0; i < n; i++)
            cat[i] = (uint8_t)ms__cat_classify_near(&x, &allocs[i], &why[i], &origin[i], &hint);
        bool all = false, oom = false;
        size_t np = 0;
        uint64_t *psz = ms__cat_param_sizes(allocs, n, cat, &np, &oom);
        for (size_t i = 0; i < n && !all; i++)
            all = ms__cat_refine_needs_all(&allocs[i], why[i], origin[i], psz, np);
        if (!all && !oom && x.have_phases && x.counts[MS__PH_BWD]) {
            int lp = ms__cat_late_possible(&x, allocs, n, origin, psz, np);
            oom = lp < 0;
            all = lp > 0;
        }
        if (!all && !oom && x.have_phases && x.counts[MS__PH_OPT]) {
            int mp = ms__cat_mirror_possible(&x, allocs, n, cat, why);
            oom = mp < 0;
            all = mp > 0;
        }
        free(psz);
        if (oom)
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for categories");
        else if (all)
            rc = classify_from_all(&x, s, t->device, allocs, n, cat, err);
        else if (ms__cat_refine(&x, allocs, n, cat, why, origin))
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for categories");
        for (size_t i = 0; i < n && !rc; i++)
            bytes[cat[i]] += (int64_t)allocs[i].size;
    }
    if (!rc && phases) {
        ms_error perr; /* no phases leaves the sum standing */
        if (ms__phases_from_ctx(phases, &x, t->device, &perr))
            *phases = NULL;
    }
    free(cat);
    free(why);
    free(origin);
    if (x.segs || x.stack_flags)
        ms__cat_ctx_free(&x);
    return rc;
}
