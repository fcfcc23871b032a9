/* Which allocation a block of an allocator state holds (heap_owner.h). A block made in
 * the trace names its alloc event, and the timeline keeps those allocations in
 * alloc-event order: a binary search. A block alive before the trace began is found by
 * its address among the rebuilt allocations, the one alive at the state's event. */
#include "heap_owner.h"

#include <stdlib.h>

static int by_address(const void *a, const void *b)
{
    const struct ms__owner_pre *x = a, *y = b;
    return MS__CMP2(x->addr, y->addr, x->index, y->index);
}

int ms__heap_owner_init(ms__heap_owner *o, const ms_timeline *t, ms_error *err)
{
    o->t = t;
    o->n_trace = 0;
    o->pre = NULL;
    o->n_pre = 0;
    while (o->n_trace < t->n_allocs && t->allocs[o->n_trace].alloc_event >= 0)
        o->n_trace++;
    size_t n = t->n_allocs - o->n_trace;
    if (n == 0)
        return 0;
    o->pre = malloc(n * sizeof *o->pre);
    if (!o->pre)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    for (size_t k = 0; k < n; k++)
        o->pre[k] = (struct ms__owner_pre){t->allocs[o->n_trace + k].addr, o->n_trace + k};
    o->n_pre = n;
    qsort(o->pre, n, sizeof *o->pre, by_address);
    return 0;
}

void ms__heap_owner_free(ms__heap_owner *o)
{
    free(o->pre);
    o->pre = NULL;
    o->n_pre = 0;
}

size_t ms__heap_owner_of(const ms__heap_owner *o, const ms_heap_block *b, int64_t event)
{
    if (b->state == MS_BLOCK_INACTIVE)
        return SIZE_MAX;
    const ms_alloc *a = o->t->allocs;
    if (b->alloc_event >= 0) {
        size_t lo = 0, hi = o->n_trace;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (a[mid].alloc_event < b->alloc_event)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo < o->n_trace && a[lo].alloc_event == b->alloc_event ? lo : SIZE_MAX;
    }
    size_t lo = 0, hi = o->n_pre;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->pre[mid].addr < b->address)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Of the rebuilt allocations at this address (one, in a consistent file), the first
     * still alive after `event`. */
    for (; lo < o->n_pre && o->pre[lo].addr == b->address; lo++) {
        const ms_alloc *p = &a[o->pre[lo].index];
        if (p->free_event < 0 || p->free_event > event)
            return o->pre[lo].index;
    }
    return SIZE_MAX;
}
