/* What every JSON builder of lib/src/json/ shares: numbers, times that may be null, the
 * devices a file-level object lists. One rule each, so `summary`, `leaks`, `categories`,
 * `oom` and ms_run_json write a value the same way (docs/json.md). */
#ifndef MEMSNAP_JSON_UTIL_H
#define MEMSNAP_JSON_UTIL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

/* An integer as a JSON number (exact up to 2^53; a number, not a raw string, so
 * in-memory readers such as summary's text printer see its value). */
void ms__json_int(cJSON *obj, const char *key, int64_t v);
/* A number (a double, fractions kept). */
void ms__json_num(cJSON *obj, const char *key, double v);
/* A time on the trace's clock, or null where the trace has none (docs/json.md
 * "has_times": a trace without times gives null, never a made-up 0). */
void ms__json_time(cJSON *obj, const char *key, bool has_times, int64_t us);
/* Seconds between two times on the trace's clock, or null without times. */
void ms__json_seconds(cJSON *obj, const char *key, bool has_times, int64_t from_us,
                      int64_t to_us);
/* Seconds from one time on the trace's clock to another. */
static inline double ms__seconds(int64_t from_us, int64_t to_us)
{
    return (double)(to_us - from_us) / 1e6;
}
/* A string, or null for NULL. */
void ms__json_str_or_null(cJSON *obj, const char *key, const char *v);

/* True when a device has events or segments and so belongs in a file's objects. */
bool ms__device_in_use(const ms_snapshot *s, int device);

/* Fills err with MS_ERR_NOMEM (a builder that returned NULL); returns NULL, so a
 * builder writes `return ms__json_nomem(err);`. */
void *ms__json_nomem(ms_error *err);

#endif
