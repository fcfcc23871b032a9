/* Categories of one device as JSON (docs/json.md `categories --json`), shared by
 * `categories`, `summary`, `report` and ms_run_json. */
#ifndef MEMSNAP_JSON_CATEGORIES_H
#define MEMSNAP_JSON_CATEGORIES_H

#include <cjson/cJSON.h>
#include <stdbool.h>

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

/* {"path", "devices": [...]} for one snapshot; NULL with err filled on failure. `threads`
 * (ms_limits.threads): 1 keeps to one thread, else each device's leak findings are found
 * on a second one while this one categorises. */
cJSON *categories_file_json(const char *path, const ms_snapshot *s, const cat_query *q,
                            unsigned threads, ms_error *err);

/* One DEVICE object of `categories --json`, from a run of the device opened here. */
cJSON *categories_device_json(const ms_snapshot *s, int device, const cat_query *q,
                              unsigned threads, ms_error *err);

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
/* {"parameter": n, ...} with all eight keys. */
cJSON *categories_object(const int64_t bytes[MS_CAT_COUNT]);

#endif
