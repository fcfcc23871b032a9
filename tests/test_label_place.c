/* Callout placement (render/label_place.c): labels that start at one spot, as the sites
 * of a graph leak do, end up apart, inside the plot, clear of reserved space, each with
 * its leader to its own point; past the limit they are counted, not drawn. */
#include "check.h"
#include "label_place.h"

static void check_layout(const char *ctx, const ms_callout_in *in, const ms_callout *out, size_t n,
                         ms_chart_rect area, const ms_chart_rect *avoid, size_t n_avoid)
{
    for (size_t i = 0; i < n; i++) {
        if (!out[i].shown)
            continue;
        const ms_chart_rect *b = &out[i].box;
        CHECK_TRUE_IN(ctx, b->x >= area.x && b->y >= area.y && b->x + b->w <= area.x + area.w &&
                               b->y + b->h <= area.y + area.h);
        CHECK_TRUE_IN(ctx, b->w == in[i].w && b->h == in[i].h);
        /* The leader leaves from the box's edge. */
        CHECK_TRUE_IN(ctx, out[i].lx >= b->x && out[i].lx <= b->x + b->w && out[i].ly >= b->y &&
                               out[i].ly <= b->y + b->h);
        for (size_t k = 0; k < n_avoid; k++)
            CHECK_TRUE_IN(ctx, !ms_chart_rects_overlap(b, &avoid[k]));
        for (size_t k = 0; k < n; k++) {
            if (k == i)
                continue;
            if (out[k].shown)
                CHECK_TRUE_IN(ctx, !ms_chart_rects_overlap(b, &out[k].box));
            /* No box hides another label's point. */
            CHECK_TRUE_IN(ctx, !(in[k].ax >= b->x && in[k].ax <= b->x + b->w &&
                                 in[k].ay >= b->y && in[k].ay <= b->y + b->h));
        }
    }
}

int main(void)
{
    ms_chart_rect area = {80, 40, 1100, 700};
    /* Fifteen labels whose points lie within a few pixels (one graph leak, per site). */
    ms_callout_in in[15];
    ms_callout out[15];
    for (size_t i = 0; i < 15; i++)
        in[i] = (ms_callout_in){140 + (double)i, 700 - 2 * (double)i, 260, 15};
    ms_chart_rect peak = {900, 90, 250, 20};
    size_t shown = ms_callouts_place(in, 15, area, &peak, 1, MS_CHART_MAX_CALLOUTS, out);
    CHECK_EQ_INT_IN("pile-up", shown, MS_CHART_MAX_CALLOUTS);
    for (size_t i = 0; i < 15; i++)
        CHECK_EQ_INT_IN("pile-up", out[i].shown, i < MS_CHART_MAX_CALLOUTS);
    check_layout("pile-up", in, out, 15, area, &peak, 1);

    /* One label alone sits next to its point, above it. */
    ms_callout_in one = {500, 400, 200, 15};
    ms_callout o;
    CHECK_EQ_INT_IN("alone", ms_callouts_place(&one, 1, area, NULL, 0, 8, &o), 1);
    CHECK_TRUE_IN("alone", o.box.y + o.box.h <= one.ay && one.ay - o.box.y < 60);
    CHECK_TRUE_IN("alone", o.box.x > one.ax && o.box.x - one.ax < 60);

    /* A point at the right edge: the label goes left of it. */
    ms_callout_in edge = {1170, 300, 300, 15};
    CHECK_EQ_INT_IN("edge", ms_callouts_place(&edge, 1, area, NULL, 0, 8, &o), 1);
    CHECK_TRUE_IN("edge", o.box.x + o.box.w <= edge.ax);
    check_layout("edge", &edge, &o, 1, area, NULL, 0);

    /* No room at all (a box wider than the plot): left out, not drawn outside. */
    ms_callout_in wide = {500, 400, 2000, 15};
    CHECK_EQ_INT_IN("wide", ms_callouts_place(&wide, 1, area, NULL, 0, 8, &o), 0);
    CHECK_TRUE_IN("wide", !o.shown);
    return check_finish("test_label_place");
}
