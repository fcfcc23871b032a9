/* What one image shows (see msr_chart_build_figure in chart.h): one chart per file stacked
 * as panels on shared scales, or one chart of overlaid curves. The panels' shared x
 * window and y fit, and each panel's run axis, are decided here once, for every picture
 * that compares files: `render A B`, the report's ranks.png. */
#include "chart_impl.h"

#include <math.h>

msr_chart_rect msr_render_panel_rect(int width, int height, size_t n, size_t i)
{
    if (n == 0)
        n = 1;
    double h = floor((double)height / (double)n);
    msr_chart_rect r = {0, (double)i * h, (double)width, h};
    return r;
}

void msr_chart_figure_free(msr_chart_figure *fig)
{
    if (!fig)
        return;
    for (size_t i = 0; i < fig->n_charts; i++)
        msr_chart_free(fig->charts[i]);
    free(fig);
}

/* --from/--to are seconds; on the run axis each file's window is in its own axis units. */
static msr_chart_spec file_spec(const msr_chart_spec *s, const msr_chart_source *src)
{
    msr_chart_spec f = *s;
    if (f.x_mode == MSR_CHART_X_RUN && src->warp && src->trace && src->trace->has_times) {
        if (f.has_from)
            f.from = msr_chart_warp_u(src->warp, f.from);
        if (f.has_to)
            f.to = msr_chart_warp_u(src->warp, f.to);
    }
    return f;
}

/* Panels share both scales so that a taller hill means more memory: the y scale fits the
 * largest file, and a window without an end ends where the longest file does, in each
 * file's own units (on the run axis every panel has its own breaks, so each file's
 * iterations take the width its run axis gives them, from the same left edge). */
static int build_panels(msr_chart_figure *fig, const msr_chart_source *srcs, size_t n_srcs,
                        const msr_chart_figure_spec *fs, ms_error *err)
{
    msr_chart_spec spec = fs->chart;
    spec.highlights = NULL;
    spec.n_highlights = 0;
    double span = 0;
    if (n_srcs > 1) {
        int64_t bytes = 0;
        for (size_t i = 0; i < n_srcs; i++) {
            double sp;
            int64_t b;
            msr_chart_spec one = file_spec(&spec, &srcs[i]);
            int rc = msr_chart_extent(&srcs[i], &one, &sp, &b, err);
            if (rc)
                return rc;
            span = sp > span ? sp : span;
            bytes = b > bytes ? b : bytes;
        }
        spec.y_fit = bytes;
    }
    for (size_t i = 0; i < n_srcs; i++) {
        msr_chart_spec panel = file_spec(&spec, &srcs[i]);
        if (n_srcs > 1 && !spec.has_to) {
            panel.has_to = true;
            panel.to = (panel.has_from ? panel.from : 0) + span;
        }
        if (fs->highlights && fs->n_highlights) {
            panel.highlights = fs->highlights[i];
            panel.n_highlights = fs->n_highlights[i];
        }
        int rc = msr_chart_build(&fig->charts[i], &srcs[i], &panel,
                                msr_render_panel_rect(fs->width, fs->height, n_srcs, i), err);
        if (rc)
            return rc;
        fig->n_charts = i + 1;
    }
    /* A site has one colour in every panel: the panels' names kept apart as one set. */
    if (msr__colours_together(fig->charts, fig->n_charts))
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory colouring the panels");
    return 0;
}

int msr_chart_build_figure(msr_chart_figure **out, const msr_chart_source *srcs, size_t n_srcs,
                          const msr_chart_figure_spec *fs, ms_error *err)
{
    if (!out)
        return msr__render_fail(err, MS_ERR_ARG, "no output pointer");
    *out = NULL;
    if (!fs)
        return msr__render_fail(err, MS_ERR_ARG, "no figure spec");
    if (n_srcs == 0 || n_srcs > MSR_CHART_MAX_SERIES || !srcs)
        return msr__render_fail(err, MS_ERR_ARG, "a figure takes 1 to %d files (got %zu)",
                               MSR_CHART_MAX_SERIES, n_srcs);
    msr_chart_figure *fig = calloc(1, sizeof *fig);
    if (!fig)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for a figure");
    fig->width = fs->width;
    fig->height = fs->height;
    int rc = 0;
    if (fs->overlay) {
        msr_chart_rect area = {0, 0, (double)fs->width, (double)fs->height};
        rc = msr_chart_build_overlay(&fig->charts[0], srcs, n_srcs, &fs->chart, area, err);
        if (!rc)
            fig->n_charts = 1;
    } else {
        /* The run axis of each file, laid once for its extent and its panel from the
         * run's idle stretches the source carries. */
        msr_chart_source own[MSR_CHART_MAX_SERIES];
        msr_chart_warp warps[MSR_CHART_MAX_SERIES];
        for (size_t i = 0; i < n_srcs && !rc; i++) {
            own[i] = srcs[i];
            if (fs->chart.x_mode != MSR_CHART_X_RUN || own[i].warp || !own[i].trace)
                continue;
            msr__source_warp(&warps[i], &own[i]);
            own[i].warp = &warps[i];
        }
        if (!rc)
            rc = build_panels(fig, own, n_srcs, fs, err);
    }
    if (rc) {
        msr_chart_figure_free(fig);
        return rc;
    }
    *out = fig;
    return 0;
}
