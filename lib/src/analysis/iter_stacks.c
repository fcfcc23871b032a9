/* Iterations from what the stacks say: the optimizer's step (runs of allocations under an
 * optimizer package's frames) and repeated top-level forward calls from one line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "iter_cand.h"

static bool is_free(uint8_t a)
{
    return a == MS_ACT_FREE_REQUESTED || a == MS_ACT_FREE_COMPLETED;
}

static uint8_t st_flags(const ms__stackinfo *si, const ms_trace *tr, size_t i)
{
    return tr->stack[i] == MS_NO_STACK ? 0 : si[tr->stack[i]].flags;
}

/* Runs of optimizer events. Frees in between (Python garbage collection, record_stream
 * completions) do not break a run; an allocation outside the optimizer does. */
int ms__iter_cand_optimizer_frames(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                   const ms__stackinfo *si, ms_error *err)
{
    int64_t *ends = NULL;
    size_t n = 0, cap = 0;
    size_t i = 0;
    while (i < tr->n) {
        if (!(st_flags(si, tr, i) & MS__ST_OPTIM)) {
            i++;
            continue;
        }
        size_t last = i;
        bool step = false;
        size_t j = i;
        for (; j < tr->n; j++) {
            uint8_t f = st_flags(si, tr, j);
            if (f & MS__ST_OPTIM) {
                last = j;
                if (!(f & MS__ST_ZERO_GRAD))
                    step = true;
            } else if (!is_free(tr->action[j]) && tr->action[j] != MS_ACT_SEGMENT_FREE &&
                       tr->action[j] != MS_ACT_SEGMENT_UNMAP) {
                break;
            }
        }
        if (step) {
            if (!ms__grow((void **)&ends, &cap, n + 1, sizeof *ends)) {
                free(ends);
                return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
            }
            ends[n++] = (int64_t)last + 1;
        } else if (n && ends[n - 1] < (int64_t)last + 1) {
            /* zero_grad after the step (no layer work in between) belongs to the step's
             * iteration: grads are freed there, which is where memory returns to base. */
            bool layer_between = false;
            for (size_t k = (size_t)ends[n - 1]; k < i && !layer_between; k++)
                if (tr->stack[k] != MS_NO_STACK && si[tr->stack[k]].layer != UINT32_MAX)
                    layer_between = true;
            if (!layer_between)
                ends[n - 1] = (int64_t)last + 1;
        }
        i = last + 1;
    }
    bool ok = ms__iter_cand_from_ends(c, s, tr, ends, NULL, n);
    free(ends);
    return ok ? 0 : ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
}

/* The optimizer step ends an iteration's work but not its loop body: what the loop does
 * after it (keeping a copy of the output, `del` of the batch and loss) comes before the
 * next batch is made. After the last step the loop body ends too, with nothing after it
 * but the script's epilogue, so the events that follow the last step and also follow
 * every earlier step, in the same order, are the end of the loop body: each boundary
 * moves past as many of them as follow its step (never into the next forward pass), and
 * the last iteration takes the most any step had (a `del model` epilogue is no part of
 * them). The first start is aligned again. */
void ms__iter_settle_after_step(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                const ms__stackinfo *si)
{
    if (c->n < 2)
        return;
    size_t last = c->n - 1;
    int64_t tail = c->it[last].end, n = (int64_t)tr->n, most = 0;
    for (size_t k = 0; k < last; k++) {
        int64_t from = c->it[k].end, limit = c->it[k + 1].end, m = 0;
        while (from + m < limit && tail + m < n &&
               !(tr->action[from + m] == MS_ACT_ALLOC && tr->stack[from + m] != MS_NO_STACK &&
                 si[tr->stack[from + m]].fwd_depth > 0) &&
               key_eq(key_of(s, tr, from + m), key_of(s, tr, tail + m)))
            m++;
        if (!m)
            continue;
        c->it[k].end = c->it[k + 1].start = from + m;
        c->it[k].end_us = c->it[k + 1].start_us = INT64_MIN;
        if (m > most)
            most = m;
    }
    if (!most)
        return;
    c->it[last].end = tail + most;
    c->it[last].end_us = INT64_MIN;
    bool partial = false;
    int64_t first = ms__iter_align_start(s, tr, c->it[0].end, c->it[1].end, &partial);
    if (c->it[0].start_us == INT64_MIN) {
        c->it[0].start = first;
        c->first_partial = partial && !c->complete;
    }
}

/* Repeated top-level forward calls: runs of events under the same user call site of the
 * outermost forward; the call site with the most runs is the loop body. */
int ms__iter_cand_forward_calls(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                const curve *cv, const ms__stackinfo *si, ms_error *err)
{
    size_t nframes = ms_snapshot_frame_count(s);
    if (!nframes || !tr->n)
        return 0;
    uint32_t *runs = calloc(nframes, sizeof *runs);
    if (!runs)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for forward calls");
    /* Compile-time work inside a call (Dynamo, autotuning on the first call) is no
     * part of the loop's structure: it neither ends a run nor starts one. */
    uint32_t prev = UINT32_MAX;
    for (size_t i = 0; i < tr->n; i++) {
        if (st_flags(si, tr, i) & MS__ST_COMPILE)
            continue;
        uint32_t k = tr->stack[i] == MS_NO_STACK ? UINT32_MAX : si[tr->stack[i]].call_key;
        if (k != prev && k != UINT32_MAX && k < nframes)
            runs[k]++;
        prev = k;
    }
    uint32_t best = UINT32_MAX, best_runs = 1;
    for (size_t k = 0; k < nframes; k++)
        if (runs[k] > best_runs) {
            best_runs = runs[k];
            best = (uint32_t)k;
        }
    free(runs);
    if (best == UINT32_MAX)
        return 0;

    int64_t *rs = malloc(best_runs * sizeof *rs), *re = malloc(best_runs * sizeof *re);
    int64_t *cuts = malloc(best_runs * sizeof *cuts);
    if (!rs || !re || !cuts) {
        MS__FREE_ALL(rs, re, cuts);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for forward calls");
    }
    size_t nr = 0;
    prev = UINT32_MAX;
    for (size_t i = 0; i < tr->n; i++) {
        if (st_flags(si, tr, i) & MS__ST_COMPILE)
            continue;
        uint32_t k = tr->stack[i] == MS_NO_STACK ? UINT32_MAX : si[tr->stack[i]].call_key;
        if (k == best) {
            if (prev != best && nr < best_runs)
                rs[nr++] = (int64_t)i;
            if (nr)
                re[nr - 1] = (int64_t)i + 1;
        }
        prev = k;
    }
    size_t m = 0;
    for (size_t r = 1; r < nr; r++)
        cuts[m++] = ms__iter_lowest_cut(cv, tr, re[r - 1], rs[r]);
    /* A cut stays between the two calls it separates. */
    ms__iter_refine_cuts(s, tr, cuts, m, re, rs + 1);
    bool ok = ms__iter_cand_from_cuts(c, s, tr, cuts, m);
    free(rs);
    free(re);
    free(cuts);
    if (!ok)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    char site[96];
    if (ms_site_format(s, best, site, sizeof site) > 0)
        snprintf(c->detail, sizeof c->detail, "calls from %s", site);
    return 0;
}
