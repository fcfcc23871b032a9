/* What the iteration finder's files share. iterations.c makes candidates from boundaries
 * and chooses among the methods; each kind of evidence has a file: iter_annotations.c
 * (record_function ranges), iter_stacks.c (the optimizer step and forward calls in the
 * stacks), iter_baseline.c (live memory: its curve, lowest points and valleys). */
#ifndef MEMSNAP_ITER_CAND_H
#define MEMSNAP_ITER_CAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iter_internal.h"

/* ------------------------------------------------------------------ candidates */

/* A candidate: iterations as event ranges, with annotation times where known. */
typedef struct span {
    int64_t start, end;       /* [start, end) in event indices */
    int64_t start_us, end_us; /* annotation times, or INT64_MIN to take event times */
} span;

typedef struct cand {
    ms_iter_method method;
    span *it;
    size_t n, cap;
    bool first_partial;
    bool complete; /* the trace kept every event (no ring-buffer wrap) */
    char detail[128];
} cand;

/* Each false when out of memory. */
bool ms__iter_cand_push(cand *c, int64_t start, int64_t end, int64_t start_us, int64_t end_us);
/* Iterations from their ends (event indices, ascending, each > 0), with annotation
 * times or NULL. */
bool ms__iter_cand_from_ends(cand *c, const ms_snapshot *s, const ms_trace *tr,
                             const int64_t *ends, const int64_t *ends_us, size_t n);
/* Iterations from cut points: the first events of iterations 2..m+1. */
bool ms__iter_cand_from_cuts(cand *c, const ms_snapshot *s, const ms_trace *tr,
                             const int64_t *cuts, size_t m);
/* Moves each of m cuts to the event the last one starts with, within [lo[k], hi[k]). */
void ms__iter_refine_cuts(const ms_snapshot *s, const ms_trace *tr, int64_t *cuts, size_t m,
                          const int64_t *lo, const int64_t *hi);
/* Where the iteration ending at `end` began, given the next one [end, next_end). */
int64_t ms__iter_align_start(const ms_snapshot *s, const ms_trace *tr, int64_t end,
                             int64_t next_end, bool *partial);

/* An event's identity for aligning one iteration with the next: what it did and where. */
typedef struct evkey {
    int cls;
    uint32_t site;
} evkey;

static inline evkey key_of(const ms_snapshot *s, const ms_trace *tr, int64_t i)
{
    evkey k;
    uint8_t a = tr->action[i];
    k.cls = a == MS_ACT_ALLOC ? 0 : (a == MS_ACT_FREE_REQUESTED || a == MS_ACT_FREE_COMPLETED) ? 1 : 2;
    k.site = tr->stack[i] == MS_NO_STACK ? UINT32_MAX : ms_stack_site(s, tr->stack[i]);
    return k;
}

static inline bool key_eq(evkey a, evkey b)
{
    return a.cls == b.cls && a.site == b.site;
}

/* A cudaMalloc (segment_alloc, or segment_map with expandable segments) is made for the
 * allocation right after it, so it belongs to the iteration of that allocation. */
static inline bool seg_acquire(uint8_t a)
{
    return a == MS_ACT_SEGMENT_ALLOC || a == MS_ACT_SEGMENT_MAP;
}

/* ------------------------------------------------------------------ live memory */

/* Live bytes as the program sees them: an allocation ends at free_requested, not at the
 * allocator's free_completed, which record_stream can delay by many iterations and which
 * would hide the return to baseline. Frees of allocations made before the trace are
 * ignored: only the shape of the curve matters here. */
typedef struct curve {
    int64_t *v;    /* after event i */
    int64_t start; /* before the first event */
    size_t n;
} curve;

int ms__iter_program_curve(curve *cv, const ms_trace *tr, ms_error *err);
/* The first event after the earliest lowest point of live memory in events [from, to). */
int64_t ms__iter_lowest_cut(const curve *cv, const ms_trace *tr, int64_t from, int64_t to);

/* ------------------------------------------------------------------ the methods */

/* Each fills its candidate; 0 or an error. */
typedef enum ann_kind { ANN_NAMED, ANN_PROFILER, ANN_OPT_STEP, ANN_OPT_ZERO } ann_kind;

/* The annotation methods read the device's ranges `ann` (phase_cut.h). */
int ms__iter_cand_ranges(cand *c, const ms_snapshot *s, const ms_trace *tr,
                         const ms__ann *ann, ann_kind kind, const char *want, ms_error *err);
int ms__iter_cand_optimizer_annotations(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                        const ms__ann *ann, ms_error *err);
/* Ranges that cover only part of each iteration, turned into cuts between them. */
int ms__iter_ranges_as_markers(cand *c, const ms_snapshot *s, const ms_trace *tr,
                               const curve *cv, ms_error *err);
int ms__iter_cand_optimizer_frames(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                   const ms__stackinfo *si, ms_error *err);
/* Boundaries found at optimizer steps moved past the rest of the loop body. */
void ms__iter_settle_after_step(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                const ms__stackinfo *si);
int ms__iter_cand_forward_calls(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                const curve *cv, const ms__stackinfo *si, ms_error *err);
/* Valleys of live memory, kept only where the stretches between them repeat. */
int ms__iter_cand_baseline(cand *c, const ms_snapshot *s, const ms_trace *tr, const curve *cv,
                           const ms__stackinfo *si, const ms__ann *ann, uint32_t expected,
                           ms_error *err);

#endif
