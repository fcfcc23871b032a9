/* memsnap sites: where a stack allocated from, formatted for people, and allocations
 * grouped by site.
 * Part of the public API; include "memsnap/memsnap.h" for all of it. */
#ifndef MEMSNAP_SITES_H
#define MEMSNAP_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "memsnap/export.h"
#include "memsnap/model.h"
#include "memsnap/timeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ sites */

/* The site of a stack: the innermost Python frame (filename ending ".py") outside
 * torch's own package, else the innermost Python frame, else the innermost frame.
 * Returns a frame id, or UINT32_MAX for an empty/unknown stack. Cached per stack. */
MS_API uint32_t ms_stack_site(const ms_snapshot *s, uint32_t stack_id);
/* Writes "file:line function" (file shortened to its last two path parts). */
MS_API int ms_site_format(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap);
/* Writes "file:line" only (same shortening); C++ frames give the library's name. */
MS_API int ms_site_format_location(const ms_snapshot *s, uint32_t frame_id, char *buf,
                                   size_t cap);
/* Writes the function name; C++ names lose their parameter list. */
MS_API int ms_site_format_function(const ms_snapshot *s, uint32_t frame_id, char *buf,
                                   size_t cap);

/* ------------------------------------------------------------------ site totals */

typedef struct ms_site_total {
    uint32_t site;   /* frame id, or UINT32_MAX for allocations without a stack */
    uint64_t bytes;
    uint64_t count;
} ms_site_total;

/* Groups allocations by ms_stack_site(), largest bytes first. */
MS_API int ms_site_totals(ms_site_total **out, size_t *n_out, const ms_snapshot *s,
                          const ms_alloc *allocs, size_t n_allocs, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
