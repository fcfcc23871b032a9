/* What one image shows (see ms_chart_build_figure in chart.h): one chart per file stacked
 * as panels on shared scales, or one chart of overlaid curves. The panels' shared x
 * window and y fit are decided here once, for the render command, the report and the
 * HTML explorer alike. */
#include "chart_impl.h"

#include <math.h>

ms_chart_rect ms_render_panel_rect(int width, int height, size_t n, size_t i)
{
    if (n == 0)
        n = 1;
    double h = floor((double)height / (double)n);
    ms_chart_rect r = {0, (double)i * h, (double)width, h};
    return r;
}

void ms_chart_figure_free(ms_chart_figure *fig)
{
    if (!fig)
        return;
    for (size_t i = 0; i < fig->n_charts; i++)
        ms_chart_free(fig->charts[i]);
    free(fig);
}

/* Panels share both scales so that a taller hill means more memory: the y scale fits the
 * largest file, and a window without an end ends where the longest file does. */
static int shared_scales(const ms_chart_source *srcs, size_t n_srcs, ms_chart_spec *spec,
                         ms_error *err)
{
    double span = 0;
    int64_t bytes = 0;
    for (size_t i = 0; i < n_srcs; i++) {
        double s;
        int64_t b;
        int rc = ms_chart_extent(&srcs[i], spec, &s, &b, err);
        if (rc)
            return rc;
        span = s > span ? s : span;
        bytes = b > bytes ? b : bytes;
    }
    spec->y_fit = bytes;
    if (!spec->has_to) {
        spec->has_to = true;
        spec->to = (spec->has_from ? spec->from : 0) + span;
    }
    return 0;
}

static int build_panels(ms_chart_figure *fig, const ms_chart_source *srcs, size_t n_srcs,
                        const ms_chart_figure_spec *fs, ms_error *err)
{
    ms_chart_spec spec = fs->chart;
    spec.highlights = NULL;
    spec.n_highlights = 0;
    if (n_srcs > 1) {
        int rc = shared_scales(srcs, n_srcs, &spec, err);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < n_srcs; i++) {
        ms_chart_spec panel = spec;
        if (fs->highlights && fs->n_highlights) {
            panel.highlights = fs->highlights[i];
            panel.n_highlights = fs->n_highlights[i];
        }
        int rc = ms_chart_build(&fig->charts[i], &srcs[i], &panel,
                                ms_render_panel_rect(fs->width, fs->height, n_srcs, i), err);
        if (rc)
            return rc;
        fig->n_charts = i + 1;
    }
    return 0;
}

int ms_chart_build_figure(ms_chart_figure **out, const ms_chart_source *srcs, size_t n_srcs,
                          const ms_chart_figure_spec *fs, ms_error *err)
{
    if (!out)
        return ms__render_fail(err, MS_ERR_ARG, "no output pointer");
    *out = NULL;
    if (!fs)
        return ms__render_fail(err, MS_ERR_ARG, "no figure spec");
    if (n_srcs == 0 || n_srcs > MS_CHART_MAX_SERIES || !srcs)
        return ms__render_fail(err, MS_ERR_ARG, "a figure takes 1 to %d files (got %zu)",
                               MS_CHART_MAX_SERIES, n_srcs);
    ms_chart_figure *fig = calloc(1, sizeof *fig);
    if (!fig)
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for a figure");
    fig->width = fs->width;
    fig->height = fs->height;
    int rc;
    if (fs->overlay) {
        ms_chart_rect area = {0, 0, (double)fs->width, (double)fs->height};
        rc = ms_chart_build_overlay(&fig->charts[0], srcs, n_srcs, &fs->chart, area, err);
        if (!rc)
            fig->n_charts = 1;
    } else {
        rc = build_panels(fig, srcs, n_srcs, fs, err);
    }
    if (rc) {
        ms_chart_figure_free(fig);
        return rc;
    }
    *out = fig;
    return 0;
}
