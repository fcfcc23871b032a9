/* The snapshot's annotation ranges for the chart model (see chart_impl.h), paired once
 * per snapshot and device instead of once per chart: the view's pyramid builds hundreds
 * of window charts of one snapshot, and each paired and sorted every annotation of the
 * trace again (a slice of the trace shares its snapshot). The pairing reads nothing but
 * the snapshot's annotation array and the device, so the cache keeps a copy of that
 * array and answers only when the snapshot's is the same, byte for byte: a snapshot
 * freed and another read at the same address can never be served stale ranges. */
#include "chart_impl.h"

#include <pthread.h>

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const ms_snapshot *snap;
    int device;
    ms_annotation *seen; /* the annotations the ranges were paired from */
    size_t n_seen;
    ms_annotation_range *ranges;
    size_t n_ranges;
} cache;

static ms_annotation_range *copy_ranges(const ms_annotation_range *r, size_t n)
{
    ms_annotation_range *c = ms__alloc_n(n, sizeof *c);
    if (c && n)
        memcpy(c, r, n * sizeof *c);
    return c;
}

int ms__annotation_ranges(ms_annotation_range **out, size_t *n_out, const ms_snapshot *snap,
                          int device, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    size_t na = 0;
    const ms_annotation *a = snap ? ms_snapshot_annotations(snap, &na) : NULL;
    if (!a || !na)
        return ms_annotation_ranges(out, n_out, snap, device, err);
    pthread_mutex_lock(&cache_mu);
    if (cache.snap == snap && cache.device == device && cache.n_seen == na &&
        memcmp(cache.seen, a, na * sizeof *a) == 0) {
        ms_annotation_range *r = copy_ranges(cache.ranges, cache.n_ranges);
        size_t n = cache.n_ranges;
        pthread_mutex_unlock(&cache_mu);
        if (!r)
            return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for %zu annotations", n);
        *out = r;
        *n_out = n;
        return 0;
    }
    pthread_mutex_unlock(&cache_mu);
    int rc = ms_annotation_ranges(out, n_out, snap, device, err);
    if (rc)
        return rc;
    /* Remember them; without the memory for it the next chart pairs them again. */
    ms_annotation *seen = ms__alloc_n(na, sizeof *seen);
    ms_annotation_range *keep = copy_ranges(*out, *n_out);
    if (!seen || !keep) {
        free(seen);
        free(keep);
        return 0;
    }
    memcpy(seen, a, na * sizeof *a);
    pthread_mutex_lock(&cache_mu);
    free(cache.seen);
    free(cache.ranges);
    cache.snap = snap;
    cache.device = device;
    cache.seen = seen;
    cache.n_seen = na;
    cache.ranges = keep;
    cache.n_ranges = *n_out;
    pthread_mutex_unlock(&cache_mu);
    return 0;
}
