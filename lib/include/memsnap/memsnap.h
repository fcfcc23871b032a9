/* memsnap — read PyTorch CUDA memory snapshots and analyse where GPU memory went.
 *
 * Ownership, in one sentence: every object handed out through an `**out` parameter
 * belongs to the caller and is released with its own ms_*_free(), which accepts NULL,
 * and every pointer obtained from an object (strings, arrays, views) lives exactly as
 * long as that object.
 *
 * Conventions (docs/api.md has them all): a function that can fail returns 0 on success
 * and a negative ms_code on failure, with the details (code, byte offset where it
 * applies, message) in a caller-owned ms_error, its last parameter (NULL accepted);
 * output parameters come first; ms_X_name() is an enum's stable key and ms_X_text()
 * its prose; text writers keep one rule (memsnap/core.h). The library never prints and
 * never exits.
 *
 * This header includes the basic API, one header per part (each may be included alone):
 * core.h (errors, limits, helpers), model.h (reading and the snapshot model),
 * timeline.h (memory over time, allocation lives), sites.h (allocation sites). The run
 * and every analysis it holds are in memsnap/run.h, which includes this header and
 * iterations.h, idle.h, phases.h, shape.h, leaks.h, categories.h and oom.h; the
 * allocator's state is memsnap/allocator.h, comparisons memsnap/compare.h, the version
 * memsnap/version.h. docs/api.md lists every function by stage.
 */
#ifndef MEMSNAP_H
#define MEMSNAP_H

#include "memsnap/core.h"
#include "memsnap/model.h"
#include "memsnap/timeline.h"
#include "memsnap/sites.h"

#endif
