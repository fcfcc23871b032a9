/* Private pieces of the categories analysis shared by its files: the per-stack flags,
 * the trace cut into phases, and the rule that gives one allocation its category. */
#ifndef MEMSNAP_CAT_INTERNAL_H
#define MEMSNAP_CAT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "memsnap/categories.h"

/* What a stack says, one byte per stack id. */
enum {
    CS_PY = 1u << 0,     /* has a Python frame */
    CS_CPP = 1u << 1,    /* has a C++ frame (stacks='all') */
    CS_FWD = 1u << 2,    /* a Python `forward` frame */
    CS_BWD = 1u << 3,    /* backward: autograd engine frames or Python backward frames */
    CS_ENGINE = 1u << 4, /* ... the autograd engine's C++ frames in particular */
    CS_OPT = 1u << 5,    /* an optimizer package's Python frame */
    CS_WS = 1u << 6,     /* a library workspace or NCCL buffer */
    CS_MODULE = 1u << 7  /* module construction, .to()/.cuda(), checkpoint load */
};

/* Segment kinds: the trace is cut into a setup, then phases and gaps between them. */
enum { MS__PH_SETUP, MS__PH_GAP, MS__PH_FWD, MS__PH_BWD, MS__PH_OPT, MS__PH_COUNT };

/* Where a phase was seen. */
enum { MS__SRC_ANN = 1, MS__SRC_PY = 2, MS__SRC_ENGINE = 4, MS__SRC_EMPTY = 8 };

typedef struct ms__cat_seg {
    int64_t start, end;  /* events [start, end) */
    int64_t last_alloc;  /* its last tagged event (an allocation or a completed free) */
    int64_t close;       /* where the phase itself ended (<= end): an annotation's end,
                          * its iteration's end */
    uint32_t ordinal;    /* how many segments of its kind came before */
    uint8_t kind;
    uint8_t src;
} ms__cat_seg;

/* A life that ends at an event which starts another (an address handed out twice with no
 * free between, as the timeline reads it). */
typedef struct ms__cat_life_end {
    int64_t event;
    uint32_t alloc;
} ms__cat_life_end;

/* What the whole device's categorisation indexes about the lives (categories_build.c), so
 * that those alive at one event are found from the events after it rather than by
 * reading every allocation. */
typedef struct ms__cat_lives {
    const uint32_t *ev_alloc; /* per event: 1 + the allocation it starts or ends, 0 none */
    const uint32_t *kept;     /* the lives never freed, by index */
    size_t n_kept;
    const ms__cat_life_end *ends; /* lives ended at another's start, sorted by event */
    size_t n_ends;
} ms__cat_lives;

typedef struct ms__cat_ctx {
    const ms_snapshot *s;
    const ms_timeline *t;
    const ms_trace *tr;
    const ms_iterations *it;  /* may be NULL */
    uint8_t *stack_flags;
    bool cpp_stacks;          /* some stack has C++ frames */
    bool no_stacks;           /* no allocation of the trace has a stack */
    int64_t loop_start;       /* with no_stacks: where the training loop began, -1 unknown */
    ms__cat_seg *segs;
    size_t nsegs;
    size_t counts[MS__PH_COUNT];
    bool have_phases;
    int64_t last_phase_start;
    size_t last_bwd;          /* index of the last backward segment (counts[BWD] > 0) */
    size_t prev_bwd;          /* ... and of the one before it (counts[BWD] > 1) */
    size_t *bwd_after;        /* per segment: the next backward with no forward before
                               * it, SIZE_MAX none */
    int64_t iter_start;       /* first event of the first iteration, -1 unknown */
    size_t first_step;        /* the first and last optimizer steps (ms__cat_steps), */
    size_t last_step;         /* SIZE_MAX none */
    const ms__cat_lives *lives; /* set by ms_categories_build for t->allocs; NULL else */
    uint8_t src_all;
} ms__cat_ctx;

/* Traces of at least this many events are tagged by two threads (categories.c); tests
 * lower it to compare the two ways on small traces. */
extern size_t ms__cat_parallel_min;
/* Traces of at least this many events are classified and swept by two threads
 * (categories_build.c); lowered the same way. */
extern size_t ms__cat_build_parallel_min;
/* How many sweeps ran in two halves (for the tests: the split must happen). */
extern _Atomic size_t ms__cat_build_splits;

/* The run's form (ms_categories_formula's, without an iteration): oom reads it too. */
ms_formula_form ms__categories_form(const ms_categories *c);

int ms__cat_stacks_build(uint8_t **out, bool *any_cpp, const ms_snapshot *s, ms_error *err);
int ms__cat_ctx_build(ms__cat_ctx *x, const ms_snapshot *s, const ms_timeline *t,
                      const ms_iterations *it, ms_error *err);
void ms__cat_ctx_free(ms__cat_ctx *x);
/* The iteration holding an event, SIZE_MAX when none does. */
size_t ms__cat_iter_of(const ms__cat_ctx *x, int64_t event);
/* The segment holding an event (SIZE_MAX when there are none). */
size_t ms__cat_seg_of(const ms__cat_ctx *x, int64_t event);
/* The same, starting from the segment `*hint` (SIZE_MAX: none) found for an earlier event
 * and left at this one's: events visited in order cost no search. */
size_t ms__cat_seg_near(const ms__cat_ctx *x, int64_t event, size_t *hint);
/* Bits of `origin` over the segment kind: a candidate for a refinement (ms__cat_refine
 * looks at no other allocation's life). */
#define MS__CAT_KIND_MASK 0x0fu
#define MS__CAT_REUSE_CAND 0x80u /* forward-kept, alive after the backward that followed */
#define MS__CAT_LATE_CAND 0x40u  /* never freed, made inside the iterations */

/* The category of one allocation life, its reason (ms_category_reason) and the kind of
 * segment it was made in (with the candidate bits above). The segment is found with
 * ms__cat_seg_near from `*hint`: classify allocations in event order with one hint. */
ms_category ms__cat_classify_near(const ms__cat_ctx *x, const ms_alloc *a, uint8_t *why,
                                  uint8_t *origin, size_t *hint);
/* Second look once every allocation has a category (parameter sizes known); 0 or
 * MS_ERR_NOMEM. `allocs` in the timeline's order (by alloc event) whenever one of them
 * needs all (ms__cat_refine_needs_all); `origin` as ms__cat_classify_near gave it. */
int ms__cat_refine(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n, uint8_t *cat,
                   uint8_t *why, const uint8_t *origin);
/* Whether refining this allocation needs the others' categories (a reused gradient's
 * fellow gradients): a caller holding only some allocations must classify them all
 * then. `param_sz`: the sorted sizes of the parameters among them. Late-parameter
 * candidates (MS__CAT_LATE_CAND) need them too unless the last backward rules them out
 * (ms_categories_sum checks that from the trace). */
bool ms__cat_refine_needs_all(const ms_alloc *a, uint8_t why, uint8_t origin,
                              const uint64_t *param_sz, size_t np);
const char *ms__cat_phase_name(uint8_t kind);
/* The sorted sizes of the allocations categorised as parameters; NULL with *np 0 when none
 * (or out of memory: *oom). In categories_refine.c. */
uint64_t *ms__cat_param_sizes(const ms_alloc *allocs, size_t n, const uint8_t *cat, size_t *np,
                              bool *oom);
/* Whether a late-parameter candidate among `allocs` could pass, from the last backward's
 * own events: 1 may, 0 cannot, -1 out of memory. In categories_refine.c. */
int ms__cat_late_possible(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n,
                          const uint8_t *origin, const uint64_t *psz, size_t np);

/* The optimizer's mirror (categories_mirror.c). The first and last optimizer segments
 * that follow a backward, found once the segments are cut (x->first_step, x->last_step);
 * false when the run has none. */
void ms__cat_find_steps(ms__cat_ctx *x);
bool ms__cat_steps(const ms__cat_ctx *x, size_t *first, size_t *last);
/* Parameters the last step's gradients and state say exist and the categories lack,
 * taken from what is alive from before the first step to the end (mirrored-parameter);
 * part of ms__cat_refine. 0 or MS_ERR_NOMEM. */
int ms__cat_refine_mirrored(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n, uint8_t *cat,
                            uint8_t *why);
/* Whether that refinement could take any of `allocs` (a part of the device's lives), from
 * the optimizer steps' own events: 1 may, 0 cannot, -1 out of memory. */
int ms__cat_mirror_possible(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n,
                            const uint8_t *cat, const uint8_t *why);
/* The identity state = k x trainable parameters = k x gradients at the last step, from
 * every allocation's final category. 0 or MS_ERR_NOMEM. */
int ms__cat_identity(ms_category_identity *out, const ms__cat_ctx *x, const ms_alloc *allocs,
                     size_t n, const uint8_t *cat);

#endif
