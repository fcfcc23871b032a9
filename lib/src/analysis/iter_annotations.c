/* Iterations from record_function annotations: ranges named by the user (--step) or by
 * the profiler (ProfilerStep#N), and the optimizer's own step and zero_grad ranges.
 * Ranges that cover only part of each iteration are used as markers between them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "timeline_internal.h"
#include "iter_cand.h"
#include "memsnap/phases.h"

/* First event whose time is at or after t (strictly after when `after`). */
static int64_t event_at_time(const ms_trace *tr, int64_t t, bool after)
{
    size_t from_start = 0;
    return ms__event_at_time(tr, t, after, &from_start);
}

static bool name_matches(const char *name, ann_kind kind, const char *want)
{
    switch (kind) {
    case ANN_NAMED: {
        /* "--step ProfilerStep" also takes the numbered "ProfilerStep#3". */
        size_t lw = strlen(want);
        return !strncmp(name, want, lw) && (name[lw] == 0 || name[lw] == '#');
    }
    case ANN_PROFILER:
        return !strncmp(name, "ProfilerStep#", 13);
    case ANN_OPT_STEP:
        return !strncmp(name, "Optimizer.step#", 15);
    case ANN_OPT_ZERO:
        return !strncmp(name, "Optimizer.zero_grad#", 20);
    }
    return false;
}

typedef struct range {
    int64_t start_us, end_us;
} range;

/* The matching ranges of a device in start order, from the run's one pairing `ann`.
 * Ranges never closed are dropped (the dump happened inside the
 * range: no iteration ended there); a range whose START was lost from a wrapped buffer
 * opens at the earliest time (start_us INT64_MIN). */
static int ranges_of(range **out, size_t *n_out, const ms_snapshot *s, const ms__ann *ann,
                     ann_kind kind, const char *want, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    const ms_annotation_range *ar = ann->r;
    size_t nar = ann->n;
    range *r = malloc((nar ? nar : 1) * sizeof *r);
    if (!r)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for annotations");
    size_t n = 0;
    for (size_t i = 0; i < nar; i++)
        if (!ar[i].open_end && name_matches(ms_snapshot_string(s, ar[i].name), kind, want))
            r[n++] = (range){ar[i].start_us, ar[i].end_us};
    *out = r;
    *n_out = n;
    return 0;
}

/* Whole ranges (ProfilerStep#N, --step NAME): each range with events is one iteration. */
int ms__iter_cand_ranges(cand *c, const ms_snapshot *s, const ms_trace *tr,
                         const ms__ann *ann, ann_kind kind, const char *want, ms_error *err)
{
    range *r;
    size_t n;
    int rc = ranges_of(&r, &n, s, ann, kind, want, err);
    if (rc)
        return rc;
    int64_t prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t st = r[i].start_us == INT64_MIN ? 0 : event_at_time(tr, r[i].start_us, false);
        int64_t en = event_at_time(tr, r[i].end_us, true);
        if (st < prev_end) /* top-level ranges only: skip nested repeats */
            continue;
        if (en <= st)
            continue;
        bool partial = r[i].start_us == INT64_MIN || (tr->n && r[i].start_us < tr->time_us[0]);
        if (c->n == 0)
            c->first_partial = partial;
        if (!ms__iter_cand_push(c, st, en,
                                r[i].start_us == INT64_MIN ? INT64_MIN : r[i].start_us,
                                r[i].end_us)) {
            free(r);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
        }
        prev_end = en;
    }
    free(r);
    return 0;
}

/* Optimizer.step ranges end iterations; a zero_grad range right after joins the step. */
int ms__iter_cand_optimizer_annotations(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                        const ms__ann *ann, ms_error *err)
{
    range *st = NULL, *zg = NULL;
    size_t nst = 0, nzg = 0;
    int rc = ranges_of(&st, &nst, s, ann, ANN_OPT_STEP, NULL, err);
    if (!rc)
        rc = ranges_of(&zg, &nzg, s, ann, ANN_OPT_ZERO, NULL, err);
    int64_t *ends = NULL, *ends_us = NULL, *zg_min_end = NULL;
    size_t n = 0;
    if (!rc && nst) {
        ends = malloc(nst * sizeof *ends);
        ends_us = malloc(nst * sizeof *ends_us);
        zg_min_end = malloc((nzg ? nzg : 1) * sizeof *zg_min_end);
        if (!ends || !ends_us || !zg_min_end)
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    }
    /* The zero_grad ranges are in start order: the first one starting at or after a
     * step's end is found by bisection, and the earliest end from there on says whether
     * any of them ends before the next step (one look each, where a scan of all of them
     * per step was quadratic: 27M compares for 5,200 steps). The ends need not grow
     * with the starts (times as written), hence the running minimum. */
    for (size_t z = nzg; !rc && z-- > 0;)
        zg_min_end[z] = z + 1 < nzg && zg_min_end[z + 1] < zg[z].end_us ? zg_min_end[z + 1]
                                                                         : zg[z].end_us;
    for (size_t i = 0; !rc && i < nst; i++) {
        int64_t end_us = st[i].end_us;
        int64_t next_us = i + 1 < nst ? st[i + 1].start_us : INT64_MAX;
        size_t lo = 0, hi = nzg;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (zg[mid].start_us < end_us)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nzg && zg_min_end[lo] < next_us) {
            while (zg[lo].end_us >= next_us)
                lo++;
            end_us = zg[lo].end_us;
        }
        int64_t e = event_at_time(tr, end_us, true);
        /* Steps that ended before the first kept event leave no iteration here. */
        if (e <= 0 || (n && e <= ends[n - 1]))
            continue;
        ends[n] = e;
        ends_us[n] = end_us;
        n++;
    }
    if (!rc && !ms__iter_cand_from_ends(c, s, tr, ends, ends_us, n))
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    free(ends);
    free(ends_us);
    free(zg_min_end);
    free(st);
    free(zg);
    return rc;
}

/* Named ranges that cover only part of each iteration ("## forward ##", the optimizer
 * step) leave most events between them. Then they mark iterations rather than span them:
 * cut between consecutive ranges where memory is lowest, as for forward calls. */
int ms__iter_ranges_as_markers(cand *c, const ms_snapshot *s, const ms_trace *tr,
                               const curve *cv, ms_error *err)
{
    if (c->n < 2)
        return 0;
    size_t n = c->n;
    int64_t gaps = 0, total = c->it[n - 1].end - c->it[0].start;
    for (size_t k = 1; k < n; k++)
        gaps += c->it[k].start - c->it[k - 1].end;
    if (gaps * 10 <= total)
        return 0;
    int64_t *cuts = malloc(n * sizeof *cuts), *lo = malloc(n * sizeof *lo);
    int64_t *hi = malloc(n * sizeof *hi);
    if (!cuts || !lo || !hi) {
        MS__FREE_ALL(cuts, lo, hi);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    }
    for (size_t k = 0; k + 1 < n; k++) {
        lo[k] = c->it[k].end;
        hi[k] = c->it[k + 1].start + 1;
        cuts[k] = ms__iter_lowest_cut(cv, tr, lo[k], c->it[k + 1].start);
    }
    ms__iter_refine_cuts(s, tr, cuts, n - 1, lo, hi);
    c->n = 0;
    bool ok = ms__iter_cand_from_cuts(c, s, tr, cuts, n - 1);
    free(cuts);
    free(lo);
    free(hi);
    if (!ok)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    size_t len = strlen(c->detail);
    snprintf(c->detail + len, sizeof c->detail - len, "%sranges used as markers",
             len ? ", " : "");
    return 0;
}
