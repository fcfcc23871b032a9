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
    int c = MSR__CMP(ev[x], ev[y]);
    return c ? c : MSR__CMP(x, y);
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
    return MSR__CMP(((const change *)a)->k, ((const change *)b)->k);
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

void msr__band_runs_free(msr__band_runs *r)
{
    free(r->run);
    free(r->end);
    memset(r, 0, sizeof *r);
}

static bool runs_room(msr__band_runs *r, size_t runs, size_t bands)
{
    return msr__render_grow((void **)&r->run, &r->cap, runs, sizeof *r->run, runs) &&
           msr__render_grow((void **)&r->end, &r->cap_end, bands, sizeof *r->end, bands);
}

/* A band's running total over columns [k0, k1) (in column order) as runs: a run goes
 * on where the one before ended with the same bytes, as the page's encoding would merge
 * them; the columns' stacked sum takes it as a difference (diff[k0] += h, diff[k1] -= h). */
static void put_run(msr__band_runs *r, size_t band_start, int64_t *diff, size_t k0, size_t k1,
                    int64_t run)
{
    int64_t h = run > 0 ? run : 0;
    if (!h || k1 <= k0)
        return;
    diff[k0] += h;
    diff[k1] -= h;
    msr__run *last = r->n > band_start ? &r->run[r->n - 1] : NULL;
    if (last && last->c0 + last->len == k0 && last->h == h) {
        last->len += (uint32_t)(k1 - k0);
        return;
    }
    r->run[r->n++] = (msr__run){(uint32_t)k0, (uint32_t)(k1 - k0), h};
}

/* What the three ways of filling the heights share: the bands, the columns sorted by
 * event (order[k] is the k-th; k_first of them show nothing), the ranks of events, each
 * band's bytes from before the trace (init) and the columns' stacked sum. */
typedef struct sweep {
    msr_chart *chart;
    const ms_timeline *tl;
    const msr__grouping *gr;
    size_t G, W, E, k_first;
    const size_t *order;
    const int64_t *ev_s;
    bool in_order;
    ranker rk;
    int64_t *init, *stacked;
} sweep;

static inline int64_t alloc_bytes(const ms_alloc *a)
{
    return a->size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)a->size;
}

/* One side of an allocation of band g (0: its alloc, 1: its free) as a change: true with
 * the sorted column *k it shows from and its bytes *b; false when it shows in no column
 * (an allocation alive before the trace adds to init[g] instead). */
static inline bool change_at(sweep *s, const ms_alloc *a, int side, int32_t g, uint32_t *k,
                             int64_t *b)
{
    int64_t bytes = alloc_bytes(a), e = side ? a->free_event : a->alloc_event;
    if (e < 0) {
        if (!side)
            s->init[g] += bytes; /* alive before the trace */
        return false;
    }
    if ((size_t)e >= s->E)
        return false;
    *k = rank_of(&s->rk, (size_t)e);
    *b = side ? -bytes : bytes;
    return *k < s->W; /* else after every column's event */
}

/* A band's changes (sorted by column) walked as stretches of columns [k0, k1) that hold
 * `run` bytes, the last one ending at W. */
typedef struct band_walk {
    const change *cg;
    size_t n, i, k0, W;
    int64_t run;
    bool done;
} band_walk;

static inline bool walk_next(band_walk *w, size_t *k0, size_t *k1, int64_t *run)
{
    if (w->done)
        return false;
    size_t k = w->i < w->n ? w->cg[w->i].k : w->W;
    *k0 = w->k0;
    *k1 = k;
    *run = w->run;
    w->done = w->i == w->n;
    for (; w->i < w->n && w->cg[w->i].k == k; w->i++)
        w->run += w->cg[w->i].bytes;
    w->k0 = k;
    return true;
}

/* Few bands (by site, by category): each change goes straight into its band's row at its
 * column, then each row becomes its running sum. With the columns in event order the
 * allocations' alloc events, mostly in order, find their columns by walking on from the
 * last one's. */
static void sweep_dense(sweep *s)
{
    const ms_timeline *tl = s->tl;
    size_t W = s->W, E = s->E;
    int64_t *heights = s->chart->heights;
    const int64_t *ev_s = s->ev_s;
    size_t n_fast = s->in_order ? tl->n_allocs : 0;
    int64_t e_prev = 0;
    size_t k_prev = s->rk.blk[0]; /* the rank of event 0 */
    for (size_t i = 0; i < n_fast; i++) {
        int32_t g = s->gr->of_alloc[i];
        if (g < 0)
            continue;
        const ms_alloc *a = &tl->allocs[i];
        int64_t bytes = alloc_bytes(a);
        int64_t *row = heights + (size_t)g * W;
        int64_t ea = a->alloc_event, ef = a->free_event;
        if (ea < 0) {
            s->init[g] += bytes; /* alive before the trace */
        } else if ((size_t)ea < E) {
            size_t k;
            if (ea >= e_prev) {
                for (k = k_prev; k < W && ev_s[k] < ea; k++)
                    ;
            } else {
                k = rank_of(&s->rk, (size_t)ea);
            }
            e_prev = ea;
            k_prev = k;
            if (k < W)
                row[k] += bytes;
        }
        if (ef >= 0 && (size_t)ef < E) {
            uint32_t k = rank_of(&s->rk, (size_t)ef);
            if (k < W)
                row[k] -= bytes;
        }
    }
    for (size_t i = n_fast; i < tl->n_allocs; i++) {
        int32_t g = s->gr->of_alloc[i];
        uint32_t k;
        int64_t b;
        for (int side = 0; g >= 0 && side < 2; side++)
            if (change_at(s, &tl->allocs[i], side, g, &k, &b))
                heights[(size_t)g * W + s->order[k]] += b;
    }
    for (size_t g = 0; g < s->G; g++) {
        int64_t *row = heights + g * W;
        int64_t run = 0;
        for (size_t k = 0; k < W; k++) {
            size_t c = s->in_order ? k : s->order[k];
            if (k == s->k_first)
                run += s->init[g];
            run += row[c];
            int64_t h = run > 0 ? run : 0;
            row[c] = h;
            s->stacked[k] += h;
        }
    }
}

/* Many bands that each change in a few columns (by allocation): every change as a record
 * (est is at most their count), sorted by band (a counting sort) and each band's by
 * column: *by_band, with band g's records ending at (*band_end)[g]. */
static int collect_changes(sweep *s, size_t est, change **by_band_out, size_t **band_end_out,
                           ms_error *err)
{
    const ms_timeline *tl = s->tl;
    size_t G = s->G, n_rec = 0;
    change *rec = msr__alloc_n(est + G, sizeof *rec);
    if (!rec)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
    for (size_t i = 0; i < tl->n_allocs; i++) {
        int32_t g = s->gr->of_alloc[i];
        uint32_t k;
        int64_t b;
        for (int side = 0; g >= 0 && side < 2; side++)
            if (change_at(s, &tl->allocs[i], side, g, &k, &b))
                rec[n_rec++] = (change){(uint32_t)g, k, b};
    }
    for (size_t g = 0; g < G && s->k_first < s->W; g++)
        if (s->init[g])
            rec[n_rec++] = (change){(uint32_t)g, (uint32_t)s->k_first, s->init[g]};
    size_t *band_end = msr__alloc_n(G + 1, sizeof *band_end);
    change *by_band = msr__alloc_n(n_rec, sizeof *by_band);
    if (!band_end || !by_band) {
        free(rec);
        free(band_end);
        free(by_band);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
    }
    for (size_t i = 0; i < n_rec; i++)
        band_end[rec[i].group + 1]++;
    for (size_t g = 0; g < G; g++)
        band_end[g + 1] += band_end[g];
    for (size_t i = 0; i < n_rec; i++)
        by_band[band_end[rec[i].group]++] = rec[i];
    free(rec);
    for (size_t g = 0, at = 0; g < G; at = band_end[g], g++)
        if (band_end[g] - at > 1)
            qsort(by_band + at, band_end[g] - at, sizeof *by_band, cmp_change_k);
    *by_band_out = by_band;
    *band_end_out = band_end;
    return 0;
}

/* Many bands, whole rows: each row filled between its band's changes. */
static void sweep_rows(sweep *s, const change *by_band, const size_t *band_end)
{
    size_t W = s->W;
    for (size_t g = 0, at = 0; g < s->G; at = band_end[g], g++) {
        band_walk w = {by_band + at, band_end[g] - at, 0, 0, W, 0, false};
        int64_t *row = s->chart->heights + g * W, run;
        size_t k0, k1;
        while (walk_next(&w, &k0, &k1, &run))
            fill_row(row, s->stacked, s->order, s->in_order, k0, k1, run);
    }
}

/* Many bands for the view's pyramid (columns in event order): each band's runs of equal
 * bytes instead of its row (the first `rows` bands, which the markers and labels read,
 * keep their rows too); the columns' stacked sum from the runs' differences. */
static int sweep_runs(sweep *s, const change *by_band, const size_t *band_end, size_t rows,
                      msr__band_runs *runs, ms_error *err)
{
    size_t W = s->W, n_rec = band_end[s->G ? s->G - 1 : 0];
    /* A band's runs are at most one per change and one more. */
    int64_t *diff = msr__alloc_n(W + 1, sizeof *diff);
    if (!diff || !runs_room(runs, n_rec + s->G, s->G)) {
        free(diff);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
    }
    runs->n = 0;
    for (size_t g = 0, at = 0; g < s->G; at = band_end[g], g++) {
        band_walk w = {by_band + at, band_end[g] - at, 0, 0, W, 0, false};
        int64_t *row = g < rows ? s->chart->heights + g * W : NULL, run;
        size_t band_start = runs->n, k0, k1;
        while (walk_next(&w, &k0, &k1, &run)) {
            put_run(runs, band_start, diff, k0, k1, run);
            for (size_t k = k0; row && k < k1; k++)
                row[k] = run > 0 ? run : 0;
        }
        runs->end[g] = runs->n;
    }
    int64_t sum = 0;
    for (size_t k = 0; k < W; k++) {
        sum += diff[k];
        s->stacked[k] = sum;
    }
    runs->on = true;
    free(diff);
    return 0;
}

/* A band's height at a column is the bytes its allocations hold right after the column's
 * event, so an allocation's bytes count from the first column (in event order) whose
 * event is at or after its alloc event, until the same for its free event. Each change
 * is put at that column's rank k, and a band's row is then its running sum over k: the
 * heights are written a band at a time, never a column at a time across 400 bands. With
 * few bands and many changes (by site, by category) the changes are summed in place in
 * the rows (sweep_dense); with many bands and few changes (by allocation) they are sorted
 * by band, and the rows filled between them (sweep_rows), or, when the view's pyramid
 * asks (msr__band_runs), each band's runs of equal bytes kept instead (sweep_runs). */
int msr__sweep_heights(msr_chart *chart, const msr_chart_source *src, const msr__grouping *gr,
                      msr__band_runs *runs, ms_error *err)
{
    const ms_timeline *tl = src->tl;
    size_t G = gr->n_groups, W = chart->n_cols, E = tl->n_events;
    if (G > MSR_CHART_MAX_GROUPS || (G && W > MSR_CHART_MAX_CELLS / G))
        return msr__render_fail(err, MS_ERR_LIMIT,
                               "%zu bands x %zu columns is too many to draw", G, W);
    if (W > UINT32_MAX - 1)
        return msr__render_fail(err, MS_ERR_LIMIT, "%zu columns is too many to draw", W);
    size_t n_in = 0; /* allocations in some band */
    for (size_t i = 0; i < tl->n_allocs; i++)
        n_in += gr->of_alloc[i] >= 0;
    size_t est = 2 * n_in; /* their changes, at most */
    bool dense = G * W <= 4 * est + 65536;
    chart->col_other = msr__alloc_n(W, sizeof *chart->col_other);
    int64_t *stacked = msr__alloc_n(W, sizeof *stacked);
    int64_t *init = msr__alloc_n(G, sizeof *init); /* bytes from before the trace */
    size_t *order = msr__alloc_n(W, sizeof *order);
    int64_t *ev_s = msr__alloc_n(W, sizeof *ev_s);
    sweep s = {chart, tl, gr, G, W, E, 0, order, ev_s, true, {NULL, 0, 0, NULL}, init, stacked};
    change *by_band = NULL;
    size_t *band_end = NULL;
    int rc = 0;
    if (!chart->col_other || !stacked || !init || !order || !ev_s) {
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
        goto done;
    }
    for (size_t c = 0; c < W; c++)
        order[c] = c;
    sort_columns(order, W, chart->col_event);
    for (size_t k = 0; k < W; k++) { /* columns that show nothing come first: bands 0 there */
        ev_s[k] = chart->col_event[order[k]];
        s.in_order = s.in_order && order[k] == k;
        s.k_first += ev_s[k] == MSR_CHART_NO_EVENT;
    }
    /* Runs where the rows would be mostly zeros written and read again: many bands (by
     * allocation) that each change in a few columns, the columns in event order. */
    bool as_runs = runs && !dense && s.in_order;
    size_t rows = as_runs ? (runs->dense_rows < G ? runs->dense_rows : G) : G;
    chart->heights = dense ? msr__alloc_n(G * W, sizeof *chart->heights)
                           : malloc((rows && W ? rows * W : 1) * sizeof *chart->heights);
    if (!chart->heights || !ranker_init(&s.rk, ev_s, s.k_first, W, E)) {
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory for chart bands");
        goto done;
    }
    if (dense) {
        sweep_dense(&s);
    } else {
        rc = collect_changes(&s, est, &by_band, &band_end, err);
        if (!rc && as_runs)
            rc = sweep_runs(&s, by_band, band_end, rows, runs, err);
        else if (!rc)
            sweep_rows(&s, by_band, band_end);
        if (rc)
            goto done;
    }
    for (size_t k = 0; k < W; k++) {
        size_t c = order[k];
        int64_t other = chart->col_active[c] - stacked[k];
        chart->col_other[c] = k < s.k_first || other < 0 ? 0 : other;
    }
done:
    free(by_band);
    free(band_end);
    free(stacked);
    free(init);
    free(order);
    free(ev_s);
    free(s.rk.blk);
    return rc;
}
