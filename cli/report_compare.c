/* Comparisons of `memsnap report`: the files side by side (ranks of one job, or what
 * --compare asks for) and each file against --baseline. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "json/json_compare.h"
#include "report_cmd.h"
#include "summary_input.h"

#define CMD REPORT_CMD

cJSON *report_compare_files(const report_opts *o, file_state *fs, size_t n, char **svg_out,
                            int *rc)
{
    *svg_out = NULL;
    const ms_profile **profiles = calloc(n, sizeof *profiles);
    const char **labels = calloc(n, sizeof *labels);
    cJSON *cmp = NULL;
    ms_ranks *r = NULL;
    ms_pair *p = NULL;
    ms_error err;
    if (!profiles || !labels) {
        cli_error(CMD, "out of memory");
        *rc = 2;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        profiles[i] = fs[i].profile;
        /* Base names, as `memsnap ranks` shows them: two jobs' rank 0 may share a table. */
        labels[i] = cli_basename(fs[i].path);
    }
    if (ms_ranks_compare(&r, profiles, n, 10.0, &err)) {
        cli_error(CMD, "%s", err.message);
        *rc = 2;
        goto done;
    }
    cmp = cJSON_CreateObject();
    cJSON *ranks_doc = cJSON_CreateObject();
    compare_ranks_fill(ranks_doc, r, labels, o->top);
    cJSON_AddItemToObject(cmp, "ranks", ranks_doc);
    if (n == 2) {
        if (ms_pair_compare(&p, profiles[0], profiles[1], &err)) {
            cli_error(CMD, "%s", err.message);
            *rc = 2;
            goto done;
        }
        char la[256], lb[256];
        compare_pair_labels(p, la, lb, sizeof la, "A", "B");
        char *verdict = compare_pair_verdict(p, la, lb);
        cJSON_AddItemToObject(cmp, "pair", compare_pair_json(p, 0, 1, la, lb, verdict, o->top));
        free(verdict);
    } else {
        cJSON_AddNullToObject(cmp, "pair");
    }
    bool chartable = n <= MAX_CHART_FILES;
    for (size_t i = 0; i < n && chartable; i++)
        chartable = fs[i].snap && fs[i].tl && fs[i].run;
    char *svg = NULL;
    if (chartable) {
        report_chart_input in[MAX_CHART_FILES];
        for (size_t i = 0; i < n; i++)
            in[i] = (report_chart_input){fs[i].snap, fs[i].tl, cli_basename(fs[i].path),
                                         fs[i].run};
        char *png_path = report_join(o->out_dir, "ranks.png");
        int crc = png_path ? report_chart_compare(&svg, in, n, png_path, &err) : MS_ERR_NOMEM;
        free(png_path);
        if (crc) {
            cli_error(CMD, "comparison chart: %s", err.message);
            *rc = 2;
            goto done;
        }
    }
    if (svg) {
        *svg_out = report_svg_inline(svg, strlen(svg), "cmp-");
        free(svg);
        cJSON_AddStringToObject(cmp, "ranks_png", "ranks.png");
    } else {
        cJSON_AddNullToObject(cmp, "ranks_png");
    }
done:
    ms_pair_free(p);
    ms_ranks_free(r);
    free(profiles);
    free(labels);
    return cmp;
}

/* Which baseline file each current file is held to: the one with the same base name,
 * else the one at the same position when both lists are as long, else the only one. */
static int match_baseline(const compare_inputs *base, const file_state *f, size_t i, size_t n)
{
    for (size_t k = 0; k < base->n; k++)
        if (!strcmp(cli_basename(base->v[k].profile->name), cli_basename(f->path)))
            return (int)k;
    if (base->n == n)
        return (int)i;
    if (base->n == 1)
        return 0;
    return -1;
}

cJSON *report_compare_baseline(const report_opts *o, const file_state *fs, size_t n, int *rc)
{
    char *path = NULL;
    struct stat st;
    /* A report directory stands for its summary.json: CI keeps the last good report. */
    if (stat(o->baseline, &st) == 0 && S_ISDIR(st.st_mode))
        path = report_join(o->baseline, "summary.json");
    else
        path = strdup(o->baseline);
    if (!path) {
        cli_error(CMD, "out of memory");
        *rc = 2;
        return NULL;
    }
    compare_inputs base;
    char *paths[1] = {path};
    /* Sites of a summary input come from its top_sites: ask for as many as a table shows. */
    *rc = compare_inputs_load(CMD, paths, 1, o->device, true, o->top, 0, &base);
    if (*rc) {
        free(path);
        return NULL;
    }
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "path", o->baseline);
    cJSON *bfiles = cJSON_AddArrayToObject(b, "files");
    for (size_t k = 0; k < base.n; k++) {
        cJSON_AddItemToArray(bfiles, base.v[k].file_json);
        base.v[k].file_json = NULL;
    }
    cJSON *pairs = cJSON_AddArrayToObject(b, "pairs");
    for (size_t i = 0; i < n && !*rc; i++) {
        int k = match_baseline(&base, &fs[i], i, n);
        if (k < 0) {
            cli_error(CMD, "--baseline %s holds %zu files and none is named %s; give one "
                           "baseline per file in the same order, or a single one",
                      o->baseline, base.n, cli_basename(fs[i].path));
            *rc = 2;
            break;
        }
        ms_pair *p = NULL;
        ms_error err;
        if (ms_pair_compare(&p, base.v[k].profile, fs[i].profile, &err)) {
            cli_error(CMD, "%s", err.message);
            *rc = 2;
            break;
        }
        char la[256], lb[256];
        /* The usual CI case is one file name in both runs: name the runs instead. */
        compare_pair_labels(p, la, lb, sizeof la, "baseline", "this run");
        char *verdict = compare_pair_verdict(p, la, lb);
        cJSON_AddItemToArray(pairs, compare_pair_json(p, k, (int)i, la, lb, verdict, o->top));
        free(verdict);
        ms_pair_free(p);
    }
    compare_inputs_free(&base);
    free(path);
    if (*rc) {
        cJSON_Delete(b);
        return NULL;
    }
    return b;
}
