/* Inputs of `diff` and `ranks`: snapshot pickles (plain or gzip), or the JSON that
 * `memsnap summary --json` wrote, told apart by their first bytes. A summary lets each
 * host summarise its own ranks and one small comparison run anywhere. */
#ifndef MEMSNAP_CLI_SUMMARY_INPUT_H
#define MEMSNAP_CLI_SUMMARY_INPUT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "memsnap/compare.h"

typedef enum input_kind {
    INPUT_PICKLE,   /* 0x80 (PROTO), or "-": standard input is always read as a snapshot */
    INPUT_GZIP,     /* 1f 8b: a compressed pickle */
    INPUT_JSON,     /* '{' after white space */
    INPUT_EMPTY,
    INPUT_UNKNOWN
} input_kind;

/* Looks at the first bytes of a file. On a read error returns INPUT_UNKNOWN with errno set. */
input_kind input_kind_of(const char *path, int *first_byte);

/* One compared file: its profile and, when asked for, its `summary --json` object. */
typedef struct compare_input {
    ms_profile *profile;
    cJSON *file_json;     /* owned; NULL unless JSON output was asked for */
    bool from_summary;    /* read back from summary JSON rather than a pickle */
    int device;           /* a pickle's compared device, and where its times go backwards */
    size_t times_backward_at; /* (ms_trace.times_backward_at; 0: they do not) */
} compare_input;

typedef struct compare_inputs {
    compare_input *v;
    size_t n, cap;
} compare_inputs;

/* Reads every path in command-line order (a summary with several files gives several
 * inputs, in its own order). Pickles load in parallel on `threads` threads (0: one per
 * CPU). `device` -1 takes each file's busiest device. `want_json` builds file_json with
 * `top_k` sites. On failure prints "memsnap CMD: PATH: ..." and returns 2. */
int compare_inputs_load(const char *cmd, char **paths, size_t n, int device, bool want_json,
                        int top_k, unsigned threads, compare_inputs *out);
void compare_inputs_free(compare_inputs *in);

/* Parses one `summary --json` document (text of len bytes) into inputs; exposed for
 * tests. `name` is used in messages. Returns 0, or 2 after printing why. */
int summary_input_parse(const char *cmd, const char *name, const char *textbuf, size_t len,
                        int device, bool want_json, compare_inputs *out);

/* ------------------------------------------------------------------ shared by diff, ranks */

/* Options both commands take, so `diff` with three files or more can hand over to the
 * ranks table with the same command line. */
typedef struct compare_opts {
    bool json;
    bool help;
    bool fail;          /* ranks: exit 1 when a file is an outlier */
    int device;         /* -1: each file's busiest device */
    int top;            /* sites listed per section */
    double threshold;   /* percent from the median that makes an outlier */
    unsigned threads;   /* 0: one per CPU */
    char **files;       /* points into argv */
    size_t n_files;
} compare_opts;

/* Parses argv[1..] (argv[0] is the command name). Returns 0 or 2 after printing why. */
int compare_opts_parse(const char *cmd, int argc, char **argv, compare_opts *o);
void compare_opts_free(compare_opts *o);

/* "+51%"-style text of a delta's percent, "new" when the reference is 0. */
void pct_text(const ms_delta *d, char *buf, size_t cap);
/* "+1.50 GiB" / "-512 B" / "0 B" */
void signed_size_text(int64_t v, char *buf, size_t cap);

#endif
