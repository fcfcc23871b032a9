/* The text of the iterations table and of a leak's user frame, printed from the library's
 * JSON builders (json/json_iterations.h, json/json_leaks.h, included here for the commands
 * that use both) so the text and the JSON never disagree. */
#ifndef MEMSNAP_CLI_ITERATIONS_JSON_H
#define MEMSNAP_CLI_ITERATIONS_JSON_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "json/json_iterations.h"
#include "json/json_leaks.h"
#include "json/json_util.h"

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

/* The user_frame object `uf` as "train/ddp.py:30 worker" (the path's last two parts) into
 * buf; false, and buf empty, when it is null or the same line as the site (`site_file`,
 * `site_line`, NULL for none): then the site is the user's line already. */
bool leaks_user_frame_text(const cJSON *uf, const char *site_file, double site_line, char *buf,
                           size_t cap);

#endif
