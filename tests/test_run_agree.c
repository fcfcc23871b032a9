/* One run, many views: for every testdata snapshot, one ms_run is built and each view's
 * own code path (summary's one-pass categories, the categories analysis, the leak
 * finder, the OOM analysis, render's chart model, the comparison profile) is asked for
 * the same facts, which must agree: iteration counts and bounds, phase counts and
 * ranges, annotation ranges, frame kinds, categories at the peak and leak bytes. The
 * figures `summary --json`, `diff --json` and `ranks --json` print are checked against
 * the run too (MEMSNAP_BIN). */
#include "../render/chart_impl.h"
#include "check.h"
#include "memsnap/compare.h"
#include "memsnap/run.h"
#include "analysis/timeline_internal.h"

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

static void check_phases(const char *name, ms_run *run,
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
    msr_chart_source src;
    if (msr_chart_source_from_run(&src, run, name, MSR_CHART_RUN_STACKED | MSR_CHART_RUN_PHASES,
                                 &err)) {
        check_fail("%s: chart source: %s", name, err.message);
        return;
    }
    CHECK_TRUE_IN(name, src.ranges == ar);
    CHECK_TRUE_IN(name, src.phases == (msr_chart_phases_needed(ar, nar) ? ph : NULL));
    msr__range *rr = NULL;
    size_t nrr = 0;
    if (msr__build_ranges(&src, &rr, &nrr, &err) == 0) {
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
    msr_chart_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.by = MSR_CHART_BY_PHASE;
    msr_chart *ch = NULL;
    int rc = msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 1200, 600}, &err);
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
    msr_chart_free(ch);
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
     * or a library is on it, but for a function torch.compile generated (issue 33: the
     * compiled function is the site, as the eager line would be). The standard
     * library's wrappers (contextlib's `inner`) are nobody's line: an autotuning thread
     * whose only such frame is one gets torch's frame as its site. */
    size_t wrong = 0;
    for (size_t sid = 0; sid < ms_snapshot_stack_count(s); sid++) {
        size_t nf = 0;
        const uint32_t *fr = ms_snapshot_stack(s, (uint32_t)sid, &nf);
        bool user = false;
        for (size_t k = 0; k < nf; k++)
            user = user || (fr[k] < n && !ms_frame_is_stdlib(s, fr[k]) &&
                            (fc[fr[k]].kind == MS_FRAME_USER ||
                             fc[fr[k]].kind == MS_FRAME_LIBRARY));
        uint32_t site = ms_stack_site(s, (uint32_t)sid);
        if (user && (site >= n ||
                     (ms_frame_kind_is_internal(fc[site].kind) &&
                      !(fc[site].roles & MS_FRAME_ROLE_GENERATED)) ||
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

/* The leak totals counted here from the run's findings, not by ms_leak_report_totals. */
static ms_leak_totals count_leaks(const ms_leak_report *lr)
{
    ms_leak_totals lt = {0, 0, 0.0};
    for (size_t k = 0; k < lr->n; k++) {
        if (lr->items[k].kind != MS_LEAK_LEAK)
            continue;
        lt.findings++;
        lt.bytes += lr->items[k].bytes;
        lt.growth_bytes += lr->items[k].growth_bytes;
    }
    return lt;
}

static void same_leaks(const char *ctx, const char *what, const ms_leak_totals *a,
                       const ms_leak_totals *b)
{
    char where[256];
    snprintf(where, sizeof where, "%s %s leaks", ctx, what);
    CHECK_EQ_INT_IN(where, (int64_t)a->findings, (int64_t)b->findings);
    CHECK_EQ_INT_IN(where, (int64_t)a->bytes, (int64_t)b->bytes);
    CHECK_NEAR_IN(where, a->growth_bytes, b->growth_bytes, 0.5);
}

static void same_place(const char *ctx, const char *what, const ms_peak_place *a,
                       const ms_peak_place *b)
{
    char where[256];
    snprintf(where, sizeof where, "%s %s place", ctx, what);
    CHECK_EQ_INT_IN(where, (int64_t)a->known, (int64_t)b->known);
    CHECK_EQ_INT_IN(where, (int64_t)a->iteration, (int64_t)b->iteration);
    CHECK_EQ_INT_IN(where, (int64_t)a->iterations, (int64_t)b->iterations);
    CHECK_EQ_INT_IN(where, (int64_t)a->unfinished, (int64_t)b->unfinished);
    CHECK_EQ_INT_IN(where, (int64_t)a->phase, (int64_t)b->phase);
}

/* The place of the peak is where the run's iterations and phases put the peak event. */
static void check_place_is_the_runs(const char *name, ms_run *run, const ms_timeline *t,
                                    const ms_peak_place *pl)
{
    ms_error err;
    const ms_iterations *it = NULL;
    const ms_phases *ph = NULL;
    if (ms_run_iterations(&it, run, &err)) {
        check_fail("%s: iterations: %s", name, err.message);
        return;
    }
    CHECK_EQ_INT_IN(name, (int64_t)pl->iterations, (int64_t)it->n);
    int64_t e = t->peak_event;
    size_t holds = SIZE_MAX;
    for (size_t k = 0; k < it->n + it->n_unfinished && e >= 0; k++)
        if (e >= it->items[k].start_event && e < it->items[k].end_event)
            holds = k;
    CHECK_EQ_INT_IN(name, (int64_t)pl->iteration, holds == SIZE_MAX ? 0 : (int64_t)holds + 1);
    CHECK_EQ_INT_IN(name, (int64_t)pl->unfinished, (int64_t)(holds != SIZE_MAX && holds >= it->n));
    if (ms_run_phases(&ph, run, &err) == 0 && e >= 0) {
        size_t at = ms_phases_at_event(ph, e);
        CHECK_EQ_INT_IN(name, (int64_t)pl->phase,
                        at < ph->n ? (int64_t)ph->items[at].kind : (int64_t)-1);
    }
}

/* summary's own run (the lean timeline it asks for) and the comparison profile, read
 * from the full run and from a run of their own: the same iterations, peak, categories
 * at the peak, place, sites and leak totals. */
static void check_summary_and_profile(const char *name, ms_run *run, const ms_snapshot *s,
                                      int device, const ms_timeline *t)
{
    ms_error err;
    const ms_iterations *it = NULL;
    const ms_categories *c = NULL;
    ms_peak_place pl;
    if (ms_run_iterations(&it, run, &err) || ms_run_categories(&c, run, &err) ||
        ms_run_peak_place(&pl, run, &err)) {
        check_fail("%s: run: %s", name, err.message);
        return;
    }
    check_place_is_the_runs(name, run, t, &pl);
    const ms_leak_report *lr = NULL;
    bool leaks = ms_run_leaks(&lr, run, &err) == 0;
    ms_leak_totals want = {0, 0, 0.0}, got;
    if (leaks) {
        want = count_leaks(lr);
        CHECK_EQ_INT_IN(name, ms_run_leak_totals(&got, run, &err), 0);
        same_leaks(name, "ms_run_leak_totals", &want, &got);
    }

    ms_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.timeline_flags = MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE;
    ms_run *lean = NULL;
    const ms_timeline *lt = NULL;
    if (ms_run_open(&lean, s, device, &ro, &err) || ms_run_timeline(&lt, lean, &err)) {
        check_fail("%s: summary's run: %s", name, err.message);
        ms_run_free(lean);
        return;
    }
    CHECK_EQ_INT_IN(name, lt->peak_bytes, t->peak_bytes);
    CHECK_EQ_INT_IN(name, lt->peak_event, t->peak_event);
    const ms_iterations *lit = NULL;
    if (ms_run_iterations(&lit, lean, &err) == 0)
        same_iterations(name, "summary's run", it, lit);
    int64_t by[MS_CAT_COUNT];
    const ms_category_point *pk = ms_categories_peak(c);
    if (ms_run_peak_categories(by, lean, &err) == 0 && pk) {
        for (int k = 0; k < MS_CAT_COUNT; k++) {
            char where[256];
            snprintf(where, sizeof where, "%s summary's peak %s", name,
                     ms_category_name((ms_category)k));
            CHECK_EQ_INT_IN(where, by[k], pk->by[k]);
        }
    }
    ms_peak_place lpl;
    if (ms_run_peak_place(&lpl, lean, &err) == 0)
        same_place(name, "summary's run", &pl, &lpl);
    /* The totals come from the lives a leak can hold, without the list of every life;
     * the whole report needs that list: the run builds a fuller timeline, and the first
     * stays valid. */
    if (leaks) {
        CHECK_EQ_INT_IN(name, ms_run_leak_totals(&got, lean, &err), 0);
        same_leaks(name, "summary's run", &want, &got);
        const ms_leak_report *report = NULL;
        CHECK_EQ_INT_IN(name, ms_run_leaks(&report, lean, &err), 0);
        const ms_timeline *full = NULL;
        if (ms_run_timeline(&full, lean, &err) == 0) {
            CHECK_TRUE_IN(name, full->allocs != NULL || full->n_allocs == 0);
            CHECK_EQ_INT_IN(name, (int64_t)full->n_allocs, (int64_t)t->n_allocs);
        }
        CHECK_EQ_INT_IN(name, lt->peak_bytes, t->peak_bytes);
    }
    const ms_site_total *sites = NULL;
    size_t n_sites = 0;
    const ms_alloc *alive = NULL;
    size_t n_alive = 0;
    uint64_t alive_bytes = 0, site_bytes = 0;
    if (ms_run_peak_sites(&sites, &n_sites, lean, &err) == 0 &&
        ms_run_peak_alive(&alive, &n_alive, lean, &err) == 0) {
        for (size_t i = 0; i < n_alive; i++)
            alive_bytes += alive[i].size;
        for (size_t i = 0; i < n_sites; i++)
            site_bytes += sites[i].bytes;
        CHECK_EQ_INT_IN(name, (int64_t)site_bytes, (int64_t)alive_bytes);
    }

    /* diff's and ranks' profile, read from the run and from a run of its own. */
    ms_profile *p = NULL, *q = NULL;
    if (ms_profile_from_run(&p, run, name, &err) ||
        ms_profile_from_snapshot(&q, s, name, device, &err)) {
        check_fail("%s: profile: %s", name, err.message);
    } else {
        CHECK_EQ_INT_IN(name, p->peak_bytes, t->peak_bytes);
        CHECK_EQ_INT_IN(name, q->peak_event, t->peak_event);
        CHECK_EQ_INT_IN(name, (int64_t)p->leaks_known, (int64_t)leaks);
        CHECK_EQ_INT_IN(name, (int64_t)q->leaks_known, (int64_t)leaks);
        if (leaks) {
            same_leaks(name, "profile", &want, &p->leaks);
            same_leaks(name, "own profile", &want, &q->leaks);
            same_place(name, "profile", &pl, &p->peak_place);
            same_place(name, "own profile", &pl, &q->peak_place);
        }
        CHECK_EQ_INT_IN(name, (int64_t)p->n_sites[MS_SITES_AT_PEAK], (int64_t)n_sites);
        CHECK_EQ_INT_IN(name, (int64_t)q->n_sites[MS_SITES_AT_PEAK], (int64_t)n_sites);
        uint64_t pb = 0;
        for (size_t i = 0; i < q->n_sites[MS_SITES_AT_PEAK]; i++)
            pb += q->sites[MS_SITES_AT_PEAK][i].bytes;
        CHECK_EQ_INT_IN(name, (int64_t)pb, (int64_t)alive_bytes);
    }
    ms_profile_free(p);
    ms_profile_free(q);
    ms_run_free(lean);
}

/* ------------------------------------------------------------------ the printed figures */

static double jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1e300;
}

static cJSON *run_json(const char *name, const char *bin, const char *args, const char *path)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' '%s' 2>/dev/null", bin, args, path, path);
    /* summary takes one file: the second is only for diff and ranks */
    if (!strncmp(args, "summary", 7))
        snprintf(cmd, sizeof cmd, "'%s' %s '%s' 2>/dev/null", bin, args, path);
    int st = 0;
    char *out = check_run(cmd, &st);
    cJSON *doc = out ? cJSON_Parse(out) : NULL;
    free(out);
    if (!doc || st != 0)
        check_fail("%s: %s: exit %d, %s", name, args, st, doc ? "JSON" : "no JSON");
    return doc;
}

/* One device object of a `summary --json` files[] entry against the run. */
static void check_device_json(const char *name, const char *what, const cJSON *dev,
                              const ms_timeline *t, const ms_iterations *it,
                              const ms_peak_place *pl, const int64_t *peak_cats,
                              const ms_leak_totals *lk, bool leaks)
{
    char where[256];
    snprintf(where, sizeof where, "%s %s", name, what);
    if (!dev) {
        check_fail("%s: no device", where);
        return;
    }
    const cJSON *peak = cJSON_GetObjectItemCaseSensitive(dev, "peak");
    CHECK_EQ_INT_IN(where, (int64_t)jnum(peak, "bytes"), t->peak_bytes);
    CHECK_EQ_INT_IN(where, (int64_t)jnum(peak, "event"), t->peak_event);
    const cJSON *iters = cJSON_GetObjectItemCaseSensitive(dev, "iterations");
    CHECK_EQ_INT_IN(where, (int64_t)jnum(iters, "count"), (int64_t)it->n);
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(iters, "items");
    CHECK_EQ_INT_IN(where, (int64_t)cJSON_GetArraySize(items), (int64_t)it->n);
    for (size_t k = 0; k < it->n && (int)k < cJSON_GetArraySize(items); k++) {
        const cJSON *x = cJSON_GetArrayItem(items, (int)k);
        CHECK_EQ_INT_IN(where, (int64_t)jnum(x, "start_event"), it->items[k].start_event);
        CHECK_EQ_INT_IN(where, (int64_t)jnum(x, "end_event"), it->items[k].end_event);
        CHECK_EQ_INT_IN(where, (int64_t)jnum(x, "peak_bytes"), it->items[k].peak_bytes);
    }
    const cJSON *place = cJSON_GetObjectItemCaseSensitive(peak, "place");
    const cJSON *pit = cJSON_GetObjectItemCaseSensitive(place, "iteration");
    CHECK_EQ_INT_IN(where, cJSON_IsNumber(pit) ? (int64_t)pit->valuedouble : 0,
                    (int64_t)pl->iteration);
    CHECK_EQ_INT_IN(where, (int64_t)jnum(place, "iterations"), (int64_t)pl->iterations);
    const cJSON *pph = cJSON_GetObjectItemCaseSensitive(place, "phase");
    CHECK_EQ_STR_IN(where, cJSON_IsString(pph) ? pph->valuestring : "(none)",
                    pl->phase >= 0 ? ms_phase_kind_name((ms_phase_kind)pl->phase) : "(none)");
    const cJSON *cats = cJSON_GetObjectItemCaseSensitive(peak, "categories");
    for (int k = 0; peak_cats && k < MS_CAT_COUNT; k++)
        CHECK_EQ_INT_IN(where, (int64_t)jnum(cats, ms_category_name((ms_category)k)),
                        peak_cats[k]);
    const cJSON *jl = cJSON_GetObjectItemCaseSensitive(dev, "leaks");
    CHECK_EQ_INT_IN(where, (int64_t)(jl != NULL), (int64_t)leaks);
    if (leaks && jl) {
        CHECK_EQ_INT_IN(where, (int64_t)jnum(jl, "findings"), (int64_t)lk->findings);
        CHECK_EQ_INT_IN(where, (int64_t)jnum(jl, "bytes"), (int64_t)lk->bytes);
        CHECK_NEAR_IN(where, jnum(jl, "growth_per_iteration_bytes"), lk->growth_bytes, 0.5);
    }
}

static const cJSON *file_device(const cJSON *doc, int file)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(doc, "files");
    const cJSON *f = cJSON_GetArrayItem(files, file);
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(f, "devices"), 0);
}

/* What summary, diff and ranks print for this file and device is the run's. */
static void check_printed(const char *name, const char *path, ms_run *run, int device,
                          const ms_timeline *t)
{
    const char *bin = getenv("MEMSNAP_BIN");
    if (!bin) {
        check_fail("MEMSNAP_BIN is not set (ctest sets it)");
        return;
    }
    ms_error err;
    const ms_iterations *it = NULL;
    ms_peak_place pl;
    int64_t cats[MS_CAT_COUNT];
    if (ms_run_iterations(&it, run, &err) || ms_run_peak_place(&pl, run, &err) ||
        ms_run_peak_categories(cats, run, &err)) {
        check_fail("%s: run: %s", name, err.message);
        return;
    }
    const ms_leak_report *lr = NULL;
    bool leaks = ms_run_leaks(&lr, run, &err) == 0;
    ms_leak_totals lk = leaks ? count_leaks(lr) : (ms_leak_totals){0, 0, 0.0};

    char args[128];
    snprintf(args, sizeof args, "summary --json --device %d", device);
    cJSON *doc = run_json(name, bin, args, path);
    if (doc)
        check_device_json(name, "summary", file_device(doc, 0), t, it, &pl, cats, &lk, leaks);
    cJSON_Delete(doc);

    snprintf(args, sizeof args, "diff --json --device %d", device);
    doc = run_json(name, bin, args, path);
    if (doc) {
        for (int f = 0; f < 2; f++)
            check_device_json(name, "diff files[]", file_device(doc, f), t, it, &pl, cats, &lk,
                              leaks);
        /* The pair's own figures come from the profiles: the same run's. */
        const cJSON *pair = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "pairs"), 0);
        const cJSON *pk = cJSON_GetObjectItemCaseSensitive(pair, "leaks");
        CHECK_EQ_INT_IN(name, (int64_t)(pk != NULL), (int64_t)leaks);
        if (pk && leaks) {
            CHECK_EQ_INT_IN(name, (int64_t)jnum(pk, "a_bytes"), (int64_t)lk.bytes);
            CHECK_EQ_INT_IN(name, (int64_t)jnum(pk, "b_findings"), (int64_t)lk.findings);
        }
        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(pair, "peak_place");
        const cJSON *pa = cJSON_GetObjectItemCaseSensitive(pp, "a");
        if (leaks) {
            const cJSON *pit = cJSON_GetObjectItemCaseSensitive(pa, "iteration");
            CHECK_EQ_INT_IN(name, cJSON_IsNumber(pit) ? (int64_t)pit->valuedouble : 0,
                            (int64_t)pl.iteration);
            CHECK_EQ_INT_IN(name, (int64_t)jnum(pa, "iterations"), (int64_t)pl.iterations);
        }
    }
    cJSON_Delete(doc);

    snprintf(args, sizeof args, "ranks --json --device %d", device);
    doc = run_json(name, bin, args, path);
    if (doc) {
        check_device_json(name, "ranks files[]", file_device(doc, 1), t, it, &pl, cats, &lk,
                          leaks);
        const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "ranks"), 0);
        const cJSON *rl = cJSON_GetObjectItemCaseSensitive(r0, "leaks");
        CHECK_EQ_INT_IN(name, (int64_t)jnum(r0, "peak_bytes"), t->peak_bytes);
        CHECK_EQ_INT_IN(name, (int64_t)(cJSON_IsObject(rl)), (int64_t)leaks);
        if (leaks && rl)
            CHECK_EQ_INT_IN(name, (int64_t)jnum(rl, "bytes"), (int64_t)lk.bytes);
    }
    cJSON_Delete(doc);
}

static int by_life(const void *pa, const void *pb)
{
    const ms_alloc *a = pa, *b = pb;
    int64_t x[5] = {a->alloc_event, a->free_event, (int64_t)a->addr, (int64_t)a->size, a->stack};
    int64_t y[5] = {b->alloc_event, b->free_event, (int64_t)b->addr, (int64_t)b->size, b->stack};
    for (int i = 0; i < 5; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return (a->free_requested_event > b->free_requested_event) -
           (a->free_requested_event < b->free_requested_event);
}

/* The lives alive at an event read from a timeline's allocs (what the peak's sites and
 * categories and the profile's end sites add up) are the replay's, in any order. */
static void check_alive_summed(const char *name, const ms_snapshot *s, const ms_timeline *t)
{
    int64_t n = (int64_t)t->n_events;
    int64_t at[] = {-1, t->peak_event, n / 3, n / 2, n - 2, n - 1};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        if (at[k] < -1 || at[k] >= n)
            continue;
        ms_alloc *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        ms_error err;
        char where[300];
        snprintf(where, sizeof where, "%s alive at %lld", name, (long long)at[k]);
        if (ms_timeline_alive_at(&a, &na, s, t, at[k], &err) ||
            ms__timeline_alive_summed(&b, &nb, s, t, at[k], &err)) {
            check_fail("%s: %s", where, err.message);
        } else {
            CHECK_EQ_INT_IN(where, (int64_t)nb, (int64_t)na);
            if (na) /* qsort's pointer must be valid even for no elements */
                qsort(a, na, sizeof *a, by_life);
            if (nb)
                qsort(b, nb, sizeof *b, by_life);
            size_t same = 0;
            for (size_t i = 0; i < na && na == nb; i++)
                same += by_life(&a[i], &b[i]) == 0 && a[i].stream == b[i].stream;
            CHECK_EQ_INT_IN(where, (int64_t)same, (int64_t)na);
        }
        free(a);
        free(b);
    }
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
        check_phases(name, run, rt ? rt : t);
        check_frames(name, run, s);
        check_categories_and_leaks(name, run, s, device, rt ? rt : t);
        check_summary_and_profile(name, run, s, device, rt ? rt : t);
        check_printed(name, path, run, device, rt ? rt : t);
        if (rt)
            check_alive_summed(name, s, rt);
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
    /* Code torch.compile wrote is the site of what it allocates, named by what it is
     * (issue 33), and the user's line is the one that called the compiled model; torch's
     * frames are skipped as for eager code. */
    const char *want[] = {"compiled call (inductor cabxyz)", "compiled forward (<eval_with_key>.3)",
                          "me/train.py:50 step"};
    const char *want_user[] = {"me/train.py:42 main", "me/train.py:42 main", "me/train.py:50 step"};
    const ms_trace *tr = ms_snapshot_trace(s, 0);
    CHECK_EQ_INT(tr->n, 3);
    for (size_t i = 0; i < tr->n && i < 3; i++) {
        char buf[256];
        ms_site_format(s, ms_stack_site(s, tr->stack[i]), buf, sizeof buf);
        CHECK_EQ_STR(buf, want[i]);
        ms_site_format(s, ms_stack_user_frame(s, tr->stack[i]), buf, sizeof buf);
        CHECK_EQ_STR(buf, want_user[i]);
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
