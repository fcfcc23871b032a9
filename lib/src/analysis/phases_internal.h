/* Private: the phase list made from a categories context already built (categories,
 * the run model), so the trace is cut into phases once. */
#ifndef MEMSNAP_PHASES_INTERNAL_H
#define MEMSNAP_PHASES_INTERNAL_H

#include "memsnap/phases.h"
#include "phase_cut.h"

int ms__phases_from_ctx(ms_phases **out, const ms__cat_ctx *x, int device, ms_error *err);
/* ms_phases_find with the iterations `it` and annotation ranges `ann` of a run. */
int ms__phases_find_with(ms_phases **out, const ms_snapshot *s, const ms_timeline *t,
                         const ms_iterations *it, const ms__ann *ann, ms_error *err);

#endif
