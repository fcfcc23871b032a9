/* The one pairing of record_function START/END annotations into ranges: every view that
 * reads annotations (the trace cut, iterations, the run's ranges) reads these. It reads
 * only the snapshot, so it sits below every analysis that uses it. */
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "internal.h"
#include "memsnap/phases.h"

/* Outer first: by start, then the longer one. */
static int range_cmp(const void *a, const void *b)
{
    const ms_annotation_range *x = a, *y = b;
    return MS__CMP3(x->start_us, y->start_us, y->end_us, x->end_us, x->name, y->name);
}

/* How many pairings this process made: tests prove with it that a run pairs its
 * device's annotations once (ms__run_stats). Atomic, as the run's counters. */
static _Atomic size_t n_pairings;

size_t ms__annotation_pairings(void)
{
    return n_pairings;
}

int ms_annotation_ranges(ms_annotation_range **out, size_t *n_out, const ms_snapshot *s,
                         int device, ms_error *err)
{
    n_pairings++;
    *out = NULL;
    *n_out = 0;
    size_t na = 0;
    const ms_annotation *a = s ? ms_snapshot_annotations(s, &na) : NULL;
    if (!a || !na)
        return 0;
    ms_annotation_range *r = NULL;
    size_t n = 0, cap = 0;
    /* The ranges still open, as one stack per name: name -> the innermost one's index in
     * r, and below[i] the one it was opened inside. An END closes the top of its own
     * name's stack, so pairing costs O(1) per annotation however badly the names nest
     * (one stack of all open ranges searched back for the name was quadratic). */
    uint32_t *below = NULL;
    size_t capbelow = 0;
    ms_addrmap top = {NULL, NULL, 0, 0, false};
    if (!ms__addrmap_init(&top, 64))
        goto nomem;
    for (size_t i = 0; i < na; i++) {
        /* Annotations without a device belong to every device. */
        if (a[i].device != device && a[i].device >= 0)
            continue;
        if (n >= MS_ADDRMAP_NONE - 1)
            goto nomem; /* indices are 32-bit; 4G annotations cannot be read anyway */
        if (a[i].is_start) {
            if (!ms__grow((void **)&r, &cap, n + 1, sizeof *r) ||
                !ms__grow((void **)&below, &capbelow, n + 1, sizeof *below))
                goto nomem;
            r[n] = (ms_annotation_range){a[i].time_us, INT64_MAX, a[i].name, 0, false, true};
            below[n] = ms__addrmap_get(&top, a[i].name);
            if (!ms__addrmap_put(&top, a[i].name, (uint32_t)n))
                goto nomem;
            n++;
            continue;
        }
        /* The innermost open range of the same name; ranges of other names opened inside
         * it stay open (a crossing pair still closes at its own END). */
        size_t j = ms__addrmap_find(&top, a[i].name);
        if (j != SIZE_MAX) {
            uint32_t k = top.vals[j];
            r[k].end_us = a[i].time_us;
            r[k].open_end = false;
            if (below[k] != MS_ADDRMAP_NONE)
                top.vals[j] = below[k];
            else
                ms__addrmap_remove_at(&top, j);
            continue;
        }
        /* Its START was lost from a wrapped buffer: it opens at the earliest time. */
        if (!ms__grow((void **)&r, &cap, n + 1, sizeof *r) ||
            !ms__grow((void **)&below, &capbelow, n + 1, sizeof *below))
            goto nomem;
        below[n] = MS_ADDRMAP_NONE;
        r[n++] = (ms_annotation_range){INT64_MIN, a[i].time_us, a[i].name, 0, true, false};
    }
    free(below);
    below = NULL;
    ms__addrmap_free(&top);
    if (n > 1)
        qsort(r, n, sizeof *r, range_cmp);
    /* Depth: how many ranges contain it (a stack of the ends of the enclosing ones). */
    int64_t *ends = malloc((n ? n : 1) * sizeof *ends);
    if (!ends)
        goto nomem;
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        while (ne && ends[ne - 1] <= r[i].start_us)
            ne--;
        r[i].depth = ne > (size_t)INT32_MAX ? INT32_MAX : (int)ne;
        ends[ne++] = r[i].end_us;
    }
    free(ends);
    *out = r;
    *n_out = n;
    return 0;
nomem:
    free(below);
    ms__addrmap_free(&top);
    free(r);
    return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for annotations");
}
