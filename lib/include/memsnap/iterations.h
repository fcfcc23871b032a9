/* memsnap — iterations: where each step of the training (or inference) loop begins and
 * ends in a device's trace.
 *
 * Ownership follows memsnap.h: every object handed out through `**out` belongs to the
 * caller and is released with its own ms_*_free() (NULL accepted).
 */
#ifndef MEMSNAP_ITERATIONS_H
#define MEMSNAP_ITERATIONS_H

#include "memsnap/export.h"
#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ iterations */

/* How the iteration boundaries were found, most trustworthy first. */
#define MS_ITER_METHOD_LIST(X)                                                         \
    X(MS_ITER_NONE, "none", "no repeating structure found")                            \
    X(MS_ITER_ANNOTATION_STEP, "annotation", "record_function ranges named by --step") \
    X(MS_ITER_ANNOTATION_PROFILER, "profiler-step", "ProfilerStep#N annotations")      \
    X(MS_ITER_ANNOTATION_OPTIMIZER, "optimizer-annotation",                            \
      "Optimizer.step annotations end each iteration")                                 \
    X(MS_ITER_OPTIMIZER_FRAMES, "optimizer-frames",                                    \
      "optimizer-step stacks (frames under optim/) end each iteration")                \
    X(MS_ITER_FORWARD_CALLS, "forward-calls", "repeated top-level forward calls")      \
    X(MS_ITER_BASELINE, "baseline", "live memory returning to a baseline")              \
    X(MS_ITER_ONE_STEP, "one-step",                                                    \
      "one forward and backward, not repeated: the step is one iteration")

MS_KEYED_ENUM(ms_iter_method, MS_ITER_METHOD_LIST, MS_ITER_METHOD_COUNT);

MS_API const char *ms_iter_method_name(ms_iter_method m); /* "optimizer-frames" */
MS_API const char *ms_iter_method_text(ms_iter_method m); /* one line for people */

typedef struct ms_iter_options {
    const char *step_name; /* annotation name that marks one iteration, or NULL */
    uint32_t expected;     /* the count the user states (--iterations), 0 = unknown */
    bool trace_only;       /* ignore annotations: detect from stacks and memory alone */
} ms_iter_options;

typedef struct ms_iteration {
    int64_t start_event;    /* first event of the iteration (device trace index) */
    int64_t end_event;      /* one past its last event */
    int64_t start_us;       /* time of the first event (annotation time when known) */
    int64_t end_us;         /* time of the last event (annotation time when known) */
    int64_t peak_bytes;     /* highest live requested bytes inside the iteration */
    int64_t live_end_bytes; /* live requested bytes right after its last event */
    bool partial;           /* began before the first kept event of a wrapped trace */
    bool unfinished;        /* the trace ended inside it (an out-of-memory error) */
} ms_iteration;

typedef struct ms_iterations {
    int device;
    ms_iter_method method;
    char detail[128];       /* e.g. the annotation name used; "" when nothing to add */
    size_t n;               /* complete iterations: items[0 .. n) */
    ms_iteration *items;    /* in time order, non-overlapping */
    /* 1 when items[n] is the iteration the trace ended in, unfinished: the events after
     * the last complete iteration, when they hold an out-of-memory error. Views that
     * list the iterations up to a failure end with it, marked. */
    size_t n_unfinished;
    bool has_times;         /* the trace's: false, start_us/end_us are event indexes */
} ms_iterations;

/* Finds the iterations of one device. `t` is that device's timeline: with an active curve
 * (MS_TIMELINE_CURVES or MS_TIMELINE_ACTIVE) the iterations' peaks come from it, without
 * one from a replay of the trace; NULL builds one internally. `opt` may be NULL. A trace without a
 * repeating structure gives method MS_ITER_NONE and n == 0, not an error. */
MS_API int ms_iterations_find(ms_iterations **out, const ms_snapshot *s, int device,
                              const ms_timeline *t, const ms_iter_options *opt, ms_error *err);

MS_API void ms_iterations_free(ms_iterations *it);

#ifdef __cplusplus
}
#endif
#endif
