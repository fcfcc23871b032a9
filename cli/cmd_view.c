/* memsnap view FILE... -o view.html: the report's interactive timeline alone, one chart
 * per file, in one page that needs nothing but itself. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chart.h"
#include "chart_options.h"
#include "cli_util.h"
#include "commands.h"
#include "options.h"
#include "safe_output.h"
#include "view_page.h"

#define CMD "view"
#define MAX_FILES 64

static void usage(FILE *out)
{
    fputs("usage: memsnap view FILE... -o OUT.html [options]\n"
          "\n"
          "Writes one self-contained HTML page with the active-memory timeline of each file,\n"
          "the chart memsnap render draws, made interactive: hover a band for its allocation\n"
          "(site, size, when it was allocated and freed, its iteration), click it for its\n"
          "stack trace, drag to zoom (the page holds the chart at several levels of detail,\n"
          "computed here), double-click to zoom out, click an annotation or iteration to zoom\n"
          "to it; buttons switch the bands between allocations, sites and categories\n"
          "(parameter, optimizer state, gradient, ...: memsnap categories). The page loads\n"
          "nothing from the network and works from a file:// URL.\n"
          "\n"
          "options:\n"
          "  -o, --output PATH    page to write (required)\n"
          "  --device N           device to chart (default: the one with the most events)\n"
          "  --title TEXT         page title (default: memsnap view)\n"
          "  --budget SIZE        chart data per file, e.g. 4MiB (default 9MiB); fewer levels\n"
          "                       of detail fit in less\n"
          "  --no-leaks           do not outline the allocations memsnap leaks blames\n"
          "  --step NAME          annotation that marks one iteration (see memsnap leaks)\n"
          "  --iterations N       the number of iterations the trace holds\n"
          "  --x run|time         x axis: the run (default; idle stretches and slow set-up\n"
          "                       compressed into marked breaks that say how long they\n"
          "                       lasted, zoomable across) or linear time\n"
          "  --group NAME=REGEX   repeatable: adds a by-group view, a band NAME for the\n"
          "                       allocations with a frame \"file:line function\" matching\n"
          "                       REGEX (PCRE2; first rule wins; the rest is other)\n"
          "  -h, --help           this text\n"
          "\n"
          "Exit status: 0 written, 2 usage error or unreadable input.\n",
          out);
}

typedef struct opts {
    const char *files[MAX_FILES];
    size_t n_files;
    const char *output, *title;
    bool has_device;
    long long device;
    view_opts v;
    msr_chart_group_rules groups;
} opts;

static int parse(int argc, char **argv, opts *o, bool *help)
{
    memset(o, 0, sizeof *o);
    o->v.leaks = true;
    *help = false;
    long long iterations = 0;
    uint64_t budget = 0;
    bool has_budget = false;
    int x = -1;
    const cli_option table[] = {
        {CLI_CHOICE("--x", &x, CLI_PAGE_X_MODES)},
        {CLI_CALLBACK("--group", cli_add_group_rule, &o->groups)},
        {CLI_OUTPUT(&o->output)},
        {CLI_STRING("--title", &o->title)},
        {CLI_STRING("--step", &o->v.step_name)},
        {CLI_UNSET("--no-leaks", &o->v.leaks)},
        {CLI_DEVICE(&o->device), .seen = &o->has_device},
        {CLI_ITERATIONS(&iterations)},
        {CLI_SIZE("--budget", &budget), .seen = &has_budget},
    };
    int rc = CLI_PARSE_MAX(CMD, argc, argv, table, o->files, &o->n_files);
    if (rc == 0 && has_budget && (budget < 65536 || budget > ((uint64_t)1 << 30))) {
        cli_error(CMD, "--budget must be between 64KiB and 1GiB");
        rc = 2;
    }
    if (rc == CLI_HELP) {
        *help = true;
        return 0;
    }
    if (rc)
        return rc;
    o->v.iterations = (uint32_t)iterations;
    o->v.x_time = x == 1;
    o->v.groups = &o->groups;
    o->v.budget = (size_t)budget;
    if (o->n_files == 0) {
        cli_error(CMD, "no input file (see memsnap view --help)");
        return 2;
    }
    if (!o->output) {
        cli_error(CMD, "no output page: add -o OUT.html");
        return 2;
    }
    return 0;
}

/* The files' chart data, one file at a time through cli_each_file (its snapshot is freed
 * before the next is read); the per-file object it collects says only that the file is
 * done. */
typedef struct view_files {
    const opts *o;
    char **json;
    size_t next;
} view_files;

static cJSON *file_json(void *ctx, const char *path, const ms_snapshot *s, ms_error *err,
                        int *rc)
{
    (void)rc;
    view_files *vf = ctx;
    const opts *o = vf->o;
    int device = o->has_device ? (int)o->device : cli_busiest_device(s);
    ms_run *run = NULL;
    ms_run_options ro = {{o->v.step_name, o->v.iterations, false}, 0, 0, 0};
    cJSON *done = NULL;
    if (!ms_run_open(&run, s, device, &ro, err) &&
        !view_chart_json(&vf->json[vf->next], run, cli_basename(path), &o->v, NULL, NULL,
                         err) &&
        !(done = cJSON_CreateObject())) {
        err->code = MS_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory");
    }
    vf->next++;
    ms_run_free(run);
    return done;
}

int cmd_view(int argc, char **argv)
{
    opts o;
    bool help;
    int rc = parse(argc, argv, &o, &help);
    if (help || rc) {
        msr_chart_group_rules_free(&o.groups);
        if (help)
            usage(stdout);
        return rc;
    }
    char *json[MAX_FILES] = {0};
    const char *labels[MAX_FILES];
    cli_file_labels(o.files, o.n_files, labels);
    view_files vf = {&o, json, 0};
    cJSON *done = NULL;
    rc = cli_each_file(CMD, (char *const *)o.files, (int)o.n_files, o.has_device ? o.device : -1,
                       true, file_json, &vf, &done);
    cJSON_Delete(done);
    if (!rc) {
        /* Never through a link, onto a FIFO or half-written over the old page
         * (safe_output.h). */
        char why[300];
        safe_out so;
        if (safe_out_not_input(o.output, o.files, o.n_files, why, sizeof why) ||
            safe_out_open(&so, o.output, why, sizeof why)) {
            cli_error(CMD, "%s", why);
            rc = 2;
        } else {
            FILE *f = safe_out_file(&so);
            int bad = !f || view_write_page(f, o.title ? o.title : "memsnap view",
                                            (const char *const *)json, labels, o.n_files);
            if (bad) {
                cli_error(CMD, "%s: write failed: %s", o.output,
                          strerror(so.write_errno ? so.write_errno : errno ? errno : EIO));
                safe_out_abort(&so);
                rc = 2;
            } else if (safe_out_commit(&so, why, sizeof why)) {
                cli_error(CMD, "%s", why);
                rc = 2;
            }
        }
    }
    for (size_t i = 0; i < o.n_files; i++)
        free(json[i]);
    msr_chart_group_rules_free(&o.groups);
    return rc;
}
