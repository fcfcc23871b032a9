/* Stacking of the chart model (see chart_impl.h): the height of every band in every
 * pixel column — the bytes its allocations hold right after the column's representative
 * event — and the "other" band on top. One pass over the bands' allocations puts each
 * alloc and free at the column it first shows in; each band's row is then its running
 * sum, written whole (or kept as its runs, for the view's pyramid). */
#include "chart_impl.h"
#include "render_util.h"

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

/* A change of one band's bytes from sorted column k on. */
typedef struct change {
    uint32_t group, k;
    int64_t bytes;
} change;

static int cmp_change_k(const void *a, const void *b)
{
    const change *x = a, *y = b;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* Ranks of events: the first sorted column (from k_first, the first with an event) whose
 * event is `e` or later, where an event's change shows from (W: in none). blk[b] is the
 * rank of event b << shift, so an event's rank lies between its block's and the next
 * block's; with about two blocks a column those are mostly a column or two apart. A table
 * of a few thousand entries stays in cache where one entry per event (16 MB on a 4M-event
 * trace, read at random by the frees) did not. */
typedef struct ranker {
    const int64_t *ev_s;
    size_t W;
    unsigned shift;
    uint32_t *blk;
} ranker;

static bool ranker_init(ranker *r, const int64_t *ev_s, size_t k_first, size_t W, size_t E)
{
    r->ev_s = ev_s;
    r->W = W;
    r->shift = 0;
    while ((E >> r->shift) > 2 * W + 1)
        r->shift++;
    size_t nb = E ? ((E - 1) >> r->shift) + 1 : 0;
    r->blk = malloc((nb + 1) * sizeof *r->blk);
    if (!r->blk)
        return false;
    size_t k = k_first;
    for (size_t b = 0; b <= nb; b++) {
        int64_t v = (int64_t)(b << r->shift);
        while (k < W && ev_s[k] < v)
            k++;
        r->blk[b] = (uint32_t)k;
    }
    return true;
}

static inline uint32_t rank_of(const ranker *r, size_t e)
{
    size_t b = e >> r->shift;
    size_t lo = r->blk[b], hi = r->blk[b + 1];
    const int64_t *ev_s = r->ev_s;
    while (hi - lo > 8) {
        size_t mid = lo + (hi - lo) / 2;
        if (ev_s[mid] < (int64_t)e)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo < hi && ev_s[lo] < (int64_t)e)
        lo++;
    return (uint32_t)lo;
}

/* Writes one band's row from its running total at each sorted column, and adds it to the
 * columns' stacked sum. */
static void fill_row(int64_t *row, int64_t *stacked, const size_t *order, bool in_order,
                     size_t k0, size_t k1, int64_t run)
{
    int64_t h = run > 0 ? run : 0;
    if (in_order) {
        for (size_t k = k0; k < k1; k++)
            row[k] = h;
    } else {
        for (size_t k = k0; k < k1; k++)
            row[order[k]] = h;
    }
    for (size_t k = k0; h && k < k1; k++)
        stacked[k] += h;
}

void ms__band_runs_free(ms__band_runs *r)
{
    free(r->run);
    free(r->end);
    memset(r, 0, sizeof *r);
}

static bool runs_room(ms__band_runs *r, size_t runs, size_t bands)
{
    return ms__render_grow((void **)&r->run, &r->cap, runs, sizeof *r->run, runs) &&
           ms__render_grow((void **)&r->end, &r->cap_end, bands, sizeof *r->end, bands);
}

/* A band's running total over columns [k0, k1) (in column order) as runs: a run goes
 * on where the one before ended with the same bytes, as the page's encoding would merge
 * them; the columns' stacked sum takes it as a difference (diff[k0] += h, diff[k1] -= h). */
static void put_run(ms__band_runs *r, size_t band_start, int64_t *diff, size_t k0, size_t k1,
                    int64_t run)
{
    int64_t h = run > 0 ? run : 0;
    if (!h || k1 <= k0)
        return;
    diff[k0] += h;
    diff[k1] -= h;
    ms__run *last = r->n > band_start ? &r->run[r->n - 1] : NULL;
    if (last && last->c0 + last->len == k0 && last->h == h) {
        last->len += (uint32_t)(k1 - k0);
        return;
    }
    r->run[r->n++] = (ms__run){(uint32_t)k0, (uint32_t)(k1 - k0), h};
}

/* A band's height at a column is the bytes its allocations hold right after the column's
 * event, so an allocation's bytes count from the first column (in event order) whose
 * event is at or after its alloc event, until the same for its free event. Each change
 * is put at that column's rank k, and a band's row is then its running sum over k: the
 * heights are written a band at a time, never a column at a time across 400 bands. With
 * few bands and many changes (by site, by category) the changes are summed in place in
 * the rows; with many bands and few changes (by allocation) they are sorted by band, and
 * the rows filled between them, or, when the view's pyramid asks (ms__band_runs), each
 * band's runs of equal bytes kept instead of its row. */
int ms__sweep_heights(ms_chart *chart, const ms_chart_source *src, const ms__grouping *gr,
                      ms__band_runs *runs, ms_error *err)
{
    const ms_timeline *tl = src->tl;
    size_t G = gr->n_groups, W = chart->n_cols, E = tl->n_events;
    if (G > MS_CHART_MAX_GROUPS || (G && W > MS_CHART_MAX_CELLS / G))
        return ms__render_fail(err, MS_ERR_LIMIT,
                               "%zu bands x %zu columns is too many to draw", G, W);
    if (W > UINT32_MAX - 1)
        return ms__render_fail(err, MS_ERR_LIMIT, "%zu columns is too many to draw", W);
    size_t n_in = 0; /* allocations in some band */
    for (size_t i = 0; i < tl->n_allocs; i++)
        n_in += gr->of_alloc[i] >= 0;
    size_t est = 2 * n_in; /* their changes, at most */
    bool dense = G * W <= 4 * est + 65536;
    chart->col_other = ms__alloc_n(W, sizeof *chart->col_other);
    int64_t *stacked = ms__alloc_n(W, sizeof *stacked);
    int64_t *init = ms__alloc_n(G, sizeof *init); /* bytes from before the trace */
    size_t *order = ms__alloc_n(W, sizeof *order);
    int64_t *ev_s = ms__alloc_n(W, sizeof *ev_s);
    ranker rk = {NULL, 0, 0, NULL};
    change *rec = NULL, *by_band = NULL;
    size_t *band_end = NULL;
    int rc = 0;
    if (!chart->col_other || !stacked || !init || !order || !ev_s) {
        rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
        goto done;
    }
    for (size_t c = 0; c < W; c++)
        order[c] = c;
    sort_columns(order, W, chart->col_event);
    bool in_order = true;
    size_t k_first = 0; /* columns that show nothing come first: every band 0 there */
    for (size_t k = 0; k < W; k++) {
        ev_s[k] = chart->col_event[order[k]];
        in_order = in_order && order[k] == k;
        k_first += ev_s[k] == MS_CHART_NO_EVENT;
    }
    /* Runs where the rows would be mostly zeros written and read again: many bands (by
     * allocation) that each change in a few columns, the columns in event order. */
    bool as_runs = runs && !dense && in_order;
    size_t rows = as_runs ? (runs->dense_rows < G ? runs->dense_rows : G) : G;
    chart->heights = dense ? ms__alloc_n(G * W, sizeof *chart->heights)
                           : malloc((rows && W ? rows * W : 1) * sizeof *chart->heights);
    if (!chart->heights) {
        rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
        goto done;
    }
    if (!ranker_init(&rk, ev_s, k_first, W, E)) {
        rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
        goto done;
    }
    size_t n_rec = 0;
    if (!dense) {
        rec = ms__alloc_n(est + G, sizeof *rec);
        if (!rec) {
            rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
            goto done;
        }
    }
    /* Few bands with columns in event order (by site, by category): each change goes
     * straight into its row, and the allocations' alloc events, mostly in order, find
     * their columns by walking on from the last one's. */
    size_t n_fast = dense && in_order ? tl->n_allocs : 0;
    int64_t e_prev = 0;
    size_t k_prev = rk.blk[0]; /* the rank of event 0 */
    for (size_t i = 0; i < n_fast; i++) {
        int32_t g = gr->of_alloc[i];
        if (g < 0)
            continue;
        const ms_alloc *a = &tl->allocs[i];
        int64_t bytes = a->size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a->size;
        int64_t *row = chart->heights + (size_t)g * W;
        int64_t ea = a->alloc_event, ef = a->free_event;
        if (ea < 0) {
            init[g] += bytes; /* alive before the trace */
        } else if ((size_t)ea < E) {
            size_t k;
            if (ea >= e_prev) {
                for (k = k_prev; k < W && ev_s[k] < ea; k++)
                    ;
            } else {
                k = rank_of(&rk, (size_t)ea);
            }
            e_prev = ea;
            k_prev = k;
            if (k < W)
                row[k] += bytes;
        }
        if (ef >= 0 && (size_t)ef < E) {
            uint32_t k = rank_of(&rk, (size_t)ef);
            if (k < W)
                row[k] -= bytes;
        }
    }
    for (size_t i = n_fast ? tl->n_allocs : 0; i < tl->n_allocs; i++) {
        int32_t g = gr->of_alloc[i];
        if (g < 0)
            continue;
        const ms_alloc *a = &tl->allocs[i];
        int64_t bytes = a->size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a->size;
        for (int side = 0; side < 2; side++) {
            int64_t e = side ? a->free_event : a->alloc_event;
            int64_t b = side ? -bytes : bytes;
            if (e < 0) {
                if (!side)
                    init[g] += b; /* alive before the trace */
                continue;
            }
            if ((size_t)e >= E)
                continue;
            uint32_t k = rank_of(&rk, (size_t)e);
            if (k >= W)
                continue; /* after every column's event */
            if (dense)
                chart->heights[(size_t)g * W + order[k]] += b;
            else
                rec[n_rec++] = (change){(uint32_t)g, k, b};
        }
    }
    if (dense) {
        /* Each row holds its band's changes at their columns: their running sum. */
        for (size_t g = 0; g < G; g++) {
            int64_t *row = chart->heights + g * W;
            int64_t run = 0;
            for (size_t k = 0; k < W; k++) {
                size_t c = in_order ? k : order[k];
                if (k == k_first)
                    run += init[g];
                run += row[c];
                int64_t h = run > 0 ? run : 0;
                row[c] = h;
                stacked[k] += h;
            }
        }
    } else {
        for (size_t g = 0; g < G && k_first < W; g++)
            if (init[g])
                rec[n_rec++] = (change){(uint32_t)g, (uint32_t)k_first, init[g]};
        /* By band (a counting sort), then each band's changes by column. */
        band_end = ms__alloc_n(G + 1, sizeof *band_end);
        by_band = ms__alloc_n(n_rec, sizeof *by_band);
        if (!band_end || !by_band) {
            rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
            goto done;
        }
        for (size_t i = 0; i < n_rec; i++)
            band_end[rec[i].group + 1]++;
        for (size_t g = 0; g < G; g++)
            band_end[g + 1] += band_end[g];
        for (size_t i = 0; i < n_rec; i++)
            by_band[band_end[rec[i].group]++] = rec[i];
        size_t at = 0;
        /* With runs: a band's runs are at most one per change and one more. */
        int64_t *diff = as_runs ? ms__alloc_n(W + 1, sizeof *diff) : NULL;
        if (as_runs && (!diff || !runs_room(runs, n_rec + G, G))) {
            free(diff);
            rc = ms__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
            goto done;
        }
        if (as_runs)
            runs->n = 0;
        for (size_t g = 0; g < G; g++) {
            change *cg = by_band + at;
            size_t n_g = band_end[g] - at;
            if (n_g > 1)
                qsort(cg, n_g, sizeof *cg, cmp_change_k);
            int64_t *row = g < rows ? chart->heights + g * W : NULL;
            size_t band_start = as_runs ? runs->n : 0;
            int64_t run = 0;
            size_t k0 = 0;
            for (size_t i = 0; i <= n_g;) {
                size_t k = i < n_g ? cg[i].k : W;
                if (as_runs) {
                    put_run(runs, band_start, diff, k0, k, run);
                    if (row)
                        for (size_t kk = k0; kk < k; kk++)
                            row[kk] = run > 0 ? run : 0;
                } else {
                    fill_row(row, stacked, order, in_order, k0, k, run);
                }
                if (i == n_g)
                    break;
                for (; i < n_g && cg[i].k == k; i++)
                    run += cg[i].bytes;
                k0 = k;
            }
            if (as_runs)
                runs->end[g] = runs->n;
            at = band_end[g];
        }
        if (as_runs) {
            int64_t sum = 0;
            for (size_t k = 0; k < W; k++) {
                sum += diff[k];
                stacked[k] = sum;
            }
            runs->on = true;
        }
        free(diff);
    }
    for (size_t k = 0; k < W; k++) {
        size_t c = order[k];
        int64_t other = chart->col_active[c] - stacked[k];
        chart->col_other[c] = k < k_first || other < 0 ? 0 : other;
    }
done:
    free(rec);
    free(by_band);
    free(band_end);
    free(stacked);
    free(init);
    free(order);
    free(ev_s);
    free(rk.blk);
    return rc;
}
