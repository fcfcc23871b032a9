/* Chart geometry (see geometry.h). No cairo calls and no printing here. */
#include "geometry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_util.h"

/* ------------------------------------------------------------------ small helpers */

/* calloc with the multiplication checked, so no size computed from trace lengths can
 * wrap around into a short buffer. */
static void *alloc_n(size_t n, size_t size)
{
    if (n == 0)
        n = 1;
    if (size && n > SIZE_MAX / size)
        return NULL;
    return calloc(n, size);
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static uint32_t hash32(uint64_t v)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    v *= 0xc4ceb9fe1a85ec53ULL;
    v ^= v >> 33;
    return (uint32_t)v;
}

static uint32_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return hash32(h);
}

/* ------------------------------------------------------------------ colours */

/* Hues picked to stay apart from each other and from the neutral "other" grey. */
static const ms_chart_rgb PALETTE[] = {
    {0.26, 0.52, 0.78}, {0.96, 0.56, 0.17}, {0.30, 0.66, 0.33}, {0.85, 0.28, 0.30},
    {0.58, 0.44, 0.78}, {0.62, 0.42, 0.33}, {0.90, 0.47, 0.75}, {0.72, 0.72, 0.20},
    {0.20, 0.74, 0.80}, {0.98, 0.78, 0.25}, {0.15, 0.55, 0.52}, {0.74, 0.62, 0.92},
};
#define PALETTE_N (sizeof PALETTE / sizeof PALETTE[0])

static ms_chart_rgb mix(ms_chart_rgb a, ms_chart_rgb b, double t)
{
    ms_chart_rgb r = {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
    return r;
}

static ms_chart_rgb grey(double v)
{
    ms_chart_rgb r = {v, v, v};
    return r;
}

/* Neighbouring bands of one site must stay tellable apart, so each allocation gets its
 * site's hue lightened or darkened by an amount fixed by its index. */
static ms_chart_rgb shade(ms_chart_rgb base, uint64_t key)
{
    double t = (double)(hash32(key) % 1000u) / 1000.0 - 0.5; /* -0.5 .. 0.5 */
    if (t >= 0)
        return mix(base, grey(1.0), t * 0.55);
    return mix(base, grey(0.0), -t * 0.45);
}

static ms_chart_theme theme_for(bool dark)
{
    ms_chart_theme t;
    if (dark) {
        t.bg = (ms_chart_rgb){0.09, 0.10, 0.12};
        t.fg = grey(0.90);
        t.muted = grey(0.62);
        t.grid = grey(0.22);
        t.other = grey(0.36);
        t.reserved = grey(0.95);
        t.peak = (ms_chart_rgb){1.00, 0.42, 0.40};
        t.oom = (ms_chart_rgb){1.00, 0.30, 0.25};
        t.highlight = (ms_chart_rgb){1.00, 0.22, 0.22};
        t.outline = grey(0.80);
    } else {
        t.bg = grey(1.0);
        t.fg = grey(0.12);
        t.muted = grey(0.42);
        t.grid = grey(0.90);
        t.other = grey(0.79);
        t.reserved = grey(0.10);
        t.peak = (ms_chart_rgb){0.78, 0.08, 0.10};
        t.oom = (ms_chart_rgb){0.85, 0.00, 0.00};
        t.highlight = (ms_chart_rgb){0.90, 0.00, 0.05};
        t.outline = grey(0.25);
    }
    return t;
}

/* ------------------------------------------------------------------ numbers */

void ms_chart_format_bytes(double bytes, char *buf, size_t cap)
{
    static const char *UNITS[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (!buf || cap == 0)
        return;
    if (!isfinite(bytes)) {
        snprintf(buf, cap, "?");
        return;
    }
    double v = fabs(bytes);
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof UNITS / sizeof UNITS[0]) {
        v /= 1024.0;
        u++;
    }
    const char *sign = bytes < 0 ? "-" : "";
    /* Three significant digits at least: "2.03 GiB" rather than "2.0 GiB". */
    if (u == 0)
        snprintf(buf, cap, "%s%.0f B", sign, v);
    else
        snprintf(buf, cap, "%s%.*f %s", sign, v < 9.995 ? 2 : 1, v, UNITS[u]);
}

double ms_chart_nice_step(double span, int max_ticks)
{
    static const double MANTISSA[] = {1.0, 2.0, 2.5, 5.0, 10.0};
    if (!(span > 0) || !isfinite(span) || max_ticks < 1)
        return 1.0;
    double raw = span / max_ticks;
    double mag = pow(10.0, floor(log10(raw)));
    for (size_t i = 0; i < sizeof MANTISSA / sizeof MANTISSA[0]; i++)
        if (MANTISSA[i] * mag >= raw * (1 - 1e-9))
            return MANTISSA[i] * mag;
    return 10.0 * mag;
}

/* Digits after the point that a multiple of `step` needs (0.25 -> 2, 5 -> 0). */
static int step_decimals(double step)
{
    for (int d = 0; d < 6; d++) {
        double scaled = step * pow(10.0, d);
        if (fabs(scaled - floor(scaled + 0.5)) < 1e-6 * scaled)
            return d;
    }
    return 6;
}

/* ------------------------------------------------------------------ x positions */

static int64_t t_first(const ms_chart_source *src)
{
    return src->trace->n ? src->trace->time_us[0] : src->tl->t_first_us;
}

double ms_chart_event_x(const ms_chart_source *src, ms_chart_x mode, int64_t event)
{
    if (event < 0)
        event = 0;
    if (mode == MS_CHART_X_EVENTS)
        return (double)event;
    if ((size_t)event >= src->trace->n)
        return 0.0;
    return (double)(src->trace->time_us[event] - t_first(src)) / 1e6;
}

/* Where the whole trace ends, in x units; never zero so scales stay finite. */
static double full_span(const ms_chart_source *src, ms_chart_x mode)
{
    size_t n = src->trace->n;
    if (mode == MS_CHART_X_EVENTS)
        return n ? (double)n : 1.0;
    double span = n ? (double)(src->trace->time_us[n - 1] - t_first(src)) / 1e6 : 0.0;
    return span > 0 ? span : 1e-6;
}

/* x of a trace time: seconds, or the index of the first event at or after it. */
static double time_to_x(const ms_chart_source *src, ms_chart_x mode, int64_t t_us)
{
    if (mode == MS_CHART_X_TIME)
        return (double)(t_us - t_first(src)) / 1e6;
    size_t lo = 0, hi = src->trace->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (src->trace->time_us[mid] < t_us)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (double)lo;
}

double ms_chart_px(const ms_chart *chart, double x)
{
    return chart->plot.x + (x - chart->x_lo) / chart->dx;
}

double ms_chart_py(const ms_chart *chart, double bytes)
{
    return chart->plot.y + chart->plot.h - bytes / chart->y_max * chart->plot.h;
}

static int check_source(const ms_chart_source *src, bool need_allocs, ms_error *err)
{
    if (!src || !src->trace || !src->tl)
        return ms__render_fail(err, MS_ERR_ARG, "chart source lacks a trace or timeline");
    if (src->tl->n_events != src->trace->n)
        return ms__render_fail(err, MS_ERR_ARG, "timeline and trace disagree on the event count");
    if (src->tl->n_events && (!src->tl->active || !src->tl->reserved))
        return ms__render_fail(err, MS_ERR_ARG, "timeline was built without MS_TIMELINE_CURVES");
    if (need_allocs && src->tl->n_allocs && !src->tl->allocs)
        return ms__render_fail(err, MS_ERR_ARG, "timeline was built without MS_TIMELINE_ALLOCS");
    return 0;
}

static int window_of(const ms_chart_spec *spec, double span, double *lo, double *hi,
                     ms_error *err)
{
    *lo = spec->has_from ? spec->from : 0.0;
    *hi = spec->has_to ? spec->to : span;
    if (!isfinite(*lo) || !isfinite(*hi) || !(*hi > *lo))
        return ms__render_fail(err, MS_ERR_ARG,
                               "the window from %g to %g is empty (the trace spans 0 to %g)",
                               *lo, *hi, span);
    return 0;
}

/* ------------------------------------------------------------------ columns */

static int64_t active_of(const ms_timeline *tl, int64_t e)
{
    return e < 0 ? tl->active_start : tl->active[e];
}

static int64_t reserved_of(const ms_timeline *tl, int64_t e)
{
    return e < 0 ? tl->reserved_start : tl->reserved[e];
}

/* Column of an x value, or -1 before the window / n_cols after it. The last column takes
 * x_hi itself so the final event of an unzoomed time chart is shown. */
static int64_t column_of(double x, double x_lo, double x_hi, double dx, size_t n_cols)
{
    if (!(x >= x_lo))
        return -1;
    if (x > x_hi)
        return (int64_t)n_cols;
    double c = floor((x - x_lo) / dx);
    if (c >= (double)n_cols)
        return (int64_t)n_cols - 1;
    return (int64_t)c;
}

/* Per column: the state with the most active bytes among the events inside the column
 * and, when the column starts before its first event, the state carried in from the
 * left. One pass over the trace whatever the pixel count. */
static int aggregate(const ms_chart_source *src, ms_chart_x mode, double x_lo, double x_hi,
                     double dx, size_t n_cols, int64_t *ev, int64_t *act, int64_t *res,
                     int64_t *low, ms_error *err)
{
    const ms_timeline *tl = src->tl;
    int64_t *first = alloc_n(n_cols, sizeof *first);
    int64_t *last = alloc_n(n_cols, sizeof *last);
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
    int64_t t0 = t_first(src);
    for (int64_t e = 0; e < n; e++) {
        /* The same arithmetic as ms_chart_event_x, inlined for the hot loop. */
        double x = mode == MS_CHART_X_TIME ? (double)(t_us[e] - t0) / 1e6 : (double)e;
        int64_t c = column_of(x, x_lo, x_hi, dx, n_cols);
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
                       ms_chart_event_x(src, mode, first[c]) > lo;
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

int ms_chart_extent(const ms_chart_source *src, const ms_chart_spec *spec, double *x_span,
                    int64_t *y_bytes, ms_error *err)
{
    int rc = check_source(src, false, err);
    if (rc)
        return rc;
    double lo, hi;
    rc = window_of(spec, full_span(src, spec->x_mode), &lo, &hi, err);
    if (rc)
        return rc;
    /* One column spanning the window gives exactly the maxima a chart would show. */
    int64_t ev = 0, act = 0, res = 0;
    rc = aggregate(src, spec->x_mode, lo, hi, hi - lo, 1, &ev, &act, &res, NULL, err);
    if (rc)
        return rc;
    *x_span = hi - lo;
    *y_bytes = act > res ? act : res;
    return 0;
}

/* ------------------------------------------------------------------ annotations */

typedef struct range {
    int64_t start_us, end_us;
    uint32_t name; /* string id */
    int depth;
} range;

static int range_cmp(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->start_us != y->start_us)
        return x->start_us < y->start_us ? -1 : 1;
    return x->depth - y->depth;
}

/* Pairs START/END annotations of the trace's device into ranges with their nesting
 * depth. Ends without a start are dropped; starts without an end run to the trace end. */
static int build_ranges(const ms_chart_source *src, range **out, size_t *n_out, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (!src->snap)
        return 0;
    size_t n_ann;
    const ms_annotation *ann = ms_snapshot_annotations(src->snap, &n_ann);
    if (!ann || n_ann == 0)
        return 0;
    /* Older writers may not tag a device; then every annotation belongs to the trace. */
    bool any_device = false;
    for (size_t i = 0; i < n_ann; i++)
        if (ann[i].device == src->tl->device)
            any_device = true;
    range *r = alloc_n(n_ann, sizeof *r);
    size_t *open = alloc_n(n_ann, sizeof *open);
    if (!r || !open) {
        free(r);
        free(open);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for %zu annotations", n_ann);
    }
    size_t n = 0, depth = 0;
    int64_t t_end = src->trace->n ? src->trace->time_us[src->trace->n - 1] : 0;
    for (size_t i = 0; i < n_ann; i++) {
        if (any_device && ann[i].device != src->tl->device)
            continue;
        if (ann[i].is_start) {
            r[n] = (range){ann[i].time_us, t_end, ann[i].name, (int)depth};
            open[depth++] = n++;
            continue;
        }
        /* Close the innermost open range of that name, and any left open inside it. */
        for (size_t d = depth; d-- > 0;) {
            if (r[open[d]].name == ann[i].name) {
                r[open[d]].end_us = ann[i].time_us;
                depth = d;
                break;
            }
        }
    }
    free(open);
    qsort(r, n, sizeof *r, range_cmp);
    *out = r;
    *n_out = n;
    return 0;
}

/* Index into chart->names of a string id, adding it when new; -1 when the table is full
 * (the extra names are simply not drawn). */
#define MAX_NAMES 256
static int name_index(ms_chart *chart, const ms_snapshot *snap, uint32_t *ids, uint32_t id)
{
    for (size_t i = 0; i < chart->n_names; i++)
        if (ids[i] == id)
            return (int)i;
    if (chart->n_names >= MAX_NAMES)
        return -1;
    size_t i = chart->n_names++;
    ids[i] = id;
    const char *text = ms_snapshot_string(snap, id);
    copy_text(chart->names[i], MS_CHART_TEXT, text);
    chart->name_rgb[i] = PALETTE[hash_text(text) % PALETTE_N];
    return (int)i;
}

static int build_lanes(ms_chart *chart, const ms_chart_source *src, const range *r, size_t n_r,
                       uint32_t *name_ids, ms_error *err)
{
    int32_t *owner = alloc_n(chart->n_cols, sizeof *owner);
    if (!owner)
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for annotation lanes");
    for (size_t lane = 0; lane < chart->n_lanes; lane++) {
        for (size_t c = 0; c < chart->n_cols; c++)
            owner[c] = -1;
        for (size_t i = 0; i < n_r; i++) {
            if (r[i].depth != (int)lane)
                continue;
            double a = (time_to_x(src, chart->x_mode, r[i].start_us) - chart->x_lo) / chart->dx;
            double b = (time_to_x(src, chart->x_mode, r[i].end_us) - chart->x_lo) / chart->dx;
            if (b < 0 || a >= (double)chart->n_cols)
                continue;
            a = clampd(a, 0, (double)chart->n_cols);
            b = clampd(b, 0, (double)chart->n_cols);
            size_t c0 = (size_t)floor(a);
            size_t c1 = (size_t)ceil(b);
            if (c1 <= c0)
                c1 = c0 + 1; /* a range thinner than a pixel still shows */
            if (c1 > chart->n_cols)
                c1 = chart->n_cols;
            int idx = name_index(chart, src->snap, name_ids, r[i].name);
            if (idx < 0)
                continue;
            for (size_t c = c0; c < c1; c++)
                owner[c] = idx;
        }
        size_t runs = 0;
        for (size_t c = 0; c < chart->n_cols; c++)
            if (owner[c] >= 0 && (c == 0 || owner[c - 1] != owner[c]))
                runs++;
        chart->lane_runs[lane] = alloc_n(runs, sizeof(ms_chart_lane_run));
        if (!chart->lane_runs[lane]) {
            free(owner);
            return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for annotation lanes");
        }
        size_t k = 0;
        for (size_t c = 0; c < chart->n_cols; c++) {
            if (owner[c] < 0)
                continue;
            if (c > 0 && owner[c - 1] == owner[c]) {
                chart->lane_runs[lane][k - 1].x1 = chart->plot.x + (double)(c + 1);
                continue;
            }
            chart->lane_runs[lane][k++] = (ms_chart_lane_run){
                chart->plot.x + (double)c, chart->plot.x + (double)(c + 1), (uint32_t)owner[c]};
        }
        chart->n_lane_runs[lane] = k;
    }
    free(owner);
    return 0;
}

/* ------------------------------------------------------------------ layout */

#define TITLE_H 30.0
#define LANE_H 16.0
#define MARGIN_LEFT 82.0
#define MARGIN_BOTTOM 46.0
#define MARGIN_RIGHT 16.0
#define LEGEND_ROW 17.0

static int layout(ms_chart *chart, ms_chart_rect area, size_t n_lanes, bool legend,
                  ms_error *err)
{
    if (!(area.w >= 160 && area.h >= 100) || !isfinite(area.x) || !isfinite(area.y) ||
        area.w > 1e6 || area.h > 1e6)
        return ms__render_fail(err, MS_ERR_ARG,
                               "a chart needs at least 160x100 pixels (got %.0fx%.0f)",
                               area.w, area.h);
    chart->area = area;
    chart->title_rect = (ms_chart_rect){area.x + 10, area.y + 4, area.w - 20, TITLE_H - 6};
    double legend_w = legend && area.w >= 560 ? clampd(area.w * 0.24, 190, 420) : 0;
    double top = area.y + TITLE_H + (double)n_lanes * LANE_H + (n_lanes ? 6 : 8);
    double left = area.x + MARGIN_LEFT;
    double right = area.x + area.w - (legend_w > 0 ? legend_w : MARGIN_RIGHT);
    double bottom = area.y + area.h - MARGIN_BOTTOM;
    double w = floor(right - left), h = floor(bottom - top);
    if (w < 40 || h < 30)
        return ms__render_fail(err, MS_ERR_ARG, "chart area %.0fx%.0f leaves no room for the plot",
                               area.w, area.h);
    chart->plot = (ms_chart_rect){floor(left), floor(top), w, h};
    chart->n_cols = (size_t)w;
    chart->n_lanes = n_lanes;
    for (size_t i = 0; i < n_lanes; i++)
        chart->lane_rect[i] = (ms_chart_rect){chart->plot.x,
                                              area.y + TITLE_H + (double)i * LANE_H, w,
                                              LANE_H - 2};
    if (legend_w > 0)
        chart->legend_rect = (ms_chart_rect){right + 12, chart->plot.y, legend_w - 22,
                                             chart->plot.h};
    chart->legend_row = LEGEND_ROW;
    return 0;
}

static size_t legend_capacity(const ms_chart *chart)
{
    if (chart->legend_rect.w <= 0)
        return 0;
    double rows = floor((chart->legend_rect.h - 22) / chart->legend_row);
    if (rows < 0)
        return 0;
    return rows > MS_CHART_MAX_LEGEND ? MS_CHART_MAX_LEGEND : (size_t)rows;
}

static void legend_add(ms_chart *chart, ms_chart_key key, ms_chart_rgb rgb, const char *text)
{
    if (chart->n_legend >= MS_CHART_MAX_LEGEND)
        return;
    ms_chart_legend_entry *e = &chart->legend[chart->n_legend++];
    e->key = key;
    e->rgb = rgb;
    copy_text(e->text, sizeof e->text, text);
}

/* ------------------------------------------------------------------ scales */

static void y_scale(ms_chart *chart, int64_t data_max, int64_t fit)
{
    double top = (double)(data_max > fit ? data_max : fit);
    if (top < 1024)
        top = 1024;
    top *= 1.05; /* a little air above the peak; its label moves below when crowded */
    double unit = 1;
    const char *unit_name = "B";
    static const char *NAMES[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    for (int k = 1; k < 5 && top / pow(1024.0, k) >= 1.0; k++) {
        unit = pow(1024.0, k);
        unit_name = NAMES[k];
    }
    int target = (int)clampd(chart->plot.h / 55.0, 3, 10);
    double step = ms_chart_nice_step(top / unit, target);
    if (unit == 1 && step < 1)
        step = 1;
    double steps = ceil(top / unit / step - 1e-9);
    chart->y_max = steps * step * unit;
    int dec = step_decimals(step);
    chart->n_yticks = 0;
    for (double k = 0; k <= steps + 1e-9 && chart->n_yticks < MS_CHART_MAX_TICKS; k += 1) {
        ms_chart_tick *t = &chart->yticks[chart->n_yticks++];
        t->value = k * step * unit;
        t->px = ms_chart_py(chart, t->value);
        if (k == 0)
            snprintf(t->label, sizeof t->label, "0");
        else
            snprintf(t->label, sizeof t->label, "%.*f %s", dec, k * step, unit_name);
    }
}

static void format_x(ms_chart_x mode, double x, double step, char *buf, size_t cap)
{
    if (fabs(x) < step * 1e-6)
        x = 0; /* no "-0.0 s" from rounding */
    if (mode == MS_CHART_X_TIME) {
        snprintf(buf, cap, "%.*f s", step_decimals(step), x);
        return;
    }
    if (fabs(x) >= 1e6)
        snprintf(buf, cap, "%.*fM", step_decimals(step / 1e6), x / 1e6);
    else if (fabs(x) >= 1e4)
        snprintf(buf, cap, "%.*fk", step_decimals(step / 1e3), x / 1e3);
    else
        snprintf(buf, cap, "%.0f", x);
}

static void x_scale(ms_chart *chart)
{
    int target = (int)clampd(chart->plot.w / 110.0, 2, 16);
    double span = chart->x_hi - chart->x_lo;
    double step = ms_chart_nice_step(span, target);
    if (chart->x_mode == MS_CHART_X_EVENTS) {
        if (step < 1)
            step = 1;
        if (fabs(step - 2.5) < 1e-9)
            step = 5; /* event numbers are whole */
    }
    double k0 = ceil(chart->x_lo / step - 1e-9);
    chart->n_xticks = 0;
    for (double k = k0; k * step <= chart->x_hi + step * 1e-9 &&
                        chart->n_xticks < MS_CHART_MAX_TICKS;
         k += 1) {
        ms_chart_tick *t = &chart->xticks[chart->n_xticks++];
        t->value = k * step;
        t->px = ms_chart_px(chart, t->value);
        format_x(chart->x_mode, t->value, step, t->label, sizeof t->label);
    }
    copy_text(chart->x_title, sizeof chart->x_title,
              chart->x_mode == MS_CHART_X_TIME ? "seconds since the first event"
                                               : "event index");
}

static void format_at(const ms_chart *chart, double x, char *buf, size_t cap)
{
    if (chart->x_mode == MS_CHART_X_EVENTS) {
        snprintf(buf, cap, "event %.0f", x);
        return;
    }
    double step = ms_chart_nice_step(chart->x_hi - chart->x_lo, 10) / 10;
    int dec = step_decimals(step);
    if (dec < 2)
        dec = 2;
    snprintf(buf, cap, "%.*f s", dec, x);
}

/* ------------------------------------------------------------------ groups */

typedef struct scored {
    double score;
    size_t index;
} scored;

/* Min-heap on score so the N largest survive one pass over millions of allocations. */
static void heap_down(scored *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l].score < h[m].score)
            m = l;
        if (r < n && h[r].score < h[m].score)
            m = r;
        if (m == i)
            return;
        scored t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static double lifetime_score(const ms_chart_source *src, ms_chart_x mode, const ms_alloc *a,
                             double lo, double hi)
{
    double from = a->alloc_event < 0 ? lo : ms_chart_event_x(src, mode, a->alloc_event);
    double to = a->free_event < 0 ? hi : ms_chart_event_x(src, mode, a->free_event);
    if (mode == MS_CHART_X_EVENTS && a->free_event < 0)
        to = (double)src->trace->n;
    double span = (to < hi ? to : hi) - (from > lo ? from : lo);
    return span > 0 ? span * (double)a->size : 0;
}

typedef struct site_cache {
    const ms_snapshot *snap;
    uint32_t *of_stack; /* UINT32_MAX - 1: not yet asked */
    size_t n_stacks;
} site_cache;

static uint32_t site_of(site_cache *sc, uint32_t stack)
{
    if (!sc->snap || stack == MS_NO_STACK)
        return UINT32_MAX;
    if (stack < sc->n_stacks && sc->of_stack) {
        if (sc->of_stack[stack] == UINT32_MAX - 1)
            sc->of_stack[stack] = ms_stack_site(sc->snap, stack);
        return sc->of_stack[stack];
    }
    return ms_stack_site(sc->snap, stack);
}

static void site_label(const ms_snapshot *snap, uint32_t site, char *buf, size_t cap)
{
    if (!snap || site == UINT32_MAX || ms_site_format(snap, site, buf, cap) != 0)
        snprintf(buf, cap, "(no stack recorded)");
}

typedef struct site_score {
    uint32_t site;
    double score;
} site_score;

static int site_score_by_site(const void *a, const void *b)
{
    const site_score *x = a, *y = b;
    return x->site < y->site ? -1 : x->site > y->site;
}

static int site_score_desc(const void *a, const void *b)
{
    const site_score *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* Per allocation, the group that owns its bytes (-1: the "other" band). */
typedef struct grouping {
    int32_t *of_alloc;
    size_t n_groups;
} grouping;

static int add_group(ms_chart *chart, size_t cap, ms_chart_group g, ms_error *err)
{
    if (chart->n_groups >= cap)
        return ms__render_fail(err, MS_ERR_LIMIT, "too many chart bands");
    chart->groups[chart->n_groups++] = g;
    return 0;
}

/* Stack order is allocation order; allocations alive before the trace (alloc_event -1)
 * came first, wherever allocs[] keeps them. */
typedef struct stack_key {
    int64_t alloc_event;
    size_t index;
} stack_key;

static int cmp_stack_key(const void *a, const void *b)
{
    const stack_key *x = a, *y = b;
    if (x->alloc_event != y->alloc_event)
        return x->alloc_event < y->alloc_event ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The viewer's stacking: one band per chosen allocation, in allocation order, so a band
 * sits on the bands allocated before it and slides down when they are freed. */
static int groups_by_alloc(ms_chart *chart, const ms_chart_source *src,
                           const ms_chart_spec *spec, site_cache *sc, grouping *gr,
                           ms_error *err)
{
    const ms_timeline *tl = src->tl;
    size_t top = spec->top ? spec->top : MS_CHART_DEFAULT_TOP_ALLOCS;
    if (top > MS_CHART_MAX_GROUPS)
        top = MS_CHART_MAX_GROUPS;
    scored *heap = alloc_n(top, sizeof *heap);
    size_t *chosen = alloc_n(top + spec->n_highlights, sizeof *chosen);
    if (!heap || !chosen) {
        free(heap);
        free(chosen);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory choosing bands");
    }
    size_t n_heap = 0;
    double window = chart->x_hi - chart->x_lo;
    for (size_t i = 0; i < tl->n_allocs; i++) {
        /* No lifetime exceeds the window: most small allocations are out before their
         * event times are even looked up. */
        if (n_heap == top && (double)tl->allocs[i].size * window <= heap[0].score)
            continue;
        double s = lifetime_score(src, chart->x_mode, &tl->allocs[i], chart->x_lo, chart->x_hi);
        if (!(s > 0))
            continue;
        if (n_heap < top) {
            heap[n_heap++] = (scored){s, i};
            if (n_heap == top)
                for (size_t k = top / 2 + 1; k-- > 0;)
                    heap_down(heap, n_heap, k);
        } else if (s > heap[0].score) {
            heap[0] = (scored){s, i};
            heap_down(heap, n_heap, 0);
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < n_heap; i++)
        chosen[n++] = heap[i].index;
    for (size_t h = 0; h < spec->n_highlights; h++) {
        bool have = false;
        for (size_t i = 0; i < n && !have; i++)
            have = chosen[i] == spec->highlights[h].alloc;
        if (!have)
            chosen[n++] = spec->highlights[h].alloc;
    }
    free(heap);
    stack_key *keys = alloc_n(n, sizeof *keys);
    if (!keys) {
        free(chosen);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory choosing bands");
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (stack_key){tl->allocs[chosen[i]].alloc_event, chosen[i]};
    qsort(keys, n, sizeof *keys, cmp_stack_key);
    for (size_t i = 0; i < n; i++)
        chosen[i] = keys[i].index;
    free(keys);

    chart->groups = alloc_n(n, sizeof *chart->groups);
    if (!chart->groups) {
        free(chosen);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for %zu bands", n);
    }
    for (size_t i = 0; i < n; i++) {
        const ms_alloc *a = &tl->allocs[chosen[i]];
        ms_chart_group g;
        memset(&g, 0, sizeof g);
        g.kind = MS_CHART_GROUP_ALLOC;
        g.alloc = (int64_t)chosen[i];
        g.site = site_of(sc, a->stack);
        g.legend = -1;
        g.score = lifetime_score(src, chart->x_mode, a, chart->x_lo, chart->x_hi);
        char size[32], where[128];
        ms_chart_format_bytes((double)a->size, size, sizeof size);
        site_label(src->snap, g.site, where, sizeof where);
        snprintf(g.label, sizeof g.label, "%s %s", size, where);
        chart->groups[chart->n_groups++] = g;
        gr->of_alloc[chosen[i]] = (int32_t)i;
    }
    free(chosen);
    gr->n_groups = n;

    /* Colour by site: the sites holding the most band area get a hue and a legend line;
     * bands of the remaining sites get muted colours under one "other sites" line. */
    site_score *ss = alloc_n(n, sizeof *ss);
    if (!ss)
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory ranking sites");
    for (size_t i = 0; i < n; i++)
        ss[i] = (site_score){chart->groups[i].site, chart->groups[i].score};
    qsort(ss, n, sizeof *ss, site_score_by_site);
    size_t n_sites = 0;
    for (size_t i = 0; i < n; i++) {
        if (n_sites && ss[n_sites - 1].site == ss[i].site)
            ss[n_sites - 1].score += ss[i].score;
        else
            ss[n_sites++] = ss[i];
    }
    qsort(ss, n_sites, sizeof *ss, site_score_desc);
    size_t cap = legend_capacity(chart);
    size_t fixed = 5; /* header gap, other sites, other allocations, reserved, peak */
    size_t n_named = cap > fixed ? cap - fixed : 0;
    if (n_named > PALETTE_N)
        n_named = PALETTE_N;
    if (n_named > n_sites)
        n_named = n_sites;
    if (spec->no_legend)
        n_named = n_sites < PALETTE_N ? n_sites : PALETTE_N;
    bool unnamed = false;
    for (size_t i = 0; i < n; i++) {
        ms_chart_group *g = &chart->groups[i];
        /* The shade follows the allocation itself, not its index, so a chart of a window
         * built from a slice of the trace colours it as the whole trace's chart does. */
        const ms_alloc *a = &tl->allocs[g->alloc];
        uint64_t key = a->addr ^ (a->size * 0x9e3779b97f4a7c15ULL) ^ a->stream;
        size_t k = 0;
        while (k < n_named && ss[k].site != g->site)
            k++;
        if (k < n_named) {
            g->fill = shade(PALETTE[k], key);
            g->legend = (int)k;
        } else {
            ms_chart_rgb base = mix(PALETTE[hash32(g->site) % PALETTE_N], chart->theme.other, 0.6);
            g->fill = shade(base, key);
            unnamed = true;
        }
    }
    for (size_t k = 0; k < n_named; k++) {
        char where[MS_CHART_TEXT];
        site_label(src->snap, ss[k].site, where, sizeof where);
        legend_add(chart, MS_CHART_KEY_SWATCH, PALETTE[k], where);
    }
    free(ss);
    if (unnamed)
        legend_add(chart, MS_CHART_KEY_SWATCH,
                   mix(PALETTE[0], chart->theme.other, 0.6), "large allocations, other sites");
    return 0;
}

/* --by site and --by phase: allocations grouped by a key, the K keys with the most
 * bytes x lifetime get bands in rank order (largest at the bottom). */
static int groups_by_key(ms_chart *chart, const ms_chart_source *src, const ms_chart_spec *spec,
                         site_cache *sc, const range *r, size_t n_r, grouping *gr,
                         ms_error *err)
{
    const ms_timeline *tl = src->tl;
    bool by_phase = spec->by == MS_CHART_BY_PHASE;
    size_t top = spec->top ? spec->top : MS_CHART_DEFAULT_TOP_GROUPS;
    size_t cap = legend_capacity(chart);
    if (!spec->no_legend && cap > 3 && top > cap - 3)
        top = cap - 3; /* every band must be named in the legend */
    if (top > PALETTE_N * 4)
        top = PALETTE_N * 4;

    /* Keys are site frame ids or phase string ids; UINT32_MAX is "none". */
    uint32_t *key = alloc_n(tl->n_allocs, sizeof *key);
    size_t *top_ranges = NULL, n_top = 0;
    if (!key)
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory grouping allocations");
    if (by_phase) {
        top_ranges = alloc_n(n_r, sizeof *top_ranges);
        if (!top_ranges) {
            free(key);
            return ms__render_fail(err, MS_ERR_NOMEM, "out of memory grouping allocations");
        }
        for (size_t i = 0; i < n_r; i++)
            if (r[i].depth == 0)
                top_ranges[n_top++] = i;
    }
    for (size_t i = 0; i < tl->n_allocs; i++) {
        const ms_alloc *a = &tl->allocs[i];
        key[i] = UINT32_MAX;
        if (!by_phase) {
            key[i] = site_of(sc, a->stack);
            continue;
        }
        if (a->alloc_event < 0)
            continue;
        int64_t t = src->trace->time_us[a->alloc_event];
        size_t lo = 0, hi = n_top; /* last top-level range starting at or before t */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (r[top_ranges[mid]].start_us <= t)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && t <= r[top_ranges[lo - 1]].end_us)
            key[i] = r[top_ranges[lo - 1]].name;
    }
    free(top_ranges);

    /* Totals per key in a dense table: ids are small (frames or strings of this file), and
     * a million allocations must not cost a million-element sort. The last slot holds
     * allocations without a key. */
    size_t n_ids = !src->snap ? 0
                   : by_phase ? ms_snapshot_string_count(src->snap)
                              : ms_snapshot_frame_count(src->snap);
    double *total = alloc_n(n_ids + 1, sizeof *total);
    int32_t *group_of_slot = alloc_n(n_ids + 1, sizeof *group_of_slot);
    site_score *ss = alloc_n(n_ids + 1, sizeof *ss);
    if (!total || !group_of_slot || !ss) {
        free(total);
        free(group_of_slot);
        free(ss);
        free(key);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory ranking groups");
    }
#define SLOT(k) ((k) < n_ids ? (size_t)(k) : n_ids)
    for (size_t i = 0; i < tl->n_allocs; i++) {
        if (by_phase && key[i] == UINT32_MAX)
            continue;
        double sc_i = lifetime_score(src, chart->x_mode, &tl->allocs[i], chart->x_lo, chart->x_hi);
        if (sc_i > 0)
            total[SLOT(key[i])] += sc_i;
    }
    size_t n_keys = 0;
    for (size_t k = 0; k <= n_ids; k++) {
        group_of_slot[k] = -1;
        if (total[k] > 0)
            ss[n_keys++] = (site_score){k == n_ids ? UINT32_MAX : (uint32_t)k, total[k]};
    }
    free(total);
    qsort(ss, n_keys, sizeof *ss, site_score_desc);
    if (n_keys > top)
        n_keys = top;
    for (size_t k = 0; k < n_keys; k++)
        group_of_slot[SLOT(ss[k].site)] = (int32_t)k;
    for (size_t i = 0; i < tl->n_allocs; i++)
        gr->of_alloc[i] = by_phase && key[i] == UINT32_MAX ? -1 : group_of_slot[SLOT(key[i])];
#undef SLOT
    free(group_of_slot);

    size_t cap_groups = n_keys + spec->n_highlights;
    chart->groups = alloc_n(cap_groups, sizeof *chart->groups);
    if (!chart->groups) {
        free(key);
        free(ss);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for bands");
    }
    int rc = 0;
    for (size_t k = 0; k < n_keys && !rc; k++) {
        ms_chart_group g;
        memset(&g, 0, sizeof g);
        g.kind = by_phase ? MS_CHART_GROUP_PHASE : MS_CHART_GROUP_SITE;
        g.alloc = -1;
        g.site = by_phase ? UINT32_MAX : ss[k].site;
        g.score = ss[k].score;
        g.fill = PALETTE[k % PALETTE_N];
        if (k >= PALETTE_N)
            g.fill = shade(g.fill, k);
        if (by_phase)
            copy_text(g.label, sizeof g.label, ms_snapshot_string(src->snap, ss[k].site));
        else
            site_label(src->snap, ss[k].site, g.label, sizeof g.label);
        g.legend = (int)chart->n_legend;
        legend_add(chart, MS_CHART_KEY_SWATCH, g.fill, g.label);
        rc = add_group(chart, cap_groups, g, err);
    }
    free(key);
    free(ss);
    /* Highlighted allocations get bands of their own on top of the groups. */
    for (size_t h = 0; h < spec->n_highlights && !rc; h++) {
        size_t i = spec->highlights[h].alloc;
        if (gr->of_alloc[i] >= (int32_t)n_keys)
            continue;
        ms_chart_group g;
        memset(&g, 0, sizeof g);
        g.kind = MS_CHART_GROUP_ALLOC;
        g.alloc = (int64_t)i;
        g.site = site_of(sc, tl->allocs[i].stack);
        g.legend = -1;
        g.fill = mix(chart->theme.highlight, chart->theme.bg, 0.45);
        site_label(src->snap, g.site, g.label, sizeof g.label);
        gr->of_alloc[i] = (int32_t)chart->n_groups;
        rc = add_group(chart, cap_groups, g, err);
    }
    gr->n_groups = chart->n_groups;
    return rc;
}

/* Heights of every group in every column: the bytes its allocations hold right after the
 * column's representative event. One sweep over the groups' alloc/free events, bucketed
 * by event index, visiting the columns in event order. */
typedef struct delta {
    int32_t group;
    int64_t bytes;
} delta;

static int cmp_col_event(const void *a, const void *b, const int64_t *ev)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (ev[x] != ev[y])
        return ev[x] < ev[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* qsort has no context argument in C11; columns are few, so an insertion sort does. */
static void sort_columns(size_t *order, size_t n, const int64_t *ev)
{
    for (size_t i = 1; i < n; i++) {
        size_t v = order[i], j = i;
        while (j > 0 && cmp_col_event(&order[j - 1], &v, ev) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
}

static int sweep_heights(ms_chart *chart, const ms_chart_source *src, const grouping *gr,
                         ms_error *err)
{
    const ms_timeline *tl = src->tl;
    size_t G = gr->n_groups, W = chart->n_cols, E = tl->n_events;
    if (G > MS_CHART_MAX_GROUPS || (G && W > MS_CHART_MAX_CELLS / G))
        return ms__render_fail(err, MS_ERR_LIMIT,
                               "%zu bands x %zu columns is too many to draw", G, W);
    chart->heights = alloc_n(G * W, sizeof *chart->heights);
    chart->col_other = alloc_n(W, sizeof *chart->col_other);
    int64_t *cur = alloc_n(G, sizeof *cur);
    size_t *order = alloc_n(W, sizeof *order);
    uint32_t *bucket = alloc_n(E + 1, sizeof *bucket); /* half the memory of size_t */
    if (!chart->heights || !chart->col_other || !cur || !order || !bucket) {
        free(cur);
        free(order);
        free(bucket);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
    }
    size_t n_delta = 0;
    for (size_t i = 0; i < tl->n_allocs; i++) {
        int32_t g = gr->of_alloc[i];
        if (g < 0)
            continue;
        const ms_alloc *a = &tl->allocs[i];
        int64_t bytes = a->size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a->size;
        if (a->alloc_event < 0)
            cur[g] += bytes;
        else if ((size_t)a->alloc_event < E) {
            bucket[a->alloc_event]++;
            n_delta++;
        }
        if (a->free_event >= 0 && (size_t)a->free_event < E) {
            bucket[a->free_event]++;
            n_delta++;
        }
    }
    delta *d = n_delta <= UINT32_MAX ? alloc_n(n_delta, sizeof *d) : NULL;
    if (!d) {
        free(cur);
        free(order);
        free(bucket);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
    }
    /* Counting sort: bucket[e] becomes the first slot of event e's deltas. */
    uint32_t sum = 0;
    for (size_t e = 0; e <= E; e++) {
        uint32_t k = bucket[e];
        bucket[e] = sum;
        sum += k;
    }
    for (size_t i = 0; i < tl->n_allocs; i++) {
        int32_t g = gr->of_alloc[i];
        if (g < 0)
            continue;
        const ms_alloc *a = &tl->allocs[i];
        int64_t bytes = a->size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a->size;
        if (a->alloc_event >= 0 && (size_t)a->alloc_event < E)
            d[bucket[a->alloc_event]++] = (delta){g, bytes};
        if (a->free_event >= 0 && (size_t)a->free_event < E)
            d[bucket[a->free_event]++] = (delta){g, -bytes};
    }
    /* bucket[e] now ends event e's run; event e's deltas are [bucket[e-1], bucket[e]). */
    for (size_t c = 0; c < W; c++)
        order[c] = c;
    sort_columns(order, W, chart->col_event);
    size_t next = 0, pos = 0; /* next event to apply, its first delta */
    for (size_t k = 0; k < W; k++) {
        size_t c = order[k];
        int64_t e = chart->col_event[c];
        if (e == MS_CHART_NO_EVENT) {
            chart->col_other[c] = 0;
            continue;
        }
        for (; (int64_t)next <= e && next < E; next++) {
            for (; pos < bucket[next]; pos++)
                cur[d[pos].group] += d[pos].bytes;
        }
        int64_t stacked = 0;
        for (size_t g = 0; g < G; g++) {
            int64_t h = cur[g] > 0 ? cur[g] : 0;
            chart->heights[g * W + c] = h;
            stacked += h;
        }
        int64_t other = chart->col_active[c] - stacked;
        chart->col_other[c] = other > 0 ? other : 0;
    }
    free(d);
    free(cur);
    free(order);
    free(bucket);
    return 0;
}

/* ------------------------------------------------------------------ markers */

static int find_ooms(ms_chart *chart, const ms_chart_source *src, ms_error *err)
{
    const ms_trace *tr = src->trace;
    size_t n = 0;
    for (size_t e = 0; e < tr->n; e++)
        if (tr->action[e] == MS_ACT_OOM)
            n++;
    if (n == 0)
        return 0;
    chart->oom_px = alloc_n(n, sizeof *chart->oom_px);
    if (!chart->oom_px)
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for OOM markers");
    int64_t last_col = -1;
    for (size_t e = 0; e < tr->n; e++) {
        if (tr->action[e] != MS_ACT_OOM)
            continue;
        if (chart->oom_label[0] == '\0') {
            /* The first failure says what was asked and what the device had left. */
            char want[32], left[32];
            ms_chart_format_bytes((double)tr->size[e], want, sizeof want);
            ms_chart_format_bytes((double)tr->addr[e], left, sizeof left);
            snprintf(chart->oom_label, sizeof chart->oom_label, "OOM: asked %s, %s free", want,
                     left);
        }
        int64_t c = column_of(ms_chart_event_x(src, chart->x_mode, (int64_t)e), chart->x_lo,
                              chart->x_hi, chart->dx, chart->n_cols);
        if (c < 0 || c >= (int64_t)chart->n_cols)
            continue;
        chart->n_ooms++;
        if (c == last_col)
            continue; /* one marker per pixel column is all a reader can see */
        last_col = c;
        chart->oom_px[chart->n_oom_px++] = chart->plot.x + (double)c + 0.5;
    }
    return 0;
}

static void find_peak(ms_chart *chart, const ms_chart_source *src, const int64_t *act,
                      const int64_t *ev)
{
    chart->has_peak = false;
    size_t best = 0;
    for (size_t c = 0; c < chart->n_cols; c++) {
        if (ev[c] == MS_CHART_NO_EVENT)
            continue;
        if (!chart->has_peak || act[c] > act[best]) {
            best = c;
            chart->has_peak = true;
        }
    }
    if (!chart->has_peak || act[best] <= 0) {
        chart->has_peak = false;
        return;
    }
    chart->peak_bytes = act[best];
    double x = ms_chart_event_x(src, chart->x_mode, ev[best]);
    if (ev[best] < 0 || x < chart->x_lo)
        x = chart->x_lo + (double)best * chart->dx; /* carried in from before the window */
    chart->peak_x = x;
    chart->peak_px = chart->plot.x + (double)best + 0.5;
    chart->peak_py = ms_chart_py(chart, (double)act[best]);
    char size[32], at[48];
    ms_chart_format_bytes((double)act[best], size, sizeof size);
    format_at(chart, x, at, sizeof at);
    snprintf(chart->peak_label, sizeof chart->peak_label, "peak %s at %s", size, at);
}

/* ------------------------------------------------------------------ build */

void ms_chart_free(ms_chart *chart)
{
    if (!chart)
        return;
    free(chart->col_event);
    free(chart->col_active);
    free(chart->col_reserved);
    free(chart->col_low);
    free(chart->col_other);
    free(chart->groups);
    free(chart->heights);
    for (size_t i = 0; i < chart->n_series; i++) {
        free(chart->series[i].active);
        free(chart->series[i].reserved);
    }
    free(chart->oom_px);
    for (size_t i = 0; i < MS_CHART_MAX_LANES; i++)
        free(chart->lane_runs[i]);
    free(chart->names);
    free(chart->name_rgb);
    free(chart);
}

static void default_title(ms_chart *chart, const ms_chart_source *src, const ms_chart_spec *spec)
{
    if (spec->title) {
        copy_text(chart->title, sizeof chart->title, spec->title);
        return;
    }
    char peak[32], res[32], window[96] = "";
    ms_chart_format_bytes((double)src->tl->peak_bytes, peak, sizeof peak);
    ms_chart_format_bytes((double)src->tl->reserved_peak_bytes, res, sizeof res);
    /* Panels share a window as long as the longest file; only a real zoom is news. */
    bool zoomed = (spec->has_from && spec->from > 0) ||
                  (spec->has_to && spec->to < full_span(src, spec->x_mode) * (1 - 1e-9));
    if (zoomed) {
        if (chart->x_mode == MS_CHART_X_TIME)
            snprintf(window, sizeof window, "  ·  window %.3f–%.3f s", chart->x_lo, chart->x_hi);
        else
            snprintf(window, sizeof window, "  ·  events %.0f–%.0f", chart->x_lo, chart->x_hi);
    }
    snprintf(chart->title, sizeof chart->title,
             "%s  ·  cuda:%d  ·  peak %s  ·  reserved peak %s%s%s",
             src->label ? src->label : "snapshot", src->tl->device, peak, res, window,
             src->tl->trace_complete ? "" : "  ·  trace incomplete (ring buffer wrapped)");
}

static int check_spec(const ms_chart_spec *spec, ms_error *err)
{
    if (!spec)
        return ms__render_fail(err, MS_ERR_ARG, "no chart spec");
    if (spec->x_mode != MS_CHART_X_TIME && spec->x_mode != MS_CHART_X_EVENTS)
        return ms__render_fail(err, MS_ERR_ARG, "unknown x mode");
    if (spec->by != MS_CHART_BY_ALLOC && spec->by != MS_CHART_BY_SITE &&
        spec->by != MS_CHART_BY_PHASE)
        return ms__render_fail(err, MS_ERR_ARG, "unknown band grouping");
    if (spec->n_highlights && !spec->highlights)
        return ms__render_fail(err, MS_ERR_ARG, "highlight count without highlights");
    return 0;
}

static int build_stacked(ms_chart *chart, const ms_chart_source *src, const ms_chart_spec *spec,
                         ms_chart_rect area, ms_error *err)
{
    int rc = check_source(src, true, err);
    if (rc)
        return rc;
    for (size_t h = 0; h < spec->n_highlights; h++)
        if (spec->highlights[h].alloc >= src->tl->n_allocs)
            return ms__render_fail(err, MS_ERR_ARG,
                                   "highlighted allocation %zu is not in the timeline",
                                   spec->highlights[h].alloc);
    chart->x_mode = spec->x_mode;
    chart->by = spec->by;
    chart->theme = theme_for(spec->dark);

    range *r = NULL;
    size_t n_r = 0;
    rc = build_ranges(src, &r, &n_r, err);
    if (rc)
        return rc;
    size_t n_lanes = 0;
    for (size_t i = 0; i < n_r; i++)
        if (r[i].depth < MS_CHART_MAX_LANES && (size_t)r[i].depth + 1 > n_lanes)
            n_lanes = (size_t)r[i].depth + 1;
    if (spec->by == MS_CHART_BY_PHASE && n_lanes == 0) {
        free(r);
        return ms__render_fail(err, MS_ERR_ARG,
                               "--by phase needs annotation ranges (external_annotations); "
                               "this trace has none");
    }
    rc = layout(chart, area, n_lanes, !spec->no_legend, err);
    if (!rc)
        rc = window_of(spec, full_span(src, spec->x_mode), &chart->x_lo, &chart->x_hi, err);
    if (rc) {
        free(r);
        return rc;
    }
    size_t W = chart->n_cols;
    chart->dx = (chart->x_hi - chart->x_lo) / (double)W;
    chart->col_event = alloc_n(W, sizeof *chart->col_event);
    chart->col_active = alloc_n(W, sizeof *chart->col_active);
    chart->col_reserved = alloc_n(W, sizeof *chart->col_reserved);
    chart->col_low = alloc_n(W, sizeof *chart->col_low);
    chart->names = alloc_n(MAX_NAMES, sizeof *chart->names);
    chart->name_rgb = alloc_n(MAX_NAMES, sizeof *chart->name_rgb);
    uint32_t *name_ids = alloc_n(MAX_NAMES, sizeof *name_ids);
    grouping gr = {alloc_n(src->tl->n_allocs, sizeof(int32_t)), 0};
    site_cache sc = {src->snap, NULL, 0};
    if (src->snap) {
        sc.n_stacks = ms_snapshot_stack_count(src->snap);
        sc.of_stack = alloc_n(sc.n_stacks, sizeof *sc.of_stack);
        for (size_t i = 0; sc.of_stack && i < sc.n_stacks; i++)
            sc.of_stack[i] = UINT32_MAX - 1;
    }
    if (!chart->col_event || !chart->col_active || !chart->col_reserved || !chart->col_low ||
        !chart->names ||
        !chart->name_rgb || !name_ids || !gr.of_alloc || (src->snap && !sc.of_stack)) {
        rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for the chart");
        goto done;
    }
    for (size_t i = 0; i < src->tl->n_allocs; i++)
        gr.of_alloc[i] = -1;

    rc = aggregate(src, chart->x_mode, chart->x_lo, chart->x_hi, chart->dx, W, chart->col_event,
                   chart->col_active, chart->col_reserved, chart->col_low, err);
    if (rc)
        goto done;
    int64_t data_max = 0;
    for (size_t c = 0; c < W; c++) {
        if (chart->col_active[c] > data_max)
            data_max = chart->col_active[c];
        if (chart->col_reserved[c] > data_max)
            data_max = chart->col_reserved[c];
    }
    y_scale(chart, data_max, spec->y_fit);
    x_scale(chart);

    if (spec->by == MS_CHART_BY_ALLOC)
        rc = groups_by_alloc(chart, src, spec, &sc, &gr, err);
    else
        rc = groups_by_key(chart, src, spec, &sc, r, n_r, &gr, err);
    if (!rc)
        rc = sweep_heights(chart, src, &gr, err);
    if (!rc)
        rc = build_lanes(chart, src, r, n_r, name_ids, err);
    if (!rc)
        rc = find_ooms(chart, src, err);
    if (rc)
        goto done;
    for (size_t h = 0; h < spec->n_highlights; h++) {
        int32_t g = gr.of_alloc[spec->highlights[h].alloc];
        if (g < 0)
            continue;
        chart->groups[g].highlight = true;
        if (spec->highlights[h].label)
            copy_text(chart->groups[g].mark, sizeof chart->groups[g].mark,
                      spec->highlights[h].label);
    }
    find_peak(chart, src, chart->col_active, chart->col_event);
    /* Zoomed out over thousands of steps each column holds whole hills; its top is the
     * hilltop, and a line at the column minimum shows how deep the valleys go. */
    size_t swinging = 0;
    for (size_t c = 0; c < W; c++)
        if (chart->col_event[c] != MS_CHART_NO_EVENT &&
            (double)(chart->col_active[c] - chart->col_low[c]) / chart->y_max * chart->plot.h >= 12)
            swinging++;
    chart->show_low = swinging * 4 >= W; /* a quarter of the columns hide whole hills */

    /* Fixed legend lines after the named bands. */
    legend_add(chart, MS_CHART_KEY_SWATCH, chart->theme.other,
               spec->by == MS_CHART_BY_ALLOC   ? "smaller allocations"
               : spec->by == MS_CHART_BY_PHASE ? "outside annotated phases"
                                               : "other sites");
    legend_add(chart, MS_CHART_KEY_LINE, chart->theme.reserved, "reserved (segments)");
    if (chart->show_low)
        legend_add(chart, MS_CHART_KEY_DASH, chart->theme.outline,
                   "per-pixel minimum (paler above: hills < 1 px)");
    if (spec->n_highlights)
        legend_add(chart, MS_CHART_KEY_SWATCH, chart->theme.highlight, "highlighted allocations");
    if (chart->n_ooms)
        legend_add(chart, MS_CHART_KEY_DOT, chart->theme.oom, "out-of-memory event");
    default_title(chart, src, spec);
done:
    free(r);
    free(name_ids);
    free(gr.of_alloc);
    free(sc.of_stack);
    return rc;
}

int ms_chart_build(ms_chart **out, const ms_chart_source *src, const ms_chart_spec *spec,
                   ms_chart_rect area, ms_error *err)
{
    if (!out)
        return ms__render_fail(err, MS_ERR_ARG, "no output pointer");
    *out = NULL;
    int rc = check_spec(spec, err);
    if (rc)
        return rc;
    ms_chart *chart = calloc(1, sizeof *chart);
    if (!chart)
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for a chart");
    rc = build_stacked(chart, src, spec, area, err);
    if (rc) {
        ms_chart_free(chart);
        return rc;
    }
    *out = chart;
    return 0;
}

int ms_chart_build_overlay(ms_chart **out, const ms_chart_source *srcs, size_t n_srcs,
                           const ms_chart_spec *spec, ms_chart_rect area, ms_error *err)
{
    if (!out)
        return ms__render_fail(err, MS_ERR_ARG, "no output pointer");
    *out = NULL;
    int rc = check_spec(spec, err);
    if (rc)
        return rc;
    if (n_srcs == 0 || n_srcs > MS_CHART_MAX_SERIES)
        return ms__render_fail(err, MS_ERR_ARG, "an overlay takes 1 to %d files (got %zu)",
                               MS_CHART_MAX_SERIES, n_srcs);
    double span = 0;
    for (size_t i = 0; i < n_srcs; i++) {
        rc = check_source(&srcs[i], false, err);
        if (rc)
            return rc;
        double s = full_span(&srcs[i], spec->x_mode);
        if (s > span)
            span = s;
    }
    ms_chart *chart = calloc(1, sizeof *chart);
    if (!chart)
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for a chart");
    chart->overlay = true;
    chart->x_mode = spec->x_mode;
    chart->by = spec->by;
    chart->theme = theme_for(spec->dark);
    rc = layout(chart, area, 0, !spec->no_legend, err);
    if (!rc)
        rc = window_of(spec, span, &chart->x_lo, &chart->x_hi, err);
    if (rc) {
        ms_chart_free(chart);
        return rc;
    }
    size_t W = chart->n_cols;
    chart->dx = (chart->x_hi - chart->x_lo) / (double)W;
    int64_t *ev = alloc_n(W, sizeof *ev);
    if (!ev) {
        ms_chart_free(chart);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for the chart");
    }
    int64_t data_max = 0;
    size_t best_series = 0;
    int64_t best_peak = -1;
    for (size_t i = 0; i < n_srcs && !rc; i++) {
        ms_chart_series *s = &chart->series[i];
        chart->n_series = i + 1;
        s->active = alloc_n(W, sizeof *s->active);
        s->reserved = alloc_n(W, sizeof *s->reserved);
        if (!s->active || !s->reserved) {
            rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for the chart");
            break;
        }
        rc = aggregate(&srcs[i], chart->x_mode, chart->x_lo, chart->x_hi, chart->dx, W, ev,
                       s->active, s->reserved, NULL, err);
        if (rc)
            break;
        s->rgb = PALETTE[i % PALETTE_N];
        s->peak_bytes = -1;
        for (size_t c = 0; c < W; c++) {
            if (ev[c] == MS_CHART_NO_EVENT) {
                s->active[c] = s->reserved[c] = -1;
                continue;
            }
            if (s->active[c] > s->peak_bytes) {
                s->peak_bytes = s->active[c];
                s->peak_x = ms_chart_event_x(&srcs[i], chart->x_mode, ev[c] < 0 ? 0 : ev[c]);
            }
            if (s->active[c] > data_max)
                data_max = s->active[c];
            if (s->reserved[c] > data_max)
                data_max = s->reserved[c];
        }
        char peak[32];
        ms_chart_format_bytes((double)(s->peak_bytes > 0 ? s->peak_bytes : 0), peak, sizeof peak);
        snprintf(s->label, sizeof s->label, "%s (cuda:%d, peak %s)",
                 srcs[i].label ? srcs[i].label : "snapshot", srcs[i].tl->device, peak);
        legend_add(chart, MS_CHART_KEY_LINE, s->rgb, s->label);
        if (s->peak_bytes > best_peak) {
            best_peak = s->peak_bytes;
            best_series = i;
        }
    }
    free(ev);
    if (rc) {
        ms_chart_free(chart);
        return rc;
    }
    y_scale(chart, data_max, spec->y_fit);
    x_scale(chart);
    legend_add(chart, MS_CHART_KEY_DASH, chart->theme.muted, "reserved (dashed, same colour)");
    if (best_peak > 0) {
        const ms_chart_series *s = &chart->series[best_series];
        chart->has_peak = true;
        chart->peak_bytes = best_peak;
        chart->peak_x = s->peak_x;
        chart->peak_px = ms_chart_px(chart, s->peak_x);
        if (chart->peak_px >= chart->plot.x + chart->plot.w)
            chart->peak_px = chart->plot.x + chart->plot.w - 0.5;
        chart->peak_py = ms_chart_py(chart, (double)best_peak);
        char size[32], at[48];
        ms_chart_format_bytes((double)best_peak, size, sizeof size);
        format_at(chart, s->peak_x, at, sizeof at);
        snprintf(chart->peak_label, sizeof chart->peak_label, "peak %s at %s (%s)", size, at,
                 srcs[best_series].label ? srcs[best_series].label : "snapshot");
    }
    if (spec->title) {
        copy_text(chart->title, sizeof chart->title, spec->title);
    } else {
        size_t len = (size_t)snprintf(chart->title, sizeof chart->title, "active memory: ");
        for (size_t i = 0; i < n_srcs && len < sizeof chart->title; i++)
            len += (size_t)snprintf(chart->title + len, sizeof chart->title - len, "%s%s",
                                    i ? " vs " : "", srcs[i].label ? srcs[i].label : "?");
    }
    *out = chart;
    return 0;
}
