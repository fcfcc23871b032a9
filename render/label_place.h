/* Where a chart's callout labels go: each one a box of text with a leader line to the
 * point it names (where a leaked band starts), no two boxes overlapping, none over what
 * the chart already shows there (the peak label), each as near its point as the free
 * space allows. Pure geometry, no cairo: the caller measures the text.
 *
 * Labels are placed in the order given (most important first); at most `max_shown` are
 * shown, and one that finds no free place is left out too: the caller says "+N more". */
#ifndef MEMSNAP_RENDER_LABEL_PLACE_H
#define MEMSNAP_RENDER_LABEL_PLACE_H

#include <stdbool.h>
#include <stddef.h>

#include "geometry.h"

/* The most callouts a chart shows; the rest are counted in the legend. */
#define MS_CHART_MAX_CALLOUTS 8

typedef struct ms_callout_in {
    double ax, ay; /* the point named: device pixels */
    double w, h;   /* the text box */
} ms_callout_in;

typedef struct ms_callout {
    bool shown;
    ms_chart_rect box; /* where the text box goes */
    double lx, ly;     /* where its leader line leaves the box (it ends at ax, ay) */
} ms_callout;

/* Places `n` callouts inside `area`, clear of the `n_avoid` rectangles. Writes out[0..n)
 * and returns how many are shown. */
size_t ms_callouts_place(const ms_callout_in *in, size_t n, ms_chart_rect area,
                         const ms_chart_rect *avoid, size_t n_avoid, size_t max_shown,
                         ms_callout *out);

/* Whether two rectangles share any area (touching edges do not). */
bool ms_chart_rects_overlap(const ms_chart_rect *a, const ms_chart_rect *b);

#endif
