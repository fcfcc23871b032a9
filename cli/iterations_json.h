/* The iterations of one device, as shared by `summary` (text and JSON) and `leaks --json`
 * so both show the same fields (docs/json.md). */
#ifndef MEMSNAP_CLI_ITERATIONS_JSON_H
#define MEMSNAP_CLI_ITERATIONS_JSON_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "memsnap/idle.h"
#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"

/* Adds an integer as a JSON number (exact up to 2^53; a number, not a raw string, so
 * in-memory readers such as summary's text printer see its value). */
void leaks_json_int(cJSON *obj, const char *key, int64_t v);

/* {"method", "method_text", "detail", "count", "items": [...]} for found iterations.
 * Times are microseconds since the epoch, plus seconds since the first event `t0_us`.
 * With the run's quiet stretches (`idle`, ms_run_idle; NULL: none known) each item has
 * its busy and idle seconds and the object the trailing idle. Returns NULL on allocation
 * failure. */
cJSON *leaks_iterations_to_json(const ms_iterations *it, const ms_idle *idle, int64_t t0_us);

/* Finds the iterations of `device` and returns their JSON object (above). `t` is the
 * device's timeline with MS_TIMELINE_CURVES, or NULL to build one; `opt` may be NULL.
 * Returns NULL and fills err on failure. */
cJSON *leaks_iterations_json(const ms_snapshot *s, int device, const ms_timeline *t,
                             const ms_iter_options *opt, ms_error *err);

/* Text form for `summary`: a heading line and one line per iteration, indented by
 * `indent` spaces. With idle time (`idle` NULL: none known) the duration is the busy time
 * and an idle column says how much idle came before each iteration and inside it
 * ("+1.50 s idle before"), and a last line the idle after the last iteration. */
void leaks_iterations_print(FILE *out, const ms_iterations *it, const ms_idle *idle,
                            int64_t t0_us, int indent);

/* The same text from the JSON object above (for `summary`, which prints from its JSON). */
void leaks_iterations_print_json(FILE *out, const cJSON *iterations, int indent);

/* The idle column of one item of that object: "+1.50 s idle before", "+254 ms idle
 * inside", both, or "" (every view of the iterations words it so: summary, leaks, the
 * report's page and Markdown). `trailing` words the object's trailing idle instead
 * ("1.50 s"), "" when none. */
void leaks_iteration_idle_text(const cJSON *item, char *buf, size_t cap);
void leaks_iterations_trailing_text(const cJSON *iterations, char *buf, size_t cap);

/* One finding of `memsnap leaks --json` files[].leaks[] (docs/json.md), members and stack
 * included; `t` is the device's timeline (for times in seconds), `r` the report holding
 * `L`. Shared by `leaks` and `report`. */
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

/* The user_frame object `uf` as "train/ddp.py:30 worker" (the path's last two parts) into
 * buf; false, and buf empty, when it is null or the same line as the site (`site_file`,
 * `site_line`, NULL for none): then the site is the user's line already. */
bool leaks_user_frame_text(const cJSON *uf, const char *site_file, double site_line, char *buf,
                           size_t cap);

/* A stack as [{"filename", "line", "name", "kind"}], innermost first; kind is "user",
 * "torch", "native", "library" or "compiled" (ms_frame_kind_of). */
cJSON *leaks_stack_json(const ms_snapshot *s, uint32_t stack);

#endif
