/* memsnap phases: record_function annotations paired into ranges (one rule for every
 * view), and the trace cut into phases (setup, forward, backward, optimizer step, gaps).
 * Part of the public API; ownership as in memsnap.h. */
#ifndef MEMSNAP_PHASES_H
#define MEMSNAP_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "memsnap/export.h"
#include "memsnap/iterations.h"
#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ annotation ranges */

/* A START/END pair. The one pairing rule: annotations of the device (or of no device)
 * in order; an END closes the innermost open range of the same name; an END whose START
 * was lost (a wrapped trace) opens at the earliest time (start_us INT64_MIN); a START
 * never closed (the snapshot was taken inside it) runs to the end (end_us INT64_MAX).
 * Depth is the nesting: how many other ranges contain it. */
typedef struct ms_annotation_range {
    int64_t start_us, end_us;
    uint32_t name;  /* string id */
    int depth;
    bool lost_start; /* start_us is INT64_MIN */
    bool open_end;   /* end_us is INT64_MAX */
} ms_annotation_range;

/* The device's ranges sorted by start, outer first among equal starts; ms_free(*out). */
MS_API int ms_annotation_ranges(ms_annotation_range **out, size_t *n_out, const ms_snapshot *s,
                                int device, ms_error *err);

/* ------------------------------------------------------------------ phases */

/* The first five in the order of the categories' internal kinds (phases.c asserts it). */
typedef enum ms_phase_kind {
    MS_PHASE_SETUP = 0, /* before the first phase */
    MS_PHASE_GAP,       /* between phases */
    MS_PHASE_FORWARD,
    MS_PHASE_BACKWARD,
    MS_PHASE_OPTIMIZER,
    /* torch.compile compiling and autotuning (Dynamo, Inductor): from the first
     * compile-time event to the last, per iteration that compiles. It lies over the
     * phases the categories cut (the first step's forward may run inside it) and is
     * never an iteration of its own. */
    MS_PHASE_COMPILE,
    MS_PHASE_KIND_COUNT
} ms_phase_kind;

/* A kind's stable key, as JSON writes it ("forward", "optimizer"), and its words for
 * people ("forward", "optimizer step"); "unknown" out of range. */
MS_API const char *ms_phase_kind_name(ms_phase_kind k);
MS_API const char *ms_phase_kind_text(ms_phase_kind k);

/* Where a phase was seen (bits). */
enum {
    MS_PHASE_FROM_ANNOTATION = 1,
    MS_PHASE_FROM_PYTHON = 2,  /* Python forward/backward/optimizer frames */
    MS_PHASE_FROM_ENGINE = 4,  /* autograd engine C++ frames */
    MS_PHASE_FROM_EMPTY = 8,   /* the autograd thread's empty stacks (stacks='python') */
    MS_PHASE_FROM_COMPILE = 16 /* compile-time frames or annotations (MS_PHASE_COMPILE) */
};

typedef struct ms_phase {
    ms_phase_kind kind;
    int64_t start_event, end_event; /* events [start, end); the phases cover the trace */
    int64_t close_event;            /* where the phase itself ended (<= end_event) */
    uint32_t ordinal;               /* phases of its kind before it */
    unsigned sources;               /* MS_PHASE_FROM_* */
} ms_phase;

typedef struct ms_phases {
    int device;
    size_t n;
    ms_phase *items;
    size_t counts[MS_PHASE_KIND_COUNT];
    unsigned sources;               /* union of the phases' sources */
    bool any;                       /* a forward, backward or optimizer phase exists */
} ms_phases;

/* The phases of the device of `t` (built with MS_TIMELINE_ALLOCS not needed): from
 * stacks, with annotations filling in and ending phases; the same cut the categories
 * use. `it` the device's iterations (NULL finds them). */
MS_API int ms_phases_find(ms_phases **out, const ms_snapshot *s, const ms_timeline *t,
                          const ms_iterations *it, ms_error *err);
MS_API void ms_phases_free(ms_phases *p);
/* The phase holding an event (SIZE_MAX when none). */
MS_API size_t ms_phases_at_event(const ms_phases *p, int64_t event);

#ifdef __cplusplus
}
#endif
#endif
