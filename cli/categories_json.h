/* The text of `memsnap categories`, printed from the library's JSON
 * (json/json_categories.h, included here for the commands) so the two never disagree. */
#ifndef MEMSNAP_CLI_CATEGORIES_JSON_H
#define MEMSNAP_CLI_CATEGORIES_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "json/json_categories.h"

/* "at the peak, free inside reserved segments: 72.41 MiB in 27 pieces, largest 24.00 MiB"
 * from such a peak object into buf; false when it has none. */
bool categories_peak_free_text(const cJSON *peak, char *buf, size_t cap);

/* The text form of one file object. */
void categories_print_file(FILE *out, const cJSON *file);

/* One line: "parameter 47.5 MiB (9%), gradient ..." from a categories object, for
 * `summary`; categories at zero are left out. */
void categories_print_line(FILE *out, const cJSON *categories, double total);

#endif
