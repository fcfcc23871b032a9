/* The pen: cairo calls that draw.c makes through one guard, so that no coordinate that
 * is not finite reaches cairo (it would poison the context), and text helpers that fit
 * labels to the room they have. Private to draw.c; static inline so that splitting them
 * out costs the drawing nothing. */
#ifndef MEMSNAP_RENDER_PEN_H
#define MEMSNAP_RENDER_PEN_H

#include <cairo.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "chart.h"
#include "utf8.h"

#define FONT "DejaVu Sans"

/* Drawing state shared by the helpers; `bad` records a coordinate that was not finite so
 * that it never reaches cairo (which would poison the context). */
typedef struct pen {
    cairo_t *cr;
    const msr_chart *chart;
    bool bad;
} pen;

static inline bool ok2(pen *p, double x, double y)
{
    if (isfinite(x) && isfinite(y))
        return true;
    p->bad = true;
    return false;
}

static inline void move_to(pen *p, double x, double y)
{
    if (ok2(p, x, y))
        cairo_move_to(p->cr, x, y);
}

static inline void line_to(pen *p, double x, double y)
{
    if (ok2(p, x, y))
        cairo_line_to(p->cr, x, y);
}

static inline void rect(pen *p, double x, double y, double w, double h)
{
    if (ok2(p, x, y) && ok2(p, w, h))
        cairo_rectangle(p->cr, x, y, w, h);
}

static inline void rgb(pen *p, msr_chart_rgb c)
{
    cairo_set_source_rgb(p->cr, c.r, c.g, c.b);
}

static inline void rgba(pen *p, msr_chart_rgb c, double a)
{
    cairo_set_source_rgba(p->cr, c.r, c.g, c.b, a);
}

/* Quarter pixels: finer than anyone sees, and it keeps SVG numbers short and lets runs of
 * equal heights collapse into one path segment. */
static inline double quant(double v)
{
    return floor(v * 4.0 + 0.5) / 4.0;
}

/* A crisp 1-px line sits on a pixel centre. */
static inline double crisp(double v)
{
    return floor(v) + 0.5;
}

static inline void font(pen *p, double size, bool bold)
{
    cairo_select_font_face(p->cr, FONT, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(p->cr, size);
}

static inline double text_width(pen *p, const char *s)
{
    cairo_text_extents_t ext;
    char safe[1024];
    cairo_text_extents(p->cr, msr__utf8_safe(s, safe, sizeof safe), &ext);
    return isfinite(ext.x_advance) ? ext.x_advance : 0;
}

/* Cuts `s` (UTF-8) to fit `max_w` and `cap` (at least 4), ending it with an ellipsis
 * when cut; only ever on a character boundary, whatever the length. Not inline: it is too
 * large to be worth it. */
static void fit_text(pen *p, const char *s, double max_w, char *out, size_t cap)
{
    size_t full = strlen(s);
    size_t len = msr__utf8_prefix(s, full, cap - 1);
    memcpy(out, s, len);
    out[len] = '\0';
    if (len == full && text_width(p, out) <= max_w)
        return;
    len = msr__utf8_prefix(s, len, cap - sizeof "…"); /* room for the ellipsis */
    for (;;) {
        memcpy(out, s, len);
        memcpy(out + len, "…", sizeof "…");
        if (len == 0 || text_width(p, out) <= max_w)
            return;
        len = msr__utf8_prefix(s, len, len - 1);
    }
}

/* align: 0 left, 0.5 centre, 1 right; y is the baseline. */
static inline void text_at(pen *p, double x, double y, double align, const char *s)
{
    char safe[1024];
    double w = text_width(p, s);
    move_to(p, x - w * align, y);
    if (!p->bad)
        cairo_show_text(p->cr, msr__utf8_safe(s, safe, sizeof safe));
}

#endif
