/* The chart engine's fast paths against the plain definitions they replace, on random
 * hand-made traces (times in order, with long runs of one time, and out of order as a
 * hostile file may have them; allocations from before the trace, never freed, freed
 * before they are made): per column, the representative event and the curves are those
 * of the event-by-event pass (render/lod.c finds a column's events by integer key
 * ranges instead), and every band's height is the bytes its allocation holds after the
 * column's event (render/stack.c puts changes at column ranks and sums rows). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "chart.h"
#include "memsnap/memsnap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_u64(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t pick(int64_t lo, int64_t hi) /* [lo, hi] */
{
    return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1));
}

typedef struct trace_case {
    size_t n, n_allocs;
    uint8_t *action;
    uint64_t *addr, *size;
    int64_t *time_us, *active, *reserved;
    ms_alloc *allocs;
    ms_trace tr;
    ms_timeline tl;
} trace_case;

/* `shape` 0: times in order, often repeated; 1: a few out of order; 2: every time
 * random; 3: far fewer events than columns; 4: times at the reader's limits (+-2^62 us),
 * so offsets from the first time come near the ends of int64. */
static void make_case(trace_case *c, int shape)
{
    memset(c, 0, sizeof *c);
    size_t n = shape == 3 ? (size_t)pick(2, 60) : (size_t)pick(200, 20000);
    c->n = n;
    c->action = calloc(n, 1);
    c->addr = calloc(n, sizeof *c->addr);
    c->size = calloc(n, sizeof *c->size);
    c->time_us = calloc(n, sizeof *c->time_us);
    c->active = calloc(n, sizeof *c->active);
    c->reserved = calloc(n, sizeof *c->reserved);
    int64_t t = pick(-5000000, 5000000000LL), a = 1000;
    for (size_t e = 0; e < n; e++) {
        if (next_u64() % 3)
            t += pick(0, e % 500 == 0 ? 3000000 : 900);
        c->time_us[e] = shape == 2 ? pick(-1000, 2000000) : t;
        if (shape == 4)
            c->time_us[e] = e == 0 ? -((int64_t)1 << 62)
                                   : ((int64_t)1 << 62) - pick(0, (int64_t)1 << 40);
        if (shape == 1 && next_u64() % 50 == 0)
            c->time_us[e] = t - pick(0, 500000);
        a += pick(-300, 300);
        if (a < 0)
            a = 0;
        c->active[e] = a;
        c->reserved[e] = a + pick(0, 500);
        c->action[e] = next_u64() % 97 == 0 ? MS_ACT_OOM : MS_ACT_ALLOC;
    }
    size_t na = (size_t)pick(1, 900);
    c->n_allocs = na;
    c->allocs = calloc(na, sizeof *c->allocs);
    for (size_t i = 0; i < na; i++) {
        ms_alloc *al = &c->allocs[i];
        al->addr = 0x1000 * (i + 1);
        al->size = (uint64_t)pick(1, 1 << 20);
        al->alloc_event = next_u64() % 10 == 0 ? -1 : pick(0, (int64_t)n - 1);
        int64_t r = pick(0, 9);
        al->free_event = r == 0   ? -1
                         : r == 1 ? pick(0, (int64_t)n - 1) /* maybe before its alloc */
                                  : pick(al->alloc_event < 0 ? 0 : al->alloc_event,
                                         (int64_t)n - 1);
        al->free_requested_event = -1;
        al->stack = MS_NO_STACK;
    }
    c->tr = (ms_trace){0, n, c->action, c->addr, c->size, c->time_us, NULL, NULL, true,
                       NULL, NULL, false, 0};
    c->tl.n_events = n;
    c->tl.t_first_us = c->time_us[0];
    c->tl.t_last_us = c->time_us[n - 1];
    c->tl.has_times = true;
    c->tl.active = c->active;
    c->tl.reserved = c->reserved;
    c->tl.active_start = pick(0, 2000);
    c->tl.reserved_start = c->tl.active_start + 100;
    c->tl.allocs = c->allocs;
    c->tl.n_allocs = na;
}

static void free_case(trace_case *c)
{
    free(c->action);
    free(c->addr);
    free(c->size);
    free(c->time_us);
    free(c->active);
    free(c->reserved);
    free(c->allocs);
}

/* x of an event, as msr_chart_event_x defines it. */
static double x_of(const trace_case *c, msr_chart_x mode, int64_t e)
{
    return mode == MSR_CHART_X_EVENTS ? (double)e
                                     : (double)(c->time_us[e] - c->time_us[0]) / 1e6;
}

static int64_t col_of(const msr_chart *ch, double x)
{
    if (!(x >= ch->x_lo))
        return -1;
    if (x > ch->x_hi)
        return (int64_t)ch->n_cols;
    double k = floor((x - ch->x_lo) / ch->dx);
    return k >= (double)ch->n_cols ? (int64_t)ch->n_cols - 1 : (int64_t)k;
}

/* The bytes an allocation adds to its band's height after event e (a column showing
 * nothing holds none): made before the trace or at e or before, not yet freed. */
static int64_t held(const ms_alloc *a, int64_t e)
{
    if (e == MSR_CHART_NO_EVENT)
        return 0;
    int64_t b = 0;
    if (a->alloc_event < 0 || a->alloc_event <= e)
        b += (int64_t)a->size;
    if (a->free_event >= 0 && a->free_event <= e)
        b -= (int64_t)a->size;
    return b;
}

/* The event-by-event definition of the columns, then every band's height. */
static void check_chart(const char *ctx, const trace_case *c, const msr_chart *ch)
{
    size_t W = ch->n_cols;
    int64_t *first = malloc(W * sizeof *first), *last = malloc(W * sizeof *last);
    int64_t *ev = malloc(W * sizeof *ev), *act = malloc(W * sizeof *act);
    int64_t *res = malloc(W * sizeof *res), *low = malloc(W * sizeof *low);
    for (size_t k = 0; k < W; k++) {
        first[k] = last[k] = ev[k] = MSR_CHART_NO_EVENT;
        act[k] = res[k] = -1;
        low[k] = INT64_MAX;
    }
    int64_t carry = -1;
    for (size_t e = 0; e < c->n; e++) {
        int64_t k = col_of(ch, x_of(c, ch->x_mode, (int64_t)e));
        if (k < 0) {
            carry = (int64_t)e;
            continue;
        }
        if (k >= (int64_t)W)
            continue;
        if (first[k] == MSR_CHART_NO_EVENT)
            first[k] = (int64_t)e;
        last[k] = (int64_t)e;
        if (ev[k] == MSR_CHART_NO_EVENT || c->active[e] > act[k]) {
            ev[k] = (int64_t)e;
            act[k] = c->active[e];
        }
        if (c->reserved[e] > res[k])
            res[k] = c->reserved[e];
        if (c->active[e] < low[k])
            low[k] = c->active[e];
    }
    for (size_t k = 0; k < W; k++) {
        double lo = ch->x_lo + (double)k * ch->dx;
        if (first[k] == MSR_CHART_NO_EVENT || carry == -1 ||
            x_of(c, ch->x_mode, first[k]) > lo) {
            int64_t v = carry < 0 ? c->tl.active_start : c->active[carry];
            int64_t r = carry < 0 ? c->tl.reserved_start : c->reserved[carry];
            if (ev[k] == MSR_CHART_NO_EVENT || v > act[k]) {
                ev[k] = carry;
                act[k] = v;
            }
            if (r > res[k])
                res[k] = r;
            if (v < low[k])
                low[k] = v;
        }
        if (last[k] != MSR_CHART_NO_EVENT)
            carry = last[k];
    }
    size_t bad = 0;
    for (size_t k = 0; k < W && bad < 5; k++) {
        bool same = ch->col_event[k] == ev[k] && ch->col_active[k] == act[k] &&
                    ch->col_reserved[k] == res[k] && ch->col_low[k] == low[k];
        CHECK_TRUE_IN(ctx, same);
        if (!same) {
            fprintf(stderr, "%s: column %zu: event %lld (want %lld), active %lld (%lld)\n", ctx,
                    k, (long long)ch->col_event[k], (long long)ev[k],
                    (long long)ch->col_active[k], (long long)act[k]);
            bad++;
        }
    }
    /* Bands: one allocation each (by allocation), or all of them in one (by site, with no
     * snapshot every allocation has the same unknown site). */
    int64_t *all = calloc(W, sizeof *all); /* every allocation's bytes, per column */
    for (size_t i = 0; i < c->n_allocs && !bad; i++)
        for (size_t k = 0; k < W; k++)
            all[k] += held(&c->allocs[i], ch->col_event[k]);
    for (size_t k = 0; k < W && !bad; k++) {
        int64_t e = ch->col_event[k];
        int64_t stacked = 0;
        for (size_t g = 0; g < ch->n_groups; g++) {
            const msr_chart_group *gp = &ch->groups[g];
            int64_t want = gp->kind == MSR_CHART_GROUP_ALLOC ? held(&c->allocs[gp->alloc], e)
                                                            : all[k];
            want = want > 0 ? want : 0;
            int64_t got = ch->heights[g * W + k];
            if (got != want) {
                CHECK_EQ_INT_IN(ctx, got, want);
                fprintf(stderr, "%s: band %zu column %zu (event %lld)\n", ctx, g, k, (long long)e);
                bad++;
                break;
            }
            stacked += got;
        }
        int64_t other = e == MSR_CHART_NO_EVENT ? 0 : ch->col_active[k] - stacked;
        CHECK_EQ_INT_IN(ctx, ch->col_other[k], other > 0 ? other : 0);
    }
    free(all);
    free(first);
    free(last);
    free(ev);
    free(act);
    free(res);
    free(low);
}

int main(void)
{
    for (int round = 0; round < 50; round++) {
        int shape = round % 5;
        trace_case c;
        make_case(&c, shape);
        msr_chart_source src = {.snap = NULL, .trace = &c.tr, .tl = &c.tl, .label = "random"};
        for (int v = 0; v < 6; v++) {
            msr_chart_spec spec;
            memset(&spec, 0, sizeof spec);
            spec.no_legend = true;
            spec.x_mode = v & 1 ? MSR_CHART_X_EVENTS : MSR_CHART_X_TIME;
            spec.by = v >= 4 ? MSR_CHART_BY_SITE : MSR_CHART_BY_ALLOC;
            spec.top = v >= 4 ? 0 : (size_t)pick(1, 500);
            if (v >= 2) { /* a zoomed window, maybe past either end */
                double span = spec.x_mode == MSR_CHART_X_EVENTS
                                  ? (double)c.n
                                  : (double)(c.time_us[c.n - 1] - c.time_us[0]) / 1e6;
                if (!(span > 0))
                    span = 1;
                spec.has_from = spec.has_to = true;
                spec.from = span * (double)pick(-10, 90) / 100.0;
                spec.to = spec.from + span * (double)pick(1, 60) / 100.0;
                if (spec.from < 0)
                    spec.from = 0;
            }
            char ctx[64];
            snprintf(ctx, sizeof ctx, "round %d shape %d view %d", round, shape, v);
            msr_chart *ch = NULL;
            ms_error err;
            int rc = msr_chart_build(&ch, &src, &spec,
                                    (msr_chart_rect){0, 0, (double)pick(200, 1400), 400}, &err);
            if (rc == MS_ERR_ARG) /* a window that holds nothing of the trace */
                continue;
            CHECK_EQ_INT_IN(ctx, rc, 0);
            if (rc) {
                fprintf(stderr, "%s: %s\n", ctx, err.message);
                continue;
            }
            check_chart(ctx, &c, ch);
            msr_chart_free(ch);
        }
        free_case(&c);
    }
    return check_finish("test_chart_engine");
}
