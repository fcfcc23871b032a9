/* memsnap shape: what kind of recording a device's trace is. People dump snapshots of
 * training loops, but also of one forward with its result alive, of one step, of
 * benchmark loops started after a warm-up, of compiled models that spend a minute
 * autotuning first; every command speaks of the recording in these terms, read from one
 * analysis (ms_run_shape in memsnap/run.h).
 * Part of the public API; ownership as in memsnap.h. */
#ifndef MEMSNAP_SHAPE_H
#define MEMSNAP_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "memsnap/export.h"
#include "memsnap/iterations.h"
#include "memsnap/memsnap.h"
#include "memsnap/phases.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One list: the enum, its key (JSON `shape.kind`) and its words for people. */
#define MS_SHAPE_KIND_LIST(X)                                                           \
    X(MS_SHAPE_UNKNOWN, "unknown", "no forward, backward or optimizer phase found")     \
    X(MS_SHAPE_EMPTY, "empty", "no events")                                             \
    X(MS_SHAPE_TRAINING_LOOP, "training_loop", "training loop")                         \
    X(MS_SHAPE_ONE_STEP, "one_step", "one step (forward, backward, optimizer step)")    \
    X(MS_SHAPE_ONE_STEP_NO_OPTIMIZER, "one_step_no_optimizer",                          \
      "one step (forward, backward; no optimizer step)")                                \
    X(MS_SHAPE_FORWARD_GRAPH_ALIVE, "forward_graph_alive",                              \
      "one forward; its graph is alive at the end of the recording")                    \
    X(MS_SHAPE_FORWARD, "forward", "one forward")                                       \
    X(MS_SHAPE_INFERENCE_LOOP, "inference_loop", "inference loop")                      \
    X(MS_SHAPE_BENCHMARK_LOOP, "benchmark_loop", "benchmark loop")                      \
    X(MS_SHAPE_LOOP, "loop", "loop (no forward, backward or optimizer step in its iterations)") \
    X(MS_SHAPE_TRAINING_LOOP_NO_OPTIMIZER, "training_loop_no_optimizer",                \
      "training loop without an optimizer step (forward and backward)")

MS_KEYED_ENUM(ms_shape_kind, MS_SHAPE_KIND_LIST, MS_SHAPE_KIND_COUNT);

MS_API const char *ms_shape_kind_name(ms_shape_kind k); /* "one_step_no_optimizer" */
MS_API const char *ms_shape_kind_text(ms_shape_kind k); /* "one step (forward, ...)" */

/* One stretch of torch.compile compiling and autotuning (a MS_PHASE_COMPILE phase). */
typedef struct ms_shape_compile {
    int64_t start_event, end_event; /* [start, end) */
    int64_t start_us, end_us;       /* times of its first and last event */
    int64_t peak_bytes;             /* highest live bytes inside (-1: no curve) */
    int64_t peak_event;
    uint64_t allocations;           /* allocations made by compile-time code inside */
    bool autotuning;                /* it benchmarks kernels or choices */
} ms_shape_compile;

typedef struct ms_shape {
    int device;
    ms_shape_kind kind;
    /* 0 for a forward, 1 for one step, N for a loop: the run's complete iterations. */
    uint32_t iterations;
    /* Parameters (and optimizer state) alive before the first event, and the first
     * iteration keeps nothing new: the warm-up ran before the recording. */
    bool warm_start;
    unsigned phases_seen;           /* bit (1u << ms_phase_kind) per kind seen */
    bool has_times;                 /* false: the compile windows' times are event indexes */

    /* Compile windows, in event order. */
    ms_shape_compile *compile;
    size_t n_compile;
    int64_t compile_us;             /* their durations summed */
    int64_t compile_peak_bytes;     /* the highest of their peaks (-1: none) */
    bool compile_autotuning;

    /* CUDA graphs: segments of private pools (pool id != (0,0)) in the final state.
     * Replays allocate nothing through the allocator: what they use is the pool. */
    uint64_t graph_pool_bytes;      /* the pools' reserved bytes */
    uint64_t graph_pool_live_bytes; /* of which allocated at the end (counted as live) */
    uint32_t graph_pool_segments;
    int64_t graph_capture_end_event;/* the last pool segment made in the trace, -1 none */
    /* Complete iterations that begin after the capture: replays (0-based index of the
     * first; SIZE_MAX none). */
    size_t graph_replay_first;
    size_t graph_replay_count;

    /* Without iterations: the forward's allocations alive at the end (the graph it
     * saved and its output), from the user's call at `alive_end_call` (frame id,
     * UINT32_MAX unknown). */
    uint64_t alive_end_count;
    uint64_t alive_end_bytes;
    uint32_t alive_end_call;
} ms_shape;

/* The shape of the device of `t`, from its iterations and phases (`it`, `ph`: the
 * device's; NULL finds them). `t` with an active curve gives the compile peaks. */
MS_API int ms_shape_find(ms_shape **out, const ms_snapshot *s, const ms_timeline *t,
                         const ms_iterations *it, const ms_phases *ph, ms_error *err);
MS_API void ms_shape_free(ms_shape *sh);

/* Text writers (memsnap/core.h). */

/* The shape in one line: "training loop, 5 iterations", "one step (forward, backward; no
 * optimizer step)", "benchmark loop: warm-up before the recording (parameters and
 * optimizer state alive at the first event), then 5 turns". */
MS_API size_t ms_shape_text(const ms_shape *sh, char *buf, size_t cap);
/* The compile phase: "compile 37.2 s, peak 3.10 GiB while autotuning"; "" when none. */
MS_API size_t ms_shape_compile_text(const ms_shape *sh, char *buf, size_t cap);
/* The CUDA-graph pool, said once: "CUDA graphs: replays allocate from the graph's
 * private pool, 116.00 MiB in 5 segments made during capture; a replay iteration's real
 * footprint is its live bytes plus the pool"; "" when there is no pool. */
MS_API size_t ms_shape_graphs_text(const ms_shape *sh, char *buf, size_t cap);
/* What a replay iteration really holds: its peak plus the pool's bytes not already
 * counted as live; the iteration's own peak when it is no replay or there is no pool. */
MS_API int64_t ms_shape_footprint(const ms_shape *sh, size_t iteration, const ms_iteration *x);
/* Whether complete iteration `iteration` (0-based) is a CUDA-graph replay. */
MS_API bool ms_shape_is_replay(const ms_shape *sh, size_t iteration);

#ifdef __cplusplus
}
#endif
#endif
