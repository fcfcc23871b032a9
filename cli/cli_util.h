/* Helpers shared by the cmd_*.c files: loading with uniform error messages, option
 * values, output. Nothing here computes an analysis; that is the library's job. */
#ifndef MEMSNAP_CLI_UTIL_H
#define MEMSNAP_CLI_UTIL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "memsnap/memsnap.h"

/* Prints "memsnap CMD: message" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Reads a snapshot; on failure prints "memsnap CMD: PATH: byte N: what" and returns 2. */
int cli_load(const char *cmd, const char *path, ms_snapshot **out);

/* The device with the most events (ties: the lowest id), or 0 when none has events. */
int cli_busiest_device(const ms_snapshot *s);

/* True when a device has events or segments and so belongs in reports. */
bool cli_device_in_use(const ms_snapshot *s, int device);

/* Parses a size option ("512MiB"); on error prints and returns 2, else 0. */
int cli_parse_size(const char *cmd, const char *opt, const char *text, uint64_t *out);
/* Parses an integer option within [lo, hi]; on error prints and returns 2, else 0. */
int cli_parse_int(const char *cmd, const char *opt, const char *text, long long lo, long long hi,
                  long long *out);
/* Parses a non-negative decimal number (seconds, percent); returns 0 or 2. */
int cli_parse_double(const char *cmd, const char *opt, const char *text, double *out);

/* Formats a cJSON document for output (caller frees the text with free()); whole numbers
 * of 15+ digits are written as integers. The document's numbers become raw text, so
 * read values from it before, not after. */
char *cli_json_text(cJSON *doc);
/* Prints a cJSON document (formatted) with a newline, then deletes it. Returns 0, or 2
 * when printing failed. */
int cli_print_json(cJSON *doc);

/* The last path component. */
const char *cli_basename(const char *path);

/* Seconds between two trace times, as a double. */
double cli_seconds(int64_t from_us, int64_t to_us);

#endif
