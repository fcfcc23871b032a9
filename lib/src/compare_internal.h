/* Shared by the compare*.c files: error filling, checked allocation, site keys. */
#ifndef MEMSNAP_COMPARE_INTERNAL_H
#define MEMSNAP_COMPARE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/compare.h"

/* Fills err (which may be NULL) and returns code, so failures read `return cmp_fail(...)`. */
int cmp_fail(ms_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* calloc/realloc of n elements with the multiplication checked; NULL on overflow too. */
void *cmp_calloc(size_t n, size_t size);
void *cmp_realloc_array(void *p, size_t n, size_t size);

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

#endif
