/* Iteration boundaries of a training or inference loop, from the most trustworthy
 * evidence available: named annotations, then the optimizer step seen in the stacks, then
 * repeated top-level forward calls, then live memory returning to a baseline.
 *
 * This file makes candidates from boundaries (aligning the first and last iteration with
 * their neighbours) and chooses among the methods; each kind of evidence has a file of its
 * own (iter_annotations.c, iter_stacks.c, iter_baseline.c; see iter_cand.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "timeline_internal.h"
#include "phase_cut.h"
#include "iter_cand.h"

MS__KEY_TEXT_LOOKUPS(MS_ITER_METHOD_LIST, ms_iter_method, MS_ITER_METHOD_COUNT, ms_iter_method_name,
                     ms_iter_method_text)

void ms_iterations_free(ms_iterations *it)
{
    if (it)
        MS__FREE_ALL(it->items, it);
}

/* ------------------------------------------------------------------ candidates */

static void cand_free(cand *c)
{
    free(c->it);
    memset(c, 0, sizeof *c);
}

bool ms__iter_cand_push(cand *c, int64_t start, int64_t end, int64_t start_us, int64_t end_us)
{
    if (!ms__grow((void **)&c->it, &c->cap, c->n + 1, sizeof *c->it))
        return false;
    c->it[c->n++] = (span){start, end, start_us, end_us};
    return true;
}

static int64_t back_over_segments(const ms_trace *tr, int64_t e)
{
    while (e > 0 && e <= (int64_t)tr->n && seg_acquire(tr->action[e - 1]))
        e--;
    return e;
}

/* Where the iteration ending at `end` began, given the next one [end, next_end): the
 * first event of the next iteration recurs as often in this one, so walk back that many
 * occurrences. Sets *partial when the trace runs out first (a wrapped ring buffer). */
int64_t ms__iter_align_start(const ms_snapshot *s, const ms_trace *tr, int64_t end,
                             int64_t next_end, bool *partial)
{
    *partial = false;
    if (end <= 0)
        return 0;
    if (next_end <= end) {
        *partial = true;
        return 0;
    }
    evkey k = key_of(s, tr, end);
    uint64_t need = 0;
    for (int64_t i = end; i < next_end; i++)
        if (key_eq(key_of(s, tr, i), k))
            need++;
    for (int64_t i = end - 1; i >= 0; i--)
        if (key_eq(key_of(s, tr, i), k) && --need == 0)
            return back_over_segments(tr, i);
    *partial = true;
    return 0;
}

/* Where the last iteration [start, ...) ends, given the previous one [pstart, pend): its
 * last event recurs as often. Returns the trace end when the pattern does not complete. */
static int64_t align_end(const ms_snapshot *s, const ms_trace *tr, int64_t pstart, int64_t pend,
                         int64_t start)
{
    int64_t n = (int64_t)tr->n;
    if (pend <= pstart || start >= n)
        return n;
    evkey k = key_of(s, tr, pend - 1);
    uint64_t need = 0;
    for (int64_t i = pstart; i < pend; i++)
        if (key_eq(key_of(s, tr, i), k))
            need++;
    for (int64_t i = start; i < n; i++)
        if (key_eq(key_of(s, tr, i), k) && --need == 0)
            return i + 1;
    return n;
}

/* Iterations from a list of iteration ends (event indices, ascending, each > 0): each
 * iteration runs from the previous end; the first start is found by alignment. */
bool ms__iter_cand_from_ends(cand *c, const ms_snapshot *s, const ms_trace *tr,
                             const int64_t *ends, const int64_t *ends_us, size_t n)
{
    if (n == 0)
        return true;
    bool partial = false;
    int64_t first = n >= 2 ? ms__iter_align_start(s, tr, ends[0], ends[1], &partial) : 0;
    /* Only a wrapped trace can have lost the beginning of its first iteration. */
    c->first_partial = partial && !c->complete;
    for (size_t k = 0; k < n; k++) {
        int64_t st = k ? ends[k - 1] : first;
        int64_t st_us = k && ends_us ? ends_us[k - 1] : INT64_MIN;
        if (!ms__iter_cand_push(c, st, ends[k], st_us, ends_us ? ends_us[k] : INT64_MIN))
            return false;
    }
    return true;
}

/* Cuts found from memory alone can land early where the first iteration differs from
 * the rest (optimizer state created in step 1 keeps memory from returning to the old
 * floor). Steady-state iterations all begin with the same event (the batch being made),
 * so take the first event of the last iteration as the template and move every other
 * cut to the nearest such event inside its window [lo[k], hi[k]). */
void ms__iter_refine_cuts(const ms_snapshot *s, const ms_trace *tr, int64_t *cuts, size_t m,
                          const int64_t *lo, const int64_t *hi)
{
    if (m < 2 || cuts[m - 1] >= (int64_t)tr->n)
        return;
    evkey k = key_of(s, tr, cuts[m - 1]);
    for (size_t i = 0; i + 1 < m; i++) {
        if (cuts[i] < (int64_t)tr->n && key_eq(key_of(s, tr, cuts[i]), k))
            continue;
        int64_t best = -1;
        for (int64_t e = lo[i]; e < hi[i] && e < (int64_t)tr->n; e++)
            if (key_eq(key_of(s, tr, e), k) &&
                (best < 0 || llabs(e - cuts[i]) < llabs(best - cuts[i])))
                best = e;
        if (best >= 0)
            cuts[i] = back_over_segments(tr, best);
    }
}

/* Iterations from cut points (the first event of iterations 2..n): first start and last
 * end by alignment with the neighbouring iteration. */
bool ms__iter_cand_from_cuts(cand *c, const ms_snapshot *s, const ms_trace *tr,
                             const int64_t *cuts, size_t m)
{
    if (m == 0)
        return true;
    bool partial = false;
    int64_t first = m >= 2 ? ms__iter_align_start(s, tr, cuts[0], cuts[1], &partial) : 0;
    int64_t last_end = m >= 2 ? align_end(s, tr, cuts[m - 2], cuts[m - 1], cuts[m - 1])
                              : align_end(s, tr, first, cuts[0], cuts[0]);
    c->first_partial = partial && !c->complete;
    for (size_t k = 0; k <= m; k++) {
        int64_t st = k ? cuts[k - 1] : first;
        int64_t en = k < m ? cuts[k] : last_end;
        if (en <= st)
            continue;
        if (!ms__iter_cand_push(c, st, en, INT64_MIN, INT64_MIN))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ assembly */

/* Micro-batches: when the user says N and a method found k*N, fold k into one. */
static bool fold(cand *c, uint32_t expected)
{
    if (!expected || c->n <= expected || c->n % expected)
        return false;
    size_t k = c->n / expected;
    for (size_t i = 0; i < expected; i++) {
        span first = c->it[i * k], last = c->it[i * k + k - 1];
        c->it[i] = (span){first.start, last.end, first.start_us, last.end_us};
    }
    c->n = expected;
    return true;
}

/* Per-iteration peak and end from a replay, for timelines built without curves. The
 * iterations are in event order and do not overlap, so one cursor follows the events. */
typedef struct iter_stats_ctx {
    ms_iterations *it;
    size_t k;
    int64_t prev; /* active bytes before the current event */
} iter_stats_ctx;

static void iter_stats_event(void *ctx, size_t i, int64_t active)
{
    iter_stats_ctx *c = ctx;
    int64_t before = c->prev;
    c->prev = active;
    while (c->k < c->it->n && (int64_t)i >= c->it->items[c->k].end_event)
        c->k++;
    if (c->k == c->it->n)
        return;
    ms_iteration *x = &c->it->items[c->k];
    if ((int64_t)i < x->start_event)
        return;
    if ((int64_t)i == x->start_event && before > x->peak_bytes)
        x->peak_bytes = before; /* the state it starts from counts, as with the curve */
    if (active > x->peak_bytes)
        x->peak_bytes = active;
    if ((int64_t)i == x->end_event - 1)
        x->live_end_bytes = active;
}

/* Peak and end from the stored curve (without one, the replay in finish fills them). */
static void fill_stats(ms_iteration *x, const ms_timeline *t)
{
    if (!t->active)
        return;
    int64_t st = x->start_event, en = x->end_event;
    int64_t peak = st > 0 ? t->active[st - 1] : t->active_start;
    for (int64_t i = st; i < en; i++)
        if (t->active[i] > peak)
            peak = t->active[i];
    x->peak_bytes = peak;
    x->live_end_bytes = t->active[en - 1];
}

static int finish(ms_iterations **out, const ms_snapshot *s, const ms_trace *tr,
                  const ms_timeline *t, cand *c, ms_error *err)
{
    ms_iterations *it = calloc(1, sizeof *it);
    if (!it)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    it->device = tr->device;
    it->has_times = tr->has_times;
    it->method = c->n ? c->method : MS_ITER_NONE;
    memcpy(it->detail, c->detail, sizeof it->detail);
    if (c->n) {
        it->items = calloc(c->n + 1, sizeof *it->items); /* + the unfinished one */
        if (!it->items) {
            free(it);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
        }
    }
    for (size_t k = 0; k < c->n; k++) {
        ms_iteration *x = &it->items[it->n];
        int64_t st = c->it[k].start, en = c->it[k].end;
        if (st < 0)
            st = 0;
        if (en > (int64_t)tr->n)
            en = (int64_t)tr->n;
        if (en <= st)
            continue;
        x->start_event = st;
        x->end_event = en;
        x->start_us = c->it[k].start_us != INT64_MIN ? c->it[k].start_us : tr->time_us[st];
        x->end_us = c->it[k].end_us != INT64_MIN ? c->it[k].end_us : tr->time_us[en - 1];
        x->partial = it->n == 0 && c->first_partial;
        fill_stats(x, t);
        it->n++;
    }
    /* The iteration that never finished: a trace that ends in an out-of-memory error
     * after the last complete iteration ended failed inside the next one. It follows
     * items[n], marked, so every view counts the failing iteration the same way. */
    /* A last iteration that holds an out-of-memory error and runs to the end of the
     * trace is that failing iteration itself: the step the error cut short (its
     * forward calls began, its end is the dump), so it is no complete iteration. */
    if (it->n && it->items[it->n - 1].end_event == (int64_t)tr->n) {
        const ms_iteration *l = &it->items[it->n - 1];
        bool oom = false;
        for (int64_t i = l->start_event; i < l->end_event && !oom; i++)
            oom = tr->action[i] == MS_ACT_OOM;
        if (oom && it->n > 1) {
            it->n--;
            it->items[it->n].unfinished = true;
            it->n_unfinished = 1;
        }
    }
    if (it->n && !it->n_unfinished) {
        int64_t st = it->items[it->n - 1].end_event;
        bool oom = false;
        for (int64_t i = st; i < (int64_t)tr->n && !oom; i++)
            oom = tr->action[i] == MS_ACT_OOM;
        if (oom) {
            ms_iteration *x = &it->items[it->n];
            x->start_event = st;
            x->end_event = (int64_t)tr->n;
            x->start_us = tr->time_us[st];
            x->end_us = tr->time_us[tr->n - 1];
            x->unfinished = true;
            fill_stats(x, t);
            it->n_unfinished = 1;
        }
    }
    if (!t->active && it->n) {
        /* No stored curve: one replay fills every iteration's peak and end. */
        it->n += it->n_unfinished;
        iter_stats_ctx sc = {it, 0, t->active_start};
        for (size_t k = 0; k < it->n; k++)
            it->items[k].peak_bytes = INT64_MIN;
        int rc = ms__timeline_replay(s, t, NULL, NULL, iter_stats_event, &sc, err);
        it->n -= it->n_unfinished;
        if (rc) {
            ms_iterations_free(it);
            return rc;
        }
    }
    if (!it->n)
        it->method = MS_ITER_NONE;
    *out = it;
    return 0;
}

/* No method found a loop, yet the phases hold a forward and then a backward: one step,
 * one iteration, from the first forward to the end of the last backward or optimizer
 * phase after it (the phases' own rule, categories.c, found without iterations), or to
 * the trace's end when only frees follow. */
static int one_step(cand *c, const ms_snapshot *s, const ms_timeline *t, const ms__ann *ann,
                    ms_error *err)
{
    ms__cat_ctx x;
    int rc = ms__cat_ctx_build(&x, s, t, NULL, ann, err);
    if (rc)
        return rc;
    int64_t start = -1, end = -1;
    for (size_t k = 0; k < x.nsegs; k++) {
        const ms__cat_seg *g = &x.segs[k];
        if (g->kind == MS__PH_FWD && start < 0)
            start = g->start;
        else if (start >= 0 && (g->kind == MS__PH_BWD || (g->kind == MS__PH_OPT && end >= 0)))
            end = g->close;
    }
    ms__cat_ctx_free(&x);
    /* Frees after the last phase (the loss released by `del`, the step's cleanup) close
     * the step when nothing is allocated after them. */
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    bool allocs = false;
    for (int64_t i = end > 0 ? end : 0; i < (int64_t)tr->n && !allocs; i++)
        allocs = tr->action[i] == MS_ACT_ALLOC;
    if (end > start && !allocs)
        end = (int64_t)tr->n;
    c->method = MS_ITER_ONE_STEP;
    if (start >= 0 && end > start && !ms__iter_cand_push(c, start, end, INT64_MIN, INT64_MIN))
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    return 0;
}

int ms__iterations_find(ms_iterations **out, const ms_snapshot *s, const ms_timeline *t,
                        const ms__stackinfo *si, const ms__ann *ann, const ms_iter_options *opt,
                        ms_error *err)
{
    *out = NULL;
    if (!t)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "iterations need the device's timeline");
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    const char *step = opt && opt->step_name && *opt->step_name ? opt->step_name : NULL;
    uint32_t expected = opt ? opt->expected : 0;

    /* The methods in order of trust; the first that finds iterations wins, except that a
     * count stated by the user prefers the first method that agrees with it. */
    enum { NM = 6 };
    cand cs[NM];
    memset(cs, 0, sizeof cs);
    /* The live curve costs 8 bytes per event; only the methods that read it build it. */
    curve cv;
    memset(&cv, 0, sizeof cv);
    int rc = 0;
#define NEED_CURVE() (cv.v || (rc = ms__iter_program_curve(&cv, tr, err)) == 0)
    size_t chosen = NM;
    for (size_t m = 0; m < NM && !rc; m++) {
        cand *c = &cs[m];
        c->complete = t->trace_complete;
        if (m <= 2 && opt && opt->trace_only)
            continue;
        switch (m) {
        case 0:
            c->method = MS_ITER_ANNOTATION_STEP;
            if (step) {
                rc = ms__iter_cand_ranges(c, s, tr, ann, ANN_NAMED, step, err);
                snprintf(c->detail, sizeof c->detail, "'%s'", step);
                if (!rc && c->n && NEED_CURVE())
                    rc = ms__iter_ranges_as_markers(c, s, tr, &cv, err);
            }
            break;
        case 1:
            c->method = MS_ITER_ANNOTATION_PROFILER;
            rc = ms__iter_cand_ranges(c, s, tr, ann, ANN_PROFILER, NULL, err);
            if (!rc && c->n && NEED_CURVE())
                rc = ms__iter_ranges_as_markers(c, s, tr, &cv, err);
            break;
        case 2:
            c->method = MS_ITER_ANNOTATION_OPTIMIZER;
            rc = ms__iter_cand_optimizer_annotations(c, s, tr, ann, err);
            if (!rc)
                ms__iter_settle_after_step(c, s, tr, si);
            break;
        case 3:
            c->method = MS_ITER_OPTIMIZER_FRAMES;
            rc = ms__iter_cand_optimizer_frames(c, s, tr, si, err);
            if (!rc)
                ms__iter_settle_after_step(c, s, tr, si);
            break;
        case 4:
            c->method = MS_ITER_FORWARD_CALLS;
            if (NEED_CURVE())
                rc = ms__iter_cand_forward_calls(c, s, tr, &cv, si, err);
            if (c->n < 2)
                c->n = 0; /* one call is not a loop */
            break;
        case 5:
            c->method = MS_ITER_BASELINE;
            if (NEED_CURVE())
                rc = ms__iter_cand_baseline(c, s, tr, &cv, si, ann, expected, err);
            break;
        }
        if (rc)
            break;
        if (step && m == 0 && c->n) {
            chosen = 0; /* the user named the marker: trust it over any count */
            break;
        }
        if (expected && (c->n == expected || fold(c, expected))) {
            chosen = m;
            break;
        }
        if (!expected && c->n && chosen == NM) {
            chosen = m;
            break;
        }
    }
    if (!rc && chosen == NM) {
        /* A stated count no method matched: fall back to the most trusted finding. */
        for (size_t m = 0; m < NM; m++)
            if (cs[m].n) {
                chosen = m;
                break;
            }
    }
    cand once;
    memset(&once, 0, sizeof once);
    if (!rc && chosen == NM) {
        rc = one_step(&once, s, t, ann, err);
        if (!rc && once.n) {
            once.complete = t->trace_complete;
            rc = finish(out, s, tr, t, &once, err);
            cand_free(&once);
            for (size_t m = 0; m < NM; m++)
                cand_free(&cs[m]);
            free(cv.v);
            return rc;
        }
        cand_free(&once);
    }
    if (!rc) {
        cand none;
        memset(&none, 0, sizeof none);
        rc = finish(out, s, tr, t, chosen < NM ? &cs[chosen] : &none, err);
        if (!rc && step && !cs[0].n) {
            /* Say that the named marker was not used, before what was. */
            char note[128];
            snprintf(note, sizeof note, "no '%s' ranges with events", step);
            size_t len = strlen((*out)->detail);
            if (len)
                snprintf(note + strlen(note), sizeof note - strlen(note), "; %s", (*out)->detail);
            memcpy((*out)->detail, note, sizeof (*out)->detail);
        }
        if (!rc && chosen < NM && expected && (*out)->n != expected) {
            size_t len = strlen((*out)->detail);
            snprintf((*out)->detail + len, sizeof (*out)->detail - len, "%s%zu found, %u stated",
                     len ? "; " : "", (*out)->n, expected);
        }
    }
#undef NEED_CURVE
    for (size_t m = 0; m < NM; m++)
        cand_free(&cs[m]);
    free(cv.v);
    return rc;
}

int ms_iterations_find(ms_iterations **out, const ms_snapshot *s, int device,
                       const ms_timeline *t, const ms_iter_options *opt, ms_error *err)
{
    *out = NULL;
    if (!s || device < 0 || device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no device %d in this snapshot", device);
    if (t && t->device != device)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "timeline is for device %d, not %d",
                        t->device, device);
    ms_timeline *own = NULL;
    if (!t) {
        int rc = ms_timeline_build(&own, s, device, MS_TIMELINE_CURVES, err);
        if (rc)
            return rc;
        t = own;
    }
    ms__lent l;
    int rc = ms__lent_take(&l, s, t, NULL, opt, err);
    if (!rc) {
        *out = l.own_it;
        l.own_it = NULL;
    }
    ms__lent_free(&l);
    ms_timeline_free(own);
    return rc;
}

int ms__lent_take(ms__lent *l, const ms_snapshot *s, const ms_timeline *t,
                  const ms_iterations *it, const ms_iter_options *opt, ms_error *err)
{
    memset(l, 0, sizeof *l);
    size_t n = 0;
    int rc = ms_annotation_ranges(&l->own_ranges, &n, s, t->device, err);
    l->ann = (ms__ann){l->own_ranges, n};
    l->it = it;
    if (!rc && !it) {
        rc = ms__iterations_with(&l->own_it, s, t, &l->ann, opt, err);
        l->it = l->own_it;
    }
    if (rc)
        ms__lent_free(l);
    return rc;
}

int ms__iterations_with(ms_iterations **out, const ms_snapshot *s, const ms_timeline *t,
                        const ms__ann *ann, const ms_iter_options *opt, ms_error *err)
{
    ms__stackinfo *si = NULL;
    int rc = ms__stackinfo_build(&si, s, err);
    if (!rc)
        rc = ms__iterations_find(out, s, t, si, ann, opt, err);
    free(si);
    return rc;
}

void ms__lent_free(ms__lent *l)
{
    free(l->own_ranges);
    ms_iterations_free(l->own_it);
    memset(l, 0, sizeof *l);
}
