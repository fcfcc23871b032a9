/* memsnap — the caching allocator's state (segments and their blocks) at any event.
 *
 * Ownership follows memsnap.h: an ms_heap handed out through `**out` belongs to the
 * caller and is released with ms_heap_free() (NULL accepted); its arrays live as long
 * as it does.
 *
 * The state is rebuilt by replaying the trace with the allocator's own rules (block
 * rounding, splitting, merging; docs/architecture.md "Allocator state"), starting from
 * the segments and allocations that the final `segments` state and the trace show were
 * there before the first kept event. Where the file does not say enough (a ring-wrapped
 * trace whose early allocations were freed, addresses that contradict each other) the
 * result is marked approximate and says why, rather than failing.
 */
#ifndef MEMSNAP_ALLOCATOR_H
#define MEMSNAP_ALLOCATOR_H

#include "memsnap/export.h"
#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The allocator's block size for a request of `size` bytes: at least 512, a multiple of
 * 512, or the next power-of-two division when `roundup_power2_divisions` in the
 * snapshot's allocator settings asks for it (s may be NULL: plain 512 rounding). */
MS_API uint64_t ms_alloc_block_size(const ms_snapshot *s, uint64_t size);

/* Requests of up to 1 MiB (block bytes) come from the small pool. */
#define MS_SMALL_REQUEST_MAX ((uint64_t)1 << 20)

/* "inactive", "active_allocated", "active_pending_free": the state as
 * torch.cuda.memory_snapshot() names it ("other" for anything else). */
MS_API const char *ms_block_state_name(ms_block_state st);

/* A block is known only from the rebuilt starting state (alive before the trace's first
 * event, never allocated in it) when alloc_event < 0 and it is not inactive. */
typedef struct ms_heap_block {
    uint64_t address;
    uint64_t size;            /* the allocator's block bytes */
    uint64_t requested_size;  /* 0 for inactive blocks */
    ms_block_state state;     /* inactive, active_allocated or active_pending_free */
    int64_t alloc_event;      /* the alloc event that made it; -1 alive before the trace
                               * began, or inactive */
    uint32_t stack;           /* MS_NO_STACK when unknown */
    bool estimated;           /* alive before the trace began and freed later in it: its
                               * size is the request rounded, the allocator's may be larger */
} ms_heap_block;

typedef struct ms_heap_segment {
    uint64_t address;
    uint64_t total_size;
    uint64_t stream_raw;      /* as ms_snapshot_stream() gives it */
    bool is_expandable;       /* a contiguous mapped run of an expandable segment */
    bool is_small;            /* small pool (requests <= 1 MiB) */
    int64_t pool_id[2];       /* (0,0) default pool; others CUDA-graph pools (from the
                               * final state; (0,0) when the segment is gone by then) */
    size_t first_block;       /* index into blocks[] */
    size_t n_blocks;
} ms_heap_segment;

typedef struct ms_heap {
    int device;
    int64_t event;            /* the state right after this event; -1 before the first */
    ms_heap_segment *segments; /* by address */
    size_t n_segments;
    ms_heap_block *blocks;    /* segment by segment, by address */
    size_t n_blocks;

    /* What torch.cuda.memory_snapshot() / memory_stats() would show at that moment. */
    uint64_t allocated_bytes; /* active_allocated blocks (pending frees excluded) */
    uint64_t active_bytes;    /* active_allocated + active_pending_free blocks */
    uint64_t reserved_bytes;  /* segments */
    uint64_t inactive_bytes;  /* free blocks inside segments */
    uint64_t inactive_count;
    uint64_t largest_inactive;

    /* True when the file did not say enough for an exact answer; `note` says why. */
    bool approximate;
    uint64_t inconsistencies; /* events whose addresses contradict the rebuilt state */
    char note[256];
} ms_heap;

/* The allocator state of `device` right after event `event` (-1: before the first event;
 * the trace's last event: the end, which equals the file's final `segments` state when
 * the file is consistent). */
MS_API int ms_heap_build(ms_heap **out, const ms_snapshot *s, int device, int64_t event,
                         ms_error *err);
MS_API void ms_heap_free(ms_heap *h);
/* A copy of h that the caller owns (ms_heap_free), for a state ms_heap_visit_each lends. */
MS_API int ms_heap_copy(ms_heap **out, const ms_heap *h, ms_error *err);
/* The event whose state holds at `time_us` on the trace's clock: the last event at or
 * before it, -1 before the first. */
MS_API int64_t ms_heap_event_at_time(const ms_trace *tr, int64_t time_us);

/* The states right after each of events[0..n) (in trace order, each -1 or in the trace),
 * from one forward replay: O(events + blocks) for all of them together, where calling
 * ms_heap_build for each would replay the trace n times. Where no event touched the
 * state between events[k-1] and events[k], out[k] is the same heap as out[k-1] (a run
 * of oom events costs one copy, whose `event` is the first of the run): release them all
 * with ms_heap_free_each. On error every
 * out[k] is NULL. */
MS_API int ms_heap_build_each(ms_heap **out, const ms_snapshot *s, int device,
                              const int64_t *events, size_t n, ms_error *err);
/* Frees what ms_heap_build_each made, each shared heap once, and sets out[k] to NULL. */
MS_API void ms_heap_free_each(ms_heap **heaps, size_t n);

/* The states right after each of events[0..n) (as for ms_heap_build_each), handed to
 * fn one at a time from one forward replay: at most one state is held whatever n is.
 * `h` lives only during the call (the next instant reuses it); fn returns 0 to go on,
 * or an error code (with err filled) that ends the replay and is returned. */
typedef int (*ms_heap_visit_fn)(void *ctx, size_t k, const ms_heap *h, ms_error *err);
MS_API int ms_heap_visit_each(const ms_snapshot *s, int device, const int64_t *events, size_t n,
                              ms_heap_visit_fn fn, void *ctx, ms_error *err);
/* As ms_heap_visit_each, lending each state's totals only: its counts, bytes, note and
 * flags, with segments and blocks NULL (n_segments and n_blocks still count them). The
 * replay then keeps 32 bytes a block and copies none, for a caller that sizes states
 * before it chooses which to visit whole. */
MS_API int ms_heap_visit_totals_each(const ms_snapshot *s, int device, const int64_t *events,
                                     size_t n, ms_heap_visit_fn fn, void *ctx, ms_error *err);

/* Fragmentation after every event of a device's trace, from one forward replay: the free
 * memory inside reserved segments (reserved minus the active blocks' bytes, what
 * torch.cuda.memory_stats() calls inactive_split_bytes), the largest free block and the
 * number of free blocks. 20 bytes per event. */
typedef struct ms_heap_frag {
    int device;
    size_t n;                  /* the trace's events */
    uint64_t *free_bytes;      /* n: right after each event */
    uint64_t *largest_free;    /* n */
    uint32_t *free_blocks;     /* n */
    /* Before the first event (the rebuilt starting state). */
    uint64_t start_free_bytes, start_largest_free;
    uint32_t start_free_blocks;
    bool approximate;          /* as ms_heap.approximate, for the whole replay */
    uint64_t inconsistencies;
} ms_heap_frag;

MS_API int ms_heap_frag_build(ms_heap_frag **out, const ms_snapshot *s, int device,
                              ms_error *err);
MS_API void ms_heap_frag_free(ms_heap_frag *f);

/* The free memory of one state, per pool and stream: segments of one segment type (small
 * or large) on one stream, sorted by type (large first) then stream. */
typedef struct ms_heap_pool_stats {
    bool is_small;
    uint64_t stream_raw;
    uint64_t segments;
    uint64_t reserved_bytes;
    uint64_t allocated_bytes;   /* active_allocated blocks */
    uint64_t active_bytes;      /* allocated and pending-free blocks */
    uint64_t free_bytes;        /* inactive blocks */
    uint64_t free_blocks;
    uint64_t largest_free;
} ms_heap_pool_stats;

/* Fills *out (ms_free) with one entry per pool and stream that has a segment. */
MS_API int ms_heap_pool_stats_of(ms_heap_pool_stats **out, size_t *n_out, const ms_heap *h,
                                 ms_error *err);
/* Segment k's free blocks: their bytes (returned), the largest and how many (either
 * pointer may be NULL), as ms_heap_usable_free counts a request's. */
MS_API uint64_t ms_heap_segment_free(uint64_t *largest, uint64_t *count, const ms_heap *h,
                                     size_t k);

/* Free blocks a request could use: same stream, same pool (small/large by the request's
 * block size), default pool. Fills their total bytes and the largest; returns the count. */
MS_API uint64_t ms_heap_usable_free(uint64_t *bytes, uint64_t *largest, const ms_heap *h,
                                    uint64_t request_block_bytes, uint64_t stream_raw);

#ifdef __cplusplus
}
#endif
#endif
