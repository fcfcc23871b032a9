/* One run, many views: for every testdata snapshot, one ms_run is built and each view's
 * own code path (summary's one-pass categories, the categories analysis, the leak
 * finder, the OOM analysis, render's chart model) is asked for the same facts, which
 * must agree: iteration counts and bounds, phase counts and ranges, annotation ranges,
 * frame kinds, categories at the peak and leak bytes. */
#include "../render/chart_impl.h"
#include "check.h"
#include "memsnap/run.h"

static bool same_iterations(const char *ctx, const char *what, const ms_iterations *a,
                            const ms_iterations *b)
{
    char where[256];
    snprintf(where, sizeof where, "%s %s", ctx, what);
    CHECK_EQ_INT_IN(where, (int64_t)a->n, (int64_t)b->n);
    CHECK_EQ_INT_IN(where, (int64_t)a->n_unfinished, (int64_t)b->n_unfinished);
    CHECK_EQ_INT_IN(where, (int64_t)a->method, (int64_t)b->method);
    if (a->n != b->n || a->n_unfinished != b->n_unfinished)
        return false;
    for (size_t k = 0; k < a->n + a->n_unfinished; k++) {
        CHECK_EQ_INT_IN(where, a->items[k].start_event, b->items[k].start_event);
        CHECK_EQ_INT_IN(where, a->items[k].end_event, b->items[k].end_event);
        CHECK_EQ_INT_IN(where, a->items[k].peak_bytes, b->items[k].peak_bytes);
        CHECK_EQ_INT_IN(where, (int64_t)a->items[k].unfinished, (int64_t)b->items[k].unfinished);
    }
    return true;
}

static void check_iterations(const char *name, ms_run *run, const ms_snapshot *s, int device,
                             const ms_timeline *t)
{
    ms_error err;
    const ms_iterations *it = NULL;
    if (ms_run_iterations(&it, run, &err)) {
        check_fail("%s: iterations: %s", name, err.message);
        return;
    }
    /* The standalone finder (summary), the leak finder's own and the categories'. */
    ms_iterations *own = NULL;
    if (ms_iterations_find(&own, s, device, t, NULL, &err) == 0)
        same_iterations(name, "ms_iterations_find", it, own);
    ms_iterations_free(own);
    ms_leak_report *lr = NULL;
    if (ms_leak_report_build(&lr, s, device, t, NULL, &err) == 0)
        same_iterations(name, "ms_leak_report_build", it, lr->iterations);
    ms_leak_report_free(lr);
    const ms_categories *c = NULL;
    if (ms_run_categories(&c, run, &err) == 0)
        same_iterations(name, "categories", it, ms_categories_iterations(c));
    /* Iterations are in order, inside the trace, and an unfinished one ends it. */
    for (size_t k = 0; k < it->n + it->n_unfinished; k++) {
        CHECK_TRUE_IN(name, it->items[k].start_event < it->items[k].end_event);
        CHECK_TRUE_IN(name, it->items[k].end_event <= (int64_t)t->n_events);
        if (k)
            CHECK_TRUE_IN(name, it->items[k - 1].end_event <= it->items[k].start_event);
        CHECK_EQ_INT_IN(name, (int64_t)it->items[k].unfinished, (int64_t)(k == it->n));
    }
    if (it->n_unfinished) {
        CHECK_EQ_INT_IN(name, it->items[it->n].end_event, (int64_t)t->n_events);
        CHECK_TRUE_IN(name, t->oom_count > 0);
    }

    /* The OOM analysis lists the iterations before the failure and ends with the one it
     * happened in, marked, with the run's numbering. */
    const ms_oom_report *oo = NULL;
    if (ms_run_ooms(&oo, run, &err)) {
        check_fail("%s: ooms: %s", name, err.message);
        return;
    }
    for (size_t i = 0; i < oo->n; i++) {
        const ms_oom *o = &oo->items[i];
        for (size_t k = 0; k < o->n_iters; k++) {
            const ms_oom_iter *x = &o->iters[k];
            CHECK_TRUE_IN(name, x->index < it->n + it->n_unfinished);
            if (x->index >= it->n + it->n_unfinished)
                continue;
            CHECK_EQ_INT_IN(name, x->end_event, it->items[x->index].end_event);
            CHECK_EQ_INT_IN(name, (int64_t)x->unfinished, (int64_t)it->items[x->index].unfinished);
            CHECK_EQ_INT_IN(name, (int64_t)x->unfinished, (int64_t)(k + 1 == o->n_iters && x->unfinished));
        }
        /* The failing iteration is listed when the trace ends inside it. */
        if (it->n_unfinished && o->event >= it->items[it->n].start_event) {
            CHECK_TRUE_IN(name, o->n_iters > 0 && o->iters[o->n_iters - 1].unfinished);
            if (o->n_iters)
                CHECK_EQ_INT_IN(name, (int64_t)o->iters[o->n_iters - 1].index, (int64_t)it->n);
        }
    }
}

static void check_phases(const char *name, ms_run *run, const ms_snapshot *s, int device,
                         const ms_timeline *t)
{
    ms_error err;
    const ms_phases *ph = NULL;
    const ms_categories *c = NULL;
    if (ms_run_phases(&ph, run, &err) || ms_run_categories(&c, run, &err)) {
        check_fail("%s: phases: %s", name, err.message);
        return;
    }
    ms_category_phases cp;
    ms_categories_phases(&cp, c);
    CHECK_EQ_INT_IN(name, (int64_t)ph->counts[MS_PHASE_FORWARD], (int64_t)cp.forward);
    CHECK_EQ_INT_IN(name, (int64_t)ph->counts[MS_PHASE_BACKWARD], (int64_t)cp.backward);
    CHECK_EQ_INT_IN(name, (int64_t)ph->counts[MS_PHASE_OPTIMIZER], (int64_t)cp.optimizer);
    CHECK_EQ_INT_IN(name, (int64_t)((ph->sources & MS_PHASE_FROM_ANNOTATION) != 0),
                    (int64_t)cp.from_annotations);
    /* The phases cover the trace without overlap. */
    for (size_t k = 0; k < ph->n; k++) {
        CHECK_EQ_INT_IN(name, ph->items[k].start_event, k ? ph->items[k - 1].end_event : 0);
        CHECK_TRUE_IN(name, ph->items[k].close_event <= ph->items[k].end_event);
    }
    if (ph->n)
        CHECK_EQ_INT_IN(name, ph->items[ph->n - 1].end_event, (int64_t)t->n_events);

    /* Annotation ranges: the run's, the library's pairing and render's chart model agree. */
    const ms_annotation_range *ar = NULL;
    size_t nar = 0;
    if (ms_run_annotation_ranges(&ar, &nar, run, &err)) {
        check_fail("%s: ranges: %s", name, err.message);
        return;
    }
    ms_chart_source src;
    memset(&src, 0, sizeof src);
    src.snap = s;
    src.trace = ms_snapshot_trace(s, device);
    src.tl = t;
    src.phases = ph;
    ms__range *rr = NULL;
    size_t nrr = 0;
    if (ms__build_ranges(&src, &rr, &nrr, &err) == 0) {
        CHECK_EQ_INT_IN(name, (int64_t)nrr, (int64_t)nar);
        for (size_t i = 0; i < nrr && i < nar; i++) {
            CHECK_EQ_INT_IN(name, (int64_t)rr[i].name, (int64_t)ar[i].name);
            CHECK_EQ_INT_IN(name, (int64_t)rr[i].depth, (int64_t)ar[i].depth);
            if (!ar[i].lost_start)
                CHECK_EQ_INT_IN(name, rr[i].start_us, ar[i].start_us);
            if (!ar[i].open_end)
                CHECK_EQ_INT_IN(name, rr[i].end_us, ar[i].end_us);
        }
    }
    free(rr);

    /* render --by phase: a chart for every file; without top-level ranges its bands are
     * the run's phase kinds, and each band's allocations were made in a phase of it. */
    bool top = false;
    for (size_t i = 0; i < nar; i++)
        top = top || ar[i].depth == 0;
    ms_chart_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.by = MS_CHART_BY_PHASE;
    ms_chart *ch = NULL;
    int rc = ms_chart_build(&ch, &src, &spec, (ms_chart_rect){0, 0, 1200, 600}, &err);
    CHECK_EQ_INT_IN(name, rc, 0);
    if (!rc && !top) {
        for (size_t g = 0; g < ch->n_groups; g++) {
            const char *l = ch->groups[g].label;
            CHECK_TRUE_IN(name, !strcmp(l, "forward") || !strcmp(l, "backward") ||
                                    !strcmp(l, "optimizer step"));
        }
        size_t want = ph->counts[MS_PHASE_FORWARD] > 0;
        CHECK_TRUE_IN(name, ch->n_groups >= (want && t->n_allocs ? 1u : 0u) || !t->n_allocs);
    }
    ms_chart_free(ch);
}

static void check_frames(const char *name, ms_run *run, const ms_snapshot *s)
{
    ms_error err;
    const ms_frame_class *fc = NULL;
    size_t n = 0;
    if (ms_run_frame_classes(&fc, &n, run, &err)) {
        check_fail("%s: frames: %s", name, err.message);
        return;
    }
    CHECK_EQ_INT_IN(name, (int64_t)n, (int64_t)ms_snapshot_frame_count(s));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += fc[i].kind != ms_frame_kind_of(s, (uint32_t)i);
    CHECK_EQ_INT_IN(name, (int64_t)bad, 0);
    /* A stack's site is never torch's or compiled code when a Python frame of the user
     * or a library is on it. */
    size_t wrong = 0;
    for (size_t sid = 0; sid < ms_snapshot_stack_count(s); sid++) {
        size_t nf = 0;
        const uint32_t *fr = ms_snapshot_stack(s, (uint32_t)sid, &nf);
        bool user = false;
        for (size_t k = 0; k < nf; k++)
            user = user || (fr[k] < n && (fc[fr[k]].kind == MS_FRAME_USER ||
                                          fc[fr[k]].kind == MS_FRAME_LIBRARY));
        uint32_t site = ms_stack_site(s, (uint32_t)sid);
        if (user && (site >= n || ms_frame_kind_is_internal(fc[site].kind) ||
                     fc[site].kind == MS_FRAME_NATIVE))
            wrong++;
    }
    CHECK_EQ_INT_IN(name, (int64_t)wrong, 0);
}

static void check_categories_and_leaks(const char *name, ms_run *run, const ms_snapshot *s,
                                       int device, const ms_timeline *t)
{
    ms_error err;
    const ms_categories *c = NULL;
    const ms_iterations *it = NULL;
    if (ms_run_categories(&c, run, &err) || ms_run_iterations(&it, run, &err)) {
        check_fail("%s: categories: %s", name, err.message);
        return;
    }
    /* summary's one pass over the allocations alive at the peak against the categories
     * analysis' breakdown of the peak. */
    ms_timeline *tp = NULL;
    if (ms_timeline_build(&tp, s, device, MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE, &err)) {
        check_fail("%s: peak timeline: %s", name, err.message);
        return;
    }
    int64_t sum[MS_CAT_COUNT];
    const ms_category_point *pk = ms_categories_peak(c);
    if (ms_categories_sum(sum, s, tp, it, tp->peak_alive, tp->n_peak_alive, &err) == 0 && pk) {
        for (int k = 0; k < MS_CAT_COUNT; k++) {
            char where[256];
            snprintf(where, sizeof where, "%s peak %s", name, ms_category_name((ms_category)k));
            CHECK_EQ_INT_IN(where, sum[k], pk->by[k]);
        }
    }
    ms_timeline_free(tp);

    /* Leak bytes: the run's report and the leaks command's own call. */
    const ms_leak_report *lr = NULL;
    ms_leak_report *own = NULL;
    if (ms_run_leaks(&lr, run, &err) || ms_leak_report_build(&own, s, device, t, NULL, &err)) {
        check_fail("%s: leaks: %s", name, err.message);
        return;
    }
    CHECK_EQ_INT_IN(name, (int64_t)lr->n, (int64_t)own->n);
    uint64_t a = 0, b = 0;
    for (size_t k = 0; k < lr->n; k++)
        a += lr->items[k].kind == MS_LEAK_LEAK ? lr->items[k].bytes : 0;
    for (size_t k = 0; k < own->n; k++)
        b += own->items[k].kind == MS_LEAK_LEAK ? own->items[k].bytes : 0;
    CHECK_EQ_INT_IN(name, (int64_t)a, (int64_t)b);
    /* The run's iterations are the leak report's. */
    CHECK_TRUE_IN(name, lr->iterations->n == it->n);
    /* An OOM's leak is one of the leak findings. */
    const ms_oom_report *oo = NULL;
    if (ms_run_ooms(&oo, run, &err) == 0) {
        for (size_t i = 0; i < oo->n; i++) {
            if (!oo->items[i].leak_bytes)
                continue;
            bool found = false;
            for (size_t k = 0; k < lr->n; k++)
                found = found || (lr->items[k].kind == MS_LEAK_LEAK &&
                                  lr->items[k].site == oo->items[i].leak_site);
            CHECK_TRUE_IN(name, found);
        }
    }
    ms_leak_report_free(own);
}

static void one_file(const char *path, const char *name, void *arg)
{
    (void)arg;
    ms_snapshot *s = NULL;
    ms_timeline *t = NULL;
    int device = 0;
    if (check_open_timeline(path, &s, &device, &t))
        return;
    ms_run *run = NULL;
    ms_error err;
    if (ms_run_open(&run, s, device, NULL, &err)) {
        check_fail("%s: run: %s", name, err.message);
    } else {
        const ms_timeline *rt = NULL;
        if (ms_run_timeline(&rt, run, &err) == 0) {
            CHECK_EQ_INT_IN(name, (int64_t)rt->n_events, (int64_t)t->n_events);
            CHECK_EQ_INT_IN(name, rt->peak_bytes, t->peak_bytes);
        }
        check_iterations(name, run, s, device, rt ? rt : t);
        check_phases(name, run, s, device, rt ? rt : t);
        check_frames(name, run, s);
        check_categories_and_leaks(name, run, s, device, rt ? rt : t);
    }
    ms_run_free(run);
    ms_timeline_free(t);
    ms_snapshot_free(s);
}

/* A compiled run (what testdata does not hold): three allocations whose stacks run
 * through Inductor's cache, Dynamo, an FX graph module, Inductor's own package and an
 * installed library, each called from the user's train.py. Made with Python's pickle
 * (protocol 2) from {"segments": [], "device_traces": [[{"action": "alloc", ...,
 * "frames": [...]}]]}. */
static const unsigned char COMPILED_PICKLE[] = {
    0x80, 0x02, 0x7d, 0x71, 0x00, 0x28, 0x58, 0x08, 0x00, 0x00, 0x00, 0x73, 0x65, 0x67, 0x6d, 0x65,
    0x6e, 0x74, 0x73, 0x71, 0x01, 0x5d, 0x71, 0x02, 0x58, 0x0d, 0x00, 0x00, 0x00, 0x64, 0x65, 0x76,
    0x69, 0x63, 0x65, 0x5f, 0x74, 0x72, 0x61, 0x63, 0x65, 0x73, 0x71, 0x03, 0x5d, 0x71, 0x04, 0x5d,
    0x71, 0x05, 0x28, 0x7d, 0x71, 0x06, 0x28, 0x58, 0x06, 0x00, 0x00, 0x00, 0x61, 0x63, 0x74, 0x69,
    0x6f, 0x6e, 0x71, 0x07, 0x58, 0x05, 0x00, 0x00, 0x00, 0x61, 0x6c, 0x6c, 0x6f, 0x63, 0x71, 0x08,
    0x58, 0x04, 0x00, 0x00, 0x00, 0x61, 0x64, 0x64, 0x72, 0x71, 0x09, 0x4d, 0x00, 0x10, 0x58, 0x04,
    0x00, 0x00, 0x00, 0x73, 0x69, 0x7a, 0x65, 0x71, 0x0a, 0x4d, 0x00, 0x02, 0x58, 0x06, 0x00, 0x00,
    0x00, 0x73, 0x74, 0x72, 0x65, 0x61, 0x6d, 0x71, 0x0b, 0x4b, 0x00, 0x58, 0x07, 0x00, 0x00, 0x00,
    0x74, 0x69, 0x6d, 0x65, 0x5f, 0x75, 0x73, 0x71, 0x0c, 0x4d, 0xe8, 0x03, 0x58, 0x06, 0x00, 0x00,
    0x00, 0x66, 0x72, 0x61, 0x6d, 0x65, 0x73, 0x71, 0x0d, 0x5d, 0x71, 0x0e, 0x28, 0x7d, 0x71, 0x0f,
    0x28, 0x58, 0x08, 0x00, 0x00, 0x00, 0x66, 0x69, 0x6c, 0x65, 0x6e, 0x61, 0x6d, 0x65, 0x71, 0x10,
    0x58, 0x22, 0x00, 0x00, 0x00, 0x2f, 0x74, 0x6d, 0x70, 0x2f, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x69,
    0x6e, 0x64, 0x75, 0x63, 0x74, 0x6f, 0x72, 0x5f, 0x6d, 0x65, 0x2f, 0x61, 0x62, 0x2f, 0x63, 0x61,
    0x62, 0x78, 0x79, 0x7a, 0x2e, 0x70, 0x79, 0x71, 0x11, 0x58, 0x04, 0x00, 0x00, 0x00, 0x6c, 0x69,
    0x6e, 0x65, 0x71, 0x12, 0x4b, 0x0a, 0x58, 0x04, 0x00, 0x00, 0x00, 0x6e, 0x61, 0x6d, 0x65, 0x71,
    0x13, 0x58, 0x04, 0x00, 0x00, 0x00, 0x63, 0x61, 0x6c, 0x6c, 0x71, 0x14, 0x75, 0x7d, 0x71, 0x15,
    0x28, 0x68, 0x10, 0x58, 0x49, 0x00, 0x00, 0x00, 0x2f, 0x6f, 0x70, 0x74, 0x2f, 0x74, 0x6f, 0x72,
    0x63, 0x68, 0x2f, 0x2e, 0x76, 0x65, 0x6e, 0x76, 0x2f, 0x6c, 0x69, 0x62, 0x2f, 0x70, 0x79, 0x74,
    0x68, 0x6f, 0x6e, 0x33, 0x2e, 0x31, 0x32, 0x2f, 0x73, 0x69, 0x74, 0x65, 0x2d, 0x70, 0x61, 0x63,
    0x6b, 0x61, 0x67, 0x65, 0x73, 0x2f, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x2f, 0x5f, 0x64, 0x79, 0x6e,
    0x61, 0x6d, 0x6f, 0x2f, 0x65, 0x76, 0x61, 0x6c, 0x5f, 0x66, 0x72, 0x61, 0x6d, 0x65, 0x2e, 0x70,
    0x79, 0x71, 0x16, 0x68, 0x12, 0x4d, 0x58, 0x02, 0x68, 0x13, 0x58, 0x03, 0x00, 0x00, 0x00, 0x5f,
    0x66, 0x6e, 0x71, 0x17, 0x75, 0x7d, 0x71, 0x18, 0x28, 0x68, 0x10, 0x58, 0x11, 0x00, 0x00, 0x00,
    0x2f, 0x68, 0x6f, 0x6d, 0x65, 0x2f, 0x6d, 0x65, 0x2f, 0x74, 0x72, 0x61, 0x69, 0x6e, 0x2e, 0x70,
    0x79, 0x71, 0x19, 0x68, 0x12, 0x4b, 0x2a, 0x68, 0x13, 0x58, 0x04, 0x00, 0x00, 0x00, 0x6d, 0x61,
    0x69, 0x6e, 0x71, 0x1a, 0x75, 0x65, 0x75, 0x7d, 0x71, 0x1b, 0x28, 0x68, 0x07, 0x68, 0x08, 0x68,
    0x09, 0x4d, 0x00, 0x20, 0x68, 0x0a, 0x4d, 0x00, 0x02, 0x68, 0x0b, 0x4b, 0x00, 0x68, 0x0c, 0x4d,
    0xf2, 0x03, 0x68, 0x0d, 0x5d, 0x71, 0x1c, 0x28, 0x7d, 0x71, 0x1d, 0x28, 0x68, 0x10, 0x58, 0x11,
    0x00, 0x00, 0x00, 0x3c, 0x65, 0x76, 0x61, 0x6c, 0x5f, 0x77, 0x69, 0x74, 0x68, 0x5f, 0x6b, 0x65,
    0x79, 0x3e, 0x2e, 0x33, 0x71, 0x1e, 0x68, 0x12, 0x4b, 0x05, 0x68, 0x13, 0x58, 0x07, 0x00, 0x00,
    0x00, 0x66, 0x6f, 0x72, 0x77, 0x61, 0x72, 0x64, 0x71, 0x1f, 0x75, 0x7d, 0x71, 0x20, 0x28, 0x68,
    0x10, 0x58, 0x40, 0x00, 0x00, 0x00, 0x2f, 0x75, 0x73, 0x72, 0x2f, 0x6c, 0x69, 0x62, 0x2f, 0x70,
    0x79, 0x74, 0x68, 0x6f, 0x6e, 0x33, 0x2e, 0x31, 0x32, 0x2f, 0x73, 0x69, 0x74, 0x65, 0x2d, 0x70,
    0x61, 0x63, 0x6b, 0x61, 0x67, 0x65, 0x73, 0x2f, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x2f, 0x5f, 0x69,
    0x6e, 0x64, 0x75, 0x63, 0x74, 0x6f, 0x72, 0x2f, 0x6f, 0x75, 0x74, 0x70, 0x75, 0x74, 0x5f, 0x63,
    0x6f, 0x64, 0x65, 0x2e, 0x70, 0x79, 0x71, 0x21, 0x68, 0x12, 0x4b, 0x09, 0x68, 0x13, 0x58, 0x08,
    0x00, 0x00, 0x00, 0x5f, 0x5f, 0x63, 0x61, 0x6c, 0x6c, 0x5f, 0x5f, 0x71, 0x22, 0x75, 0x7d, 0x71,
    0x23, 0x28, 0x68, 0x10, 0x58, 0x4c, 0x00, 0x00, 0x00, 0x2f, 0x6f, 0x70, 0x74, 0x2f, 0x74, 0x6f,
    0x72, 0x63, 0x68, 0x2f, 0x2e, 0x76, 0x65, 0x6e, 0x76, 0x2f, 0x6c, 0x69, 0x62, 0x2f, 0x70, 0x79,
    0x74, 0x68, 0x6f, 0x6e, 0x33, 0x2e, 0x31, 0x32, 0x2f, 0x73, 0x69, 0x74, 0x65, 0x2d, 0x70, 0x61,
    0x63, 0x6b, 0x61, 0x67, 0x65, 0x73, 0x2f, 0x74, 0x72, 0x61, 0x6e, 0x73, 0x66, 0x6f, 0x72, 0x6d,
    0x65, 0x72, 0x73, 0x2f, 0x6d, 0x6f, 0x64, 0x65, 0x6c, 0x69, 0x6e, 0x67, 0x5f, 0x75, 0x74, 0x69,
    0x6c, 0x73, 0x2e, 0x70, 0x79, 0x71, 0x24, 0x68, 0x12, 0x4b, 0x07, 0x68, 0x13, 0x58, 0x07, 0x00,
    0x00, 0x00, 0x77, 0x72, 0x61, 0x70, 0x70, 0x65, 0x72, 0x71, 0x25, 0x75, 0x68, 0x18, 0x65, 0x75,
    0x7d, 0x71, 0x26, 0x28, 0x68, 0x07, 0x68, 0x08, 0x68, 0x09, 0x4d, 0x00, 0x30, 0x68, 0x0a, 0x4d,
    0x00, 0x02, 0x68, 0x0b, 0x4b, 0x00, 0x68, 0x0c, 0x4d, 0xfc, 0x03, 0x68, 0x0d, 0x5d, 0x71, 0x27,
    0x28, 0x7d, 0x71, 0x28, 0x28, 0x68, 0x10, 0x58, 0x48, 0x00, 0x00, 0x00, 0x2f, 0x6f, 0x70, 0x74,
    0x2f, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x2f, 0x2e, 0x76, 0x65, 0x6e, 0x76, 0x2f, 0x6c, 0x69, 0x62,
    0x2f, 0x70, 0x79, 0x74, 0x68, 0x6f, 0x6e, 0x33, 0x2e, 0x31, 0x32, 0x2f, 0x73, 0x69, 0x74, 0x65,
    0x2d, 0x70, 0x61, 0x63, 0x6b, 0x61, 0x67, 0x65, 0x73, 0x2f, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x2f,
    0x6e, 0x6e, 0x2f, 0x6d, 0x6f, 0x64, 0x75, 0x6c, 0x65, 0x73, 0x2f, 0x6d, 0x6f, 0x64, 0x75, 0x6c,
    0x65, 0x2e, 0x70, 0x79, 0x71, 0x29, 0x68, 0x12, 0x4b, 0x01, 0x68, 0x13, 0x58, 0x0a, 0x00, 0x00,
    0x00, 0x5f, 0x63, 0x61, 0x6c, 0x6c, 0x5f, 0x69, 0x6d, 0x70, 0x6c, 0x71, 0x2a, 0x75, 0x7d, 0x71,
    0x2b, 0x28, 0x68, 0x10, 0x68, 0x19, 0x68, 0x12, 0x4b, 0x32, 0x68, 0x13, 0x58, 0x04, 0x00, 0x00,
    0x00, 0x73, 0x74, 0x65, 0x70, 0x71, 0x2c, 0x75, 0x65, 0x75, 0x65, 0x61, 0x75, 0x2e,
};

static ms_frame_kind kind_named(const ms_snapshot *s, const char *file)
{
    for (size_t i = 0; i < ms_snapshot_frame_count(s); i++)
        if (!strcmp(ms_snapshot_string(s, ms_snapshot_frame(s, (uint32_t)i)->filename), file))
            return ms_frame_kind_of(s, (uint32_t)i);
    check_fail("no frame of %s", file);
    return MS_FRAME_KIND_COUNT;
}

static void check_compiled_kinds(void)
{
    CHECK_EQ_STR(ms_frame_kind_name(MS_FRAME_USER), "user");
    CHECK_EQ_STR(ms_frame_kind_name(MS_FRAME_LIBRARY), "library");
    CHECK_EQ_STR(ms_frame_kind_name(MS_FRAME_COMPILED), "compiled");
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_memory(&s, COMPILED_PICKLE, sizeof COMPILED_PICKLE, NULL, &err)) {
        check_fail("compiled pickle: %s", err.message);
        return;
    }
    CHECK_EQ_INT(kind_named(s, "/tmp/torchinductor_me/ab/cabxyz.py"), MS_FRAME_COMPILED);
    CHECK_EQ_INT(kind_named(s, "<eval_with_key>.3"), MS_FRAME_COMPILED);
    CHECK_EQ_INT(kind_named(s, "/opt/torch/.venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py"),
                 MS_FRAME_COMPILED);
    CHECK_EQ_INT(kind_named(s, "/usr/lib/python3.12/site-packages/torch/_inductor/output_code.py"),
                 MS_FRAME_COMPILED);
    CHECK_EQ_INT(kind_named(s, "/opt/torch/.venv/lib/python3.12/site-packages/transformers/modeling_utils.py"),
                 MS_FRAME_LIBRARY);
    CHECK_EQ_INT(kind_named(s, "/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py"),
                 MS_FRAME_TORCH);
    CHECK_EQ_INT(kind_named(s, "/home/me/train.py"), MS_FRAME_USER);
    /* The FX graph's forward is a forward (a compiled model's layer). */
    for (size_t i = 0; i < ms_snapshot_frame_count(s); i++) {
        const ms_frame *f = ms_snapshot_frame(s, (uint32_t)i);
        if (!strcmp(ms_snapshot_string(s, f->filename), "<eval_with_key>.3"))
            CHECK_TRUE((ms_frame_classify(s, (uint32_t)i).roles & MS_FRAME_ROLE_FORWARD) != 0);
    }
    /* Sites skip compiled and torch frames, as for eager code; a library frame may be
     * the site (its line allocates), as before. */
    const char *want[] = {"me/train.py:42 main", "transformers/modeling_utils.py:7 wrapper",
                          "me/train.py:50 step"};
    const ms_trace *tr = ms_snapshot_trace(s, 0);
    CHECK_EQ_INT(tr->n, 3);
    for (size_t i = 0; i < tr->n && i < 3; i++) {
        char buf[256];
        ms_site_format(s, ms_stack_site(s, tr->stack[i]), buf, sizeof buf);
        CHECK_EQ_STR(buf, want[i]);
    }
    ms_snapshot_free(s);
}

int main(void)
{
    size_t n = check_each_snapshot(one_file, NULL);
    CHECK_TRUE(n >= 30);
    check_compiled_kinds();
    return check_finish("test_run_agree");
}
