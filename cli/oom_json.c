#include "oom_json.h"
#include "shape_json.h"

#include <string.h>

#include "cli_util.h"
#include "memsnap/run.h"

/* The JSON keys of the categories, in the order of ms_category. */
static const char *const CATEGORY_KEYS[MS_OOM_CATEGORIES] = {
    "parameter", "gradient", "optimizer_state", "activation",
    "temporary", "workspace", "input",           "other"};

static void num(cJSON *o, const char *key, double v)
{
    cJSON_AddNumberToObject(o, key, v);
}

cJSON *oom_to_json(const ms_snapshot *s, const ms_oom *o)
{
    cJSON *e = cJSON_CreateObject();
    num(e, "device", o->device);
    num(e, "event", (double)o->event);
    num(e, "time_us", (double)o->time_us);
    num(e, "request_bytes", (double)o->request_bytes);
    num(e, "request_block_bytes", (double)o->request_block_bytes);
    num(e, "segment_request_bytes", (double)o->segment_request_bytes);
    num(e, "device_free_bytes", (double)o->device_free_bytes);
    num(e, "allocated_bytes", (double)o->allocated_bytes);
    num(e, "active_bytes", (double)o->active_bytes);
    num(e, "reserved_bytes", (double)o->reserved_bytes);
    num(e, "free_in_reserved_bytes", (double)o->free_in_reserved_bytes);
    num(e, "free_blocks", (double)o->free_blocks);
    num(e, "largest_free_block_bytes", (double)o->largest_free_block_bytes);
    num(e, "usable_free_bytes", (double)o->usable_free_bytes);
    num(e, "usable_free_blocks", (double)o->usable_free_blocks);
    num(e, "largest_usable_block_bytes", (double)o->largest_usable_block);
    num(e, "largest_allocation_bytes", (double)o->largest_alive_bytes);
    num(e, "live_requested_bytes", (double)o->live_requested_bytes);
    num(e, "segments", (double)o->n_segments);
    cJSON_AddBoolToObject(e, "limit_refused", o->limit_refused);
    cJSON_AddStringToObject(e, "cause", ms_oom_cause_name(o->cause));
    cJSON_AddStringToObject(e, "why", o->why);
    cJSON_AddStringToObject(e, "cause_basis", ms_oom_basis_name(o->basis));
    cJSON_AddStringToObject(e, "evidence", o->evidence);
    cJSON_AddStringToObject(e, "form", o->inference ? "inference" : "training");
    if (o->limit_bytes) {
        num(e, "limit_bytes", (double)o->limit_bytes);
        cJSON_AddStringToObject(e, "limit_source", o->limit_is_device ? "device" : "limit");
    } else {
        cJSON_AddNullToObject(e, "limit_bytes");
        cJSON_AddNullToObject(e, "limit_source");
    }
    if (o->prev_layer_calls > 0 && o->act_layer_calls > 0) {
        cJSON *st = cJSON_AddObjectToObject(e, "unfinished_step");
        num(st, "layer_calls_done", (double)o->act_layer_calls);
        num(st, "layer_calls_previous", (double)o->prev_layer_calls);
        num(st, "fraction_done", o->step_done);
        num(st, "bytes_per_layer_call", (double)o->act_layer_bytes / (double)o->act_layer_calls);
        /* Over the same calls the ratio compares (the previous step's first ones). */
        num(st, "previous_bytes_per_layer_call",
            o->act_ratio > 0 ? (double)o->act_layer_bytes / (double)o->act_layer_calls / o->act_ratio
                             : 0);
        num(st, "activation_ratio", o->act_ratio);
        num(st, "base_bytes", (double)o->step_base_bytes);
        num(st, "forward_need_bytes", (double)o->forward_need_bytes);
        num(st, "step_need_bytes", (double)o->step_need_bytes);
        num(st, "step_need_reserved_bytes", (double)o->step_need_reserved_bytes);
    } else {
        cJSON_AddNullToObject(e, "unfinished_step");
    }
    if (o->basis == MS_OOM_BASIS_SHARE_OF_LIVE) {
        cJSON_AddNullToObject(e, "still_to_allocate_bytes");
        cJSON_AddNullToObject(e, "basis_iteration");
    } else {
        num(e, "still_to_allocate_bytes", (double)o->still_to_allocate);
        num(e, "basis_iteration", (double)o->basis_iteration + 1);
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
            num(cat, CATEGORY_KEYS[i], (double)o->category_bytes[i]);
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
        num(st, "bytes", (double)o->top_sites[i].bytes);
        num(st, "count", (double)o->top_sites[i].count);
        cJSON_AddItemToArray(sites, st);
    }
    if (o->act_layer_calls > 0) {
        cJSON *ac = cJSON_AddObjectToObject(e, "activations");
        num(ac, "layer_calls", (double)o->act_layer_calls);
        num(ac, "bytes", (double)o->act_layer_bytes);
        num(ac, "bytes_per_layer_call", (double)(o->act_layer_bytes / (int64_t)o->act_layer_calls));
        num(ac, "checkpoint_keep_bytes", (double)o->checkpoint_keep_bytes);
        num(ac, "checkpoint_save_bytes", (double)o->checkpoint_save_bytes);
    } else {
        cJSON_AddNullToObject(e, "activations");
    }
    if (o->peak_iteration == SIZE_MAX)
        cJSON_AddNullToObject(e, "peak_iteration");
    else
        num(e, "peak_iteration", (double)o->peak_iteration + 1);
    cJSON *its = cJSON_AddArrayToObject(e, "iterations");
    for (size_t i = 0; i < o->n_iters; i++) {
        cJSON *it = cJSON_CreateObject();
        num(it, "index", (double)o->iters[i].index + 1);
        num(it, "end_event", (double)o->iters[i].end_event);
        num(it, "live_end_bytes", (double)o->iters[i].live_end_bytes);
        num(it, "peak_bytes", (double)o->iters[i].peak_bytes);
        cJSON_AddBoolToObject(it, "unfinished", o->iters[i].unfinished);
        cJSON_AddItemToArray(its, it);
    }
    if (o->leak_site != UINT32_MAX || o->leak_bytes) {
        cJSON *lk = cJSON_AddObjectToObject(e, "leak");
        char buf[1024];
        ms_site_format(s, o->leak_site, buf, sizeof buf);
        cJSON_AddStringToObject(lk, "site", o->leak_site == UINT32_MAX ? "" : buf);
        num(lk, "bytes", (double)o->leak_bytes);
        num(lk, "growth_bytes_per_iteration", o->leak_growth_bytes);
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
        num(obj, "ooms_left_out", (double)n);
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
        if (device >= 0 ? d != device : !cli_device_in_use(s, d))
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

static double get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *key)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return v ? v : "";
}

static const char *sz(double bytes, char *buf)
{
    ms_format_bytes((int64_t)bytes, buf, 32);
    return buf;
}

void oom_print_json(FILE *out, const cJSON *e, int indent)
{
    char a[32], b[32], c[32];
    int w = indent;
    fprintf(out, "%*sOOM on device %.0f at event %.0f: cause %s%s\n", w, "", get(e, "device"),
            get(e, "event"), str(e, "cause"),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "approximate")) ? " (approximate)" : "");
    shape_print_json(out, cJSON_GetObjectItemCaseSensitive(e, "shape"), w + 2, 17);
    fprintf(out, "%*s  request           %s (block %s; a new segment would be %s)\n", w, "",
            sz(get(e, "request_bytes"), a), sz(get(e, "request_block_bytes"), b),
            sz(get(e, "segment_request_bytes"), c));
    fprintf(out, "%*s  device free       %s%s\n", w, "", sz(get(e, "device_free_bytes"), a),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "limit_refused"))
                ? " (far more than the request: a limit refused it, not the GPU)"
                : "");
    fprintf(out, "%*s  allocated         %s of %s reserved in %.0f segment%s\n", w, "",
            sz(get(e, "allocated_bytes"), a), sz(get(e, "reserved_bytes"), b), get(e, "segments"),
            get(e, "segments") == 1 ? "" : "s");
    fprintf(out, "%*s  free in reserved  %s in %.0f block%s, largest %s\n", w, "",
            sz(get(e, "free_in_reserved_bytes"), a), get(e, "free_blocks"),
            get(e, "free_blocks") == 1 ? "" : "s",
            sz(get(e, "largest_free_block_bytes"), b));
    if (get(e, "usable_free_bytes") != get(e, "free_in_reserved_bytes"))
        fprintf(out, "%*s    usable for it   %s in %.0f block%s, largest %s (same pool and stream)\n",
                w, "", sz(get(e, "usable_free_bytes"), a), get(e, "usable_free_blocks"),
                cli_plural(get(e, "usable_free_blocks")), sz(get(e, "largest_usable_block_bytes"), b));
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "categories");
    if (cJSON_IsObject(cat)) {
        fprintf(out, "%*s  categories%s", w, "",
                strcmp(str(e, "categories_source"), "stacks") ? "       " : " (from stacks)");
        const cJSON *kv;
        cJSON_ArrayForEach(kv, cat)
        {
            if (kv->valuedouble > 0)
                fprintf(out, " %s %s", kv->string, sz(kv->valuedouble, a));
        }
        fprintf(out, "\n");
    } else {
        fprintf(out, "%*s  categories        not known\n", w, "");
    }
    const cJSON *its = cJSON_GetObjectItemCaseSensitive(e, "iterations");
    if (cJSON_GetArraySize(its) > 0) {
        /* Peaks tell what each iteration needed; live memory at the ends tells what it
         * kept (a leak grows there). */
        const char *label = "iterations       ";
        const cJSON *it;
        double prev = -1, top = get(e, "peak_iteration");
        cJSON_ArrayForEach(it, its)
        {
            double idx = get(it, "index");
            const char *highest = idx == top ? ", the highest" : "";
            fprintf(out, "%*s  %s #%-3.0f ", w, "", label, idx);
            label = "                 ";
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "unfinished"))) {
                /* It has no end: what it reached before failing is what tells. */
                fprintf(out, "peak so far %s%s; unfinished: the failure\n",
                        sz(get(it, "peak_bytes"), a), highest);
                continue;
            }
            double v = get(it, "live_end_bytes");
            fprintf(out, "peak %s%s; live at its end %s", sz(get(it, "peak_bytes"), c), highest,
                    sz(v, a));
            if (prev >= 0 && v != prev)
                fprintf(out, " (%s%s)", v > prev ? "+" : "-", sz(v > prev ? v - prev : prev - v, b));
            prev = v;
            fprintf(out, "\n");
        }
    }
    fprintf(out, "%*s  why               %s\n", w, "", cli_term(str(e, "why")));
    if (str(e, "evidence")[0])
        fprintf(out, "%*s  evidence          %s\n", w, "", cli_term(str(e, "evidence")));
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(e, "unfinished_step");
    if (cJSON_IsObject(step)) {
        const cJSON *st = step;
        /* How far the failing step got and how much larger it is: the need is the
         * whole step's, not what it reached. */
        double ratio = get(st, "activation_ratio");
        fprintf(out, "%*s  step so far       %.0f of the previous step's %.0f layer calls (%.0f%%); "
                     "%s per call, %.1fx the previous %s%s\n",
                w, "", get(st, "layer_calls_done"), get(st, "layer_calls_previous"),
                100.0 * get(st, "fraction_done"), sz(get(st, "bytes_per_layer_call"), a), ratio,
                sz(get(st, "previous_bytes_per_layer_call"), b),
                ratio >= 1.25 ? ": the input grew" : ratio <= 0.8 ? ": the input shrank" : "");
        fprintf(out, "%*s  whole step needs  about %s at its peak (the forward about %s at its end)",
                w, "", sz(get(st, "step_need_bytes"), a), sz(get(st, "forward_need_bytes"), b));
        double need = get(st, "step_need_bytes"), held = get(st, "step_need_reserved_bytes");
        if (need > 0 && held > need * 1.05)
            fprintf(out, ", %s reserved at the allocator's %.2fx", sz(held, a), held / need);
        if (get(e, "limit_bytes") > 0)
            fprintf(out, "; %s %s", strcmp(str(e, "limit_source"), "device") ? "the limit is about"
                                                                             : "the device allowed",
                    sz(get(e, "limit_bytes"), c));
        fprintf(out, "\n");
    }
    /* Without history (share_of_live) the why and the advice say what the free memory
     * was weighed against. */
    const char *basis = str(e, "cause_basis");
    if (basis[0] && strcmp(basis, "share_of_live"))
        fprintf(out, "%*s  to finish it      %s more to allocate, from #%.0f: %s\n", w, "",
                sz(get(e, "still_to_allocate_bytes"), a), get(e, "basis_iteration"),
                !strcmp(basis, "previous_iteration_peak")
                    ? "its growth from the same point to its peak"
                    : "everything it allocated after the same point (this one is larger)");
    const cJSON *adv;
    cJSON_ArrayForEach(adv, cJSON_GetObjectItemCaseSensitive(e, "advice"))
        fprintf(out, "%*s  advice            %s\n", w, "", cli_term(cJSON_GetStringValue(adv)));
    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(e, "top_sites");
    if (cJSON_GetArraySize(sites) > 0) {
        fprintf(out, "%*s  top sites alive at the failure:\n", w, "");
        const cJSON *st;
        cJSON_ArrayForEach(st, sites)
            fprintf(out, "%*s  %12s %8.0f  %s %s\n", w, "", sz(get(st, "bytes"), a),
                    get(st, "count"), cli_term(str(st, "site")), cli_term(str(st, "function")));
    }
    if (str(e, "note")[0])
        fprintf(out, "%*s  note              %s\n", w, "", cli_term(str(e, "note")));
}
