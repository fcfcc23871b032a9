/* Shared by the compare*.c files: checked allocation, site keys, deltas and medians.
 * Errors and growing arrays use the library's own ms__fail and ms__grow. */
#ifndef MEMSNAP_COMPARE_INTERNAL_H
#define MEMSNAP_COMPARE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "analysis/run_internal.h"
#include "analysis/timeline_internal.h"
#include "memsnap/compare.h"

/* calloc of n elements with the multiplication checked; NULL on overflow too. A valid
 * pointer even for n == 0, which keeps callers free of special cases. */
void *cmp_calloc(size_t n, size_t size);

/* Orders sites by (site, function): the identity of a site across files, whose frame ids
 * differ. */
int cmp_site_key_cmp(const char *site_a, const char *fn_a, const char *site_b,
                     const char *fn_b);

/* Orders site deltas by |delta| descending, then by key, so equal input gives equal
 * output on every platform. */
int cmp_site_delta_order(const void *x, const void *y);

ms_delta cmp_delta(int64_t a, int64_t b);

/* Median of n values (sorted in place); of an even count, the mean of the middle two
 * rounded toward minus infinity. 0 for n == 0. */
int64_t cmp_median(int64_t *v, size_t n);

/* The run a profile is read from: `device` -1 is the busiest; MS_ERR_ARG naming the
 * device when the snapshot has none such. */
int cmp_run_open(ms_run **out, const ms_snapshot *s, int device, ms_error *err);

#endif
