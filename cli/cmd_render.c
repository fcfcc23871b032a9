/* memsnap render: draws the active-memory timeline of one or more snapshots as PNG or SVG.
 * Parsing options and loading files happens here; what to draw is render/geometry.c and
 * how is render/draw.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "chart_json.h"
#include "chart_options.h"
#include "cli_util.h"
#include "commands.h"
#include "draw.h"
#include "memsnap/categories.h"
#include "memsnap/iterations.h"
#include "memsnap/leaks.h"
#include "memsnap/run.h"
#include "options.h"
#include "safe_output.h"

#define CMD "render"
#define MAX_FILES MS_CHART_MAX_SERIES
#define MAX_SIDE 8192
/* Below this a panel has no room for title, annotation lanes, axes and plot. */
#define MIN_WIDTH 240
#define MIN_HEIGHT 200

/* cairo draws text through fontconfig, which keeps its caches until exit on purpose. In
 * sanitizer builds LeakSanitizer would report them and fail every command that draws; this
 * hook (read only by LeakSanitizer, inert otherwise) tells it they are not memsnap's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig\n";
}

const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsnap render FILE... -o OUT.png|OUT.svg [options]\n"
            "\n"
            "Draws active memory over time as stacked bands, like PyTorch's \"Active Memory\n"
            "Timeline\": each large allocation is a band stacked on those alive below it;\n"
            "smaller ones form the grey band on top, so the outline is the exact curve.\n"
            "Several files give one panel each, on shared scales.\n"
            "\n"
            "options:\n"
            "  -o, --output PATH    image to write; the format follows the extension\n"
            "  --format png|svg|json\n"
            "                       force the format; json writes the chart model every\n"
            "                       image is drawn from (docs/json.md), in its pixels\n"
            "  --width N            image width in pixels (default 1600)\n"
            "  --height N           image height (default 800; 500 per panel for several files)\n"
            "  --device N           device to draw (default: the one with the most events)\n"
            "  --x run|time|events  x axis: the run (default): seconds, with idle stretches and\n"
            "                       slow set-up compressed into marked breaks so the\n"
            "                       iterations get the width; time: seconds, linear; events:\n"
            "                       event index (--overlay draws run as time)\n"
            "  --from X, --to X     draw only this window (seconds, or event index with --x events)\n"
            "  --by alloc|site|phase|category|compile|group\n"
            "                       bands per allocation (default), per allocation site, per\n"
            "                       top-level annotation (record_function) phase, or per\n"
            "                       category: parameter, optimizer state, workspace, gradient,\n"
            "                       input, activation, temporary, other (memsnap categories),\n"
            "                       or per torch.compile region (compile_context=True traces),\n"
            "                       or per --group rule\n"
            "  --group NAME=REGEX   with --by group: a band NAME for allocations with a frame\n"
            "                       \"file:line function\" matching REGEX (PCRE2 syntax); the\n"
            "                       first matching rule wins, the rest is other; repeatable\n"
            "  --top N              bands: the N largest allocations by bytes x lifetime\n"
            "                       (default 400), or the N largest sites/phases (default 12)\n"
            "  --overlay            several files: their curves on one chart instead of panels\n"
            "  --leaks              outline leaked allocations in red (memsnap leaks finds\n"
            "                       them) and label each leaking site where its band starts\n"
            "  --show fragmentation add a lower panel over the same x axis: the free memory\n"
            "                       inside reserved segments (reserved - allocated blocks),\n"
            "                       the largest free block and the free-block count\n"
            "  --title TEXT         replace the title (every panel)\n"
            "  --dark               dark background\n"
            "  --no-legend          leave out the legend; the plot takes the width\n"
            "  -h, --help           this text\n"
            "\n"
            "Exit status: 0 written, 2 usage error or unreadable input.\n");
}

typedef struct opts {
    const char *files[MAX_FILES];
    size_t n_files;
    const char *output;
    const char *format;
    long long width, height, device;
    bool has_height, has_device, overlay, leaks, json;
    ms_chart_spec spec;
    ms_chart_group_rules rules;
} opts;

static const char *const X_MODES[] = {"run", "time", "events", NULL};
static const char *const SHOWS[] = {"fragmentation", NULL};
static const ms_chart_x X_MODE_OF[] = {MS_CHART_X_RUN, MS_CHART_X_TIME, MS_CHART_X_EVENTS};
static const char *const GROUPINGS[] = {"alloc", "site",    "phase", "category",
                                        "compile", "group", NULL};
static const ms_chart_by GROUPING_OF[] = {MS_CHART_BY_ALLOC,    MS_CHART_BY_SITE,
                                          MS_CHART_BY_PHASE,    MS_CHART_BY_CATEGORY,
                                          MS_CHART_BY_COMPILE,  MS_CHART_BY_GROUP};

static int parse(int argc, char **argv, opts *o, bool *help)
{
    memset(o, 0, sizeof *o);
    o->width = 1600;
    o->height = 800;
    o->spec.x_mode = MS_CHART_X_RUN;
    *help = false;
    long long top = 0;
    int x = -1, by = -1, show = -1;
    bool has_top = false;
    const cli_option table[] = {
        {CLI_OUTPUT(&o->output)},
        {CLI_STRING("--format", &o->format)},
        {CLI_INT("--width", &o->width, MIN_WIDTH, MAX_SIDE)},
        {CLI_INT("--height", &o->height, MIN_HEIGHT, MAX_SIDE), .seen = &o->has_height},
        {CLI_DEVICE(&o->device), .seen = &o->has_device},
        {CLI_INT("--top", &top, 1, MS_CHART_MAX_GROUPS), .seen = &has_top},
        {CLI_NUMBER("--from", &o->spec.from), .seen = &o->spec.has_from},
        {CLI_NUMBER("--to", &o->spec.to), .seen = &o->spec.has_to},
        {CLI_CHOICE("--x", &x, X_MODES)},
        {CLI_CHOICE("--by", &by, GROUPINGS)},
        {CLI_STRING("--title", &o->spec.title)},
        {CLI_FLAG("--dark", &o->spec.dark)},
        {CLI_FLAG("--overlay", &o->overlay)},
        {CLI_FLAG("--leaks", &o->leaks)},
        {CLI_CHOICE("--show", &show, SHOWS)},
        {CLI_FLAG("--no-legend", &o->spec.no_legend)},
        {CLI_CALLBACK("--group", cli_add_group_rule, &o->rules)},
    };
    char **files = calloc((size_t)argc + 1, sizeof *files);
    if (!files) {
        cli_error(CMD, "out of memory");
        return 2;
    }
    int rc = CLI_PARSE(CMD, argc, argv, table, files, &o->n_files);
    if (rc == 0 && o->n_files > MAX_FILES) {
        cli_error(CMD, "at most %d files", MAX_FILES);
        rc = 2;
    }
    for (size_t i = 0; rc == 0 && i < o->n_files; i++)
        o->files[i] = files[i];
    free(files);
    if (rc == CLI_HELP) {
        *help = true;
        return 0;
    }
    if (rc)
        return rc;
    if (has_top)
        o->spec.top = (size_t)top;
    if (x >= 0)
        o->spec.x_mode = X_MODE_OF[x];
    if (by >= 0)
        o->spec.by = GROUPING_OF[by];
    o->spec.fragmentation = show == 0;
    if (o->spec.fragmentation && o->overlay) {
        cli_error(CMD, "--show fragmentation draws panels, not --overlay");
        return 2;
    }
    if (o->n_files == 0) {
        cli_error(CMD, "no input file (see memsnap render --help)");
        return 2;
    }
    if (o->spec.by == MS_CHART_BY_GROUP && o->rules.n == 0) {
        cli_error(CMD, "--by group needs at least one --group NAME=REGEX");
        return 2;
    }
    if (o->rules.n && o->spec.by != MS_CHART_BY_GROUP) {
        cli_error(CMD, "--group draws only with --by group");
        return 2;
    }
    if (!o->output) {
        cli_error(CMD, "no output image: add -o OUT.png or -o OUT.svg");
        return 2;
    }
    if (o->spec.has_from && o->spec.has_to && !(o->spec.to > o->spec.from)) {
        cli_error(CMD, "--to must be after --from");
        return 2;
    }
    if (o->n_files > 1 && !o->overlay && !o->has_height) {
        long long h = 500 * (long long)o->n_files;
        o->height = h > MAX_SIDE ? MAX_SIDE : h;
    }
    if (o->n_files > 1 && !o->overlay && o->height / (long long)o->n_files < MIN_HEIGHT) {
        cli_error(CMD, "--height %lld leaves less than %d pixels per panel for %zu files",
                  o->height, MIN_HEIGHT, o->n_files);
        return 2;
    }
    return 0;
}

/* The allocations `memsnap leaks` blames, as chart highlights: every one outlined, and
 * one label per finding (at its first allocation) so the picture stays readable. */
static int leak_highlights(const char *path, ms_run *run, ms_leak_mark **marks,
                           ms_chart_highlight **out, size_t *n_out)
{
    ms_error err;
    size_t n = 0;
    *out = NULL;
    *n_out = 0;
    if (ms_run_leak_marks(marks, &n, run, &err)) {
        cli_error(CMD, "%s: %s", path, err.message);
        return 2;
    }
    ms_chart_highlight *hl = NULL;
    if (ms_chart_highlights_from_marks(&hl, *marks, n, &err)) {
        cli_error(CMD, "%s", err.message);
        return 2;
    }
    *out = hl;
    *n_out = n;
    return 0;
}

/* --by phase without top-level annotation ranges draws the run's phases. */
static int phases_of(const char *path, ms_run *run, ms_chart_source *src)
{
    ms_error err;
    const ms_annotation_range *ar = NULL;
    size_t n = 0;
    bool top = false;
    int rc = ms_run_annotation_ranges(&ar, &n, run, &err);
    for (size_t k = 0; !rc && k < n && !top; k++)
        top = ar[k].depth == 0;
    if (!rc && !top)
        rc = ms_run_phases(&src->phases, run, &err);
    if (rc) {
        cli_error(CMD, "%s: %s", path, err.message);
        return 2;
    }
    return 0;
}

/* The run axis of one file, laid once for the extent and the chart from the run's quiet
 * stretches (what summary's iterations table calls idle). */
static int file_warp(const char *path, ms_run *run, ms_chart_source *src, ms_chart_warp *w)
{
    ms_error err;
    if (ms_run_idle(&src->idle, run, &err)) {
        cli_error(CMD, "%s: %s", path, err.message);
        return 2;
    }
    ms_chart_warp_from_idle(w, src->idle);
    src->warp = w;
    return 0;
}

/* --format json: the chart model every image of these options is drawn from. */
static int write_model(const char *path, const ms_chart *const *charts, size_t n, int width,
                       int height)
{
    ms_error err;
    char *text = NULL;
    if (ms_chart_model_json(charts, n, width, height, &text, &err)) {
        cli_error(CMD, "%s", err.message);
        return 2;
    }
    char why[300];
    safe_out so;
    int rc = 0;
    if (safe_out_open(&so, path, why, sizeof why)) {
        cli_error(CMD, "%s", why);
        rc = 2;
    } else {
        FILE *f = safe_out_file(&so);
        if (!f || fputs(text, f) == EOF) {
            cli_error(CMD, "%s: write failed: %s", path,
                      strerror(so.write_errno ? so.write_errno : errno ? errno : EIO));
            safe_out_abort(&so);
            rc = 2;
        } else if (safe_out_commit(&so, why, sizeof why)) {
            cli_error(CMD, "%s", why);
            rc = 2;
        }
    }
    free(text);
    return rc;
}

int cmd_render(int argc, char **argv)
{
    opts o;
    bool help;
    int rc = parse(argc, argv, &o, &help);
    if (help || rc) {
        ms_chart_group_rules_free(&o.rules);
        if (help)
            usage(stdout);
        return help ? 0 : rc;
    }

    ms_error err;
    ms_error_clear(&err);
    ms_render_format format = MS_RENDER_PNG;
    o.json = o.format && !strcmp(o.format, "json");
    if (!o.json && (o.format ? ms_render_format_from_name(o.format, &format, &err)
                             : ms_render_format_from_path(o.output, &format, &err))) {
        cli_error(CMD, "%s", err.message);
        ms_chart_group_rules_free(&o.rules);
        return 2;
    }

    size_t n = o.n_files;
    ms_snapshot *snaps[MAX_FILES] = {0};
    ms_run *runs[MAX_FILES] = {0};
    ms_chart_source srcs[MAX_FILES];
    ms_chart_warp warps[MAX_FILES];
    const char *labels[MAX_FILES]; /* what tells the files apart in legends and titles */
    cli_file_labels(o.files, n, labels);
    /* An overlay draws the curves alone: its runs build no allocations list. */
    ms_run_options overlay_ro = {.timeline_flags = MS_TIMELINE_CURVES};
    rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = cli_load(CMD, o.files[i], &snaps[i]);
        if (rc)
            break;
        int device = o.has_device ? (int)o.device : cli_busiest_device(snaps[i]);
        if (device >= ms_snapshot_device_count(snaps[i])) {
            cli_error(CMD, "%s: no device %d (the file has %d)", o.files[i], device,
                      ms_snapshot_device_count(snaps[i]));
            rc = 2;
            break;
        }
        /* Every chart draws from the file's run; an overlay needs only the curves. */
        const ms_timeline *tl = NULL;
        if (ms_run_open(&runs[i], snaps[i], device, o.overlay ? &overlay_ro : NULL, &err) ||
            ms_run_timeline(&tl, runs[i], &err)) {
            cli_error(CMD, "%s: %s", o.files[i], err.message);
            rc = 2;
            break;
        }
        srcs[i] = (ms_chart_source){.snap = snaps[i], .trace = ms_snapshot_trace(snaps[i], device),
                                    .tl = tl, .label = labels[i]};
        if (o.overlay)
            continue;
        /* Passes over the trace that only these groupings need. */
        if (o.spec.by == MS_CHART_BY_CATEGORY) {
            if (ms_run_categories(&srcs[i].categories, runs[i], &err)) {
                cli_error(CMD, "%s: %s", o.files[i], err.message);
                rc = 2;
                break;
            }
        }
        if (o.spec.by == MS_CHART_BY_PHASE && (rc = phases_of(o.files[i], runs[i], &srcs[i])))
            break;
        if (o.spec.fragmentation && ms_run_fragmentation(&srcs[i].frag, runs[i], &err)) {
            cli_error(CMD, "%s: %s", o.files[i], err.message);
            rc = 2;
            break;
        }
        srcs[i].group_rules = &o.rules;
        /* The run axis is cut at the iterations, and the JSON shows them; the time and
         * events axes' images need neither pass over the trace. */
        bool run = o.spec.x_mode == MS_CHART_X_RUN;
        if ((o.json || run) && (ms_run_iterations(&srcs[i].iterations, runs[i], &err) ||
                                ms_run_shape(&srcs[i].shape, runs[i], &err))) {
            cli_error(CMD, "%s: %s", o.files[i], err.message);
            rc = 2;
            break;
        }
        if (run && (rc = file_warp(o.files[i], runs[i], &srcs[i], &warps[i])))
            break;
    }

    /* One figure: panels on shared scales (each on its own run axis) or an overlay, as
     * every picture that compares files draws them (the report's ranks.png too). */
    ms_chart_highlight *hls[MAX_FILES] = {0};
    size_t n_hls[MAX_FILES] = {0};
    ms_leak_mark *marks[MAX_FILES] = {0};
    for (size_t i = 0; !rc && o.leaks && !o.overlay && i < n; i++)
        rc = leak_highlights(o.files[i], runs[i], &marks[i], &hls[i], &n_hls[i]);
    ms_chart_figure *fig = NULL;
    if (!rc) {
        ms_chart_figure_spec fs = {.chart = o.spec, .overlay = o.overlay,
                                   .width = (int)o.width, .height = (int)o.height};
        if (o.leaks) {
            fs.highlights = (const ms_chart_highlight *const *)hls;
            fs.n_highlights = n_hls;
        }
        if (ms_chart_build_figure(&fig, srcs, n, &fs, &err)) {
            cli_error(CMD, "%s", err.message);
            rc = 2;
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(hls[i]);
        ms_leak_marks_free(marks[i]);
    }
    ms_chart *const *charts = fig ? fig->charts : NULL;
    size_t n_charts = fig ? fig->n_charts : 0;
    char sources[1024] = ""; /* the image's Source text: the input files' names */
    for (size_t i = 0, at = 0; i < n && at < sizeof sources; i++)
        at += (size_t)snprintf(sources + at, sizeof sources - at, "%s%s", i ? ", " : "",
                               cli_basename(o.files[i]));
    if (!rc && o.json)
        rc = write_model(o.output, (const ms_chart *const *)charts, n_charts, (int)o.width,
                         (int)o.height);
    else if (!rc && safe_out_render(o.output, (int)format, (int)o.width, (int)o.height,
                                    (const ms_chart *const *)charts, n_charts,
                                    &(ms_image_meta){.source = sources}, &err)) {
        cli_error(CMD, "%s", err.message);
        rc = 2;
    }
    ms_chart_figure_free(fig);
    for (size_t i = 0; i < n; i++) {
        ms_run_free(runs[i]);
        ms_snapshot_free(snaps[i]);
    }
    ms_chart_group_rules_free(&o.rules);
    return rc;
}
