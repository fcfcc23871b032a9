/* Private helpers shared by the iteration finder (iterations.c, iter_*.c) and leaks.c:
 * what each stack says about the program structure (optimizer step, layer, top-level
 * forward call). */
#ifndef MEMSNAP_ITER_INTERNAL_H
#define MEMSNAP_ITER_INTERNAL_H

#include <stdint.h>

#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"
#include "phase_cut.h"

enum {
    MS__ST_OPTIM = 1u << 0,     /* a Python frame of an optimizer package */
    MS__ST_ZERO_GRAD = 1u << 1, /* ... and that optimizer frame is inside zero_grad */
    MS__ST_WORKSPACE = 1u << 2, /* a library workspace: a cache kept by design */
    MS__ST_PYTHON = 1u << 3,    /* has any Python frame at all */
    MS__ST_COMPILE = 1u << 4,   /* torch.compile's compile-time work (compile_internal.h) */
    MS__ST_BACKWARD = 1u << 5   /* a backward frame: Python entering autograd, or the engine */
};

typedef struct ms__stackinfo {
    uint32_t layer;     /* innermost forward/backward frame, UINT32_MAX none */
    uint32_t call_key;  /* user frame that called the outermost forward, UINT32_MAX none */
    uint64_t layer_call; /* identity of the layer call (frame chain), 0 none */
    uint8_t flags;
    uint8_t fwd_depth;  /* Python forward frames on the stack (nesting of module calls) */
} ms__stackinfo;

/* One entry per stack id of the snapshot; free() the result. */
int ms__stackinfo_build(ms__stackinfo **out, const ms_snapshot *s, ms_error *err);

/* Iteration finder working on an already built stack table and timeline and the device's
 * annotation ranges `ann`. */
int ms__iterations_find(ms_iterations **out, const ms_snapshot *s, const ms_timeline *t,
                        const ms__stackinfo *si, const ms__ann *ann, const ms_iter_options *opt,
                        ms_error *err);

/* The same, building the stack table here. */
int ms__iterations_with(ms_iterations **out, const ms_snapshot *s, const ms_timeline *t,
                        const ms__ann *ann, const ms_iter_options *opt, ms_error *err);

/* What a run lends the analyses above the iterations, for an entry point called without
 * one: the device's annotation ranges, paired here once, and the caller's iterations
 * `it`, or those found here with options `opt` when it gave none. */
typedef struct ms__lent {
    ms__ann ann;
    const ms_iterations *it;
    ms_annotation_range *own_ranges;
    ms_iterations *own_it;
} ms__lent;
int ms__lent_take(ms__lent *l, const ms_snapshot *s, const ms_timeline *t,
                  const ms_iterations *it, const ms_iter_options *opt, ms_error *err);
void ms__lent_free(ms__lent *l);

#endif
