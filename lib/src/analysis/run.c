/* The run model: one object per file and device from which every view reads its facts.
 * Each getter builds its fact on first use from the facts below it (timeline ->
 * iterations -> phases, categories, leaks -> OOM analyses), so a command pays only for
 * what it asks and two views never hold two computations of one fact. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "run_internal.h"

struct ms_run {
    const ms_snapshot *s;
    int device;
    ms_run_options opt;
    ms_timeline *tl;
    ms_iterations *it;       /* owned unless the leak report holds it */
    const ms_iterations *it_view;
    ms_annotation_range *ranges;
    size_t n_ranges;
    bool have_ranges;
    ms_phases *phases;
    ms_frame_class *classes;
    size_t n_classes;
    ms_categories *cats;
    ms_leak_report *leaks;
    ms_oom_report *ooms;
};

int ms_run_open(ms_run **out, const ms_snapshot *s, int device, const ms_run_options *opt,
                ms_error *err)
{
    ms_error_clear(err);
    if (!out)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no output pointer");
    *out = NULL;
    if (!s || device < 0 || device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no device %d in this snapshot", device);
    ms_run *r = calloc(1, sizeof *r);
    if (!r)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for a run");
    r->s = s;
    r->device = device;
    if (opt)
        r->opt = *opt;
    *out = r;
    return 0;
}

void ms_run_free(ms_run *r)
{
    if (!r)
        return;
    ms_oom_report_free(r->ooms);
    ms_categories_free(r->cats);
    ms_leak_report_free(r->leaks);
    ms_iterations_free(r->it);
    ms_phases_free(r->phases);
    free(r->ranges);
    free(r->classes);
    ms_timeline_free(r->tl);
    free(r);
}

const ms_snapshot *ms_run_snapshot(const ms_run *r)
{
    return r ? r->s : NULL;
}

int ms_run_device(const ms_run *r)
{
    return r ? r->device : -1;
}

int ms_run_timeline(const ms_timeline **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->tl) {
        unsigned flags = r->opt.timeline_flags ? r->opt.timeline_flags
                                               : MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS;
        int rc = ms_timeline_build(&r->tl, r->s, r->device, flags, err);
        if (rc)
            return rc;
    }
    *out = r->tl;
    return 0;
}

int ms_run_iterations(const ms_iterations **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->it_view) {
        /* The leak finder finds them with the same options; whichever comes first is
         * the run's. */
        if (r->leaks) {
            r->it_view = r->leaks->iterations;
        } else {
            const ms_timeline *t;
            int rc = ms_run_timeline(&t, r, err);
            if (!rc)
                rc = ms_iterations_find(&r->it, r->s, r->device, t, &r->opt.iter, err);
            if (rc)
                return rc;
            r->it_view = r->it;
        }
    }
    *out = r->it_view;
    return 0;
}

int ms_run_annotation_ranges(const ms_annotation_range **out, size_t *n_out, ms_run *r,
                             ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (!r->have_ranges) {
        int rc = ms_annotation_ranges(&r->ranges, &r->n_ranges, r->s, r->device, err);
        if (rc)
            return rc;
        r->have_ranges = true;
    }
    *out = r->ranges;
    *n_out = r->n_ranges;
    return 0;
}

int ms_run_phases(const ms_phases **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->phases) {
        const ms_timeline *t;
        const ms_iterations *it;
        int rc = ms_run_timeline(&t, r, err);
        if (!rc)
            rc = ms_run_iterations(&it, r, err);
        if (!rc)
            rc = ms_phases_find(&r->phases, r->s, t, it, err);
        if (rc)
            return rc;
    }
    *out = r->phases;
    return 0;
}

int ms_run_frame_classes(const ms_frame_class **out, size_t *n_out, ms_run *r, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (!r->classes) {
        size_t n = ms_snapshot_frame_count(r->s);
        r->classes = malloc((n ? n : 1) * sizeof *r->classes);
        if (!r->classes)
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for %zu frames", n);
        for (size_t i = 0; i < n; i++)
            r->classes[i] = ms_frame_classify(r->s, (uint32_t)i);
        r->n_classes = n;
    }
    *out = r->classes;
    *n_out = r->n_classes;
    return 0;
}

int ms_run_categories(const ms_categories **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->cats) {
        const ms_timeline *t;
        const ms_iterations *it;
        int rc = ms_run_timeline(&t, r, err);
        if (!rc)
            rc = ms_run_iterations(&it, r, err);
        if (!rc)
            rc = ms_categories_build(&r->cats, r->s, r->device, t, it, err);
        if (rc)
            return rc;
    }
    *out = r->cats;
    return 0;
}

int ms_run_leaks(const ms_leak_report **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->leaks) {
        const ms_timeline *t;
        int rc = ms_run_timeline(&t, r, err);
        ms_leak_options lo;
        memset(&lo, 0, sizeof lo);
        lo.iter = r->opt.iter;
        lo.min_bytes = r->opt.leak_min_bytes;
        if (!rc)
            rc = ms_leak_report_build(&r->leaks, r->s, r->device, t, &lo, err);
        if (rc)
            return rc;
        if (!r->it_view)
            r->it_view = r->leaks->iterations;
    }
    *out = r->leaks;
    return 0;
}

int ms_run_ooms(const ms_oom_report **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->ooms) {
        /* A trace without OOM events needs none of the rest, not even a timeline. */
        const ms_trace *tr = ms_snapshot_trace(r->s, r->device);
        bool any = false;
        for (size_t i = 0; i < tr->n && !any; i++)
            any = tr->action[i] == MS_ACT_OOM;
        const ms_timeline *t = NULL;
        int rc = any ? ms_run_timeline(&t, r, err) : 0;
        if (rc)
            return rc;
        const ms_leak_report *lr = NULL;
        const ms_categories *cats = NULL;
        ms_error soft;
        /* Leaks and categories are context for an OOM: one that cannot be found still
         * leaves the allocator state and a cause. */
        if (any && ms_run_leaks(&lr, r, &soft))
            lr = NULL;
        if (any && ms_run_categories(&cats, r, &soft))
            cats = NULL;
        ms_oom_options oo = {r->opt.oom_top_sites, NULL, NULL};
        rc = ms__oom_analyze_with(&r->ooms, r->s, r->device, t, &oo, lr, cats, err);
        if (rc)
            return rc;
    }
    *out = r->ooms;
    return 0;
}
