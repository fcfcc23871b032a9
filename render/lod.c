/* Level of detail (see chart_impl.h): what each pixel column of a chart shows. A column
 * stands for one x window and shows the allocator state with the most active bytes
 * inside it, plus the window's maximum reserved and minimum active bytes, so a chart
 * holds a few numbers per column however long the trace is. Everything here is one pass
 * over the trace's events. */
#include "chart_impl.h"

#include <math.h>

static int64_t active_of(const ms_timeline *tl, int64_t e)
{
    return e < 0 ? tl->active_start : tl->active[e];
}

static int64_t reserved_of(const ms_timeline *tl, int64_t e)
{
    return e < 0 ? tl->reserved_start : tl->reserved[e];
}

/* The column of an integer x key: a time offset in microseconds (x = key / 1e6) or an
 * event index (x = key), with the arithmetic msr_chart_event_x uses, so no event changes
 * column. It never decreases as the key grows: (double)key, the division by a positive
 * 1e6 or dx, the subtraction of x_lo, floor and the clamps all keep the order. */
typedef struct key_cols {
    bool by_time;
    double x_lo, x_hi, dx;
    size_t n_cols;
} key_cols;

static int64_t key_col(const key_cols *k, int64_t key)
{
    double x = k->by_time ? (double)key / 1e6 : (double)key;
    return msr__column_of(x, k->x_lo, k->x_hi, k->dx, k->n_cols);
}

/* The smallest key above `key` whose column is past `col` (the column of `key`), or
 * INT64_MAX when none is. Columns never decrease with the key (key_col), so a search
 * finds it; it starts where the column's right edge should be and mostly ends after two
 * columns are computed. The loop over events then tells columns apart by an integer
 * compare, and the divisions are paid once per column instead of once per event. */
static int64_t next_key(const key_cols *k, int64_t key, int64_t col)
{
    if (col >= (int64_t)k->n_cols || key == INT64_MAX)
        return INT64_MAX;
    double edge = col < 0                          ? k->x_lo
                  : col + 1 >= (int64_t)k->n_cols ? k->x_hi
                                                   : k->x_lo + (double)(col + 1) * k->dx;
    double guess = floor(edge * (k->by_time ? 1e6 : 1.0));
    int64_t lo = key, hi; /* key_col(lo) <= col < key_col(hi) */
    int64_t j = key + 1;
    if (guess > (double)key && guess < 9.0e18)
        j = (int64_t)guess;
    if (j <= key)
        j = key + 1;
    if (key_col(k, j) > col) {
        if (j - 1 == lo || key_col(k, j - 1) <= col)
            return j;
        hi = j - 1;
    } else {
        lo = j;
        for (uint64_t step = 1;; step *= 2) {
            /* Unsigned: lo may be negative (times out of order). */
            if (step > (uint64_t)INT64_MAX - (uint64_t)lo) {
                if (key_col(k, INT64_MAX) <= col)
                    return INT64_MAX;
                hi = INT64_MAX;
                break;
            }
            int64_t t = (int64_t)((uint64_t)lo + step);
            if (key_col(k, t) > col) {
                hi = t;
                break;
            }
            lo = t;
        }
    }
    while ((uint64_t)hi - (uint64_t)lo > 1) {
        int64_t mid = lo + (int64_t)(((uint64_t)hi - (uint64_t)lo) / 2);
        if (key_col(k, mid) > col)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* What the events of one column have shown so far in a run of them: folded into the
 * column's arrays when the run ends, exactly as the events one by one would have been
 * (the first event with the most active bytes wins, in event order). */
typedef struct col_run {
    int64_t first, last, ev, act, res, low;
} col_run;

static void fold_run(const col_run *r, int64_t c, int64_t *first, int64_t *last, int64_t *ev,
                     int64_t *act, int64_t *res, int64_t *low)
{
    if (first[c] == MSR_CHART_NO_EVENT)
        first[c] = r->first;
    last[c] = r->last;
    if (ev[c] == MSR_CHART_NO_EVENT || r->act > act[c]) {
        ev[c] = r->ev;
        act[c] = r->act;
    }
    if (res && r->res > res[c])
        res[c] = r->res;
    if (low && r->low < low[c])
        low[c] = r->low;
}

/* Per column: the state with the most active bytes among the events inside the column
 * and, when the column starts before its first event, the state carried in from the
 * left. One pass over the trace whatever the pixel count. */
int msr__aggregate(const msr_chart_source *src, msr_chart_x mode, double x_lo, double x_hi,
                  double dx, size_t n_cols, int64_t *ev, int64_t *act, int64_t *res,
                  int64_t *low, int64_t *hill, ms_error *err)
{
    const ms_timeline *tl = src->tl;
    int64_t *first = msr__alloc_n(n_cols, sizeof *first);
    int64_t *last = msr__alloc_n(n_cols, sizeof *last);
    if (!first || !last) {
        free(first);
        free(last);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for %zu chart columns", n_cols);
    }
    for (size_t c = 0; c < n_cols; c++) {
        first[c] = last[c] = MSR_CHART_NO_EVENT;
        ev[c] = MSR_CHART_NO_EVENT;
        act[c] = -1;
        if (res)
            res[c] = -1;
        if (low)
            low[c] = INT64_MAX;
    }
    int64_t carry = -1; /* the state before the first event */
    int64_t n = (int64_t)tl->n_events;
    const int64_t *t_us = src->trace->time_us;
    const int64_t *active = tl->active, *reserved = tl->reserved;
    int64_t t0 = msr__t_first(src);
    /* The run axis: x through the warp, its segment remembered from event to event. */
    const msr_chart_warp *warp = mode == MSR_CHART_X_RUN ? src->warp : NULL;
    if (warp) {
        size_t seg = 0;
        int64_t col = -1;
        for (int64_t e = 0; e < n; e++) {
            /* Events that share a time share its column, and skip the divisions. */
            if (e == 0 || t_us[e] != t_us[e - 1])
                col = msr__column_of(msr__warp_u_near(warp, (double)(t_us[e] - t0) / 1e6, &seg),
                                    x_lo, x_hi, dx, n_cols);
            if (col < 0) {
                carry = e;
                continue;
            }
            if (col >= (int64_t)n_cols)
                continue;
            col_run one = {e, e, e, active[e], reserved[e], active[e]};
            fold_run(&one, col, first, last, ev, act, res, low);
        }
    } else {
        /* x is a function of an integer key (the time offset, or the event index): the
         * events of a column are those whose key lies in [k_lo, k_hi), and a run of
         * them is summed up in registers. Keys out of order (a hostile trace's times)
         * only end runs early. */
        key_cols kc = {mode == MSR_CHART_X_TIME, x_lo, x_hi, dx, n_cols};
        int64_t k_lo = 1, k_hi = 0; /* empty: the first event finds its column */
        int64_t col = -1;
        const int64_t *keys = kc.by_time ? t_us : NULL;
        int64_t base = kc.by_time ? t0 : 0;
        for (int64_t e = 0; e < n;) {
            int64_t key = keys ? keys[e] - base : e;
            if (key < k_lo || key >= k_hi) {
                col = key_col(&kc, key);
                k_lo = key;
                k_hi = next_key(&kc, key, col);
            }
            if (col < 0) {
                carry = e++; /* before the window */
                continue;
            }
            if (col >= (int64_t)n_cols) {
                e++;
                continue; /* after it */
            }
            /* The run: this event and those after it whose keys stay in [k_lo, k_hi)
             * (one unsigned compare: k_lo < k_hi). */
            int64_t a = active[e];
            col_run r = {e, e, e, a, reserved[e], a};
            uint64_t width = (uint64_t)k_hi - (uint64_t)k_lo;
            for (e++; e < n; e++) {
                int64_t k = keys ? keys[e] - base : e;
                if ((uint64_t)k - (uint64_t)k_lo >= width)
                    break;
                a = active[e];
                if (a > r.act) {
                    r.ev = e;
                    r.act = a;
                }
                int64_t rs = reserved[e];
                r.res = rs > r.res ? rs : r.res;
                r.low = a < r.low ? a : r.low;
            }
            r.last = e - 1;
            fold_run(&r, col, first, last, ev, act, res, low);
        }
    }
    for (size_t c = 0; c < n_cols; c++) {
        double lo = x_lo + (double)c * dx;
        /* The state the column starts in: the one carried in from its left. */
        int64_t start = active_of(tl, carry);
        /* The state before the first event has no x of its own; it shows in the first
         * column with events, so a trace whose peak predates it still shows that peak. */
        bool carried = first[c] == MSR_CHART_NO_EVENT || carry == -1 ||
                       msr__event_x(src, mode, first[c]) > lo;
        if (carried) {
            int64_t v = active_of(tl, carry);
            if (ev[c] == MSR_CHART_NO_EVENT || v > act[c]) {
                ev[c] = carry;
                act[c] = v;
            }
            if (res && reserved_of(tl, carry) > res[c])
                res[c] = reserved_of(tl, carry);
            if (low && v < low[c])
                low[c] = v;
        }
        if (last[c] != MSR_CHART_NO_EVENT)
            carry = last[c];
        if (hill) {
            int64_t end = active_of(tl, carry), edge = start > end ? start : end;
            hill[c] = ev[c] != MSR_CHART_NO_EVENT && act[c] > edge ? act[c] - edge : 0;
        }
    }
    free(first);
    free(last);
    return 0;
}

/* Zoomed out over thousands of steps each column holds whole hills; its top is the
 * hilltop, and a line at the column minimum shows how deep the valleys go. A column at
 * the edge of a hill 130 px wide swings as much (the hill rises inside it) but hides
 * nothing: only a top well above both the state the column starts in and the one it
 * ends in is a hill narrower than the column. */
bool msr__show_low(const msr_chart *chart)
{
    size_t W = chart->n_cols;
    size_t hills = 0;
    for (size_t c = 0; c < W && chart->col_hill; c++)
        if (chart->col_event[c] != MSR_CHART_NO_EVENT &&
            (double)chart->col_hill[c] / chart->y_max * chart->plot.h >= 12)
            hills++;
    return hills * 4 >= W; /* a quarter of the columns hide whole hills */
}

int msr__series(msr_chart *chart, msr_chart_series *s, const msr_chart_source *src, size_t i,
               int64_t *ev, int64_t *data_max, ms_error *err)
{
    size_t W = chart->n_cols;
    s->active = msr__alloc_n(W, sizeof *s->active);
    s->reserved = msr__alloc_n(W, sizeof *s->reserved);
    if (!s->active || !s->reserved)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for the chart");
    int rc = msr__aggregate(src, chart->x_mode, chart->x_lo, chart->x_hi, chart->dx, W, ev,
                           s->active, s->reserved, NULL, NULL, err);
    if (rc)
        return rc;
    s->rgb = msr__palette(i);
    s->peak_bytes = -1;
    for (size_t c = 0; c < W; c++) {
        if (ev[c] == MSR_CHART_NO_EVENT) {
            s->active[c] = s->reserved[c] = -1;
            continue;
        }
        if (s->active[c] > s->peak_bytes) {
            s->peak_bytes = s->active[c];
            s->peak_x = msr__event_x(src, chart->x_mode, ev[c] < 0 ? 0 : ev[c]);
        }
        if (s->active[c] > *data_max)
            *data_max = s->active[c];
        if (s->reserved[c] > *data_max)
            *data_max = s->reserved[c];
    }
    char peak[32];
    msr_chart_format_bytes((double)(s->peak_bytes > 0 ? s->peak_bytes : 0), peak, sizeof peak);
    snprintf(s->label, sizeof s->label, "%s (cuda:%d, peak %s)",
             src->label ? src->label : "snapshot", src->tl->device, peak);
    return 0;
}

int msr_chart_extent(const msr_chart_source *src_in, const msr_chart_spec *spec_in,
                    double *x_span, int64_t *y_bytes, ms_error *err)
{
    int rc = msr__check_source(src_in, false, err);
    if (rc)
        return rc;
    msr_chart_spec run_spec = *spec_in;
    if (run_spec.x_mode == MSR_CHART_X_RUN && !src_in->trace->has_times)
        run_spec.x_mode = MSR_CHART_X_EVENTS; /* as msr_chart_build draws it */
    msr_chart_source run_src;
    msr_chart_warp warp;
    msr__run_source(&run_src, &warp, src_in, &run_spec.x_mode);
    const msr_chart_source *src = &run_src;
    const msr_chart_spec *spec = &run_spec;
    double lo, hi;
    rc = msr__window(spec, msr__full_span(src, spec->x_mode), &lo, &hi, err);
    if (rc)
        return rc;
    /* One column spanning the window gives exactly the maxima a chart would show. */
    int64_t ev = 0, act = 0, res = 0;
    rc = msr__aggregate(src, spec->x_mode, lo, hi, hi - lo, 1, &ev, &act, &res, NULL, NULL, err);
    if (rc)
        return rc;
    *x_span = hi - lo;
    *y_bytes = act > res ? act : res;
    return 0;
}
