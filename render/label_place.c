/* Callout placement: a few labels, each moved to the free place nearest its point.
 *
 * Leaks start together (every site of a graph leak makes its first allocation in the
 * first step), so labels anchored at their bands' starts pile up at one spot. Each label
 * (the OOM's, the peak's, then the leaks' in group order) tries where it prefers to be,
 * then positions on both sides of its point, a few distances out and every height in
 * the plot, and takes the nearest that overlaps no label placed before it and crosses
 * none of the lines a reader follows. With at most MSR_CHART_MAX_LABELS labels this is a
 * few thousand rectangle tests. */
#include "label_place.h"

#include "chart_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GAP 3.0    /* free pixels kept around every box */
#define STEP 9.0   /* vertical search step */
#define REACH 36.0 /* the nearest a box comes to its point, horizontally */

bool msr_chart_rects_overlap(const msr_chart_rect *a, const msr_chart_rect *b)
{
    return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

static bool inside(const msr_chart_rect *box, const msr_chart_rect *area)
{
    return box->x >= area->x && box->y >= area->y && box->x + box->w <= area->x + area->w &&
           box->y + box->h <= area->y + area->h;
}

/* The box grown by the gap, so neighbours keep apart. */
static msr_chart_rect padded(const msr_chart_rect *b)
{
    msr_chart_rect p = {b->x - GAP, b->y - GAP, b->w + 2 * GAP, b->h + 2 * GAP};
    return p;
}

/* Where the leader leaves the box: the middle of the side facing the point. */
static void leader_start(const msr_chart_rect *b, double ax, double ay, double *lx, double *ly)
{
    if (ax <= b->x) {
        *lx = b->x;
        *ly = b->y + b->h / 2;
    } else if (ax >= b->x + b->w) {
        *lx = b->x + b->w;
        *ly = b->y + b->h / 2;
    } else {
        *lx = ax < b->x ? b->x : ax > b->x + b->w ? b->x + b->w : ax;
        *ly = ay < b->y ? b->y : b->y + b->h;
    }
}

double msr_callout_text_width(const char *text)
{
    /* DejaVu Sans Bold at 11 px averages under 7 px a character; count UTF-8 lead bytes. */
    size_t chars = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        chars += (*c & 0xC0) != 0x80;
    return 7.0 * (double)chars + 6.0;
}

/* ------------------------------------------------------------------ the chart's labels */

/* Estimated width of bold text at `px` pixels (DejaVu Sans Bold runs under 0.64 em a
 * character): a little wide, so boxes that do not overlap here do not overlap drawn. */
static double text_w(const char *text, double px)
{
    size_t chars = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        chars += (*c & 0xC0) != 0x80;
    return 0.64 * px * (double)chars + 6.0;
}

/* Cuts `src` to at most `chars` characters, ending in an ellipsis when cut. */
static void cut_text(char *dst, size_t cap, const char *src, size_t chars)
{
    size_t at = 0, n = 0;
    while (src[at] && n < chars) {
        at++;
        while ((src[at] & 0xC0) == 0x80)
            at++;
        n++;
    }
    if (!src[at]) {
        snprintf(dst, cap, "%s", src);
        return;
    }
    /* Back to a whole character that leaves room for the ellipsis. */
    if (at + sizeof "…" > cap)
        at = cap - sizeof "…";
    while (at > 0 && (src[at] & 0xC0) == 0x80)
        at--;
    memcpy(dst, src, at);
    memcpy(dst + at, "…", sizeof "…");
}

typedef struct place_env {
    const msr_chart *ch;
    msr_chart_rect area;     /* the plot less a margin: no label touches its edge */
    msr_chart_rect avoid[8]; /* markers (the peak dot, OOM triangles) */
    size_t n_avoid;
    const msr_chart_label *placed;
    size_t n_placed;
} place_env;

/* Whether a per-column step curve (as draw.c strokes it: flat across each column, a
 * vertical between columns) passes through the box, with `pad` pixels to spare. */
static bool crosses_curve(const msr_chart *ch, const int64_t *v, const msr_chart_rect *b, double pad)
{
    if (!v)
        return false;
    double top = b->y - pad, bottom = b->y + b->h + pad;
    long c0 = (long)floor(b->x - pad - ch->plot.x), c1 = (long)ceil(b->x + b->w + pad - ch->plot.x);
    if (c0 < 0)
        c0 = 0;
    if (c1 >= (long)ch->n_cols)
        c1 = (long)ch->n_cols - 1;
    double prev = NAN;
    for (long c = c0; c <= c1; c++) {
        bool has = ch->col_event ? ch->col_event[c] != MSR_CHART_NO_EVENT : v[c] >= 0;
        if (!has) {
            prev = NAN;
            continue;
        }
        double y = msr_chart_py(ch, (double)v[c]);
        double lo = isnan(prev) ? y : fmin(prev, y), hi = isnan(prev) ? y : fmax(prev, y);
        if (hi >= top && lo <= bottom)
            return true;
        prev = y;
    }
    return false;
}

static bool box_clear(const place_env *e, const msr_chart_rect *b)
{
    const msr_chart *ch = e->ch;
    if (!inside(b, &e->area))
        return false;
    msr_chart_rect pb = padded(b);
    for (size_t k = 0; k < e->n_avoid; k++)
        if (msr_chart_rects_overlap(&pb, &e->avoid[k]))
            return false;
    for (size_t k = 0; k < e->n_placed; k++)
        if (msr_chart_rects_overlap(&pb, &e->placed[k].box))
            return false;
    /* The lines a reader follows: reserved memory, the peak's level, the OOM markers. */
    if (crosses_curve(ch, ch->col_reserved, b, 2))
        return false;
    for (size_t i = 0; ch->overlay && i < ch->n_series; i++)
        if (crosses_curve(ch, ch->series[i].reserved, b, 2) ||
            crosses_curve(ch, ch->series[i].active, b, 2))
            return false;
    if (ch->has_peak && ch->peak_py >= b->y - 2 && ch->peak_py <= b->y + b->h + 2)
        return false;
    for (size_t i = 0; i < ch->n_oom_px; i++)
        if (ch->oom_px[i] >= b->x - 2 && ch->oom_px[i] <= b->x + b->w + 2)
            return false;
    return true;
}

/* Places one label of text width w near (ax, ay): first where it prefers to be (box at
 * px, py), then the clear spot nearest it, on either side, at any height. Cuts the text
 * (ellipsis) when no spot fits it whole. Returns false when no spot fits even cut. */
static bool place_label(place_env *e, msr_chart_label *L, const char *text, double ax, double ay,
                        double px, double py, bool prefer_right)
{
    double h = L->font_px + 5;
    size_t full = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        full += (*c & 0xC0) != 0x80;
    static const double KEEP[] = {1.0, 0.66, 0.45, 0.3};
    for (size_t t = 0; t < sizeof KEEP / sizeof KEEP[0]; t++) {
        size_t chars = (size_t)((double)full * KEEP[t]);
        if (t > 0 && chars < 12)
            break;
        cut_text(L->text, sizeof L->text, text, chars);
        double w = text_w(L->text, L->font_px);
        if (w > e->area.w)
            continue;
        msr_chart_rect want = {prefer_right ? px : px - w, py, w, h};
        if (box_clear(e, &want)) {
            L->box = want;
            return true;
        }
        double best = INFINITY;
        msr_chart_rect best_box = want;
        static const double REACH_X[] = {10, 40, 120, 260};
        for (size_t r = 0; r < sizeof REACH_X / sizeof REACH_X[0]; r++) {
            for (int side = 0; side < 2; side++) {
                bool right = (side == 0) == prefer_right;
                double x = right ? ax + REACH_X[r] : ax - REACH_X[r] - w;
                for (double dy = 0; dy <= e->area.h; dy += 6) {
                    for (int s = 0; s < 2; s++) {
                        double y = ay - h / 2 + (s ? dy : -dy) - (s ? 0 : 0);
                        msr_chart_rect b = {x, y, w, h};
                        double cx = fmax(b.x, fmin(ax, b.x + b.w)), cy = fmax(b.y, fmin(ay, b.y + b.h));
                        double len = hypot(cx - ax, cy - ay) + (right == prefer_right ? 0 : 20);
                        if (len >= best || !box_clear(e, &b))
                            continue;
                        best = len;
                        best_box = b;
                    }
                }
            }
        }
        if (isfinite(best)) {
            L->box = best_box;
            return true;
        }
    }
    return false;
}

/* The chart's next label slot, cleared, of `kind` in font_px pixels and rgb; it counts
 * once its caller places it (++ch->n_labels). */
static msr_chart_label *next_label(msr_chart *ch, msr_chart_label_kind kind, double font_px,
                                   msr_chart_rgb rgb)
{
    msr_chart_label *L = &ch->labels[ch->n_labels];
    memset(L, 0, sizeof *L);
    L->kind = kind;
    L->font_px = font_px;
    L->rgb = rgb;
    return L;
}

static void finish_leader(msr_chart_label *L, double ax, double ay, double min_len)
{
    L->ax = ax;
    L->ay = ay;
    leader_start(&L->box, ax, ay, &L->lx, &L->ly);
    L->leader = hypot(L->lx - ax, L->ly - ay) > min_len;
}

void msr__place_labels(msr_chart *ch)
{
    place_env e;
    memset(&e, 0, sizeof e);
    e.ch = ch;
    e.area = (msr_chart_rect){ch->plot.x + 2, ch->plot.y + 2, ch->plot.w - 4, ch->plot.h - 4};
    e.placed = ch->labels;
    ch->n_labels = 0;
    ch->n_hidden_labels = 0;
    if (ch->has_peak)
        e.avoid[e.n_avoid++] = (msr_chart_rect){ch->peak_px - 6, ch->peak_py - 6, 12, 12};
    for (size_t i = 0; i < ch->n_oom_px && e.n_avoid < 8; i++)
        e.avoid[e.n_avoid++] = (msr_chart_rect){ch->oom_px[i] - 7, ch->plot.y, 14, 11};

    /* Most important first: the OOM, then the peak, then the leaks in group order. */
    if (ch->n_oom_px) {
        msr_chart_label *L = next_label(ch, MSR_CHART_LABEL_OOM, 11, ch->theme.oom);
        char text[MSR_CHART_TEXT + 32];
        if (ch->n_ooms > 1)
            snprintf(text, sizeof text, "%s (×%llu)", ch->oom_label, (unsigned long long)ch->n_ooms);
        else
            snprintf(text, sizeof text, "%s", ch->oom_label);
        double x = ch->oom_px[0];
        bool right = x + 8 + text_w(text, 11) <= e.area.x + e.area.w;
        if (place_label(&e, L, text, x, ch->plot.y + 14, right ? x + 8 : x - 8, ch->plot.y + 8,
                        right)) {
            finish_leader(L, x, ch->plot.y + 14, 40);
            e.n_placed = ++ch->n_labels;
        } else {
            msr__legend_add(ch, MSR_CHART_KEY_DOT, ch->theme.oom, text);
        }
    }
    if (ch->has_peak) {
        msr_chart_label *L = next_label(ch, MSR_CHART_LABEL_PEAK, 12, ch->theme.peak);
        double x = ch->peak_px, y = ch->peak_py;
        bool right = x + 10 + text_w(ch->peak_label, 12) <= e.area.x + e.area.w;
        double py = y - 8 < ch->plot.y + 12 ? y + 5 : y - 25;
        if (place_label(&e, L, ch->peak_label, x, y, right ? x + 9 : x - 9, py, right)) {
            finish_leader(L, x, y, 24);
            e.n_placed = ++ch->n_labels;
        } else {
            msr__legend_add(ch, MSR_CHART_KEY_DOT, ch->theme.peak, ch->peak_label);
        }
    }
    /* Leak callouts, each at an arrow to where its band starts. */
    size_t W = ch->n_cols, order[MSR_CHART_MAX_LABELS * 4], n_marked = 0;
    for (size_t g = 0; g < ch->n_groups && n_marked < sizeof order / sizeof order[0]; g++)
        if (ch->groups[g].highlight && ch->groups[g].pinned)
            order[n_marked++] = g;
    for (size_t i = 0; i < n_marked; i++) {
        const msr_chart_group *g = &ch->groups[order[i]];
        if (ch->n_labels >= MSR_CHART_MAX_LABELS) {
            ch->n_hidden_labels++;
            continue;
        }
        msr_chart_label *L = next_label(ch, MSR_CHART_LABEL_LEAK, 11, g->suspect ? ch->theme.fg : ch->theme.highlight);
        /* Wide enough for a finding's label whole ("forward leak, 2 sites, 90.09 MiB:
         * train/scenarios.py:159 layers_run", "4 × 8.00 KiB = 32.00 KiB:
         * train/scenarios_verdicts3.py:368 v3_metric_leak"): its end names the line. */
        double cap = ch->plot.w * 0.5 > 320 ? ch->plot.w * 0.5 : 320;
        char text[MSR_CHART_TEXT + 32];
        size_t max_chars = (size_t)((cap - 6) / (0.64 * 11));
        cut_text(text, sizeof text, g->mark, max_chars);
        double ax = g->pin_px, ay = g->pin_py;
        bool right = ax + 46 + text_w(text, 11) < e.area.x + e.area.w;
        if (place_label(&e, L, text, ax, ay, right ? ax + 46 : ax - 46, ay - 46, right)) {
            finish_leader(L, ax, ay, 0);
            e.n_placed = ++ch->n_labels;
        } else {
            ch->n_hidden_labels++;
        }
    }
    (void)W;
    if (ch->n_hidden_labels) {
        char more[64];
        snprintf(more, sizeof more, "+%zu more finding%s (memsnap leaks)", ch->n_hidden_labels,
                 ch->n_hidden_labels == 1 ? "" : "s");
        msr__legend_add(ch, MSR_CHART_KEY_LINE, ch->theme.highlight, more);
    }
}
