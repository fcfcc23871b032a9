/* Helpers shared by the cmd_*.c files: loading with uniform error messages, option
 * values, output. Nothing here computes an analysis; that is the library's job. */
#ifndef MEMSNAP_CLI_UTIL_H
#define MEMSNAP_CLI_UTIL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "memsnap/memsnap.h"
#include "term_text.h" /* cli_term: every text of the user or the file printed */

/* Prints "memsnap CMD: message" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The limits every input is read with: main() sets them once, from the environment and
 * --max-input (options.h); until then, ms_limits_default(). */
void cli_set_limits(const ms_limits *lim);
const ms_limits *cli_limits(void);

/* "time stamps go backwards at event N: events are ordered by position": the one text
 * for a trace whose times decrease (ms_trace.times_backward_at, JSON `times_backward_at`),
 * wherever it is told. Returns buf. */
const char *cli_times_backward_text(char *buf, size_t cap, double event);
/* Prints "memsnap CMD: warning: PATH: device D: <that text>" for each device of s whose
 * times go backwards (device -1: every device). */
void cli_warn_times(const char *cmd, const char *path, const ms_snapshot *s, int device);

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
 * of 15+ digits are written as integers (cli_json_format, json_print.h). The document is
 * not changed. */
char *cli_json_text(cJSON *doc);
/* Prints a cJSON document (formatted) with a newline, then deletes it. Returns 0, or 2
 * when printing failed. */
int cli_print_json(cJSON *doc);

/* The per-file part of the commands that print one JSON object per input (summary,
 * categories, oom): builds `fn`'s object for each file into a new document's `files[]`.
 * Each file is loaded, and a `device` (-1: every device) it does not have is an error.
 * On success *doc_out is the document (caller owns it); on failure it is NULL, the
 * message is printed and the exit status (2, or fn's) returned. fn returns the file's
 * object, or NULL with a message in err (exit 2); it may set *rc to a non-zero status
 * for a failure after its object was made (the object is kept, the loop stops). */
typedef cJSON *(*cli_file_fn)(void *ctx, const char *path, const ms_snapshot *s, ms_error *err,
                              int *rc);
/* warn_times: warn of time stamps that go backwards (cli_warn_times); false for a command
 * whose own output says it (summary). */
int cli_each_file(const char *cmd, char *const *files, int nfiles, long long device,
                  bool warn_times, cli_file_fn fn, void *ctx, cJSON **doc_out);
/* The loop under cli_each_file, for a command that keeps what it reads (render draws
 * every file on shared scales, report keeps its files until its pages are written): loads files[f] in turn, checks `device` as above, and
 * calls fn with f and the snapshot, which fn may keep by taking *s (leaving NULL); what
 * it leaves is freed before the next file is read. fn returns the exit status; a failure
 * with err filled in (err.code set) is printed as "memsnap CMD: PATH: message", one
 * without, fn has told itself. The loop stops at the first non-zero status. */
typedef int (*cli_snapshot_fn)(void *ctx, int f, ms_snapshot **s, ms_error *err);
int cli_each_snapshot(const char *cmd, char *const *files, int nfiles, long long device,
                      bool warn_times, cli_snapshot_fn fn, void *ctx);
/* Prints such a document: as JSON, or each file with print_file and a blank line between
 * files. Deletes the document; returns 0, or 2 when printing failed. */
int cli_emit_files(cJSON *doc, bool json, void (*print_file)(const cJSON *file));

/* Values read back out of a JSON document by key path ("peak.bytes"): the item (NULL
 * where missing), its number (0 where missing or not a number), its string ("" where
 * missing or not a string). */
const cJSON *cli_json_get(const cJSON *o, const char *path);
double cli_json_num(const cJSON *o, const char *path);
const char *cli_json_str(const cJSON *o, const char *path);

/* The last path component. */
const char *cli_basename(const char *path);
/* Labels for several files in one legend: their base names, or, where two base names are
 * the same (runs/a/mem.pickle, runs/b/mem.pickle), each path less the directories all the
 * paths share (a/mem.pickle, b/mem.pickle). out[i] points into paths[i]. */
void cli_file_labels(const char *const *paths, size_t n, const char **out);

/* "s" unless n is exactly one: "1 allocation", "2 allocations", "0.5 allocations". */
static inline const char *cli_plural(double n)
{
    return n == 1 ? "" : "s";
}

/* The three-way compare of cli's sorts: -1, 0 or 1 as a is below, equal to or above b
 * (two values of one arithmetic type, each read twice). */
#define CLI_CMP(a, b) (((a) > (b)) - ((a) < (b)))

/* Seconds between two trace times, as a double. */
double cli_seconds(int64_t from_us, int64_t to_us);
/* "12.345 s", or "3 µs" in a trace that spans under a millisecond, where "0.000 s" would
 * read as nothing. */
const char *cli_seconds_text(char *buf, size_t cap, double seconds, double span_s);
/* "1.234s" after t0, or "#N" (event N) on a trace without times, whose times are event
 * indexes; returns buf. */
const char *cli_when(char *buf, size_t cap, bool has_times, int64_t t0_us, int64_t us);

/* The leak gate of `leaks --fail[=SIZE]` and `report --fail-on-leaks[=SIZE]`, one rule
 * for both: a file with a leak finding trips it; with a SIZE (min_bytes > 0) only when
 * its leaked bytes, or its growth per iteration (0 without iterations), reach SIZE. */
bool cli_leak_gate_trips(uint64_t leaks, double leaked_bytes, double growth_per_iteration,
                         uint64_t min_bytes);

#endif
