/* Drawing charts with cairo. A chart (chart.h) is drawn onto a caller-given cairo_t
 * inside the rectangle it was built for, so one call draws one panel and PNG, SVG or any
 * other cairo surface share one drawing path. The caller owns the cairo_t; the drawing
 * leaves its state (matrix, source, clip) as it found it. */
#ifndef MEMSNAP_RENDER_DRAW_H
#define MEMSNAP_RENDER_DRAW_H

#include <cairo.h>
#include <stddef.h>

#include "chart.h"
#include "png_write.h"
#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum msr_render_format {
    MSR_RENDER_PNG = 0,
    MSR_RENDER_SVG
} msr_render_format;

/* Draws the panel: background, title, annotation lanes, bands, curves, axes, markers,
 * legend. Returns 0, or MS_ERR_ARG with cairo's reason when the context is in error. */
int msr_chart_draw(cairo_t *cr, const msr_chart *chart, ms_error *err);

/* The format named by a path's extension (.png, .svg; case-insensitive), or MS_ERR_ARG. */
int msr_render_format_from_path(const char *path, msr_render_format *out, ms_error *err);
/* Parses "png" / "svg". */
int msr_render_format_from_name(const char *name, msr_render_format *out, ms_error *err);

/* Makes a width x height PNG or SVG at `path`, paints the first chart's background, draws
 * every chart into its own area and writes the file. Returns 0 or MS_ERR_IO/MS_ERR_ARG. */
int msr_render_write(const char *path, msr_render_format format, int width, int height,
                    const msr_chart *const *charts, size_t n_charts, ms_error *err);
/* As msr_render_write, with the texts written into the file (PNG tEXt chunks, SVG
 * <metadata>, see png_write.h); a NULL meta or field gets the default: Software "memsnap
 * VERSION", Title the charts' titles, Peak each chart's peak in bytes, no Source. A failed
 * write leaves no file. */
int msr_render_write_meta(const char *path, msr_render_format format, int width, int height,
                         const msr_chart *const *charts, size_t n_charts,
                         const msr_image_meta *meta, ms_error *err);
/* The same, written through write(closure, ...) (cairo's callback type) so the caller
 * decides how the file is opened; `name` is used only in messages. */
int msr_render_write_to(cairo_write_func_t write, void *closure, const char *name,
                       msr_render_format format, int width, int height,
                       const msr_chart *const *charts, size_t n_charts,
                       const msr_image_meta *meta, ms_error *err);

/* Draws one image onto cr, a width x height surface already filled with its background;
 * ctx is the caller's. Returns 0 or an error code with err filled. */
typedef int (*msr_render_paint_fn)(const void *ctx, cairo_t *cr, int width, int height,
                                  ms_error *err);

/* The one writer of image files, charts and the OOM picture alike: a width x height PNG
 * or SVG filled with bg, painted by paint(ctx, ...), written with meta's texts (a NULL
 * Software gets "memsnap VERSION") through write(closure, ...); `name` is used only in
 * messages. Returns 0 or MS_ERR_IO/MS_ERR_ARG. */
int msr_render_image_to(cairo_write_func_t write, void *closure, const char *name,
                       msr_render_format format, int width, int height, msr_chart_rgb bg,
                       const msr_image_meta *meta, msr_render_paint_fn paint, const void *ctx,
                       ms_error *err);
/* The same to a file at path (a plain fopen; a failed write leaves no file). */
int msr_render_image_file(const char *path, msr_render_format format, int width, int height,
                         msr_chart_rgb bg, const msr_image_meta *meta, msr_render_paint_fn paint,
                         const void *ctx, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
