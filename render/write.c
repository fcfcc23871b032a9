/* Image files of charts (see draw.h): the PNG or SVG surface, painted, every chart drawn on
 * it by draw.c, and written with its texts (png_write.h) to a path or a caller's stream.
 * Every image file memsnap makes, the OOM picture (oom_chart.c) included, is written by
 * msr_render_image_to. No printing here. */
#include "draw.h"

#include <cairo-svg.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memsnap/version.h"
#include "render_util.h"

int msr_render_format_from_name(const char *name, msr_render_format *out, ms_error *err)
{
    if (name && !strcasecmp(name, "png")) {
        *out = MSR_RENDER_PNG;
        return 0;
    }
    if (name && !strcasecmp(name, "svg")) {
        *out = MSR_RENDER_SVG;
        return 0;
    }
    return msr__render_fail(err, MS_ERR_ARG,
                           "unknown image format '%s' (png or svg)", name ? name : "");
}

int msr_render_format_from_path(const char *path, msr_render_format *out, ms_error *err)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!dot || (slash && dot < slash))
        return msr__render_fail(err, MS_ERR_ARG,
                               "cannot tell the image format of '%s' (use .png or .svg)",
                               path ? path : "");
    return msr_render_format_from_name(dot + 1, out, err);
}

/* Title and peak written into the file when the caller gives none: the panels' titles,
 * and each panel's (or overlaid file's) peak as an exact byte count. */
static void default_meta(const msr_chart *const *charts, size_t n, char *title, size_t tcap,
                         char *peak, size_t pcap)
{
    size_t t = 0, p = 0;
    title[0] = peak[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const msr_chart *c = charts[i];
        if (t < tcap)
            t += (size_t)snprintf(title + t, tcap - t, "%s%s", i ? " | " : "", c->title);
        if (c->overlay) {
            for (size_t k = 0; k < c->n_series && p < pcap; k++)
                p += (size_t)snprintf(peak + p, pcap - p, "%s%s: %lld bytes", p ? "; " : "",
                                      c->series[k].label, (long long)c->series[k].peak_bytes);
        } else if (c->has_peak && p < pcap) {
            p += (size_t)snprintf(peak + p, pcap - p, "%s%lld bytes (%s)", p ? "; " : "",
                                  (long long)c->peak_bytes, c->peak_label);
        }
    }
}

/* ------------------------------------------------------------------ any image */

int msr_render_image_to(cairo_write_func_t write, void *closure, const char *name,
                       msr_render_format format, int width, int height, msr_chart_rgb bg,
                       const msr_image_meta *meta, msr_render_paint_fn paint, const void *ctx,
                       ms_error *err)
{
    if (!write || width <= 0 || height <= 0 || width > 32767 || height > 32767)
        return msr__render_fail(err, MS_ERR_ARG, "bad image size %dx%d", width, height);
    msr_image_meta m = meta ? *meta : (msr_image_meta){0};
    if (!m.software)
        m.software = "memsnap " MS_VERSION_STRING;
    msr_svg_meta svg = {write, closure, &m, 0, 0};
    cairo_surface_t *surface =
        format == MSR_RENDER_SVG
            ? cairo_svg_surface_create_for_stream(msr_svg_meta_write, &svg, width, height)
            : cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
        int rc = msr__render_fail(err, MS_ERR_IO, "%s: %s", name,
                                 cairo_status_to_string(cairo_surface_status(surface)));
        cairo_surface_destroy(surface);
        return rc;
    }
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, bg.r, bg.g, bg.b);
    cairo_paint(cr);
    int rc = paint(ctx, cr, width, height, err);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    ms_error png_err;
    if (!rc && format == MSR_RENDER_PNG &&
        msr_png_write(surface, write, closure, &m, -1, &png_err))
        rc = msr__render_fail(err, png_err.code, "%s: %s", name, png_err.message);
    cairo_surface_finish(surface); /* an SVG is written out here */
    if (!rc && cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS)
        rc = msr__render_fail(err, MS_ERR_IO, "%s: %s", name,
                             cairo_status_to_string(cairo_surface_status(surface)));
    cairo_surface_destroy(surface);
    return rc;
}

int msr_render_image_file(const char *path, msr_render_format format, int width, int height,
                         msr_chart_rgb bg, const msr_image_meta *meta, msr_render_paint_fn paint,
                         const void *ctx, ms_error *err)
{
    if (!path || width <= 0 || height <= 0 || width > 32767 || height > 32767)
        return msr__render_fail(err, MS_ERR_ARG, "bad image size %dx%d", width, height);
    FILE *f = fopen(path, "wb");
    if (!f)
        return msr__render_fail(err, MS_ERR_IO, "%s: %s", path, strerror(errno));
    int rc = msr_render_image_to(msr_png_stdio_write, f, path, format, width, height, bg, meta,
                                paint, ctx, err);
    if (fclose(f) && !rc)
        rc = msr__render_fail(err, MS_ERR_IO, "%s: %s", path, strerror(errno));
    if (rc)
        remove(path); /* no half-written image left behind */
    return rc;
}

/* ------------------------------------------------------------------ charts */

typedef struct chart_job {
    const msr_chart *const *charts;
    size_t n;
} chart_job;

static int paint_charts(const void *ctx, cairo_t *cr, int width, int height, ms_error *err)
{
    (void)width;
    (void)height;
    const chart_job *job = ctx;
    int rc = 0;
    for (size_t i = 0; i < job->n && !rc; i++)
        rc = msr_chart_draw(cr, job->charts[i], err);
    return rc;
}

/* The texts of a chart image: the caller's, else the defaults (default_meta). */
static msr_image_meta chart_meta(const msr_chart *const *charts, size_t n, const msr_image_meta *meta,
                                char *title, char *peak, size_t cap)
{
    default_meta(charts, n, title, cap, peak, cap);
    msr_image_meta m = meta ? *meta : (msr_image_meta){0};
    if (!m.title)
        m.title = title;
    if (!m.peak)
        m.peak = peak;
    return m;
}

static msr_chart_rgb chart_bg(const msr_chart *const *charts, size_t n)
{
    return n ? charts[0]->theme.bg : (msr_chart_rgb){1, 1, 1};
}

int msr_render_write_to(cairo_write_func_t write, void *closure, const char *name,
                       msr_render_format format, int width, int height,
                       const msr_chart *const *charts, size_t n_charts,
                       const msr_image_meta *meta, ms_error *err)
{
    char title[1024], peak[1024];
    msr_image_meta m = chart_meta(charts, n_charts, meta, title, peak, sizeof title);
    chart_job job = {charts, n_charts};
    return msr_render_image_to(write, closure, name, format, width, height,
                              chart_bg(charts, n_charts), &m, paint_charts, &job, err);
}

int msr_render_write_meta(const char *path, msr_render_format format, int width, int height,
                         const msr_chart *const *charts, size_t n_charts,
                         const msr_image_meta *meta, ms_error *err)
{
    char title[1024], peak[1024];
    msr_image_meta m = chart_meta(charts, n_charts, meta, title, peak, sizeof title);
    chart_job job = {charts, n_charts};
    return msr_render_image_file(path, format, width, height, chart_bg(charts, n_charts), &m,
                                paint_charts, &job, err);
}

int msr_render_write(const char *path, msr_render_format format, int width, int height,
                    const msr_chart *const *charts, size_t n_charts, ms_error *err)
{
    return msr_render_write_meta(path, format, width, height, charts, n_charts, NULL, err);
}
