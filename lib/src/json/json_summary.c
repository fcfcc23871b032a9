/* The `summary --json` object of one file: written here from a snapshot, and read back
 * here into a comparison profile (for `diff`, `ranks` and `report --baseline`), so a key
 * added to one side is added to the other in the same place. */
#include "json/json_summary.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json/json_categories.h"
#include "json/json_iterations.h"
#include "json/json_leaks.h"
#include "json/json_oom.h"
#include "json/json_shape.h"
#include "json/json_util.h"
#include "memsnap/oom.h"
#include "memsnap/run.h"

cJSON *compare_peak_place_json(const ms_peak_place *pl)
{
    if (!pl->known)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    if (pl->iteration)
        ms__json_num(o, "iteration", pl->iteration);
    else
        cJSON_AddNullToObject(o, "iteration");
    ms__json_num(o, "iterations", pl->iterations);
    cJSON_AddBoolToObject(o, "unfinished", pl->unfinished);
    if (pl->phase >= 0)
        cJSON_AddStringToObject(o, "phase", ms_phase_kind_name((ms_phase_kind)pl->phase));
    else
        cJSON_AddNullToObject(o, "phase");
    return o;
}

/* The top sites among the allocations alive right after the peak event (the run's). */
static int add_top_sites(cJSON *dev, ms_run *run, int top_k, ms_error *err)
{
    const ms_snapshot *s = ms_run_snapshot(run);
    cJSON *arr = cJSON_AddArrayToObject(dev, "top_sites");
    const ms_site_total *tot = NULL;
    size_t n_tot = 0;
    int rc = ms_run_peak_sites(&tot, &n_tot, run, err);
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
            ms__json_num(e, "line", f ? (double)f->line : 0);
        ms__json_num(e, "bytes", (double)tot[i].bytes);
        ms__json_num(e, "count", (double)tot[i].count);
        leaks_user_frame_json(e, s, tot[i].user_frame);
        /* What `diff` matches a site by when its line moved between two runs. */
        char shape[32];
        ms_profile_site_shape(s, &tot[i], shape, sizeof shape);
        cJSON_AddStringToObject(e, "shape", shape);
        cJSON_AddItemToArray(arr, e);
    }
    return 0;
}

/* Each oom event with its cause (memsnap oom explains it in full), as many as the file
 * has room for (*room: MS_OOM_MAX_EXPLAINED a file, as `oom` and report explain them); the
 * rest are counted. A file of 65,536 devices with an OOM each would otherwise buy an
 * analysis per device. */
static void add_ooms(cJSON *dev, ms_run *run, size_t *room)
{
    const ms_trace *tr = ms_snapshot_trace(ms_run_snapshot(run), ms_run_device(run));
    cJSON *arr = cJSON_AddArrayToObject(dev, "ooms");
    const ms_oom_report *r = NULL;
    ms_error err;
    size_t k = 0, left_out = 0;
    for (size_t i = 0; i < tr->n; i++) {
        if (tr->action[i] != MS_ACT_OOM)
            continue;
        if (k == *room) {
            left_out++;
            continue;
        }
        if (!r && k == 0 && ms_run_ooms(&r, run, &err))
            r = NULL; /* the cause is extra: the event itself is still listed */
        cJSON *e = cJSON_CreateObject();
        ms__json_num(e, "event", (double)i);
        ms__json_time(e, "time_us", tr->has_times, tr->time_us[i]);
        ms__json_num(e, "requested_bytes", (double)tr->size[i]);
        ms__json_num(e, "device_free_bytes", (double)tr->addr[i]);
        if (r && k < r->n && r->items[k].event == (int64_t)i) {
            const ms_oom *o = &r->items[k];
            cJSON_AddStringToObject(e, "cause", ms_oom_cause_name(o->cause));
            ms__json_num(e, "free_in_reserved_bytes", (double)o->free_in_reserved_bytes);
            ms__json_num(e, "largest_free_block_bytes", (double)o->largest_free_block_bytes);
            cJSON_AddBoolToObject(e, "approximate", o->approximate);
        }
        k++;
        cJSON_AddItemToArray(arr, e);
    }
    *room -= k;
    oom_left_out_json(dev, left_out);
}

cJSON *summary_leaks_json(const ms_leak_totals *lt)
{
    cJSON *o = cJSON_CreateObject();
    ms__json_num(o, "findings", (double)lt->findings);
    ms__json_num(o, "bytes", (double)lt->bytes);
    ms__json_num(o, "growth_per_iteration_bytes", lt->growth_bytes);
    return o;
}

/* The iterations, and what the memory alive at the peak is and where it falls in them
 * (docs/json.md peak.categories, peak.place): NULL with err filled when the run has none. */
static cJSON *device_iterations(cJSON *peak, ms_run *run, ms_error *err)
{
    const ms_iterations *it = NULL;
    const ms_idle *idle = NULL;
    if (ms_run_iterations(&it, run, err) || ms_run_idle(&idle, run, err))
        return NULL;
    const ms_trace *tr = ms_snapshot_trace(ms_run_snapshot(run), ms_run_device(run));
    cJSON *iters = leaks_iterations_to_json(it, idle, tr->n ? tr->time_us[0] : 0);
    int64_t by[MS_CAT_COUNT];
    ms_peak_place pl;
    const ms_shape *sh = NULL;
    if (iters && ms_run_peak_categories(by, run, err) == 0 &&
        ms_run_peak_place(&pl, run, err) == 0 && ms_run_shape(&sh, run, err) == 0) {
        shape_mark_iterations(iters, sh, it);
        cJSON_AddItemToObject(peak, "categories", categories_object(by));
        cJSON_AddItemToObject(peak, "place", compare_peak_place_json(&pl));
        return iters;
    }
    cJSON_Delete(iters);
    if (err->code == MS_OK)
        ms__json_nomem(err);
    return NULL;
}

cJSON *summary_device_json(ms_run *run, int top_k, bool leaks, size_t *oom_room, ms_error *err)
{
    const ms_snapshot *s = ms_run_snapshot(run);
    int device = ms_run_device(run);
    const ms_timeline *t = NULL;
    if (ms_run_timeline(&t, run, err))
        return NULL;
    cJSON *dev = cJSON_CreateObject();
    ms__json_num(dev, "device", device);
    ms__json_num(dev, "events", (double)t->n_events);
    cJSON *actions = cJSON_AddObjectToObject(dev, "actions");
    for (int a = 0; a < MS_ACT_COUNT; a++)
        if (t->action_counts[a])
            ms__json_num(actions, ms_action_name((ms_action)a), (double)t->action_counts[a]);
    /* A trace without times (docs/json.md "has_times") gives null times, never a made-up
     * 0 s: the event indexes beside them are the axis. */
    cJSON_AddBoolToObject(dev, "has_times", t->has_times);
    const ms_trace *tr = ms_snapshot_trace(s, device);
    if (tr && tr->one_instant) /* why there are no times: every entry carries the same */
        cJSON_AddTrueToObject(dev, "one_instant");
    /* Only on a trace whose times go backwards, read as one without times. */
    if (tr && tr->times_backward_at)
        ms__json_num(dev, "times_backward_at", (double)tr->times_backward_at);
    cJSON *span = cJSON_AddObjectToObject(dev, "time");
    ms__json_time(span, "first_us", t->has_times, t->t_first_us);
    ms__json_time(span, "last_us", t->has_times, t->t_last_us);
    ms__json_seconds(span, "seconds", t->has_times, t->t_first_us, t->t_last_us);
    cJSON *peak = cJSON_AddObjectToObject(dev, "peak");
    ms__json_num(peak, "bytes", (double)t->peak_bytes);
    ms__json_time(peak, "time_us", t->has_times, t->peak_time_us);
    ms__json_seconds(peak, "seconds", t->has_times, t->t_first_us, t->peak_time_us);
    ms__json_num(peak, "event", (double)t->peak_event);
    /* What the allocator held free inside its segments then: one replay up to the peak. */
    ms_free_in_reserved fr;
    ms_error ferr;
    if (ms_run_peak_free(&fr, run, &ferr) == 0) {
        ms__json_num(peak, "free_in_reserved_bytes", (double)fr.free_bytes);
        ms__json_num(peak, "free_blocks", (double)fr.free_blocks);
        ms__json_num(peak, "largest_free_block_bytes", (double)fr.largest_free);
        cJSON_AddBoolToObject(peak, "free_approximate", fr.approximate);
    }
    cJSON *live = cJSON_AddObjectToObject(dev, "live_end");
    ms__json_num(live, "bytes", (double)t->live_end_bytes);
    ms__json_num(live, "count", (double)t->live_end_count);
    cJSON *res = cJSON_AddObjectToObject(dev, "reserved");
    ms__json_num(res, "peak_bytes", (double)t->reserved_peak_bytes);
    ms__json_num(res, "end_bytes", (double)t->reserved_end_bytes);
    ms__json_num(res, "start_bytes", (double)t->reserved_start);
    cJSON *pre = cJSON_AddObjectToObject(dev, "preexisting");
    ms__json_num(pre, "bytes", (double)t->preexisting_bytes);
    ms__json_num(pre, "count", (double)t->preexisting_count);
    cJSON_AddBoolToObject(dev, "trace_complete", t->trace_complete);
    const char *wrap = ms_wrap_evidence_name(t->wrap_evidence);
    if (wrap)
        cJSON_AddStringToObject(dev, "ring_buffer_wrapped", wrap);
    else
        cJSON_AddNullToObject(dev, "ring_buffer_wrapped");
    add_ooms(dev, run, oom_room);
    cJSON *iters = device_iterations(peak, run, err);
    if (!iters) {
        cJSON_Delete(dev);
        return NULL;
    }
    cJSON_AddItemToObject(dev, "iterations", iters);
    cJSON *shape = shape_json_of_run(run, err);
    if (!shape) {
        cJSON_Delete(dev);
        return NULL;
    }
    cJSON_AddItemToObject(dev, "shape", shape);
    /* The leak totals, or none when the leak analysis cannot read this trace: the rest
     * of the summary still stands, and a reader takes a missing object as unknown. */
    ms_leak_totals lt;
    ms_error lerr;
    if (leaks && ms_run_leak_totals(&lt, run, &lerr) == 0)
        cJSON_AddItemToObject(dev, "leaks", summary_leaks_json(&lt));
    size_t n_ann, n_dev_ann = 0;
    const ms_annotation *ann = ms_snapshot_annotations(s, &n_ann);
    for (size_t i = 0; i < n_ann; i++)
        n_dev_ann += ann[i].device == device;
    ms__json_num(dev, "annotations", (double)n_dev_ann);
    if (!t->has_times)
        ms__json_num(dev, "annotations_unplaced", (double)ms_snapshot_annotations_unplaced(s));
    if (add_top_sites(dev, run, top_k, err)) {
        cJSON_Delete(dev);
        dev = NULL;
    }
    return dev;
}

cJSON *summary_run_device_json(ms_run *run, int top_k, ms_error *err)
{
    size_t room = MS_OOM_MAX_EXPLAINED;
    return summary_device_json(run, top_k, true, &room, err);
}

cJSON *summary_file_json(const char *path, const ms_snapshot *s, int device, int top_k,
                         ms_error *err)
{
    return summary_file_json_ex(path, s, device, top_k, true, NULL, err);
}

bool summary_setting_is_default(const char *key, const char *value)
{
    /* PyTorch's CUDACachingAllocator defaults (c10/cuda/CUDAAllocatorConfig.h), as the
     * snapshot writes them; a key this list does not know is shown. */
    static const char *const defaults[][2] = {
        {"PYTORCH_CUDA_ALLOC_CONF", ""},
        {"max_split_size", "-1"},
        {"garbage_collection_threshold", "0"},
        {"expandable_segments", "False"},
        {"pinned_num_register_threads", "1"},
        {"release_lock_on_cudamalloc", "False"},
        {"pinned_use_cuda_host_register", "False"},
        {"graph_capture_record_stream_reuse", "False"},
    };
    if (!key || !value)
        return false;
    if (!strcmp(key, "roundup_power2_divisions")) {
        /* "{1: 0, 2: 0, ...}": the default rounds no size class, every value 0. */
        for (const char *p = strchr(value, ':'); p; p = strchr(p + 1, ':')) {
            const char *v = p + 1;
            while (*v == ' ')
                v++;
            if (*v != '0' || (v[1] >= '0' && v[1] <= '9'))
                return false;
        }
        return true;
    }
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (!strcmp(key, defaults[i][0])) {
            if (!strcmp(value, defaults[i][1]))
                return true;
            /* 0.0 and 0 alike */
            char *end = NULL;
            double a = strtod(value, &end);
            if (*value && end && !*end && *defaults[i][1]) {
                char *dend = NULL;
                double b = strtod(defaults[i][1], &dend);
                return dend && !*dend && a == b;
            }
            return false;
        }
    return false;
}

cJSON *summary_file_head_json(const char *path, const ms_snapshot *s)
{
    cJSON *file = cJSON_CreateObject();
    cJSON_AddStringToObject(file, "path", path);
    ms__json_num(file, "pickle_protocol", ms_snapshot_pickle_protocol(s));
    ms__json_num(file, "pickle_bytes", (double)ms_snapshot_input_bytes(s));
    size_t n_set;
    const ms_setting *set = ms_snapshot_settings(s, &n_set);
    cJSON *settings = cJSON_AddObjectToObject(file, "allocator_settings");
    for (size_t i = 0; i < n_set; i++)
        cJSON_AddStringToObject(settings, ms_snapshot_string(s, set[i].key),
                                ms_snapshot_string(s, set[i].value));
    return file;
}

cJSON *summary_file_json_ex(const char *path, const ms_snapshot *s, int device, int top_k,
                            bool leaks, ms_run *known, ms_error *err)
{
    cJSON *file = summary_file_head_json(path, s);
    cJSON *devices = cJSON_AddArrayToObject(file, "devices");
    size_t oom_room = MS_OOM_MAX_EXPLAINED;
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        if (device >= 0 ? d != device : !ms__device_in_use(s, d))
            continue;
        cJSON *dev = NULL;
        if (known && ms_run_device(known) == d && ms_run_snapshot(known) == s) {
            dev = summary_device_json(known, top_k, leaks, &oom_room, err);
        } else {
            /* The active curve alone (8 bytes per event) gives the iterations their
             * peaks, and the allocations alive at the peak are collected while the
             * timeline is built: one pass over the trace in all. The leak totals come
             * from a replay that keeps only the lives a leak can hold (the run's
             * ms_run_leak_totals): a list of every life would cost a third more memory
             * on a long trace. */
            ms_run_options ro;
            memset(&ro, 0, sizeof ro);
            ro.timeline_flags = MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE;
            /* An OOM's explanation needs both curves and the lives: asked for now, one
             * timeline serves all, where a fuller one built later would sit beside the
             * first (a trace with an OOM after every allocation: 5 bytes an event). */
            const ms_trace *tr = ms_snapshot_trace(s, d);
            if (tr->n && memchr(tr->action, MS_ACT_OOM, tr->n))
                ro.timeline_flags |= MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS;
            ms_run *run = NULL;
            if (ms_run_open(&run, s, d, &ro, err) == 0)
                dev = summary_device_json(run, top_k, leaks, &oom_room, err);
            ms_run_free(run);
        }
        if (!dev) {
            cJSON_Delete(file);
            return NULL;
        }
        cJSON_AddItemToArray(devices, dev);
    }
    return file;
}

/* ------------------------------------------------------------------ reading it back */

/* cJSON numbers are doubles: integers beyond 2^53 would come back rounded. */
#define MAX_EXACT 9007199254740992.0


/* Reads an exact integer; a missing key is an error only when `required`. */
static int get_int(ms_error *err, const cJSON *obj, const char *key, bool required,
                   int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return required ? ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON lacks \"%s\"", key) : 0;
    double d = cJSON_GetNumberValue(v);
    if (!cJSON_IsNumber(v) || !(d >= -MAX_EXACT && d <= MAX_EXACT) || d != (double)(int64_t)d)
        return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"%s\" is not an integer", key);
    *out = (int64_t)d;
    return 0;
}

static int get_uint(ms_error *err, const cJSON *obj, const char *key, bool required,
                    uint64_t *out)
{
    int64_t v = 0;
    int rc = get_int(err, obj, key, required, &v);
    if (rc)
        return rc;
    if (v < 0)
        return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"%s\" is negative", key);
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        *out = (uint64_t)v;
    return 0;
}

static const cJSON *get_obj(ms_error *err, const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsObject(v)) {
        ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON lacks the object \"%s\"", key);
        return NULL;
    }
    return v;
}

/* The device to compare: the one asked for, else the one with the most events (ties: the
 * lowest id), the same rule the pickle path applies. */
static const cJSON *pick_device(ms_error *err, const cJSON *devices, int want)
{
    const cJSON *best = NULL;
    int64_t best_events = -1, best_id = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, devices)
    {
        int64_t id = 0, events = 0;
        if (get_int(err, d, "device", true, &id) || get_int(err, d, "events", true, &events))
            return NULL;
        if (want >= 0) {
            if (id == want)
                return d;
            continue;
        }
        if (events > best_events || (events == best_events && id < best_id)) {
            best = d;
            best_events = events;
            best_id = id;
        }
    }
    if (!best) {
        if (want >= 0)
            ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary has no device %d", want);
        else
            ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary lists no device");
    }
    return best;
}

/* The leak totals, when the summary has them: one written before summaries carried
 * leaks leaves them unknown, which is not the same as no leak. */
static int read_leaks(ms_error *err, const cJSON *dev, ms_profile *p)
{
    const cJSON *lk = cJSON_GetObjectItemCaseSensitive(dev, "leaks");
    if (!lk || cJSON_IsNull(lk))
        return 0;
    if (!cJSON_IsObject(lk))
        return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"leaks\" is not an object");
    ms_leak_totals lt = {0, 0, 0.0};
    if (get_uint(err, lk, "findings", true, &lt.findings) ||
        get_uint(err, lk, "bytes", true, &lt.bytes))
        return MS_ERR_FORMAT;
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(lk, "growth_per_iteration_bytes");
    double gv = cJSON_GetNumberValue(g);
    if (!cJSON_IsNumber(g) || !(gv >= 0 && gv <= MAX_EXACT))
        return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"growth_per_iteration_bytes\" is not a byte count");
    lt.growth_bytes = gv;
    ms_profile_set_leaks(p, &lt);
    return 0;
}

/* peak.place (a summary written before it carried one has none: the place stays unknown
 * and comparisons fall back on the time of the peak). */
static int read_place(ms_error *err, const cJSON *pl, ms_profile *p)
{
    if (!pl || cJSON_IsNull(pl))
        return 0;
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(pl, "iteration");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(pl, "iterations");
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(pl, "phase");
    if (!cJSON_IsObject(pl) || !(cJSON_IsNull(it) || cJSON_IsNumber(it)) || !cJSON_IsNumber(n) ||
        !(cJSON_IsNull(ph) || cJSON_IsString(ph)) ||
        (cJSON_IsNumber(it) && !(it->valuedouble >= 1 && it->valuedouble <= 4294967295.0)) ||
        !(n->valuedouble >= 0 && n->valuedouble <= 4294967295.0)) {
        ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"peak.place\" is not {iteration, iterations, phase}");
        return MS_ERR_FORMAT;
    }
    ms_peak_place place = {true, cJSON_IsNumber(it) ? (uint32_t)it->valuedouble : 0,
                           (uint32_t)n->valuedouble,
                           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pl, "unfinished")), -1};
    for (int k = 0; cJSON_IsString(ph) && k < MS_PHASE_KIND_COUNT; k++)
        if (!strcmp(ph->valuestring, ms_phase_kind_name((ms_phase_kind)k)) ||
            !strcmp(ph->valuestring, ms_phase_kind_text((ms_phase_kind)k))) /* as 0.2 wrote it */
            place.phase = k;
    ms_profile_set_peak_place(p, &place);
    return 0;
}

/* The CUDA-graph figures of "shape.cuda_graphs" (null: no pool); a summary without
 * "shape" leaves them unknown. */
static int read_graphs(ms_error *err, const cJSON *shape, ms_profile *p)
{
    if (!shape)
        return 0;
    if (!cJSON_IsObject(shape))
        return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"shape\" is not an object");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(shape, "cuda_graphs");
    ms_profile_graphs gr = {true, 0, 0, 0};
    if (g && !cJSON_IsNull(g)) {
        int64_t pool = 0, foot = 0;
        if (!cJSON_IsObject(g))
            return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"shape.cuda_graphs\" is not an object");
        if (get_int(err, g, "pool_bytes", true, &pool) ||
            get_int(err, g, "replay_footprint_bytes", false, &foot))
            return MS_ERR_FORMAT;
        if (pool < 0 || foot < 0)
            return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"shape.cuda_graphs\" holds a negative size");
        gr.pool_bytes = (uint64_t)pool;
        gr.replay_footprint_bytes = foot;
        gr.replay_iterations = (uint32_t)cJSON_GetArraySize(
            cJSON_GetObjectItemCaseSensitive(g, "replay_iterations"));
    }
    ms_profile_set_graphs(p, &gr);
    return 0;
}

static int fill_profile(ms_error *err, const cJSON *dev, ms_profile *p)
{
    int64_t v = 0;
    if (get_int(err, dev, "device", true, &v))
        return MS_ERR_FORMAT;
    p->device = (int)v;
    if (get_uint(err, dev, "events", true, &p->events))
        return MS_ERR_FORMAT;

    const cJSON *peak = get_obj(err, dev, "peak");
    const cJSON *live = peak ? get_obj(err, dev, "live_end") : NULL;
    const cJSON *res = live ? get_obj(err, dev, "reserved") : NULL;
    if (!res)
        return MS_ERR_FORMAT;
    /* A trace without times has null times (has_times false): the event stands in. */
    p->has_times = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(dev, "has_times"));
    if (get_int(err, peak, "bytes", true, &p->peak_bytes) ||
        (p->has_times && get_int(err, peak, "time_us", true, &p->peak_time_us)) ||
        get_int(err, peak, "event", true, &p->peak_event) ||
        get_int(err, live, "bytes", true, &p->live_end_bytes) ||
        get_uint(err, live, "count", true, &p->live_end_count) ||
        get_int(err, res, "peak_bytes", true, &p->reserved_peak_bytes) ||
        get_int(err, res, "end_bytes", true, &p->reserved_end_bytes))
        return MS_ERR_FORMAT;

    /* Peak times are compared as time into the trace, so the trace start is needed. */
    const cJSON *span = cJSON_GetObjectItemCaseSensitive(dev, "time");
    if (!p->has_times) {
        p->peak_time_us = p->peak_event;
        p->t_first_us = 0;
    } else if (cJSON_IsObject(span)) {
        if (get_int(err, span, "first_us", true, &p->t_first_us))
            return MS_ERR_FORMAT;
    } else if (get_int(err, dev, "t_first_us", false, &p->t_first_us)) {
        return MS_ERR_FORMAT;
    }

    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(dev, "actions");
    if (actions && !cJSON_IsObject(actions))
        return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"actions\" is not an object");
    if (get_uint(err, actions, "alloc", false, &p->alloc_count) ||
        get_uint(err, actions, "oom", false, &p->oom_count))
        return MS_ERR_FORMAT;
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(dev, "trace_complete");
    p->trace_complete = cJSON_IsTrue(tc);
    if (read_leaks(err, dev, p))
        return MS_ERR_FORMAT;
    if (read_place(err, cJSON_GetObjectItemCaseSensitive(peak, "place"), p))
        return MS_ERR_FORMAT;
    if (read_graphs(err, cJSON_GetObjectItemCaseSensitive(dev, "shape"), p))
        return MS_ERR_FORMAT;

    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(dev, "top_sites");
    if (sites && !cJSON_IsArray(sites))
        return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"top_sites\" is not a list");
    if (sites) {
        uint64_t sum = 0;
        const cJSON *st;
        cJSON_ArrayForEach(st, sites)
        {
            const char *site = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "site"));
            const char *fn =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "function"));
            /* A summary written before shapes were: unknown, matched by file and function. */
            const char *shape =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "shape"));
            uint64_t bytes = 0, count = 0;
            if (!site)
                return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON top site without \"site\"");
            if (get_uint(err, st, "bytes", true, &bytes) ||
                get_uint(err, st, "count", true, &count))
                return MS_ERR_FORMAT;
            int rc = ms_profile_add_site_shaped(p, MS_SITES_AT_PEAK, site, fn ? fn : "", shape,
                                                bytes, count, err);
            if (rc)
                return rc;
            sum += bytes;
        }
        p->sites_known[MS_SITES_AT_PEAK] = true;
        /* The list is the whole story exactly when it accounts for every byte at the
         * peak; otherwise `summary --top K` cut it. */
        p->sites_complete[MS_SITES_AT_PEAK] = p->peak_bytes >= 0 && sum == (uint64_t)p->peak_bytes;
        ms_profile_sort_sites(p, MS_SITES_AT_PEAK);
    }
    return 0;
}

int summary_profile_read(ms_profile **out, const char *path, const cJSON *devices, int device,
                         ms_error *err)
{
    *out = NULL;
    const cJSON *dev = pick_device(err, devices, device);
    if (!dev)
        return MS_ERR_FORMAT;
    ms_profile *p = NULL;
    int rc = ms_profile_new(&p, path, err);
    if (rc)
        return rc;
    if ((rc = fill_profile(err, dev, p)) != 0) {
        ms_profile_free(p);
        return rc;
    }
    *out = p;
    return 0;
}
