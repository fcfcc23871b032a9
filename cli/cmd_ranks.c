/* memsnap ranks FILE...: one row per rank file against the median of all, so the rank
 * that runs out of memory first stands out before anyone opens a single snapshot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "term_text.h"
#include "commands.h"
#include "memsnap/compare.h"
#include "json/json_compare.h"
#include "summary_input.h"

static void usage(FILE *out)
{
    fputs("usage: memsnap ranks FILE... [--json] [--threshold PCT] [--fail] [--device N]\n"
          "                             [--top K] [--threads N]\n"
          "\n"
          "One row per file (the rank is taken from the file name: mem-3.pickle, rank3,\n"
          "ddp_rank1): peak, reserved peak, live memory at the end, time of the peak and\n"
          "the top site at the peak; the median of each column; and the files more than\n"
          "PCT percent from the median flagged as outliers, with the sites that make the\n"
          "difference. FILEs are snapshot pickles (gzip allowed) or JSON written by\n"
          "`memsnap summary --json`; pickles load in parallel.\n"
          "\n"
          "  --json          print JSON (docs/json.md)\n"
          "  --threshold P   percent from the median that flags an outlier (default 10)\n"
          "  --fail          exit 1 when any file is an outlier (CI gate)\n"
          "  --device N      compare device N (default: each file's busiest device)\n"
          "  --top K         sites listed per outlier (default 10)\n"
          "  --threads N     files loaded at once (default: one per CPU)\n",
          out);
}

static double peak_seconds(const ms_profile *p)
{
    return (double)(p->peak_time_us - p->t_first_us) / 1e6;
}

/* "845.5 MiB +21%*": value, distance from the median, and a star when it is an outlier. */
static void value_cell(const ms_delta *d, bool flagged, bool pair, char *buf, size_t cap)
{
    char v[48], pc[32] = "";
    ms_format_bytes(d->b, v, sizeof v);
    if (!pair) /* the "median" of two is their mean: a distance from it says nothing */
        pct_text(d, pc, sizeof pc);
    snprintf(buf, cap, "%12s %8s%s", v, pc, flagged ? "*" : " ");
}

/* "90.09 MiB in 1" (bytes held by how many leak findings), "none", or "unknown" for a
 * summary written before summaries carried leaks. */
static void leaks_cell(const ms_profile *p, char *buf, size_t cap)
{
    if (!p->leaks_known) {
        snprintf(buf, cap, "unknown");
        return;
    }
    if (!p->leaks.findings) {
        snprintf(buf, cap, "none");
        return;
    }
    char b[48];
    ms_format_bytes(p->leaks.bytes > INT64_MAX ? INT64_MAX : (int64_t)p->leaks.bytes, b, sizeof b);
    snprintf(buf, cap, "%s in %llu", b, (unsigned long long)p->leaks.findings);
}

/* The site lines under an outlier: the sites of the metric that made it one (at the
 * peak for the peak, at the end for live memory at the end), those that push it the way
 * it went first. Reserved memory is the allocator's cache and has no sites. */
static void print_outlier_sites(const ms_rank_row *row, int top)
{
    bool peak = row->outlier & MS_OUT_PEAK, end = !peak && (row->outlier & MS_OUT_LIVE_END);
    if (!peak && !end) {
        printf("      (reserved memory is the allocator's cache: no site holds it; see memsnap "
               "categories and oom for what it holds)\n");
        return;
    }
    if (end && !row->sites_end_known) {
        printf("      (sites alive at the end: not in a summary input)\n");
        return;
    }
    const ms_site_delta *sites = peak ? row->sites : row->sites_end;
    size_t n = peak ? row->n_sites : row->n_sites_end;
    int64_t dir = peak ? row->peak.delta : row->live_end.delta;
    size_t shown = 0;
    for (size_t s = 0; s < n && shown < 3 && shown < (size_t)top; s++) {
        const ms_site_delta *d = &sites[s];
        if ((dir > 0 && d->delta_bytes < 0) || (dir < 0 && d->delta_bytes > 0))
            continue;
        char dv[48], mv[48];
        signed_size_text(d->delta_bytes, dv, sizeof dv);
        ms_format_bytes(d->a_bytes, mv, sizeof mv);
        printf("      %12s %s vs the median %s: %s%s%s\n", dv, peak ? "at the peak" : "at the end",
               mv, cli_term(d->site), d->function[0] ? " " : "", cli_term(d->function));
        shown++;
    }
}

static void print_text(const ms_ranks *r, const char *const *labels, int top)
{
    size_t w = 4;
    for (size_t i = 0; i < r->n; i++) {
        size_t l = strlen(cli_term(labels[i]));
        w = l > w ? l : w;
    }
    if (w > 40)
        w = 40;
    int wi = (int)w;
    /* Said before the peaks are compared: a CUDA-graph replay allocates from a private
     * pool its peak leaves out. */
    bool said = false;
    for (size_t i = 0; i < r->n; i++) {
        const ms_profile *p = r->rows[i].p;
        if (!p->graphs.known || !p->graphs.pool_bytes)
            continue;
        char pool[32], fp[32];
        ms_format_bytes((int64_t)p->graphs.pool_bytes, pool, sizeof pool);
        ms_format_bytes(p->graphs.replay_footprint_bytes, fp, sizeof fp);
        printf("%s replays CUDA graphs: they allocate from the graph's private pool (%s), which "
               "its peak leaves out", cli_term(labels[i]), pool);
        if (p->graphs.replay_footprint_bytes > 0)
            printf("; a replay iteration holds %s with it", fp);
        printf("\n");
        said = true;
    }
    if (said)
        printf("\n");
    printf("%-*s %5s %4s %22s %22s %22s %9s %18s  %s\n", wi, "file", "rank", "dev", "peak",
           "reserved peak", "live at end", "peak at", "leaks", "top site at peak");
    for (size_t i = 0; i < r->n; i++) {
        const ms_rank_row *row = &r->rows[i];
        const ms_profile *p = row->p;
        char rank[16], c1[128], c2[128], c3[128], t[32], lk[64], site[600] = "-";
        if (p->rank >= 0)
            snprintf(rank, sizeof rank, "%d", p->rank);
        else
            snprintf(rank, sizeof rank, "-");
        value_cell(&row->peak, row->outlier & MS_OUT_PEAK, r->pair, c1, sizeof c1);
        value_cell(&row->reserved_peak, row->outlier & MS_OUT_RESERVED, r->pair, c2, sizeof c2);
        value_cell(&row->live_end, row->outlier & MS_OUT_LIVE_END, r->pair, c3, sizeof c3);
        if (p->has_times)
            snprintf(t, sizeof t, "%.2f s", peak_seconds(p));
        else /* no clock: never a made-up 0.00 s */
            snprintf(t, sizeof t, "event %lld", (long long)p->peak_event);
        leaks_cell(p, lk, sizeof lk);
        if (p->n_sites[MS_SITES_AT_PEAK]) {
            char b[48];
            const ms_profile_site *s = &p->sites[MS_SITES_AT_PEAK][0];
            ms_format_bytes((int64_t)s->bytes, b, sizeof b);
            snprintf(site, sizeof site, "%s %s (%s)", cli_term(s->site), cli_term(s->function), b);
        }
        printf("%-*.*s %5s %4d %22s %22s %22s %9s %18s  %s\n", wi, wi, cli_term(labels[i]), rank,
               p->device, c1, c2, c3, t, lk, site);
    }
    if (r->pair)
        return; /* the caller prints the pair's difference */
    char m1[48], m2[48], m3[48];
    ms_format_bytes(r->median_peak, m1, sizeof m1);
    ms_format_bytes(r->median_reserved_peak, m2, sizeof m2);
    ms_format_bytes(r->median_live_end, m3, sizeof m3);
    /* Padded like value_cell() without its percent, so the medians line up. */
    printf("%-*s %5s %4s %12s%10s %12s%10s %12s%10s\n", wi, "median", "", "", m1, "", m2, "",
           m3, "");

    if (r->n_outliers == 0) {
        printf("\nNo outliers: every file is within %g%% of the median.\n", r->threshold_pct);
        return;
    }
    printf("\nOutliers (* more than %g%% from the median): %zu of %zu file%s\n",
           r->threshold_pct, r->n_outliers, r->n, cli_plural((double)r->n));
    for (size_t i = 0; i < r->n; i++) {
        const ms_rank_row *row = &r->rows[i];
        if (!row->outlier)
            continue;
        printf("  %s:", cli_term(labels[i]));
        const char *sep = " ";
        for (size_t k = 0; k < COMPARE_OUTLIER_KEY_COUNT; k++) {
            if (!(row->outlier & COMPARE_OUTLIER_KEYS[k].bit))
                continue;
            const ms_delta *d = compare_row_metric(row, COMPARE_OUTLIER_KEYS[k].bit);
            char dv[48], pc[32];
            signed_size_text(d->delta, dv, sizeof dv);
            pct_text(d, pc, sizeof pc);
            const char *what = COMPARE_OUTLIER_KEYS[k].bit == MS_OUT_PEAK       ? "peak"
                               : COMPARE_OUTLIER_KEYS[k].bit == MS_OUT_RESERVED ? "reserved peak"
                                                                        : "live at end";
            printf("%s%s %s (%s)", sep, what, dv, pc);
            sep = ", ";
        }
        printf("\n");
        print_outlier_sites(row, top);
    }
}

/* Two files: their difference, as `memsnap diff` says it. */
static int print_pair(const ms_ranks *r)
{
    ms_pair *p = NULL;
    ms_error err;
    if (ms_pair_compare(&p, r->rows[0].p, r->rows[1].p, &err)) {
        cli_error("ranks", "%s", err.message);
        return 2;
    }
    char la[256], lb[256];
    compare_pair_labels(p, la, lb, sizeof la, "A", "B");
    char *verdict = compare_pair_verdict(p, la, lb);
    if (verdict)
        printf("\nTwo files are a pair, not a median and its outliers (memsnap diff compares "
               "them in full):\n%s\n", cli_term(verdict));
    free(verdict);
    ms_pair_free(p);
    return verdict ? 0 : 2;
}

static cJSON *ranks_json(const ms_ranks *r, compare_inputs *in, const char *const *labels,
                         int top)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *files = cJSON_AddArrayToObject(doc, "files");
    for (size_t i = 0; i < in->n; i++) {
        cJSON_AddItemToArray(files, in->v[i].file_json);
        in->v[i].file_json = NULL;
    }
    compare_ranks_fill(doc, r, labels, top);
    if (r->pair) {
        /* Two files: their difference as `diff --json` gives it, in place of outliers. */
        ms_pair *p = NULL;
        ms_error err;
        if (ms_pair_compare(&p, r->rows[0].p, r->rows[1].p, &err) == 0) {
            char la[256], lb[256];
            compare_pair_labels(p, la, lb, sizeof la, "A", "B");
            char *verdict = compare_pair_verdict(p, la, lb);
            cJSON_AddItemToObject(doc, "pair", compare_pair_json(p, 0, 1, la, lb, verdict, top));
            free(verdict);
            ms_pair_free(p);
        }
    }
    return doc;
}

int cmd_ranks(int argc, char **argv)
{
    const char *cmd = argv[0];
    compare_opts o;
    int rc = compare_opts_parse(cmd, argc, argv, &o);
    if (rc || o.help) {
        if (o.help)
            usage(stdout);
        compare_opts_free(&o);
        return rc;
    }
    if (o.n_files == 0) {
        cli_error(cmd, "needs at least one file");
        usage(stderr);
        compare_opts_free(&o);
        return 2;
    }

    compare_inputs in;
    rc = compare_inputs_load(cmd, o.files, o.n_files, o.device, o.json, o.top, o.threads, &in);
    if (rc) {
        compare_opts_free(&o);
        return rc;
    }
    const ms_profile **profiles = calloc(in.n, sizeof *profiles);
    char **labels = calloc(in.n, sizeof *labels);
    char *label_buf = calloc(in.n, 256);
    ms_ranks *r = NULL;
    ms_error err;
    if (!profiles || !labels || !label_buf) {
        cli_error(cmd, "out of memory");
        rc = 2;
        goto done;
    }
    for (size_t i = 0; i < in.n; i++) {
        profiles[i] = in.v[i].profile;
        labels[i] = label_buf + i * 256;
        /* The base name, not "rankN": two jobs' rank 0 may sit in one table. */
        snprintf(labels[i], 256, "%s", cli_basename(profiles[i]->name));
    }
    if (ms_ranks_compare(&r, profiles, in.n, o.threshold, &err)) {
        cli_error(cmd, "%s", err.message);
        rc = 2;
        goto done;
    }
    if (o.json)
        rc = cli_print_json(ranks_json(r, &in, (const char *const *)labels, o.top));
    else {
        print_text(r, (const char *const *)labels, o.top);
        if (r->pair)
            rc = print_pair(r);
    }
    if (rc == 0 && o.fail && r->n_outliers)
        rc = 1;
done:
    ms_ranks_free(r);
    free(profiles);
    free(labels);
    free(label_buf);
    compare_inputs_free(&in);
    compare_opts_free(&o);
    return rc;
}
