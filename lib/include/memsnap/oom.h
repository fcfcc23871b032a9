/* memsnap — why an allocation failed: the allocator's state at every `oom` event, a
 * cause and advice with the numbers that justify it.
 *
 * Ownership follows memsnap.h: every object handed out through `**out` belongs to the
 * caller and is released with its own ms_*_free() (NULL accepted); pointers inside it
 * live as long as it does.
 */
#ifndef MEMSNAP_OOM_H
#define MEMSNAP_OOM_H

#include "memsnap/allocator.h"
#include "memsnap/export.h"
#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_OOM_CAUSE_LIST(X)                                                             \
    X(MS_OOM_FRAGMENTATION, "fragmentation",                                             \
      "enough memory is free inside reserved segments, but no free block is large enough") \
    X(MS_OOM_ACTIVATIONS, "activations",                                                 \
      "most memory at the failure holds activations of the current iteration")           \
    X(MS_OOM_MODEL_STATE, "model_state",                                                 \
      "parameters, gradients and optimizer state take most of the memory")               \
    X(MS_OOM_LEAK, "leak", "live memory at iteration ends grew before the failure")      \
    X(MS_OOM_SINGLE_ALLOCATION, "single_allocation",                                     \
      "one request or allocation is larger than everything else together")              \
    X(MS_OOM_OTHER, "other", "no single cause dominates")

MS_KEYED_ENUM(ms_oom_cause, MS_OOM_CAUSE_LIST, MS_OOM_CAUSE_COUNT);

MS_API const char *ms_oom_cause_name(ms_oom_cause c); /* "fragmentation" */
MS_API const char *ms_oom_cause_text(ms_oom_cause c); /* one line for people */

/* Byte totals by category, in the order of ms_category (memsnap/categories.h):
 * parameter, gradient, optimizer_state, activation, temporary, workspace, input, other. */
#define MS_OOM_CATEGORIES 8

/* How much the failing iteration still had to allocate was estimated, which decides
 * whether free memory inside reserved segments would have let it finish (fragmentation
 * is the cause only then). */
#define MS_OOM_BASIS_LIST(X)                                                             \
    X(MS_OOM_BASIS_SHARE_OF_LIVE, "share_of_live",                                       \
      "no earlier iteration reached the failure's point: the free memory must be at "     \
      "least half of live memory")                                                       \
    X(MS_OOM_BASIS_PREVIOUS_PEAK, "previous_iteration_peak",                             \
      "the previous iteration, as large at the same point, grew this much more to its "   \
      "peak")                                                                            \
    X(MS_OOM_BASIS_PREVIOUS_ALLOCATIONS, "previous_iteration_allocations",               \
      "the failing iteration is larger than the previous one at the same point: "         \
      "everything the previous one allocated after that point")

MS_KEYED_ENUM(ms_oom_basis, MS_OOM_BASIS_LIST, MS_OOM_BASIS_COUNT);

MS_API const char *ms_oom_basis_name(ms_oom_basis b); /* "previous_iteration_peak" */
MS_API const char *ms_oom_basis_text(ms_oom_basis b); /* one line for people */

/* What the cause is decided from; a pure function of these, so it can be tested on
 * constructed cases as well as on recordings. */
typedef struct ms_oom_facts {
    uint64_t request_block_bytes;  /* the failed request, rounded to the allocator's block */
    uint64_t allocated_bytes;      /* allocated block bytes at the failure */
    uint64_t usable_free_bytes;    /* free blocks the request could use (its pool, stream) */
    uint64_t usable_free_blocks;
    uint64_t largest_usable_block;
    uint64_t largest_alive_bytes;  /* the largest allocated block */
    const int64_t *category_bytes; /* MS_OOM_CATEGORIES entries, or NULL when unknown */
    uint64_t leak_bytes;           /* alive at the failure from sites that leak */
    double leak_growth_bytes;      /* their growth per iteration */
    /* What the failing iteration still had to allocate, the failed request included
     * (basis says how it was estimated; unused for MS_OOM_BASIS_SHARE_OF_LIVE, where
     * half of allocated_bytes stands for it). */
    uint64_t still_to_allocate;
    ms_oom_basis basis;
    /* What the per-process limit or the device allowed the process in all (ms_oom
     * limit_bytes), 0 when unknown: a request larger than it is its own cause. */
    uint64_t limit_bytes;
    /* An inference run (only forwards: ms_formula_form): model state is parameters alone,
     * and no remedy names gradients or an optimizer. */
    bool inference;
} ms_oom_facts;

/* Decides the cause, and writes one line saying why (with numbers) into why/cap as a
 * text writer does (memsnap/core.h: NUL-terminated, cut before a whole character).
 * The cause is the one whose removal would have let the request succeed: a large
 * allocation that is not the request is a bystander, never the cause. */
MS_API ms_oom_cause ms_oom_decide(const ms_oom_facts *f, char *why, size_t cap);
/* The same, and the counterfactual that names the cause in one line of evidence
 * ("joined, the 524.00 MiB of free pieces would serve the 300.00 MiB request") into
 * evidence/ecap (NULL/0: none). */
MS_API ms_oom_cause ms_oom_decide_evidence(const ms_oom_facts *f, char *why, size_t cap,
                                           char *evidence, size_t ecap);

#define MS_OOM_MAX_ADVICE 8
#define MS_OOM_MAX_ITERS 8

typedef struct ms_oom_iter {
    size_t index;            /* 0-based iteration number */
    int64_t end_event;       /* one past its last event */
    int64_t live_end_bytes;  /* live requested bytes at its end */
    int64_t peak_bytes;
    bool unfinished;         /* the iteration the failure happened in (the last one) */
} ms_oom_iter;

typedef struct ms_oom {
    int device;
    int64_t event;                 /* the oom event (device trace index) */
    int64_t time_us;
    uint64_t request_bytes;        /* as the event records it */
    uint64_t request_block_bytes;  /* rounded to the allocator's block size */
    uint64_t segment_request_bytes; /* the cudaMalloc the allocator would have tried */
    uint64_t device_free_bytes;    /* what the driver reported free */
    uint64_t stream_raw;

    /* The allocator state right after the event (ms_heap): exactly what
     * torch.cuda.memory_snapshot() would have shown at that moment. */
    uint64_t allocated_bytes;
    uint64_t active_bytes;
    uint64_t reserved_bytes;
    uint64_t free_in_reserved_bytes;
    uint64_t free_blocks;
    uint64_t largest_free_block_bytes;
    uint64_t usable_free_bytes;    /* of those, in the request's pool and stream */
    uint64_t usable_free_blocks;
    uint64_t largest_usable_block;
    uint64_t largest_alive_bytes;
    uint64_t live_requested_bytes; /* requested bytes alive (the timeline's curve) */

    bool have_categories;          /* from a categorisation (ms_oom_options.categories_at) */
    bool categories_estimated;     /* else estimated from the live allocations' stacks:
                                    * optimizer frames, autograd nodes, forward frames */
    int64_t category_bytes[MS_OOM_CATEGORIES]; /* requested bytes alive, by category */
    /* Of those, what leaking sites hold (from block_leak and block_category; zero when
     * either is unknown): the advice counts it under the leak, not twice. */
    int64_t leak_category_bytes[MS_OOM_CATEGORIES];

    ms_site_total *top_sites;      /* alive at the failure, largest first */
    size_t n_top_sites;

    ms_oom_iter iters[MS_OOM_MAX_ITERS]; /* the last complete iterations before it, then
                                          * the unfinished one it happened in */
    size_t n_iters;
    ms_iter_method iter_method;
    /* The iteration (0-based index) with the highest peak up to the failure, the
     * unfinished one included; SIZE_MAX when no iteration is known. */
    size_t peak_iteration;

    /* The largest leak finding alive at the failure (site UINT32_MAX when none). */
    uint32_t leak_site;
    uint64_t leak_bytes;
    double leak_growth_bytes;

    /* What the failing iteration still had to allocate (ms_oom_facts.still_to_allocate),
     * how it was estimated, and from which iteration (0-based; SIZE_MAX: none). */
    uint64_t still_to_allocate;
    ms_oom_basis basis;
    size_t basis_iteration;

    /* Activations of the failing iteration alive at the failure, made under a layer's
     * forward: how many layer calls made them and their bytes (0 when none). */
    uint64_t act_layer_calls;
    int64_t act_layer_bytes;
    /* Activation checkpointing in about sqrt(calls) segments keeps the segments' inputs
     * and one segment's activations: what it would keep of act_layer_bytes, and save. */
    int64_t checkpoint_keep_bytes;
    int64_t checkpoint_save_bytes;

    /* What the process was allowed in all: under a per-process limit (limit_refused) the
     * limit lies between what was reserved and that plus the segment it refused, and the
     * roundest size in that range is taken; otherwise what was reserved plus what the
     * device had free. 0 when unknown. */
    uint64_t limit_bytes;
    bool limit_is_device;
    /* The counterfactual behind the cause, one line (ms_oom_decide_evidence). */
    char evidence[320];

    /* The unfinished step measured against the previous complete one (all 0 when there
     * is none, or no layer calls to count): the layer calls the previous step's forward
     * kept activations of, and their bytes; the failing step's bytes per layer call over
     * the previous one's (act_ratio); the share of the forward done (act_layer_calls over
     * prev_layer_calls, at most 1); the forward's need at its end (what is alive, with
     * the missing calls at this step's size) and the whole step's peak (the previous
     * step's growth to its peak, times act_ratio, over this step's start). */
    uint64_t prev_layer_calls;
    int64_t prev_layer_bytes;
    double act_ratio;
    double step_done;
    int64_t forward_need_bytes;
    int64_t step_need_bytes;
    int64_t step_base_bytes;       /* alive at the failing step's start */
    /* step_need_bytes as reserved at the allocator's overhead at the failure (reserved
     * over allocated: rounding, split tails), which is what the limit is weighed on. */
    int64_t step_need_reserved_bytes;

    /* An inference run (ms_categories_formula's form): the advice has no gradient,
     * optimizer or checkpointing terms. */
    bool inference;
    bool limit_refused;            /* the device had far more free than the request */
    ms_oom_cause cause;
    char why[320];
    char advice[MS_OOM_MAX_ADVICE][400];
    size_t n_advice;

    bool approximate;
    char note[320];

    /* What pictures draw, kept for a device's first OOM only (NULL and 0 for the others,
     * so a trace with many OOMs costs one state, not one per OOM; ms_heap_build gives
     * the state at any other): */
    ms_heap *heap;                 /* the state itself */
    /* Per heap block: its category (ms_category order), or NULL when unknown. */
    uint8_t *block_category;
    /* Per heap block: true when a leaking site (memsnap leaks) made it; NULL when no
     * site leaks. */
    bool *block_leak;

    /* Active (requested) and reserved bytes over the last iterations before the failure,
     * for charts: n_window points from event window_first to the oom event; a longer
     * stretch keeps each bucket's highest values. */
    int64_t window_first;
    int64_t *window_time_us, *window_active, *window_reserved;
    size_t n_window;

    size_t n_segments;             /* segments at the failure (every OOM) */
} ms_oom;

#define MS_OOM_WINDOW_POINTS 2000

/* At most this many OOM events of a device are explained (the first ones): a trace that
 * caught an OOM after every allocation would otherwise buy an explanation, and its
 * output, per event. */
#define MS_OOM_MAX_EXPLAINED 100

typedef struct ms_oom_report {
    int device;
    ms_oom *items;                 /* the first n oom events of the device, explained */
    size_t n;
    size_t n_events;               /* every oom event of the device (n when at most
                                    * MS_OOM_MAX_EXPLAINED) */
    int64_t last_event;            /* the last of them; -1 when none */
} ms_oom_report;

typedef struct ms_oom_options {
    size_t top_sites;              /* 0: 10 */
    /* Category totals at an event, when a categorisation is at hand (memsnap/categories.h
     * fills this; NULL: causes that need categories fall back to `other`, with a note). */
    int (*categories_at)(void *ctx, int64_t event, int64_t bytes[MS_OOM_CATEGORIES]);
    void *categories_ctx;
} ms_oom_options;

/* Explains the oom events of one device (the first MS_OOM_MAX_EXPLAINED). `t`: that
 * device's timeline built with MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS, or NULL to build
 * one. A device without oom events gives n == 0. `opt` may be NULL. */
MS_API int ms_oom_report_build(ms_oom_report **out, const ms_snapshot *s, int device,
                               const ms_timeline *t, const ms_oom_options *opt, ms_error *err);
MS_API void ms_oom_report_free(ms_oom_report *r);

#ifdef __cplusplus
}
#endif
#endif
