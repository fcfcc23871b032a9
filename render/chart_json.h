/* The chart model as data (docs/json.md, "render --format json"): for each panel its plot
 * rectangle, x axis, iterations, bands (bottom first, with colours), the labels inside the
 * plot with their boxes, and the lines (reserved, active outline, peak, OOM), all in device
 * pixels of the image the same options draw. It is written from the very msr_chart the PNG
 * and SVG back-ends draw, so tests and outside tools can check a picture through it.
 *
 * Ownership: *out is a NUL-terminated heap string the caller frees. */
#ifndef MEMSNAP_RENDER_CHART_JSON_H
#define MEMSNAP_RENDER_CHART_JSON_H

#include <stddef.h>

#include "chart.h"

#define MSR_CHART_JSON_VERSION 1

int msr_chart_model_json(const msr_chart *const *charts, size_t n_charts, int width, int height,
                        char **out, ms_error *err);

#endif
