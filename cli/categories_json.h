/* `memsnap categories`: the JSON of one file (docs/json.md), built from the library's
 * categorisation, and its text form printed from that JSON so the two never disagree.
 * Shared by `categories` and `report`. */
#ifndef MEMSNAP_CLI_CATEGORIES_JSON_H
#define MEMSNAP_CLI_CATEGORIES_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "memsnap/categories.h"
#include "memsnap/run.h"

/* An instant asked for: seconds since the first event (--at) or the trace's clock
 * (--at-us). */
typedef struct cat_instant {
    bool is_us;
    double seconds;
    int64_t time_us;
    const char *text; /* as given on the command line */
} cat_instant;

typedef struct cat_query {
    int device;            /* -1: every device in use */
    const cat_instant *at;
    size_t n_at;
    bool explain;
    int explain_top;       /* allocations explained per device */
} cat_query;

/* {"path", "devices": [...]} for one snapshot; NULL with err filled on failure. */
cJSON *categories_file_json(const char *path, const ms_snapshot *s, const cat_query *q,
                            ms_error *err);

/* One DEVICE object of `categories --json`; `tl` is the device's timeline with
 * MS_TIMELINE_ALLOCS, or NULL to build one. */
cJSON *categories_device_json(const ms_snapshot *s, int device, const ms_timeline *tl,
                              const cat_query *q, ms_error *err);

/* The same from a categorisation the caller built (and frees) for other uses too; `lr`
 * the device's leak findings when the caller has them (what they hold at the end), NULL
 * to find them with the default options; `peak_free` the free memory inside reserved
 * segments at the peak (ms_run_peak_free), NULL when unknown. */
cJSON *categories_json_of(const ms_snapshot *s, int device, const ms_categories *c,
                          const ms_leak_report *lr, const cat_query *q,
                          const ms_free_in_reserved *peak_free);

/* peak.free_in_reserved_bytes, free_blocks, largest_free_block_bytes (and whether the
 * state is approximate) into `peak`. */
void categories_add_peak_free(cJSON *peak, const ms_free_in_reserved *f);
/* "at the peak, free inside reserved segments: 72.41 MiB in 27 pieces, largest 24.00 MiB"
 * from such a peak object into buf; false when it has none. */
bool categories_peak_free_text(const cJSON *peak, char *buf, size_t cap);

/* {"parameter": n, ...} with all eight keys. */
cJSON *categories_object(const int64_t bytes[MS_CAT_COUNT]);

/* The text form of one file object. */
void categories_print_file(FILE *out, const cJSON *file);

/* One line: "parameter 47.5 MiB (9%), gradient ..." from a categories object, for
 * `summary`; categories at zero are left out. */
void categories_print_line(FILE *out, const cJSON *categories, double total);

#endif
