/* memsnap report: the pieces one report is made of, shared by cmd_report.c and the
 * writers. Everything the page, the Markdown and the gates show is first put into one
 * cJSON document (summary.json, docs/json.md); the HTML and Markdown writers and the
 * gates read that document only, so the three outputs can never disagree. Charts are the
 * one thing JSON does not carry: they travel beside it as SVG text.
 *
 * Ownership: a report_* function that returns a pointer hands it to the caller; cJSON
 * objects added to a document belong to that document. */
#ifndef MEMSNAP_CLI_REPORT_H
#define MEMSNAP_CLI_REPORT_H

#include <cairo.h>
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "chart.h"
#include "cli_util.h"
#include "memsnap/run.h"
#include "memsnap/categories.h"
#include "memsnap/compare.h"
#include "memsnap/memsnap.h"

/* ------------------------------------------------------------------ options */

typedef struct report_opts {
    const char *out_dir;
    char **files;           /* points into argv */
    size_t n_files;
    int device;             /* -1: every device for the summary, the busiest for charts */
    int top;                /* sites per table */
    const char *title;      /* page title, NULL for the default */
    const char *step_name;  /* leaks/iterations: --step NAME */
    uint32_t iterations;    /* leaks/iterations: --iterations N, 0 = detect */

    bool has_max_peak;
    uint64_t max_peak;
    bool has_max_reserved;
    uint64_t max_reserved;
    bool fail_on_leaks;
    uint64_t fail_on_leaks_bytes; /* --fail-on-leaks=SIZE; 0: any leak */
    bool fail_on_oom;
    const char *baseline;   /* a pickle, a summary JSON, or a report directory */
    bool has_max_growth;
    double max_growth;      /* percent */
    bool compare, no_compare; /* --compare / --no-compare: the files side by side or not */
    bool x_time;            /* --x time: the interactive timeline on the linear time axis */
    msr_chart_group_rules groups; /* --group NAME=REGEX: the timeline's by-group grouping */
} report_opts;

/* ------------------------------------------------------------------ JSON pieces */

/* Pair and rank JSON come from compare_json.h, shared with `diff` and `ranks`. */


/* ------------------------------------------------------------------ gates */

/* Checks every gate the options ask for against the report document (files[],
 * baseline) and returns {"passed": bool, "checked": [...]}; `failed` gets the number of
 * failed checks. NULL when out of memory. */
cJSON *report_gates(const cJSON *doc, const report_opts *o, size_t *failed);

/* ------------------------------------------------------------------ writers */

/* Charts to inline in the page: per file, and the comparison chart (NULL when none). */
typedef struct report_svgs {
    size_t n_files;
    const char *compare_svg;
    const char *const *oom_svg; /* per file, NULL where it has no OOM (NULL: none) */
    /* Per file, the interactive timeline's data (cli/view_page.h); NULL where a file has
     * none. */
    const char *const *file_view;
    const char *const *category_svg; /* per file, its chart by category (NULL: none) */
} report_svgs;

/* Writes index.html: one page that needs nothing but itself. Returns 0, or -1 when the
 * stream failed. */
int report_write_html(FILE *out, const cJSON *doc, const report_svgs *svgs);
/* Writes summary.md: the same facts as Markdown tables short enough for a CI job summary.
 * Returns 0, or -1 when the stream failed. */
int report_write_markdown(FILE *out, const cJSON *doc);

/* Text helpers the writers share. */
void report_html_escape(FILE *out, const char *s);
/* Table cells and rows of the page (report_cells.c): a size, a text (class cls or none), a
 * change in percent ("new" when not a number), a "k | size | extra" or "k | text | extra"
 * row, and a site with its function (cut past 110 characters, whole in the tooltip),
 * followed by the user's line behind it (`from`, or o's user_frame when it is not the
 * site). report_signed_size writes "+1.2 MB" style text. */
void report_cell_size(FILE *out, double bytes);
void report_cell_text(FILE *out, const char *cls, const char *s);
void report_cell_pct(FILE *out, const cJSON *pct);
void report_signed_size(double v, char *buf, size_t cap);
void report_kv_size(FILE *out, const char *k, double bytes, const char *extra);
void report_kv_text(FILE *out, const char *k, const char *v, const char *extra);
void report_cell_site(FILE *out, const char *site, const char *function);
void report_cell_site_user(FILE *out, const char *site, const char *function, const cJSON *o,
                           const char *site_file, double site_line);
void report_cell_site_from(FILE *out, const char *site, const char *function, const char *from);
/* The page's comparison section (cmp: the document's "comparison", svg its chart or NULL)
 * and its baseline section (report_html_compare.c). */
void report_html_comparison(FILE *out, const cJSON *cmp, const char *svg);
void report_html_baseline(FILE *out, const cJSON *doc);
void report_md_escape(FILE *out, const char *s);
/* Makes SVG text from cairo safe to sit beside other SVGs in one page: every id and
 * every reference to one gets `prefix`, and the XML declaration goes. Returns a heap
 * string or NULL. */
char *report_svg_inline(const char *svg, size_t len, const char *prefix);

/* The element of `list` (objects with a "device") for device d, or NULL. *hint (start it
 * at NULL) remembers where the last look-up ended, so looking devices up in the list's
 * order costs a step each, not a walk of the list (a file may have 65,536 devices). */
const cJSON *report_device_entry(const cJSON *list, int d, const cJSON **hint);
/* The page and the Markdown show the first REPORT_PAGE_DEVICES devices of a file and its
 * charted device; summary.json lists every one. A file of 65,536 devices would
 * otherwise make a page of 100 MB that no browser opens. `k` counts the file's devices
 * from 0 in list order. */
#define REPORT_PAGE_DEVICES 64
bool report_device_shown(const cJSON *file, size_t k, int device);

/* "1.234 s" of a seconds field, or "-" where it is null (a trace without times). */
const char *report_seconds(char *buf, size_t cap, const cJSON *o, const char *path);

/* The gates' checks (gates.checks), failed first, since they are what the reader came
 * for: fn(out, passed, message) for each, as the page or the Markdown words it. */
void report_each_check(FILE *out, const cJSON *checked,
                       void (*fn)(FILE *out, bool passed, const char *message));
/* Where a compared site's code moved to another line (its "b_site"): the text of the
 * move in buf, true; false when it did not move. */
bool report_site_moved(const cJSON *site, char *buf, size_t cap);

/* "timeline-gpt2_train.png": a file name made from the input's base name with
 * .gz/.pickle/.pkl dropped and anything but [A-Za-z0-9._-] replaced, so names stay
 * portable; `taken` earlier names get "-2", "-3", ... appended. */
void report_png_name(const char *path, const char *const *taken, size_t n_taken, char *buf,
                     size_t cap);

/* ------------------------------------------------------------------ analyses of other modules */

/* The sections of one file that go device by device (report_devices.c): every device
 * the summary lists gets one run, which its summary object, its leaks and iterations,
 * and its OOMs all read; the charted device's run is the file's. */
typedef struct report_devices {
    cJSON *leaks;           /* the `leaks --json` files[] object without its "path" */
    cJSON *leak_devices, *leak_items; /* its devices[] and leaks[] */
    ms_leak_counts sum;     /* the devices' counts, for the verdict */
    bool oom;               /* a device has an OOM event */
    cJSON *ooms;            /* files[].ooms: the `oom --json` objects */
    size_t ooms_listed, ooms_left_out;
    ms_run *oom_run;        /* the run whose first OOM is drawn (NULL: none) */
    ms_run *own_oom_run;    /* that run when it is not the file's: kept, then freed */
    int oom_rc;             /* an OOM analysis failed (told after the charts) */
    ms_error oom_err;
} report_devices;

/* Fills `summary_devices` (the summary's devices[]) and *rd for every device the summary
 * lists; the chart device's iteration peaks and leaked bytes also go to `profile`, so
 * comparisons show them. Returns 0, or an error code with err filled; *rd is to be freed
 * with report_devices_free either way. */
int report_devices_build(report_devices *rd, cJSON *summary_devices, const ms_snapshot *s,
                         const report_opts *o, ms_run *chart_run, ms_profile *profile,
                         ms_error *err);
void report_devices_free(report_devices *rd);
/* Its parts: the leaks object (report_leaks.c), and a device's OOMs (report_oom.c). */
void report_leaks_begin(report_devices *rd);
int report_leaks_device(report_devices *rd, ms_run *run, ms_profile *profile, ms_error *err);
void report_leaks_end(report_devices *rd);
void report_oom_device(report_devices *rd, ms_run *run);

/* The active-memory chart of one file with its leaks marked, as the PNG at `png_path`
 * (the page shows the interactive view instead), on the run's axis as `render --leaks`
 * draws it (o->x_time: linear time). The run's iterations, idle stretches and shape must be built already when
 * another thread uses the run (cmd_report.c builds them before it signals). */
int report_chart_file(ms_run *run, const char *label, const report_opts *o, const char *png_path,
                      ms_error *err);

/* The same timeline by category (render --by category) from the file's categorisation
 * `c` of `t`, on the same axis (x_time: linear time, as --x time): PNG at `png_path`, SVG out (*svg_out NULL when the build
 * has no charts). */
int report_chart_categories(char **svg_out, ms_run *run, const ms_timeline *t,
                            const ms_categories *c, const char *label, bool x_time,
                            const char *png_path, ms_error *err);

/* One file of the comparison chart. */
typedef struct report_chart_input {
    const ms_snapshot *snap;
    const ms_timeline *tl;   /* curves and allocs */
    const char *label;
    ms_run *run;             /* the run `tl` is from: its iterations and idle stretches */
} report_chart_input;

/* The comparison chart of several files on shared scales, each panel on its run axis
 * (msr_chart_build_figure, as `render A B` draws it): PNG at `png_path`, SVG out. */
int report_chart_compare(char **svg_out, const report_chart_input *in, size_t n,
                         const char *png_path, ms_error *err);

/* OOMs (memsnap/oom.h, report_oom.c): adds files[].ooms (rd's, now the document's) and
 * files[].oom_png to `fj`, writes the picture of the first OOM beside the page and hands
 * its SVG for the page (*svg_out NULL when the file has no OOM). `fj` must already hold
 * `path` and `timeline_png`. */
int report_oom_file(cJSON *fj, const report_opts *o, size_t index, report_devices *rd,
                    char **svg_out, ms_error *err);
void report_html_ooms(FILE *out, const cJSON *file, const char *svg);
void report_md_ooms(FILE *out, const cJSON *file);

/* Where cairo's SVG surfaces write the report's inline charts: the text grows in p,
 * NUL-terminated (cairo_svg_surface_create_for_stream(report_buf_write, &buf, ...)). */
typedef struct report_buf {
    char *p;
    size_t n, cap;
} report_buf;
cairo_status_t report_buf_write(void *closure, const unsigned char *data, unsigned int len);

#endif
