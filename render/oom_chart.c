#include "oom_chart.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "chart_impl.h"
#include "draw.h"
#include "render_util.h"
#include "seg_draw.h"

#define MAX_ROWS 48      /* segments drawn; the rest are summed up in one line */
#define ROW_H 18.0
#define ROW_GAP 6.0
#define TOP 64.0         /* title and request bar */
#define LEGEND_H 46.0 /* two lines of legend */
#define CURVE_H 220.0
#define LEFT 150.0
#define RIGHT 20.0

typedef msr_chart_rgb rgb;

/* The charts' light theme (theme.c): text, muted text, grid, the OOM's red and the
 * reserved line as the timeline draws them; the active memory in the segments'
 * "allocated" colour, as the bars above it. */
#define THEME msr__theme(false)
#define FG THEME.fg
#define MUTED THEME.muted
#define FAIL THEME.oom

static void set(cairo_t *cr, rgb c)
{
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

#define text msr__seg_text
#define text_width msr__seg_text_width

static size_t rows_shown(const ms_oom *o)
{
    size_t n = o->heap ? o->heap->n_segments : 0;
    return n < MAX_ROWS ? n : MAX_ROWS;
}

int msr_oom_chart_height(const ms_oom *o)
{
    size_t rows = rows_shown(o);
    return (int)(TOP + (double)rows * (ROW_H + ROW_GAP) + 24 + LEGEND_H + CURVE_H + 40);
}

static void draw_curve(cairo_t *cr, double x0, double y0, double w, double h, const ms_oom *o)
{
    char buf[64];
    if (o->n_window == 0)
        return;
    int64_t top = 1;
    for (size_t i = 0; i < o->n_window; i++) {
        if (o->window_reserved[i] > top)
            top = o->window_reserved[i];
        if (o->window_active[i] > top)
            top = o->window_active[i];
    }
    double t0 = (double)o->window_time_us[0], t1 = (double)o->window_time_us[o->n_window - 1];
    double span = t1 > t0 ? t1 - t0 : 1;
    /* The charts' byte axis (msr__byte_axis): "0, 250 MiB, 500 MiB", not quarters of
     * the peak. */
    msr_chart_tick ticks[MSR_CHART_MAX_TICKS];
    size_t n_ticks = 0;
    double ymax = msr__byte_axis((double)top, 4, ticks, &n_ticks);
    cairo_set_line_width(cr, 1);
    set(cr, THEME.grid);
    cairo_rectangle(cr, x0, y0, w, h);
    cairo_stroke(cr);
    for (size_t k = 0; k < n_ticks; k++) {
        double gy = y0 + h - h * ticks[k].value / ymax;
        text(cr, x0 - text_width(cr, 10, ticks[k].label) - 6, gy + 4, 10, MUTED, ticks[k].label);
    }
    /* Reserved as a line, active as a filled area, both as steps: the allocator's state
     * holds from one event to the next, it does not ramp between them. */
    for (int pass = 0; pass < 2; pass++) {
        const int64_t *v = pass == 0 ? o->window_active : o->window_reserved;
        cairo_new_path(cr);
        double prev_py = 0;
        for (size_t i = 0; i < o->n_window; i++) {
            /* by event, not time: a step's allocations come in bursts that time squeezes */
            double px = x0 + w * (o->n_window > 1 ? (double)i / (double)(o->n_window - 1) : 1.0);
            double py = y0 + h - h * (double)v[i] / ymax;
            if (i == 0) {
                cairo_move_to(cr, px, py);
            } else {
                cairo_line_to(cr, px, prev_py);
                cairo_line_to(cr, px, py);
            }
            prev_py = py;
        }
        if (pass == 0) {
            cairo_line_to(cr, x0 + w, y0 + h);
            cairo_line_to(cr, x0, y0 + h);
            cairo_close_path(cr);
            rgb fill = msr__seg_allocated_rgb();
            cairo_set_source_rgba(cr, fill.r, fill.g, fill.b, 0.45);
            cairo_fill(cr);
        } else {
            set(cr, THEME.reserved);
            cairo_set_line_width(cr, 1.5);
            cairo_stroke(cr);
        }
    }
    set(cr, FAIL);
    cairo_set_line_width(cr, 2);
    cairo_move_to(cr, x0 + w, y0);
    cairo_line_to(cr, x0 + w, y0 + h);
    cairo_stroke(cr);
    snprintf(buf, sizeof buf, "%lld events (%.3f s) before the OOM, evenly spaced by event",
             (long long)(o->event - o->window_first), span / 1e6);
    text(cr, x0, y0 + h + 16, 10, MUTED, buf);
    text(cr, x0 + w - 34, y0 + h + 16, 10, FAIL, "OOM");
    /* The window starts three complete iterations before the failure when four or more
     * are known (the library's fill_window), else at the start of the trace. */
    size_t done = o->n_iters;
    if (done && o->iters[done - 1].unfinished)
        done--;
    text(cr, x0, y0 - 8, 12, FG,
         done >= 4 && o->window_first > 0
             ? "active memory (filled) and reserved memory (line) over the last 3 iterations"
             : "active memory (filled) and reserved memory (line) from the start of the trace");
}

int msr_oom_chart_draw(cairo_t *cr, double x, double y, double w, double h,
                      const ms_snapshot *s, const ms_oom *o, const char *title, ms_error *err)
{
    if (!cr || !o || !(w > 0) || !(h > 0))
        return msr__render_fail(err, MS_ERR_ARG, "nothing to draw");
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
        return msr__render_fail(err, MS_ERR_ARG, "%s", cairo_status_to_string(cairo_status(cr)));
    const ms_heap *hp = o->heap;
    size_t idx[MAX_ROWS];
    size_t n_rows = 0;
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rectangle(cr, 0, 0, w, h);
    cairo_clip(cr);
    char line[512], a[32], b[32], c[32];
    ms_format_bytes((int64_t)o->request_block_bytes, a, sizeof a);
    ms_format_bytes((int64_t)o->free_in_reserved_bytes, b, sizeof b);
    ms_format_bytes((int64_t)o->largest_free_block_bytes, c, sizeof c);
    snprintf(line, sizeof line, "%s%sOOM at event %lld: cause %s%s", title ? title : "",
             title ? " - " : "", (long long)o->event, ms_oom_cause_name(o->cause),
             o->approximate ? " (approximate)" : "");
    text(cr, 12, 20, 15, FG, line);
    snprintf(line, sizeof line,
             "request %s; free inside reserved segments %s in %llu blocks, largest %s", a, b,
             (unsigned long long)o->free_blocks, c);
    text(cr, 12, 38, 11, MUTED, line);

    double plot_w = w - LEFT - RIGHT;
    uint64_t scale_max = o->request_block_bytes;
    if (hp) {
        n_rows = msr__seg_pick(hp, idx, MAX_ROWS);
        for (size_t k = 0; k < n_rows; k++)
            if (hp->segments[idx[k]].total_size > scale_max)
                scale_max = hp->segments[idx[k]].total_size;
    }
    double px_per_byte = scale_max ? plot_w / (double)scale_max : 0;
    /* the failed request, to the same scale */
    double ry = TOP - 14;
    double rw = (double)o->request_block_bytes * px_per_byte;
    set(cr, FAIL);
    cairo_rectangle(cr, LEFT, ry, rw > 1 ? rw : 1, ROW_H - 6);
    cairo_fill(cr);
    text(cr, 12, ry + 10, 11, FAIL, "failed request");
    cairo_set_line_width(cr, 1);
    double ytop = TOP + 10;
    msr_seg_style st = {s, hp, o->block_category, o->block_leak, MSR_SEG_BY_CATEGORY};
    for (size_t k = 0; k < n_rows; k++) {
        const ms_heap_segment *g = &hp->segments[idx[k]];
        double yy = ytop + (double)k * (ROW_H + ROW_GAP);
        ms_format_bytes((int64_t)g->total_size, a, sizeof a);
        snprintf(line, sizeof line, "%s %s%s", a, g->is_small ? "small" : "large",
                 g->is_expandable ? " exp" : "");
        text(cr, LEFT - text_width(cr, 10, line) - 8, yy + 13, 10, MUTED, line);
        msr__seg_draw(cr, &st, idx[k], LEFT, yy, px_per_byte, ROW_H);
    }
    double yy = ytop + (double)n_rows * (ROW_H + ROW_GAP);
    if (hp && hp->n_segments > n_rows) {
        snprintf(line, sizeof line, "%zu more segments not drawn", hp->n_segments - n_rows);
        text(cr, LEFT, yy + 10, 10, MUTED, line);
    }
    yy += 20;
    msr__seg_legend(cr, &st, LEFT, yy, plot_w);
    yy += LEGEND_H + 14;
    draw_curve(cr, LEFT, yy, plot_w, CURVE_H - 30, o);
    cairo_restore(cr);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
        return msr__render_fail(err, MS_ERR_ARG, "%s", cairo_status_to_string(cairo_status(cr)));
    return 0;
}

typedef struct oom_job {
    const ms_snapshot *s;
    const ms_oom *o;
    const char *title;
} oom_job;

static int paint_oom(const void *ctx, cairo_t *cr, int width, int height, ms_error *err)
{
    const oom_job *job = ctx;
    return msr_oom_chart_draw(cr, 0, 0, width, height, job->s, job->o, job->title, err);
}

/* The picture's texts: the caller's, else the title and the failed request (in req). */
static msr_image_meta oom_meta(const ms_oom *o, const char *title, const msr_image_meta *meta,
                              char *req, size_t cap)
{
    msr_image_meta m = meta ? *meta : (msr_image_meta){0};
    snprintf(req, cap, "OOM: request of %lld bytes", (long long)o->request_bytes);
    if (!m.title)
        m.title = title ? title : req;
    if (!m.peak)
        m.peak = req;
    return m;
}

int msr_oom_chart_write_to(cairo_write_func_t write, void *closure, const char *name,
                          msr_render_format format, const ms_snapshot *s, const ms_oom *o,
                          const char *title, const msr_image_meta *meta, ms_error *err)
{
    char req[96];
    msr_image_meta m = oom_meta(o, title, meta, req, sizeof req);
    oom_job job = {s, o, title};
    return msr_render_image_to(write, closure, name, format, MSR_OOM_CHART_WIDTH,
                              msr_oom_chart_height(o), (msr_chart_rgb){1, 1, 1}, &m, paint_oom,
                              &job, err);
}

int msr_oom_chart_write(const char *path, const ms_snapshot *s, const ms_oom *o,
                       const char *title, ms_error *err)
{
    msr_render_format format;
    if (msr_render_format_from_path(path, &format, err))
        return msr__render_fail(err, MS_ERR_ARG, "%s: not a .png or .svg path", path ? path : "");
    char req[96];
    msr_image_meta m = oom_meta(o, title, NULL, req, sizeof req);
    oom_job job = {s, o, title};
    return msr_render_image_file(path, format, MSR_OOM_CHART_WIDTH, msr_oom_chart_height(o),
                                (msr_chart_rgb){1, 1, 1}, &m, paint_oom, &job, err);
}
