/* memsnap report FILE... -o DIR: turns snapshots into a CI artifact (index.html,
 * summary.md, summary.json, charts) and a pass/fail signal (the gates).
 *
 * The order matters: every analysis goes into one JSON document first; the gates, the
 * page and the Markdown are all read from that document, so what fails a build is
 * exactly what the page shows. The report is written whether the gates pass or not,
 * since a failed build is when people need it most. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "categories_json.h"
#include "chart_options.h"
#include "cli_util.h"
#include "commands.h"
#include "memsnap/version.h"
#include "options.h"
#include "report_cmd.h"
#include "summary_json.h"
#include "view_page.h"

#define CMD REPORT_CMD

static void usage(FILE *out)
{
    fputs("usage: memsnap report FILE... -o DIR [gates] [options]\n"
          "\n"
          "Writes DIR/index.html (one self-contained page: summary, active-memory chart with\n"
          "leaks marked, top sites at the peak, leaks, iterations, OOMs, and for several\n"
          "files the rank comparison), DIR/summary.md (Markdown for a CI job summary),\n"
          "DIR/summary.json (every number; docs/json.md), DIR/timeline-NAME.png and\n"
          "DIR/categories-NAME.png (the memory by category) per file, and DIR/ranks.png for\n"
          "several files. DIR is created when missing.\n"
          "\n"
          "gates (exit 1 when one fails; the report is written either way):\n"
          "  --max-peak SIZE      peak active memory of every device at most SIZE (e.g. 20GiB)\n"
          "  --max-reserved SIZE  peak reserved memory of every device at most SIZE\n"
          "  --fail-on-leaks[=SIZE]  fail when a file has a leak (memsnap leaks); with SIZE\n"
          "                       only when its leaked bytes or growth per iteration reach\n"
          "                       SIZE (--fail-on-leaks=1MiB)\n"
          "  --fail-on-oom        fail when a file has an OOM event (memsnap oom)\n"
          "  --baseline OLD       compare with OLD: a snapshot, a `summary --json` file, or\n"
          "                       a report's summary.json or directory\n"
          "  --max-growth PCT     with --baseline: peak at most PCT percent above OLD's\n"
          "\n"
          "options:\n"
          "  -o, --output DIR     report directory (required)\n"
          "  --title TEXT         page title (default: memsnap report)\n"
          "  --device N           only device N (default: every device; charts and\n"
          "                       comparisons use each file's busiest device)\n"
          "  --compare            compare the files side by side (ranks, outliers) even when\n"
          "                       their names are not ranks of one job\n"
          "  --no-compare         never compare them (by default ranks of one job are:\n"
          "                       ddp_rank0.pickle ddp_rank1.pickle)\n"
          "  --top K              sites listed per table (default 10)\n"
          "  --step NAME          annotation that marks one iteration (see memsnap leaks)\n"
          "  --iterations N       the number of iterations the trace holds\n"
          "  --x run|time         the interactive timeline's x axis: the run (default; idle\n"
          "                       stretches and slow set-up compressed into marked breaks)\n"
          "                       or linear time\n"
          "  --group NAME=REGEX   repeatable: the interactive timeline gets a by-group view\n"
          "                       with a band NAME for allocations with a frame\n"
          "                       \"file:line function\" matching REGEX (first rule wins)\n"
          "  -h, --help           this text\n"
          "\n"
          "Exit status: 0 all gates passed, 1 a gate failed (one line per failed gate),\n"
          "2 usage error or unreadable input.\n",
          out);
}

static int parse(int argc, char **argv, report_opts *o, bool *help)
{
    memset(o, 0, sizeof *o);
    *help = false;
    o->files = calloc((size_t)argc + 1, sizeof *o->files);
    if (!o->files) {
        cli_error(CMD, "out of memory");
        return 2;
    }
    long long device = -1, top = 10, iterations = 0;
    int x = -1;
    const cli_option table[] = {
        {CLI_CHOICE("--x", &x, CLI_PAGE_X_MODES)},
        {CLI_CALLBACK("--group", cli_add_group_rule, &o->groups)},
        {CLI_SIZE_OPTIONAL("--fail-on-leaks", &o->fail_on_leaks_bytes, &o->fail_on_leaks)},
        {CLI_FLAG("--fail-on-oom", &o->fail_on_oom)},
        {CLI_FLAG("--compare", &o->compare)},
        {CLI_FLAG("--no-compare", &o->no_compare)},
        {CLI_OUTPUT(&o->out_dir)},
        {CLI_STRING("--title", &o->title)},
        {CLI_STRING("--step", &o->step_name)},
        {CLI_STRING("--baseline", &o->baseline)},
        {CLI_SIZE("--max-peak", &o->max_peak), .seen = &o->has_max_peak},
        {CLI_SIZE("--max-reserved", &o->max_reserved), .seen = &o->has_max_reserved},
        {CLI_NUMBER("--max-growth", &o->max_growth), .seen = &o->has_max_growth},
        {CLI_DEVICE(&device)},
        {CLI_INT("--top", &top, 1, 1000)},
        {CLI_ITERATIONS(&iterations)},
    };
    int rc = CLI_PARSE(CMD, argc, argv, table, o->files, &o->n_files);
    if (rc == CLI_HELP) {
        *help = true;
        return 0;
    }
    if (rc)
        return rc;
    o->x_time = x == 1;
    o->device = (int)device;
    o->top = (int)top;
    o->iterations = (uint32_t)iterations;
    if (o->n_files == 0) {
        cli_error(CMD, "no input file (see memsnap report --help)");
        return 2;
    }
    if (!o->out_dir) {
        cli_error(CMD, "no output directory: add -o DIR");
        return 2;
    }
    if (o->has_max_growth && !o->baseline) {
        cli_error(CMD, "--max-growth needs --baseline OLD to measure growth against");
        return 2;
    }
    if (o->compare && o->no_compare) {
        cli_error(CMD, "--compare and --no-compare contradict each other");
        return 2;
    }
    return 0;
}

/* Files are ranks of one job when each name holds a rank (ms_rank_from_name), no two the
 * same, and the names are the same apart from their digits (ddp_rank0.pickle,
 * ddp_rank1.pickle): their medians and outliers mean something. Two unrelated runs
 * side by side would make a verdict of their differences; before/after is --baseline. */
static bool ranks_of_one_job(char *const *files, size_t n, const char **why)
{
    char stem0[512] = "";
    for (size_t i = 0; i < n; i++) {
        int rank = ms_rank_from_name(files[i]);
        if (rank < 0) {
            *why = "a file name holds no rank";
            return false;
        }
        for (size_t j = 0; j < i; j++)
            if (ms_rank_from_name(files[j]) == rank) {
                *why = "two files hold the same rank";
                return false;
            }
        char stem[512];
        size_t k = 0;
        for (const char *c = cli_basename(files[i]); *c && k + 1 < sizeof stem; c++)
            if (*c < '0' || *c > '9')
                stem[k++] = *c;
        stem[k] = 0;
        if (i == 0) {
            memcpy(stem0, stem, k + 1);
        } else if (strcmp(stem, stem0)) {
            *why = "the file names differ beyond their rank";
            return false;
        }
    }
    return true;
}

static int file_sections(const report_opts *o, file_state *f, int device, bool compared,
                         cJSON *files_json, cJSON **fj_out, report_devices *rd)
{
    ms_error err;
    ms_error_clear(&err);
    const ms_snapshot *s = f->snap;
    cJSON *fj = summary_file_head_json(f->path, s);
    cJSON_AddItemToArray(files_json, fj);
    *fj_out = fj;
    cJSON *devices = cJSON_AddArrayToObject(fj, "devices");
    /* The profile's sites and peaks serve only comparisons (other files, a baseline);
     * without them it names the file and takes the leak findings. */
    if (compared ? ms_profile_from_run(&f->profile, f->run, f->path, &err)
                 : ms_profile_new(&f->profile, f->path, &err)) {
        cli_error(CMD, "%s: %s", f->path, err.message);
        return 2;
    }
    if (report_devices_build(rd, devices, s, o, f->run, f->profile, &err)) {
        cli_error(CMD, "%s: %s", f->path, err.message);
        return 2;
    }
    ms_profile_label(f->profile, f->label, sizeof f->label);
    cJSON_AddStringToObject(fj, "label", f->label);
    cJSON_AddNumberToObject(fj, "chart_device", device);
    cJSON_AddItemToObject(fj, "leaks", rd->leaks);
    rd->leaks = NULL;

    /* What the memory is, on the charted device (docs/json.md, report: categories); the
     * one categorisation serves the table, the chart by category and the page's view. */
    cat_query cq = {device, NULL, 0, false, 3};
    /* What the leak findings hold at the end: the run's, as the leaks section reports. */
    const ms_leak_report *lr = NULL;
    ms_error soft;
    if (ms_run_leaks(&lr, f->run, &soft))
        lr = NULL;
    ms_free_in_reserved pf;
    bool have_pf = ms_run_peak_free(&pf, f->run, &soft) == 0;
    cJSON_AddItemToObject(fj, "categories",
                          categories_json_of(s, device, f->cats, lr, &cq, have_pf ? &pf : NULL));
    return 0;
}

/* The charts take a thread of their own from this size of file up. Drawing them holds
 * about 15 MB whatever the file (the 1600 x 800 picture, a chart of the whole trace, the
 * chart by category): beside the view's replay of the allocator, that took an OOM after
 * each of 300,000 never-freed allocations (21 MB) from 82 MB to 98 MB, past issue 34's
 * 4x the file. From 64 MiB it is under a quarter of the file; a smaller file draws them
 * in turn, in a few tenths of a second at most. */
#define REPORT_THREAD_MIN_BYTES ((uint64_t)64 << 20)

/* One file, read and checked for the device by the shared loop (cli_each_snapshot); the
 * report keeps its snapshot until the pages are written. */
static int analyse_file(const report_opts *o, size_t index, file_state *f, cJSON *files_json,
                        const char *const *taken, bool keep, bool compared)
{
    int rc = 0;
    ms_snapshot *s = f->snap;
    ms_error err;
    ms_error_clear(&err);
    /* One run of the charted device serves the summary, the comparison profile, the
     * charts, the leaks and the OOMs, so every part of the report reads one analysis
     * (with the user's --step / --iterations throughout). */
    int device = o->device >= 0 ? o->device : cli_busiest_device(s);
    ms_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.iter.step_name = o->step_name;
    ro.iter.expected = o->iterations;
    ro.oom_top_sites = (size_t)o->top;
    if (ms_run_open(&f->run, s, device, &ro, &err) || ms_run_timeline(&f->tl, f->run, &err)) {
        cli_error(CMD, "%s: %s", f->path, err.message);
        return 2;
    }
    /* The timeline as a PNG alone (for Markdown and CI artifacts): the page shows the
     * interactive view instead of the same chart as SVG. The charts are drawn on a
     * second thread, which first finds the leak findings while this one categorises,
     * then draws while this one writes the summary's sections and builds the view. */
    report_png_name(f->path, taken, index, f->png, sizeof f->png);
    snprintf(f->cat_png, sizeof f->cat_png, "categories-%s", f->png + strlen("timeline-"));
    chart_job job;
    memset(&job, 0, sizeof job);
    job.o = o;
    job.f = f;
    job.png_path = report_join(o->out_dir, f->png);
    job.cat_png_path = report_join(o->out_dir, f->cat_png);
    pthread_t th;
    if (cli_limits()->threads != 1 && ms_snapshot_input_bytes(s) >= REPORT_THREAD_MIN_BYTES &&
        ms_run_prepare_threads(f->run, &err) == 0)
        report_charts_start(&job, &th);
    /* The categorisation before the sections: the summary's peak by category and the
     * phases are read from it, so the trace is cut into phases once. */
    ms_error_clear(&err);
    rc = ms_run_categories(&f->cats, f->run, &err);
    /* The charts' run axis (iterations, idle stretches, shape), built here so the chart
     * thread only reads the run. */
    const ms_idle *idle = NULL;
    if (!rc)
        rc = ms_run_idle(&idle, f->run, &err);
    /* And the rest of what the chart reads from the run (render/chart_run.c): a getter
     * builds on its first request, unlocked, so two threads asking first would both
     * build it (crafted_annotation_storm leaked 8 MB of ranges that way under ASan). */
    const ms_annotation_range *ranges = NULL;
    size_t n_ranges = 0;
    const ms_phases *phases = NULL;
    if (!rc)
        rc = ms_run_annotation_ranges(&ranges, &n_ranges, f->run, &err);
    if (!rc && msr_chart_phases_needed(ranges, n_ranges))
        rc = ms_run_phases(&phases, f->run, &err);
    if (rc) {
        cli_error(CMD, "%s: %s", f->path, err.message);
        rc = 2;
    }
    if (job.threaded) {
        job.cats_ok = rc == 0;
        report_job_signal(&job, &job.cats_done);
        report_job_wait(&job, &job.leaks_done);
    }
    cJSON *fj = NULL;
    report_devices rd;
    memset(&rd, 0, sizeof rd);
    if (!rc)
        rc = file_sections(o, f, device, compared, files_json, &fj, &rd);
    if (job.threaded)
        report_job_signal(&job, &job.sections_done);
    if (!rc && !job.threaded)
        report_draw_charts(&job);
    /* The page's timeline, the interactive one. Several files share about one file's
     * budget, so the page stays one download. */
    size_t budget = o->n_files > 1 ? (size_t)9 * 1024 * 1024 / o->n_files : 0;
    if (budget && budget < (size_t)1024 * 1024)
        budget = (size_t)1024 * 1024;
    view_opts vo = {o->step_name, o->iterations, true, budget, o->x_time, &o->groups};
    ms_error view_err;
    ms_error_clear(&view_err);
    int view_rc = 0;
    if (!rc && (job.threaded || !job.rc))
        view_rc = view_chart_json(&f->view, f->run, cli_basename(f->path), &vo, NULL, NULL,
                                  &view_err);
    if (job.threaded)
        report_charts_join(&job, th);
    if (!rc)
        rc = report_charts_done(&job, index, f, fj);
    free(job.png_path);
    free(job.cat_png_path);
    free(job.cat_svg);
    /* Errors are told in the order the parts are written: charts, OOMs, the view. */
    if (!rc && report_oom_file(fj, o, index, &rd, &f->oom_svg, &err)) {
        cli_error(CMD, "%s: oom: %s", f->path, err.message);
        rc = 2;
    }
    report_devices_free(&rd);
    if (rc)
        return rc;
    if (view_rc) {
        cli_error(CMD, "%s: interactive chart: %s", f->path, view_err.message);
        return 2;
    }
    if (!keep) {
        ms_run_free(f->run);
        f->run = NULL;
        f->cats = NULL;
        f->tl = NULL;
        ms_snapshot_free(f->snap);
        f->snap = NULL;
    }
    return 0;
}

/* What each file's step of the loop reads and fills. */
typedef struct report_loop {
    const report_opts *o;
    file_state *fs;
    cJSON *files_json;
    const char **taken, **oom_svgs, **views, **cat_svgs;
    bool keep, compared;
} report_loop;

static int report_step(void *ctx, int f, ms_snapshot **s, ms_error *err)
{
    (void)err; /* analyse_file tells its own failures */
    report_loop *l = ctx;
    size_t i = (size_t)f;
    file_state *fi = &l->fs[i];
    fi->path = l->o->files[i];
    fi->snap = *s;
    *s = NULL;
    int rc = analyse_file(l->o, i, fi, l->files_json, l->taken, l->keep, l->compared);
    l->taken[i] = fi->png;
    l->oom_svgs[i] = fi->oom_svg;
    l->views[i] = fi->view;
    l->cat_svgs[i] = fi->cat_svg;
    return rc;
}

int cmd_report(int argc, char **argv)
{
    report_opts o;
    bool help;
    int rc = parse(argc, argv, &o, &help);
    if (help) {
        usage(stdout);
        free(o.files);
        msr_chart_group_rules_free(&o.groups);
        return 0;
    }
    /* DIR made as mkdir -p does; what the run makes goes again if it fails. */
    if (!rc)
        rc = report_dir_begin(&o);
    if (rc) {
        free(o.files);
        msr_chart_group_rules_free(&o.groups);
        return rc;
    }

    size_t n = o.n_files;
    file_state *fs = calloc(n, sizeof *fs);
    const char **taken = calloc(n, sizeof *taken);
    cJSON *doc = cJSON_CreateObject();
    char *cmp_svg = NULL;
    const char **oom_svgs = calloc(n, sizeof *oom_svgs);
    const char **views = calloc(n, sizeof *views);
    const char **cat_svgs = calloc(n, sizeof *cat_svgs);
    if (!fs || !taken || !doc || !oom_svgs || !views || !cat_svgs) {
        cli_error(CMD, "out of memory");
        rc = 2;
        goto done;
    }
    cJSON_AddStringToObject(doc, "title", o.title ? o.title : "memsnap report");
    cJSON_AddStringToObject(doc, "memsnap_version", MS_VERSION_STRING);
    cJSON *files_json = cJSON_AddArrayToObject(doc, "files");
    /* Side by side only what is comparable (or what --compare asks for). */
    const char *why_not = NULL;
    bool compare = n > 1 && !o.no_compare &&
                   (o.compare || ranks_of_one_job(o.files, n, &why_not));
    if (n > 1 && o.no_compare)
        why_not = "--no-compare";
    bool keep = compare && n <= MAX_CHART_FILES;
    report_loop loop = {&o, fs, files_json, taken, oom_svgs, views, cat_svgs, keep,
                        compare || o.baseline};
    rc = cli_each_snapshot(CMD, (char *const *)o.files, (int)n, o.device, true, report_step,
                           &loop);
    if (!rc && compare) {
        cJSON *cmp = report_compare_files(&o, fs, n, &cmp_svg, &rc);
        if (cmp)
            cJSON_AddItemToObject(doc, "comparison", cmp);
    } else if (!rc) {
        cJSON_AddNullToObject(doc, "comparison");
        /* Why several files were not compared, so a reader knows how to ask for it. */
        if (why_not)
            cJSON_AddStringToObject(doc, "comparison_skipped", why_not);
    }
    if (!rc && o.baseline) {
        cJSON *b = report_compare_baseline(&o, fs, n, &rc);
        if (b)
            cJSON_AddItemToObject(doc, "baseline", b);
    } else if (!rc) {
        cJSON_AddNullToObject(doc, "baseline");
    }
    if (!rc && o.fail_on_leaks) {
        const cJSON *f;
        cJSON_ArrayForEach(f, files_json)
        {
            if (!cJSON_GetObjectItemCaseSensitive(f, "leaks")) {
                cli_error(CMD, "--fail-on-leaks: this build has no leak analysis");
                rc = 2;
                break;
            }
        }
    }
    size_t failed = 0;
    cJSON *gates = NULL;
    if (!rc) {
        gates = report_gates(doc, &o, &failed);
        if (!gates) {
            cli_error(CMD, "out of memory");
            rc = 2;
        } else {
            cJSON_AddItemToObject(doc, "gates", gates);
        }
    }
    if (!rc) {
        report_svgs sv = {n, cmp_svg, oom_svgs, views, cat_svgs};
        rc = report_write_all(&o, doc, &sv);
    }
    if (!rc)
        rc = report_print_written(&o, fs, n, doc, cmp_svg != NULL, gates, failed);
done:
    report_dir_end(rc);
    for (size_t i = 0; fs && i < n; i++) {
        ms_run_free(fs[i].run);
        ms_snapshot_free(fs[i].snap);
        ms_profile_free(fs[i].profile);
        free(fs[i].cat_svg);
        free(fs[i].oom_svg);
        free(fs[i].view);
    }
    free(fs);
    free(views);
    free(cat_svgs);
    free(taken);
    free(oom_svgs);
    free(cmp_svg);
    cJSON_Delete(doc);
    free(o.files);
    msr_chart_group_rules_free(&o.groups);
    return rc;
}
