/* Leak findings and stacks as JSON (docs/json.md files[].leaks[]), shared by `leaks`,
 * `report` and ms_run_json. */
#include "json/json_leaks.h"

#include <string.h>

#include "json/json_util.h"

/* "line": the frame's line, null when the file gave none (MS_LINE_UNKNOWN). */
static void frame_line_json(cJSON *o, const ms_frame *f)
{
    if (f->line == MS_LINE_UNKNOWN)
        cJSON_AddNullToObject(o, "line");
    else
        ms__json_int(o, "line", f->line);
}

/* {"filename", "line", "function"} of a site frame, empty when unknown. */
static void site_json(cJSON *o, const ms_snapshot *s, uint32_t frame)
{
    if (frame == UINT32_MAX)
        return;
    const ms_frame *f = ms_snapshot_frame(s, frame);
    cJSON_AddStringToObject(o, "filename", ms_snapshot_string(s, f->filename));
    frame_line_json(o, f);
    cJSON_AddStringToObject(o, "function", ms_snapshot_string(s, f->name));
}

void leaks_user_frame_json(cJSON *o, const ms_snapshot *s, uint32_t frame)
{
    if (frame == UINT32_MAX || !ms_snapshot_frame(s, frame)) {
        cJSON_AddNullToObject(o, "user_frame");
        return;
    }
    const ms_frame *f = ms_snapshot_frame(s, frame);
    cJSON *u = cJSON_AddObjectToObject(o, "user_frame");
    if (!u)
        return;
    cJSON_AddStringToObject(u, "filename", ms_snapshot_string(s, f->filename));
    frame_line_json(u, f);
    cJSON_AddStringToObject(u, "name", ms_snapshot_string(s, f->name));
}

static void layer_json(cJSON *o, const ms_snapshot *s, uint32_t layer)
{
    char buf[160];
    if (layer != UINT32_MAX && ms_layer_format(s, layer, buf, sizeof buf) > 0)
        cJSON_AddStringToObject(o, "layer", buf);
    else
        cJSON_AddNullToObject(o, "layer");
}

cJSON *leaks_stack_json(const ms_snapshot *s, uint32_t stack)
{
    cJSON *a = cJSON_CreateArray();
    size_t n = 0;
    const uint32_t *fr = ms_snapshot_stack(s, stack, &n);
    for (size_t k = 0; a && k < n; k++) {
        const ms_frame *f = ms_snapshot_frame(s, fr[k]);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(a, e);
        cJSON_AddStringToObject(e, "filename", ms_snapshot_string(s, f->filename));
        frame_line_json(e, f);
        cJSON_AddStringToObject(e, "name", ms_snapshot_string(s, f->name));
        cJSON_AddStringToObject(e, "kind", ms_frame_kind_name(ms_frame_kind_of(s, fr[k])));
    }
    return a;
}

void leaks_finding_context(const ms_snapshot *s, const ms_timeline *t, const ms_leak_report *r,
                           const ms_leak *L, const char **compile_context,
                           const char **user_metadata)
{
    *compile_context = *user_metadata = NULL;
    const ms_trace *tr = ms_snapshot_trace(s, r->device);
    if (!tr || (!tr->compile_context && !tr->user_metadata))
        return;
    for (size_t k = 0; k < L->n_index; k++) {
        const ms_alloc *a = &t->allocs[r->alloc_index[L->first_index + k]];
        if (a->stack != L->stack)
            continue;
        if (a->alloc_event < 0 || (size_t)a->alloc_event >= tr->n)
            return;
        size_t e = (size_t)a->alloc_event;
        if (tr->compile_context && tr->compile_context[e] != MS_NO_STRING)
            *compile_context = ms_snapshot_string(s, tr->compile_context[e]);
        if (tr->user_metadata && tr->user_metadata[e] != MS_NO_STRING)
            *user_metadata = ms_snapshot_string(s, tr->user_metadata[e]);
        return;
    }
}

/* What a finding and each of its members say alike (ms_leak and ms_leak_member share
 * these fields by name), in one order: where, how much, and the growth. */
typedef struct figures {
    uint32_t site, user_frame, layer;
    uint64_t count, bytes, bytes_each_min, bytes_each_max;
    double growth_count, growth_bytes, growth_allocated_bytes;
} figures;
#define FIGURES_OF(X)                                                                         \
    ((figures){(X)->site, (X)->user_frame, (X)->layer, (X)->count, (X)->bytes,                \
               (X)->bytes_each_min, (X)->bytes_each_max, (X)->growth_count, (X)->growth_bytes, \
               (X)->growth_allocated_bytes})

static void figures_json(cJSON *o, const ms_snapshot *s, figures f)
{
    site_json(cJSON_AddObjectToObject(o, "site"), s, f.site);
    leaks_user_frame_json(o, s, f.user_frame);
    layer_json(o, s, f.layer);
    ms__json_int(o, "count", (int64_t)f.count);
    ms__json_int(o, "bytes", (int64_t)f.bytes);
    ms__json_int(o, "bytes_each", (int64_t)f.bytes_each_min);
    ms__json_int(o, "bytes_each_max", (int64_t)f.bytes_each_max);
    cJSON *g = cJSON_AddObjectToObject(o, "growth_per_iteration");
    ms__json_num(g, "count", f.growth_count);
    ms__json_num(g, "bytes", f.growth_bytes);
    ms__json_num(g, "allocated_bytes", f.growth_allocated_bytes);
}

cJSON *leaks_finding_json(const ms_snapshot *s, const ms_timeline *t, const ms_leak_report *r,
                          const ms_leak *L, int device)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "kind", ms_leak_kind_name(L->kind));
    cJSON_AddStringToObject(e, "pattern", ms_leak_pattern_name(L->pattern));
    cJSON_AddStringToObject(e, "pattern_text", ms_leak_pattern_text(L->pattern));
    ms__json_int(e, "device", device);
    figures_json(e, s, FIGURES_OF(L));
    /* No clock: the event indexes stand in (first_alloc_us holds them). */
    ms__json_time(e, "first_alloc_us", t->has_times, L->first_alloc_us);
    ms__json_time(e, "last_alloc_us", t->has_times, L->last_alloc_us);
    ms__json_seconds(e, "first_alloc_s", t->has_times, t->t_first_us, L->first_alloc_us);
    ms__json_seconds(e, "last_alloc_s", t->has_times, t->t_first_us, L->last_alloc_us);
    if (!t->has_times) {
        ms__json_int(e, "first_alloc_event", L->first_alloc_us);
        ms__json_int(e, "last_alloc_event", L->last_alloc_us);
    }
    if (L->call_site != UINT32_MAX)
        site_json(cJSON_AddObjectToObject(e, "call_site"), s, L->call_site);
    else
        cJSON_AddNullToObject(e, "call_site");
    cJSON *members = cJSON_AddArrayToObject(e, "members");
    for (size_t m = 0; members && m < L->n_members; m++) {
        const ms_leak_member *M = &r->members[L->first_member + m];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(members, o);
        figures_json(o, s, FIGURES_OF(M));
    }
    cJSON_AddItemToObject(e, "stack", leaks_stack_json(s, L->stack));
    const char *cc, *um;
    leaks_finding_context(s, t, r, L, &cc, &um);
    ms__json_str_or_null(e, "compile_context", cc);
    ms__json_str_or_null(e, "user_metadata", um);
    return e;
}
