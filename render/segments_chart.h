/* The allocator's state at chosen instants, drawn (memsnap segments -o): per instant a
 * panel with its totals and its segments to scale, drawn by seg_draw.c as the OOM picture
 * draws them. A few segments get a row each; up to a few hundred are packed several to a
 * row in address order, still to one scale; beyond that an overview: every segment a bar
 * of its size, largest first, its free part hatched, a tick at its largest free block, and
 * under it each segment's free share. Drawn onto a caller-given cairo_t like draw.c. */
#ifndef MEMSNAP_RENDER_SEGMENTS_CHART_H
#define MEMSNAP_RENDER_SEGMENTS_CHART_H

#include <cairo.h>

#include "draw.h"
#include "memsnap/allocator.h"
#include "seg_draw.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MSR_SEGMENTS_CHART_WIDTH 1400
/* Segments a panel gives a row each; more are packed, and past MSR_SEGMENTS_PACK_MAX the
 * panel is the overview. */
#define MSR_SEGMENTS_ROWS_MAX 40
#define MSR_SEGMENTS_PACK_MAX 300

typedef struct msr_segments_panel {
    const ms_heap *heap;
    const uint8_t *block_category; /* per block (MS_CAT_COUNT: none), or NULL */
    const char *title;             /* "at the peak: 1.234 s (event 5678)" */
} msr_segments_panel;

typedef struct msr_segments_figure {
    const ms_snapshot *snap;       /* site colours and names */
    const msr_segments_panel *panels;
    size_t n_panels;
    msr_seg_by by;
    const char *title;             /* the image's heading, or NULL */
} msr_segments_figure;

/* How a panel lays out its segments. */
typedef enum msr_segments_layout {
    MSR_SEGMENTS_ROWS = 0,
    MSR_SEGMENTS_PACKED,
    MSR_SEGMENTS_OVERVIEW
} msr_segments_layout;

msr_segments_layout msr_segments_layout_of(const ms_heap *h, double plot_w);

/* The image height the figure wants at MSR_SEGMENTS_CHART_WIDTH. */
int msr_segments_chart_height(const msr_segments_figure *f);

int msr_segments_chart_draw(cairo_t *cr, double x, double y, double w, double h,
                           const msr_segments_figure *f, ms_error *err);

/* Writes it through write(closure, ...) by the one image writer (msr_render_image_to). */
int msr_segments_chart_write_to(cairo_write_func_t write, void *closure, const char *name,
                               msr_render_format format, const msr_segments_figure *f,
                               const msr_image_meta *meta, ms_error *err);

/* The same to a PNG or SVG file chosen by the path's extension (a failed write leaves no
 * file). */
int msr_segments_chart_write(const char *path, const msr_segments_figure *f,
                            const msr_image_meta *meta, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
