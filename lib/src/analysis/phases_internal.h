/* Private: the phase list made from a categories context already built (categories,
 * the run model), so the trace is cut into phases once. */
#ifndef MEMSNAP_PHASES_INTERNAL_H
#define MEMSNAP_PHASES_INTERNAL_H

#include "cat_internal.h"
#include "memsnap/categories.h"
#include "memsnap/phases.h"

int ms__phases_from_ctx(ms_phases **out, const ms__cat_ctx *x, int device, ms_error *err);
/* The phases of a categorisation (what ms_phases_find gives for its timeline and
 * iterations), from the context it was built on. */
int ms__phases_of_categories(ms_phases **out, const ms_categories *c, ms_error *err);

#endif
