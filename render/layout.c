/* Layout of the chart model (see chart_impl.h): the panel's rectangles — title, annotation
 * lanes, plot, legend — the legend's entries and the titles of the chart and its axes. */
#include "chart_impl.h"

#include <math.h>

#define TITLE_H 30.0
#define LANE_H 16.0
#define MARGIN_LEFT 82.0
#define MARGIN_BOTTOM 46.0
#define MARGIN_RIGHT 16.0
#define LEGEND_ROW 17.0

int msr__layout(msr_chart *chart, msr_chart_rect area, size_t n_lanes, bool legend,
               bool frag, ms_error *err)
{
    if (!(area.w >= 160 && area.h >= 100) || !isfinite(area.x) || !isfinite(area.y) ||
        area.w > 1e6 || area.h > 1e6)
        return msr__render_fail(err, MS_ERR_ARG,
                               "a chart needs at least 160x100 pixels (got %.0fx%.0f)",
                               area.w, area.h);
    chart->area = area;
    chart->title_rect = (msr_chart_rect){area.x + 10, area.y + 4, area.w - 20, TITLE_H - 6};
    double legend_w = legend && area.w >= 560 ? msr__clampd(area.w * 0.24, 190, 420) : 0;
    double top = area.y + TITLE_H + (double)n_lanes * LANE_H + (n_lanes ? 6 : 8);
    double left = area.x + MARGIN_LEFT;
    double right = area.x + area.w - (legend_w > 0 ? legend_w : MARGIN_RIGHT);
    /* The fragmentation panel takes the bottom: its title, plot and axis labels. */
    double lower = frag ? floor(msr__clampd(area.h * 0.3, 120, 260)) : 0;
    double bottom = area.y + area.h - MARGIN_BOTTOM - lower;
    double w = floor(right - left), h = floor(bottom - top);
    if (w < 40 || h < 30)
        return msr__render_fail(err, MS_ERR_ARG, "chart area %.0fx%.0f leaves no room for the plot",
                               area.w, area.h);
    chart->plot = (msr_chart_rect){floor(left), floor(top), w, h};
    if (frag)
        chart->frag_rect = (msr_chart_rect){chart->plot.x, floor(bottom + MARGIN_BOTTOM + 20), w,
                                           lower - 20 - 22};
    chart->n_cols = (size_t)w;
    chart->n_lanes = n_lanes;
    for (size_t i = 0; i < n_lanes; i++)
        chart->lane_rect[i] = (msr_chart_rect){chart->plot.x,
                                              area.y + TITLE_H + (double)i * LANE_H, w,
                                              LANE_H - 2};
    if (legend_w > 0)
        chart->legend_rect = (msr_chart_rect){right + 12, chart->plot.y, legend_w - 22,
                                             chart->plot.h};
    chart->legend_row = LEGEND_ROW;
    return 0;
}

/* ------------------------------------------------------------------ legend */

size_t msr__legend_capacity(const msr_chart *chart)
{
    if (chart->legend_rect.w <= 0)
        return 0;
    double rows = floor((chart->legend_rect.h - 22) / chart->legend_row);
    if (rows < 0)
        return 0;
    return rows > MSR_CHART_MAX_LEGEND ? MSR_CHART_MAX_LEGEND : (size_t)rows;
}

void msr__legend_add(msr_chart *chart, msr_chart_key key, msr_chart_rgb rgb, const char *text)
{
    if (chart->n_legend >= MSR_CHART_MAX_LEGEND)
        return;
    msr_chart_legend_entry *e = &chart->legend[chart->n_legend++];
    e->key = key;
    e->rgb = rgb;
    msr__copy_text(e->text, sizeof e->text, text);
}

/* By category every allocation has a band, so the grey remainder is memory the curve
 * holds and no allocation of the timeline accounts for; named only when it shows. */
static bool remainder_shows(const msr_chart *chart)
{
    for (size_t c = 0; c < chart->n_cols; c++)
        if (chart->col_other[c] > 0)
            return true;
    return false;
}

void msr__legend_finish_stacked(msr_chart *chart, const msr_chart_spec *spec)
{
    /* Fixed legend lines after the named bands. */
    const char *other = spec->by == MSR_CHART_BY_ALLOC      ? "smaller allocations"
                       : spec->by == MSR_CHART_BY_PHASE
                           ? (chart->n_lanes ? "outside annotated phases" : "setup and gaps")
                       : spec->by == MSR_CHART_BY_CATEGORY ? "no allocation recorded"
                       : spec->by == MSR_CHART_BY_COMPILE  ? "other compile contexts"
                       : spec->by == MSR_CHART_BY_GROUP    ? "other (no --group rule)"
                                                          : "other sites";
    msr__copy_text(chart->other_label, sizeof chart->other_label, other);
    if (spec->by != MSR_CHART_BY_CATEGORY || remainder_shows(chart))
        msr__legend_add(chart, MSR_CHART_KEY_SWATCH, chart->theme.other, other);
    msr__legend_add(chart, MSR_CHART_KEY_LINE, chart->theme.reserved, "reserved (segments)");
    if (chart->show_low)
        msr__legend_add(chart, MSR_CHART_KEY_DASH, chart->theme.outline,
                       "per-pixel minimum (paler above: hills < 1 px)");
    bool leaks = false, suspects = false, alive = false;
    for (size_t h = 0; h < spec->n_highlights; h++) {
        bool a = spec->highlights[h].alive_end;
        leaks |= !spec->highlights[h].suspect && !a;
        suspects |= spec->highlights[h].suspect && !a;
        alive |= a;
    }
    if (leaks)
        msr__legend_add(chart, MSR_CHART_KEY_LINE, chart->theme.highlight,
                       "leak finding (outlined)");
    if (suspects)
        msr__legend_add(chart, MSR_CHART_KEY_DASH, chart->theme.outline,
                       "suspect, not a leak (grey outline)");
    if (alive)
        msr__legend_add(chart, MSR_CHART_KEY_DASH, chart->theme.outline,
                       "alive at the end, not a leak (grey outline)");
    if (chart->n_ooms)
        msr__legend_add(chart, MSR_CHART_KEY_DOT, chart->theme.oom, "out-of-memory event");
    msr__copy_text(chart->legend_title, sizeof chart->legend_title,
                  chart->by == MSR_CHART_BY_SITE       ? "bands: allocation sites"
                  : chart->by == MSR_CHART_BY_PHASE
                      ? (chart->n_lanes ? "bands: annotated phases" : "bands: phases (from stacks)")
                  : chart->by == MSR_CHART_BY_CATEGORY ? "bands: what the memory is"
                  : chart->by == MSR_CHART_BY_COMPILE  ? "bands: compile contexts"
                  : chart->by == MSR_CHART_BY_GROUP    ? "bands: your --group rules"
                                                      : "largest allocations, by site");
    msr__copy_text(chart->y_title, sizeof chart->y_title, "active memory (requested bytes)");
}

void msr__legend_finish_overlay(msr_chart *chart)
{
    msr__legend_add(chart, MSR_CHART_KEY_DASH, chart->theme.muted, "reserved (dashed, same colour)");
    msr__copy_text(chart->legend_title, sizeof chart->legend_title, "files");
    msr__copy_text(chart->y_title, sizeof chart->y_title, "active memory");
}

/* ------------------------------------------------------------------ titles */

void msr__title_stacked(msr_chart *chart, const msr_chart_source *src, const msr_chart_spec *spec)
{
    if (spec->title) {
        msr__copy_text(chart->title, sizeof chart->title, spec->title);
        return;
    }
    char peak[32], res[32], window[96] = "";
    msr_chart_format_bytes((double)src->tl->peak_bytes, peak, sizeof peak);
    msr_chart_format_bytes((double)src->tl->reserved_peak_bytes, res, sizeof res);
    /* Panels share a window as long as the longest file; only a real zoom is news. */
    bool zoomed = (spec->has_from && spec->from > 0) ||
                  (spec->has_to && spec->to < msr__full_span(src, spec->x_mode) * (1 - 1e-9));
    if (zoomed) {
        if (chart->x_mode == MSR_CHART_X_TIME || chart->x_mode == MSR_CHART_X_RUN)
            snprintf(window, sizeof window, "  ·  window %.3f–%.3f s",
                     msr_chart_x_seconds(chart, chart->x_lo), msr_chart_x_seconds(chart, chart->x_hi));
        else
            snprintf(window, sizeof window, "  ·  events %.0f–%.0f", chart->x_lo, chart->x_hi);
    }
    /* CUDA-graph replays allocate from the graph's private pool, which the curve does
     * not show: said once, with the pool's size. */
    char pool[96] = "";
    if (src->shape && src->shape->graph_pool_bytes) {
        char pb[32];
        msr_chart_format_bytes((double)src->shape->graph_pool_bytes, pb, sizeof pb);
        snprintf(pool, sizeof pool, "  ·  CUDA-graph pool %s (replays allocate from it)", pb);
    }
    snprintf(chart->title, sizeof chart->title,
             "%s  ·  cuda:%d  ·  peak %s  ·  reserved peak %s%s%s%s",
             src->label ? src->label : "snapshot", src->tl->device, peak, res, pool, window,
             src->tl->n_events == 0 ? "  ·  no events in the trace"
             : src->tl->trace_complete ? "" : "  ·  memory from before the first recorded event");
}

void msr__title_overlay(msr_chart *chart, const msr_chart_source *srcs, size_t n_srcs,
                       const msr_chart_spec *spec)
{
    if (spec->title) {
        msr__copy_text(chart->title, sizeof chart->title, spec->title);
        return;
    }
    size_t len = (size_t)snprintf(chart->title, sizeof chart->title, "active memory: ");
    for (size_t i = 0; i < n_srcs && len < sizeof chart->title; i++)
        len += (size_t)snprintf(chart->title + len, sizeof chart->title - len, "%s%s",
                                i ? " vs " : "", srcs[i].label ? srcs[i].label : "?");
}
