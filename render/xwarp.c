/* The run axis's warp (msr_chart_warp in chart.h): the breaks are the trace's quiet
 * stretches as the library finds them (memsnap/idle.h states the rule: ms_idle_find, the
 * run's ms_run_idle), so the iterations table and every chart call the same time idle;
 * this file only lays the knots. A chart of a training run spends its width on the
 * iterations; on a linear time axis a slow start takes it instead (a model loaded 4 s
 * before the first step, or CUDA and cuBLAS set-up inside a first iteration 50 times as
 * long as the others). Each break takes MS_IDLE_BREAK_SHARE of the final axis whatever
 * it hides, so its width does not depend on the pixels (the view's zoom reuses one warp
 * at every scale); outside the breaks one axis unit is one second. A trace where nothing
 * needs it gets the identity: the run axis is then the time axis. */
#include "chart_impl.h"
#include "render_util.h"
#include "memsnap/idle.h"

#include <math.h>
#include <stdlib.h>

static void identity(msr_chart_warp *w, double span_s)
{
    memset(w, 0, sizeof *w);
    w->n_segments = 1;
    w->t[1] = w->u[1] = span_s > 0 ? span_s : 1e-6;
}

/* The warp's map from knots `from` to knots `to` (t to u, or back: the same piecewise
 * line read either way): one to one outside the knots and on ordinary segments, a
 * break's segment scaled to its width. */
static double warp_map(const msr_chart_warp *w, const double *from, const double *to, double x)
{
    size_t n = w->n_segments;
    if (x <= from[0])
        return to[0] + (x - from[0]);
    if (x >= from[n])
        return to[n] + (x - from[n]);
    size_t lo = 0, hi = n - 1; /* the segment k with from[k] <= x < from[k+1] */
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (from[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (!w->gap[lo])
        return to[lo] + (x - from[lo]);
    return to[lo] + (x - from[lo]) / (from[lo + 1] - from[lo]) * (to[lo + 1] - to[lo]);
}

double msr_chart_warp_u(const msr_chart_warp *w, double t)
{
    return warp_map(w, w->t, w->u, t);
}

double msr_chart_warp_t(const msr_chart_warp *w, double u)
{
    return warp_map(w, w->u, w->t, u);
}

int msr_chart_warp_from_idle(msr_chart_warp *out, const ms_idle *idle)
{
    identity(out, idle ? idle->span_s : 0);
    if (!idle || idle->n_breaks == 0 || !(idle->break_width_s > 0))
        return 0;
    msr_chart_warp *w = out;
    double width = idle->break_width_s, T = idle->span_s;
    size_t s = 0;
    double t = 0, u = 0;
    w->t[0] = w->u[0] = 0;
    for (size_t i = 0; i < idle->n_breaks && i < MSR_CHART_MAX_BREAKS; i++) {
        const ms_idle_break *c = &idle->breaks[i];
        if (!(c->to_s > t)) /* a trace whose times step back: keep the knots increasing */
            continue;
        if (c->from_s > t) {
            u += c->from_s - t;
            t = c->from_s;
            w->gap[s++] = false;
            w->t[s] = t;
            w->u[s] = u;
        }
        u += width;
        t = c->to_s;
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
    return 0;
}

int msr_chart_warp_find(msr_chart_warp *out, const ms_trace *trace, const ms_iterations *it,
                       const ms_shape *shape, ms_error *err)
{
    if (!out || !trace)
        return msr__render_fail(err, MS_ERR_ARG, "no warp to fill or no trace");
    ms_idle *idle = NULL;
    int rc = ms_idle_find(&idle, trace, it, shape, err);
    if (!rc)
        msr_chart_warp_from_idle(out, idle);
    ms_idle_free(idle);
    return rc;
}

void msr__source_warp(msr_chart_warp *w, const msr_chart_source *src)
{
    if (src->warp)
        *w = *src->warp;
    else
        msr_chart_warp_from_idle(w, src->idle);
}

void msr__run_source(msr_chart_source *out, msr_chart_warp *w, const msr_chart_source *src,
                    msr_chart_x *mode)
{
    *out = *src;
    if (*mode != MSR_CHART_X_RUN)
        return;
    msr__source_warp(w, src);
    out->warp = w;
    if (w->n_breaks == 0)
        *mode = MSR_CHART_X_TIME; /* nothing compressed: the time axis, exactly */
}
