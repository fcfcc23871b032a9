/* Stacking of the chart model (see chart_impl.h): the height of every band in every
 * pixel column — the bytes its allocations hold right after the column's representative
 * event — and the "other" band on top. One sweep over the bands' alloc/free events,
 * bucketed by event index, visiting the columns in event order. */
#include "chart_impl.h"

typedef struct delta {
    int32_t group;
    int64_t bytes;
} delta;
static int cmp_col_event(const void *a, const void *b, const int64_t *ev)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (ev[x] != ev[y])
        return ev[x] < ev[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* qsort has no context argument in C11; columns are few, so an insertion sort does. */
static void sort_columns(size_t *order, size_t n, const int64_t *ev)
{
    for (size_t i = 1; i < n; i++) {
        size_t v = order[i], j = i;
        while (j > 0 && cmp_col_event(&order[j - 1], &v, ev) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
}

/* A band's height changed at a column: from sorted column k on it is `h`. */
typedef struct change {
    uint32_t group, k;
    int64_t h;
} change;

int ms__sweep_heights(ms_chart *chart, const ms_chart_source *src, const ms__grouping *gr,
                      ms_error *err)
{
    const ms_timeline *tl = src->tl;
    size_t G = gr->n_groups, W = chart->n_cols, E = tl->n_events;
    if (G > MS_CHART_MAX_GROUPS || (G && W > MS_CHART_MAX_CELLS / G))
        return ms__render_fail(err, MS_ERR_LIMIT,
                               "%zu bands x %zu columns is too many to draw", G, W);
    /* Every cell is written below, band by band: no zeroing first. */
    chart->heights = G && W ? malloc(G * W * sizeof *chart->heights) : ms__alloc_n(1, 8);
    chart->col_other = ms__alloc_n(W, sizeof *chart->col_other);
    int64_t *cur = ms__alloc_n(G, sizeof *cur);
    int64_t *shown = ms__alloc_n(G, sizeof *shown); /* the height last recorded */
    uint32_t *dirty = ms__alloc_n(G, sizeof *dirty); /* bands touched since a column */
    bool *is_dirty = ms__alloc_n(G, sizeof *is_dirty);
    size_t *order = ms__alloc_n(W, sizeof *order);
    uint32_t *bucket = ms__alloc_n(E + 1, sizeof *bucket); /* half the memory of size_t */
    delta *d = NULL;
    change *ch = NULL, *by_band = NULL;
    uint32_t *band_start = NULL;
    int rc = 0;
    if (!chart->heights || !chart->col_other || !cur || !shown || !dirty || !is_dirty ||
        !order || !bucket) {
        rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
        goto done;
    }
    size_t n_delta = 0;
    for (size_t i = 0; i < tl->n_allocs; i++) {
        int32_t g = gr->of_alloc[i];
        if (g < 0)
            continue;
        const ms_alloc *a = &tl->allocs[i];
        int64_t bytes = a->size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a->size;
        if (a->alloc_event < 0)
            cur[g] += bytes;
        else if ((size_t)a->alloc_event < E) {
            bucket[a->alloc_event]++;
            n_delta++;
        }
        if (a->free_event >= 0 && (size_t)a->free_event < E) {
            bucket[a->free_event]++;
            n_delta++;
        }
    }
    /* A change per delta at most, and one per band for the bytes before the trace. */
    d = n_delta <= UINT32_MAX ? ms__alloc_n(n_delta, sizeof *d) : NULL;
    ch = ms__alloc_n(n_delta + G, sizeof *ch);
    if (!d || !ch) {
        rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
        goto done;
    }
    /* Counting sort: bucket[e] becomes the first slot of event e's deltas. */
    uint32_t sum = 0;
    for (size_t e = 0; e <= E; e++) {
        uint32_t k = bucket[e];
        bucket[e] = sum;
        sum += k;
    }
    for (size_t i = 0; i < tl->n_allocs; i++) {
        int32_t g = gr->of_alloc[i];
        if (g < 0)
            continue;
        const ms_alloc *a = &tl->allocs[i];
        int64_t bytes = a->size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a->size;
        if (a->alloc_event >= 0 && (size_t)a->alloc_event < E)
            d[bucket[a->alloc_event]++] = (delta){g, bytes};
        if (a->free_event >= 0 && (size_t)a->free_event < E)
            d[bucket[a->free_event]++] = (delta){g, -bytes};
    }
    /* bucket[e] now ends event e's run; event e's deltas are [bucket[e-1], bucket[e]). */
    for (size_t c = 0; c < W; c++)
        order[c] = c;
    sort_columns(order, W, chart->col_event);
    /* The sweep visits the columns in event order and notes only the bands whose height
     * changed, with the column's rank k; the heights are then written a band at a time,
     * each band's row in one go (written a column at a time, each of the 400 bands' cells
     * was a cache line of its own). */
    size_t n_ch = 0, n_dirty = 0;
    for (size_t g = 0; g < G; g++)
        if (cur[g] != 0) {
            dirty[n_dirty++] = (uint32_t)g;
            is_dirty[g] = true;
        }
    int64_t stacked = 0; /* the bands' heights' sum, as recorded */
    size_t next = 0, pos = 0; /* next event to apply, its first delta */
    for (size_t k = 0; k < W; k++) {
        size_t c = order[k];
        int64_t e = chart->col_event[c];
        if (e == MS_CHART_NO_EVENT) {
            chart->col_other[c] = 0; /* and every band 0: no change is noted before it */
            continue;
        }
        for (; (int64_t)next <= e && next < E; next++) {
            for (; pos < bucket[next]; pos++) {
                uint32_t g = (uint32_t)d[pos].group;
                cur[g] += d[pos].bytes;
                if (!is_dirty[g]) {
                    is_dirty[g] = true;
                    dirty[n_dirty++] = g;
                }
            }
        }
        for (size_t i = 0; i < n_dirty; i++) {
            uint32_t g = dirty[i];
            is_dirty[g] = false;
            int64_t h = cur[g] > 0 ? cur[g] : 0;
            if (h == shown[g])
                continue;
            stacked += h - shown[g];
            shown[g] = h;
            ch[n_ch++] = (change){g, (uint32_t)k, h};
        }
        n_dirty = 0;
        int64_t other = chart->col_active[c] - stacked;
        chart->col_other[c] = other > 0 ? other : 0;
    }
    /* The changes by band (a counting sort that keeps each band's in column order). */
    band_start = ms__alloc_n(G + 1, sizeof *band_start);
    by_band = ms__alloc_n(n_ch, sizeof *by_band);
    if (!band_start || !by_band) {
        rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
        goto done;
    }
    for (size_t i = 0; i < n_ch; i++)
        band_start[ch[i].group + 1]++;
    for (size_t g = 0; g < G; g++)
        band_start[g + 1] += band_start[g];
    for (size_t i = 0; i < n_ch; i++)
        by_band[band_start[ch[i].group]++] = ch[i];
    /* band_start[g] now ends band g's changes. */
    bool in_order = true;
    for (size_t k = 0; k < W && in_order; k++)
        in_order = order[k] == k;
    size_t at = 0;
    for (size_t g = 0; g < G; g++) {
        int64_t *row = chart->heights + g * W;
        int64_t h = 0;
        size_t k0 = 0;
        for (;; at++) {
            size_t k1 = at < band_start[g] ? by_band[at].k : W;
            if (in_order)
                for (size_t k = k0; k < k1; k++)
                    row[k] = h;
            else
                for (size_t k = k0; k < k1; k++)
                    row[order[k]] = h;
            if (k1 == W)
                break;
            h = by_band[at].h;
            k0 = k1;
        }
        at = band_start[g];
    }
done:
    free(d);
    free(ch);
    free(by_band);
    free(band_start);
    free(cur);
    free(shown);
    free(dirty);
    free(is_dirty);
    free(order);
    free(bucket);
    return rc;
}
