/* Private: torch.compile's compile-time work in a trace (compile.c), for the iteration
 * finder, the phases and the recording's shape. */
#ifndef MEMSNAP_COMPILE_INTERNAL_H
#define MEMSNAP_COMPILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memsnap/iterations.h"
#include "memsnap/memsnap.h"
#include "phase_cut.h"

enum {
    MS__COMPILE = 1u << 0,         /* compile-time work (Dynamo, Inductor) */
    MS__COMPILE_AUTOTUNE = 1u << 1 /* ... benchmarking kernels or choices: autotuning */
};

/* Per stack id, its MS__COMPILE_* bits (any frame's); *any: some stack has them. */
int ms__compile_stacks(uint8_t **out, bool *any, const ms_snapshot *s, ms_error *err);
/* The MS__COMPILE_* bits an annotation's name announces: `... (dynamo_timed)`,
 * pad_mm_benchmark, benchmark_all_configs, select_algorithm, autotune, do_bench. */
uint8_t ms__compile_annotation(const char *name);

/* The compile annotation ranges among the device's ranges `ann` as event ranges of its
 * trace [first, end), sorted and merged, with their bits; none without times. free()
 * the array. */
typedef struct ms__compile_range {
    int64_t first, end;
    uint8_t bits;
} ms__compile_range;
int ms__compile_ranges(ms__compile_range **out, size_t *n_out, const ms_snapshot *s,
                       const ms_trace *tr, const ms__ann *ann, ms_error *err);

typedef struct ms__compile_window {
    int64_t start_event, end_event; /* first compile event .. one past the last */
    uint8_t bits;                   /* MS__COMPILE_* of its events */
    uint64_t events;                /* compile events inside */
    uint64_t allocations;           /* ... of which allocations */
} ms__compile_window;

typedef struct ms__compile_windows {
    ms__compile_window *items;
    size_t n;
} ms__compile_windows;

/* The compile windows of a device's trace: its compile events (stacks, annotation
 * ranges of `ann`) from the first to the last, one window per iteration of `it` (NULL:
 * none) that holds any, and one for each stretch outside the iterations. */
int ms__compile_windows_find(ms__compile_windows *out, const ms_snapshot *s, const ms_trace *tr,
                             const ms_iterations *it, const ms__ann *ann, ms_error *err);
void ms__compile_windows_free(ms__compile_windows *w);

#endif
