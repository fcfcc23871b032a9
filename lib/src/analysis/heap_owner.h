/* Which of a timeline's allocations a block of an allocator state (ms_heap) holds: the
 * one rule every view of a state uses (the OOM analysis, the run's block categories). */
#ifndef MEMSNAP_HEAP_OWNER_H
#define MEMSNAP_HEAP_OWNER_H

#include <stddef.h>

#include "internal.h"
#include "memsnap/allocator.h"

typedef struct ms__heap_owner {
    const ms_timeline *t;
    size_t n_trace; /* allocs[0..n_trace) were made in the trace, in alloc-event order */
    struct ms__owner_pre {
        uint64_t addr;
        size_t index;
    } *pre;         /* the rest (alive before the trace began), by address then index */
    size_t n_pre;
} ms__heap_owner;

/* `t` needs MS_TIMELINE_ALLOCS. 0 or MS_ERR_NOMEM. */
int ms__heap_owner_init(ms__heap_owner *o, const ms_timeline *t, ms_error *err);
void ms__heap_owner_free(ms__heap_owner *o);
/* The allocation block b holds in the state right after `event` (an index into t->allocs),
 * or SIZE_MAX for a free block or one the timeline does not know. */
size_t ms__heap_owner_of(const ms__heap_owner *o, const ms_heap_block *b, int64_t event);

#endif
