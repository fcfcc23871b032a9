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

#include "chart.h"

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

/* The callouts of a stacked chart: one per band with a mark (render --leaks labels each
 * finding once), anchored where the band starts, placed clear of the peak's label. Text
 * widths are estimated from the label font (11 px bold), a little wide, so boxes that
 * do not overlap here do not overlap drawn. */
typedef struct ms_chart_callout {
    const char *text; /* the group's mark, inside the chart */
    double ax, ay;    /* where the band starts */
    ms_callout place;
} ms_chart_callout;

typedef struct ms_chart_callouts {
    ms_chart_callout items[MS_CHART_MAX_CALLOUTS];
    size_t n;      /* shown */
    size_t hidden; /* marked bands left without a callout: "+N more" */
} ms_chart_callouts;

/* Marked bands are taken in the order of `rank` (the order their highlights were given,
 * most important first), or group order when rank is NULL. Fails only on no memory. */
int ms_chart_callouts_build(const ms_chart *ch, const size_t *rank, ms_chart_callouts *out);

/* Estimated width of a label in the callout font. */
double ms_callout_text_width(const char *text);

/* Whether two rectangles share any area (touching edges do not). */
bool ms_chart_rects_overlap(const ms_chart_rect *a, const ms_chart_rect *b);

#endif
