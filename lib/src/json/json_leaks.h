/* Leak findings, their stacks and the user's frame behind them as JSON (docs/json.md
 * files[].leaks[]), shared by `leaks`, `report`, the top sites of `summary` and
 * ms_run_json. */
#ifndef MEMSNAP_JSON_LEAKS_H
#define MEMSNAP_JSON_LEAKS_H

#include <cjson/cJSON.h>

#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"

/* One finding of `memsnap leaks --json` files[].leaks[] (docs/json.md), members and stack
 * included; `t` is the device's timeline (for times in seconds), `r` the report holding
 * `L`. */
cJSON *leaks_finding_json(const ms_snapshot *s, const ms_timeline *t, const ms_leak_report *r,
                          const ms_leak *L, int device);

/* The compile context and user metadata of the finding's representative allocation (the
 * one whose stack it shows), NULL each when that entry carries none (PyTorch's default,
 * or a trace recorded without them). */
void leaks_finding_context(const ms_snapshot *s, const ms_timeline *t, const ms_leak_report *r,
                           const ms_leak *L, const char **compile_context,
                           const char **user_metadata);

/* Adds "user_frame": {"filename", "line", "name"} of `frame` (ms_stack_user_frame), or
 * null for UINT32_MAX: the user's line behind a leak finding or a top site. */
void leaks_user_frame_json(cJSON *o, const ms_snapshot *s, uint32_t frame);

/* A stack as [{"filename", "line", "name", "kind"}], innermost first; kind is "user",
 * "torch", "native", "library" or "compiled" (ms_frame_kind_of). */
cJSON *leaks_stack_json(const ms_snapshot *s, uint32_t stack);

#endif
