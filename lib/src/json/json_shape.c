/* The recording's shape (memsnap/shape.h) as JSON (docs/json.md "shape"), which every
 * command and ms_run_json show. */
#include "json/json_shape.h"

#include <stdio.h>
#include <string.h>

#include "json/json_iterations.h"
#include "json/json_util.h"

static void site_json(cJSON *o, const ms_snapshot *s, uint32_t frame)
{
    const ms_frame *f = frame == UINT32_MAX ? NULL : ms_snapshot_frame(s, frame);
    if (!f) {
        cJSON_AddNullToObject(o, "call_site");
        return;
    }
    cJSON *c = cJSON_AddObjectToObject(o, "call_site");
    char site[1024];
    ms_site_format(s, frame, site, sizeof site);
    cJSON_AddStringToObject(c, "site", site);
    cJSON_AddStringToObject(c, "filename", ms_snapshot_string(s, f->filename));
    if (f->line == MS_LINE_UNKNOWN)
        cJSON_AddNullToObject(c, "line");
    else
        ms__json_int(c, "line", f->line);
    cJSON_AddStringToObject(c, "function", ms_snapshot_string(s, f->name));
}

cJSON *shape_json(const ms_shape *sh, const ms_snapshot *s, const ms_iterations *it)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char text[512];
    cJSON_AddStringToObject(o, "kind", ms_shape_kind_name(sh->kind));
    ms_shape_text(sh, text, sizeof text);
    cJSON_AddStringToObject(o, "text", text);
    ms__json_int(o, "iterations", sh->iterations);
    cJSON_AddBoolToObject(o, "warm_start", sh->warm_start);
    cJSON *ph = cJSON_AddArrayToObject(o, "phases");
    for (int k = 0; ph && k < MS_PHASE_KIND_COUNT; k++)
        if (sh->phases_seen & (1u << k))
            cJSON_AddItemToArray(ph, cJSON_CreateString(ms_phase_kind_name((ms_phase_kind)k)));
    if (!sh->n_compile) {
        cJSON_AddNullToObject(o, "compile");
    } else {
        cJSON *c = cJSON_AddObjectToObject(o, "compile");
        ms_shape_compile_text(sh, text, sizeof text);
        cJSON_AddStringToObject(c, "text", text);
        ms__json_seconds(c, "seconds", sh->has_times, 0, sh->compile_us);
        ms__json_int(c, "peak_bytes", sh->compile_peak_bytes);
        cJSON_AddBoolToObject(c, "autotuning", sh->compile_autotuning);
        cJSON *ws = cJSON_AddArrayToObject(c, "windows");
        for (size_t k = 0; ws && k < sh->n_compile; k++) {
            const ms_shape_compile *w = &sh->compile[k];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddItemToArray(ws, e);
            ms__json_int(e, "start_event", w->start_event);
            ms__json_int(e, "end_event", w->end_event);
            ms__json_time(e, "start_us", sh->has_times, w->start_us);
            ms__json_time(e, "end_us", sh->has_times, w->end_us);
            ms__json_seconds(e, "seconds", sh->has_times, w->start_us, w->end_us);
            ms__json_int(e, "peak_bytes", w->peak_bytes);
            ms__json_int(e, "peak_event", w->peak_event);
            ms__json_int(e, "allocations", (int64_t)w->allocations);
            cJSON_AddBoolToObject(e, "autotuning", w->autotuning);
        }
    }
    if (!sh->graph_pool_bytes) {
        cJSON_AddNullToObject(o, "cuda_graphs");
    } else {
        cJSON *g = cJSON_AddObjectToObject(o, "cuda_graphs");
        ms_shape_graphs_text(sh, text, sizeof text);
        cJSON_AddStringToObject(g, "text", text);
        ms__json_int(g, "pool_bytes", (int64_t)sh->graph_pool_bytes);
        ms__json_int(g, "pool_live_bytes", (int64_t)sh->graph_pool_live_bytes);
        ms__json_int(g, "pool_segments", sh->graph_pool_segments);
        ms__json_int(g, "capture_end_event", sh->graph_capture_end_event);
        cJSON *r = cJSON_AddArrayToObject(g, "replay_iterations");
        for (size_t k = 0; r && k < sh->graph_replay_count; k++)
            cJSON_AddItemToArray(r, cJSON_CreateNumber((double)(sh->graph_replay_first + k + 1)));
        int64_t most = 0;
        for (size_t k = 0; it && k < it->n; k++)
            if (ms_shape_is_replay(sh, k) && ms_shape_footprint(sh, k, &it->items[k]) > most)
                most = ms_shape_footprint(sh, k, &it->items[k]);
        ms__json_int(g, "replay_footprint_bytes", most);
    }
    if (!sh->alive_end_count) {
        cJSON_AddNullToObject(o, "alive_at_end");
    } else {
        cJSON *a = cJSON_AddObjectToObject(o, "alive_at_end");
        ms__json_int(a, "count", (int64_t)sh->alive_end_count);
        ms__json_int(a, "bytes", (int64_t)sh->alive_end_bytes);
        cJSON_AddBoolToObject(a, "graph", sh->kind == MS_SHAPE_FORWARD_GRAPH_ALIVE);
        site_json(a, s, sh->alive_end_call);
    }
    return o;
}

cJSON *shape_json_of_run(ms_run *run, ms_error *err)
{
    const ms_shape *sh = NULL;
    const ms_iterations *it = NULL;
    if (ms_run_shape(&sh, run, err) || ms_run_iterations(&it, run, err))
        return NULL;
    cJSON *o = shape_json(sh, ms_run_snapshot(run), it);
    return o ? o : ms__json_nomem(err);
}

void shape_mark_iterations(cJSON *iterations, const ms_shape *sh, const ms_iterations *it)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(iterations, "items");
    for (size_t k = 0; sh && it && k < it->n; k++) {
        if (!ms_shape_is_replay(sh, k))
            continue;
        cJSON *e = cJSON_GetArrayItem(items, (int)k);
        cJSON_AddTrueToObject(e, "graph_replay");
        ms__json_int(e, "footprint_bytes", ms_shape_footprint(sh, k, &it->items[k]));
    }
}

cJSON *leaks_device_head_json(ms_run *run, const ms_iterations *it, const ms_idle *idle,
                              int64_t t0_us)
{
    cJSON *dj = cJSON_CreateObject();
    if (!dj)
        return NULL;
    ms__json_int(dj, "device", ms_run_device(run));
    cJSON *ij = leaks_iterations_to_json(it, idle, t0_us);
    const ms_shape *sh = NULL;
    ms_error soft;
    if (ij && !ms_run_shape(&sh, run, &soft))
        shape_mark_iterations(ij, sh, it);
    cJSON_AddItemToObject(dj, "iterations", ij);
    return dj;
}
