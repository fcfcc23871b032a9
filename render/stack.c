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

int ms__sweep_heights(ms_chart *chart, const ms_chart_source *src, const ms__grouping *gr,
                      ms_error *err)
{
    const ms_timeline *tl = src->tl;
    size_t G = gr->n_groups, W = chart->n_cols, E = tl->n_events;
    if (G > MS_CHART_MAX_GROUPS || (G && W > MS_CHART_MAX_CELLS / G))
        return ms__render_fail(err, MS_ERR_LIMIT,
                               "%zu bands x %zu columns is too many to draw", G, W);
    chart->heights = ms__alloc_n(G * W, sizeof *chart->heights);
    chart->col_other = ms__alloc_n(W, sizeof *chart->col_other);
    int64_t *cur = ms__alloc_n(G, sizeof *cur);
    size_t *order = ms__alloc_n(W, sizeof *order);
    uint32_t *bucket = ms__alloc_n(E + 1, sizeof *bucket); /* half the memory of size_t */
    if (!chart->heights || !chart->col_other || !cur || !order || !bucket) {
        free(cur);
        free(order);
        free(bucket);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
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
    delta *d = n_delta <= UINT32_MAX ? ms__alloc_n(n_delta, sizeof *d) : NULL;
    if (!d) {
        free(cur);
        free(order);
        free(bucket);
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
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
    size_t next = 0, pos = 0; /* next event to apply, its first delta */
    for (size_t k = 0; k < W; k++) {
        size_t c = order[k];
        int64_t e = chart->col_event[c];
        if (e == MS_CHART_NO_EVENT) {
            chart->col_other[c] = 0;
            continue;
        }
        for (; (int64_t)next <= e && next < E; next++) {
            for (; pos < bucket[next]; pos++)
                cur[d[pos].group] += d[pos].bytes;
        }
        int64_t stacked = 0;
        for (size_t g = 0; g < G; g++) {
            int64_t h = cur[g] > 0 ? cur[g] : 0;
            chart->heights[g * W + c] = h;
            stacked += h;
        }
        int64_t other = chart->col_active[c] - stacked;
        chart->col_other[c] = other > 0 ? other : 0;
    }
    free(d);
    free(cur);
    free(order);
    free(bucket);
    return 0;
}
