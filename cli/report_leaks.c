/* Leaks and iterations for `memsnap report`, in the JSON shape of `memsnap leaks --json`
 * (docs/json.md) so a script reads a report's leaks as it reads that command's. Built a
 * device at a time from the device's one run (report_devices.c). */
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "iterations_json.h"
#include "shape_json.h"
#include "memsnap/leaks.h"
#include "report.h"

/* Hands the chart device's iteration peaks and leaked bytes to its profile, so the
 * comparisons (two ranks, or against the baseline) set them side by side too. */
static int feed_profile(ms_profile *p, const ms_leak_report *r, const ms_leak_totals *lt,
                        ms_error *err)
{
    const ms_iterations *it = r->iterations;
    ms_profile_set_leaks(p, lt);
    if (!it->n)
        return 0;
    int64_t *peaks = malloc(it->n * sizeof *peaks);
    if (!peaks) {
        return ms_error_set(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    }
    for (size_t i = 0; i < it->n; i++)
        peaks[i] = it->items[i].peak_bytes;
    int rc = ms_profile_set_iteration_peaks(p, peaks, it->n, err);
    free(peaks);
    return rc;
}

void report_leaks_begin(report_devices *rd)
{
    rd->leaks = cJSON_CreateObject();
    rd->leak_devices = cJSON_AddArrayToObject(rd->leaks, "devices");
    rd->leak_items = cJSON_AddArrayToObject(rd->leaks, "leaks");
}

int report_leaks_device(report_devices *rd, ms_run *run, ms_profile *profile, ms_error *err)
{
    const ms_snapshot *s = ms_run_snapshot(run);
    int d = ms_run_device(run);
    const ms_timeline *tl = NULL;
    const ms_leak_report *r = NULL;
    const ms_idle *idle = NULL;
    ms_leak_counts c;
    if (ms_run_timeline(&tl, run, err) || ms_run_leaks(&r, run, err) ||
        ms_run_idle(&idle, run, err) || ms_run_leak_counts(&c, run, err) ||
        (profile && feed_profile(profile, r, &c.leaks, err)))
        return err->code ? err->code : MS_ERR_NOMEM;
    for (size_t i = 0; i < r->n; i++) {
        const ms_leak *L = &r->items[i];
        if (L->kind == MS_LEAK_RETAINED)
            continue; /* retained memory is expected; `leaks --all` lists it */
        cJSON_AddItemToArray(rd->leak_items, leaks_finding_json(s, tl, r, L, d));
    }
    rd->sum.leaks.findings += c.leaks.findings;
    rd->sum.leaks.bytes += c.leaks.bytes;
    rd->sum.leaks.growth_bytes += c.leaks.growth_bytes;
    rd->sum.leak_sites += c.leak_sites;
    rd->sum.suspects += c.suspects;
    rd->oom = rd->oom || r->oom_count;
    cJSON *dj = leaks_device_head_json(run, r->iterations, idle, tl->t_first_us);
    ms__json_int(dj, "oom_count", (int64_t)r->oom_count);
    if (r->oom_count) {
        ms__json_int(dj, "first_oom_us", r->first_oom_us);
        ms__json_int(dj, "first_oom_bytes", (int64_t)r->first_oom_bytes);
    }
    ms__json_int(dj, "leaks", (int64_t)c.leaks.findings);
    ms__json_int(dj, "leak_sites", (int64_t)c.leak_sites);
    ms__json_int(dj, "suspects", (int64_t)c.suspects);
    ms__json_int(dj, "retained", (int64_t)c.retained);
    ms__json_int(dj, "alive_at_end", (int64_t)c.alive_at_end);
    cJSON_AddItemToArray(rd->leak_devices, dj);
    return 0;
}

void report_leaks_end(report_devices *rd)
{
    const ms_leak_counts *t = &rd->sum;
    cJSON *v = cJSON_AddObjectToObject(rd->leaks, "verdict");
    cJSON_AddBoolToObject(v, "leak", t->leaks.findings > 0);
    ms__json_int(v, "leaks", (int64_t)t->leaks.findings);
    ms__json_int(v, "leak_sites", (int64_t)t->leak_sites);
    ms__json_int(v, "suspects", (int64_t)t->suspects);
    ms__json_int(v, "leaked_bytes", (int64_t)t->leaks.bytes);
    cJSON_AddNumberToObject(v, "growth_bytes_per_iteration", t->leaks.growth_bytes);
    cJSON_AddBoolToObject(v, "oom", rd->oom);
}
