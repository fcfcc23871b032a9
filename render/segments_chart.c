/* The allocator's state at chosen instants, drawn (segments_chart.h). */
#include "segments_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart_impl.h"
#include "render_util.h"

#define HEAD_H 50.0      /* a panel's title and totals */
#define LEFT 150.0       /* row labels */
#define RIGHT 20.0
#define ROW_H 18.0
#define ROW_GAP 6.0
#define PACK_H 14.0
#define PACK_GAP 5.0
#define PACK_SEP 4.0     /* pixels between packed segments */
#define PACK_ROWS_MAX 60 /* more packed rows than this: the overview */
#define LEGEND_H 44.0
#define OVER_BARS_H 240.0
#define OVER_SHARE_H 80.0
#define OVER_H (OVER_BARS_H + OVER_SHARE_H + 70.0)
#define PANEL_GAP 26.0
#define TOP 30.0         /* the image's heading */

static const msr_chart_rgb FG = {0.12, 0.12, 0.14};
static const msr_chart_rgb MUTED = {0.45, 0.45, 0.50};
static const msr_chart_rgb USED = {0.55, 0.62, 0.74};
static const msr_chart_rgb TICK = {0.84, 0.15, 0.16};

static double plot_width(double w)
{
    return w - LEFT - RIGHT;
}

static uint64_t largest_segment(const ms_heap *h)
{
    uint64_t m = 1;
    for (size_t k = 0; k < h->n_segments; k++)
        if (h->segments[k].total_size > m)
            m = h->segments[k].total_size;
    return m;
}

static size_t pack(const ms_heap *h, double plot_w, size_t *row_of, double *x_of)
{
    return msr__seg_pack(h, NULL, h->n_segments, plot_w / (double)largest_segment(h), plot_w,
                        PACK_SEP, row_of, x_of);
}

msr_segments_layout msr_segments_layout_of(const ms_heap *h, double plot_w)
{
    if (!h || h->n_segments <= MSR_SEGMENTS_ROWS_MAX)
        return MSR_SEGMENTS_ROWS;
    if (h->n_segments > MSR_SEGMENTS_PACK_MAX || pack(h, plot_w, NULL, NULL) > PACK_ROWS_MAX)
        return MSR_SEGMENTS_OVERVIEW;
    return MSR_SEGMENTS_PACKED;
}

static double panel_height(const msr_segments_panel *p, double w)
{
    const ms_heap *h = p->heap;
    double body;
    switch (msr_segments_layout_of(h, plot_width(w))) {
    case MSR_SEGMENTS_ROWS:
        body = (double)(h ? h->n_segments : 0) * (ROW_H + ROW_GAP) + 8;
        break;
    case MSR_SEGMENTS_PACKED:
        body = (double)pack(h, plot_width(w), NULL, NULL) * (PACK_H + PACK_GAP) + 22;
        break;
    default:
        body = OVER_H;
        break;
    }
    return HEAD_H + body + LEGEND_H;
}

int msr_segments_chart_height(const msr_segments_figure *f)
{
    double hgt = TOP;
    for (size_t i = 0; i < f->n_panels; i++)
        hgt += panel_height(&f->panels[i], MSR_SEGMENTS_CHART_WIDTH) + PANEL_GAP;
    return (int)ceil(hgt);
}

static void head(cairo_t *cr, const msr_segments_panel *p, double y)
{
    const ms_heap *h = p->heap;
    char line[512], a[32], b[32], c[32], d[32];
    msr__seg_text(cr, 12, y + 16, 14, FG, p->title ? p->title : "");
    ms_format_bytes((int64_t)h->reserved_bytes, a, sizeof a);
    ms_format_bytes((int64_t)h->allocated_bytes, b, sizeof b);
    ms_format_bytes((int64_t)h->inactive_bytes, c, sizeof c);
    ms_format_bytes((int64_t)h->largest_inactive, d, sizeof d);
    snprintf(line, sizeof line,
             "reserved %s in %zu segment%s; allocated %s; free inside reserved segments %s in "
             "%llu block%s, largest %s%s",
             a, h->n_segments, h->n_segments == 1 ? "" : "s", b, c,
             (unsigned long long)h->inactive_count, h->inactive_count == 1 ? "" : "s", d,
             h->approximate ? " (approximate)" : "");
    msr__seg_text(cr, 12, y + 34, 11, MUTED, line);
}

static void draw_rows(cairo_t *cr, const msr_seg_style *st, double y, double plot_w)
{
    const ms_heap *h = st->heap;
    double ppb = plot_w / (double)largest_segment(h);
    char line[128], a[32];
    for (size_t k = 0; k < h->n_segments; k++) {
        const ms_heap_segment *g = &h->segments[k];
        double yy = y + (double)k * (ROW_H + ROW_GAP);
        ms_format_bytes((int64_t)g->total_size, a, sizeof a);
        snprintf(line, sizeof line, "%s %s%s", a, g->is_small ? "small" : "large",
                 g->is_expandable ? " exp" : "");
        msr__seg_text(cr, LEFT - msr__seg_text_width(cr, 10, line) - 8, yy + 13, 10, MUTED, line);
        msr__seg_draw(cr, st, k, LEFT, yy, ppb, ROW_H);
    }
}

static int draw_packed(cairo_t *cr, const msr_seg_style *st, double y, double plot_w)
{
    const ms_heap *h = st->heap;
    size_t *row_of = malloc(h->n_segments * sizeof *row_of);
    double *x_of = malloc(h->n_segments * sizeof *x_of);
    if (!row_of || !x_of) {
        free(row_of);
        free(x_of);
        return MS_ERR_NOMEM;
    }
    size_t rows = pack(h, plot_w, row_of, x_of);
    double ppb = plot_w / (double)largest_segment(h);
    char line[96];
    snprintf(line, sizeof line, "%zu segments in address order, packed to one scale", h->n_segments);
    msr__seg_text(cr, LEFT, y + 10, 10, MUTED, line);
    y += 16;
    size_t prev_row = SIZE_MAX;
    for (size_t k = 0; k < h->n_segments; k++) {
        double yy = y + (double)row_of[k] * (PACK_H + PACK_GAP);
        if (row_of[k] != prev_row) {
            /* the row's first address, so a segment can be found again */
            snprintf(line, sizeof line, "0x%llx", (unsigned long long)h->segments[k].address);
            msr__seg_text(cr, LEFT - msr__seg_text_width(cr, 9, line) - 8, yy + 11, 9, MUTED, line);
            prev_row = row_of[k];
        }
        double w = (double)h->segments[k].total_size * ppb;
        /* a segment narrower than 2 px keeps 2 px, its blocks drawn to its own width */
        double k_ppb = w < 2.0 ? 2.0 / (double)h->segments[k].total_size : ppb;
        msr__seg_draw(cr, st, k, LEFT + x_of[k], yy, k_ppb, PACK_H);
    }
    (void)rows;
    free(row_of);
    free(x_of);
    return 0;
}

typedef struct over_seg {
    size_t index;
    uint64_t size, free, largest;
} over_seg;

static int by_size_desc(const void *a, const void *b)
{
    const over_seg *x = a, *y = b;
    int c = MSR__CMP(y->size, x->size);
    if (!c) /* then the most free first */
        c = MSR__CMP(y->free, x->free);
    return c ? c : MSR__CMP(x->index, y->index);
}

/* Every segment a column, largest first: its size as the bar, the free part hatched above
 * the used part, a red tick at the height of its largest free block; under it, the free
 * share. Columns narrower than a pixel share one: the pixel shows the largest of them. */
static int draw_overview(cairo_t *cr, const ms_heap *h, double y, double plot_w)
{
    size_t n = h->n_segments;
    over_seg *o = malloc((n ? n : 1) * sizeof *o);
    if (!o)
        return MS_ERR_NOMEM;
    for (size_t k = 0; k < n; k++) {
        o[k].index = k;
        o[k].size = h->segments[k].total_size;
        o[k].free = ms_heap_segment_free(&o[k].largest, NULL, h, k);
    }
    qsort(o, n, sizeof *o, by_size_desc);
    char line[160], a[32];
    snprintf(line, sizeof line,
             "%zu segments, largest first: bar = size (free part hatched), red tick = the "
             "largest free block; below, the free share",
             n);
    msr__seg_text(cr, LEFT, y + 10, 10, MUTED, line);
    y += 24;
    double top = (double)(n ? o[0].size : 1);
    /* y axis: 0, half, the largest */
    for (int t = 0; t <= 2; t++) {
        double v = top * t / 2.0;
        ms_format_bytes((int64_t)v, a, sizeof a);
        double py = y + OVER_BARS_H - OVER_BARS_H * t / 2.0;
        msr__seg_text(cr, LEFT - msr__seg_text_width(cr, 10, a) - 8, py + 4, 10, MUTED, a);
        cairo_set_source_rgb(cr, 0.9, 0.9, 0.92);
        cairo_set_line_width(cr, 1);
        cairo_move_to(cr, LEFT, floor(py) + 0.5);
        cairo_line_to(cr, LEFT + plot_w, floor(py) + 0.5);
        cairo_stroke(cr);
    }
    double col_w = n ? plot_w / (double)n : plot_w;
    double share_y = y + OVER_BARS_H + 26;
    double last_px = -1;
    for (size_t k = 0; k < n; k++) {
        double x0 = LEFT + (double)k * col_w, w = col_w > 3 ? col_w - 1 : fmax(col_w, 1.0);
        if (col_w < 1) {
            if (floor(x0) == last_px)
                continue; /* the pixel already shows a larger segment */
            last_px = x0 = floor(x0);
        }
        double hs = OVER_BARS_H * (double)o[k].size / top;
        double hf = OVER_BARS_H * (double)o[k].free / top;
        double base = y + OVER_BARS_H;
        cairo_set_source_rgb(cr, USED.r, USED.g, USED.b);
        cairo_rectangle(cr, x0, base - hs, w, hs - hf);
        cairo_fill(cr);
        if (hf > 0) {
            cairo_set_source_rgb(cr, 0.97, 0.97, 0.98);
            cairo_rectangle(cr, x0, base - hs, w, hf);
            cairo_fill(cr);
            if (w >= 3) {
                cairo_set_source_rgb(cr, 0.72, 0.72, 0.76);
                cairo_set_line_width(cr, 0.6);
                for (double s = base - hs; s < base - hs + hf; s += 4) {
                    cairo_move_to(cr, x0, s + fmin(w, 4));
                    cairo_line_to(cr, x0 + fmin(w, 4), s);
                }
                cairo_stroke(cr);
            }
        }
        if (o[k].largest) {
            double ty = base - OVER_BARS_H * (double)o[k].largest / top;
            cairo_set_source_rgb(cr, TICK.r, TICK.g, TICK.b);
            cairo_rectangle(cr, x0, ty - 1, w, 2);
            cairo_fill(cr);
        }
        double share = o[k].size ? (double)o[k].free / (double)o[k].size : 0;
        cairo_set_source_rgb(cr, 0.55, 0.55, 0.60);
        cairo_rectangle(cr, x0, share_y + OVER_SHARE_H * (1 - share), w, OVER_SHARE_H * share);
        cairo_fill(cr);
    }
    cairo_set_source_rgb(cr, FG.r, FG.g, FG.b);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, LEFT + 0.5, floor(share_y) + 0.5, plot_w - 1, OVER_SHARE_H);
    cairo_stroke(cr);
    msr__seg_text(cr, LEFT - 60, share_y + 10, 10, MUTED, "100% free");
    msr__seg_text(cr, LEFT - 28, share_y + OVER_SHARE_H, 10, MUTED, "0%");
    free(o);
    return 0;
}

/* The overview's own key: its colours are not the blocks'. */
static void overview_legend(cairo_t *cr, double x, double y)
{
    static const char *const NAMES[3] = {"used (allocated or pending free)",
                                         "free (hatched)", "largest free block (tick)"};
    for (int k = 0; k < 3; k++) {
        if (k == 0)
            cairo_set_source_rgb(cr, USED.r, USED.g, USED.b);
        else if (k == 1)
            cairo_set_source_rgb(cr, 0.97, 0.97, 0.98);
        else
            cairo_set_source_rgb(cr, TICK.r, TICK.g, TICK.b);
        if (k == 2)
            cairo_rectangle(cr, x, y + 5, 12, 2);
        else
            cairo_rectangle(cr, x, y, 12, 12);
        cairo_fill(cr);
        if (k < 2) {
            cairo_set_source_rgb(cr, FG.r, FG.g, FG.b);
            cairo_set_line_width(cr, 1);
            cairo_rectangle(cr, x + 0.5, y + 0.5, 11, 11);
            cairo_stroke(cr);
        }
        msr__seg_text(cr, x + 16, y + 10, 10, FG, NAMES[k]);
        x += 16 + msr__seg_text_width(cr, 10, NAMES[k]) + 14;
    }
}

int msr_segments_chart_draw(cairo_t *cr, double x, double y, double w, double h,
                           const msr_segments_figure *f, ms_error *err)
{
    if (!cr || !f || !(w > 0) || !(h > 0))
        return msr__render_fail(err, MS_ERR_ARG, "nothing to draw");
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
        return msr__render_fail(err, MS_ERR_ARG, "%s", cairo_status_to_string(cairo_status(cr)));
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rectangle(cr, 0, 0, w, h);
    cairo_clip(cr);
    if (f->title)
        msr__seg_text(cr, 12, 20, 15, FG, f->title);
    double yy = TOP;
    double plot_w = plot_width(w);
    int rc = 0;
    for (size_t i = 0; i < f->n_panels && !rc; i++) {
        const msr_segments_panel *p = &f->panels[i];
        if (!p->heap)
            continue;
        double ph = panel_height(p, w);
        head(cr, p, yy);
        double by = yy + HEAD_H;
        msr_seg_style st = {f->snap, p->heap, p->block_category, NULL, f->by};
        msr_segments_layout lay = msr_segments_layout_of(p->heap, plot_w);
        if (lay == MSR_SEGMENTS_ROWS)
            draw_rows(cr, &st, by, plot_w);
        else if (lay == MSR_SEGMENTS_PACKED)
            rc = draw_packed(cr, &st, by, plot_w);
        else
            rc = draw_overview(cr, p->heap, by, plot_w);
        if (lay == MSR_SEGMENTS_OVERVIEW)
            overview_legend(cr, LEFT, yy + ph - LEGEND_H + 6);
        else
            msr__seg_legend(cr, &st, LEFT, yy + ph - LEGEND_H + 6, plot_w);
        yy += ph + PANEL_GAP;
    }
    cairo_restore(cr);
    if (rc)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory drawing the segments");
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
        return msr__render_fail(err, MS_ERR_ARG, "%s", cairo_status_to_string(cairo_status(cr)));
    return 0;
}

static int paint(const void *ctx, cairo_t *cr, int width, int height, ms_error *err)
{
    return msr_segments_chart_draw(cr, 0, 0, width, height, ctx, err);
}

static int check_height(const msr_segments_figure *f, int *hgt, ms_error *err)
{
    *hgt = msr_segments_chart_height(f);
    if (*hgt > 32000)
        return msr__render_fail(err, MS_ERR_ARG,
                               "the picture would be %d pixels high: ask for fewer instants",
                               *hgt);
    return 0;
}

/* The picture's metadata (its title by default the figure's) and height, checked. */
static int prepare(const msr_segments_figure *f, const msr_image_meta *meta, msr_image_meta *m,
                   int *hgt, ms_error *err)
{
    *m = meta ? *meta : (msr_image_meta){0};
    if (!m->title)
        m->title = f->title ? f->title : "allocator segments";
    return check_height(f, hgt, err);
}

int msr_segments_chart_write_to(cairo_write_func_t write, void *closure, const char *name,
                               msr_render_format format, const msr_segments_figure *f,
                               const msr_image_meta *meta, ms_error *err)
{
    msr_image_meta m;
    int hgt;
    int rc = prepare(f, meta, &m, &hgt, err);
    if (rc)
        return rc;
    return msr_render_image_to(write, closure, name, format, MSR_SEGMENTS_CHART_WIDTH, hgt,
                              (msr_chart_rgb){1, 1, 1}, &m, paint, f, err);
}

int msr_segments_chart_write(const char *path, const msr_segments_figure *f,
                            const msr_image_meta *meta, ms_error *err)
{
    msr_render_format format;
    if (msr_render_format_from_path(path, &format, err))
        return msr__render_fail(err, MS_ERR_ARG, "%s: not a .png or .svg path", path ? path : "");
    msr_image_meta m;
    int hgt;
    int rc = prepare(f, meta, &m, &hgt, err);
    if (rc)
        return rc;
    return msr_render_image_file(path, format, MSR_SEGMENTS_CHART_WIDTH, hgt, (msr_chart_rgb){1, 1, 1},
                                &m, paint, f, err);
}
