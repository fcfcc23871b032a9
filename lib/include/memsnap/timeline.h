/* memsnap timeline: active and reserved memory over a device's trace, allocation
 * lives, and the allocations alive at any event.
 * Part of the public API; include "memsnap/memsnap.h" for all of it. */
#ifndef MEMSNAP_TIMELINE_H
#define MEMSNAP_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "memsnap/export.h"
#include "memsnap/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ timeline */

/* One allocation's life. Event indexes refer to the device's ms_trace. */
typedef struct ms_alloc {
    uint64_t addr;
    uint64_t size;             /* requested bytes */
    int64_t alloc_event;       /* -1: alive before the first kept event (reconstructed) */
    int64_t free_event;        /* free_completed event, -1: still alive at the end */
    int64_t free_requested_event; /* -1 when none was seen */
    uint32_t stack;            /* MS_NO_STACK when unknown */
    uint16_t stream;
} ms_alloc;

enum {
    MS_TIMELINE_CURVES = 1u << 0,     /* fill active[] and reserved[] per event */
    MS_TIMELINE_ALLOCS = 1u << 1,     /* fill allocs[] */
    MS_TIMELINE_ACTIVE = 1u << 2,     /* fill active[] only (half the memory of CURVES) */
    MS_TIMELINE_PEAK_ALIVE = 1u << 3  /* fill peak_alive[] in the same pass */
};

typedef enum ms_wrap_evidence {
    MS_WRAP_NONE = 0,      /* nothing in the file shows a wrapped ring buffer */
    MS_WRAP_ANNOTATIONS,   /* a record_function range ended before the first kept event:
                              the recording was on, and the events before were dropped */
    MS_WRAP_ROUND_COUNT    /* the trace holds a round number of entries (a multiple of
                              1,000), as a ring buffer of max_entries that filled does */
} ms_wrap_evidence;

/* "annotations_before_first_event", "entry_count_round"; NULL for MS_WRAP_NONE. */
MS_API const char *ms_wrap_evidence_name(ms_wrap_evidence e);

typedef struct ms_timeline {
    int device;
    size_t n_events;
    int64_t t_first_us, t_last_us; /* times of the first and last event (0 if none) */
    bool has_times;                /* the trace's has_times: false, the times are event indexes */

    /* Before the first kept event (reconstructed from the final state). */
    int64_t active_start;
    int64_t reserved_start;

    /* After event i; NULL unless MS_TIMELINE_CURVES (active also with MS_TIMELINE_ACTIVE). */
    int64_t *active;
    int64_t *reserved;

    int64_t peak_bytes;        /* max active, including active_start */
    int64_t peak_event;        /* event after which the peak is first reached; -1 = at start */
    int64_t peak_time_us;
    int64_t reserved_peak_bytes;
    int64_t reserved_end_bytes;
    int64_t live_end_bytes;
    uint64_t live_end_count;
    int64_t preexisting_bytes; /* allocations alive before the trace began */
    uint64_t preexisting_count;
    int64_t preexisting_segment_bytes;
    bool trace_complete;       /* nothing had to be reconstructed */
    /* What shows that a max_entries ring buffer dropped older events, if anything does.
     * Memory alive before the first event alone does not: a recording started after the
     * model was built looks the same. */
    ms_wrap_evidence wrap_evidence;

    uint64_t action_counts[MS_ACT_COUNT];
    uint64_t oom_count;

    /* NULL unless MS_TIMELINE_PEAK_ALIVE: the allocations alive right after peak_event,
     * in no fixed order (what ms_timeline_alive_at gives for that event). */
    ms_alloc *peak_alive;
    size_t n_peak_alive;

    /* NULL unless MS_TIMELINE_ALLOCS: trace allocations in the order of their alloc
     * events, then the reconstructed ones alive before the trace began. */
    ms_alloc *allocs;
    size_t n_allocs;
} ms_timeline;

MS_API int ms_timeline_build(ms_timeline **out, const ms_snapshot *s, int device,
                             unsigned flags, ms_error *err);
MS_API void ms_timeline_free(ms_timeline *t);

/* Allocations alive right after event `event` (-1: at the start), in no fixed order;
 * replays the trace without materialising every allocation. */
MS_API int ms_timeline_alive_at(ms_alloc **out, size_t *n_out, const ms_snapshot *s,
                                const ms_timeline *t, int64_t event, ms_error *err);

/* How many of t->allocs (MS_TIMELINE_ALLOCS) are alive right after each of
 * events[0..n) (ascending, -1 at the start) into counts[0..n): the rule of
 * ms_timeline_alive_at, for many instants in one pass over the lives. */
MS_API int ms_timeline_alive_counts(const ms_timeline *t, const int64_t *events, size_t n,
                                    size_t *counts, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
