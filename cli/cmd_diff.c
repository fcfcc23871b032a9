/* memsnap diff A B: two files side by side (two ranks, or one run before and after a
 * change). With three files or more it is the ranks table. */
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
    fputs("usage: memsnap diff A B [--json] [--device N] [--top K] [--threads N]\n"
          "       memsnap diff FILE FILE FILE... [options of `memsnap ranks`]\n"
          "\n"
          "Compares B with A: peak (bytes and time), reserved peak, live memory at the end,\n"
          "allocation count and OOMs, each with B-A in bytes and percent; the allocation\n"
          "sites ranked by the change in bytes they hold at each file's peak and at the\n"
          "end; the sites found in one file only; and a verdict in plain words.\n"
          "A and B are snapshot pickles (gzip allowed) or JSON written by\n"
          "`memsnap summary --json`. Three files or more print the ranks table.\n"
          "\n"
          "  --json        print JSON (docs/json.md)\n"
          "  --device N    compare device N (default: each file's busiest device)\n"
          "  --top K       sites listed per section (default 10)\n"
          "  --threads N   files loaded at once (default: one per CPU)\n",
          out);
}

static const char *const ROW_NAMES[MS_M_COUNT] = {
    "peak",           "time of peak",     "reserved peak", "reserved at end",
    "live at end",    "live allocations", "allocations",   "OOMs",
    "events",
};

static bool metric_is_bytes(int m)
{
    return m == MS_M_PEAK || m == MS_M_RESERVED_PEAK || m == MS_M_RESERVED_END ||
           m == MS_M_LIVE_END;
}

static void cell(int m, int64_t v, bool signed_delta, char *buf, size_t cap)
{
    if (metric_is_bytes(m)) {
        if (signed_delta)
            signed_size_text(v, buf, cap);
        else
            ms_format_bytes(v, buf, cap);
    } else if (m == MS_M_PEAK_TIME) {
        snprintf(buf, cap, signed_delta && v ? "%+.2f s" : "%.2f s", (double)v / 1e6);
    } else {
        snprintf(buf, cap, signed_delta && v ? "%+lld" : "%lld", (long long)v);
    }
}

static void print_moved(const ms_site_delta *d);

static void print_sites(const char *title, const ms_site_delta *d, size_t n, bool known,
                        bool complete, int top, const char *la, const char *lb)
{
    if (!known) {
        printf("\n%s: not available (a summary input has no such list)\n", title);
        return;
    }
    size_t shown = n < (size_t)top ? n : (size_t)top;
    size_t changed = 0, moved = 0;
    for (size_t i = 0; i < n; i++) {
        changed += d[i].delta_bytes != 0;
        moved += d[i].b_site != NULL;
    }
    printf("\n%s: %zu changed", title, changed);
    if (moved)
        printf(", %zu moved", moved);
    printf("%s",
           complete ? "" : " (from summaries' top sites: a site missing on one side may be "
                           "below its cut)");
    if (n == 0) {
        printf("\n");
        return;
    }
    printf(shown < n ? ", top %zu\n" : "\n", shown);
    printf("  %12s %12s %12s  %s\n", "B-A", cli_term(la), cli_term(lb), "site");
    for (size_t i = 0; i < shown; i++) {
        char b0[48], b1[48], b2[48];
        signed_size_text(d[i].delta_bytes, b0, sizeof b0);
        ms_format_bytes(d[i].a_bytes, b1, sizeof b1);
        ms_format_bytes(d[i].b_bytes, b2, sizeof b2);
        printf("  %12s %12s %12s  %s %s", b0, b1, b2, cli_term(d[i].site), cli_term(d[i].function));
        print_moved(&d[i]);
    }
}

/* " (moved :35 → :47)" after a site whose line moved, then the line's end. */
static void print_moved(const ms_site_delta *d)
{
    char mv[2100];
    ms_site_moved_format(d->site, d->b_site, mv, sizeof mv);
    printf(mv[0] ? " (%s)\n" : "%s\n", cli_term(mv));
}

/* The sites that moved, over the whole run (the set only_in_a/b are judged on). */
static void print_moved_sites(const ms_site_delta *d, size_t n, int top, const char *la,
                              const char *lb)
{
    if (n == 0)
        return;
    size_t shown = n < (size_t)top ? n : (size_t)top;
    printf("\nSites that moved (same file, function and callers, another line): %zu%s\n", n,
           shown < n ? ", largest shown" : "");
    printf("  %12s %12s  %s\n", cli_term(la), cli_term(lb), "site");
    for (size_t i = 0; i < shown; i++) {
        char b1[48], b2[48];
        ms_format_bytes(d[i].a_bytes, b1, sizeof b1);
        ms_format_bytes(d[i].b_bytes, b2, sizeof b2);
        printf("  %12s %12s  %s %s", b1, b2, cli_term(d[i].site), cli_term(d[i].function));
        print_moved(&d[i]);
    }
}

static void print_only(const char *label, const ms_site_delta *d, size_t n, bool side_b,
                       int top)
{
    if (n == 0)
        return;
    size_t shown = n < (size_t)top ? n : (size_t)top;
    printf("\nSites only in %s: %zu%s\n", cli_term(label), n, shown < n ? ", largest shown" : "");
    for (size_t i = 0; i < shown; i++) {
        char b[48];
        ms_format_bytes(side_b ? d[i].b_bytes : d[i].a_bytes, b, sizeof b);
        unsigned long long c = side_b ? d[i].b_count : d[i].a_count;
        printf("  %12s in %6llu allocation%s  %s %s\n", b, c, c == 1 ? " " : "s", cli_term(d[i].site),
               cli_term(d[i].function));
    }
}

/* The leak totals of `memsnap leaks` as three rows; a side read from a summary without
 * them shows "unknown" rather than a made-up zero. */
static void print_leaks(const ms_pair *p)
{
    const ms_profile *side[2] = {p->a, p->b};
    if (!side[0]->leaks_known && !side[1]->leaks_known)
        return;
    static const char *const names[3] = {"leak findings", "leaked", "leak growth/iter"};
    const ms_delta *deltas[3] = {&p->leak_findings, &p->leak_bytes, &p->leak_growth};
    for (int r = 0; r < 3; r++) {
        char v[2][48], d[48] = "", pc[32] = "";
        for (int k = 0; k < 2; k++) {
            const ms_profile *x = side[k];
            if (!x->leaks_known)
                snprintf(v[k], sizeof v[k], "unknown");
            else if (r == 0)
                snprintf(v[k], sizeof v[k], "%llu", (unsigned long long)x->leaks.findings);
            else
                ms_format_bytes(k ? deltas[r]->b : deltas[r]->a, v[k], sizeof v[k]);
        }
        if (p->leaks_known) {
            if (r == 0)
                snprintf(d, sizeof d, deltas[r]->delta ? "%+lld" : "%lld",
                         (long long)deltas[r]->delta);
            else
                signed_size_text(deltas[r]->delta, d, sizeof d);
            pct_text(deltas[r], pc, sizeof pc);
        }
        printf("%-18s %14s %14s %14s %8s\n", names[r], v[0], v[1], d, pc);
    }
}

/* Where each peak falls in its run, not when: ranks start recording at different times,
 * so a difference of wall-clock offsets measures those starts. */
static void print_place(const ms_pair *p)
{
    const ms_peak_place *x = &p->a->peak_place, *y = &p->b->peak_place;
    char a[48], b[48], d[48];
    for (int k = 0; k < 2; k++) {
        const ms_peak_place *q = k ? y : x;
        char *out = k ? b : a;
        if (q->iteration)
            snprintf(out, 48, "%s%u of %u", q->unfinished ? "unfinished " : "", q->iteration,
                     q->iterations);
        else
            snprintf(out, 48, "%s", q->iterations ? "outside" : "none");
    }
    if (x->iteration && y->iteration && x->iteration != y->iteration)
        snprintf(d, sizeof d, "%+lld", (long long)y->iteration - (long long)x->iteration);
    else
        snprintf(d, sizeof d, "%s", strcmp(a, b) ? "differs" : "same");
    printf("%-18s %14s %14s %14s %8s\n", "peak in iteration", a, b, d, "");
    snprintf(a, sizeof a, "%s", x->phase >= 0 ? ms_phase_kind_text((ms_phase_kind)x->phase) : "-");
    snprintf(b, sizeof b, "%s", y->phase >= 0 ? ms_phase_kind_text((ms_phase_kind)y->phase) : "-");
    printf("%-18s %14s %14s %14s %8s\n", "peak in phase", a, b, strcmp(a, b) ? "differs" : "same", "");
}

static void print_text(const ms_pair *p, const char *la, const char *lb, const char *verdict,
                       int top)
{
    /* The labels head the columns below; A and B say which file is which. */
    printf("A  %s, device %d%s%s%s\n", cli_term(p->a->name), p->a->device,
           strcmp(la, "A") ? " (" : "", strcmp(la, "A") ? cli_term(la) : "",
           strcmp(la, "A") ? ")" : "");
    printf("B  %s, device %d%s%s%s\n\n", cli_term(p->b->name), p->b->device,
           strcmp(lb, "B") ? " (" : "", strcmp(lb, "B") ? cli_term(lb) : "",
           strcmp(lb, "B") ? ")" : "");
    /* Said before any row calls one of them lower: replays allocate from a pool the
     * peak leaves out. */
    for (int k = 0; k < 2; k++) {
        const ms_profile *x = k ? p->b : p->a;
        if (!x->graphs.known || !x->graphs.pool_bytes)
            continue;
        char pool[32], fp[32];
        ms_format_bytes((int64_t)x->graphs.pool_bytes, pool, sizeof pool);
        ms_format_bytes(x->graphs.replay_footprint_bytes, fp, sizeof fp);
        printf("%s  replays CUDA graphs: they allocate from the graph's private pool (%s), which "
               "its peak leaves out", k ? "B" : "A", pool);
        if (x->graphs.replay_footprint_bytes > 0)
            printf("; a replay iteration holds %s with it", fp);
        printf("\n");
        if (k == 1 || !(p->b->graphs.known && p->b->graphs.pool_bytes))
            printf("\n");
    }
    printf("%-18s %14s %14s %14s %8s\n", "", cli_term(la), cli_term(lb), "B-A", "change");
    bool places = p->a->peak_place.known && p->b->peak_place.known;
    for (int m = 0; m < MS_M_COUNT; m++) {
        char a[48], b[48], d[48], pc[32];
        if (m == MS_M_PEAK_TIME && places) {
            print_place(p);
            continue;
        }
        cell(m, p->m[m].a, false, a, sizeof a);
        cell(m, p->m[m].b, false, b, sizeof b);
        cell(m, p->m[m].delta, true, d, sizeof d);
        if (m == MS_M_PEAK_TIME && !(p->a->has_times && p->b->has_times)) {
            /* A trace without times has no time of the peak. */
            if (!p->a->has_times)
                snprintf(a, sizeof a, "no times");
            if (!p->b->has_times)
                snprintf(b, sizeof b, "no times");
            snprintf(d, sizeof d, "unknown");
        }
        if (m == MS_M_PEAK_TIME)
            pc[0] = '\0'; /* a percent of a point in time means nothing */
        else
            pct_text(&p->m[m], pc, sizeof pc);
        printf("%-18s %14s %14s %14s %8s\n", ROW_NAMES[m], a, b, d, pc);
    }
    for (size_t i = 0; i < p->n_iterations; i++) {
        char a[48], b[48], d[48], pc[32], name[64];
        snprintf(name, sizeof name, "iteration %zu peak", i + 1);
        ms_format_bytes(p->iteration_peaks[i].a, a, sizeof a);
        ms_format_bytes(p->iteration_peaks[i].b, b, sizeof b);
        signed_size_text(p->iteration_peaks[i].delta, d, sizeof d);
        pct_text(&p->iteration_peaks[i], pc, sizeof pc);
        printf("%-18s %14s %14s %14s %8s\n", name, a, b, d, pc);
    }
    print_leaks(p);

    print_sites("Sites by change in bytes held at the peak", p->sites[MS_SITES_AT_PEAK],
                p->n_sites[MS_SITES_AT_PEAK], p->sites_known[MS_SITES_AT_PEAK],
                p->sites_complete[MS_SITES_AT_PEAK], top, la, lb);
    print_sites("Sites by change in bytes alive at the end", p->sites[MS_SITES_AT_END],
                p->n_sites[MS_SITES_AT_END], p->sites_known[MS_SITES_AT_END],
                p->sites_complete[MS_SITES_AT_END], top, la, lb);
    print_moved_sites(p->moved, p->n_moved, top, la, lb);
    print_only(la, p->only_a, p->n_only_a, false, top);
    print_only(lb, p->only_b, p->n_only_b, true, top);
    printf("\nVerdict: %s\n", cli_term(verdict));
}

int cmd_diff(int argc, char **argv)
{
    const char *cmd = argv[0];
    compare_opts o;
    int rc = compare_opts_parse(cmd, argc, argv, &o);
    /* Three files or more are the ranks table, parsed by the same rules. */
    if (!rc && !o.help && o.n_files >= 3) {
        compare_opts_free(&o);
        return cmd_ranks(argc, argv);
    }
    if (rc || o.help) {
        if (o.help)
            usage(stdout);
        compare_opts_free(&o);
        return rc;
    }
    /* One file is allowed: a summary of two ranks is a pair by itself. */
    if (o.n_files == 0 || o.n_files > 2) {
        cli_error(cmd, "needs two files (or three and more for the ranks table); got %zu",
                  o.n_files);
        usage(stderr);
        compare_opts_free(&o);
        return 2;
    }

    compare_inputs in;
    rc = compare_inputs_load(cmd, o.files, o.n_files, o.device, o.json, o.top, o.threads,
                             &in);
    if (rc) {
        compare_opts_free(&o);
        return rc;
    }
    if (in.n != 2) {
        cli_error(cmd, "needs two files to compare; the inputs hold %zu%s", in.n,
                  in.n > 2 ? " (use `memsnap ranks` for more)" : "");
        compare_inputs_free(&in);
        compare_opts_free(&o);
        return 2;
    }

    ms_pair *p = NULL;
    ms_error err;
    if (ms_pair_compare(&p, in.v[0].profile, in.v[1].profile, &err)) {
        cli_error(cmd, "%s", err.message);
        compare_inputs_free(&in);
        compare_opts_free(&o);
        return 2;
    }
    char la[256], lb[256];
    compare_pair_labels(p, la, lb, sizeof la, "A", "B");
    char *verdict = compare_pair_verdict(p, la, lb);
    if (!verdict) {
        cli_error(cmd, "out of memory");
        rc = 2;
    } else {
        if (o.json) {
            cJSON *doc = cJSON_CreateObject();
            cJSON *files = cJSON_AddArrayToObject(doc, "files");
            for (size_t i = 0; i < 2; i++) {
                cJSON_AddItemToArray(files, in.v[i].file_json);
                in.v[i].file_json = NULL;
            }
            cJSON *pairs = cJSON_AddArrayToObject(doc, "pairs");
            cJSON_AddItemToArray(pairs, compare_pair_json(p, 0, 1, la, lb, verdict, o.top));
            cJSON_AddArrayToObject(doc, "outliers");
            rc = cli_print_json(doc);
        } else {
            print_text(p, la, lb, verdict, o.top);
        }
        free(verdict);
    }
    ms_pair_free(p);
    compare_inputs_free(&in);
    compare_opts_free(&o);
    return rc;
}
