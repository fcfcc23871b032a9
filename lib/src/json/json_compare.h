/* The JSON of comparisons, shared by `diff --json`, `ranks --json`, the report's
 * summary.json and ms_run_compare_json so they never disagree on keys (docs/json.md). */
#ifndef MEMSNAP_JSON_COMPARE_H
#define MEMSNAP_JSON_COMPARE_H

#include <cjson/cJSON.h>

#include "json/json_summary.h" /* compare_peak_place_json */
#include "memsnap/compare.h"

/* Up to `limit` site deltas as a list (limit < 0: all), each {"site", "function",
 * "a_bytes", "b_bytes", "delta_bytes", "a_count", "b_count"}, and "b_site" (B's location)
 * for a site that moved. */
cJSON *site_deltas_json(const ms_site_delta *d, size_t n, int limit);
/* A percent, or null where it has no value (the reference is 0). */
cJSON *pct_json(const ms_delta *d);

/* One pair: files a and b (indexes into the output's files[]), their labels, the verdict;
 * `top` limits every site list. */
cJSON *compare_pair_json(const ms_pair *p, int a, int b, const char *la, const char *lb,
                         const char *verdict, int top);

/* Labels for a pair as `diff` prints them: "rankN" or the base name; when both are the
 * same (a file against itself, one file name in two runs) `same_a`/`same_b` instead,
 * since a verdict naming one label twice reads as nonsense. */
void compare_pair_labels(const ms_pair *p, char *la, char *lb, size_t cap, const char *same_a,
                         const char *same_b);
/* The pair's verdict as a heap string to free(); NULL when out of memory. */
char *compare_pair_verdict(const ms_pair *p, const char *la, const char *lb);

/* The metrics a rank can be an outlier in: its bit in ms_rank_row.outlier and JSON key. */
typedef struct compare_outlier_key {
    unsigned bit;
    const char *key;
} compare_outlier_key;
#define COMPARE_OUTLIER_KEY_COUNT 3
extern const compare_outlier_key COMPARE_OUTLIER_KEYS[COMPARE_OUTLIER_KEY_COUNT];
/* The row's value (against the median) for one of those bits. */
const ms_delta *compare_row_metric(const ms_rank_row *row, unsigned bit);

/* Adds median, threshold_pct, ranks[] and outliers[] to doc. */
void compare_ranks_fill(cJSON *doc, const ms_ranks *r, const char *const *labels, int top);

#endif
