/* Charts of `memsnap report`, drawn by render/: each file's active-memory chart with its
 * leaked allocations outlined and labelled (as `memsnap render` draws it), the same
 * memory by category (as `memsnap render --by category`), and one chart of all files on
 * shared scales. Each is drawn as a PNG file in DIR and, where the page shows it, as SVG
 * text kept in memory, since a page that must not fetch anything cannot point at the
 * PNG. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include <cairo-svg.h>

#include "draw.h"
#include "chart.h"
#include "safe_output.h"
#include "memsnap/leaks.h"

#define PNG_W 1600
#define PNG_H 800
/* The page's charts: the width of the page's content, so text in them reads at the
 * size of the text around them on a laptop screen. */
#define SVG_W 1320
#define SVG_H 560
#define PANEL_H_PNG 500
#define PANEL_H_SVG 330
/* Up to this many files are stacked panels (heights compare at a glance); more become
 * one chart of overlaid curves, which stays readable however many ranks there are. */
#define MAX_PANELS 3

static int fail(ms_error *err, int code, const char *what)
{
    err->code = code;
    err->offset = MS_NO_OFFSET;
    snprintf(err->message, sizeof err->message, "%s", what);
    return code;
}

/* The charts as one SVG document in memory. */
static int draw_svg(char **out, int w, int h, const msr_chart *const *charts, size_t n,
                    ms_error *err)
{
    report_buf b = {0};
    cairo_surface_t *surface = cairo_svg_surface_create_for_stream(report_buf_write, &b, w, h);
    cairo_t *cr = cairo_create(surface);
    msr_chart_rgb bg = n ? charts[0]->theme.bg : (msr_chart_rgb){1, 1, 1};
    cairo_set_source_rgb(cr, bg.r, bg.g, bg.b);
    cairo_paint(cr);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = msr_chart_draw(cr, charts[i], err);
    cairo_destroy(cr);
    cairo_surface_finish(surface); /* the SVG is written out here */
    cairo_status_t st = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    if (!rc && st != CAIRO_STATUS_SUCCESS)
        rc = fail(err, MS_ERR_NOMEM, cairo_status_to_string(st));
    if (rc || !b.p) {
        free(b.p);
        return rc ? rc : fail(err, MS_ERR_NOMEM, "empty SVG");
    }
    *out = b.p;
    return 0;
}

/* One chart twice: a PNG at `png_path` and the page's SVG (unless svg_out is NULL), each
 * built for its size. */
static int png_and_svg(char **svg_out, const msr_chart_source *src, const msr_chart_spec *spec,
                       const char *png_path, ms_error *err)
{
    msr_chart *png = NULL, *svg = NULL;
    int rc = msr_chart_build(&png, src, spec, (msr_chart_rect){0, 0, PNG_W, PNG_H}, err);
    if (!rc)
        rc = safe_out_render(png_path, MSR_RENDER_PNG, PNG_W, PNG_H,
                             (const msr_chart *const *)&png, 1,
                             &(msr_image_meta){.source = src->label}, err);
    if (!rc && svg_out)
        rc = msr_chart_build(&svg, src, spec, (msr_chart_rect){0, 0, SVG_W, SVG_H}, err);
    if (!rc && svg_out)
        rc = draw_svg(svg_out, SVG_W, SVG_H, (const msr_chart *const *)&svg, 1, err);
    msr_chart_free(png);
    msr_chart_free(svg);
    return rc;
}

/* What a file's charts read from its run: the run axis as `render` lays it (its
 * iterations, idle stretches and shape, which names a CUDA-graph pool in the title)
 * whatever the axis, so both axes' titles agree. */
static int source_of(msr_chart_source *src, ms_run *run, const char *label,
                     const msr_chart_spec *spec, ms_error *err)
{
    return msr_chart_source_from_run(src, run, label, msr_chart_run_needs(spec) | MSR_CHART_RUN_AXIS,
                                    err);
}

int report_chart_file(ms_run *run, const char *label, const report_opts *o, const char *png_path,
                      ms_error *err)
{
    msr_chart_spec spec = {0};
    spec.x_mode = o->x_time ? MSR_CHART_X_TIME : MSR_CHART_X_RUN;
    msr_chart_leaks leaks;
    int rc = msr_chart_leaks_from_run(&leaks, run, err);
    if (rc)
        return rc;
    spec.highlights = leaks.highlights;
    spec.n_highlights = leaks.n;
    msr_chart_source src;
    rc = source_of(&src, run, label, &spec, err);
    /* The PNG alone: the page shows the interactive view in its place. */
    if (!rc)
        rc = png_and_svg(NULL, &src, &spec, png_path, err);
    msr_chart_leaks_free(&leaks);
    return rc;
}

int report_chart_categories(char **svg_out, ms_run *run, const ms_timeline *t,
                            const ms_categories *c, const char *label, bool x_time,
                            const char *png_path, ms_error *err)
{
    *svg_out = NULL;
    msr_chart_spec spec = {0};
    spec.x_mode = x_time ? MSR_CHART_X_TIME : MSR_CHART_X_RUN;
    spec.by = MSR_CHART_BY_CATEGORY;
    msr_chart_source src;
    int rc = source_of(&src, run, label, &spec, err);
    if (rc)
        return rc;
    /* The caller's timeline and categories: the ones its tables read. */
    src.tl = t;
    src.categories = c;
    return png_and_svg(svg_out, &src, &spec, png_path, err);
}

/* The comparison chart of `n` files in a w x h image: stacked panels on shared scales,
 * each on its run axis, or (more files than panels read well) one overlay. */
static int build_compare(msr_chart_figure **fig, const msr_chart_source *src, size_t n, int w,
                         int h, ms_error *err)
{
    msr_chart_figure_spec fs = {.width = w, .height = h};
    fs.chart.x_mode = MSR_CHART_X_RUN;
    if (n > MAX_PANELS) {
        fs.overlay = true;
        fs.chart.x_mode = MSR_CHART_X_TIME; /* curves of several files share one time axis */
        fs.chart.title = "Active memory of every file";
    }
    return msr_chart_build_figure(fig, src, n, &fs, err);
}

int report_chart_compare(char **svg_out, const report_chart_input *in, size_t n,
                         const char *png_path, ms_error *err)
{
    *svg_out = NULL;
    if (n == 0 || n > MSR_CHART_MAX_SERIES)
        return 0;
    msr_chart_source src[MSR_CHART_MAX_SERIES];
    char sources[1024] = "";
    /* Panels on the run axis (an overlay of more files draws the curves on time). */
    msr_chart_spec axis = {.x_mode = MSR_CHART_X_RUN};
    for (size_t i = 0, o = 0; i < n; i++) {
        int rc = msr_chart_source_from_run(&src[i], in[i].run, in[i].label,
                                          msr_chart_run_needs(&axis), err);
        if (rc)
            return rc;
        if (o < sizeof sources) /* the image's Source text */
            o += (size_t)snprintf(sources + o, sizeof sources - o, "%s%s", i ? ", " : "",
                                  in[i].label);
    }
    bool panels = n <= MAX_PANELS;
    int png_h = panels ? PANEL_H_PNG * (int)n : PNG_H;
    int svg_h = panels ? PANEL_H_SVG * (int)n : SVG_H;
    msr_chart_figure *fig = NULL;
    int rc = build_compare(&fig, src, n, PNG_W, png_h, err);
    if (!rc)
        rc = safe_out_render(png_path, MSR_RENDER_PNG, PNG_W, png_h,
                             (const msr_chart *const *)fig->charts, fig->n_charts,
                             &(msr_image_meta){.source = sources}, err);
    msr_chart_figure_free(fig);
    fig = NULL;
    if (!rc)
        rc = build_compare(&fig, src, n, SVG_W, svg_h, err);
    if (!rc)
        rc = draw_svg(svg_out, SVG_W, svg_h, (const msr_chart *const *)fig->charts, fig->n_charts,
                      err);
    msr_chart_figure_free(fig);
    return rc;
}
