/* The shape of a recording: a training loop, one step, one forward with or without its
 * graph alive, an inference or benchmark loop, with a compile phase and CUDA-graph
 * replays where they exist. Decided once from facts the run already holds: the
 * iterations (repeated structure), the phases (forward, backward, optimizer step,
 * compile), what was alive before the first event, and the final segments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile_internal.h"
#include "internal.h"
#include "iter_internal.h"
#include "leak_internal.h"
#include "phases_internal.h"
#include "run_internal.h"
#include "memsnap/shape.h"

MS__KEY_TEXT_LOOKUPS(MS_SHAPE_KIND_LIST, ms_shape_kind, MS_SHAPE_KIND_COUNT, ms_shape_kind_name,
                     ms_shape_kind_text)

void ms_shape_free(ms_shape *sh)
{
    if (sh)
        MS__FREE_ALL(sh->compile, sh);
}

/* ------------------------------------------------------------------ compile */

static int compile_windows(ms_shape *sh, const ms_snapshot *s, const ms_trace *tr,
                           const ms_timeline *t, const ms_iterations *it, const ms__ann *ann,
                           ms_error *err)
{
    ms__compile_windows cw;
    int rc = ms__compile_windows_find(&cw, s, tr, it, ann, err);
    if (rc || !cw.n)
        return rc;
    sh->compile = calloc(cw.n, sizeof *sh->compile);
    if (!sh->compile) {
        ms__compile_windows_free(&cw);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for compile windows");
    }
    sh->n_compile = cw.n;
    sh->compile_peak_bytes = -1;
    for (size_t k = 0; k < cw.n; k++) {
        const ms__compile_window *w = &cw.items[k];
        ms_shape_compile *c = &sh->compile[k];
        c->start_event = w->start_event;
        c->end_event = w->end_event;
        c->start_us = tr->time_us[w->start_event];
        c->end_us = tr->time_us[w->end_event - 1];
        c->allocations = w->allocations;
        c->autotuning = (w->bits & MS__COMPILE_AUTOTUNE) != 0;
        c->peak_bytes = -1;
        c->peak_event = -1;
        for (int64_t i = w->start_event; t && t->active && i < w->end_event; i++)
            if (t->active[i] > c->peak_bytes) {
                c->peak_bytes = t->active[i];
                c->peak_event = i;
            }
        sh->compile_us += c->end_us - c->start_us;
        if (c->peak_bytes > sh->compile_peak_bytes)
            sh->compile_peak_bytes = c->peak_bytes;
        sh->compile_autotuning |= c->autotuning;
    }
    ms__compile_windows_free(&cw);
    return 0;
}

/* ------------------------------------------------------------------ CUDA graphs */

static int graph_pools(ms_shape *sh, const ms_snapshot *s, const ms_trace *tr,
                       const ms_iterations *it, ms_error *err)
{
    sh->graph_replay_first = SIZE_MAX;
    sh->graph_capture_end_event = -1;
    size_t nseg = 0, n = 0;
    const ms_segment *seg = ms_snapshot_segments(s, &nseg);
    for (size_t i = 0; i < nseg; i++)
        n += seg[i].device == sh->device && (seg[i].pool_id[0] || seg[i].pool_id[1]);
    if (!n)
        return 0;
    uint64_t *addr = malloc(n * sizeof *addr);
    if (!addr)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for graph pools");
    n = 0;
    for (size_t i = 0; i < nseg; i++) {
        if (seg[i].device != sh->device || !(seg[i].pool_id[0] || seg[i].pool_id[1]))
            continue;
        addr[n++] = seg[i].address;
        sh->graph_pool_bytes += seg[i].total_size;
        sh->graph_pool_live_bytes += seg[i].allocated_size;
    }
    sh->graph_pool_segments = (uint32_t)n;
    qsort(addr, n, sizeof *addr, ms__cmp_u64);
    /* The capture made the pool's segments: the last of them made in the trace ends it. */
    for (size_t i = tr->n; i-- > 0;) {
        uint8_t a = tr->action[i];
        if ((a == MS_ACT_SEGMENT_ALLOC || a == MS_ACT_SEGMENT_MAP) &&
            bsearch(&tr->addr[i], addr, n, sizeof *addr, ms__cmp_u64)) {
            sh->graph_capture_end_event = (int64_t)i;
            break;
        }
    }
    free(addr);
    for (size_t k = 0; it && k < it->n; k++)
        if (it->items[k].start_event > sh->graph_capture_end_event) {
            if (sh->graph_replay_first == SIZE_MAX)
                sh->graph_replay_first = k;
            sh->graph_replay_count++;
        }
    return 0;
}

bool ms_shape_is_replay(const ms_shape *sh, size_t iteration)
{
    return sh && sh->graph_replay_first != SIZE_MAX && iteration >= sh->graph_replay_first &&
           iteration < sh->graph_replay_first + sh->graph_replay_count;
}

int64_t ms_shape_footprint(const ms_shape *sh, size_t iteration, const ms_iteration *x)
{
    if (!x)
        return 0;
    if (!ms_shape_is_replay(sh, iteration))
        return x->peak_bytes;
    uint64_t extra = sh->graph_pool_bytes > sh->graph_pool_live_bytes
                         ? sh->graph_pool_bytes - sh->graph_pool_live_bytes
                         : 0;
    return x->peak_bytes + (int64_t)extra;
}

/* ------------------------------------------------------------------ alive at the end */

static int alive_at_end(ms_shape *sh, const ms_snapshot *s, const ms_timeline *t, ms_error *err)
{
    ms__stackinfo *si = NULL;
    int rc = ms__stackinfo_build(&si, s, err);
    if (rc)
        return rc;
    ms_alloc *own = NULL;
    const ms_alloc *allocs = t->allocs;
    size_t n = t->n_allocs;
    if (!t->allocs && t->n_events) {
        rc = ms_timeline_alive_at(&own, &n, s, t, (int64_t)t->n_events - 1, err);
        allocs = own;
    }
    ms__alive_end ae;
    if (!rc)
        rc = ms__alive_end_find(&ae, s, si, allocs, n, err);
    if (!rc) {
        sh->alive_end_count = ae.count;
        sh->alive_end_bytes = ae.bytes;
        sh->alive_end_call = ae.call_key;
        if (ae.graph)
            sh->kind = MS_SHAPE_FORWARD_GRAPH_ALIVE;
    }
    free(own);
    free(si);
    return rc;
}

/* ------------------------------------------------------------------ the shape */

/* The warm-up ran before the recording: state was alive at the first event, no ring
 * buffer dropped the events that made it, and the first iteration adds nothing it
 * keeps (a loop that creates its optimizer state in the first step keeps it). */
static bool warm_start(const ms_timeline *t, const ms_iterations *it)
{
    if (!it->n || t->preexisting_bytes <= 0 || t->wrap_evidence != MS_WRAP_NONE || !t->active)
        return false;
    const ms_iteration *x = &it->items[0];
    int64_t before = x->start_event > 0 ? t->active[x->start_event - 1] : t->active_start;
    int64_t slack = before / 100 > ((int64_t)1 << 20) ? before / 100 : (int64_t)1 << 20;
    return x->live_end_bytes <= before + slack;
}

/* Whether the loop runs the model: a forward, backward or optimizer phase begins in at
 * least half of its iterations (a loop of buffer churn after one forward does not). */
static bool model_loop(const ms_iterations *it, const ms_phases *ph)
{
    if (!ph->any)
        return false;
    size_t with = 0, k = 0;
    for (size_t i = 0; i < ph->n && k < it->n; i++) {
        ms_phase_kind kind = ph->items[i].kind;
        if (kind != MS_PHASE_FORWARD && kind != MS_PHASE_BACKWARD && kind != MS_PHASE_OPTIMIZER)
            continue;
        int64_t e = ph->items[i].start_event;
        while (k < it->n && it->items[k].end_event <= e)
            k++;
        if (k < it->n && it->items[k].start_event <= e) {
            with++;
            k++; /* count each iteration once */
        }
    }
    return with * 2 >= it->n;
}

int ms_shape_find(ms_shape **out, const ms_snapshot *s, const ms_timeline *t,
                  const ms_iterations *it, const ms_phases *ph, ms_error *err)
{
    ms_error_clear(err);
    if (!out)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no output pointer");
    *out = NULL;
    if (!s || !t || t->device < 0 || t->device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "a shape needs a snapshot and timeline");
    ms__lent l;
    ms_phases *own_ph = NULL;
    int rc = ms__lent_take(&l, s, t, it, NULL, err);
    if (!rc && !ph)
        rc = ms__phases_find_with(&own_ph, s, t, l.it, &l.ann, err);
    if (!rc)
        rc = ms__shape_find_with(out, s, t, l.it, ph ? ph : own_ph, &l.ann, err);
    ms__lent_free(&l);
    ms_phases_free(own_ph);
    return rc;
}

int ms__shape_find_with(ms_shape **out, const ms_snapshot *s, const ms_timeline *t,
                        const ms_iterations *it, const ms_phases *ph, const ms__ann *ann,
                        ms_error *err)
{
    *out = NULL;
    int rc = 0;
    ms_shape *sh = calloc(1, sizeof *sh);
    if (!sh) {
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for a shape");
        goto done;
    }
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    sh->device = t->device;
    sh->has_times = tr->has_times;
    sh->iterations = (uint32_t)it->n;
    sh->compile_peak_bytes = -1;
    for (size_t k = 0; k < ph->n; k++)
        sh->phases_seen |= 1u << ph->items[k].kind;
    bool fwd = ph->counts[MS_PHASE_FORWARD] > 0, bwd = ph->counts[MS_PHASE_BACKWARD] > 0,
         opt = ph->counts[MS_PHASE_OPTIMIZER] > 0;
    sh->warm_start = warm_start(t, it);
    if (!tr->n)
        sh->kind = MS_SHAPE_EMPTY;
    else if (it->n >= 2 && !model_loop(it, ph))
        sh->kind = MS_SHAPE_LOOP;
    else if (it->n >= 2 && bwd)
        sh->kind = sh->warm_start ? MS_SHAPE_BENCHMARK_LOOP
                   : opt          ? MS_SHAPE_TRAINING_LOOP
                                  : MS_SHAPE_TRAINING_LOOP_NO_OPTIMIZER;
    else if (it->n >= 2)
        sh->kind = opt ? MS_SHAPE_TRAINING_LOOP : MS_SHAPE_INFERENCE_LOOP;
    else if (it->n == 1 && (bwd || opt))
        sh->kind = opt ? MS_SHAPE_ONE_STEP : MS_SHAPE_ONE_STEP_NO_OPTIMIZER;
    else if (bwd)
        sh->kind = MS_SHAPE_ONE_STEP_NO_OPTIMIZER;
    else if (fwd)
        sh->kind = MS_SHAPE_FORWARD;
    else
        sh->kind = MS_SHAPE_UNKNOWN;
    sh->warm_start = sh->warm_start && sh->kind == MS_SHAPE_BENCHMARK_LOOP;
    sh->alive_end_call = UINT32_MAX;
    rc = compile_windows(sh, s, tr, t, it, ann, err);
    if (!rc)
        rc = graph_pools(sh, s, tr, it, err);
    if (!rc && sh->kind == MS_SHAPE_FORWARD && !it->n)
        rc = alive_at_end(sh, s, t, err);
done:
    if (rc) {
        ms_shape_free(sh);
        sh = NULL;
    }
    *out = sh;
    return rc;
}

/* ------------------------------------------------------------------ text */

size_t ms_shape_text(const ms_shape *sh, char *buf, size_t cap)
{
    if (!sh)
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s", ""));
    uint32_t n = sh->iterations;
    const char *its = n == 1 ? "iteration" : "iterations";
    switch (sh->kind) {
    case MS_SHAPE_TRAINING_LOOP:
    case MS_SHAPE_INFERENCE_LOOP:
    case MS_SHAPE_TRAINING_LOOP_NO_OPTIMIZER:
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s, %u %s",
                                                ms_shape_kind_text(sh->kind), n, its));
    case MS_SHAPE_LOOP:
        return ms__text_done(buf, cap, snprintf(buf, cap,
                                                "loop, %u %s (no forward, backward or "
                                                "optimizer step in them)", n, its));
    case MS_SHAPE_BENCHMARK_LOOP:
        if (sh->warm_start)
            return ms__text_done(
                buf, cap,
                snprintf(buf, cap,
                         "benchmark loop: warm-up before the recording (parameters%s alive at "
                         "the first event), then %u turn%s",
                         (sh->phases_seen & (1u << MS_PHASE_OPTIMIZER)) ? " and optimizer state"
                                                                        : "",
                         n, n == 1 ? "" : "s"));
        return ms__text_done(buf, cap,
                             snprintf(buf, cap, "benchmark loop, %u turn%s", n,
                                      n == 1 ? "" : "s"));
    default:
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s", ms_shape_kind_text(sh->kind)));
    }
}

size_t ms_shape_compile_text(const ms_shape *sh, char *buf, size_t cap)
{
    if (!sh || !sh->n_compile)
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s", ""));
    char when[48], peak[64] = "";
    double sec = (double)sh->compile_us / 1e6;
    if (sh->has_times && sec >= 0.95)
        snprintf(when, sizeof when, "%.1f s", sec);
    else if (sh->has_times)
        snprintf(when, sizeof when, "%.1f ms", sec * 1e3);
    else
        snprintf(when, sizeof when, "over %lld events",
                 (long long)(sh->compile[sh->n_compile - 1].end_event - sh->compile[0].start_event));
    if (sh->compile_peak_bytes >= 0) {
        char b[32];
        ms_format_bytes(sh->compile_peak_bytes, b, sizeof b);
        snprintf(peak, sizeof peak, ", peak %s while %s", b,
                 sh->compile_autotuning ? "autotuning" : "compiling");
    }
    char times[48] = "";
    if (sh->n_compile > 1)
        snprintf(times, sizeof times, " in %zu stretches", sh->n_compile);
    return ms__text_done(buf, cap, snprintf(buf, cap, "compile %s%s%s", when, times, peak));
}

size_t ms_shape_graphs_text(const ms_shape *sh, char *buf, size_t cap)
{
    if (!sh || !sh->graph_pool_bytes)
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s", ""));
    char b[32];
    ms_format_bytes((int64_t)sh->graph_pool_bytes, b, sizeof b);
    return ms__text_done(
        buf, cap,
        snprintf(buf, cap,
                 "CUDA graphs: replays allocate from the graph's private pool, %s in %u "
                 "segment%s made during capture; a replay iteration's real footprint is its "
                 "live bytes plus the pool",
                 b, sh->graph_pool_segments, sh->graph_pool_segments == 1 ? "" : "s"));
}
