/* The iterations of one device as JSON (docs/json.md), shared by `summary`, `leaks`,
 * `report` and ms_run_json. */
#include "json/json_iterations.h"

#include <stdlib.h>
#include <string.h>

#include "json/json_util.h"

int64_t ms__iter_idle_us(const ms_idle *idle, size_t k, bool inside)
{
    if (!idle || k >= idle->n_items)
        return 0;
    return inside ? idle->idle_inside_us[k] : idle->idle_before_us[k];
}

cJSON *leaks_iterations_to_json(const ms_iterations *it, const ms_idle *idle, int64_t t0_us)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "method", ms_iter_method_name(it->method));
    cJSON_AddStringToObject(o, "method_text", ms_iter_method_text(it->method));
    cJSON_AddStringToObject(o, "detail", it->detail);
    ms__json_int(o, "count", (int64_t)(it->n));
    if (!it->has_times)
        cJSON_AddFalseToObject(o, "has_times"); /* the times below are null */
    cJSON *items = cJSON_AddArrayToObject(o, "items");
    if (!items) {
        cJSON_Delete(o);
        return NULL;
    }
    /* The iteration the trace ended in (an OOM) is not in items (count stays the
     * complete ones) but in `unfinished`, which views list last, marked, as oom does. */
    cJSON *unf = NULL;
    if (it->n_unfinished) {
        unf = cJSON_CreateObject();
        if (!unf) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    cJSON_AddItemToObject(o, "unfinished", unf ? unf : cJSON_CreateNull());
    for (size_t k = 0; k < it->n + (unf ? 1 : 0); k++) {
        const ms_iteration *x = &it->items[k];
        cJSON *e = k < it->n ? cJSON_CreateObject() : unf;
        if (!e) {
            cJSON_Delete(o);
            return NULL;
        }
        if (k < it->n)
            cJSON_AddItemToArray(items, e);
        ms__json_int(e, "index", (int64_t)((k + 1)));
        bool ht = it->has_times;
        ms__json_time(e, "start_us", ht, x->start_us);
        ms__json_time(e, "end_us", ht, x->end_us);
        ms__json_seconds(e, "start_s", ht, t0_us, x->start_us);
        ms__json_seconds(e, "duration_s", ht, x->start_us, x->end_us);
        if (idle) {
            /* Busy and idle apart, by the rule the charts' run axis compresses by. */
            int64_t before = ms__iter_idle_us(idle, k, false);
            int64_t inside = ms__iter_idle_us(idle, k, true);
            ms__json_seconds(e, "busy_s", ht, x->start_us + inside, x->end_us);
            ms__json_seconds(e, "idle_before_s", ht, 0, before);
            ms__json_seconds(e, "idle_inside_s", ht, 0, inside);
        }
        ms__json_int(e, "start_event", (int64_t)(x->start_event));
        ms__json_int(e, "end_event", (int64_t)(x->end_event));
        ms__json_int(e, "peak_bytes", (int64_t)(x->peak_bytes));
        ms__json_int(e, "live_end_bytes", (int64_t)(x->live_end_bytes));
        cJSON_AddBoolToObject(e, "partial", x->partial);
    }
    if (idle)
        ms__json_seconds(o, "trailing_idle_s", it->has_times, 0, idle->trailing_us);
    return o;
}
