/* The geometry the chart's label placement (label_place.c, msr__place_labels) shares with
 * the x axis's tick spacing (scale.c): text widths estimated without cairo, and
 * rectangle overlap. */
#ifndef MEMSNAP_RENDER_LABEL_PLACE_H
#define MEMSNAP_RENDER_LABEL_PLACE_H

#include <stdbool.h>
#include <stddef.h>

#include "chart.h"

/* Estimated width of a label in the callout font. */
double msr_callout_text_width(const char *text);

/* Whether two rectangles share any area (touching edges do not). */
bool msr_chart_rects_overlap(const msr_chart_rect *a, const msr_chart_rect *b);

#endif
