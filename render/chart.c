/* The chart model's pipeline (see chart.h): checks, then layout, level of detail, scales,
 * bands, stacking, lanes, markers and legend, each computed by its own file
 * (chart_impl.h). No cairo calls and no printing here. */
#include "chart_impl.h"

void msr_chart_free(msr_chart *chart)
{
    if (!chart)
        return;
    /* Every array the chart owns; series and lanes own theirs below. */
    void *owned[] = {chart->col_event, chart->col_active, chart->col_reserved, chart->col_low,
                     chart->col_hill, chart->col_other, chart->groups, chart->key_names,
                     chart->key_shown, chart->heights, chart->oom_px, chart->names, chart->name_rgb,
                     chart->iters, chart->frag_free, chart->frag_free_low, chart->frag_largest,
                     chart->frag_blocks};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        free(owned[i]);
    for (size_t i = 0; i < chart->n_series; i++) {
        free(chart->series[i].active);
        free(chart->series[i].reserved);
    }
    for (size_t i = 0; i < MSR_CHART_MAX_LANES; i++)
        free(chart->lane_runs[i]);
    free(chart);
}

int msr__check_source(const msr_chart_source *src, bool need_allocs, ms_error *err)
{
    if (!src || !src->trace || !src->tl)
        return msr__render_fail(err, MS_ERR_ARG, "chart source lacks a trace or timeline");
    if (src->tl->n_events != src->trace->n)
        return msr__render_fail(err, MS_ERR_ARG, "timeline and trace disagree on the event count");
    if (src->tl->n_events && (!src->tl->active || !src->tl->reserved))
        return msr__render_fail(err, MS_ERR_ARG, "timeline was built without MS_TIMELINE_CURVES");
    if (need_allocs && src->tl->n_allocs && !src->tl->allocs)
        return msr__render_fail(err, MS_ERR_ARG, "timeline was built without MS_TIMELINE_ALLOCS");
    return 0;
}

static int check_spec(const msr_chart_spec *spec, ms_error *err)
{
    if (!spec)
        return msr__render_fail(err, MS_ERR_ARG, "no chart spec");
    if (spec->x_mode != MSR_CHART_X_TIME && spec->x_mode != MSR_CHART_X_EVENTS &&
        spec->x_mode != MSR_CHART_X_RUN)
        return msr__render_fail(err, MS_ERR_ARG, "unknown x mode");
    if (spec->by != MSR_CHART_BY_ALLOC && spec->by != MSR_CHART_BY_SITE &&
        spec->by != MSR_CHART_BY_PHASE && spec->by != MSR_CHART_BY_CATEGORY &&
        spec->by != MSR_CHART_BY_COMPILE && spec->by != MSR_CHART_BY_GROUP)
        return msr__render_fail(err, MS_ERR_ARG, "unknown band grouping");
    if (spec->n_highlights && !spec->highlights)
        return msr__render_fail(err, MS_ERR_ARG, "highlight count without highlights");
    return 0;
}

/* ------------------------------------------------------------------ stacked */

/* The run's iterations that reach into the window, as pixel spans. */
int msr__chart_iterations(msr_chart *chart, const msr_chart_source *src, ms_error *err)
{
    const ms_iterations *it = src->iterations;
    if (!it || it->n + it->n_unfinished == 0)
        return 0;
    size_t n = it->n + it->n_unfinished;
    chart->iters = msr__alloc_n(n, sizeof *chart->iters);
    if (!chart->iters)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for iterations");
    double right = chart->plot.x + chart->plot.w;
    for (size_t i = 0; i < n; i++) {
        const ms_iteration *m = &it->items[i];
        double x0 = msr__event_x(src, chart->x_mode, m->start_event);
        double x1 = chart->x_mode == MSR_CHART_X_EVENTS
                        ? (double)m->end_event
                        : msr__event_x(src, chart->x_mode, m->end_event > m->start_event
                                                              ? m->end_event - 1
                                                              : m->start_event);
        double p0 = msr__clampd(msr_chart_px(chart, x0), chart->plot.x, right);
        double p1 = msr__clampd(msr_chart_px(chart, x1), chart->plot.x, right);
        if (!(p1 > p0))
            continue;
        chart->iters[chart->n_iters++] = (msr_chart_iter){i, p0, p1};
    }
    return 0;
}

/* By category the source must carry the categories, and they must describe its
 * allocations: the same timeline, or a slice of it with every index mapped. */
static int check_categories(const msr_chart_source *src, ms_error *err)
{
    if (!src->categories)
        return msr__render_fail(err, MS_ERR_ARG,
                               "a chart by category needs the categories analysis "
                               "(msr_chart_source.categories); none was given");
    const ms_timeline *ct = ms_categories_timeline(src->categories);
    size_t n = ct ? ct->n_allocs : 0;
    if (!src->category_alloc && ct != src->tl && n != src->tl->n_allocs)
        return msr__render_fail(err, MS_ERR_ARG, "the categories were built for another timeline");
    for (size_t i = 0; src->category_alloc && i < src->tl->n_allocs; i++)
        if (src->category_alloc[i] >= n)
            return msr__render_fail(err, MS_ERR_ARG,
                                   "allocation %zu maps outside the categories' timeline", i);
    return 0;
}

/* Layout (which depends on how many annotation lanes there are), the x window and the
 * per-column arrays. */
static int frame_stacked(msr_chart *chart, const msr_chart_source *src, const msr_chart_spec *spec,
                         msr_chart_rect area, const msr__range *r, size_t n_r, ms_error *err)
{
    size_t n_lanes = 0;
    for (size_t i = 0; i < n_r; i++)
        if (r[i].depth < MSR_CHART_MAX_LANES && (size_t)r[i].depth + 1 > n_lanes)
            n_lanes = (size_t)r[i].depth + 1;
    int rc = msr__layout(chart, area, n_lanes, !spec->no_legend, spec->fragmentation, err);
    if (!rc)
        rc = msr__window(spec, msr__full_span(src, spec->x_mode), &chart->x_lo, &chart->x_hi, err);
    if (rc)
        return rc;
    size_t W = chart->n_cols;
    chart->dx = (chart->x_hi - chart->x_lo) / (double)W;
    chart->col_event = msr__alloc_n(W, sizeof *chart->col_event);
    chart->col_active = msr__alloc_n(W, sizeof *chart->col_active);
    chart->col_reserved = msr__alloc_n(W, sizeof *chart->col_reserved);
    chart->col_low = msr__alloc_n(W, sizeof *chart->col_low);
    chart->col_hill = msr__alloc_n(W, sizeof *chart->col_hill);
    if (!chart->col_event || !chart->col_active || !chart->col_reserved || !chart->col_low ||
        !chart->col_hill)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for the chart");
    return 0;
}

/* Everything after the frame: columns, scales, bands and their heights, lanes, markers,
 * legend and title, in that order (later steps read what earlier ones computed). */
static int fill_stacked(msr_chart *chart, const msr_chart_source *src, const msr_chart_spec *spec,
                        const msr__range *r, size_t n_r, const ms_phases *ph, msr__site_cache *sc,
                        msr__grouping *gr, const msr_chart *cols, msr__band_runs *runs,
                        ms_error *err)
{
    size_t W = chart->n_cols;
    int rc = 0;
    if (cols && cols->x_mode == chart->x_mode && cols->x_lo == chart->x_lo &&
        cols->x_hi == chart->x_hi && cols->dx == chart->dx && cols->n_cols == W) {
        /* The same source and window: its columns are the other grouping's. */
        memcpy(chart->col_event, cols->col_event, W * sizeof *chart->col_event);
        memcpy(chart->col_active, cols->col_active, W * sizeof *chart->col_active);
        memcpy(chart->col_reserved, cols->col_reserved, W * sizeof *chart->col_reserved);
        memcpy(chart->col_low, cols->col_low, W * sizeof *chart->col_low);
        memcpy(chart->col_hill, cols->col_hill, W * sizeof *chart->col_hill);
    } else {
        rc = msr__aggregate(src, chart->x_mode, chart->x_lo, chart->x_hi, chart->dx, W,
                           chart->col_event, chart->col_active, chart->col_reserved,
                           chart->col_low, chart->col_hill, err);
    }
    if (rc)
        return rc;
    int64_t data_max = 0;
    for (size_t c = 0; c < W; c++) {
        if (chart->col_active[c] > data_max)
            data_max = chart->col_active[c];
        if (chart->col_reserved[c] > data_max)
            data_max = chart->col_reserved[c];
    }
    msr__y_scale(chart, data_max, spec->y_fit);
    msr__x_scale(chart);

    rc = msr__build_groups(chart, src, spec, sc, r, n_r, ph, gr, err);
    if (runs) {
        /* The markers and their labels read the highlighted bands' rows and those below
         * them; the categories' legend reads every row. */
        runs->on = false;
        runs->dense_rows = 0;
        for (size_t h = 0; h < spec->n_highlights; h++) {
            int32_t g = gr->of_alloc[spec->highlights[h].alloc];
            if (g >= 0 && (size_t)g + 1 > runs->dense_rows)
                runs->dense_rows = (size_t)g + 1;
        }
        if (spec->by == MSR_CHART_BY_CATEGORY)
            runs = NULL;
    }
    if (!rc)
        rc = msr__sweep_heights(chart, src, gr, runs, err);
    if (!rc)
        rc = msr__build_lanes(chart, src, r, n_r, err);
    if (!rc)
        rc = msr__find_ooms(chart, src, err);
    if (rc)
        return rc;
    msr__mark_highlights(chart, spec, gr);
    msr__find_peak(chart, src);
    chart->show_low = msr__show_low(chart);
    if (spec->by == MSR_CHART_BY_CATEGORY)
        msr__legend_categories(chart);
    msr__legend_finish_stacked(chart, spec);
    msr__title_stacked(chart, src, spec);
    msr__place_labels(chart);
    rc = msr__chart_iterations(chart, src, err);
    if (!rc && spec->fragmentation)
        rc = msr__frag_panel(chart, src, err);
    return rc;
}

static int build_stacked(msr_chart *chart, const msr_chart_source *src_in,
                         const msr_chart_spec *spec_in, msr_chart_rect area,
                         const msr__chart_aux *aux, ms_error *err)
{
    int rc = msr__check_source(src_in, true, err);
    if (rc)
        return rc;
    /* The run axis: the source carries the chart's copy of its warp from here on. */
    msr_chart_spec run_spec = *spec_in;
    msr_chart_source run_src;
    chart->run_axis = spec_in->x_mode == MSR_CHART_X_RUN;
    msr__run_source(&run_src, &chart->warp, src_in, &run_spec.x_mode);
    run_src.warp = chart->run_axis ? &chart->warp : NULL;
    const msr_chart_source *src = &run_src;
    const msr_chart_spec *spec = &run_spec;
    if (!rc && spec->by == MSR_CHART_BY_CATEGORY)
        rc = check_categories(src, err);
    if (!rc && spec->fragmentation && (!src->frag || src->frag->n != src->trace->n))
        rc = msr__render_fail(err, MS_ERR_ARG,
                             "the fragmentation panel needs the allocator's series of this "
                             "trace (msr_chart_source.frag)");
    if (rc)
        return rc;
    for (size_t h = 0; h < spec->n_highlights; h++)
        if (spec->highlights[h].alloc >= src->tl->n_allocs)
            return msr__render_fail(err, MS_ERR_ARG,
                                   "highlighted allocation %zu is not in the timeline",
                                   spec->highlights[h].alloc);
    chart->x_mode = spec->x_mode;
    chart->event_clock = spec->x_mode == MSR_CHART_X_TIME && !src->trace->has_times;
    chart->by = spec->by;
    chart->theme = msr__theme(spec->dark);
    msr__copy_text(chart->source_label, sizeof chart->source_label, src->label);
    chart->device = src->tl->device;

    msr__range *r = NULL;
    size_t n_r = 0;
    rc = msr__build_ranges(src, &r, &n_r, err);
    if (rc)
        return rc;
    msr__grouping gr = {NULL, 0, aux->life_x, aux->life_global};
    msr__site_cache sc = {NULL, NULL, 0};
    const ms_phases *ph = NULL;
    rc = frame_stacked(chart, src, spec, area, r, n_r, err);
    if (rc)
        goto done;
    gr.of_alloc = msr__alloc_n(src->tl->n_allocs, sizeof(int32_t));
    if (!gr.of_alloc || msr__site_cache_init(&sc, src->snap)) {
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory for the chart");
        goto done;
    }
    for (size_t i = 0; i < src->tl->n_allocs; i++)
        gr.of_alloc[i] = -1;
    /* By phase without top-level annotation ranges: the run's phases (inferred from the
     * stacks, the same cut the categories use). */
    if (spec->by == MSR_CHART_BY_PHASE && msr_chart_phases_needed(src->ranges, src->n_ranges)) {
        ph = src->phases;
        if (!ph) {
            rc = msr__render_fail(err, MS_ERR_ARG,
                                 "--by phase needs the run's phases (msr_chart_source.phases)");
            goto done;
        }
    }
    rc = fill_stacked(chart, src, spec, r, n_r, ph, &sc, &gr, aux->cols, aux->runs, err);
done:
    free(r);
    free(gr.of_alloc);
    msr__site_cache_free(&sc);
    return rc;
}

/* A trace without times (PyTorch before about 2.1) has no time axis to draw: its events
 * are the axis, whatever was asked, never a span of made-up seconds. */
static msr_chart_spec spec_for(const msr_chart_spec *spec, const msr_chart_source *srcs, size_t n)
{
    msr_chart_spec s = *spec;
    for (size_t i = 0; i < n && (!s.keep_time_axis || s.x_mode == MSR_CHART_X_RUN); i++)
        if (srcs[i].trace && !srcs[i].trace->has_times)
            s.x_mode = MSR_CHART_X_EVENTS;
    return s;
}

int msr_chart_build(msr_chart **out, const msr_chart_source *src, const msr_chart_spec *spec_in,
                   msr_chart_rect area, ms_error *err)
{
    msr__chart_aux aux = {NULL, NULL, NULL, NULL};
    return msr__chart_build_aux(out, src, spec_in, area, &aux, err);
}

int msr__chart_build_aux(msr_chart **out, const msr_chart_source *src,
                        const msr_chart_spec *spec_in, msr_chart_rect area, const msr__chart_aux *aux,
                        ms_error *err)
{
    if (aux->runs)
        aux->runs->on = false;
    if (!out)
        return msr__render_fail(err, MS_ERR_ARG, "no output pointer");
    *out = NULL;
    int rc = check_spec(spec_in, err);
    if (rc)
        return rc;
    msr_chart_spec adj = spec_for(spec_in, src, src ? 1 : 0);
    const msr_chart_spec *spec = &adj;
    msr_chart *chart = calloc(1, sizeof *chart);
    if (!chart)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for a chart");
    rc = build_stacked(chart, src, spec, area, aux, err);
    if (rc && aux->runs)
        aux->runs->on = false;
    if (rc) {
        msr_chart_free(chart);
        return rc;
    }
    *out = chart;
    return 0;
}

/* ------------------------------------------------------------------ overlay */

static int build_overlay(msr_chart *chart, const msr_chart_source *srcs, size_t n_srcs,
                         const msr_chart_spec *spec, msr_chart_rect area, ms_error *err)
{
    double span = 0;
    for (size_t i = 0; i < n_srcs; i++) {
        int rc = msr__check_source(&srcs[i], false, err);
        if (rc)
            return rc;
        double s = msr__full_span(&srcs[i], spec->x_mode);
        if (s > span)
            span = s;
    }
    chart->overlay = true;
    chart->device = -1;
    chart->x_mode = spec->x_mode;
    chart->by = spec->by;
    chart->theme = msr__theme(spec->dark);
    int rc = msr__layout(chart, area, 0, !spec->no_legend, false, err);
    if (!rc)
        rc = msr__window(spec, span, &chart->x_lo, &chart->x_hi, err);
    if (rc)
        return rc;
    size_t W = chart->n_cols;
    chart->dx = (chart->x_hi - chart->x_lo) / (double)W;
    int64_t *ev = msr__alloc_n(W, sizeof *ev);
    if (!ev)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for the chart");
    int64_t data_max = 0;
    for (size_t i = 0; i < n_srcs && !rc; i++) {
        chart->n_series = i + 1; /* so msr_chart_free releases what the series got */
        rc = msr__series(chart, &chart->series[i], &srcs[i], i, ev, &data_max, err);
        if (!rc)
            msr__legend_add(chart, MSR_CHART_KEY_LINE, chart->series[i].rgb,
                           chart->series[i].label);
    }
    free(ev);
    if (rc)
        return rc;
    msr__y_scale(chart, data_max, spec->y_fit);
    msr__x_scale(chart);
    msr__legend_finish_overlay(chart);
    msr__find_overlay_peak(chart, srcs);
    msr__title_overlay(chart, srcs, n_srcs, spec);
    msr__place_labels(chart);
    return 0;
}

int msr_chart_build_overlay(msr_chart **out, const msr_chart_source *srcs, size_t n_srcs,
                           const msr_chart_spec *spec_in, msr_chart_rect area, ms_error *err)
{
    if (!out)
        return msr__render_fail(err, MS_ERR_ARG, "no output pointer");
    *out = NULL;
    int rc = check_spec(spec_in, err);
    if (rc)
        return rc;
    msr_chart_spec adj = spec_for(spec_in, srcs, n_srcs <= MSR_CHART_MAX_SERIES ? n_srcs : 0);
    /* Each file has its own run axis and curves share one: an overlay is drawn on time. */
    if (adj.x_mode == MSR_CHART_X_RUN)
        adj.x_mode = MSR_CHART_X_TIME;
    const msr_chart_spec *spec = &adj;
    if (n_srcs == 0 || n_srcs > MSR_CHART_MAX_SERIES)
        return msr__render_fail(err, MS_ERR_ARG, "an overlay takes 1 to %d files (got %zu)",
                               MSR_CHART_MAX_SERIES, n_srcs);
    msr_chart *chart = calloc(1, sizeof *chart);
    if (!chart)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for a chart");
    rc = build_overlay(chart, srcs, n_srcs, spec, area, err);
    if (rc) {
        msr_chart_free(chart);
        return rc;
    }
    *out = chart;
    return 0;
}
