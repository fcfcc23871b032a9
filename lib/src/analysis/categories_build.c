/* The categories of every allocation of a device, and the bytes by category at any
 * event: checkpoints of the running totals every CP_STRIDE events, and an index from
 * each event to the allocation it starts or ends, so a query replays at most one
 * stride. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cat_internal.h"
#include "internal.h"
#include "phases_internal.h"

#define CP_STRIDE 4096

struct ms_categories {
    const ms_snapshot *s;
    const ms_timeline *t;
    const ms_iterations *it;
    ms_timeline *own_t;
    ms__lent lent;     /* a standalone build's annotation ranges and iterations */
    ms__cat_ctx x;
    size_t n;          /* allocations */
    uint8_t *cat;      /* per allocation */
    uint8_t *why;
    uint8_t *origin;   /* segment kind it was made in, and candidate bits */
    uint32_t *ev_alloc; /* per event: 1 + the allocation it starts or ends, 0 none (so a
                         * fresh calloc is the empty index: no pass to fill it) */
    /* Lives that end at an event which starts another (an address handed out twice with
     * no free between, as the timeline reads it): the index names the new life there,
     * and these end the old ones. Sorted by event; usually none. */
    ms__cat_life_end *ends;
    size_t n_ends;
    uint32_t *kept;    /* the lives never freed */
    size_t n_kept;
    ms__cat_lives lives; /* the three above, for the refinements and the identity */
    int64_t (*cp)[MS_CAT_COUNT]; /* totals before event k * CP_STRIDE */
    size_t ncp;
    ms_category_point peak;
    ms_category_point *iter_end, *iter_peak;
};

/* The allocation event e starts or ends, UINT32_MAX none. */
static inline uint32_t alloc_of(const ms_categories *c, int64_t e)
{
    return c->ev_alloc[e] - 1u;
}

/* The life that event e ends besides the one the index names there (ends[]), UINT32_MAX
 * none. */
static int cmp_life_end(const void *pa, const void *pb);

static uint32_t also_ends(const ms_categories *c, int64_t e)
{
    ms__cat_life_end key = {.event = e};
    size_t lo = ms__lower_bound(c->ends, c->n_ends, sizeof *c->ends, &key, cmp_life_end);
    return lo < c->n_ends && c->ends[lo].event == e ? c->ends[lo].alloc : UINT32_MAX;
}

/* The lives event e starts or ends (0 to 2) in who[], with their signed bytes in d[]. */
static inline int changes_at(const ms_categories *c, int64_t e, uint32_t who[2], int64_t d[2])
{
    int n = 0;
    uint32_t i = alloc_of(c, e);
    if (i != UINT32_MAX) {
        const ms_alloc *a = &c->t->allocs[i];
        who[n] = i;
        d[n++] = a->alloc_event == e ? (int64_t)a->size : -(int64_t)a->size;
    }
    if (MS_UNLIKELY(c->n_ends != 0)) {
        uint32_t o = also_ends(c, e);
        if (o != UINT32_MAX) {
            who[n] = o;
            d[n++] = -(int64_t)c->t->allocs[o].size;
        }
    }
    return n;
}

/* Applies event e to the totals by category; returns the change of their sum. */
static inline int64_t apply_event(const ms_categories *c, int64_t e, int64_t *by)
{
    uint32_t who[2];
    int64_t d[2], sum = 0;
    for (int q = changes_at(c, e, who, d); q-- > 0;) {
        by[c->cat[who[q]]] += d[q];
        sum += d[q];
    }
    return sum;
}

static void fill_point(const ms_categories *c, ms_category_point *p, int64_t e, const int64_t *by)
{
    p->event = e;
    p->time_us = e >= 0 ? c->x.tr->time_us[e] : c->t->t_first_us;
    p->bytes = 0;
    for (int k = 0; k < MS_CAT_COUNT; k++) {
        p->by[k] = by[k];
        p->bytes += by[k];
    }
}

void ms_categories_free(ms_categories *c)
{
    if (!c)
        return;
    ms__cat_ctx_free(&c->x);
    ms__lent_free(&c->lent);
    ms_timeline_free(c->own_t);
    MS__FREE_ALL(c->cat, c->why, c->origin, c->ev_alloc, c->ends, c->kept, c->cp, c->iter_end,
                 c->iter_peak, c);
}

/* Below this many events one thread classifies and sweeps: a second costs more to start
 * than it saves. Lowered by the tests. */
size_t ms__cat_build_parallel_min = (size_t)1 << 20;
_Atomic size_t ms__cat_build_splits;

/* A sweep over events [from, to): the checkpoints and the points of iterations from k on.
 * `by` starts as the totals before `from` as far as this sweep knows them: the true ones
 * for the first half, zero for the second, whose points get the first half's totals
 * added once both are done (sweep_build). */
typedef struct sweep_job {
    ms_categories *c;
    size_t from, to, k;
    int64_t by[MS_CAT_COUNT];
} sweep_job;

static void *sweep_range(void *arg)
{
    sweep_job *j = arg;
    ms_categories *c = j->c;
    const ms_timeline *t = c->t;
    const ms_iteration *items = c->it ? c->it->items : NULL;
    size_t nit = c->it ? c->it->n : 0, k = j->k;
    int64_t *by = j->by, total = 0;
    for (int q = 0; q < MS_CAT_COUNT; q++)
        total += by[q];
    for (size_t e = j->from; e < j->to; e++) {
        if (e % CP_STRIDE == 0)
            memcpy(c->cp[e / CP_STRIDE], by, sizeof j->by);
        while (k < nit && (int64_t)e >= items[k].end_event)
            k++;
        if (k < nit && (int64_t)e == items[k].start_event) {
            /* The state an iteration starts from counts toward its peak, as in
             * ms_iterations. */
            fill_point(c, &c->iter_peak[k], (int64_t)e - 1, by);
        }
        total += apply_event(c, (int64_t)e, by);
        if ((int64_t)e == t->peak_event)
            fill_point(c, &c->peak, (int64_t)e, by);
        if (k < nit && (int64_t)e >= items[k].start_event) {
            if (total > c->iter_peak[k].bytes)
                fill_point(c, &c->iter_peak[k], (int64_t)e, by);
            if ((int64_t)e == items[k].end_event - 1)
                fill_point(c, &c->iter_end[k], (int64_t)e, by);
        }
    }
    return NULL;
}

static void add_base(ms_category_point *p, const int64_t *base)
{
    for (int q = 0; q < MS_CAT_COUNT; q++) {
        p->by[q] += base[q];
        p->bytes += base[q];
    }
}

/* Where a second sweep may start: at the start of an iteration near the middle that
 * begins after the one before it ends, so that no iteration spans both halves (an
 * iteration's peak is compared within it, and the second half knows its bytes only up to
 * the first half's totals). At that event a one-thread sweep is at that iteration too.
 * 0 when there is no such place. */
static size_t sweep_split(const ms_categories *c, size_t nev, size_t *k_out)
{
    size_t nit = c->it ? c->it->n : 0;
    *k_out = 0;
    if (nit == 0)
        return nev / 2;
    const ms_iteration *items = c->it->items;
    size_t best = 0, best_k = 0;
    uint64_t best_gap = UINT64_MAX;
    for (size_t m = 1; m < nit; m++) {
        int64_t s = items[m].start_event;
        if (s <= 0 || (uint64_t)s >= nev || items[m - 1].end_event > s || items[m].end_event <= s)
            continue;
        uint64_t gap = (uint64_t)s > nev / 2 ? (uint64_t)s - nev / 2 : nev / 2 - (uint64_t)s;
        if (gap < best_gap) {
            best_gap = gap;
            best = (size_t)s;
            best_k = m;
        }
    }
    /* Every iteration before the chosen one must end by the split, as the one-thread
     * sweep has passed them all there. */
    for (size_t m = 0; best && m < best_k; m++)
        if (items[m].end_event > (int64_t)best)
            best = 0;
    *k_out = best_k;
    return best;
}

/* One sweep over the trace, in two halves on two threads for a long one: checkpoints,
 * the iterations' ends and peaks. */
static int sweep_build(ms_categories *c, const uint32_t *pre, size_t npre, ms_error *err)
{
    const ms_timeline *t = c->t;
    size_t nev = t->n_events;
    c->ncp = nev / CP_STRIDE + 1;
    c->cp = calloc(c->ncp, sizeof *c->cp);
    size_t nit = c->it ? c->it->n : 0;
    c->iter_end = calloc(nit ? nit : 1, sizeof *c->iter_end);
    c->iter_peak = calloc(nit ? nit : 1, sizeof *c->iter_peak);
    if (!c->cp || !c->iter_end || !c->iter_peak)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for category totals");
    sweep_job job[2];
    memset(job, 0, sizeof job);
    job[0].c = job[1].c = c;
    job[0].to = nev;
    for (size_t j = 0; j < npre; j++)
        job[0].by[c->cat[pre[j]]] += (int64_t)t->allocs[pre[j]].size;
    if (t->peak_event < 0)
        fill_point(c, &c->peak, -1, job[0].by);
    size_t k_mid = 0, mid = 0;
    if (c->s->threads >= 2 && nev >= ms__cat_build_parallel_min && nev >= 2)
        mid = sweep_split(c, nev, &k_mid);
    if (!mid) {
        sweep_range(&job[0]);
        return 0;
    }
    job[0].to = job[1].from = mid;
    job[1].to = nev;
    job[1].k = k_mid;
    ms__run_pair(sweep_range, &job[0], &job[1]);
    ms__cat_build_splits++;
    const int64_t *base = job[0].by;
    for (size_t q = (mid + CP_STRIDE - 1) / CP_STRIDE; q < c->ncp && q * CP_STRIDE < nev; q++)
        for (int g = 0; g < MS_CAT_COUNT; g++)
            c->cp[q][g] += base[g];
    if (t->peak_event >= (int64_t)mid)
        add_base(&c->peak, base);
    for (size_t k = k_mid; k < nit; k++) {
        add_base(&c->iter_peak[k], base);
        add_base(&c->iter_end[k], base);
    }
    return 0;
}

/* The categories of allocations [from, to), each allocation's events in ev_alloc, and the
 * lives made before the trace in pre[] (for the sweep's starting totals, rather than
 * found by reading every allocation again). Allocations write only their own slots, so
 * two halves run at once. */
typedef struct classify_job {
    ms_categories *c;
    size_t from, to;
    uint32_t *pre;
    size_t npre, cap_pre;
    ms__cat_life_end *ends;
    size_t n_ends, cap_ends;
    uint32_t *kept;
    size_t n_kept, cap_kept;
    bool ok;
} classify_job;

static void *classify_range(void *arg)
{
    classify_job *j = arg;
    ms_categories *c = j->c;
    const ms_timeline *t = c->t;
    const ms_trace *tr = c->x.tr;
    size_t nev = t->n_events, hint = SIZE_MAX;
    j->ok = true;
    for (size_t i = j->from; i < j->to; i++) {
        const ms_alloc *a = &t->allocs[i];
        c->cat[i] = (uint8_t)ms__cat_classify_near(&c->x, a, &c->why[i], &c->origin[i], &hint);
        if (a->alloc_event < 0) {
            if (!ms__grow((void **)&j->pre, &j->cap_pre, j->npre + 1, sizeof *j->pre)) {
                j->ok = false;
                return NULL;
            }
            j->pre[j->npre++] = (uint32_t)i;
        }
        if (a->alloc_event >= 0 && (uint64_t)a->alloc_event < nev)
            c->ev_alloc[a->alloc_event] = (uint32_t)i + 1;
        if (a->free_event < 0) {
            if (!ms__grow((void **)&j->kept, &j->cap_kept, j->n_kept + 1, sizeof *j->kept)) {
                j->ok = false;
                return NULL;
            }
            j->kept[j->n_kept++] = (uint32_t)i;
            continue;
        }
        if ((uint64_t)a->free_event >= nev)
            continue;
        if (tr->action[a->free_event] != MS_ACT_ALLOC) {
            c->ev_alloc[a->free_event] = (uint32_t)i + 1;
        } else {
            /* An address handed out twice without a free: the second alloc event also
             * ends the first life (the timeline's lives). The index names the new life
             * there, so the two halves never write one slot; this one goes to ends[]. */
            if (!ms__grow((void **)&j->ends, &j->cap_ends, j->n_ends + 1, sizeof *j->ends)) {
                j->ok = false;
                return NULL;
            }
            j->ends[j->n_ends++] = (ms__cat_life_end){a->free_event, (uint32_t)i};
        }
    }
    return NULL;
}

/* Appends nb elements of b to the list *a (*na long, room for *cap). */
static bool join_list(void **a, size_t *na, size_t *cap, const void *b, size_t nb, size_t elem)
{
    if (!nb)
        return true;
    if (!ms__grow(a, cap, *na + nb, elem))
        return false;
    memcpy((char *)*a + *na * elem, b, nb * elem);
    *na += nb;
    return true;
}

static int cmp_life_end(const void *pa, const void *pb)
{
    const ms__cat_life_end *a = pa, *b = pb;
    return MS__CMP(a->event, b->event);
}

/* classify_range over every allocation, in two halves for many; the pre[] lists joined
 * in allocation order, the lives ended at another's start (c->ends) sorted by event.
 * False when out of memory. */
static bool classify_all(ms_categories *c, uint32_t **pre, size_t *npre)
{
    classify_job job[2];
    memset(job, 0, sizeof job);
    job[0].c = job[1].c = c;
    job[0].to = c->n;
    bool two = c->s->threads >= 2 && c->t->n_events >= ms__cat_build_parallel_min && c->n >= 2;
    if (two) {
        job[0].to = job[1].from = c->n / 2;
        job[1].to = c->n;
        ms__run_pair(classify_range, &job[0], &job[1]);
    } else {
        classify_range(&job[0]);
    }
    bool ok = job[0].ok && (!two || job[1].ok) &&
              join_list((void **)&job[0].pre, &job[0].npre, &job[0].cap_pre, job[1].pre,
                        job[1].npre, sizeof *job[1].pre) &&
              join_list((void **)&job[0].ends, &job[0].n_ends, &job[0].cap_ends, job[1].ends,
                        job[1].n_ends, sizeof *job[1].ends) &&
              join_list((void **)&job[0].kept, &job[0].n_kept, &job[0].cap_kept, job[1].kept,
                        job[1].n_kept, sizeof *job[1].kept);
    free(job[1].pre);
    free(job[1].ends);
    free(job[1].kept);
    if (!ok) {
        free(job[0].pre);
        free(job[0].ends);
        free(job[0].kept);
        return false;
    }
    if (job[0].n_ends > 1)
        qsort(job[0].ends, job[0].n_ends, sizeof *job[0].ends, cmp_life_end);
    c->ends = job[0].ends;
    c->n_ends = job[0].n_ends;
    c->kept = job[0].kept;
    c->n_kept = job[0].n_kept;
    c->lives = (ms__cat_lives){c->ev_alloc, c->kept, c->n_kept, c->ends, c->n_ends};
    c->x.lives = &c->lives;
    *pre = job[0].pre;
    *npre = job[0].npre;
    return true;
}

static int categorise(ms_categories **out, ms_categories *c, const ms_timeline *t,
                      const ms_iterations *it, const ms__ann *ann, ms_error *err);

int ms_categories_build(ms_categories **out, const ms_snapshot *s, int device,
                        const ms_timeline *t, const ms_iterations *it, ms_error *err)
{
    ms_error_clear(err);
    *out = NULL;
    if (!s || device < 0 || device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no device %d in this snapshot", device);
    if (t && (t->device != device || !t->allocs))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET,
                        "categories need device %d's timeline built with MS_TIMELINE_ALLOCS",
                        device);
    if (it && it->device != device)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "iterations are for device %d, not %d",
                        it->device, device);
    ms_categories *c = calloc(1, sizeof *c);
    if (!c)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    c->s = s;
    int rc = 0;
    if (!t) {
        rc = ms_timeline_build(&c->own_t, s, device, MS_TIMELINE_ALLOCS | MS_TIMELINE_ACTIVE,
                               err);
        t = c->own_t;
    }
    if (!rc)
        rc = ms__lent_take(&c->lent, s, t, it, NULL, err);
    if (rc) {
        ms_categories_free(c);
        return rc;
    }
    return categorise(out, c, t, c->lent.it, &c->lent.ann, err);
}

int ms__categories_build_with(ms_categories **out, const ms_snapshot *s, const ms_timeline *t,
                              const ms_iterations *it, const ms__ann *ann, ms_error *err)
{
    *out = NULL;
    ms_categories *c = calloc(1, sizeof *c);
    if (!c)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    c->s = s;
    return categorise(out, c, t, it, ann, err);
}

/* The categories of t's allocations on `c` (holding its snapshot), from the iterations
 * `it` and annotation ranges `ann`, both outliving it. Frees c on failure. */
static int categorise(ms_categories **out, ms_categories *c, const ms_timeline *t,
                      const ms_iterations *it, const ms__ann *ann, ms_error *err)
{
    const ms_snapshot *s = c->s;
    c->t = t;
    c->it = it;
    int rc = ms__cat_ctx_build(&c->x, s, t, it, ann, err);
    if (rc) {
        ms_categories_free(c);
        return rc;
    }
    c->n = t->n_allocs;
    if (t->n_allocs >= UINT32_MAX) {
        ms_categories_free(c);
        return ms__fail(err, MS_ERR_LIMIT, MS_NO_OFFSET, "too many allocations (%zu)",
                        t->n_allocs);
    }
    size_t nev = t->n_events;
    c->cat = malloc(c->n ? c->n : 1);
    c->why = malloc(c->n ? c->n : 1);
    c->origin = malloc(c->n ? c->n : 1);
    c->ev_alloc = calloc(nev ? nev : 1, sizeof *c->ev_alloc);
    if (!c->cat || !c->why || !c->origin || !c->ev_alloc) {
        ms_categories_free(c);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for categories");
    }
    uint32_t *pre = NULL;
    size_t npre = 0;
    if (!classify_all(c, &pre, &npre)) {
        ms_categories_free(c);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for categories");
    }
    if (ms__cat_refine(&c->x, t->allocs, c->n, c->cat, c->why, c->origin)) {
        free(pre);
        ms_categories_free(c);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for categories");
    }
    rc = sweep_build(c, pre, npre, err);
    free(pre);
    if (rc) {
        ms_categories_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

const ms_timeline *ms_categories_timeline(const ms_categories *c)
{
    return c ? c->t : NULL;
}

const ms_iterations *ms_categories_iterations(const ms_categories *c)
{
    return c ? c->it : NULL;
}

ms_category ms_categories_of(const ms_categories *c, size_t i)
{
    return c && i < c->n ? (ms_category)c->cat[i] : MS_CAT_OTHER;
}

ms_category_reason ms_categories_reason(const ms_categories *c, size_t i)
{
    return c && i < c->n ? (ms_category_reason)c->why[i] : MS_CATR_NO_PHASES;
}

static double secs(const ms_categories *c, int64_t us)
{
    return (double)(us - c->t->t_first_us) / 1e6;
}

static int64_t ev_time(const ms_categories *c, int64_t e)
{
    if (e < 0)
        return c->t->t_first_us;
    if ((uint64_t)e >= c->t->n_events)
        return c->t->t_last_us;
    return c->x.tr->time_us[e];
}

static const char *src_text(uint8_t src)
{
    if (src & MS__SRC_ANN)
        return "record_function annotation";
    if (src & MS__SRC_ENGINE)
        return "autograd engine frames";
    if (src & MS__SRC_EMPTY)
        return "autograd thread: no Python frames";
    if (src & MS__SRC_PY)
        return "Python frames";
    return "between phases";
}

/* "1.234 s", or "event N" on a trace without times (its times are event indexes). */
static const char *when(const ms_categories *c, int64_t us, char *b, size_t cap)
{
    if (c->t->has_times)
        snprintf(b, cap, "%.3f s", secs(c, us));
    else
        snprintf(b, cap, "event %lld", (long long)us);
    return b;
}

size_t ms_categories_explain(const ms_categories *c, size_t i, char *buf, size_t cap)
{
    char w0[40], w1[40], w2[40];
    if (cap)
        buf[0] = '\0';
    if (!c || i >= c->n)
        return 0;
    int n;
    const ms_alloc *a = &c->t->allocs[i];
    ms_category_reason r = (ms_category_reason)c->why[i];
    const char *weak = ms_category_reason_weak(r) ? " (weak evidence)" : "";
    if (a->alloc_event < 0) {
        if (a->free_event >= 0)
            n = snprintf(buf, cap, "%s; freed at %s%s", ms_category_reason_text(r),
                         when(c, ev_time(c, a->free_event), w0, sizeof w0), weak);
        else
            n = snprintf(buf, cap, "%s; still alive at the end%s", ms_category_reason_text(r),
                         weak);
        return ms__text_done(buf, cap, n);
    }
    size_t k = ms__cat_seg_of(&c->x, a->alloc_event);
    if (k >= c->x.nsegs)
        return ms__text_done(buf, cap,
                             snprintf(buf, cap, "%s%s", ms_category_reason_text(r), weak));
    const ms__cat_seg *g = &c->x.segs[k];
    char freed[64];
    if (a->free_event >= 0)
        snprintf(freed, sizeof freed, "freed at %s", when(c, ev_time(c, a->free_event), w0, sizeof w0));
    else
        snprintf(freed, sizeof freed, "never freed");
    if ((g->kind == MS__PH_FWD || g->kind == MS__PH_BWD || g->kind == MS__PH_OPT) &&
        !c->t->has_times)
        n = snprintf(buf, cap, "made at %s in %s %u (%s; events %lld-%lld), %s: %s%s",
                     when(c, ev_time(c, a->alloc_event), w1, sizeof w1),
                     ms__cat_phase_name(g->kind), g->ordinal + 1, src_text(g->src),
                     (long long)g->start, (long long)(g->end - 1), freed,
                     ms_category_reason_text(r), weak);
    else if (g->kind == MS__PH_FWD || g->kind == MS__PH_BWD || g->kind == MS__PH_OPT)
        n = snprintf(buf, cap, "made at %.3f s in %s %u (%s; %.3f-%.3f s), %s: %s%s",
                     secs(c, ev_time(c, a->alloc_event)), ms__cat_phase_name(g->kind),
                     g->ordinal + 1, src_text(g->src), secs(c, ev_time(c, g->start)),
                     secs(c, ev_time(c, g->end - 1)), freed, ms_category_reason_text(r), weak);
    else
        n = snprintf(buf, cap, "made at %s in the %s before %s, %s: %s%s",
                     when(c, ev_time(c, a->alloc_event), w2, sizeof w2),
                     ms__cat_phase_name(g->kind),
                     k + 1 < c->x.nsegs ? ms__cat_phase_name(c->x.segs[k + 1].kind) : "the end",
                     freed, ms_category_reason_text(r), weak);
    return ms__text_done(buf, cap, n);
}

int ms_categories_at_event(int64_t bytes[MS_CAT_COUNT], const ms_categories *c, int64_t event,
                           ms_error *err)
{
    if (!c || event < -1 || (event >= 0 && (uint64_t)event >= c->t->n_events))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no event %lld in this trace",
                        (long long)event);
    size_t k = (size_t)(event + 1) / CP_STRIDE;
    memcpy(bytes, c->cp[k], sizeof c->cp[k]);
    for (int64_t e = (int64_t)(k * CP_STRIDE); e <= event; e++)
        apply_event(c, e, bytes);
    return 0;
}

int64_t ms_categories_event_at_time(const ms_categories *c, int64_t time_us)
{
    if (!c)
        return -1;
    const ms_trace *tr = c->x.tr;
    size_t lo = 0, hi = tr->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tr->time_us[mid] <= time_us)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int64_t)lo - 1;
}

int ms_categories_at_time(int64_t bytes[MS_CAT_COUNT], const ms_categories *c, int64_t time_us,
                          ms_error *err)
{
    if (!c)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_categories_at_time: no categories");
    return ms_categories_at_event(bytes, c, ms_categories_event_at_time(c, time_us), err);
}

int ms_categories_sweep(const ms_categories *c, int64_t first, int64_t last,
                        void (*fn)(void *ctx, int64_t event, const int64_t bytes[MS_CAT_COUNT]),
                        void *ctx, ms_error *err)
{
    if (!c || !fn || first < 0 || last < first || (uint64_t)last >= c->t->n_events)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_categories_sweep: bad argument");
    int64_t by[MS_CAT_COUNT];
    int rc = ms_categories_at_event(by, c, first - 1, err);
    if (rc)
        return rc;
    for (int64_t e = first; e <= last; e++) {
        apply_event(c, e, by);
        fn(ctx, e, by);
    }
    return 0;
}

const ms_category_point *ms_categories_peak(const ms_categories *c)
{
    return c ? &c->peak : NULL;
}

/* Sums what the report's leak findings still hold after the last event. */
static void held_by_leaks(const ms_categories *c, const ms_leak_report *r, ms_category_end *out)
{
    for (size_t f = 0; f < r->n; f++) {
        const ms_leak *L = &r->items[f];
        if (L->kind != MS_LEAK_LEAK)
            continue;
        int64_t held = 0;
        for (size_t k = L->first_index; k < L->first_index + L->n_index && k < r->n_alloc_index;
             k++) {
            size_t i = r->alloc_index[k];
            if (i < c->n && c->t->allocs[i].free_event < 0)
                held += (int64_t)c->t->allocs[i].size;
        }
        out->held_by_leaks_bytes += held;
        out->leak_findings += held > 0;
    }
}

int ms_categories_end(ms_category_end *out, const ms_categories *c, const ms_leak_report *r,
                      ms_error *err)
{
    if (!c || !out)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_categories_end: bad argument");
    memset(out, 0, sizeof *out);
    int64_t last = c->t->n_events ? (int64_t)c->t->n_events - 1 : -1;
    int64_t by[MS_CAT_COUNT];
    int rc = ms_categories_at_event(by, c, last, NULL);
    if (rc)
        return ms__fail(err, rc, MS_NO_OFFSET, "no state after event %lld", (long long)last);
    fill_point(c, &out->at, last, by);
    if (r) {
        if (r->device != c->t->device)
            return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET,
                            "the leak report is for device %d, not %d", r->device,
                            c->t->device);
        held_by_leaks(c, r, out);
        return 0;
    }
    ms_leak_report *own = NULL;
    /* The categories' own timeline has the active curve the leak analysis needs; a
     * caller's may not, and a fresh build gives the same alloc indices. */
    const ms_timeline *lt = c->t->active ? c->t : NULL;
    rc = ms_leak_report_build(&own, c->s, c->t->device, lt, NULL, err);
    if (rc)
        return rc;
    held_by_leaks(c, own, out);
    ms_leak_report_free(own);
    return 0;
}

const ms_category_point *ms_categories_iteration_end(const ms_categories *c, size_t k)
{
    return c && c->it && k < c->it->n ? &c->iter_end[k] : NULL;
}

const ms_category_point *ms_categories_iteration_peak(const ms_categories *c, size_t k)
{
    return c && c->it && k < c->it->n ? &c->iter_peak[k] : NULL;
}

/* Only forwards: an inference run, whose memory has no gradient or optimizer term. */
ms_formula_form ms__categories_form(const ms_categories *c)
{
    return c && !c->x.counts[MS__PH_BWD] && !c->x.counts[MS__PH_OPT] && c->x.counts[MS__PH_FWD]
               ? MS_FORM_INFERENCE
               : MS_FORM_TRAINING;
}

int ms_categories_formula(ms_category_formula *out, const ms_categories *c, size_t k,
                          ms_error *err)
{
    if (!c || !out || !c->it || k >= c->it->n)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no iteration %zu", k);
    memset(out, 0, sizeof *out);
    out->iteration = k;
    out->form = ms__categories_form(c);
    const ms_iteration *x = &c->it->items[k];
    int64_t by[MS_CAT_COUNT];
    int rc = ms_categories_at_event(by, c, x->start_event - 1, err);
    if (rc)
        return rc;
    /* Optimizer intermediates: temporaries made in an optimizer step, tracked beside the
     * categories in the same sweep. */
    int64_t opt_tmp = 0;
    for (int64_t e = x->start_event - 1; e < x->end_event; e++) {
        if (e >= x->start_event) {
            uint32_t who[2];
            int64_t d[2];
            for (int q = changes_at(c, e, who, d); q-- > 0;) {
                by[c->cat[who[q]]] += d[q];
                if (c->cat[who[q]] == MS_CAT_TEMPORARY &&
                    (c->origin[who[q]] & MS__CAT_KIND_MASK) == MS__PH_OPT)
                    opt_tmp += d[q];
            }
        }
        int64_t total = 0;
        for (int q = 0; q < MS_CAT_COUNT; q++)
            total += by[q];
        if (total > out->measured_peak)
            out->measured_peak = total;
        if (by[MS_CAT_PARAMETER] > out->parameter)
            out->parameter = by[MS_CAT_PARAMETER];
        if (by[MS_CAT_OPTIMIZER_STATE] > out->optimizer_state)
            out->optimizer_state = by[MS_CAT_OPTIMIZER_STATE];
        if (by[MS_CAT_GRADIENT] > out->gradient)
            out->gradient = by[MS_CAT_GRADIENT];
        if (opt_tmp > out->optimizer_temporary)
            out->optimizer_temporary = opt_tmp;
        if (by[MS_CAT_ACTIVATION] + by[MS_CAT_INPUT] > out->activation)
            out->activation = by[MS_CAT_ACTIVATION] + by[MS_CAT_INPUT];
        if (by[MS_CAT_INPUT] > out->input)
            out->input = by[MS_CAT_INPUT];
        if (by[MS_CAT_ACTIVATION] + by[MS_CAT_TEMPORARY] > out->activation_temporary)
            out->activation_temporary = by[MS_CAT_ACTIVATION] + by[MS_CAT_TEMPORARY];
    }
    if (out->form == MS_FORM_INFERENCE) {
        out->estimate = out->parameter + out->input + out->activation_temporary;
        return 0;
    }
    int64_t a = out->gradient + out->optimizer_temporary;
    out->estimate =
        out->parameter + out->optimizer_state + (a > out->activation ? a : out->activation);
    return 0;
}

int ms_categories_identity(ms_category_identity *out, const ms_categories *c, ms_error *err)
{
    if (!c || !out)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_categories_identity: bad argument");
    if (ms__cat_identity(out, &c->x, c->t->allocs, c->n, c->cat))
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for the optimizer identity");
    return 0;
}

void ms_categories_phases(ms_category_phases *out, const ms_categories *c)
{
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    out->forward = c->x.counts[MS__PH_FWD];
    out->backward = c->x.counts[MS__PH_BWD];
    out->optimizer = c->x.counts[MS__PH_OPT];
    out->from_annotations = (c->x.src_all & MS__SRC_ANN) != 0;
    out->from_python_frames = (c->x.src_all & MS__SRC_PY) != 0;
    out->from_engine_frames = (c->x.src_all & MS__SRC_ENGINE) != 0;
    out->from_empty_stacks = (c->x.src_all & MS__SRC_EMPTY) != 0;
    out->no_stacks = c->x.no_stacks;
    size_t nseg = 0;
    const ms_segment *seg = ms_snapshot_segments(c->s, &nseg);
    for (size_t k = 0; k < nseg; k++)
        if (seg[k].device == c->t->device && (seg[k].pool_id[0] || seg[k].pool_id[1]))
            out->cuda_graph_pools = true;
}

int ms__phases_of_categories(ms_phases **out, const ms_categories *c, ms_error *err)
{
    return ms__phases_from_ctx(out, &c->x, c->t->device, err);
}
