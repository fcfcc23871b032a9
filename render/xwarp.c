/* The run axis's warp (ms_chart_warp in chart.h): which stretches of a trace become
 * breaks. A chart of a training run should spend its width on the iterations; on a linear
 * time axis a slow start takes it instead (a model loaded 4 s before the first step, or
 * CUDA and cuBLAS set-up inside a first iteration 50 times as long as the others).
 *
 * The rule, in the trace's own terms:
 *   - With iterations (two or more complete ones), m is their (lower) median duration. The
 *     set-up before the first iteration becomes a break when it lasts longer than m.
 *     The rest is cut into pieces: each iteration, the stretches between and after
 *     them. A piece longer than its fair share (1.5 m) is slow: its longest idle gaps
 *     (consecutive events at least m/8 apart) are taken, longest first, until what
 *     remains fits the share, and the stretch from the first to the last gap taken
 *     becomes one break. Whatever happened inside a break is still drawn (a column shows
 *     its window's maximum), squeezed.
 *   - Without them, a gap between two events becomes a break when it is longer than
 *     half of everything else that remains on the axis.
 *   - torch.compile's compile phase (the recording's shape: compiling and autotuning,
 *     minutes of benchmark runs before the step they serve) is set-up too: each compile
 *     window is a break candidate, with iterations when it lasts longer than m.
 *   - Breaks that touch, or have less than a break's width of time between them, merge;
 *     at most MS_CHART_MAX_BREAKS are kept (those that save the most), and a break must
 *     save a twentieth of the axis and squeeze its stretch at least four times, or the
 *     axis stays linear there. A trace where nothing needs it gets the identity: the run
 *     axis is then the time axis.
 * Each break takes BREAK_SHARE of the final axis whatever it hides, so its width does not
 * depend on the pixels (the view's zoom reuses one warp at every scale); outside the
 * breaks one axis unit is one second. */
#include "chart_impl.h"
#include "render_util.h"

#include <math.h>
#include <stdlib.h>

#define BREAK_SHARE 0.015 /* about 20 px of a 1,400 px plot */
#define SLOW_PIECE 1.5    /* a piece longer than this many typical iterations is slow */
#define IDLE_FRACTION 8.0 /* an idle gap lasts at least m / this */
#define BIG_GAP 0.5       /* without iterations: a gap half as long as the rest is idle */

typedef struct span {
    double a, b; /* seconds since the first event */
} span;

static void identity(ms_chart_warp *w, double span_s)
{
    memset(w, 0, sizeof *w);
    w->n_segments = 1;
    w->t[1] = w->u[1] = span_s > 0 ? span_s : 1e-6;
}

double ms_chart_warp_u(const ms_chart_warp *w, double t)
{
    size_t n = w->n_segments;
    if (t <= w->t[0])
        return w->u[0] + (t - w->t[0]);
    if (t >= w->t[n])
        return w->u[n] + (t - w->t[n]);
    size_t lo = 0, hi = n - 1; /* the segment k with t[k] <= t < t[k+1] */
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (w->t[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (!w->gap[lo])
        return w->u[lo] + (t - w->t[lo]);
    return w->u[lo] + (t - w->t[lo]) / (w->t[lo + 1] - w->t[lo]) * (w->u[lo + 1] - w->u[lo]);
}

double ms_chart_warp_t(const ms_chart_warp *w, double u)
{
    size_t n = w->n_segments;
    if (u <= w->u[0])
        return w->t[0] + (u - w->u[0]);
    if (u >= w->u[n])
        return w->t[n] + (u - w->u[n]);
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (w->u[mid] <= u)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (!w->gap[lo])
        return w->t[lo] + (u - w->u[lo]);
    return w->t[lo] + (u - w->u[lo]) / (w->u[lo + 1] - w->u[lo]) * (w->t[lo + 1] - w->t[lo]);
}

static int by_start(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    return a->a < b->a ? -1 : a->a > b->a;
}

static int by_length_desc(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    double la = a->b - a->a, lb = b->b - b->a;
    return la > lb ? -1 : la < lb;
}

static int double_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

/* A gap: its length and the event it follows. */
typedef struct gap {
    double len;
    size_t at;
} gap;

static int gap_desc(const void *pa, const void *pb)
{
    const gap *a = pa, *b = pb;
    return a->len > b->len ? -1 : a->len < b->len ? 1 : (a->at > b->at) - (a->at < b->at);
}

typedef struct finder {
    const int64_t *t_us;
    size_t n;
    int64_t t0;
    gap *gaps; /* scratch */
    size_t cap;
    span *cands;
    size_t n_cands, cap_cands;
} finder;

static double sec(const finder *f, size_t e)
{
    return (double)(f->t_us[e] - f->t0) / 1e6;
}

static int push_cand(finder *f, double a, double b)
{
    if (!(b > a))
        return 0;
    if (!ms__render_grow((void **)&f->cands, &f->cap_cands, f->n_cands + 1, sizeof *f->cands,
                         16))
        return -1;
    f->cands[f->n_cands++] = (span){a, b};
    return 0;
}

/* Gaps of at least `min` seconds between events first .. last (indexes), into f->gaps. */
static int collect_gaps(finder *f, size_t first, size_t last, double min, size_t *n_out)
{
    size_t k = 0;
    for (size_t e = first; e < last; e++) {
        double g = (double)(f->t_us[e + 1] - f->t_us[e]) / 1e6;
        if (!(g >= min))
            continue;
        if (!ms__render_grow((void **)&f->gaps, &f->cap, k + 1, sizeof *f->gaps, 64))
            return -1;
        f->gaps[k++] = (gap){g, e};
    }
    *n_out = k;
    return 0;
}

/* The piece of events [first, end) runs to the next piece's first event; when it is
 * longer than `share` seconds, the stretch between its longest idle gaps is a candidate. */
static int slow_piece(finder *f, size_t first, size_t end, double share, double idle)
{
    if (end > f->n)
        end = f->n;
    if (first + 1 >= f->n || end <= first)
        return 0;
    size_t last = end < f->n ? end : f->n - 1; /* the event the piece runs to */
    double len = sec(f, last) - sec(f, first);
    if (!(len > share))
        return 0;
    size_t k;
    if (collect_gaps(f, first, last, idle, &k))
        return -1;
    if (k == 0)
        return 0;
    qsort(f->gaps, k, sizeof *f->gaps, gap_desc);
    double got = 0;
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t i = 0; i < k && got < len - share; i++) {
        got += f->gaps[i].len;
        lo = f->gaps[i].at < lo ? f->gaps[i].at : lo;
        hi = f->gaps[i].at > hi ? f->gaps[i].at : hi;
    }
    return lo == SIZE_MAX ? 0 : push_cand(f, sec(f, lo), sec(f, hi + 1));
}

static int iteration_pieces(finder *f, const ms_iterations *it, double m)
{
    size_t n_items = it->n + it->n_unfinished, prev = 0;
    for (size_t i = 0; i < n_items; i++) {
        const ms_iteration *x = &it->items[i];
        if (x->start_event < 0 || x->end_event < x->start_event)
            continue;
        size_t a = (size_t)x->start_event, b = (size_t)x->end_event;
        if (i == 0 && a > 0) {
            /* The set-up before the first iteration: a break of its own when it lasts
             * longer than one iteration (what it allocated still shows, squeezed). */
            double len = sec(f, a) - sec(f, 0);
            if (len > m && push_cand(f, 0, len))
                return -1;
        } else if (a > prev &&
                   slow_piece(f, prev, a, SLOW_PIECE * m, m / IDLE_FRACTION)) {
            return -1;
        }
        if (slow_piece(f, a, b, SLOW_PIECE * m, m / IDLE_FRACTION))
            return -1;
        prev = b > prev ? b : prev;
    }
    return slow_piece(f, prev, f->n, SLOW_PIECE * m, m / IDLE_FRACTION);
}

/* No iterations: a gap longer than half the rest of the axis is idle. */
static int big_gaps(finder *f, double T)
{
    size_t k;
    if (collect_gaps(f, 0, f->n - 1, T / 100, &k)) /* a smaller one can never qualify */
        return -1;
    if (k == 0)
        return 0;
    qsort(f->gaps, k, sizeof *f->gaps, gap_desc);
    double rest = T;
    for (size_t i = 0; i < k; i++) {
        double g = f->gaps[i].len;
        if (!(g >= BIG_GAP * (rest - g)))
            continue;
        rest -= g;
        if (push_cand(f, sec(f, f->gaps[i].at), sec(f, f->gaps[i].at + 1)))
            return -1;
    }
    return 0;
}

/* Merges touching candidates, keeps the ones worth a break, and writes the knots. */
static void knots(ms_chart_warp *w, span *c, size_t n, double T)
{
    qsort(c, n, sizeof *c, by_start);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && c[i].a <= c[k - 1].b) {
            c[k - 1].b = fmax(c[k - 1].b, c[i].b);
            continue;
        }
        c[k++] = c[i];
    }
    n = k;
    if (n > MS_CHART_MAX_BREAKS) {
        qsort(c, n, sizeof *c, by_length_desc);
        n = MS_CHART_MAX_BREAKS;
        qsort(c, n, sizeof *c, by_start);
    }
    /* Dropping a break widens the others; two rounds settle it (a third changes nothing
     * a reader could see). */
    double width = 0;
    for (int round = 0; round < 2; round++) {
        double hidden = 0;
        for (size_t i = 0; i < n; i++)
            hidden += c[i].b - c[i].a;
        double busy = T - hidden;
        width = BREAK_SHARE * busy / (1 - (double)n * BREAK_SHARE);
        double axis = busy + (double)n * width;
        /* Two breaks with less than a break's width of time between them are one. */
        k = 0;
        for (size_t i = 0; i < n; i++) {
            if (k && c[i].a - c[k - 1].b < width)
                c[k - 1].b = c[i].b;
            else
                c[k++] = c[i];
        }
        n = k;
        k = 0;
        for (size_t i = 0; i < n; i++) {
            double len = c[i].b - c[i].a;
            if (len >= 4 * width && len - width >= axis / 20)
                c[k++] = c[i];
        }
        n = k;
    }
    if (n == 0 || !(width > 0))
        return;
    size_t s = 0;
    double t = 0, u = 0;
    w->t[0] = w->u[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(c[i].b > t)) /* a trace whose times step back: keep the knots increasing */
            continue;
        if (c[i].a > t) {
            u += c[i].a - t;
            t = c[i].a;
            w->gap[s++] = false;
            w->t[s] = t;
            w->u[s] = u;
        }
        u += width;
        t = c[i].b;
        w->n_breaks++;
        w->gap[s++] = true;
        w->t[s] = t;
        w->u[s] = u;
    }
    if (T > t) {
        w->gap[s++] = false;
        w->t[s] = T;
        w->u[s] = u + (T - t);
    }
    w->n_segments = s;
}

/* The compile windows of the shape as candidates: with iterations those longer than one
 * typical iteration, without them all (knots keeps those that save enough). */
static int compile_pieces(finder *f, const ms_shape *sh, double m)
{
    for (size_t k = 0; sh && k < sh->n_compile; k++) {
        const ms_shape_compile *c = &sh->compile[k];
        if (c->start_event < 0 || c->end_event <= c->start_event || (size_t)c->end_event > f->n)
            continue;
        double a = sec(f, (size_t)c->start_event), b = sec(f, (size_t)c->end_event - 1);
        if (m > 0 && !(b - a > m))
            continue;
        if (push_cand(f, a, b))
            return -1;
    }
    return 0;
}

int ms_chart_warp_find(ms_chart_warp *out, const ms_trace *trace, const ms_iterations *it,
                       const ms_shape *shape, ms_error *err)
{
    if (!out || !trace)
        return ms__render_fail(err, MS_ERR_ARG, "no warp to fill or no trace");
    size_t n = trace->n;
    double T = n ? (double)(trace->time_us[n - 1] - trace->time_us[0]) / 1e6 : 0;
    identity(out, T);
    if (n < 2 || !trace->has_times || !(T > 0))
        return 0;
    finder f = {trace->time_us, n, trace->time_us[0], NULL, 0, NULL, 0, 0};
    double m = 0;
    if (it && it->n >= 2) {
        double *d = malloc(it->n * sizeof *d);
        if (!d)
            return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for the run axis");
        for (size_t i = 0; i < it->n; i++)
            d[i] = (double)(it->items[i].end_us - it->items[i].start_us) / 1e6;
        qsort(d, it->n, sizeof *d, double_cmp);
        m = d[(it->n - 1) / 2]; /* the lower median: one slow step of two is not typical */
        free(d);
    }
    int rc = m > 0 ? iteration_pieces(&f, it, m) : big_gaps(&f, T);
    if (!rc)
        rc = compile_pieces(&f, shape, m);
    if (!rc && f.n_cands)
        knots(out, f.cands, f.n_cands, T);
    free(f.gaps);
    free(f.cands);
    if (rc) {
        identity(out, T);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for the run axis");
    }
    return 0;
}

int ms__run_source(ms_chart_source *out, ms_chart_warp *w, const ms_chart_source *src,
                   ms_chart_x *mode, ms_error *err)
{
    *out = *src;
    if (*mode != MS_CHART_X_RUN)
        return 0;
    if (src->warp) {
        *w = *src->warp;
    } else {
        int rc = ms_chart_warp_find(w, src->trace, src->iterations, src->shape, err);
        if (rc)
            return rc;
    }
    out->warp = w;
    if (w->n_breaks == 0)
        *mode = MS_CHART_X_TIME; /* nothing compressed: the time axis, exactly */
    return 0;
}
