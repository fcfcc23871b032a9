/* The interactive timeline (memsnap view, and each file's chart in memsnap report's
 * index.html): the chart data memsnap exports (render/chart_export.h) inside a
 * <script type="application/json"> element, and one inline script (cli/view/view.js,
 * embedded at build time) that draws it. The page loads nothing: the Content-Security-Policy
 * allows exactly that script, by its SHA-256 hash, and nothing else.
 *
 * Test hooks (docs/view.md): the chart element carries data-memsnap-chart, the tooltip
 * data-memsnap-tooltip (hidden when nothing is hovered), the stack panel data-memsnap-stack.
 *
 * Ownership: view_chart_json() hands out a heap string the caller frees with free(). */
#ifndef MEMSNAP_CLI_VIEW_PAGE_H
#define MEMSNAP_CLI_VIEW_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memsnap/categories.h"
#include "memsnap/memsnap.h"
#include "memsnap/run.h"

/* Per-file choices the chart data depends on. */
typedef struct view_opts {
    const char *step_name;  /* iterations: --step NAME, NULL to detect (the run's option) */
    uint32_t iterations;    /* --iterations N, 0 to detect (the run's option) */
    bool leaks;             /* outline the allocations memsnap leaks blames */
    size_t budget;          /* bytes of chart data per file, 0: the default */
    bool x_time;            /* --x time: the linear time axis (default: the run axis) */
    const struct msr_chart_group_rules *groups; /* --group rules: a by-group grouping;
                                                  NULL or none: no such grouping */
} view_opts;

/* The chart data of one file's run (timeline, iterations, categories and leak findings
 * all from it; how iterations are found is the run's option) as JSON. *bytes and *levels
 * (may be NULL) say how much was written. */
int view_chart_json(char **out, ms_run *run, const char *label, const view_opts *o,
                    size_t *bytes, int *levels, ms_error *err);

/* The Content-Security-Policy of a page with the chart script: nothing from anywhere,
 * inline styles, and that one script by hash. */
const char *view_csp(void);
/* The chart's style rules (no <style> element around them). */
void view_write_css(FILE *out);
/* The script element; once per page, after the charts. */
void view_write_script(FILE *out);
/* One chart: its data element and the element the script fills. `index` makes the ids
 * unique in the page. */
void view_write_chart(FILE *out, const char *json, size_t index);
/* A whole page of charts for `memsnap view`. Returns 0, or -1 when the stream failed. */
int view_write_page(FILE *out, const char *title, const char *const *json,
                    const char *const *labels, size_t n);

#endif
