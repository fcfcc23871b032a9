/* The `summary --json` object of one file, shared by summary, diff, ranks and report so
 * every command that shows a file's summary shows the same fields (docs/json.md). */
#ifndef MEMSNAP_CLI_SUMMARY_JSON_H
#define MEMSNAP_CLI_SUMMARY_JSON_H

#include <cjson/cJSON.h>

#include "memsnap/memsnap.h"

/* Builds {"path", "pickle_protocol", "devices": [...]} for one file. `device` -1 lists
 * every device in use; `top_k` is the number of top sites at the peak per device.
 * Returns NULL and fills err on failure. */
cJSON *summary_file_json(const char *path, const ms_snapshot *s, int device, int top_k,
                         ms_error *err);

#endif
