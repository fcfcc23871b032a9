/* Quiet stretches of a trace: idle time apart from work, one rule for the iterations
 * table and the charts' run axis (memsnap/idle.h states it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memsnap/idle.h"

#define SLOW_PIECE 1.5    /* a piece longer than this many typical iterations is slow */
#define IDLE_FRACTION 8.0 /* a quiet gap lasts at least m / this */
#define BIG_GAP 0.5       /* without iterations: a gap half as long as the rest is idle */

typedef struct span {
    double a, b; /* seconds since the first event */
} span;

typedef struct gap {
    double len;
    size_t at; /* the event it follows */
} gap;

typedef struct finder {
    const int64_t *t_us;
    size_t n;
    int64_t t0;
    gap *scratch;
    size_t cap_scratch;
    span *cands;
    size_t n_cands, cap_cands;
    ms_idle_gap *taken; /* the gaps behind the candidates */
    size_t n_taken, cap_taken;
} finder;

static double sec(const finder *f, size_t e)
{
    return (double)(f->t_us[e] - f->t0) / 1e6;
}

static int by_start(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    return MS__CMP(a->a, b->a);
}

static int by_length_desc(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    return MS__CMP(b->b - b->a, a->b - a->a);
}

static int gap_desc(const void *pa, const void *pb)
{
    const gap *a = pa, *b = pb;
    return MS__CMP2(b->len, a->len, a->at, b->at);
}

static int taken_order(const void *pa, const void *pb)
{
    const ms_idle_gap *a = pa, *b = pb;
    return MS__CMP(a->after_event, b->after_event);
}

static int push_cand(finder *f, double a, double b)
{
    if (!(b > a))
        return 0;
    if (!ms__grow((void **)&f->cands, &f->cap_cands, f->n_cands + 1, sizeof *f->cands))
        return -1;
    f->cands[f->n_cands++] = (span){a, b};
    return 0;
}

static int push_gap(finder *f, size_t at)
{
    if (!ms__grow((void **)&f->taken, &f->cap_taken, f->n_taken + 1, sizeof *f->taken))
        return -1;
    f->taken[f->n_taken++] = (ms_idle_gap){(int64_t)at, f->t_us[at], f->t_us[at + 1], MS_IDLE_GAP,
                                           -1};
    return 0;
}

/* Gaps of at least `min` seconds between events first .. last (indexes), into scratch. */
static int collect_gaps(finder *f, size_t first, size_t last, double min, size_t *n_out)
{
    size_t k = 0;
    for (size_t e = first; e < last; e++) {
        double g = (double)(f->t_us[e + 1] - f->t_us[e]) / 1e6;
        if (!(g >= min))
            continue;
        if (!ms__grow((void **)&f->scratch, &f->cap_scratch, k + 1, sizeof *f->scratch))
            return -1;
        f->scratch[k++] = (gap){g, e};
    }
    *n_out = k;
    return 0;
}

/* The piece of events [first, end) runs to the next piece's first event; when it is
 * longer than `share` seconds, its longest quiet gaps are taken until what remains fits,
 * and the stretch between the first and last of them is a candidate. */
static int slow_piece(finder *f, size_t first, size_t end, double share, double quiet)
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
    if (collect_gaps(f, first, last, quiet, &k))
        return -1;
    if (k == 0)
        return 0;
    qsort(f->scratch, k, sizeof *f->scratch, gap_desc);
    double got = 0;
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t i = 0; i < k && got < len - share; i++) {
        got += f->scratch[i].len;
        lo = f->scratch[i].at < lo ? f->scratch[i].at : lo;
        hi = f->scratch[i].at > hi ? f->scratch[i].at : hi;
        if (push_gap(f, f->scratch[i].at))
            return -1;
    }
    return lo == SIZE_MAX ? 0 : push_cand(f, sec(f, lo), sec(f, hi + 1));
}

static int iteration_pieces(finder *f, const ms_iterations *it, double m, ms_idle *out)
{
    size_t n_items = it->n + it->n_unfinished, prev = 0;
    double share = SLOW_PIECE * m, quiet = m / IDLE_FRACTION;
    for (size_t i = 0; i < n_items; i++) {
        const ms_iteration *x = &it->items[i];
        if (x->start_event < 0 || x->end_event < x->start_event)
            continue;
        size_t a = (size_t)x->start_event, b = (size_t)x->end_event;
        if (i == 0 && a > 0) {
            /* The set-up before the first iteration: a break of its own when it lasts
             * longer than one iteration (what it allocated still shows, squeezed). */
            double len = sec(f, a < f->n ? a : f->n - 1) - sec(f, 0);
            if (len > m) {
                if (push_cand(f, 0, len))
                    return -1;
                out->setup_before_us = (int64_t)llround(len * 1e6);
            }
        } else if (a > prev && slow_piece(f, prev, a, share, quiet)) {
            return -1;
        }
        if (slow_piece(f, a, b, share, quiet))
            return -1;
        prev = b > prev ? b : prev;
    }
    return slow_piece(f, prev, f->n, share, quiet);
}

/* No iterations: a gap longer than half the rest of the axis is idle. */
static int big_gaps(finder *f, double T)
{
    size_t k;
    if (collect_gaps(f, 0, f->n - 1, T / 100, &k)) /* a smaller one can never qualify */
        return -1;
    if (k == 0)
        return 0;
    qsort(f->scratch, k, sizeof *f->scratch, gap_desc);
    double rest = T;
    for (size_t i = 0; i < k; i++) {
        double g = f->scratch[i].len;
        if (!(g >= BIG_GAP * (rest - g)))
            continue;
        rest -= g;
        if (push_cand(f, sec(f, f->scratch[i].at), sec(f, f->scratch[i].at + 1)) ||
            push_gap(f, f->scratch[i].at))
            return -1;
    }
    return 0;
}

/* The compile windows as candidates (with iterations those longer than one typical
 * iteration, without them all: keep_breaks keeps those that hide enough), and the quiet
 * gaps taken inside any of them given back: compiling is work the program did, not
 * idle. */
static int compile_pieces(finder *f, const ms_shape *sh, double m)
{
    for (size_t k = 0; sh && k < sh->n_compile; k++) {
        const ms_shape_compile *c = &sh->compile[k];
        if (c->start_event < 0 || c->end_event <= c->start_event || (size_t)c->end_event > f->n)
            continue;
        size_t first = (size_t)c->start_event, last = (size_t)c->end_event - 1;
        double a = sec(f, first), b = sec(f, last);
        if (!(m > 0 && !(b - a > m)) && push_cand(f, a, b))
            return -1;
        size_t kept = 0;
        for (size_t i = 0; i < f->n_taken; i++) {
            size_t at = (size_t)f->taken[i].after_event;
            if (at >= first && at < last)
                continue;
            f->taken[kept++] = f->taken[i];
        }
        f->n_taken = kept;
    }
    return 0;
}

/* Merges touching candidates and keeps the ones worth a break; returns their count (into
 * c[]) and the width each takes. */
static size_t keep_breaks(span *c, size_t n, double T, double *width_out)
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
    if (n > MS_IDLE_MAX_BREAKS) {
        qsort(c, n, sizeof *c, by_length_desc);
        n = MS_IDLE_MAX_BREAKS;
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
        width = MS_IDLE_BREAK_SHARE * busy / (1 - (double)n * MS_IDLE_BREAK_SHARE);
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
    *width_out = n && width > 0 ? width : 0;
    return *width_out > 0 ? n : 0;
}

static int push_part(ms_idle *out, size_t *cap, const ms_idle_gap *g, int64_t a, int64_t b,
                     ms_idle_place place, int64_t iteration)
{
    if (!(b > a))
        return 0;
    if (!ms__grow((void **)&out->gaps, cap, out->n_gaps + 1, sizeof *out->gaps))
        return -1;
    out->gaps[out->n_gaps++] = (ms_idle_gap){g->after_event, a, b, place, iteration};
    return 0;
}

/* A quiet gap cut at the iterations' times, each part placed: before the first iteration
 * and inside it set-up (the first step's warm-up is work), inside a later one idle
 * inside it, between two idle before the next, after the last trailing. Iterations are
 * placed by time, not by event: an iteration cut at an annotation may hold, by event,
 * the quiet time after that annotation's end. */
static int place_gap(ms_idle *out, size_t *cap, const ms_idle_gap *g, const ms_iterations *it,
                     size_t *from)
{
    size_t n = out->n_items;
    if (n == 0)
        return push_part(out, cap, g, g->start_us, g->end_us, MS_IDLE_GAP, -1);
    int64_t a = g->start_us;
    while (*from < n && it->items[*from].end_us <= a)
        (*from)++;
    for (size_t k = *from; k < n && a < g->end_us; k++) {
        const ms_iteration *x = &it->items[k];
        int64_t cut = x->start_us < g->end_us ? x->start_us : g->end_us;
        if (push_part(out, cap, g, a, cut, k == 0 ? MS_IDLE_SETUP : MS_IDLE_BEFORE,
                      k == 0 ? -1 : (int64_t)k))
            return -1;
        a = cut > a ? cut : a;
        cut = x->end_us < g->end_us ? x->end_us : g->end_us;
        if (push_part(out, cap, g, a, cut, k == 0 ? MS_IDLE_SETUP : MS_IDLE_INSIDE, (int64_t)k))
            return -1;
        a = cut > a ? cut : a;
    }
    return push_part(out, cap, g, a, g->end_us, MS_IDLE_TRAILING, -1);
}

/* Keeps the gaps inside a kept break, places them and adds them up. */
static int settle(ms_idle *out, finder *f, const ms_iterations *it)
{
    if (f->n_taken)
        qsort(f->taken, f->n_taken, sizeof *f->taken, taken_order);
    bool setup_kept = false;
    for (size_t j = 0; j < out->n_breaks; j++)
        setup_kept = setup_kept || out->breaks[j].from_s <= 0;
    if (!setup_kept)
        out->setup_before_us = 0;
    out->n_items = it ? it->n + it->n_unfinished : 0;
    if (out->n_items) {
        out->idle_before_us = calloc(out->n_items, sizeof *out->idle_before_us);
        out->idle_inside_us = calloc(out->n_items, sizeof *out->idle_inside_us);
        out->setup_us = calloc(out->n_items, sizeof *out->setup_us);
        if (!out->idle_before_us || !out->idle_inside_us || !out->setup_us)
            return -1;
    }
    size_t cap = 0, from = 0;
    for (size_t i = 0; i < f->n_taken; i++) {
        const ms_idle_gap *g = &f->taken[i];
        double a = (double)(g->start_us - f->t0) / 1e6, b = (double)(g->end_us - f->t0) / 1e6;
        bool kept = false;
        for (size_t j = 0; j < out->n_breaks && !kept; j++)
            kept = a >= out->breaks[j].from_s && b <= out->breaks[j].to_s;
        if (kept && place_gap(out, &cap, g, it, &from))
            return -1;
    }
    for (size_t i = 0; i < out->n_gaps; i++) {
        const ms_idle_gap *g = &out->gaps[i];
        int64_t len = g->end_us - g->start_us;
        bool item = g->iteration >= 0 && (size_t)g->iteration < out->n_items;
        switch (g->place) {
        case MS_IDLE_SETUP:
            if (item)
                out->setup_us[g->iteration] += len;
            continue;
        case MS_IDLE_BEFORE:
            if (item)
                out->idle_before_us[g->iteration] += len;
            break;
        case MS_IDLE_INSIDE:
            if (item)
                out->idle_inside_us[g->iteration] += len;
            break;
        case MS_IDLE_TRAILING:
            out->trailing_us += len;
            break;
        case MS_IDLE_GAP:
            break;
        }
        out->idle_us += len;
    }
    return 0;
}

int ms_idle_find(ms_idle **out, const ms_trace *trace, const ms_iterations *it,
                 const ms_shape *shape, ms_error *err)
{
    if (!out || !trace)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_idle_find: bad argument");
    *out = NULL;
    ms_idle *r = calloc(1, sizeof *r);
    if (!r)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory for idle time");
    size_t n = trace->n;
    double T = n ? (double)(trace->time_us[n - 1] - trace->time_us[0]) / 1e6 : 0;
    r->span_s = T;
    finder f;
    memset(&f, 0, sizeof f);
    f.t_us = trace->time_us;
    f.n = n;
    f.t0 = n ? trace->time_us[0] : 0;
    double m = 0;
    int rc = 0;
    /* A trace without times (or of one instant) has no idle time: nothing to find. */
    bool timed = n >= 2 && trace->has_times && T > 0;
    if (timed && it && it->n >= 2) {
        double *d = malloc(it->n * sizeof *d);
        if (!d)
            rc = -1;
        for (size_t i = 0; d && i < it->n; i++)
            d[i] = (double)(it->items[i].end_us - it->items[i].start_us) / 1e6;
        if (d) {
            qsort(d, it->n, sizeof *d, ms__cmp_double);
            m = d[(it->n - 1) / 2]; /* the lower median: one slow step of two is not typical */
        }
        free(d);
    }
    if (!rc && timed)
        rc = m > 0 ? iteration_pieces(&f, it, m, r) : big_gaps(&f, T);
    if (!rc && timed)
        rc = compile_pieces(&f, shape, m);
    if (!rc && f.n_cands) {
        r->n_breaks = keep_breaks(f.cands, f.n_cands, T, &r->break_width_s);
        for (size_t i = 0; i < r->n_breaks; i++)
            r->breaks[i] = (ms_idle_break){f.cands[i].a, f.cands[i].b};
    }
    if (!rc)
        rc = settle(r, &f, it);
    free(f.scratch);
    free(f.cands);
    free(f.taken);
    if (rc) {
        ms_idle_free(r);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory for idle time");
    }
    *out = r;
    return 0;
}

void ms_idle_free(ms_idle *idle)
{
    if (!idle)
        return;
    MS__FREE_ALL(idle->gaps, idle->idle_before_us, idle->idle_inside_us, idle->setup_us, idle);
}
