/* The iterations of one device as JSON (docs/json.md "iterations"), shared by `summary`,
 * `leaks`, `report` and ms_run_json, so all show the same fields. */
#ifndef MEMSNAP_JSON_ITERATIONS_H
#define MEMSNAP_JSON_ITERATIONS_H

#include <cjson/cJSON.h>

#include "memsnap/idle.h"
#include "memsnap/iterations.h"

/* {"method", "method_text", "detail", "count", "items": [...]} for found iterations.
 * Times are microseconds since the epoch, plus seconds since the first event `t0_us`.
 * With the run's quiet stretches (`idle`, ms_run_idle; NULL: none known) each item has
 * its busy and idle seconds and the object the trailing idle. Returns NULL on allocation
 * failure. */
cJSON *leaks_iterations_to_json(const ms_iterations *it, const ms_idle *idle, int64_t t0_us);

/* Idle time before iteration k (inside: within it), microseconds; 0 when unknown. */
int64_t ms__iter_idle_us(const ms_idle *idle, size_t k, bool inside);

#endif
