/* The allocator's segments drawn to scale: what the OOM picture (oom_chart.c) and the
 * segments picture (segments_chart.c) share, so a block looks the same in both. A block
 * of an allocation takes its category's colour or its site's, as the timeline's bands do
 * (theme.c, group.c); a free block is white and hatched, with its size where it fits; a
 * pending free (freed, waiting for its streams: record_stream) is pink with a dashed
 * edge; blocks a leaking site made are outlined in red. Private to render/. */
#ifndef MEMSNAP_RENDER_SEG_DRAW_H
#define MEMSNAP_RENDER_SEG_DRAW_H

#include <cairo.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chart.h"
#include "memsnap/allocator.h"

typedef enum msr_seg_by {
    MSR_SEG_BY_CATEGORY = 0, /* the category's colour (block_category) */
    MSR_SEG_BY_SITE          /* the site's colour, from the block's stack */
} msr_seg_by;

typedef struct msr_seg_style {
    const ms_snapshot *snap;       /* site colours and names; may be NULL */
    const ms_heap *heap;
    const uint8_t *block_category; /* per block: its ms_category, MS_CAT_COUNT when
                                    * unknown; NULL: no categories */
    const bool *block_leak;        /* per block: made by a leaking site; NULL: none */
    msr_seg_by by;
} msr_seg_style;

#define MSR_SEG_FONT "DejaVu Sans"

/* Text at (x, y) (baseline), and its width. */
void msr__seg_text(cairo_t *cr, double x, double y, double size, msr_chart_rgb c, const char *s);
double msr__seg_text_width(cairo_t *cr, double size, const char *s);

/* The colour of allocated bytes where no category says more (the OOM picture's active
 * memory under its bars). */
msr_chart_rgb msr__seg_allocated_rgb(void);
/* The fill of an allocated block. */
msr_chart_rgb msr__seg_block_rgb(const msr_seg_style *st, size_t block);

/* Segment `seg` of the state at (x, y), px_per_byte wide per byte and row_h high: its
 * blocks, free ones hatched, its outline. */
void msr__seg_draw(cairo_t *cr, const msr_seg_style *st, size_t seg, double x, double y,
                  double px_per_byte, double row_h);

/* The segments to draw when at most `max` fit: all of them, else those with the most
 * free memory (where a request could go), then the largest; in address order. idx gets
 * the indices (room for min(n_segments, max)); returns how many. */
size_t msr__seg_pick(const ms_heap *h, size_t *idx, size_t max);

/* Segments idx[0..n) (NULL: 0..n-1) of h, in that order, packed left to right at
 * px_per_byte into rows plot_w wide, `sep` pixels apart, a new row when the next does not
 * fit; each at least 2 pixels wide. Returns the rows; row_of and x_of (may be NULL) get
 * each one's row and x within the row. */
size_t msr__seg_pack(const ms_heap *h, const size_t *idx, size_t n, double px_per_byte,
                    double plot_w, double sep, size_t *row_of, double *x_of);

/* The legend of the blocks' colours at (x, y), wrapping within width w: the categories
 * (or the sites holding the most bytes, by site), pending free, free, and "made by a
 * leaking site" when blocks are so marked. Returns the height it took. */
double msr__seg_legend(cairo_t *cr, const msr_seg_style *st, double x, double y, double w);

#endif
