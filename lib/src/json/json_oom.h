/* OOM analyses as JSON (docs/json.md files[].ooms[]), shared by `oom`, `summary`,
 * `report` and ms_run_json, so every view that explains an OOM says the same. */
#ifndef MEMSNAP_JSON_OOM_H
#define MEMSNAP_JSON_OOM_H

#include <cjson/cJSON.h>

#include "memsnap/memsnap.h"
#include "memsnap/oom.h"

/* Explains the oom events of the devices of one file: `device` -1 means every device.
 * Calls keep(ctx, report) for each device's report before it is freed (NULL: none), so
 * callers can draw it. Returns {"path", "ooms": [...]} or NULL with err filled. */
cJSON *oom_file_json(const char *path, const ms_snapshot *s, int device, int top_k,
                     void (*keep)(void *ctx, const ms_oom_report *r), void *ctx,
                     ms_error *err);

/* The OOM events an object with "ooms" (a files[] object of `oom --json` and report, a
 * device of `summary --json`) stands for: those listed and those left out beyond
 * MS_OOM_MAX_EXPLAINED ("ooms_left_out"). */
int oom_count_json(const cJSON *obj);

/* Adds "ooms_left_out" to obj when n > 0 (the key is absent otherwise). */
void oom_left_out_json(cJSON *obj, size_t n);

/* One OOM as the JSON object of files[].ooms[]. */
cJSON *oom_to_json(const ms_snapshot *s, const ms_oom *o);

#endif
