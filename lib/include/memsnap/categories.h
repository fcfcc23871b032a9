/* memsnap — where the memory goes: every allocation of a device gets a category
 * (parameter, gradient, optimizer state, activation, ...) from the snapshot alone.
 *
 * Ownership follows memsnap.h: every object handed out through `**out` belongs to the
 * caller and is released with its own ms_*_free() (NULL accepted); pointers inside it
 * live as long as it does. A categorisation refers to the snapshot, timeline and
 * iterations given to ms_categories_build, which must outlive it.
 *
 * How it works (docs/memsnap.1.md, CATEGORIES, has the long form): the trace is cut
 * into phases — forward, backward and optimizer step — from record_function annotations
 * and from what each allocation's stack says (Python `forward` frames, autograd engine
 * frames or the autograd thread's empty stacks, optimizer package frames). An
 * allocation's category then follows from the phase it was made in and whether it
 * outlived that phase: made in backward and alive after it ended is a gradient, made in
 * forward and alive when it ended an activation, made and freed inside one phase a
 * temporary, made before the first iteration and alive into it a parameter, and so on.
 */
#ifndef MEMSNAP_CATEGORIES_H
#define MEMSNAP_CATEGORIES_H

#include "memsnap/export.h"
#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ms_category {
    MS_CAT_PARAMETER,       /* model weights and buffers */
    MS_CAT_GRADIENT,        /* .grad tensors */
    MS_CAT_OPTIMIZER_STATE, /* Adam moments, momentum buffers */
    MS_CAT_ACTIVATION,      /* made in forward, alive when it ended */
    MS_CAT_TEMPORARY,       /* made and freed inside one phase */
    MS_CAT_WORKSPACE,       /* cuBLAS/cuDNN workspaces, NCCL buffers */
    MS_CAT_INPUT,           /* the batch moved to the GPU before its forward */
    MS_CAT_OTHER,           /* everything else */
    MS_CAT_COUNT
} ms_category;

/* "parameter", "gradient", "optimizer_state", ... (the JSON keys); "unknown" otherwise. */
MS_API const char *ms_category_name(ms_category c);

/* Why an allocation got its category. One list gives the enum, a key and a sentence. */
#define MS_CAT_REASON_LIST(X)                                                              \
    X(MS_CATR_WORKSPACE_FRAMES, "workspace-frames",                                        \
      "its stack shows a library workspace (cuBLAS/cuDNN) or NCCL buffer")                 \
    X(MS_CATR_WORKSPACE_PATTERN, "workspace-pattern",                                      \
      "made once in the first forward or backward and never freed, while later ones free " \
      "theirs, and no parameter has its size (a library workspace's pattern; no C++ "      \
      "frames to confirm)")                                                                \
    X(MS_CATR_SETUP_MODULE, "setup-module",                                                \
      "made before the first iteration by module construction or .to()/.cuda()/load, "     \
      "alive into the iterations")                                                         \
    X(MS_CATR_SETUP_ALIVE, "setup-alive",                                                  \
      "made before the first iteration and alive into the iterations")                     \
    X(MS_CATR_SETUP_FREED, "setup-freed", "made and freed before the first iteration")    \
    X(MS_CATR_PRETRACE_KEPT, "pretrace-kept",                                              \
      "alive before the trace began and through the iterations: model state in the usual " \
      "case, but the trace cannot tell parameters from optimizer state")                   \
    X(MS_CATR_PRETRACE, "pretrace", "alive before the trace began, freed during it")       \
    X(MS_CATR_FORWARD_KEPT, "forward-kept", "made in a forward pass, alive when it ended") \
    X(MS_CATR_BACKWARD_KEPT, "backward-kept",                                              \
      "made in a backward pass, alive after it ended (a .grad)")                           \
    X(MS_CATR_OPTIMIZER_KEPT, "optimizer-kept",                                            \
      "made in an optimizer step, alive after it ended")                                   \
    X(MS_CATR_PHASE_FREED, "phase-freed", "made and freed inside one phase")               \
    X(MS_CATR_INPUT, "input", "made after the previous phase, alive when a forward began") \
    X(MS_CATR_GAP_FREED, "gap-freed",                                                      \
      "made between phases, freed before the next phase ended")                            \
    X(MS_CATR_GAP_KEPT, "gap-kept", "made between phases, outside any forward, backward "  \
                                    "or optimizer step, and kept")                         \
    X(MS_CATR_NO_PHASES, "no-phases",                                                      \
      "no forward, backward or optimizer phase was found in this trace")                   \
    X(MS_CATR_BACKWARD_REUSED, "backward-reused",                                          \
      "made in a forward pass, alive after the backward that followed and freed with "     \
      "that backward's gradients, with a parameter's size (compiled code reused a buffer " \
      "saved for backward as a .grad)")                                                    \
    X(MS_CATR_LATE_PARAMETER, "late-parameter",                                            \
      "made after training began and never freed; every backward after it made a "         \
      "gradient of its size, and the next optimizer step state of its size (a lazy or "    \
      "materialised module, or a layer added mid-run)")                                    \
    X(MS_CATR_NO_STACKS, "no-stacks",                                                      \
      "the trace has no stacks (recorded with context None or 'state') and no forward or " \
      "backward annotation: what it was made for cannot be told")                         \
    X(MS_CATR_MIRRORED_PARAMETER, "mirrored-parameter",                                    \
      "alive from before the first optimizer step to the end, and mirrored one to one in " \
      "size by the gradients alive at the step and the state the optimizer made in it (a " \
      "parameter made outside the setup: a lazy module's first forward, a no_grad "         \
      "materialisation)")

MS_KEYED_ENUM(ms_category_reason, MS_CAT_REASON_LIST, MS_CATR_COUNT);

MS_API const char *ms_category_reason_name(ms_category_reason r); /* "backward-kept" */
MS_API const char *ms_category_reason_text(ms_category_reason r); /* one sentence */
/* True where the evidence is a pattern rather than a record (say so to people). */
MS_API bool ms_category_reason_weak(ms_category_reason r);

typedef struct ms_categories ms_categories;

/* Categorises every allocation of `t->allocs`. `t` is the device's timeline built with
 * MS_TIMELINE_ALLOCS (NULL builds one, owned by the result); `it` its iterations (NULL
 * finds them with default options, owned by the result). */
MS_API int ms_categories_build(ms_categories **out, const ms_snapshot *s, int device,
                               const ms_timeline *t, const ms_iterations *it, ms_error *err);
MS_API void ms_categories_free(ms_categories *c);

/* The timeline and iterations used (the caller's, or the ones built). */
MS_API const ms_timeline *ms_categories_timeline(const ms_categories *c);
MS_API const ms_iterations *ms_categories_iterations(const ms_categories *c);

/* Per allocation, `alloc_index` into the timeline's allocs[] (MS_CAT_OTHER and
 * MS_CATR_NO_PHASES out of range). */
MS_API ms_category ms_categories_of(const ms_categories *c, size_t alloc_index);
MS_API ms_category_reason ms_categories_reason(const ms_categories *c, size_t alloc_index);
/* A text writer (memsnap/core.h): one line for people, the reason with the phase and
 * times filled in, e.g. "made in backward 2 (autograd engine frames) at 1.131 s, alive
 * after it ended at 1.134 s"; "" for an index out of range. */
MS_API size_t ms_categories_explain(const ms_categories *c, size_t alloc_index, char *buf,
                                    size_t cap);

/* Bytes (requested) alive right after `event` (-1: before the first event) by category;
 * they sum to the timeline's active bytes there. Costs at most a few thousand events'
 * replay from the nearest stored checkpoint. */
MS_API int ms_categories_at_event(int64_t bytes[MS_CAT_COUNT], const ms_categories *c,
                                  int64_t event, ms_error *err);
/* The same right after the last event at or before `time_us` (the trace's clock); before
 * the first event gives the state at the start. */
MS_API int ms_categories_at_time(int64_t bytes[MS_CAT_COUNT], const ms_categories *c,
                                 int64_t time_us, ms_error *err);
/* The event index ms_categories_at_time uses for `time_us` (-1: the start). */
MS_API int64_t ms_categories_event_at_time(const ms_categories *c, int64_t time_us);

/* Calls fn after every event in [first, last] with the bytes by category alive then:
 * per-category curves in one pass. */
MS_API int ms_categories_sweep(const ms_categories *c, int64_t first, int64_t last,
                               void (*fn)(void *ctx, int64_t event,
                                          const int64_t bytes[MS_CAT_COUNT]),
                               void *ctx, ms_error *err);

/* A point of the timeline with its breakdown. */
typedef struct ms_category_point {
    int64_t event;    /* -1: before the first event */
    int64_t time_us;
    int64_t bytes;    /* sum of by[] */
    int64_t by[MS_CAT_COUNT];
} ms_category_point;

/* The device's peak (the timeline's peak event). */
MS_API const ms_category_point *ms_categories_peak(const ms_categories *c);
/* Iteration k (of ms_categories_iterations): its end (after its last event) and its
 * peak (first highest point inside it). NULL when k is out of range. */
MS_API const ms_category_point *ms_categories_iteration_end(const ms_categories *c, size_t k);
MS_API const ms_category_point *ms_categories_iteration_peak(const ms_categories *c, size_t k);

/* The state after the trace's last event, by category, and how much of it the leak
 * findings hold. A leaked tensor keeps the category of the phase that made it (often
 * activation or other), so by category alone a leak hides; held_by_leaks_bytes says how
 * much of the end is what `memsnap leaks` reports as leaks (findings of kind
 * MS_LEAK_LEAK, their allocations still alive after the last event). `r` is a leak
 * report of the device whose alloc indices refer to this categorisation's timeline
 * (ms_leak_report_build given that timeline, or given NULL: builds are deterministic); NULL
 * runs ms_leak_report_build with default options, as `memsnap leaks` does. */
typedef struct ms_category_end {
    ms_category_point at;        /* after the last event (-1: an empty trace's start) */
    int64_t held_by_leaks_bytes; /* part of at.bytes */
    uint64_t leak_findings;      /* leak findings holding any of it */
} ms_category_end;

MS_API int ms_categories_end(ms_category_end *out, const ms_categories *c,
                             const ms_leak_report *r, ms_error *err);

/* The memory formula for iteration k, with the measured numbers; each term is its highest
 * value inside the iteration. Its form follows the run's evidence: a run with a backward
 * or an optimizer step gets the Hugging Face guide's training formula, parameters +
 * optimizer state + max(gradients + optimizer intermediates, activations); a run whose
 * passes are all forwards (no backward, no optimizer step) the inference one,
 * parameters + inputs (and KV caches) + activations and temporaries, with no gradient or
 * optimizer term. */
typedef enum ms_formula_form {
    MS_FORM_TRAINING,
    MS_FORM_INFERENCE
} ms_formula_form;

MS_API const char *ms_formula_form_name(ms_formula_form f); /* "training", "inference" */

typedef struct ms_category_formula {
    size_t iteration;
    ms_formula_form form;
    int64_t parameter;
    int64_t optimizer_state;
    int64_t gradient;
    int64_t optimizer_temporary; /* temporaries alive inside optimizer steps */
    int64_t activation;          /* activations + input */
    int64_t input;               /* inference: the input category (batches, KV caches) */
    int64_t activation_temporary; /* inference: activations + temporaries */
    int64_t estimate;            /* the formula's value */
    int64_t measured_peak;       /* the iteration's real peak */
} ms_category_formula;

MS_API int ms_categories_formula(ms_category_formula *out, const ms_categories *c, size_t k,
                                 ms_error *err);

/* What a training step says about the categories: an optimizer keeps k tensors of state
 * for each trainable parameter, each of its parameter's size (Adam/AdamW exp_avg and
 * exp_avg_sq: k = 2; SGD with momentum its momentum_buffer: 1; SGD without: 0), and
 * every trainable parameter has a gradient when the step begins. So at the last
 * optimizer step that follows a backward, optimizer state = k x trainable parameters =
 * k x gradients, where the trainable parameters are the parameters with a gradient of
 * their size (frozen ones have neither). k is measured from the sizes (state tensors per
 * gradient of each size) and checked against the optimizer, named by its step's
 * annotation (Optimizer.step#AdamW.step) or its file in torch/optim/. Where the identity
 * fails, `off` names the side the other two contradict and `off_by` how far it is off
 * (its bytes less what the others say it should hold). */
typedef struct ms_category_identity {
    bool checked;          /* a step after a backward, with gradients alive at it */
    bool holds;
    char optimizer[32];    /* "AdamW"; "" when neither annotation nor frames name it */
    bool optimizer_from_frames; /* named by its file (adam.py serves Adam and AdamW) */
    int states_per_parameter;   /* k the identity uses: the measured one, or the
                                 * optimizer's usual one where the measured one is not
                                 * one the optimizer keeps */
    int measured_states_per_parameter; /* -1 when no size tells */
    const char *state_names;    /* the optimizer's state tensors ("exp_avg, exp_avg_sq");
                                 * NULL unknown */
    int64_t event;              /* the step's first event: parameters and gradients are
                                 * counted alive before it, optimizer state after the step */
    int64_t parameter;          /* every parameter alive there */
    int64_t trainable_parameter; /* ... those with a gradient of their size */
    int64_t gradient;
    int64_t optimizer_state;
    int64_t expected_optimizer_state; /* states_per_parameter x trainable_parameter */
    int64_t state_before_trace; /* of `parameter`: alive before the trace began, of trainable
                                 * sizes beyond one a gradient, up to k more: optimizer state
                                 * made before the recording (a wrapped ring buffer, a
                                 * recording started after warm-up steps) */
    ms_category off;            /* MS_CAT_PARAMETER, MS_CAT_GRADIENT or
                                 * MS_CAT_OPTIMIZER_STATE; MS_CAT_COUNT when it holds or
                                 * no one side is contradicted by the other two */
    int64_t off_by;             /* signed bytes (the state's against expected_optimizer_state
                                 * when off is MS_CAT_COUNT) */
} ms_category_identity;

/* The identity at the run's last optimizer step; out->checked false (and 0 returned) on a
 * run without one (inference) or without gradients alive at it. */
MS_API int ms_categories_identity(ms_category_identity *out, const ms_categories *c,
                                  ms_error *err);

/* Phases found, for people: counts by kind and where they came from. */
typedef struct ms_category_phases {
    size_t forward, backward, optimizer;
    bool from_annotations;   /* record_function ranges */
    bool from_python_frames; /* Python forward/backward/optimizer frames */
    bool from_engine_frames; /* autograd engine C++ frames (stacks='all') */
    bool from_empty_stacks;  /* the autograd thread's empty stacks (stacks='python') */
    /* The trace's allocations carry no stacks at all: without forward/backward
     * annotations, what was made inside the iterations is 'other' (reason no-stacks). */
    bool no_stacks;
    /* The snapshot has CUDA-graph private pools (segments with pool_id != (0,0)): graph
     * replays make no allocations, so what a replay writes (its outputs, gradients
     * included) is inside the pool's reserved memory and in no category. */
    bool cuda_graph_pools;
} ms_category_phases;

MS_API void ms_categories_phases(ms_category_phases *out, const ms_categories *c);

/* Without building everything: the bytes by category of any allocation lives of the
 * device of `t` (e.g. t->peak_alive of a timeline built without MS_TIMELINE_ALLOCS),
 * classified as ms_categories_build would. `it` as above (NULL finds them). One pass
 * over the trace; what `memsnap summary` uses. */
MS_API int ms_categories_sum(int64_t bytes[MS_CAT_COUNT], const ms_snapshot *s,
                             const ms_timeline *t, const ms_iterations *it,
                             const ms_alloc *allocs, size_t n, ms_error *err);
/* ms_categories_sum, and the phases ms_phases_find would give (*phases, freed with
 * ms_phases_free) from the same pass over the trace: the phase tagging is the costly
 * part of both. *phases is NULL when they cannot be found; the sum still stands. */
struct ms_phases;
MS_API int ms_categories_sum_phases(int64_t bytes[MS_CAT_COUNT], struct ms_phases **phases,
                                    const ms_snapshot *s, const ms_timeline *t,
                                    const ms_iterations *it, const ms_alloc *allocs, size_t n,
                                    ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
