/* The `oom --json` object of one file, shared by oom, summary and report so every command
 * that explains an OOM says the same (docs/json.md). */
#ifndef MEMSNAP_CLI_OOM_JSON_H
#define MEMSNAP_CLI_OOM_JSON_H

#include <cjson/cJSON.h>
#include <stdio.h>

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

/* Prints one files[].ooms[] object for people, each line starting with `indent` spaces. */
void oom_print_json(FILE *out, const cJSON *oom, int indent);

#endif
