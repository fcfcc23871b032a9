/* Cairo drawing of a chart (see draw.h). Every coordinate, number and text comes from the
 * chart model (chart.h); this file decides only looks. No printing here. */
#include "draw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pen.h"
#include "render_util.h"

/* ------------------------------------------------------------------ bands */

static double y_at(const msr_chart *chart, int64_t bytes)
{
    return quant(msr_chart_py(chart, (double)bytes));
}

/* One closed step polygon per run of columns where the band has bytes: its top edge left
 * to right, its bottom edge back (at `drawn` rather than `bottom` where given). Vertices
 * only where a height changes, so a band that keeps its place for a thousand columns
 * costs four points. */
static void band_path(pen *p, const int64_t *bottom, const int64_t *height,
                      const int64_t *drawn, size_t c0, size_t c1)
{
    const msr_chart *ch = p->chart;
    double x0 = ch->plot.x;
    const int64_t *low = drawn ? drawn : bottom;
    double prev = y_at(ch, bottom[c0] + height[c0]);
    move_to(p, x0 + (double)c0, prev);
    for (size_t c = c0 + 1; c <= c1; c++) {
        double y = y_at(ch, bottom[c] + height[c]);
        if (y != prev) {
            line_to(p, x0 + (double)c, prev);
            line_to(p, x0 + (double)c, y);
            prev = y;
        }
    }
    line_to(p, x0 + (double)c1 + 1, prev);
    prev = y_at(ch, low[c1]);
    line_to(p, x0 + (double)c1 + 1, prev);
    for (size_t c = c1; c-- > c0;) {
        double y = y_at(ch, low[c]);
        if (y != prev) {
            line_to(p, x0 + (double)c + 1, prev);
            line_to(p, x0 + (double)c + 1, y);
            prev = y;
        }
    }
    line_to(p, x0 + (double)c0, prev);
    cairo_close_path(p->cr);
}

/* Adds every visible run of a band to the current path; returns the number of runs.
 * With `drawn` (the top of the bands drawn so far, per column) a run reaches down to it
 * and raises it: a band left out below as too thin then leaves no hairline gap for pixel
 * centres to fall into, the band above covers its fraction of a pixel. */
static size_t band_runs(pen *p, const int64_t *bottom, const int64_t *height, int64_t *drawn)
{
    const msr_chart *ch = p->chart;
    size_t runs = 0;
    for (size_t c = 0; c < ch->n_cols;) {
        if (height[c] <= 0 || ch->col_event[c] == MSR_CHART_NO_EVENT) {
            c++;
            continue;
        }
        size_t c1 = c;
        double tallest = 0;
        while (c1 + 1 < ch->n_cols && height[c1 + 1] > 0 &&
               ch->col_event[c1 + 1] != MSR_CHART_NO_EVENT)
            c1++;
        for (size_t k = c; k <= c1; k++) {
            double h = (double)height[k] / ch->y_max * ch->plot.h;
            if (h > tallest)
                tallest = h;
        }
        /* Thinner than a fifth of a pixel everywhere: invisible, and skipping it keeps
         * SVGs of traces with thousands of bands small. */
        if (tallest >= 0.2) {
            band_path(p, bottom, height, drawn, c, c1);
            for (size_t k = c; drawn && k <= c1; k++)
                drawn[k] = bottom[k] + height[k];
            runs++;
        }
        c = c1 + 1;
    }
    return runs;
}

static void draw_bands(pen *p, int64_t *acc, int64_t *drawn)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    size_t W = ch->n_cols;
    memset(acc, 0, W * sizeof *acc);
    memset(drawn, 0, W * sizeof *drawn);
    cairo_save(cr);
    /* Neighbouring bands share exact edges; without antialiasing they tile the area with
     * no hairline seams in raster output. */
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
    cairo_set_fill_rule(cr, CAIRO_FILL_RULE_WINDING);
    for (size_t g = 0; g < ch->n_groups; g++) {
        const int64_t *h = ch->heights + g * W;
        cairo_new_path(cr);
        if (band_runs(p, acc, h, drawn)) {
            rgb(p, ch->groups[g].fill);
            cairo_fill(cr);
        }
        for (size_t c = 0; c < W; c++)
            acc[c] += h[c];
    }
    cairo_new_path(cr);
    if (band_runs(p, acc, ch->col_other, drawn)) {
        rgb(p, ch->theme.other);
        cairo_fill(cr);
    }
    cairo_restore(cr);
}

/* The outline of a per-column curve as steps; columns with no data break the line. */
static void curve_path(pen *p, const int64_t *value, const int64_t *event)
{
    const msr_chart *ch = p->chart;
    bool open = false;
    double prev = 0;
    for (size_t c = 0; c < ch->n_cols; c++) {
        bool has = event ? event[c] != MSR_CHART_NO_EVENT : value[c] >= 0;
        if (!has) {
            if (open)
                line_to(p, ch->plot.x + (double)c, prev);
            open = false;
            continue;
        }
        double y = y_at(ch, value[c]);
        if (!open) {
            move_to(p, ch->plot.x + (double)c, y);
            open = true;
        } else if (y != prev) {
            line_to(p, ch->plot.x + (double)c, prev);
            line_to(p, ch->plot.x + (double)c, y);
        }
        prev = y;
    }
    if (open)
        line_to(p, ch->plot.x + (double)ch->n_cols, prev);
}

/* A label the model placed (chart.h: msr_chart_label): a leader with an arrow to the point
 * it names when it has one, then the text in its box, over a halo in the background
 * colour so it stays readable over bands. */
static void draw_label(pen *p, const msr_chart_label *L)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    cairo_save(cr);
    font(p, L->font_px, true);
    if (L->leader) {
        rgb(p, L->rgb);
        cairo_set_line_width(cr, 1.5);
        move_to(p, L->lx, L->ly);
        line_to(p, L->ax, L->ay);
        cairo_stroke(cr);
        double ang = atan2(L->ay - L->ly, L->ax - L->lx);
        move_to(p, L->ax, L->ay);
        line_to(p, L->ax - 9 * cos(ang - 0.4), L->ay - 9 * sin(ang - 0.4));
        line_to(p, L->ax - 9 * cos(ang + 0.4), L->ay - 9 * sin(ang + 0.4));
        cairo_close_path(cr);
        cairo_fill(cr);
    }
    char text[MSR_CHART_TEXT + 32];
    fit_text(p, L->text, L->box.w - 6, text, sizeof text); /* never past its box */
    double tx = L->box.x + 3, ty = L->box.y + L->box.h - 4;
    cairo_save(cr);
    move_to(p, tx, ty);
    if (!p->bad)
        cairo_text_path(cr, text);
    rgb(p, ch->theme.bg);
    cairo_set_line_width(cr, 3.0);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_stroke(cr);
    cairo_restore(cr);
    rgb(p, L->rgb);
    text_at(p, tx, ty, 0, text);
    cairo_restore(cr);
}

static void draw_highlights(pen *p, int64_t *acc)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    size_t W = ch->n_cols;
    memset(acc, 0, W * sizeof *acc);
    cairo_save(cr);
    for (size_t g = 0; g < ch->n_groups; g++) {
        const int64_t *h = ch->heights + g * W;
        if (ch->groups[g].highlight) {
            /* Only leak findings in red; a suspect is not a leak: a grey dashed outline. */
            static const double DASH[] = {4.0, 3.0};
            cairo_new_path(cr);
            band_runs(p, acc, h, NULL);
            rgb(p, ch->groups[g].suspect ? ch->theme.outline : ch->theme.highlight);
            cairo_set_line_width(cr, ch->groups[g].suspect ? 1.5 : 2.0);
            if (ch->groups[g].suspect)
                cairo_set_dash(cr, DASH, 2, 0);
            cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
        }
        for (size_t c = 0; c < W; c++)
            acc[c] += h[c];
    }
    cairo_restore(cr);
}

/* ------------------------------------------------------------------ decorations */

static void draw_title(pen *p)
{
    const msr_chart *ch = p->chart;
    font(p, 15, true);
    rgb(p, ch->theme.fg);
    char t[512];
    fit_text(p, ch->title, ch->title_rect.w, t, sizeof t);
    text_at(p, ch->title_rect.x, ch->title_rect.y + 17, 0, t);
}

static void draw_lanes(pen *p)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    cairo_save(cr);
    rect(p, ch->plot.x, ch->area.y, ch->plot.w, ch->area.h);
    cairo_clip(cr);
    /* Top-level ranges tint the plot lightly so phases read across the whole height. */
    if (ch->n_lanes > 0) {
        for (size_t i = 0; i < ch->n_lane_runs[0]; i++) {
            const msr_chart_lane_run *r = &ch->lane_runs[0][i];
            rgba(p, ch->name_rgb[r->name], 0.07);
            rect(p, r->x0, ch->plot.y, r->x1 - r->x0, ch->plot.h);
            cairo_fill(cr);
        }
    }
    font(p, 10, false);
    for (size_t lane = 0; lane < ch->n_lanes; lane++) {
        const msr_chart_rect *lr = &ch->lane_rect[lane];
        for (size_t i = 0; i < ch->n_lane_runs[lane]; i++) {
            const msr_chart_lane_run *r = &ch->lane_runs[lane][i];
            rgba(p, ch->name_rgb[r->name], 0.55);
            rect(p, r->x0, lr->y, r->x1 - r->x0, lr->h);
            cairo_fill(cr);
            /* Label what fits; a cut name still tells forward from backward. */
            if (r->x1 - r->x0 >= 48) {
                char name[MSR_CHART_TEXT];
                fit_text(p, ch->names[r->name], r->x1 - r->x0 - 6, name, sizeof name);
                rgb(p, ch->theme.fg);
                text_at(p, (r->x0 + r->x1) / 2, lr->y + lr->h - 3.5, 0.5, name);
            }
        }
    }
    cairo_restore(cr);
}

static void draw_grid_and_axes(pen *p)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    cairo_save(cr);
    cairo_set_line_width(cr, 1.0);
    rgb(p, ch->theme.grid);
    for (size_t i = 0; i < ch->n_yticks; i++) {
        double y = crisp(ch->yticks[i].px);
        move_to(p, ch->plot.x, y);
        line_to(p, ch->plot.x + ch->plot.w, y);
    }
    for (size_t i = 0; i < ch->n_xticks; i++) {
        double x = crisp(ch->xticks[i].px);
        move_to(p, x, ch->plot.y);
        line_to(p, x, ch->plot.y + ch->plot.h);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

/* The run axis's breaks over the plot: a pale wash with light hatching, so what they
 * squeeze still shows through and nobody reads them as time at the axis's scale. */
static void draw_breaks_in(pen *p, double top, double h)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    for (size_t i = 0; i < ch->n_segments; i++) {
        const msr_chart_segment *sg = &ch->segments[i];
        if (!sg->gap)
            continue;
        double x0 = sg->px0, w = sg->px1 - sg->px0;
        cairo_save(cr);
        rect(p, x0, top, w, h);
        cairo_clip(cr);
        rgba(p, ch->theme.bg, 0.55);
        cairo_paint(cr);
        rgba(p, ch->theme.muted, 0.55);
        cairo_set_line_width(cr, 1.0);
        for (double y = top - w; y < top + h + w; y += 7) {
            move_to(p, x0, y + w);
            line_to(p, x0 + w, y);
        }
        cairo_stroke(cr);
        cairo_restore(cr);
    }
}

static void draw_breaks(pen *p)
{
    draw_breaks_in(p, p->chart->plot.y, p->chart->plot.h);
}

/* The x axis line, cut at each break by a pair of slanted ticks, and the breaks' labels
 * (how long each lasted) where tick labels go. */
static void draw_x_axis(pen *p, double bottom)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    for (size_t i = 0; i < ch->n_segments; i++) {
        const msr_chart_segment *sg = &ch->segments[i];
        if (!sg->gap) {
            move_to(p, sg->px0, bottom);
            line_to(p, sg->px1, bottom);
            continue;
        }
        for (int k = 0; k < 2; k++) {
            double x = k ? sg->px1 : sg->px0;
            move_to(p, x - 3, bottom + 5);
            line_to(p, x + 3, bottom - 5);
        }
    }
    cairo_stroke(cr);
    for (size_t i = 0; i < ch->n_segments; i++)
        if (ch->segments[i].gap && ch->segments[i].label[0])
            text_at(p, ch->segments[i].label_x, ch->plot.y + ch->plot.h + 16, 0.5,
                    ch->segments[i].label);
}

static void draw_axis_labels(pen *p)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    cairo_save(cr);
    rgb(p, ch->theme.muted);
    cairo_set_line_width(cr, 1.0);
    double bottom = crisp(ch->plot.y + ch->plot.h);
    if (ch->x_mode == MSR_CHART_X_RUN) {
        font(p, 11, false);
        draw_x_axis(p, bottom);
    } else {
        move_to(p, ch->plot.x, bottom);
        line_to(p, ch->plot.x + ch->plot.w, bottom);
    }
    move_to(p, crisp(ch->plot.x) - 1, ch->plot.y);
    line_to(p, crisp(ch->plot.x) - 1, ch->plot.y + ch->plot.h);
    cairo_stroke(cr);
    font(p, 11, false);
    rgb(p, ch->theme.fg);
    for (size_t i = 0; i < ch->n_yticks; i++)
        text_at(p, ch->plot.x - 7, ch->yticks[i].px + 4, 1, ch->yticks[i].label);
    for (size_t i = 0; i < ch->n_xticks; i++) {
        double align = i == 0 && ch->xticks[i].px < ch->plot.x + 20 ? 0.0 : 0.5;
        text_at(p, ch->xticks[i].px, ch->plot.y + ch->plot.h + 16, align, ch->xticks[i].label);
    }
    rgb(p, ch->theme.muted);
    text_at(p, ch->plot.x + ch->plot.w / 2, ch->plot.y + ch->plot.h + 34, 0.5, ch->x_title);
    cairo_save(cr);
    cairo_translate(cr, ch->area.x + 14, ch->plot.y + ch->plot.h / 2);
    cairo_rotate(cr, -M_PI / 2);
    text_at(p, 0, 0, 0.5, ch->y_title);
    cairo_restore(cr);
    cairo_restore(cr);
}

static void draw_ooms(pen *p)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    if (ch->n_oom_px == 0)
        return;
    cairo_save(cr);
    rgb(p, ch->theme.oom);
    cairo_set_line_width(cr, 1.5);
    static const double DASH[] = {4.0, 3.0};
    cairo_set_dash(cr, DASH, 2, 0);
    for (size_t i = 0; !ch->oom_rug && i < ch->n_oom_px; i++) {
        move_to(p, ch->oom_px[i], ch->plot.y);
        line_to(p, ch->oom_px[i], ch->plot.y + ch->plot.h);
    }
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    for (size_t i = 0; i < ch->n_oom_px; i++) {
        double x = ch->oom_px[i];
        move_to(p, x - 6, ch->plot.y);
        line_to(p, x + 6, ch->plot.y);
        line_to(p, x, ch->plot.y + MSR_CHART_OOM_MARK_H);
        cairo_close_path(cr);
    }
    cairo_fill(cr);
    cairo_restore(cr);
}

static void draw_peak(pen *p)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    if (!ch->has_peak)
        return;
    cairo_save(cr);
    double x = ch->peak_px, y = ch->peak_py;
    rgb(p, ch->theme.peak);
    cairo_set_line_width(cr, 1.0);
    static const double DASH[] = {2.0, 3.0};
    cairo_set_dash(cr, DASH, 2, 0);
    move_to(p, ch->plot.x, crisp(y));
    line_to(p, ch->plot.x + ch->plot.w, crisp(y));
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    if (ok2(p, x, y)) {
        cairo_new_path(cr);
        cairo_arc(cr, x, y, 4.5, 0, 2 * M_PI);
        cairo_fill(cr);
    }
    cairo_restore(cr);
}

static void draw_legend(pen *p)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    const msr_chart_rect *lr = &ch->legend_rect;
    if (lr->w <= 0 || ch->n_legend == 0)
        return;
    cairo_save(cr);
    font(p, 11, true);
    rgb(p, ch->theme.fg);
    text_at(p, lr->x, lr->y + 11, 0, ch->legend_title);
    font(p, 11, false);
    size_t rows = (size_t)fmax(0, floor((lr->h - 22) / ch->legend_row));
    for (size_t i = 0; i < ch->n_legend && i < rows; i++) {
        const msr_chart_legend_entry *e = &ch->legend[i];
        double y = lr->y + 22 + (double)i * ch->legend_row;
        rgb(p, e->rgb);
        switch (e->key) {
        case MSR_CHART_KEY_SWATCH:
            rect(p, lr->x, y + 2, 12, 11);
            cairo_fill(cr);
            break;
        case MSR_CHART_KEY_LINE:
        case MSR_CHART_KEY_DASH: {
            static const double DASH[] = {4.0, 2.5};
            cairo_set_line_width(cr, 2.0);
            if (e->key == MSR_CHART_KEY_DASH)
                cairo_set_dash(cr, DASH, 2, 0);
            move_to(p, lr->x, y + 7.5);
            line_to(p, lr->x + 12, y + 7.5);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
            break;
        }
        case MSR_CHART_KEY_DOT:
            if (ok2(p, lr->x, y)) {
                cairo_new_path(cr);
                cairo_arc(cr, lr->x + 6, y + 7.5, 4, 0, 2 * M_PI);
                cairo_fill(cr);
            }
            break;
        }
        rgb(p, ch->theme.fg);
        char text[MSR_CHART_TEXT];
        fit_text(p, e->text, lr->w - 18, text, sizeof text);
        text_at(p, lr->x + 18, y + 12, 0, text);
    }
    cairo_restore(cr);
}

/* ------------------------------------------------------------------ panel */

static void draw_stacked(pen *p, int64_t *acc, int64_t *drawn)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    draw_bands(p, acc, drawn);
    cairo_save(cr);
    /* The outline makes the active curve readable where bands are pale. */
    cairo_new_path(cr);
    curve_path(p, ch->col_active, ch->col_event);
    rgba(p, ch->theme.outline, 0.75);
    cairo_set_line_width(cr, 0.9);
    cairo_stroke(cr);
    if (ch->show_low && ch->col_low) {
        /* Above the column minimum the bands exist only at the hilltops: paled, so the
         * always-present part below reads as solid. */
        for (size_t c = 0; c < ch->n_cols; c++)
            acc[c] = ch->col_active[c] - ch->col_low[c];
        cairo_new_path(cr);
        if (band_runs(p, ch->col_low, acc, NULL)) {
            rgba(p, ch->theme.bg, 0.5);
            cairo_fill(cr);
        }
        static const double DASH[] = {3.0, 2.0};
        curve_path(p, ch->col_low, ch->col_event);
        rgba(p, ch->theme.outline, 0.9);
        cairo_set_line_width(cr, 1.0);
        cairo_set_dash(cr, DASH, 2, 0);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
    }
    if (ch->col_reserved) {
        curve_path(p, ch->col_reserved, ch->col_event);
        rgba(p, ch->theme.reserved, 0.85);
        cairo_set_line_width(cr, 1.4);
        cairo_stroke(cr);
    }
    cairo_restore(cr);
    draw_highlights(p, acc);
}

static void draw_overlay(pen *p)
{
    const msr_chart *ch = p->chart;
    cairo_t *cr = p->cr;
    cairo_save(cr);
    static const double DASH[] = {5.0, 3.0};
    for (size_t i = 0; i < ch->n_series; i++) {
        const msr_chart_series *s = &ch->series[i];
        cairo_new_path(cr);
        curve_path(p, s->reserved, NULL);
        rgba(p, s->rgb, 0.7);
        cairo_set_line_width(cr, 1.0);
        cairo_set_dash(cr, DASH, 2, 0);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        curve_path(p, s->active, NULL);
        rgb(p, s->rgb);
        cairo_set_line_width(cr, 1.8);
        cairo_stroke(cr);
    }
    cairo_restore(cr);
}

/* The fragmentation panel: free memory inside reserved segments as a filled area, the
 * largest free block as a line over it (both on the bytes axis, left), the free-block
 * count dashed on its own axis (right); a column with nothing to show is left blank. */
static const msr_chart_rgb FRAG_FREE = {0.55, 0.66, 0.80};
static const msr_chart_rgb FRAG_LARGEST = {0.10, 0.30, 0.55};
static const msr_chart_rgb FRAG_COUNT = {0.45, 0.30, 0.60};

static void frag_line(pen *p, const int64_t *v, double top)
{
    const msr_chart *ch = p->chart;
    const msr_chart_rect *r = &ch->frag_rect;
    bool open = false;
    for (size_t c = 0; c < ch->n_cols; c++) {
        if (v[c] < 0) {
            open = false;
            continue;
        }
        double y = r->y + r->h * (1 - (double)v[c] / top);
        if (!open) {
            move_to(p, r->x + (double)c, y);
            open = true;
        }
        line_to(p, r->x + (double)c + 1, y);
    }
}

static void draw_frag(pen *p)
{
    const msr_chart *ch = p->chart;
    if (!ch->has_frag || !(ch->frag_ymax > 0) || !(ch->frag_cmax > 0))
        return;
    cairo_t *cr = p->cr;
    const msr_chart_rect *r = &ch->frag_rect;
    cairo_save(cr);
    cairo_set_line_width(cr, 1.0);
    rgb(p, ch->theme.grid);
    for (size_t i = 0; i < ch->n_frag_yticks; i++) {
        move_to(p, r->x, crisp(ch->frag_yticks[i].px));
        line_to(p, r->x + r->w, crisp(ch->frag_yticks[i].px));
    }
    for (size_t i = 0; i < ch->n_xticks; i++) {
        move_to(p, crisp(ch->xticks[i].px), r->y);
        line_to(p, crisp(ch->xticks[i].px), r->y + r->h);
    }
    cairo_stroke(cr);
    cairo_save(cr);
    rect(p, r->x, r->y - 1, r->w, r->h + 1);
    cairo_clip(cr);
    /* Solid up to the column's lowest free memory, paler up to its highest: as the main
     * plot does, where a column holds many events. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t c = 0; c < ch->n_cols; c++) {
            int64_t lo = pass ? ch->frag_free_low[c] : 0, hi = pass ? ch->frag_free[c] : ch->frag_free_low[c];
            if (hi <= lo)
                continue;
            double y0 = r->y + r->h * (1 - (double)hi / ch->frag_ymax);
            double y1 = r->y + r->h * (1 - (double)lo / ch->frag_ymax);
            rect(p, r->x + (double)c, y0, 1, y1 - y0);
        }
        rgba(p, FRAG_FREE, pass ? 0.35 : 0.8);
        cairo_fill(cr);
    }
    frag_line(p, ch->frag_largest, ch->frag_ymax);
    rgb(p, FRAG_LARGEST);
    cairo_set_line_width(cr, 1.3);
    cairo_stroke(cr);
    static const double DASH[] = {3.0, 2.0};
    frag_line(p, ch->frag_blocks, ch->frag_cmax);
    rgb(p, FRAG_COUNT);
    cairo_set_line_width(cr, 1.0);
    cairo_set_dash(cr, DASH, 2, 0);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_restore(cr);
    draw_breaks_in(p, r->y, r->h);
    rgb(p, ch->theme.muted);
    move_to(p, r->x, crisp(r->y + r->h));
    line_to(p, r->x + r->w, crisp(r->y + r->h));
    move_to(p, crisp(r->x) - 1, r->y);
    line_to(p, crisp(r->x) - 1, r->y + r->h);
    move_to(p, crisp(r->x + r->w) + 1, r->y);
    line_to(p, crisp(r->x + r->w) + 1, r->y + r->h);
    cairo_stroke(cr);
    font(p, 11, false);
    rgb(p, ch->theme.fg);
    for (size_t i = 0; i < ch->n_frag_yticks; i++)
        text_at(p, r->x - 7, ch->frag_yticks[i].px + 4, 1, ch->frag_yticks[i].label);
    rgb(p, FRAG_COUNT);
    for (size_t i = 0; i < ch->n_frag_cticks; i++)
        text_at(p, r->x + r->w + 7, ch->frag_cticks[i].px + 4, 0, ch->frag_cticks[i].label);
    /* The title names each mark in its own colour. */
    double x = r->x;
    const char *parts[3] = {ch->frag_title, "largest free block (line)",
                            "free blocks (dashed, right axis); paler: the range inside a pixel"};
    msr_chart_rgb cols[3] = {ch->theme.fg, FRAG_LARGEST, FRAG_COUNT};
    for (int k = 0; k < 3; k++) {
        char buf[160];
        snprintf(buf, sizeof buf, k == 0 ? "%s (fill)" : "   %s", parts[k]);
        rgb(p, cols[k]);
        text_at(p, x, r->y - 7, 0, buf);
        x += text_width(p, buf);
    }
    cairo_restore(cr);
}

int msr_chart_draw(cairo_t *cr, const msr_chart *chart, ms_error *err)
{
    if (!cr || !chart)
        return msr__render_fail(err, MS_ERR_ARG, "nothing to draw on or nothing to draw");
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
        return msr__render_fail(err, MS_ERR_ARG,
                               "cairo: %s", cairo_status_to_string(cairo_status(cr)));
    if (!(chart->y_max > 0) || !(chart->dx > 0) || !isfinite(chart->y_max) ||
        !isfinite(chart->dx))
        return msr__render_fail(err, MS_ERR_ARG, "chart has no usable scale");
    int64_t *acc = calloc(chart->n_cols ? chart->n_cols : 1, sizeof *acc);
    int64_t *drawn = calloc(chart->n_cols ? chart->n_cols : 1, sizeof *drawn);
    if (!acc || !drawn) {
        free(acc);
        free(drawn);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory drawing a chart");
    }
    pen p = {cr, chart, false};
    cairo_save(cr);
    rgb(&p, chart->theme.bg);
    rect(&p, chart->area.x, chart->area.y, chart->area.w, chart->area.h);
    cairo_fill(cr);
    draw_title(&p);
    draw_lanes(&p);
    draw_grid_and_axes(&p);
    cairo_save(cr);
    rect(&p, chart->plot.x, chart->plot.y - 1, chart->plot.w, chart->plot.h + 1);
    cairo_clip(cr);
    if (chart->overlay)
        draw_overlay(&p);
    else
        draw_stacked(&p, acc, drawn);
    draw_breaks(&p);
    draw_ooms(&p);
    draw_peak(&p);
    /* Labels after every line and outline, so none crosses a label. */
    for (size_t i = 0; i < chart->n_labels; i++)
        draw_label(&p, &chart->labels[i]);
    cairo_restore(cr);
    draw_axis_labels(&p);
    draw_legend(&p);
    draw_frag(&p);
    cairo_restore(cr);
    free(acc);
    free(drawn);
    if (p.bad)
        return msr__render_fail(err, MS_ERR_ARG, "chart geometry held a non-finite coordinate");
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
        return msr__render_fail(err, MS_ERR_ARG,
                               "cairo: %s", cairo_status_to_string(cairo_status(cr)));
    return 0;
}
