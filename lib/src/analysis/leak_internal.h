/* Private helpers of the leak analysis shared by leaks.c and leak_groups.c. */
#ifndef MEMSNAP_LEAK_INTERNAL_H
#define MEMSNAP_LEAK_INTERNAL_H

#include <stdint.h>

#include "iter_internal.h"
#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"

/* The iteration that made event `ev`: the last one starting at or before it, -1 before
 * the first. */
int64_t ms__iter_of(const ms_iterations *it, int64_t ev);
/* The same, trying the iteration at *hint and the one after it first: callers that walk
 * allocations in allocation order ask about the same or the next iteration nearly every
 * time, and a binary search over thousands of iterations per allocation costs more than
 * the rest of a leak pass. *hint (start it at 0) is updated. */
int64_t ms__iter_of_near(const ms_iterations *it, int64_t ev, size_t *hint);

/* A finding's allocation figures: ms__leak_figures_clear empties them (no allocation:
 * the least and latest at their extremes), ms__leak_figures_add counts allocation `a`
 * of timeline `t` (trace `tr`) in: count, bytes, smallest and largest, first and last
 * time made. The one rule both stages of the leak finder count allocations by. */
void ms__leak_figures_clear(ms_leak *L);
void ms__leak_figures_add(ms_leak *L, const ms_alloc *a, const ms_trace *tr,
                          const ms_timeline *t);
/* Counts the allocations of finding x into L's figures (one finding made of several). */
void ms__leak_figures_join(ms_leak *L, const ms_leak *x);

/* The order of findings (leaks.h): by kind, then largest first, then by site and layer
 * so that equal sizes always come out the same way. A qsort comparator of ms_leak. */
int ms__leak_cmp(const void *a, const void *b);

/* Turns the per-site findings of ms_leak_report_build's first stage into findings a user can act
 * on: allocations of a leaking site that never repeat leave the leak (retained); leaks
 * made in the same pass of the same iterations become one finding with its sites as
 * members; every finding gets its members, pattern and a representative stack. Rebuilds
 * r->items, r->alloc_index and r->members, sorted as documented in leaks.h; findings
 * that a split leaves below `min_bytes` are dropped. */
struct ms__alive_end;
int ms__leaks_refine(ms_leak_report *r, const ms_snapshot *s, const ms_timeline *t,
                     const ms__stackinfo *si, const struct ms__alive_end *ae,
                     uint64_t min_bytes, ms_error *err);

/* What a forward left alive at the end of a trace (alive_end.c): of the allocations made
 * during the trace under a module's forward and never released, those of the user's
 * call (call_key) that left the most bytes. */
typedef struct ms__alive_end {
    uint32_t call_key;    /* the user's line that called the forward, UINT32_MAX none */
    uint64_t count, bytes;
    uint32_t layers;      /* distinct layers among them */
    bool graph;           /* several layers: the autograd graph, not only an output */
} ms__alive_end;

/* From any array of allocations (those not alive at the end are passed over). */
int ms__alive_end_find(ms__alive_end *out, const ms_snapshot *s, const ms__stackinfo *si,
                       const ms_alloc *allocs, size_t n, ms_error *err);
/* Whether an allocation is one of them. */
bool ms__alive_end_member(const ms__alive_end *ae, const ms_snapshot *s, const ms__stackinfo *si,
                          const ms_alloc *a);

#endif
