/* The allocator at an OOM, drawn: every segment a bar to one scale, its blocks coloured
 * by category (free blocks white with their sizes), the failed request to the same scale,
 * and under it the active and reserved memory of the last iterations before the failure.
 * Drawn onto a caller-given cairo_t like draw.c, so PNG and SVG share one path. */
#ifndef MEMSNAP_RENDER_OOM_CHART_H
#define MEMSNAP_RENDER_OOM_CHART_H

#include <cairo.h>

#include "draw.h"
#include "memsnap/oom.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MSR_OOM_CHART_WIDTH 1200

/* The image height the chart wants for this OOM (it grows with the segments shown). */
int msr_oom_chart_height(const ms_oom *o);

/* Draws into the rectangle (x, y, w, h) of cr; leaves cr's state as it found it.
 * `title` may be NULL. Returns 0, or MS_ERR_ARG with cairo's reason. */
int msr_oom_chart_draw(cairo_t *cr, double x, double y, double w, double h,
                      const ms_snapshot *s, const ms_oom *o, const char *title, ms_error *err);

/* Writes the chart with its texts (png_write.h; by default Software, the title, and the
 * failed request as Peak) through write(closure, ...), by the one image writer of
 * draw.h (msr_render_image_to); `name` is used only in messages. */
int msr_oom_chart_write_to(cairo_write_func_t write, void *closure, const char *name,
                          msr_render_format format, const ms_snapshot *s, const ms_oom *o,
                          const char *title, const msr_image_meta *meta, ms_error *err);

/* Writes the chart to a PNG or SVG file chosen by the path's extension (a failed write
 * leaves no file). */
int msr_oom_chart_write(const char *path, const ms_snapshot *s, const ms_oom *o,
                       const char *title, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
