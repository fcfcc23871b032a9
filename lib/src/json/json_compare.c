/* JSON of pair and rank comparisons (see json_compare.h). */
#include "json/json_compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json/json_run.h"
#include "json/json_util.h"

void compare_pair_labels(const ms_pair *p, char *la, char *lb, size_t cap, const char *same_a,
                         const char *same_b)
{
    ms_profile_label(p->a, la, cap);
    ms_profile_label(p->b, lb, cap);
    if (!strcmp(la, lb)) {
        snprintf(la, cap, "%s", same_a);
        snprintf(lb, cap, "%s", same_b);
    }
}

char *compare_pair_verdict(const ms_pair *p, const char *la, const char *lb)
{
    size_t need = ms_pair_verdict(p, la, lb, NULL, 0);
    char *v = malloc(need + 1);
    if (v)
        ms_pair_verdict(p, la, lb, v, need + 1);
    return v;
}

static cJSON *site_delta_json(const ms_site_delta *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "site", d->site);
    cJSON_AddStringToObject(o, "function", d->function);
    ms__json_num(o, "a_bytes", (double)d->a_bytes);
    ms__json_num(o, "b_bytes", (double)d->b_bytes);
    ms__json_num(o, "delta_bytes", (double)d->delta_bytes);
    ms__json_num(o, "a_count", (double)d->a_count);
    ms__json_num(o, "b_count", (double)d->b_count);
    if (d->b_site)
        cJSON_AddStringToObject(o, "b_site", d->b_site);
    return o;
}

cJSON *site_deltas_json(const ms_site_delta *d, size_t n, int limit)
{
    cJSON *list = cJSON_CreateArray();
    for (size_t i = 0; i < n && (limit < 0 || i < (size_t)limit); i++)
        cJSON_AddItemToArray(list, site_delta_json(&d[i]));
    return list;
}

cJSON *pct_json(const ms_delta *d)
{
    if (!d->pct_valid)
        return cJSON_CreateNull();
    /* Two decimals are all a reader needs, and rounding keeps the JSON of a pickle and of
     * its summary byte-identical. */
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f", d->pct);
    return cJSON_CreateNumber(strtod(buf, NULL));
}

static cJSON *metrics_json(const ms_pair *p)
{
    cJSON *o = cJSON_CreateObject();
    for (int m = 0; m < MS_M_COUNT; m++) {
        cJSON *d = cJSON_CreateObject();
        ms__json_num(d, "a", (double)p->m[m].a);
        ms__json_num(d, "b", (double)p->m[m].b);
        ms__json_num(d, "delta", (double)p->m[m].delta);
        cJSON_AddItemToObject(d, "pct", pct_json(&p->m[m]));
        cJSON_AddItemToObject(o, ms_metric_name((ms_metric)m), d);
    }
    return o;
}

static cJSON *delta_list(const ms_delta *d, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        ms__json_num(e, "a_bytes", (double)d[i].a);
        ms__json_num(e, "b_bytes", (double)d[i].b);
        ms__json_num(e, "delta_bytes", (double)d[i].delta);
        cJSON_AddItemToArray(arr, e);
    }
    return arr;
}

cJSON *compare_pair_json(const ms_pair *p, int a, int b, const char *la, const char *lb,
                        const char *verdict, int top)
{
    cJSON *o = cJSON_CreateObject();
    ms__json_num(o, "a", a);
    ms__json_num(o, "b", b);
    cJSON_AddStringToObject(o, "a_label", la);
    cJSON_AddStringToObject(o, "b_label", lb);
    ms__json_num(o, "a_device", p->a->device);
    ms__json_num(o, "b_device", p->b->device);
    ms__json_num(o, "peak_delta_bytes", (double)p->m[MS_M_PEAK].delta);
    cJSON_AddItemToObject(o, "peak_delta_pct", pct_json(&p->m[MS_M_PEAK]));
    cJSON_AddItemToObject(o, "metrics", metrics_json(p));
    /* Where each peak falls in its run: what to compare rather than peak_time_us. */
    cJSON *place = cJSON_AddObjectToObject(o, "peak_place");
    cJSON_AddItemToObject(place, "a", compare_peak_place_json(&p->a->peak_place));
    cJSON_AddItemToObject(place, "b", compare_peak_place_json(&p->b->peak_place));
    cJSON_AddItemToObject(o, "sites",
                          site_deltas_json(p->sites[MS_SITES_AT_PEAK],
                                           p->n_sites[MS_SITES_AT_PEAK], top));
    ms__json_num(o, "sites_changed", (double)p->n_sites[MS_SITES_AT_PEAK]);
    cJSON_AddBoolToObject(o, "sites_complete", p->sites_complete[MS_SITES_AT_PEAK]);
    if (p->sites_known[MS_SITES_AT_END])
        cJSON_AddItemToObject(o, "sites_at_end",
                              site_deltas_json(p->sites[MS_SITES_AT_END],
                                               p->n_sites[MS_SITES_AT_END], top));
    else
        cJSON_AddNullToObject(o, "sites_at_end");
    cJSON_AddItemToObject(o, "only_in_a", site_deltas_json(p->only_a, p->n_only_a, top));
    cJSON_AddItemToObject(o, "only_in_b", site_deltas_json(p->only_b, p->n_only_b, top));
    cJSON_AddItemToObject(o, "moved", site_deltas_json(p->moved, p->n_moved, top));
    if (p->n_iterations)
        cJSON_AddItemToObject(o, "iteration_peaks",
                              delta_list(p->iteration_peaks, p->n_iterations));
    if (p->leaks_known) {
        cJSON *d = cJSON_CreateObject();
        ms__json_num(d, "a_findings", (double)p->leak_findings.a);
        ms__json_num(d, "b_findings", (double)p->leak_findings.b);
        ms__json_num(d, "delta_findings", (double)p->leak_findings.delta);
        ms__json_num(d, "a_bytes", (double)p->leak_bytes.a);
        ms__json_num(d, "b_bytes", (double)p->leak_bytes.b);
        ms__json_num(d, "delta_bytes", (double)p->leak_bytes.delta);
        ms__json_num(d, "a_growth_per_iteration_bytes", p->a->leaks.growth_bytes);
        ms__json_num(d, "b_growth_per_iteration_bytes", p->b->leaks.growth_bytes);
        cJSON_AddItemToObject(o, "leaks", d);
    }
    cJSON_AddBoolToObject(o, "match", p->match);
    cJSON_AddStringToObject(o, "verdict", verdict ? verdict : "");
    return o;
}

const compare_outlier_key COMPARE_OUTLIER_KEYS[COMPARE_OUTLIER_KEY_COUNT] = {
    {MS_OUT_PEAK, "peak_bytes"},
    {MS_OUT_RESERVED, "reserved_peak_bytes"},
    {MS_OUT_LIVE_END, "live_end_bytes"},
};

const ms_delta *compare_row_metric(const ms_rank_row *row, unsigned bit)
{
    return bit == MS_OUT_PEAK       ? &row->peak
           : bit == MS_OUT_RESERVED ? &row->reserved_peak
                                    : &row->live_end;
}

void compare_ranks_fill(cJSON *doc, const ms_ranks *r, const char *const *labels, int top)
{
    cJSON *med = cJSON_AddObjectToObject(doc, "median");
    ms__json_num(med, "peak_bytes", (double)r->median_peak);
    ms__json_num(med, "reserved_peak_bytes", (double)r->median_reserved_peak);
    ms__json_num(med, "live_end_bytes", (double)r->median_live_end);
    ms__json_num(doc, "threshold_pct", r->threshold_pct);
    /* Two files: no outliers; "pair" holds their difference (ranks --json). */
    cJSON_AddBoolToObject(doc, "is_pair", r->pair);
    cJSON *ranks = cJSON_AddArrayToObject(doc, "ranks");
    cJSON *outliers = cJSON_CreateArray();
    for (size_t i = 0; i < r->n; i++) {
        const ms_rank_row *row = &r->rows[i];
        const ms_profile *p = row->p;
        cJSON *o = cJSON_CreateObject();
        ms__json_num(o, "file", (double)i);
        cJSON_AddStringToObject(o, "path", p->name);
        cJSON_AddStringToObject(o, "label", labels[i]);
        if (p->rank >= 0)
            ms__json_num(o, "rank", p->rank);
        else
            cJSON_AddNullToObject(o, "rank");
        ms__json_num(o, "device", p->device);
        ms__json_num(o, "peak_bytes", (double)p->peak_bytes);
        ms__json_time(o, "peak_time_us", p->has_times, p->peak_time_us - p->t_first_us);
        ms__json_num(o, "reserved_peak_bytes", (double)p->reserved_peak_bytes);
        ms__json_num(o, "live_end_bytes", (double)p->live_end_bytes);
        /* null: read from a summary written before summaries carried leaks. */
        if (p->leaks_known)
            cJSON_AddItemToObject(o, "leaks", summary_leaks_json(&p->leaks));
        else
            cJSON_AddNullToObject(o, "leaks");
        if (p->n_sites[MS_SITES_AT_PEAK]) {
            const ms_profile_site *s = &p->sites[MS_SITES_AT_PEAK][0];
            cJSON *ts = cJSON_AddObjectToObject(o, "top_site");
            cJSON_AddStringToObject(ts, "site", s->site);
            cJSON_AddStringToObject(ts, "function", s->function);
            ms__json_num(ts, "bytes", (double)s->bytes);
            ms__json_num(ts, "count", (double)s->count);
        } else {
            cJSON_AddNullToObject(o, "top_site");
        }
        ms__json_num(o, "peak_delta_bytes", (double)row->peak.delta);
        cJSON_AddItemToObject(o, "peak_delta_pct", pct_json(&row->peak));
        ms__json_num(o, "reserved_delta_bytes", (double)row->reserved_peak.delta);
        cJSON_AddItemToObject(o, "reserved_delta_pct", pct_json(&row->reserved_peak));
        ms__json_num(o, "live_end_delta_bytes", (double)row->live_end.delta);
        cJSON_AddItemToObject(o, "live_end_delta_pct", pct_json(&row->live_end));
        cJSON_AddBoolToObject(o, "outlier", row->outlier != 0);
        cJSON_AddItemToObject(o, "sites", site_deltas_json(row->sites, row->n_sites, top));
        if (row->sites_end_known)
            cJSON_AddItemToObject(o, "sites_at_end",
                                  site_deltas_json(row->sites_end, row->n_sites_end, top));
        cJSON_AddItemToArray(ranks, o);
        for (size_t k = 0; k < COMPARE_OUTLIER_KEY_COUNT; k++) {
            if (!(row->outlier & COMPARE_OUTLIER_KEYS[k].bit))
                continue;
            const ms_delta *d = compare_row_metric(row, COMPARE_OUTLIER_KEYS[k].bit);
            cJSON *x = cJSON_CreateObject();
            ms__json_num(x, "file", (double)i);
            cJSON_AddStringToObject(x, "label", labels[i]);
            cJSON_AddStringToObject(x, "metric", COMPARE_OUTLIER_KEYS[k].key);
            ms__json_num(x, "value", (double)d->b);
            ms__json_num(x, "median", (double)d->a);
            ms__json_num(x, "delta_bytes", (double)d->delta);
            cJSON_AddItemToObject(x, "delta_pct", pct_json(d));
            /* The sites behind this metric: "sites" (at the peak), "sites_at_end", or none
             * for reserved memory (the allocator's cache). */
            unsigned bit = COMPARE_OUTLIER_KEYS[k].bit;
            cJSON_AddStringToObject(x, "sites_key",
                                    bit == MS_OUT_PEAK ? "sites"
                                    : bit == MS_OUT_LIVE_END && row->sites_end_known ? "sites_at_end"
                                                                                    : "");
            cJSON_AddItemToArray(outliers, x);
        }
    }
    cJSON_AddItemToObject(doc, "outliers", outliers);
}


/* Sites each list of the pair holds, as `memsnap diff --json` lists by default. */
#define RUN_COMPARE_TOP_SITES 10

typedef struct run_pair {
    ms_run *run[2];
    const char *name[2];
} run_pair;

static cJSON *run_pair_build(void *ctx, ms_error *err)
{
    const run_pair *rp = ctx;
    ms_profile *prof[2] = {NULL, NULL};
    ms_pair *p = NULL;
    cJSON *doc = NULL;
    int rc = 0;
    for (int i = 0; i < 2 && !rc; i++)
        rc = ms_profile_from_run(&prof[i], rp->run[i], rp->name[i], err);
    if (!rc && !ms_pair_compare(&p, prof[0], prof[1], err)) {
        char la[256], lb[256];
        compare_pair_labels(p, la, lb, sizeof la, "A", "B");
        char *verdict = compare_pair_verdict(p, la, lb);
        doc = verdict ? compare_pair_json(p, 0, 1, la, lb, verdict, RUN_COMPARE_TOP_SITES)
                      : ms__json_nomem(err);
        free(verdict);
    }
    ms_pair_free(p);
    ms_profile_free(prof[1]);
    ms_profile_free(prof[0]);
    return doc;
}

int ms_run_compare_json(char **out, size_t *len_out, ms_run *a, const char *name_a, ms_run *b,
                        const char *name_b, ms_error *err)
{
    run_pair rp = {{a, b}, {name_a ? name_a : "A", name_b ? name_b : "B"}};
    return ms__json_text(out, len_out, a && b, "ms_run_compare_json", run_pair_build, &rp, err);
}
