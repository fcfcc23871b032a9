/* Private pieces of the OOM analysis (oom.c) kept in files of their own: the cause rule
 * (oom_cause.c) and the unfinished step's measure and advice (oom_step.c). */
#ifndef MEMSNAP_OOM_INTERNAL_H
#define MEMSNAP_OOM_INTERNAL_H

#include "iter_internal.h"
#include "memsnap/oom.h"
#include "memsnap/timeline.h"

/* Sets o->limit_bytes and o->limit_is_device from the state at the failure. */
void ms__oom_limit(ms_oom *o);

/* Activations alive at `event` by layer call (see oom_step.c); sorts `alive`. */
void ms__oom_layer_stats(const ms__stackinfo *si, size_t n_stacks, ms_alloc *alive, size_t n,
                         int64_t since, uint64_t *calls, int64_t *bytes);

/* Measures the unfinished step against the previous complete iteration (prev_* ,
 * act_ratio, step_done, *_need_bytes of ms_oom). Needs act_layer_* filled. */
int ms__oom_measure_step(ms_oom *o, const ms_snapshot *s, const ms_timeline *t,
                         const ms__stackinfo *si, const ms_iterations *it, int64_t event);

/* The activation advice, with what each remedy would need at the peak against the
 * limit; writes into buf/cap. `act`: activation bytes held, `share`: their percent of
 * live memory. */
void ms__oom_activation_advice(const ms_oom *o, int64_t act, double share, char *buf,
                               size_t cap);

/* "fits under the 2.00 GiB limit" or "does not fit under ..." for a need in requested
 * bytes, into buf/cap ("" when the limit is unknown); `overhead`: weigh it as reserved
 * at the allocator's overhead at the failure (ms__oom_overhead). */
void ms__oom_fit_clause(const ms_oom *o, int64_t need, bool overhead, char *buf, size_t cap);
/* "about 1.20 GiB at the peak, fits under the 2.00 GiB limit" for the step with `freed`
 * bytes gone, into buf/cap ("" when the limit is unknown). */
void ms__oom_fit_without(const ms_oom *o, int64_t freed, char *buf, size_t cap);
/* Reserved over allocated bytes at the failure (at least 1). */
double ms__oom_overhead(const ms_oom *o);

#endif
