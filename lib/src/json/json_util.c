#include "json/json_util.h"

#include "internal.h"

void ms__json_int(cJSON *obj, const char *key, int64_t v)
{
    cJSON_AddNumberToObject(obj, key, (double)v);
}

void ms__json_num(cJSON *obj, const char *key, double v)
{
    cJSON_AddNumberToObject(obj, key, v);
}

void ms__json_time(cJSON *obj, const char *key, bool has_times, int64_t us)
{
    if (has_times)
        cJSON_AddNumberToObject(obj, key, (double)us);
    else
        cJSON_AddNullToObject(obj, key);
}

void ms__json_seconds(cJSON *obj, const char *key, bool has_times, int64_t from_us,
                      int64_t to_us)
{
    if (has_times)
        cJSON_AddNumberToObject(obj, key, ms__seconds(from_us, to_us));
    else
        cJSON_AddNullToObject(obj, key);
}

void ms__json_str_or_null(cJSON *obj, const char *key, const char *v)
{
    if (v)
        cJSON_AddStringToObject(obj, key, v);
    else
        cJSON_AddNullToObject(obj, key);
}

bool ms__device_in_use(const ms_snapshot *s, int device)
{
    if (ms_snapshot_trace(s, device)->n > 0)
        return true;
    size_t n;
    const ms_segment *seg = ms_snapshot_segments(s, &n);
    for (size_t i = 0; i < n; i++)
        if (seg[i].device == device)
            return true;
    return false;
}

void *ms__json_nomem(ms_error *err)
{
    ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "%s", ms_code_text(MS_ERR_NOMEM));
    return NULL;
}
