#include "summary_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "categories_json.h"
#include "cli_util.h"
#include "iterations_json.h"
#include "memsnap/oom.h"

static void set_nomem(ms_error *err)
{
    err->code = MS_ERR_NOMEM;
    err->offset = MS_NO_OFFSET;
    snprintf(err->message, sizeof err->message, "%s", ms_code_message(MS_ERR_NOMEM));
}

static cJSON *num(cJSON *obj, const char *key, double v)
{
    return cJSON_AddNumberToObject(obj, key, v);
}

/* Top sites among the allocations alive right after the peak event. */
/* A time on the trace's clock, or null where the trace has none. */
static void time_json(cJSON *obj, const char *key, bool has_times, int64_t us)
{
    if (has_times)
        num(obj, key, (double)us);
    else
        cJSON_AddNullToObject(obj, key);
}

static int add_top_sites(cJSON *dev, const ms_snapshot *s, const ms_alloc *alive,
                         size_t n_alive, int top_k, ms_error *err)
{
    cJSON *arr = cJSON_AddArrayToObject(dev, "top_sites");
    ms_site_total *tot = NULL;
    size_t n_tot = 0;
    int rc = ms_site_totals(&tot, &n_tot, s, alive, n_alive, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < n_tot && (int)i < top_k; i++) {
        cJSON *e = cJSON_CreateObject();
        char site[1024];
        ms_site_format_location(s, tot[i].site, site, sizeof site);
        const ms_frame *f = ms_snapshot_frame(s, tot[i].site);
        cJSON_AddStringToObject(e, "site", site);
        char function[1024];
        ms_site_format_function(s, tot[i].site, function, sizeof function);
        cJSON_AddStringToObject(e, "function", function);
        cJSON_AddStringToObject(e, "filename", f ? ms_snapshot_string(s, f->filename) : "");
        if (f && f->line == MS_LINE_UNKNOWN)
            cJSON_AddNullToObject(e, "line");
        else
            num(e, "line", f ? (double)f->line : 0);
        num(e, "bytes", (double)tot[i].bytes);
        num(e, "count", (double)tot[i].count);
        cJSON_AddItemToArray(arr, e);
    }
    ms_free(tot);
    return 0;
}

/* Each oom event with its cause (memsnap oom explains it in full). */
static void add_ooms(cJSON *dev, const ms_snapshot *s, int device)
{
    const ms_trace *tr = ms_snapshot_trace(s, device);
    cJSON *arr = cJSON_AddArrayToObject(dev, "ooms");
    ms_oom_report *r = NULL;
    ms_error err;
    size_t k = 0;
    for (size_t i = 0; i < tr->n; i++) {
        if (tr->action[i] != MS_ACT_OOM)
            continue;
        if (!r && k == 0 && ms_oom_analyze(&r, s, device, NULL, NULL, &err))
            r = NULL; /* the cause is extra: the event itself is still listed */
        cJSON *e = cJSON_CreateObject();
        num(e, "event", (double)i);
        time_json(e, "time_us", tr->has_times, tr->time_us[i]);
        num(e, "requested_bytes", (double)tr->size[i]);
        num(e, "device_free_bytes", (double)tr->addr[i]);
        if (r && k < r->n && r->items[k].event == (int64_t)i) {
            const ms_oom *o = &r->items[k];
            cJSON_AddStringToObject(e, "cause", ms_oom_cause_name(o->cause));
            num(e, "free_in_reserved_bytes", (double)o->free_in_reserved_bytes);
            num(e, "largest_free_block_bytes", (double)o->largest_free_block_bytes);
            cJSON_AddBoolToObject(e, "approximate", o->approximate);
        }
        k++;
        cJSON_AddItemToArray(arr, e);
    }
    ms_oom_report_free(r);
}

static cJSON *device_json(const ms_snapshot *s, int device, int top_k, ms_error *err)
{
    ms_timeline *t = NULL;
    /* The active curve alone (8 bytes per event, less than the parser's memo freed just
     * before) gives the iterations their peaks, and the allocations alive at the peak
     * are collected while the timeline is built: one pass over the trace in all. */
    if (ms_timeline_build(&t, s, device, MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE, err))
        return NULL;
    cJSON *dev = cJSON_CreateObject();
    num(dev, "device", device);
    num(dev, "events", (double)t->n_events);
    cJSON *actions = cJSON_AddObjectToObject(dev, "actions");
    for (int a = 0; a < MS_ACT_COUNT; a++)
        if (t->action_counts[a])
            num(actions, ms_action_name((ms_action)a), (double)t->action_counts[a]);
    /* A trace without times (docs/json.md "has_times") gives null times, never a made-up
     * 0 s: the event indexes beside them are the axis. */
    cJSON_AddBoolToObject(dev, "has_times", t->has_times);
    cJSON *span = cJSON_AddObjectToObject(dev, "time");
    time_json(span, "first_us", t->has_times, t->t_first_us);
    time_json(span, "last_us", t->has_times, t->t_last_us);
    if (t->has_times)
        num(span, "seconds", cli_seconds(t->t_first_us, t->t_last_us));
    else
        cJSON_AddNullToObject(span, "seconds");
    cJSON *peak = cJSON_AddObjectToObject(dev, "peak");
    num(peak, "bytes", (double)t->peak_bytes);
    time_json(peak, "time_us", t->has_times, t->peak_time_us);
    if (t->has_times)
        num(peak, "seconds", cli_seconds(t->t_first_us, t->peak_time_us));
    else
        cJSON_AddNullToObject(peak, "seconds");
    num(peak, "event", (double)t->peak_event);
    cJSON *live = cJSON_AddObjectToObject(dev, "live_end");
    num(live, "bytes", (double)t->live_end_bytes);
    num(live, "count", (double)t->live_end_count);
    cJSON *res = cJSON_AddObjectToObject(dev, "reserved");
    num(res, "peak_bytes", (double)t->reserved_peak_bytes);
    num(res, "end_bytes", (double)t->reserved_end_bytes);
    num(res, "start_bytes", (double)t->reserved_start);
    cJSON *pre = cJSON_AddObjectToObject(dev, "preexisting");
    num(pre, "bytes", (double)t->preexisting_bytes);
    num(pre, "count", (double)t->preexisting_count);
    cJSON_AddBoolToObject(dev, "trace_complete", t->trace_complete);
    const char *wrap = ms_wrap_evidence_key(t->wrap_evidence);
    if (wrap)
        cJSON_AddStringToObject(dev, "ring_buffer_wrapped", wrap);
    else
        cJSON_AddNullToObject(dev, "ring_buffer_wrapped");
    add_ooms(dev, s, device);
    ms_iterations *it = NULL;
    cJSON *iters = NULL;
    if (ms_iterations_find(&it, s, device, t, NULL, err) == 0) {
        const ms_trace *tr = ms_snapshot_trace(s, device);
        iters = leaks_iterations_to_json(it, tr->n ? tr->time_us[0] : 0);
        /* What the memory alive at the peak is (docs/json.md peak.categories). */
        int64_t by[MS_CAT_COUNT];
        if (iters && ms_categories_sum(by, s, t, it, t->peak_alive, t->n_peak_alive, err) == 0) {
            cJSON_AddItemToObject(peak, "categories", categories_object(by));
        } else {
            cJSON_Delete(iters);
            iters = NULL;
        }
        ms_iterations_free(it);
        if (!iters && err->code == MS_OK)
            set_nomem(err);
    }
    if (!iters) {
        cJSON_Delete(dev);
        ms_timeline_free(t);
        return NULL;
    }
    cJSON_AddItemToObject(dev, "iterations", iters);
    size_t n_ann, n_dev_ann = 0;
    const ms_annotation *ann = ms_snapshot_annotations(s, &n_ann);
    for (size_t i = 0; i < n_ann; i++)
        n_dev_ann += ann[i].device == device;
    num(dev, "annotations", (double)n_dev_ann);
    if (!t->has_times)
        num(dev, "annotations_unplaced", (double)ms_snapshot_annotations_unplaced(s));
    int sites_rc = add_top_sites(dev, s, t->peak_alive, t->n_peak_alive, top_k, err);
    if (sites_rc) {
        cJSON_Delete(dev);
        dev = NULL;
    }
    ms_timeline_free(t);
    return dev;
}

cJSON *summary_file_json(const char *path, const ms_snapshot *s, int device, int top_k,
                         ms_error *err)
{
    cJSON *file = cJSON_CreateObject();
    cJSON_AddStringToObject(file, "path", path);
    num(file, "pickle_protocol", ms_snapshot_pickle_protocol(s));
    num(file, "pickle_bytes", (double)ms_snapshot_input_bytes(s));
    size_t n_set;
    const ms_setting *set = ms_snapshot_settings(s, &n_set);
    cJSON *settings = cJSON_AddObjectToObject(file, "allocator_settings");
    for (size_t i = 0; i < n_set; i++)
        cJSON_AddStringToObject(settings, ms_snapshot_string(s, set[i].key),
                                ms_snapshot_string(s, set[i].value));
    cJSON *devices = cJSON_AddArrayToObject(file, "devices");
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        if (device >= 0 ? d != device : !cli_device_in_use(s, d))
            continue;
        cJSON *dev = device_json(s, d, top_k, err);
        if (!dev) {
            cJSON_Delete(file);
            return NULL;
        }
        cJSON_AddItemToArray(devices, dev);
    }
    return file;
}
