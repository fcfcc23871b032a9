/* The run model: one object per file and device from which every view reads its facts.
 * Each getter builds its fact on first use from the facts below it (timeline ->
 * iterations -> phases, categories, leaks -> OOM analyses), so a command pays only for
 * what it asks and two views never hold two computations of one fact. */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "heap_owner.h"
#include "internal.h"
#include "iter_internal.h"
#include "run_internal.h"
#include "cat_internal.h"
#include "phases_internal.h"
#include "timeline_internal.h"

struct ms_run {
    const ms_snapshot *s;
    int device;
    ms_run_options opt;
    ms_timeline *tl;
    unsigned tl_flags;       /* what tl was built with */
    ms_iterations *it;       /* owned until the leak report takes it over (then NULL) */
    const ms_iterations *it_view; /* the run's iterations, wherever they are held */
    ms_idle *idle;
    ms_annotation_range *ranges;
    size_t n_ranges;
    bool have_ranges;
    ms_phases *phases;
    ms_shape *shape;
    ms_frame_class *classes;
    size_t n_classes;
    ms_categories *cats;
    ms_leak_report *leaks;
    ms_oom_report *ooms;
    ms_alloc *peak_alive;    /* read from tl's lives or a replay; NULL when tl->peak_alive serves */
    size_t n_peak_alive;
    bool have_peak_alive;
    ms_site_total *peak_sites;
    size_t n_peak_sites;
    bool have_peak_sites;
    int64_t peak_cats[MS_CAT_COUNT];
    bool have_peak_cats;
    bool peak_phases_tried;  /* the categories' pass looked for the phases */
    ms_heap_frag *frag;
    ms_free_in_reserved peak_free;
    bool have_peak_free;
    ms__heap_owner owner;    /* blocks to allocations, once the categories are built */
    bool have_owner;
    ms_leak_totals leak_totals; /* without a leak report (ms__leak_totals_lean) */
    bool have_leak_totals;
    ms_leak_counts leak_counts; /* of `leaks`, counted once */
    bool have_leak_counts;
};

/* How many runs were opened and timelines built in this process: tests prove with them
 * that a command opens each device once (ms__run_stats). Atomic, since a report draws
 * on a second thread. */
static _Atomic size_t n_runs_opened, n_timelines_built;

void ms__run_stats(ms__run_counts *out)
{
    out->runs_opened = n_runs_opened;
    out->timelines_built = n_timelines_built;
    out->annotations_paired = ms__annotation_pairings();
}

/* Builds with *flags, less what the lives make redundant, and leaves in *flags what the
 * timeline holds (the run's tl_flags). */
static int build_timeline(ms_timeline **out, const ms_run *r, unsigned *flags, ms_error *err)
{
    n_timelines_built++;
    /* With every life at hand the set alive at the peak is read from them when it is
     * asked for (ms_run_peak_alive): collected as well, it was a second copy of each
     * life alive then, 14 MB beside the lives on a file of 300,000 live allocations. */
    if (*flags & MS_TIMELINE_ALLOCS)
        *flags &= ~(unsigned)MS_TIMELINE_PEAK_ALIVE;
    return ms_timeline_build(out, r->s, r->device, *flags, err);
}

static unsigned default_flags(const ms_run *r)
{
    return r->opt.timeline_flags ? r->opt.timeline_flags : MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS;
}

static bool has_flags(unsigned have, unsigned need)
{
    if (have & MS_TIMELINE_CURVES)
        have |= MS_TIMELINE_ACTIVE;
    return (have & need) == need;
}

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
    n_runs_opened++;
    *out = r;
    return 0;
}

void ms_run_free(ms_run *r)
{
    if (!r)
        return;
    ms_oom_report_free(r->ooms);
    ms_heap_frag_free(r->frag);
    if (r->have_owner)
        ms__heap_owner_free(&r->owner);
    ms_categories_free(r->cats);
    ms_leak_report_free(r->leaks);
    ms_iterations_free(r->it);
    ms_idle_free(r->idle);
    ms_phases_free(r->phases);
    ms_shape_free(r->shape);
    ms_free(r->peak_sites);
    ms_timeline_free(r->tl);
    MS__FREE_ALL(r->ranges, r->classes, r->peak_alive, r);
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
        unsigned flags = default_flags(r);
        int rc = build_timeline(&r->tl, r, &flags, err);
        if (rc)
            return rc;
        r->tl_flags = flags;
    }
    *out = r->tl;
    return 0;
}

/* Everything a getter of the run can read from its timeline. */
#define RUN_ALL_FLAGS (MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS)

/* Moves into `to` the arrays of `from` it lacks (both timelines of one trace: the same
 * figures, the allocations in the same order) and frees the rest of `from`. */
static void timeline_extend(ms_timeline *to, ms_timeline *from)
{
    if (!to->active) {
        to->active = from->active;
        from->active = NULL;
    }
    if (!to->reserved) {
        to->reserved = from->reserved;
        from->reserved = NULL;
    }
    if (!to->allocs) {
        to->allocs = from->allocs;
        to->n_allocs = from->n_allocs;
        from->allocs = NULL;
    }
    ms_timeline_free(from);
}

int ms__run_timeline_with(const ms_timeline **out, ms_run *r, unsigned need, ms_error *err)
{
    *out = NULL;
    if (!r->tl && !has_flags(default_flags(r), need)) {
        /* Nothing built yet: one timeline with both the caller's flags and these. */
        unsigned flags = default_flags(r) | need;
        int rc = build_timeline(&r->tl, r, &flags, err);
        if (rc)
            return rc;
        r->tl_flags = flags;
    }
    const ms_timeline *t;
    int rc = ms_run_timeline(&t, r, err);
    if (rc || has_flags(r->tl_flags, need)) {
        *out = rc ? NULL : t;
        return rc;
    }
    /* A fact that needs more than the run's timeline holds: the trace is simulated once
     * more for everything any getter reads, so a run never simulates it a third time, and
     * the arrays it lacked join the run's one timeline, which callers may hold. The set
     * alive at the peak stays the one the first pass collected. */
    unsigned flags = (r->tl_flags | need | RUN_ALL_FLAGS) & ~(unsigned)MS_TIMELINE_PEAK_ALIVE;
    ms_timeline *more = NULL;
    rc = build_timeline(&more, r, &flags, err);
    if (rc)
        return rc;
    timeline_extend(r->tl, more);
    r->tl_flags |= flags;
    *out = r->tl;
    return 0;
}

static int run_ann(ms__ann *out, ms_run *r, ms_error *err);

int ms_run_iterations(const ms_iterations **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->it_view) {
        /* Found once: the leak report, built later, takes these over (ms_run_leaks). */
        const ms_timeline *t;
        ms__ann ann;
        int rc = ms_run_timeline(&t, r, err);
        if (!rc)
            rc = run_ann(&ann, r, err);
        if (!rc)
            rc = ms__iterations_with(&r->it, r->s, t, &ann, &r->opt.iter, err);
        if (rc)
            return rc;
        r->it_view = r->it;
    }
    *out = r->it_view;
    return 0;
}

int ms_run_idle(const ms_idle **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->idle) {
        const ms_iterations *it;
        const ms_shape *sh = NULL;
        int rc = ms_run_iterations(&it, r, err);
        if (!rc)
            rc = ms_run_shape(&sh, r, err);
        if (!rc)
            rc = ms_idle_find(&r->idle, ms_snapshot_trace(r->s, r->device), it, sh, err);
        if (rc)
            return rc;
    }
    *out = r->idle;
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

/* The run's annotation ranges as the analyses borrow them. */
static int run_ann(ms__ann *out, ms_run *r, ms_error *err)
{
    const ms_annotation_range *ar;
    size_t n;
    int rc = ms_run_annotation_ranges(&ar, &n, r, err);
    *out = (ms__ann){ar, n};
    return rc;
}

int ms_run_phases(const ms_phases **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->phases) {
        const ms_timeline *t;
        const ms_iterations *it;
        ms__ann ann;
        int rc = ms_run_timeline(&t, r, err);
        if (!rc)
            rc = ms_run_iterations(&it, r, err);
        if (!rc)
            rc = run_ann(&ann, r, err);
        if (!rc)
            rc = ms__phases_find_with(&r->phases, r->s, t, it, &ann, err);
        if (rc)
            return rc;
    }
    *out = r->phases;
    return 0;
}

int ms_run_shape(const ms_shape **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->shape) {
        const ms_timeline *t;
        const ms_iterations *it;
        ms__ann ann;
        const ms_phases *ph;
        /* The active curve gives the compile phase its peak. */
        int rc = ms__run_timeline_with(&t, r, MS_TIMELINE_ACTIVE, err);
        if (!rc)
            rc = ms_run_iterations(&it, r, err);
        if (!rc)
            rc = ms_run_phases(&ph, r, err);
        if (!rc)
            rc = run_ann(&ann, r, err);
        if (!rc)
            rc = ms__shape_find_with(&r->shape, r->s, t, it, ph, &ann, err);
        if (rc)
            return rc;
    }
    *out = r->shape;
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
        ms__ann ann;
        int rc = ms__run_timeline_with(&t, r, MS_TIMELINE_ALLOCS, err);
        if (!rc)
            rc = ms_run_iterations(&it, r, err);
        if (!rc)
            rc = run_ann(&ann, r, err);
        if (!rc)
            rc = ms__categories_build_with(&r->cats, r->s, t, it, &ann, err);
        if (rc)
            return rc;
        /* The categorisation cut the trace into phases: the run's, unless it has them. */
        ms_error soft;
        if (!r->phases && ms__phases_of_categories(&r->phases, r->cats, &soft))
            r->phases = NULL;
    }
    *out = r->cats;
    return 0;
}

int ms_run_leaks(const ms_leak_report **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->leaks) {
        const ms_timeline *t;
        int rc = ms__run_timeline_with(&t, r, MS_TIMELINE_ALLOCS | MS_TIMELINE_ACTIVE, err);
        ms_leak_options lo;
        memset(&lo, 0, sizeof lo);
        lo.iter = r->opt.iter;
        lo.min_bytes = r->opt.leak_min_bytes;
        /* The report finds no iterations of its own: it takes over the run's (r->it,
         * which ms_run_iterations has made by now; it_view keeps pointing at them). */
        const ms_iterations *it;
        if (!rc)
            rc = ms_run_iterations(&it, r, err);
        if (!rc)
            rc = ms__leak_report_on(&r->leaks, r->s, t, r->it, &lo, err);
        if (rc)
            return rc;
        r->it = NULL;
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
        int rc = any ? ms__run_timeline_with(&t, r, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS, err)
                     : 0;
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

/* ------------------------------------------------------------------ the peak */

int ms_run_peak_alive(const ms_alloc **out, size_t *n_out, ms_run *r, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    const ms_timeline *t;
    int rc = ms_run_timeline(&t, r, err);
    if (rc)
        return rc;
    if (t->peak_alive || (r->tl_flags & MS_TIMELINE_PEAK_ALIVE)) {
        /* Collected while the timeline was built (NULL only when nothing was alive). */
        *out = t->peak_alive;
        *n_out = t->n_peak_alive;
        return 0;
    }
    if (!r->have_peak_alive) {
        rc = ms__timeline_alive_summed(&r->peak_alive, &r->n_peak_alive, r->s, t, t->peak_event,
                                       err);
        if (rc)
            return rc;
        r->have_peak_alive = true;
    }
    *out = r->peak_alive;
    *n_out = r->n_peak_alive;
    return 0;
}

int ms_run_peak_sites(const ms_site_total **out, size_t *n_out, ms_run *r, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (!r->have_peak_sites) {
        const ms_timeline *t;
        int rc = ms_run_timeline(&t, r, err);
        if (rc)
            return rc;
        if (t->allocs && !t->peak_alive && !r->have_peak_alive) {
            /* Summed from the lives in place: a copy of the set alive at the peak was
             * as large as the lives themselves on a file that never frees. */
            rc = ms__site_totals_at(&r->peak_sites, &r->n_peak_sites, r->s, t, t->peak_event,
                                    err);
        } else {
            const ms_alloc *alive;
            size_t n_alive;
            rc = ms_run_peak_alive(&alive, &n_alive, r, err);
            if (!rc)
                rc = ms_site_totals(&r->peak_sites, &r->n_peak_sites, r->s, alive, n_alive,
                                    err);
        }
        if (rc)
            return rc;
        r->have_peak_sites = true;
    }
    *out = r->peak_sites;
    *n_out = r->n_peak_sites;
    return 0;
}

int ms_run_peak_categories(int64_t out[MS_CAT_COUNT], ms_run *r, ms_error *err)
{
    if (!r->have_peak_cats && r->cats) {
        /* The categorisation's peak: the same sums (test_run_agree), no second pass. */
        memcpy(r->peak_cats, ms_categories_peak(r->cats)->by, sizeof r->peak_cats);
        r->have_peak_cats = true;
    }
    if (!r->have_peak_cats) {
        const ms_timeline *t;
        const ms_iterations *it;
        const ms_alloc *alive = NULL;
        size_t n_alive = 0;
        ms__ann ann;
        int rc = ms_run_timeline(&t, r, err);
        if (!rc)
            rc = ms_run_iterations(&it, r, err);
        if (!rc)
            rc = ms_run_peak_alive(&alive, &n_alive, r, err);
        /* The phase tagging is the costly part of both: the phases come from this pass
         * when the run has none yet. */
        ms_phases *ph = NULL;
        bool want_phases = !r->phases && !r->peak_phases_tried;
        if (!rc)
            rc = run_ann(&ann, r, err);
        if (!rc)
            rc = ms__categories_sum_with(r->peak_cats, want_phases ? &ph : NULL, r->s, t, it,
                                         &ann, alive, n_alive, err);
        if (rc)
            return rc;
        if (want_phases) {
            r->peak_phases_tried = true;
            r->phases = ph;
        }
        r->have_peak_cats = true;
    }
    memcpy(out, r->peak_cats, sizeof r->peak_cats);
    return 0;
}

int ms_run_peak_place(ms_peak_place *out, ms_run *r, ms_error *err)
{
    const ms_timeline *t;
    const ms_iterations *it;
    int rc = ms_run_timeline(&t, r, err);
    if (!rc)
        rc = ms_run_iterations(&it, r, err);
    if (rc)
        return rc;
    const ms_phases *ph = r->phases;
    ms_error soft; /* no phases: the iteration still says where the peak is */
    if (!ph && !r->peak_phases_tried && ms_run_phases(&ph, r, &soft))
        ph = NULL;
    *out = ms_peak_place_of(it, ph, t->peak_event);
    return 0;
}

/* ------------------------------------------------------------------ the allocator */

int ms_run_fragmentation(const ms_heap_frag **out, ms_run *r, ms_error *err)
{
    *out = NULL;
    if (!r->frag) {
        int rc = ms_heap_frag_build(&r->frag, r->s, r->device, err);
        if (rc)
            return rc;
    }
    *out = r->frag;
    return 0;
}

int ms_run_peak_free(ms_free_in_reserved *out, ms_run *r, ms_error *err)
{
    if (!r->have_peak_free) {
        const ms_timeline *t;
        int rc = ms_run_timeline(&t, r, err);
        if (rc)
            return rc;
        ms_free_in_reserved f = {t->peak_event, 0, 0, 0, false};
        if (r->frag && t->peak_event < 0) {
            f.free_bytes = r->frag->start_free_bytes;
            f.largest_free = r->frag->start_largest_free;
            f.free_blocks = r->frag->start_free_blocks;
            f.approximate = r->frag->approximate;
        } else if (r->frag && (size_t)t->peak_event < r->frag->n) {
            f.free_bytes = r->frag->free_bytes[t->peak_event];
            f.largest_free = r->frag->largest_free[t->peak_event];
            f.free_blocks = r->frag->free_blocks[t->peak_event];
            f.approximate = r->frag->approximate;
        } else {
            /* The totals only: a copy of every block at the peak cost as much as the
             * replay itself on a file of 300,000 live blocks. */
            ms_heap h;
            rc = ms__heap_build_totals(&h, r->s, r->device, t->peak_event, err);
            if (rc)
                return rc;
            f.free_bytes = h.inactive_bytes;
            f.largest_free = h.largest_inactive;
            f.free_blocks = h.inactive_count;
            f.approximate = h.approximate;
        }
        r->peak_free = f;
        r->have_peak_free = true;
    }
    *out = r->peak_free;
    return 0;
}

int ms_run_block_categories(uint8_t *out, ms_run *r, const ms_heap *h, ms_error *err)
{
    const ms_categories *cats;
    int rc = ms_run_categories(&cats, r, err);
    if (rc)
        return rc;
    if (!r->have_owner) {
        /* The timeline the categories index: the run's, which has its allocations now. */
        const ms_timeline *t;
        rc = ms__run_timeline_with(&t, r, MS_TIMELINE_ALLOCS, err);
        if (!rc)
            rc = ms__heap_owner_init(&r->owner, t, err);
        if (rc)
            return rc;
        r->have_owner = true;
    }
    for (size_t b = 0; b < h->n_blocks; b++) {
        size_t idx = ms__heap_owner_of(&r->owner, &h->blocks[b], h->event);
        out[b] = (uint8_t)(idx != SIZE_MAX ? ms_categories_of(cats, idx) : MS_CAT_COUNT);
    }
    return 0;
}

int ms_run_prepare_threads(ms_run *r, ms_error *err)
{
    const ms_timeline *t;
    const ms_iterations *it;
    int rc = ms_run_timeline(&t, r, err);
    if (!rc)
        rc = ms_run_iterations(&it, r, err);
    size_t n = ms_snapshot_stack_count(r->s);
    for (size_t i = 0; !rc && i < n; i++)
        (void)ms_stack_site(r->s, (uint32_t)i);
    return rc;
}

int ms_run_leak_marks(ms_leak_mark **out, size_t *n_out, ms_run *r, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    const ms_timeline *t;
    const ms_iterations *it;
    int rc = ms__run_timeline_with(&t, r, MS_TIMELINE_ALLOCS | MS_TIMELINE_ACTIVE, err);
    if (rc)
        return rc;
    if (r->leaks)
        return ms_leak_marks_from_report(out, n_out, r->s, t, r->leaks, err);
    if ((rc = ms_run_iterations(&it, r, err)))
        return rc;
    ms_leak_options lo;
    memset(&lo, 0, sizeof lo);
    lo.iter = r->opt.iter;
    lo.min_bytes = r->opt.leak_min_bytes;
    return ms__leak_marks_with(out, n_out, r->s, t, it, &lo, err);
}

int ms_run_leak_totals(ms_leak_totals *out, ms_run *r, ms_error *err)
{
    if (!r->leaks && !(r->tl_flags & MS_TIMELINE_ALLOCS)) {
        /* The totals alone, from the lives a leak can hold: the list of every life the
         * whole report needs would cost a summary a third more memory. */
        if (!r->have_leak_totals) {
            const ms_timeline *t;
            const ms_iterations *it;
            int rc = ms_run_timeline(&t, r, err);
            if (!rc)
                rc = ms_run_iterations(&it, r, err);
            if (rc)
                return rc;
            if (t->active) {
                ms_leak_options lo;
                memset(&lo, 0, sizeof lo);
                lo.iter = r->opt.iter;
                lo.min_bytes = r->opt.leak_min_bytes;
                rc = ms__leak_totals_lean(&r->leak_totals, r->s, t, it, &lo, err);
                if (rc)
                    return rc;
                r->have_leak_totals = true;
            }
        }
        if (r->have_leak_totals) {
            *out = r->leak_totals;
            return 0;
        }
    }
    ms_leak_counts c;
    int rc = ms_run_leak_counts(&c, r, err);
    if (rc)
        return rc;
    *out = c.leaks;
    return 0;
}

int ms_run_leak_counts(ms_leak_counts *out, ms_run *r, ms_error *err)
{
    if (!r->have_leak_counts) {
        const ms_leak_report *lr;
        int rc = ms_run_leaks(&lr, r, err);
        if (rc)
            return rc;
        r->leak_counts = ms__leak_report_counts(lr);
        r->have_leak_counts = true;
    }
    *out = r->leak_counts;
    return 0;
}

/* The one rule of what a report's findings add up to: every view's verdict reads it. */
ms_leak_counts ms__leak_report_counts(const ms_leak_report *r)
{
    ms_leak_counts c;
    memset(&c, 0, sizeof c);
    for (size_t i = 0; r && i < r->n; i++) {
        const ms_leak *L = &r->items[i];
        switch (L->kind) {
        case MS_LEAK_LEAK:
            c.leaks.findings++;
            c.leaks.bytes += L->bytes;
            c.leaks.growth_bytes += L->growth_bytes;
            c.leak_sites += L->n_members;
            break;
        case MS_LEAK_SUSPECT:
            c.suspects++;
            break;
        case MS_LEAK_ALIVE_AT_END:
            c.alive_at_end++;
            break;
        default:
            c.retained++;
            break;
        }
    }
    return c;
}

ms_leak_totals ms_leak_report_totals(const ms_leak_report *r)
{
    return ms__leak_report_counts(r).leaks;
}

ms_peak_place ms_peak_place_of(const ms_iterations *it, const ms_phases *ph, int64_t event)
{
    ms_peak_place pl = {true, 0, 0, false, -1};
    if (!it)
        return pl;
    pl.iterations = (uint32_t)it->n;
    size_t n = it->n + it->n_unfinished;
    for (size_t k = 0; k < n && event >= 0; k++)
        if (event >= it->items[k].start_event && event < it->items[k].end_event) {
            pl.iteration = (uint32_t)(k + 1);
            pl.unfinished = k >= it->n;
            break;
        }
    size_t at = ph && event >= 0 ? ms_phases_at_event(ph, event) : SIZE_MAX;
    if (at != SIZE_MAX && at < ph->n)
        pl.phase = (int)ph->items[at].kind;
    return pl;
}
