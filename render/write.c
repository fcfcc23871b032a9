/* Image files of charts (see draw.h): the PNG or SVG surface a path asks for, painted and
 * written once every chart is drawn on it by draw.c. No printing here. */
#include "draw.h"

#include <cairo-svg.h>
#include <string.h>
#include <strings.h>

#include "render_util.h"

int ms_render_format_from_name(const char *name, ms_render_format *out, ms_error *err)
{
    if (name && !strcasecmp(name, "png")) {
        *out = MS_RENDER_PNG;
        return 0;
    }
    if (name && !strcasecmp(name, "svg")) {
        *out = MS_RENDER_SVG;
        return 0;
    }
    return ms__render_fail(err, MS_ERR_ARG,
                           "unknown image format '%s' (png or svg)", name ? name : "");
}

int ms_render_format_from_path(const char *path, ms_render_format *out, ms_error *err)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!dot || (slash && dot < slash))
        return ms__render_fail(err, MS_ERR_ARG,
                               "cannot tell the image format of '%s' (use .png or .svg)",
                               path ? path : "");
    return ms_render_format_from_name(dot + 1, out, err);
}

int ms_render_write(const char *path, ms_render_format format, int width, int height,
                    const ms_chart *const *charts, size_t n_charts, ms_error *err)
{
    if (!path || width <= 0 || height <= 0 || width > 32767 || height > 32767)
        return ms__render_fail(err, MS_ERR_ARG, "bad image size %dx%d", width, height);
    cairo_surface_t *surface =
        format == MS_RENDER_SVG
            ? cairo_svg_surface_create(path, width, height)
            : cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
        int rc = ms__render_fail(err, MS_ERR_IO, "%s: %s", path,
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
        cairo_status_t st = cairo_surface_write_to_png(surface, path);
        if (st != CAIRO_STATUS_SUCCESS)
            rc = ms__render_fail(err, MS_ERR_IO, "%s: %s", path, cairo_status_to_string(st));
    }
    cairo_surface_finish(surface); /* an SVG is written out here */
    if (!rc && cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS)
        rc = ms__render_fail(err, MS_ERR_IO, "%s: %s", path,
                             cairo_status_to_string(cairo_surface_status(surface)));
    cairo_surface_destroy(surface);
    return rc;
}
