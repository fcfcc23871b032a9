/* Leaks and iterations for `memsnap report`, in the JSON shape of `memsnap leaks --json`
 * (docs/json.md) so a script reads a report's leaks as it reads that command's. */
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "iterations_json.h"
#include "shape_json.h"
#include "memsnap/leaks.h"
#include "report.h"

/* Hands the chart device's iteration peaks and leaked bytes to its profile, so the
 * comparisons (two ranks, or against the baseline) set them side by side too. */
static int feed_profile(ms_profile *p, const ms_leak_report *r, ms_error *err)
{
    const ms_iterations *it = r->iterations;
    ms_leak_totals lt = ms_leak_report_totals(r);
    ms_profile_set_leaks(p, &lt);
    if (!it->n)
        return 0;
    int64_t *peaks = malloc(it->n * sizeof *peaks);
    if (!peaks) {
        err->code = MS_ERR_NOMEM;
        err->offset = MS_NO_OFFSET;
        snprintf(err->message, sizeof err->message, "out of memory");
        return MS_ERR_NOMEM;
    }
    for (size_t i = 0; i < it->n; i++)
        peaks[i] = it->items[i].peak_bytes;
    int rc = ms_profile_set_iteration_peaks(p, peaks, it->n, err);
    free(peaks);
    return rc;
}

cJSON *report_leaks_json(const ms_snapshot *s, const report_opts *o, int chart_device,
                         ms_run *chart_run, ms_profile *profile, ms_error *err)
{
    ms_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.iter.step_name = o->step_name;
    ro.iter.expected = o->iterations;
    cJSON *fo = cJSON_CreateObject();
    cJSON *devs = cJSON_AddArrayToObject(fo, "devices");
    cJSON *leaks = cJSON_AddArrayToObject(fo, "leaks");
    size_t n_leaks = 0, n_suspects = 0, n_sites = 0;
    uint64_t leaked = 0;
    double growth = 0;
    bool oom = false;
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        if (o->device >= 0 ? d != o->device : !cli_device_in_use(s, d))
            continue;
        ms_run *own = NULL;
        ms_run *run = chart_run;
        const ms_timeline *tl = NULL;
        const ms_leak_report *r = NULL;
        if (d != chart_device && ms_run_open(&own, s, d, &ro, err)) {
            cJSON_Delete(fo);
            return NULL;
        }
        if (own)
            run = own;
        const ms_idle *idle = NULL;
        if (ms_run_timeline(&tl, run, err) || ms_run_leaks(&r, run, err) ||
            ms_run_idle(&idle, run, err) ||
            (d == chart_device && feed_profile(profile, r, err))) {
            ms_run_free(own);
            cJSON_Delete(fo);
            return NULL;
        }
        size_t dl = 0, ds = 0, dr = 0, da = 0, dsites = 0;
        for (size_t i = 0; i < r->n; i++) {
            const ms_leak *L = &r->items[i];
            if (L->kind == MS_LEAK_LEAK) {
                dl++;
                dsites += L->n_members;
                leaked += L->bytes;
                growth += L->growth_bytes;
            } else if (L->kind == MS_LEAK_SUSPECT) {
                ds++;
            } else if (L->kind == MS_LEAK_ALIVE_AT_END) {
                da++;
            } else {
                dr++;
                continue; /* retained memory is expected; `leaks --all` lists it */
            }
            cJSON_AddItemToArray(leaks, leaks_finding_json(s, tl, r, L, d));
        }
        n_leaks += dl;
        n_sites += dsites;
        n_suspects += ds;
        oom = oom || r->oom_count;
        cJSON *dj = cJSON_CreateObject();
        leaks_json_int(dj, "device", d);
        cJSON *ij = leaks_iterations_to_json(r->iterations, idle, tl->t_first_us);
        const ms_shape *sh = NULL;
        ms_error soft;
        if (!ms_run_shape(&sh, run, &soft))
            shape_mark_iterations(ij, sh, r->iterations);
        cJSON_AddItemToObject(dj, "iterations", ij);
        leaks_json_int(dj, "oom_count", (int64_t)r->oom_count);
        if (r->oom_count) {
            leaks_json_int(dj, "first_oom_us", r->first_oom_us);
            leaks_json_int(dj, "first_oom_bytes", (int64_t)r->first_oom_bytes);
        }
        leaks_json_int(dj, "leaks", (int64_t)dl);
        leaks_json_int(dj, "leak_sites", (int64_t)dsites);
        leaks_json_int(dj, "suspects", (int64_t)ds);
        leaks_json_int(dj, "retained", (int64_t)dr);
        leaks_json_int(dj, "alive_at_end", (int64_t)da);
        cJSON_AddItemToArray(devs, dj);
        ms_run_free(own);
    }
    cJSON *v = cJSON_AddObjectToObject(fo, "verdict");
    cJSON_AddBoolToObject(v, "leak", n_leaks > 0);
    leaks_json_int(v, "leaks", (int64_t)n_leaks);
    leaks_json_int(v, "leak_sites", (int64_t)n_sites);
    leaks_json_int(v, "suspects", (int64_t)n_suspects);
    leaks_json_int(v, "leaked_bytes", (int64_t)leaked);
    cJSON_AddNumberToObject(v, "growth_bytes_per_iteration", growth);
    cJSON_AddBoolToObject(v, "oom", oom);
    return fo;
}
