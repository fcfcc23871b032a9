/* Callout placement: a few labels, each moved to the free place nearest its point.
 *
 * Leaks start together (every site of a graph leak makes its first allocation in the
 * first step), so labels anchored at their bands' starts pile up at one spot. Each label
 * tries positions on both sides of its point, a few distances out and every height in
 * the plot, and takes the one with the shortest leader line that overlaps no label
 * placed before it, no point another label names, and nothing the caller reserved. With
 * at most MS_CHART_MAX_CALLOUTS labels this is a few thousand rectangle tests. */
#include "label_place.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GAP 3.0    /* free pixels kept around every box */
#define STEP 9.0   /* vertical search step */
#define REACH 36.0 /* the nearest a box comes to its point, horizontally */

bool ms_chart_rects_overlap(const ms_chart_rect *a, const ms_chart_rect *b)
{
    return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

static bool inside(const ms_chart_rect *box, const ms_chart_rect *area)
{
    return box->x >= area->x && box->y >= area->y && box->x + box->w <= area->x + area->w &&
           box->y + box->h <= area->y + area->h;
}

static bool covers_point(const ms_chart_rect *r, double x, double y)
{
    return x >= r->x - GAP && x <= r->x + r->w + GAP && y >= r->y - GAP && y <= r->y + r->h + GAP;
}

/* The box grown by the gap, so neighbours keep apart. */
static ms_chart_rect padded(const ms_chart_rect *b)
{
    ms_chart_rect p = {b->x - GAP, b->y - GAP, b->w + 2 * GAP, b->h + 2 * GAP};
    return p;
}

/* Where the leader leaves the box: the middle of the side facing the point. */
static void leader_start(const ms_chart_rect *b, double ax, double ay, double *lx, double *ly)
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

size_t ms_callouts_place(const ms_callout_in *in, size_t n, ms_chart_rect area,
                         const ms_chart_rect *avoid, size_t n_avoid, size_t max_shown,
                         ms_callout *out)
{
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        ms_callout *o = &out[i];
        o->shown = false;
        o->box = (ms_chart_rect){in[i].ax, in[i].ay, 0, 0};
        o->lx = in[i].ax;
        o->ly = in[i].ay;
        if (shown >= max_shown || !isfinite(in[i].ax) || !isfinite(in[i].ay) ||
            in[i].w > area.w || in[i].h > area.h)
            continue;
        double best = INFINITY;
        ms_chart_rect best_box = {0, 0, 0, 0};
        /* Prefer labels above their point: what leaks grows upwards from there. */
        for (int reach = 0; reach < 4; reach++) {
            double dx = REACH + 110.0 * reach;
            for (int side = 0; side < 2; side++) {
                double x = side == 0 ? in[i].ax + dx : in[i].ax - dx - in[i].w;
                for (double dy = -area.h; dy <= area.h; dy += STEP) {
                    ms_chart_rect box = {x, in[i].ay - 24 + dy - in[i].h / 2, in[i].w, in[i].h};
                    if (!inside(&box, &area))
                        continue;
                    double lx, ly;
                    leader_start(&box, in[i].ax, in[i].ay, &lx, &ly);
                    /* Length of the leader, with a small premium on going down. */
                    double len = hypot(lx - in[i].ax, ly - in[i].ay) + (dy > 0 ? dy * 0.25 : 0);
                    if (len >= best)
                        continue;
                    ms_chart_rect pb = padded(&box);
                    bool clear = true;
                    for (size_t k = 0; k < n_avoid && clear; k++)
                        clear = !ms_chart_rects_overlap(&pb, &avoid[k]);
                    for (size_t k = 0; k < i && clear; k++)
                        clear = !out[k].shown || !ms_chart_rects_overlap(&pb, &out[k].box);
                    for (size_t k = 0; k < n && clear; k++)
                        clear = k == i || !covers_point(&box, in[k].ax, in[k].ay);
                    if (!clear)
                        continue;
                    best = len;
                    best_box = box;
                }
            }
        }
        if (!isfinite(best))
            continue;
        o->shown = true;
        o->box = best_box;
        leader_start(&best_box, in[i].ax, in[i].ay, &o->lx, &o->ly);
        shown++;
    }
    return shown;
}

double ms_callout_text_width(const char *text)
{
    /* DejaVu Sans Bold at 11 px averages under 7 px a character; count UTF-8 lead bytes. */
    size_t chars = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        chars += (*c & 0xC0) != 0x80;
    return 7.0 * (double)chars + 6.0;
}

int ms_chart_callouts_build(const ms_chart *ch, const size_t *rank, ms_chart_callouts *out)
{
    memset(out, 0, sizeof *out);
    size_t W = ch->n_cols, n_marked = 0;
    for (size_t g = 0; g < ch->n_groups; g++)
        n_marked += ch->groups[g].highlight && ch->groups[g].mark[0];
    if (!n_marked || !W)
        return 0;
    ms_callout_in *in = calloc(n_marked, sizeof *in);
    ms_callout *pl = calloc(n_marked, sizeof *pl);
    size_t *of = calloc(n_marked, sizeof *of);
    if (!in || !pl || !of) {
        free(in);
        free(pl);
        free(of);
        return MS_ERR_NOMEM;
    }
    size_t k = 0;
    for (size_t g = 0; g < ch->n_groups; g++)
        if (ch->groups[g].highlight && ch->groups[g].mark[0])
            of[k++] = g;
    /* Most important first: insertion sort by rank (a handful of findings). */
    for (size_t i = 1; rank && i < k; i++) {
        size_t x = of[i], j = i;
        while (j > 0 && rank[of[j - 1]] > rank[x]) {
            of[j] = of[j - 1];
            j--;
        }
        of[j] = x;
    }
    for (size_t i = 0; i < k; i++) {
        size_t g = of[i];
        const int64_t *h = ch->heights + g * W;
        size_t c = 0;
        while (c < W && h[c] <= 0)
            c++;
        in[i].ax = in[i].ay = NAN; /* a band outside the window: no place to point at */
        in[i].w = ms_callout_text_width(ch->groups[g].mark);
        in[i].h = 15;
        if (c == W)
            continue;
        int64_t below = 0;
        for (size_t b = 0; b < g; b++)
            below += ch->heights[b * W + c];
        in[i].ax = ch->plot.x + (double)c + 0.5;
        in[i].ay = ms_chart_py(ch, (double)below + (double)h[c] / 2);
    }
    /* The peak's label, where draw.c puts it (12 px bold, right of the dot if it fits). */
    ms_chart_rect avoid[2];
    size_t n_avoid = 0;
    if (ch->has_peak) {
        double w = 7.6 * (double)strlen(ch->peak_label);
        bool right = ch->peak_px + 10 + w <= ch->plot.x + ch->plot.w;
        double ty = ch->peak_py - 8 < ch->plot.y + 12 ? ch->peak_py + 18 : ch->peak_py - 8;
        avoid[n_avoid++] = (ms_chart_rect){right ? ch->peak_px + 9 : ch->peak_px - 9 - w,
                                           ty - 13, w, 17};
        avoid[n_avoid++] = (ms_chart_rect){ch->peak_px - 6, ch->peak_py - 6, 12, 12};
    }
    size_t shown = ms_callouts_place(in, k, ch->plot, avoid, n_avoid, MS_CHART_MAX_CALLOUTS, pl);
    for (size_t i = 0; i < k; i++) {
        if (!pl[i].shown)
            continue;
        ms_chart_callout *o = &out->items[out->n++];
        o->text = ch->groups[of[i]].mark;
        o->ax = in[i].ax;
        o->ay = in[i].ay;
        o->place = pl[i];
    }
    out->hidden = k - shown;
    free(in);
    free(pl);
    free(of);
    return 0;
}
