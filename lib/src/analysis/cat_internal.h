/* Private pieces of the categories analysis shared by its files: the rule that gives one
 * allocation its category, on the trace cut into phases (phase_cut.h, the stage below). */
#ifndef MEMSNAP_CAT_INTERNAL_H
#define MEMSNAP_CAT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "memsnap/categories.h"
#include "memsnap/phases.h"
#include "iter_internal.h"
#include "phase_cut.h"

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

/* Traces of at least this many events are classified and swept by two threads
 * (categories_build.c); lowered the same way. */
extern size_t ms__cat_build_parallel_min;
/* How many sweeps ran in two halves (for the tests: the split must happen). */
extern _Atomic size_t ms__cat_build_splits;

/* The run's form (ms_categories_formula's, without an iteration): oom reads it too. */
ms_formula_form ms__categories_form(const ms_categories *c);

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
/* The sorted sizes of the allocations categorised as parameters; NULL with *np 0 when none
 * (or out of memory: *oom). In categories_refine.c. */
uint64_t *ms__cat_param_sizes(const ms_alloc *allocs, size_t n, const uint8_t *cat, size_t *np,
                              bool *oom);
/* Whether a late-parameter candidate among `allocs` could pass, from the last backward's
 * own events: 1 may, 0 cannot, -1 out of memory. In categories_refine.c. */
int ms__cat_late_possible(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n,
                          const uint8_t *origin, const uint64_t *psz, size_t np);

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

/* ms_categories_build and ms_categories_sum_phases with the iterations `it` and
 * annotation ranges `ann` of a run (both outlive the categories). */
int ms__categories_build_with(ms_categories **out, const ms_snapshot *s, const ms_timeline *t,
                              const ms_iterations *it, const ms__ann *ann, ms_error *err);
int ms__categories_sum_with(int64_t bytes[MS_CAT_COUNT], ms_phases **phases,
                            const ms_snapshot *s, const ms_timeline *t, const ms_iterations *it,
                            const ms__ann *ann, const ms_alloc *allocs, size_t n, ms_error *err);

/* The first of `allocs` (in the timeline's order: by alloc event, those made before the
 * trace last) made at or after `event`. */
size_t ms__cat_first_made_at(const ms_alloc *allocs, size_t n, int64_t event);

/* The phases of a categorisation (what ms_phases_find gives for its timeline and
 * iterations), from the cut it was built on (categories_build.c). */
int ms__phases_of_categories(ms_phases **out, const ms_categories *c, ms_error *err);

#endif
