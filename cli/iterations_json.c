#include "iterations_json.h"

#include <stdlib.h>

void leaks_json_int(cJSON *obj, const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    cJSON_AddRawToObject(obj, key, buf);
}

cJSON *leaks_iterations_to_json(const ms_iterations *it, int64_t t0_us)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "method", ms_iter_method_key(it->method));
    cJSON_AddStringToObject(o, "method_text", ms_iter_method_text(it->method));
    cJSON_AddStringToObject(o, "detail", it->detail);
    leaks_json_int(o, "count", (int64_t)(it->n));
    cJSON *items = cJSON_AddArrayToObject(o, "items");
    if (!items) {
        cJSON_Delete(o);
        return NULL;
    }
    for (size_t k = 0; k < it->n; k++) {
        const ms_iteration *x = &it->items[k];
        cJSON *e = cJSON_CreateObject();
        if (!e) {
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddItemToArray(items, e);
        leaks_json_int(e, "index", (int64_t)((k + 1)));
        leaks_json_int(e, "start_us", (int64_t)(x->start_us));
        leaks_json_int(e, "end_us", (int64_t)(x->end_us));
        cJSON_AddNumberToObject(e, "start_s", (double)(x->start_us - t0_us) / 1e6);
        cJSON_AddNumberToObject(e, "duration_s", (double)(x->end_us - x->start_us) / 1e6);
        leaks_json_int(e, "start_event", (int64_t)(x->start_event));
        leaks_json_int(e, "end_event", (int64_t)(x->end_event));
        leaks_json_int(e, "peak_bytes", (int64_t)(x->peak_bytes));
        leaks_json_int(e, "live_end_bytes", (int64_t)(x->live_end_bytes));
        cJSON_AddBoolToObject(e, "partial", x->partial);
    }
    return o;
}

cJSON *leaks_iterations_json(const ms_snapshot *s, int device, const ms_timeline *t,
                             const ms_iter_options *opt, ms_error *err)
{
    ms_iterations *it = NULL;
    if (ms_iterations_find(&it, s, device, t, opt, err))
        return NULL;
    const ms_trace *tr = ms_snapshot_trace(s, device);
    cJSON *o = leaks_iterations_to_json(it, tr->n ? tr->time_us[0] : 0);
    ms_iterations_free(it);
    if (!o && err) {
        err->code = MS_ERR_NOMEM;
        err->offset = MS_NO_OFFSET;
        snprintf(err->message, sizeof err->message, "%s", ms_code_message(MS_ERR_NOMEM));
    }
    return o;
}

void leaks_iterations_print(FILE *out, const ms_iterations *it, int64_t t0_us, int indent)
{
    if (!it->n) {
        fprintf(out, "%*siterations: none found (%s)\n", indent, "",
                ms_iter_method_text(MS_ITER_NONE));
        return;
    }
    fprintf(out, "%*siterations: %zu, found by %s (%s%s%s)\n", indent, "", it->n,
            ms_iter_method_key(it->method), ms_iter_method_text(it->method),
            it->detail[0] ? "; " : "", it->detail);
    fprintf(out, "%*s  %4s %10s %10s %12s %14s  %s\n", indent, "", "#", "start", "duration",
            "peak", "live at end", "growth");
    /* Long runs (thousands of steps) show their start and end; JSON has every one. */
    size_t head = it->n > 20 ? 8 : it->n, tail_from = it->n > 20 ? it->n - 8 : it->n;
    for (size_t k = 0; k < it->n; k++) {
        if (k == head && k < tail_from) {
            fprintf(out, "%*s  %4s (%zu more)\n", indent, "", "...", tail_from - head);
            k = tail_from - 1;
            continue;
        }
        const ms_iteration *x = &it->items[k];
        char peak[32], live[32], growth[40] = "";
        ms_format_bytes(x->peak_bytes, peak, sizeof peak);
        ms_format_bytes(x->live_end_bytes, live, sizeof live);
        if (k) {
            int64_t d = x->live_end_bytes - it->items[k - 1].live_end_bytes;
            char db[32];
            ms_format_bytes(d < 0 ? -d : d, db, sizeof db);
            snprintf(growth, sizeof growth, "%s%s", d < 0 ? "-" : "+", db);
        }
        fprintf(out, "%*s  %4zu %9.3fs %9.3fs %12s %14s  %s%s\n", indent, "", k + 1,
                (double)(x->start_us - t0_us) / 1e6, (double)(x->end_us - x->start_us) / 1e6,
                peak, live, growth, x->partial ? " (partial: began before the trace)" : "");
    }
}
