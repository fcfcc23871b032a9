/* The trace cut into phases (phase_cut.c): what each stack says, the segments of
 * setup, forward, backward, optimizer step and gaps, and where the optimizer steps lie.
 * Iterations, phases and categories read it; it calls none of them. */
#ifndef MEMSNAP_PHASE_CUT_H
#define MEMSNAP_PHASE_CUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memsnap/iterations.h"
#include "memsnap/phases.h"
#include "memsnap/memsnap.h"

/* The device's annotation ranges (ms_annotation_ranges), paired once by the run (or by
 * a standalone entry point) and lent to every analysis that reads them: iterations,
 * compile windows and the phase cut never pair annotations themselves. */
typedef struct ms__ann {
    const ms_annotation_range *r;
    size_t n;
} ms__ann;

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

struct ms__cat_lives;

typedef struct ms__cat_ctx {
    const ms_snapshot *s;
    const ms_timeline *t;
    const ms_trace *tr;
    const ms_iterations *it;  /* may be NULL */
    /* The device's annotation ranges (borrowed, ms__ann) for the phase cut and every
     * later reader of the context (the optimizer's name). */
    ms__ann ann;
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
    const struct ms__cat_lives *lives; /* set by ms_categories_build for t->allocs; NULL else */
    uint8_t src_all;
} ms__cat_ctx;

/* Traces of at least this many events are tagged by two threads (phase_cut.c); tests
 * lower it to compare the two ways on small traces. */
extern size_t ms__cat_parallel_min;

int ms__cat_stacks_build(uint8_t **out, bool *any_cpp, const ms_snapshot *s, ms_error *err);
int ms__cat_ctx_build(ms__cat_ctx *x, const ms_snapshot *s, const ms_timeline *t,
                      const ms_iterations *it, const ms__ann *ann, ms_error *err);
void ms__cat_ctx_free(ms__cat_ctx *x);
/* The iteration holding an event, SIZE_MAX when none does. */
size_t ms__cat_iter_of(const ms__cat_ctx *x, int64_t event);
/* The segment holding an event (SIZE_MAX when there are none). */
size_t ms__cat_seg_of(const ms__cat_ctx *x, int64_t event);
/* The same, starting from the segment `*hint` (SIZE_MAX: none) found for an earlier event
 * and left at this one's: events visited in order cost no search. */
size_t ms__cat_seg_near(const ms__cat_ctx *x, int64_t event, size_t *hint);
const char *ms__cat_phase_name(uint8_t kind);
/* The first and last optimizer segments
 * that follow a backward, found once the segments are cut (x->first_step, x->last_step);
 * false when the run has none. */
void ms__cat_find_steps(ms__cat_ctx *x);
bool ms__cat_steps(const ms__cat_ctx *x, size_t *first, size_t *last);
#endif
