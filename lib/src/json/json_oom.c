/* OOM analyses as JSON (docs/json.md files[].ooms[]), shared by `oom`, `summary`,
 * `report` and ms_run_json, so every view that explains an OOM says the same. */
#include "json/json_oom.h"

#include <string.h>

#include "json/json_shape.h"
#include "json/json_util.h"
#include "memsnap/run.h"

/* The JSON keys of the categories, in the order of ms_category. */
static const char *const CATEGORY_KEYS[MS_OOM_CATEGORIES] = {
    "parameter", "gradient", "optimizer_state", "activation",
    "temporary", "workspace", "input",           "other"};

cJSON *oom_to_json(const ms_snapshot *s, const ms_oom *o)
{
    cJSON *e = cJSON_CreateObject();
    ms__json_num(e, "device", o->device);
    ms__json_num(e, "event", (double)o->event);
    ms__json_num(e, "time_us", (double)o->time_us);
    ms__json_num(e, "request_bytes", (double)o->request_bytes);
    ms__json_num(e, "request_block_bytes", (double)o->request_block_bytes);
    ms__json_num(e, "segment_request_bytes", (double)o->segment_request_bytes);
    ms__json_num(e, "device_free_bytes", (double)o->device_free_bytes);
    ms__json_num(e, "allocated_bytes", (double)o->allocated_bytes);
    ms__json_num(e, "active_bytes", (double)o->active_bytes);
    ms__json_num(e, "reserved_bytes", (double)o->reserved_bytes);
    ms__json_num(e, "free_in_reserved_bytes", (double)o->free_in_reserved_bytes);
    ms__json_num(e, "free_blocks", (double)o->free_blocks);
    ms__json_num(e, "largest_free_block_bytes", (double)o->largest_free_block_bytes);
    ms__json_num(e, "usable_free_bytes", (double)o->usable_free_bytes);
    ms__json_num(e, "usable_free_blocks", (double)o->usable_free_blocks);
    ms__json_num(e, "largest_usable_block_bytes", (double)o->largest_usable_block);
    ms__json_num(e, "largest_allocation_bytes", (double)o->largest_alive_bytes);
    ms__json_num(e, "live_requested_bytes", (double)o->live_requested_bytes);
    ms__json_num(e, "segments", (double)o->n_segments);
    cJSON_AddBoolToObject(e, "limit_refused", o->limit_refused);
    cJSON_AddStringToObject(e, "cause", ms_oom_cause_name(o->cause));
    cJSON_AddStringToObject(e, "why", o->why);
    cJSON_AddStringToObject(e, "cause_basis", ms_oom_basis_name(o->basis));
    cJSON_AddStringToObject(e, "evidence", o->evidence);
    cJSON_AddStringToObject(e, "form", o->inference ? "inference" : "training");
    if (o->limit_bytes) {
        ms__json_num(e, "limit_bytes", (double)o->limit_bytes);
        cJSON_AddStringToObject(e, "limit_source", o->limit_is_device ? "device" : "limit");
    } else {
        cJSON_AddNullToObject(e, "limit_bytes");
        cJSON_AddNullToObject(e, "limit_source");
    }
    if (o->prev_layer_calls > 0 && o->act_layer_calls > 0) {
        cJSON *st = cJSON_AddObjectToObject(e, "unfinished_step");
        ms__json_num(st, "layer_calls_done", (double)o->act_layer_calls);
        ms__json_num(st, "layer_calls_previous", (double)o->prev_layer_calls);
        ms__json_num(st, "fraction_done", o->step_done);
        ms__json_num(st, "bytes_per_layer_call", (double)o->act_layer_bytes / (double)o->act_layer_calls);
        /* Over the same calls the ratio compares (the previous step's first ones). */
        ms__json_num(st, "previous_bytes_per_layer_call",
            o->act_ratio > 0 ? (double)o->act_layer_bytes / (double)o->act_layer_calls / o->act_ratio
                             : 0);
        ms__json_num(st, "activation_ratio", o->act_ratio);
        ms__json_num(st, "base_bytes", (double)o->step_base_bytes);
        ms__json_num(st, "forward_need_bytes", (double)o->forward_need_bytes);
        ms__json_num(st, "step_need_bytes", (double)o->step_need_bytes);
        ms__json_num(st, "step_need_reserved_bytes", (double)o->step_need_reserved_bytes);
    } else {
        cJSON_AddNullToObject(e, "unfinished_step");
    }
    if (o->basis == MS_OOM_BASIS_SHARE_OF_LIVE) {
        cJSON_AddNullToObject(e, "still_to_allocate_bytes");
        cJSON_AddNullToObject(e, "basis_iteration");
    } else {
        ms__json_num(e, "still_to_allocate_bytes", (double)o->still_to_allocate);
        ms__json_num(e, "basis_iteration", (double)o->basis_iteration + 1);
    }
    cJSON *adv = cJSON_AddArrayToObject(e, "advice");
    for (size_t i = 0; i < o->n_advice; i++)
        cJSON_AddItemToArray(adv, cJSON_CreateString(o->advice[i]));
    cJSON_AddStringToObject(e, "categories_source", o->have_categories        ? "categories"
                                                     : o->categories_estimated ? "stacks"
                                                                               : "none");
    if (o->have_categories || o->categories_estimated) {
        cJSON *cat = cJSON_AddObjectToObject(e, "categories");
        for (int i = 0; i < MS_OOM_CATEGORIES; i++)
            ms__json_num(cat, CATEGORY_KEYS[i], (double)o->category_bytes[i]);
    } else {
        cJSON_AddNullToObject(e, "categories");
    }
    cJSON *sites = cJSON_AddArrayToObject(e, "top_sites");
    for (size_t i = 0; i < o->n_top_sites; i++) {
        cJSON *st = cJSON_CreateObject();
        char buf[1024];
        ms_site_format_location(s, o->top_sites[i].site, buf, sizeof buf);
        cJSON_AddStringToObject(st, "site", o->top_sites[i].site == UINT32_MAX ? "(no stack)" : buf);
        ms_site_format_function(s, o->top_sites[i].site, buf, sizeof buf);
        cJSON_AddStringToObject(st, "function", buf);
        ms__json_num(st, "bytes", (double)o->top_sites[i].bytes);
        ms__json_num(st, "count", (double)o->top_sites[i].count);
        cJSON_AddItemToArray(sites, st);
    }
    if (o->act_layer_calls > 0) {
        cJSON *ac = cJSON_AddObjectToObject(e, "activations");
        ms__json_num(ac, "layer_calls", (double)o->act_layer_calls);
        ms__json_num(ac, "bytes", (double)o->act_layer_bytes);
        ms__json_num(ac, "bytes_per_layer_call", (double)(o->act_layer_bytes / (int64_t)o->act_layer_calls));
        ms__json_num(ac, "checkpoint_keep_bytes", (double)o->checkpoint_keep_bytes);
        ms__json_num(ac, "checkpoint_save_bytes", (double)o->checkpoint_save_bytes);
    } else {
        cJSON_AddNullToObject(e, "activations");
    }
    if (o->peak_iteration == SIZE_MAX)
        cJSON_AddNullToObject(e, "peak_iteration");
    else
        ms__json_num(e, "peak_iteration", (double)o->peak_iteration + 1);
    cJSON *its = cJSON_AddArrayToObject(e, "iterations");
    for (size_t i = 0; i < o->n_iters; i++) {
        cJSON *it = cJSON_CreateObject();
        ms__json_num(it, "index", (double)o->iters[i].index + 1);
        ms__json_num(it, "end_event", (double)o->iters[i].end_event);
        ms__json_num(it, "live_end_bytes", (double)o->iters[i].live_end_bytes);
        ms__json_num(it, "peak_bytes", (double)o->iters[i].peak_bytes);
        cJSON_AddBoolToObject(it, "unfinished", o->iters[i].unfinished);
        cJSON_AddItemToArray(its, it);
    }
    if (o->leak_site != UINT32_MAX || o->leak_bytes) {
        cJSON *lk = cJSON_AddObjectToObject(e, "leak");
        char buf[1024];
        ms_site_format(s, o->leak_site, buf, sizeof buf);
        cJSON_AddStringToObject(lk, "site", o->leak_site == UINT32_MAX ? "" : buf);
        ms__json_num(lk, "bytes", (double)o->leak_bytes);
        ms__json_num(lk, "growth_bytes_per_iteration", o->leak_growth_bytes);
    } else {
        cJSON_AddNullToObject(e, "leak");
    }
    cJSON_AddBoolToObject(e, "approximate", o->approximate);
    cJSON_AddStringToObject(e, "note", o->note);
    return e;
}

int oom_count_json(const cJSON *obj)
{
    const cJSON *more = cJSON_GetObjectItemCaseSensitive(obj, "ooms_left_out");
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(obj, "ooms"));
    return n + (cJSON_IsNumber(more) && more->valuedouble > 0 ? (int)more->valuedouble : 0);
}

void oom_left_out_json(cJSON *obj, size_t n)
{
    if (n > 0)
        ms__json_num(obj, "ooms_left_out", (double)n);
}

cJSON *oom_file_json(const char *path, const ms_snapshot *s, int device, int top_k,
                     void (*keep)(void *ctx, const ms_oom_report *r), void *ctx,
                     ms_error *err)
{
    cJSON *file = cJSON_CreateObject();
    cJSON_AddStringToObject(file, "path", path);
    cJSON *arr = cJSON_AddArrayToObject(file, "ooms");
    /* A file explains as many OOMs as a device does (the first, devices in order); the
     * other devices' are counted without an analysis. */
    size_t left_out = 0, room = MS_OOM_MAX_EXPLAINED;
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        if (device >= 0 ? d != device : !ms__device_in_use(s, d))
            continue;
        if (room == 0) {
            const ms_trace *tr = ms_snapshot_trace(s, d);
            for (size_t e = 0; e < tr->n; e++)
                left_out += tr->action[e] == MS_ACT_OOM;
            continue;
        }
        ms_run *run = NULL;
        const ms_oom_report *r = NULL;
        ms_run_options ro;
        memset(&ro, 0, sizeof ro);
        ro.oom_top_sites = (size_t)top_k;
        if (ms_run_open(&run, s, d, &ro, err) || ms_run_ooms(&r, run, err)) {
            ms_run_free(run);
            cJSON_Delete(file);
            return NULL;
        }
        size_t take = r->n < room ? r->n : room;
        /* Each OOM says what kind of recording failed: one step, a loop's iteration. */
        cJSON *shape = take ? shape_json_of_run(run, err) : NULL;
        if (take && !shape) {
            ms_run_free(run);
            cJSON_Delete(file);
            return NULL;
        }
        for (size_t i = 0; i < take; i++) {
            cJSON *e = oom_to_json(s, &r->items[i]);
            cJSON_AddItemToObject(e, "shape", cJSON_Duplicate(shape, true));
            cJSON_AddItemToArray(arr, e);
        }
        cJSON_Delete(shape);
        room -= take;
        left_out += r->n_events - take;
        if (keep)
            keep(ctx, r);
        ms_run_free(run);
    }
    oom_left_out_json(file, left_out);
    return file;
}
