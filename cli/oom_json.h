/* The text of one OOM, printed from the library's JSON (json/json_oom.h), which oom,
 * summary and report share. */
#ifndef MEMSNAP_CLI_OOM_JSON_H
#define MEMSNAP_CLI_OOM_JSON_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "json/json_oom.h"

/* Prints one files[].ooms[] object for people, each line starting with `indent` spaces. */
void oom_print_json(FILE *out, const cJSON *oom, int indent);

#endif
