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
#define MAX_FILES MSR_CHART_MAX_SERIES
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
    msr_chart_spec spec;
    msr_chart_group_rules rules;
} opts;

static const char *const X_MODES[] = {"run", "time", "events", NULL};
static const char *const SHOWS[] = {"fragmentation", NULL};
static const msr_chart_x X_MODE_OF[] = {MSR_CHART_X_RUN, MSR_CHART_X_TIME, MSR_CHART_X_EVENTS};
static const char *const GROUPINGS[] = {"alloc", "site",    "phase", "category",
                                        "compile", "group", NULL};
static const msr_chart_by GROUPING_OF[] = {MSR_CHART_BY_ALLOC,    MSR_CHART_BY_SITE,
                                          MSR_CHART_BY_PHASE,    MSR_CHART_BY_CATEGORY,
                                          MSR_CHART_BY_COMPILE,  MSR_CHART_BY_GROUP};

static int parse(int argc, char **argv, opts *o, bool *help)
{
    memset(o, 0, sizeof *o);
    o->width = 1600;
    o->height = 800;
    o->spec.x_mode = MSR_CHART_X_RUN;
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
        {CLI_INT("--top", &top, 1, MSR_CHART_MAX_GROUPS), .seen = &has_top},
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
    int rc = CLI_PARSE_MAX(CMD, argc, argv, table, o->files, &o->n_files);
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
    if (o->spec.by == MSR_CHART_BY_GROUP && o->rules.n == 0) {
        cli_error(CMD, "--by group needs at least one --group NAME=REGEX");
        return 2;
    }
    if (o->rules.n && o->spec.by != MSR_CHART_BY_GROUP) {
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

/* --format json: the chart model every image of these options is drawn from. */
static int write_model(const char *path, const msr_chart *const *charts, size_t n, int width,
                       int height)
{
    ms_error err;
    char *text = NULL;
    if (msr_chart_model_json(charts, n, width, height, &text, &err)) {
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

/* What one command draws from: each file's snapshot and run, and the chart source read
 * from the run (msr_chart_source_from_run). */
typedef struct inputs {
    size_t n;
    ms_snapshot *snaps[MAX_FILES];
    ms_run *runs[MAX_FILES];
    msr_chart_source srcs[MAX_FILES];
    msr_chart_leaks leaks[MAX_FILES]; /* --leaks */
    const char *labels[MAX_FILES];   /* what tells the files apart in legends and titles */
} inputs;

static void inputs_free(inputs *in)
{
    for (size_t i = 0; i < in->n; i++) {
        msr_chart_leaks_free(&in->leaks[i]);
        ms_run_free(in->runs[i]);
        ms_snapshot_free(in->snaps[i]);
    }
}

typedef struct load_ctx {
    const opts *o;
    inputs *in;
} load_ctx;

/* One file (cli_each_snapshot): it keeps its snapshot, opens its run on the chosen
 * device, and reads what the chart draws from it. An overlay draws the curves alone: its
 * run builds no allocations list. */
static int load_file(void *ctx, int f, ms_snapshot **s, ms_error *err)
{
    const opts *o = ((load_ctx *)ctx)->o;
    inputs *in = ((load_ctx *)ctx)->in;
    size_t i = (size_t)f;
    in->snaps[i] = *s;
    *s = NULL;
    in->n = i + 1;
    int device = o->has_device ? (int)o->device : cli_busiest_device(in->snaps[i]);
    ms_run_options overlay_ro = {.timeline_flags = MS_TIMELINE_CURVES};
    /* The JSON shows the iterations whatever the axis; the time and events axes' images
     * need no pass over the trace for them. */
    unsigned needs = o->overlay ? 0 : msr_chart_run_needs(&o->spec) | (o->json ? MSR_CHART_RUN_AXIS : 0);
    if (ms_run_open(&in->runs[i], in->snaps[i], device, o->overlay ? &overlay_ro : NULL, err) ||
        msr_chart_source_from_run(&in->srcs[i], in->runs[i], in->labels[i], needs, err) ||
        (o->leaks && !o->overlay && msr_chart_leaks_from_run(&in->leaks[i], in->runs[i], err)))
        return 2;
    if (!o->overlay)
        in->srcs[i].group_rules = &o->rules;
    return 0;
}

/* One figure: panels on shared scales (each on its own run axis) or an overlay, as
 * every picture that compares files draws them (the report's ranks.png too). */
static int build_figure(const opts *o, const inputs *in, msr_chart_figure **fig)
{
    const msr_chart_highlight *hls[MAX_FILES] = {0};
    size_t n_hls[MAX_FILES] = {0};
    for (size_t i = 0; i < in->n; i++) {
        hls[i] = in->leaks[i].highlights;
        n_hls[i] = in->leaks[i].n;
    }
    msr_chart_figure_spec fs = {.chart = o->spec, .overlay = o->overlay, .width = (int)o->width,
                               .height = (int)o->height};
    if (o->leaks) {
        fs.highlights = hls;
        fs.n_highlights = n_hls;
    }
    ms_error err;
    ms_error_clear(&err);
    if (msr_chart_build_figure(fig, in->srcs, in->n, &fs, &err)) {
        cli_error(CMD, "%s", err.message);
        return 2;
    }
    return 0;
}

/* The image (or, with --format json, the model) of the figure. */
static int write_figure(const opts *o, msr_render_format format, const msr_chart_figure *fig)
{
    msr_chart *const *charts = fig->charts;
    if (o->json)
        return write_model(o->output, (const msr_chart *const *)charts, fig->n_charts,
                           (int)o->width, (int)o->height);
    char sources[1024] = ""; /* the image's Source text: the input files' names */
    for (size_t i = 0, at = 0; i < o->n_files && at < sizeof sources; i++)
        at += (size_t)snprintf(sources + at, sizeof sources - at, "%s%s", i ? ", " : "",
                               cli_basename(o->files[i]));
    ms_error err;
    ms_error_clear(&err);
    if (safe_out_render(o->output, (int)format, (int)o->width, (int)o->height,
                        (const msr_chart *const *)charts, fig->n_charts,
                        &(msr_image_meta){.source = sources}, &err)) {
        cli_error(CMD, "%s", err.message);
        return 2;
    }
    return 0;
}

int cmd_render(int argc, char **argv)
{
    opts o;
    bool help;
    int rc = parse(argc, argv, &o, &help);
    if (help || rc) {
        msr_chart_group_rules_free(&o.rules);
        if (help)
            usage(stdout);
        return help ? 0 : rc;
    }
    ms_error err;
    ms_error_clear(&err);
    msr_render_format format = MSR_RENDER_PNG;
    o.json = o.format && !strcmp(o.format, "json");
    if (!o.json && (o.format ? msr_render_format_from_name(o.format, &format, &err)
                             : msr_render_format_from_path(o.output, &format, &err))) {
        cli_error(CMD, "%s", err.message);
        msr_chart_group_rules_free(&o.rules);
        return 2;
    }
    inputs *in = calloc(1, sizeof *in);
    if (!in) {
        cli_error(CMD, "out of memory");
        msr_chart_group_rules_free(&o.rules);
        return 2;
    }
    cli_file_labels(o.files, o.n_files, in->labels);
    load_ctx lc = {&o, in};
    rc = cli_each_snapshot(CMD, (char *const *)o.files, (int)o.n_files,
                           o.has_device ? o.device : -1, true, load_file, &lc);
    msr_chart_figure *fig = NULL;
    if (!rc)
        rc = build_figure(&o, in, &fig);
    if (!rc)
        rc = write_figure(&o, format, fig);
    msr_chart_figure_free(fig);
    inputs_free(in);
    free(in);
    msr_chart_group_rules_free(&o.rules);
    return rc;
}
