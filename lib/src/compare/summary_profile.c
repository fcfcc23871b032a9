/* A profile read back from `memsnap summary --json` output (one file's object), so that
 * `diff` and `ranks` can compare summaries written on other hosts. The messages name
 * what is wrong in the JSON; the caller adds which file. */
#include <cjson/cJSON.h>
#include <string.h>

#include "compare_internal.h"

/* cJSON numbers are doubles: integers beyond 2^53 would come back rounded. */
#define MAX_EXACT 9007199254740992.0

/* Reads an exact non-negative integer; `what` names the key in the message. */
static int get_int(ms_error *err, const cJSON *obj, const char *key,
                   bool required, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (!required)
            return 0;
        return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON lacks \"%s\"", key);
    }
    double d = cJSON_GetNumberValue(v);
    if (!cJSON_IsNumber(v) || !(d >= -MAX_EXACT && d <= MAX_EXACT) || d != (double)(int64_t)d) {
        ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"%s\" is not an integer", key);
        return MS_ERR_FORMAT;
    }
    *out = (int64_t)d;
    return 0;
}

static int get_uint(ms_error *err, const cJSON *obj, const char *key,
                    bool required, uint64_t *out)
{
    int64_t v = 0;
    int rc = get_int(err, obj, key, required, &v);
    if (rc)
        return rc;
    if (v < 0) {
        ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"%s\" is negative", key);
        return MS_ERR_FORMAT;
    }
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        *out = (uint64_t)v;
    return 0;
}

static const cJSON *get_obj(ms_error *err, const cJSON *obj,
                            const char *key)
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
static const cJSON *pick_device(ms_error *err, const cJSON *devices,
                                int want)
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
    if (get_int(err, peak, "bytes", true, &p->peak_bytes) ||
        get_int(err, peak, "time_us", true, &p->peak_time_us) ||
        get_int(err, peak, "event", true, &p->peak_event) ||
        get_int(err, live, "bytes", true, &p->live_end_bytes) ||
        get_uint(err, live, "count", true, &p->live_end_count) ||
        get_int(err, res, "peak_bytes", true, &p->reserved_peak_bytes) ||
        get_int(err, res, "end_bytes", true, &p->reserved_end_bytes))
        return MS_ERR_FORMAT;

    /* Peak times are compared as time into the trace, so the trace start is needed. */
    const cJSON *span = cJSON_GetObjectItemCaseSensitive(dev, "time");
    if (cJSON_IsObject(span)) {
        if (get_int(err, span, "first_us", true, &p->t_first_us))
            return MS_ERR_FORMAT;
    } else if (get_int(err, dev, "t_first_us", false, &p->t_first_us)) {
        return MS_ERR_FORMAT;
    }

    const cJSON *actions = cJSON_GetObjectItemCaseSensitive(dev, "actions");
    if (actions && !cJSON_IsObject(actions)) {
        ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"actions\" is not an object");
        return MS_ERR_FORMAT;
    }
    if (get_uint(err, actions, "alloc", false, &p->alloc_count) ||
        get_uint(err, actions, "oom", false, &p->oom_count))
        return MS_ERR_FORMAT;
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(dev, "trace_complete");
    p->trace_complete = cJSON_IsTrue(tc);

    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(dev, "top_sites");
    if (sites && !cJSON_IsArray(sites)) {
        ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON \"top_sites\" is not a list");
        return MS_ERR_FORMAT;
    }
    if (sites) {
        uint64_t sum = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, sites)
        {
            const char *site = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "site"));
            const char *fn =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "function"));
            uint64_t bytes = 0, count = 0;
            if (!site) {
                ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET, "summary JSON top site without \"site\"");
                return MS_ERR_FORMAT;
            }
            if (get_uint(err, s, "bytes", true, &bytes) ||
                get_uint(err, s, "count", true, &count))
                return MS_ERR_FORMAT;
            int rc = ms_profile_add_site(p, MS_SITES_AT_PEAK, site, fn ? fn : "", bytes, count, err);
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

int ms_profile_from_summary(ms_profile **out, const char *path, const struct cJSON *devices,
                            int device, ms_error *err)
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
