/* What a recording without iterations leaves alive at its end: the allocations a forward
 * made and nobody freed, the graph it saved for a backward that never ran and its output.
 * One rule, read by the recording's shape (one forward, with or without its graph alive)
 * and by the leak report (one finding of kind alive_at_end, not one suspect per site). */
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "internal.h"
#include "leak_internal.h"

/* Made during the trace under a module's forward (no compile-time work, no library
 * workspace), and never released. */
static bool forward_left(const ms__stackinfo *si, size_t nst, const ms_alloc *a)
{
    if (a->alloc_event < 0 || a->free_event >= 0 || a->free_requested_event >= 0 ||
        a->stack == MS_NO_STACK || a->stack >= nst)
        return false;
    const ms__stackinfo *x = &si[a->stack];
    return x->fwd_depth > 0 && x->call_key != UINT32_MAX &&
           !(x->flags & (MS__ST_COMPILE | MS__ST_WORKSPACE));
}

bool ms__alive_end_member(const ms__alive_end *ae, const ms_snapshot *s, const ms__stackinfo *si,
                          const ms_alloc *a)
{
    return ae->call_key != UINT32_MAX && forward_left(si, ms_snapshot_stack_count(s), a) &&
           si[a->stack].call_key == ae->call_key;
}

int ms__alive_end_find(ms__alive_end *out, const ms_snapshot *s, const ms__stackinfo *si,
                       const ms_alloc *allocs, size_t n, ms_error *err)
{
    memset(out, 0, sizeof *out);
    out->call_key = UINT32_MAX;
    size_t nst = ms_snapshot_stack_count(s), nframes = ms_snapshot_frame_count(s);
    uint64_t *bytes = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!forward_left(si, nst, &allocs[i]) || si[allocs[i].stack].call_key >= nframes)
            continue;
        if (!bytes && !(bytes = calloc(nframes, sizeof *bytes)))
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for what is alive");
        bytes[si[allocs[i].stack].call_key] += allocs[i].size + 1; /* 0 B still counts */
    }
    if (!bytes)
        return 0;
    /* The forward called from the line that left the most bytes. */
    uint64_t best = 0;
    for (size_t k = 0; k < nframes; k++)
        if (bytes[k] > best) {
            best = bytes[k];
            out->call_key = (uint32_t)k;
        }
    free(bytes);
    ms_addrmap layers;
    if (!ms__addrmap_init(&layers, 64))
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for what is alive");
    for (size_t i = 0; i < n; i++) {
        const ms_alloc *a = &allocs[i];
        if (!ms__alive_end_member(out, s, si, a))
            continue;
        out->count++;
        out->bytes += a->size;
        uint64_t layer = (uint64_t)si[a->stack].layer + 1;
        if (ms__addrmap_get(&layers, layer) == MS_ADDRMAP_NONE) {
            if (!ms__addrmap_put(&layers, layer, 0)) {
                ms__addrmap_free(&layers);
                return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for what is alive");
            }
            out->layers++;
        }
    }
    ms__addrmap_free(&layers);
    /* A graph is what several layers saved; one tensor of one layer is an output. */
    out->graph = out->count >= 2 && out->layers >= 2;
    return 0;
}
