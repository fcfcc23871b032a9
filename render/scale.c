/* Scales of the chart model (see chart_impl.h): where an event or a byte count lands in
 * pixels, the x window, round tick steps and every number a chart prints. */
#include "chart_impl.h"
#include "label_place.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ numbers */

void msr_chart_format_bytes(double bytes, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return;
    if (!isfinite(bytes)) {
        snprintf(buf, cap, "?");
        return;
    }
    /* The text outputs' rule (ms_format_bytes), so a picture and the table beside it
     * print one size one way. */
    double whole = round(bytes);
    int64_t v = whole >= 9.2e18 ? INT64_MAX : whole <= -9.2e18 ? -INT64_MAX : (int64_t)whole;
    ms_format_bytes(v, buf, cap);
}

double msr_chart_nice_step(double span, int max_ticks)
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

double msr_chart_event_x(const msr_chart_source *src, msr_chart_x mode, int64_t event)
{
    return msr__event_x(src, mode, event);
}

double msr__full_span(const msr_chart_source *src, msr_chart_x mode)
{
    size_t n = src->trace->n;
    if (mode == MSR_CHART_X_EVENTS)
        return n ? (double)n : 1.0;
    double span = n ? (double)(src->trace->time_us[n - 1] - msr__t_first(src)) / 1e6 : 0.0;
    span = span > 0 ? span : 1e-6;
    return mode == MSR_CHART_X_RUN && src->warp ? msr_chart_warp_u(src->warp, span) : span;
}

double msr__time_to_x(const msr_chart_source *src, msr_chart_x mode, int64_t t_us)
{
    if (mode == MSR_CHART_X_TIME)
        return (double)(t_us - msr__t_first(src)) / 1e6;
    if (mode == MSR_CHART_X_RUN && src->warp)
        return msr_chart_warp_u(src->warp, (double)(t_us - msr__t_first(src)) / 1e6);
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

double msr_chart_px(const msr_chart *chart, double x)
{
    return chart->plot.x + (x - chart->x_lo) / chart->dx;
}

double msr_chart_x_seconds(const msr_chart *chart, double x)
{
    return chart->x_mode == MSR_CHART_X_RUN ? msr_chart_warp_t(&chart->warp, x) : x;
}

double msr_chart_py(const msr_chart *chart, double bytes)
{
    return chart->plot.y + chart->plot.h - bytes / chart->y_max * chart->plot.h;
}

int msr__window(const msr_chart_spec *spec, double span, double *lo, double *hi, ms_error *err)
{
    *lo = spec->has_from ? spec->from : 0.0;
    *hi = spec->has_to ? spec->to : span;
    if (!isfinite(*lo) || !isfinite(*hi) || !(*hi > *lo))
        return msr__render_fail(err, MS_ERR_ARG,
                               "the window from %g to %g is empty (the trace spans 0 to %g)",
                               *lo, *hi, span);
    return 0;
}

/* ------------------------------------------------------------------ scales and ticks */

double msr__byte_axis(double top, int target, msr_chart_tick *ticks, size_t *n)
{
    static const char *NAMES[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double unit = 1;
    const char *unit_name = "B";
    for (int k = 1; k < 5 && top / pow(1024.0, k) >= 1.0; k++) {
        unit = pow(1024.0, k);
        unit_name = NAMES[k];
    }
    double step = msr_chart_nice_step(top / unit, target);
    if (unit == 1 && step < 1)
        step = 1;
    double steps = ceil(top / unit / step - 1e-9);
    int dec = step_decimals(step);
    *n = 0;
    for (double k = 0; k <= steps + 1e-9 && *n < MSR_CHART_MAX_TICKS; k += 1) {
        msr_chart_tick *t = &ticks[(*n)++];
        t->value = k * step * unit;
        t->px = 0;
        if (k == 0)
            snprintf(t->label, sizeof t->label, "0");
        else
            snprintf(t->label, sizeof t->label, "%.*f %s", dec, k * step, unit_name);
    }
    return steps * step * unit;
}

void msr__y_scale(msr_chart *chart, int64_t data_max, int64_t fit)
{
    double top = (double)(data_max > fit ? data_max : fit);
    if (top < 1024)
        top = 1024;
    top *= 1.05; /* a little air above the peak; its label moves below when crowded */
    int target = (int)msr__clampd(chart->plot.h / 55.0, 3, 10);
    chart->y_max = msr__byte_axis(top, target, chart->yticks, &chart->n_yticks);
    for (size_t k = 0; k < chart->n_yticks; k++)
        chart->yticks[k].px = msr_chart_py(chart, chart->yticks[k].value);
}

static void format_x(msr_chart_x mode, double x, double step, char *buf, size_t cap)
{
    if (fabs(x) < step * 1e-6)
        x = 0; /* no "-0.0 s" from rounding */
    if (mode == MSR_CHART_X_TIME) {
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

/* "⋯ 3.6 s", "⋯ 254 ms": how long a break lasted. */
static void format_break(double s, char *buf, size_t cap)
{
    if (s >= 99.5)
        snprintf(buf, cap, "⋯ %.0f s", s);
    else if (s >= 0.9995)
        snprintf(buf, cap, "⋯ %.1f s", s);
    else if (s >= 0.00995)
        snprintf(buf, cap, "⋯ %.0f ms", s * 1e3);
    else
        snprintf(buf, cap, "⋯ %.1f ms", s * 1e3);
}

/* Estimated width of an axis label (11 px regular): the callout estimate is for 11 px
 * bold, a little wide, which keeps neighbours apart. */
static double axis_text_w(const char *text)
{
    return msr_callout_text_width(text);
}

void msr__segments(msr_chart *chart)
{
    double right = chart->plot.x + chart->plot.w;
    chart->n_segments = 0;
    if (chart->x_mode != MSR_CHART_X_RUN) {
        chart->segments[0] = (msr_chart_segment){.px0 = chart->plot.x, .px1 = right,
                                                .from = chart->x_lo, .to = chart->x_hi};
        chart->n_segments = 1;
        return;
    }
    const msr_chart_warp *w = &chart->warp;
    size_t n = w->n_segments;
    for (size_t k = 0; k < n; k++) {
        /* The warp runs on at one second per unit past its ends. */
        double u0 = k == 0 && !w->gap[k] ? -INFINITY : w->u[k];
        double u1 = k + 1 == n && !w->gap[k] ? INFINITY : w->u[k + 1];
        u0 = fmax(u0, chart->x_lo);
        u1 = fmin(u1, chart->x_hi);
        if (!(u1 > u0) || chart->n_segments == MSR_CHART_MAX_SEGMENTS)
            continue;
        msr_chart_segment *sg = &chart->segments[chart->n_segments++];
        *sg = (msr_chart_segment){.px0 = msr_chart_px(chart, u0), .px1 = msr_chart_px(chart, u1),
                                 .from = msr_chart_warp_t(w, u0), .to = msr_chart_warp_t(w, u1),
                                 .gap = w->gap[k]};
        if (!sg->gap)
            continue;
        /* The label says how long the whole break lasted, even where the window cuts it. */
        format_break(w->t[k + 1] - w->t[k], sg->label, sizeof sg->label);
        sg->label_w = axis_text_w(sg->label);
        sg->label_x = msr__clampd((sg->px0 + sg->px1) / 2, chart->plot.x + sg->label_w / 2,
                                 right - sg->label_w / 2);
        /* Two breaks side by side: the later one keeps its band, not its label. */
        for (size_t i = 0; i + 1 < chart->n_segments; i++) {
            const msr_chart_segment *o = &chart->segments[i];
            if (o->label[0] && fabs(o->label_x - sg->label_x) < (o->label_w + sg->label_w) / 2 + 6)
                sg->label[0] = '\0';
        }
    }
    if (chart->n_segments) { /* tile the plot exactly, whatever the rounding */
        chart->segments[0].px0 = chart->plot.x;
        chart->segments[chart->n_segments - 1].px1 = right;
        for (size_t i = 1; i < chart->n_segments; i++)
            chart->segments[i].px0 = chart->segments[i - 1].px1;
    }
}

/* Whether an x tick's label at px would touch a kept tick's or a break's label. */
static bool tick_clear(const msr_chart *chart, double px, const char *label)
{
    double half = axis_text_w(label) / 2 + 4;
    for (size_t i = 0; i < chart->n_xticks; i++)
        if (fabs(chart->xticks[i].px - px) < half + axis_text_w(chart->xticks[i].label) / 2)
            return false;
    for (size_t i = 0; i < chart->n_segments; i++) {
        const msr_chart_segment *sg = &chart->segments[i];
        if (sg->label[0] && fabs(sg->label_x - px) < half + sg->label_w / 2)
            return false;
    }
    return true;
}

/* The run axis: ticks at round seconds inside each piece that is not a break (one step
 * for all of them, since outside the breaks a unit is a second), none where its label
 * would meet a break's label or another tick's. */
/* A step of whole units (events, or the trace's microseconds): no two ticks of a short
 * span then read alike ("0.000001 s" twice), and event numbers stay whole. */
static double whole_step(double step, double unit)
{
    if (step < unit)
        step = unit;
    if (fabs(step / unit - 2.5) < 1e-9)
        step = 5 * unit;
    return step;
}

static void x_scale_run(msr_chart *chart)
{
    int target = (int)msr__clampd(chart->plot.w / 110.0, 2, 16);
    double step = whole_step(msr_chart_nice_step(chart->x_hi - chart->x_lo, target), 1e-6);
    int dec = step_decimals(step);
    chart->n_xticks = 0;
    for (size_t i = 0; i < chart->n_segments; i++) {
        const msr_chart_segment *sg = &chart->segments[i];
        if (sg->gap)
            continue;
        for (double k = ceil(sg->from / step - 1e-9);
             k * step <= sg->to + step * 1e-9 && chart->n_xticks < MSR_CHART_MAX_TICKS; k += 1) {
            double t = k * step, x = msr_chart_warp_u(&chart->warp, t);
            char label[32];
            snprintf(label, sizeof label, "%.*f s", dec, fabs(t) < step * 1e-6 ? 0.0 : t);
            double px = msr_chart_px(chart, x);
            if (px < chart->plot.x - 0.5 || px > chart->plot.x + chart->plot.w + 0.5 ||
                !tick_clear(chart, px, label))
                continue;
            msr_chart_tick *tk = &chart->xticks[chart->n_xticks++];
            tk->value = x;
            tk->px = px;
            memcpy(tk->label, label, sizeof tk->label);
        }
    }
    msr__copy_text(chart->x_title, sizeof chart->x_title,
                  "seconds since the first event  ·  ⋯ compressed idle time");
}

void msr__x_scale(msr_chart *chart)
{
    msr__segments(chart);
    if (chart->x_mode == MSR_CHART_X_RUN) {
        x_scale_run(chart);
        return;
    }
    int target = (int)msr__clampd(chart->plot.w / 110.0, 2, 16);
    double span = chart->x_hi - chart->x_lo;
    /* An event clock (x = event / 1e6) ticks at whole events, labelled as events. */
    double unit = chart->event_clock ? 1e-6 : 1;
    double step = msr_chart_nice_step(span / unit, target) * unit;
    if (chart->x_mode == MSR_CHART_X_EVENTS || chart->event_clock)
        step = whole_step(step, unit);
    else
        step = whole_step(step, 1e-6); /* the clock's microseconds */
    double k0 = ceil(chart->x_lo / step - 1e-9);
    chart->n_xticks = 0;
    for (double k = k0; k * step <= chart->x_hi + step * 1e-9 &&
                        chart->n_xticks < MSR_CHART_MAX_TICKS;
         k += 1) {
        msr_chart_tick *t = &chart->xticks[chart->n_xticks++];
        t->value = k * step;
        t->px = msr_chart_px(chart, t->value);
        format_x(chart->event_clock ? MSR_CHART_X_EVENTS : chart->x_mode, t->value / unit,
                 step / unit, t->label, sizeof t->label);
    }
    msr__copy_text(chart->x_title, sizeof chart->x_title,
                  chart->x_mode == MSR_CHART_X_TIME && !chart->event_clock
                      ? "seconds since the first event"
                      : "event index");
}

void msr__format_at(const msr_chart *chart, double x, char *buf, size_t cap)
{
    if (chart->x_mode == MSR_CHART_X_EVENTS || chart->event_clock) {
        snprintf(buf, cap, "event %.0f", chart->event_clock ? x * 1e6 : x);
        return;
    }
    double step = msr_chart_nice_step(chart->x_hi - chart->x_lo, 10) / 10;
    int dec = step_decimals(step);
    if (dec < 2)
        dec = 2;
    snprintf(buf, cap, "%.*f s", dec, msr_chart_x_seconds(chart, x));
}
