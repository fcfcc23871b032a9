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

/* The smallest time offset d whose x, (double)d / 1e6, passes `x_min` (strictly when
 * `above`). x grows with d, so the test is one integer compare per event and events
 * outside a window skip the divisions; the search checks the very arithmetic the loop
 * uses, so no event changes column. */
static int64_t first_offset(double x_min, bool above)
{
    if (!(x_min > -4.0e12)) /* far before any time (+-2^62 us is 4.6e12 s) */
        return INT64_MIN;
    if (!(x_min < 4.0e12))
        return INT64_MAX;
    int64_t d = (int64_t)floor(x_min * 1e6) - 2;
    while (above ? !((double)d / 1e6 > x_min) : !((double)d / 1e6 >= x_min))
        d++;
    while (above ? (double)(d - 1) / 1e6 > x_min : (double)(d - 1) / 1e6 >= x_min)
        d--;
    return d;
}

/* Per column: the state with the most active bytes among the events inside the column
 * and, when the column starts before its first event, the state carried in from the
 * left. One pass over the trace whatever the pixel count. */
int ms__aggregate(const ms_chart_source *src, ms_chart_x mode, double x_lo, double x_hi,
                  double dx, size_t n_cols, int64_t *ev, int64_t *act, int64_t *res,
                  int64_t *low, ms_error *err)
{
    const ms_timeline *tl = src->tl;
    int64_t *first = ms__alloc_n(n_cols, sizeof *first);
    int64_t *last = ms__alloc_n(n_cols, sizeof *last);
    if (!first || !last) {
        free(first);
        free(last);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for %zu chart columns", n_cols);
    }
    for (size_t c = 0; c < n_cols; c++) {
        first[c] = last[c] = MS_CHART_NO_EVENT;
        ev[c] = MS_CHART_NO_EVENT;
        act[c] = -1;
        if (res)
            res[c] = -1;
        if (low)
            low[c] = INT64_MAX;
    }
    int64_t carry = -1; /* the state before the first event */
    int64_t n = (int64_t)tl->n_events;
    const int64_t *t_us = src->trace->time_us;
    int64_t t0 = ms__t_first(src);
    int64_t col = -1;
    bool by_time = mode == MS_CHART_X_TIME;
    /* The run axis: x through the warp, its segment remembered from event to event. */
    const ms_chart_warp *warp = mode == MS_CHART_X_RUN ? src->warp : NULL;
    size_t seg = 0;
    int64_t d_lo = by_time ? first_offset(x_lo, false) : 0;  /* x >= x_lo from here */
    int64_t d_hi = by_time ? first_offset(x_hi, true) : 0;   /* x > x_hi from here */
    for (int64_t e = 0; e < n; e++) {
        if (by_time && t_us[e] - t0 < d_lo) {
            carry = e; /* before the window: column -1 */
            continue;
        }
        if (by_time && t_us[e] - t0 >= d_hi)
            continue; /* after it */
        /* The same arithmetic as ms_chart_event_x, inlined for the hot loop; events that
         * share a time share its column, and skip the two divisions. */
        if (!(by_time || warp) || e == 0 || t_us[e] != t_us[e - 1]) {
            double x = by_time ? (double)(t_us[e] - t0) / 1e6
                       : warp  ? ms__warp_u_near(warp, (double)(t_us[e] - t0) / 1e6, &seg)
                               : (double)e;
            col = ms__column_of(x, x_lo, x_hi, dx, n_cols);
        }
        int64_t c = col;
        if (c < 0) {
            carry = e;
            continue;
        }
        if (c >= (int64_t)n_cols)
            continue;
        if (first[c] == MS_CHART_NO_EVENT)
            first[c] = e;
        last[c] = e;
        if (ev[c] == MS_CHART_NO_EVENT || tl->active[e] > act[c]) {
            ev[c] = e;
            act[c] = tl->active[e];
        }
        if (res && tl->reserved[e] > res[c])
            res[c] = tl->reserved[e];
        if (low && tl->active[e] < low[c])
            low[c] = tl->active[e];
    }
    for (size_t c = 0; c < n_cols; c++) {
        double lo = x_lo + (double)c * dx;
        /* The state before the first event has no x of its own; it shows in the first
         * column with events, so a trace whose peak predates it still shows that peak. */
        bool carried = first[c] == MS_CHART_NO_EVENT || carry == -1 ||
                       ms__event_x(src, mode, first[c]) > lo;
        if (carried) {
            int64_t v = active_of(tl, carry);
            if (ev[c] == MS_CHART_NO_EVENT || v > act[c]) {
                ev[c] = carry;
                act[c] = v;
            }
            if (res && reserved_of(tl, carry) > res[c])
                res[c] = reserved_of(tl, carry);
            if (low && v < low[c])
                low[c] = v;
        }
        if (last[c] != MS_CHART_NO_EVENT)
            carry = last[c];
    }
    free(first);
    free(last);
    return 0;
}

/* Zoomed out over thousands of steps each column holds whole hills; its top is the
 * hilltop, and a line at the column minimum shows how deep the valleys go. */
bool ms__show_low(const ms_chart *chart)
{
    size_t W = chart->n_cols;
    size_t swinging = 0;
    for (size_t c = 0; c < W; c++)
        if (chart->col_event[c] != MS_CHART_NO_EVENT &&
            (double)(chart->col_active[c] - chart->col_low[c]) / chart->y_max * chart->plot.h >= 12)
            swinging++;
    return swinging * 4 >= W; /* a quarter of the columns hide whole hills */
}

int ms__series(ms_chart *chart, ms_chart_series *s, const ms_chart_source *src, size_t i,
               int64_t *ev, int64_t *data_max, ms_error *err)
{
    size_t W = chart->n_cols;
    s->active = ms__alloc_n(W, sizeof *s->active);
    s->reserved = ms__alloc_n(W, sizeof *s->reserved);
    if (!s->active || !s->reserved)
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for the chart");
    int rc = ms__aggregate(src, chart->x_mode, chart->x_lo, chart->x_hi, chart->dx, W, ev,
                           s->active, s->reserved, NULL, err);
    if (rc)
        return rc;
    s->rgb = ms__palette(i);
    s->peak_bytes = -1;
    for (size_t c = 0; c < W; c++) {
        if (ev[c] == MS_CHART_NO_EVENT) {
            s->active[c] = s->reserved[c] = -1;
            continue;
        }
        if (s->active[c] > s->peak_bytes) {
            s->peak_bytes = s->active[c];
            s->peak_x = ms__event_x(src, chart->x_mode, ev[c] < 0 ? 0 : ev[c]);
        }
        if (s->active[c] > *data_max)
            *data_max = s->active[c];
        if (s->reserved[c] > *data_max)
            *data_max = s->reserved[c];
    }
    char peak[32];
    ms_chart_format_bytes((double)(s->peak_bytes > 0 ? s->peak_bytes : 0), peak, sizeof peak);
    snprintf(s->label, sizeof s->label, "%s (cuda:%d, peak %s)",
             src->label ? src->label : "snapshot", src->tl->device, peak);
    return 0;
}

int ms_chart_extent(const ms_chart_source *src_in, const ms_chart_spec *spec_in,
                    double *x_span, int64_t *y_bytes, ms_error *err)
{
    int rc = ms__check_source(src_in, false, err);
    if (rc)
        return rc;
    ms_chart_spec run_spec = *spec_in;
    if (run_spec.x_mode == MS_CHART_X_RUN && !src_in->trace->has_times)
        run_spec.x_mode = MS_CHART_X_EVENTS; /* as ms_chart_build draws it */
    ms_chart_source run_src;
    ms_chart_warp warp;
    rc = ms__run_source(&run_src, &warp, src_in, &run_spec.x_mode, err);
    if (rc)
        return rc;
    const ms_chart_source *src = &run_src;
    const ms_chart_spec *spec = &run_spec;
    double lo, hi;
    rc = ms__window(spec, ms__full_span(src, spec->x_mode), &lo, &hi, err);
    if (rc)
        return rc;
    /* One column spanning the window gives exactly the maxima a chart would show. */
    int64_t ev = 0, act = 0, res = 0;
    rc = ms__aggregate(src, spec->x_mode, lo, hi, hi - lo, 1, &ev, &act, &res, NULL, err);
    if (rc)
        return rc;
    *x_span = hi - lo;
    *y_bytes = act > res ? act : res;
    return 0;
}
