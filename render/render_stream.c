#include "render_stream.h"

#include <cairo-svg.h>

#include "render_util.h"

int ms_render_write_stream(cairo_write_func_t write, void *closure, const char *name,
                           ms_render_format format, int width, int height,
                           const ms_chart *const *charts, size_t n_charts, ms_error *err)
{
    if (!write || width <= 0 || height <= 0 || width > 32767 || height > 32767)
        return ms__render_fail(err, MS_ERR_ARG, "bad image size %dx%d", width, height);
    cairo_surface_t *surface =
        format == MS_RENDER_SVG
            ? cairo_svg_surface_create_for_stream(write, closure, width, height)
            : cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
        int rc = ms__render_fail(err, MS_ERR_IO, "%s: %s", name,
                                 cairo_status_to_string(cairo_surface_status(surface)));
        cairo_surface_destroy(surface);
        return rc;
    }
    cairo_t *cr = cairo_create(surface);
    int rc = 0;
    ms_chart_rgb bg = n_charts ? charts[0]->theme.bg : (ms_chart_rgb){1, 1, 1};
    cairo_set_source_rgb(cr, bg.r, bg.g, bg.b);
    cairo_paint(cr);
    for (size_t i = 0; i < n_charts && !rc; i++)
        rc = ms_chart_draw(cr, charts[i], err);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    if (!rc && format == MS_RENDER_PNG) {
        cairo_status_t st = cairo_surface_write_to_png_stream(surface, write, closure);
        if (st != CAIRO_STATUS_SUCCESS)
            rc = ms__render_fail(err, MS_ERR_IO, "%s: %s", name, cairo_status_to_string(st));
    }
    cairo_surface_finish(surface); /* an SVG is written out here */
    if (!rc && cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS)
        rc = ms__render_fail(err, MS_ERR_IO, "%s: %s", name,
                             cairo_status_to_string(cairo_surface_status(surface)));
    cairo_surface_destroy(surface);
    return rc;
}
