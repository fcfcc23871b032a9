/* Grouping of the chart model (see chart_impl.h): which allocations get a band of their
 * own or share one (by allocation, by site, by phase, by category), in what stacking
 * order, in which colour and under which legend entry. Everything else falls into the
 * "other" band. Bands are ranked by bytes x lifetime inside the window, except the
 * categories, whose order is fixed. */
#include "chart_impl.h"

#include <string.h>

/* ------------------------------------------------------------------ ranking */

typedef struct scored {
    double score;
    size_t index;
} scored;

/* Min-heap on score so the N largest survive one pass over millions of allocations. */
static void heap_down(scored *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l].score < h[m].score)
            m = l;
        if (r < n && h[r].score < h[m].score)
            m = r;
        if (m == i)
            return;
        scored t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static double lifetime_score(const msr_chart_source *src, msr_chart_x mode, const ms_alloc *a,
                             double lo, double hi)
{
    double from = a->alloc_event < 0 ? lo : msr__event_x(src, mode, a->alloc_event);
    double to = a->free_event < 0 ? hi : msr__event_x(src, mode, a->free_event);
    if (mode == MSR_CHART_X_EVENTS && a->free_event < 0)
        to = (double)src->trace->n;
    double span = (to < hi ? to : hi) - (from > lo ? from : lo);
    return span > 0 ? span * (double)a->size : 0;
}

/* lifetime_score of the source's allocation i, with the x of its events taken from the
 * pyramid's table (msr__chart_aux.life_x) on the time axis. A slice's events keep the
 * whole trace's times, and where a slice moves an event it lies outside the window on
 * the same side (before it: made at the stand-in, x 0; after it: not freed, x hi), so
 * the clamps to [lo, hi] give the same span to the bit. */
static double life_score(const msr__grouping *gr, const msr_chart_source *src, msr_chart_x mode,
                         size_t i, const ms_alloc *a, double lo, double hi)
{
    if (!gr->life_x || mode != MSR_CHART_X_TIME)
        return lifetime_score(src, mode, a, lo, hi);
    const double *x = gr->life_x + 2 * (gr->life_global ? gr->life_global[i] : i);
    double from = a->alloc_event < 0 ? lo : x[0];
    double to = a->free_event < 0 ? hi : x[1];
    double span = (to < hi ? to : hi) - (from > lo ? from : lo);
    return span > 0 ? span * (double)a->size : 0;
}

/* ------------------------------------------------------------------ sites */

/* The table is made at the first lookup: a chart by category or by the user's rules asks
 * for no site, and the view builds thousands of such charts of one file, each of which
 * would otherwise fill a slot per stack of the file. */
int msr__site_cache_init(msr__site_cache *sc, const ms_snapshot *snap)
{
    *sc = (msr__site_cache){snap, NULL, snap ? ms_snapshot_stack_count(snap) : 0};
    return 0;
}

void msr__site_cache_free(msr__site_cache *sc)
{
    free(sc->of_stack);
    sc->of_stack = NULL;
}

static uint32_t site_of(msr__site_cache *sc, uint32_t stack)
{
    if (!sc->snap || stack == MS_NO_STACK)
        return UINT32_MAX;
    if (stack < sc->n_stacks && !sc->of_stack) {
        /* Out of memory: every lookup goes to the snapshot, the same answer. */
        sc->of_stack = malloc(sc->n_stacks * sizeof *sc->of_stack);
        for (size_t i = 0; sc->of_stack && i < sc->n_stacks; i++)
            sc->of_stack[i] = UINT32_MAX - 1;
    }
    if (stack < sc->n_stacks && sc->of_stack) {
        if (sc->of_stack[stack] == UINT32_MAX - 1)
            sc->of_stack[stack] = ms_stack_site(sc->snap, stack);
        return sc->of_stack[stack];
    }
    return ms_stack_site(sc->snap, stack);
}

void msr__site_label(const ms_snapshot *snap, uint32_t site, char *buf, size_t cap)
{
    if (!snap || site == UINT32_MAX || ms_site_format(snap, site, buf, cap) == 0)
        snprintf(buf, cap, "(no stack recorded)");
}

msr_chart_rgb msr__site_rgb(const ms_snapshot *snap, uint32_t site)
{
    char where[MSR_CHART_TEXT];
    msr__site_label(snap, site, where, sizeof where);
    return msr__text_rgb(where);
}

typedef struct site_score {
    uint32_t site;
    double score;
} site_score;

/* The legend's names of ss[0..n)'s sites, one per MSR_CHART_TEXT bytes of out: each
 * site's short text, and for sites whose texts are the same (one file name in two
 * directories) more of their paths, until they differ, so no two entries read alike. */
static void site_labels(const ms_snapshot *snap, const site_score *ss, size_t n,
                        char (*out)[MSR_CHART_TEXT])
{
    for (size_t k = 0; k < n; k++)
        msr__site_label(snap, ss[k].site, out[k], MSR_CHART_TEXT);
    /* Each round gives every site that still reads like another one path part more; a
     * text that stays the same with its whole path (generated code's short hash) stays. */
    for (unsigned parts = 3; parts < 3 + 16; parts++) {
        bool any = false;
        bool *same = n ? calloc(n, sizeof *same) : NULL;
        if (!same)
            return;
        for (size_t k = 0; k < n; k++)
            for (size_t j = k + 1; j < n; j++)
                if (!strcmp(out[k], out[j]))
                    same[k] = same[j] = any = true;
        for (size_t k = 0; k < n; k++)
            if (same[k])
                ms_site_format_parts(snap, ss[k].site, parts, out[k], MSR_CHART_TEXT);
        free(same);
        if (!any)
            return;
    }
}

static int site_score_by_site(const void *a, const void *b)
{
    return MSR__CMP(((const site_score *)a)->site, ((const site_score *)b)->site);
}

/* The highest score first; ties by site. */
static int site_score_desc(const void *a, const void *b)
{
    const site_score *x = a, *y = b;
    int c = MSR__CMP(y->score, x->score);
    return c ? c : MSR__CMP(x->site, y->site);
}

/* A band of `kind` that stands for no one allocation, site or key until its maker says. */
static msr_chart_group new_band(msr_chart_group_kind kind)
{
    msr_chart_group g;
    memset(&g, 0, sizeof g);
    g.kind = kind;
    g.key_index = -1;
    g.alloc = -1;
    g.site = UINT32_MAX;
    return g;
}

static int add_group(msr_chart *chart, size_t cap, msr_chart_group g, ms_error *err)
{
    if (chart->n_groups >= cap)
        return msr__render_fail(err, MS_ERR_LIMIT, "too many chart bands");
    chart->groups[chart->n_groups++] = g;
    return 0;
}

/* ------------------------------------------------------------------ leak findings */

/* One band per leak finding (or suspect), inserted at stacking position `at`: a highlight
 * with a label starts a finding, those after it without one belong to it. A finding of
 * 486 allocations is then one outlined region with one label, not 486 red outlines, and
 * it stacks where it reads as a floor that grows (at the bottom, or right above the
 * categories that live through the run). chart->groups has room for n_highlights more. */
static int leak_bands(msr_chart *chart, const msr_chart_source *src, const msr_chart_spec *spec,
                      msr__site_cache *sc, size_t at, msr__grouping *gr, ms_error *err)
{
    (void)err;
    if (!spec->n_highlights)
        return 0;
    size_t n_f = 0;
    for (size_t h = 0; h < spec->n_highlights; h++)
        n_f += h == 0 || spec->highlights[h].label != NULL;
    if (at > chart->n_groups)
        at = chart->n_groups;
    memmove(&chart->groups[at + n_f], &chart->groups[at],
            (chart->n_groups - at) * sizeof *chart->groups);
    for (size_t i = 0; i < src->tl->n_allocs; i++)
        if (gr->of_alloc[i] >= (int32_t)at)
            gr->of_alloc[i] += (int32_t)n_f;
    size_t f = 0;
    for (size_t h = 0; h < spec->n_highlights; h++) {
        const msr_chart_highlight *hl = &spec->highlights[h];
        if (h > 0 && hl->label)
            f++;
        msr_chart_group *g = &chart->groups[at + f];
        if (h == 0 || hl->label) {
            *g = new_band(MSR_CHART_GROUP_LEAK);
            g->site = site_of(sc, src->tl->allocs[hl->alloc].stack);
            g->legend = -1;
            g->suspect = hl->suspect || hl->alive_end;
            g->alive_end = hl->alive_end;
            g->leak = !g->suspect;
            /* Pale, so what the outline holds stays readable under the label. */
            g->fill = g->suspect ? msr__mix(chart->theme.other, chart->theme.bg, 0.35)
                                 : msr__mix(chart->theme.highlight, chart->theme.bg, 0.72);
            g->key_rgb = g->fill;
            /* What one forward left alive says so itself ("alive at the end: ..."). */
            const char *what = hl->alive_end ? NULL : hl->suspect ? "suspect" : "leak finding";
            if (hl->label && what)
                snprintf(g->label, sizeof g->label, "%s: %s", what, hl->label);
            else
                msr__copy_text(g->label, sizeof g->label,
                              hl->label ? hl->label : what ? what : "alive at the end");
        }
        gr->of_alloc[hl->alloc] = (int32_t)(at + f);
    }
    chart->n_groups += n_f;
    gr->n_groups = chart->n_groups;
    return 0;
}

/* Texts by a 64-bit key (a site, a size), each made once per chart: open addressing,
 * at most `n` keys, 128 bytes a text. */
typedef struct text_memo {
    uint64_t *key;
    uint32_t *at; /* slot -> text index + 1, 0 empty */
    char (*text)[128];
    size_t n, slots;
} text_memo;

static int text_memo_init(text_memo *m, size_t n)
{
    size_t slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    m->key = msr__alloc_n(slots, sizeof *m->key);
    m->at = msr__alloc_n(slots, sizeof *m->at);
    m->text = msr__alloc_n(n, sizeof *m->text);
    m->n = 0;
    m->slots = slots;
    return m->key && m->at && m->text ? 0 : MS_ERR_NOMEM;
}

static void text_memo_free(text_memo *m)
{
    free(m->key);
    free(m->at);
    free(m->text);
}

/* The text of `key`; *fresh when it was not there yet (the caller writes it). */
static char *text_memo_get(text_memo *m, uint64_t key, bool *fresh)
{
    size_t mask = m->slots - 1;
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
    for (; m->at[i]; i = (i + 1) & mask)
        if (m->key[i] == key) {
            *fresh = false;
            return m->text[m->at[i] - 1];
        }
    m->key[i] = key;
    m->at[i] = (uint32_t)++m->n;
    *fresh = true;
    return m->text[m->n - 1];
}

/* ------------------------------------------------------------------ by allocation */

/* The `top` allocations with the most bytes x lifetime in the window plus the
 * highlighted ones, in stacking order: *out (allocs[] indices, caller frees), *n_out. */
static int choose_allocs(const msr_chart *chart, const msr_chart_source *src,
                         const msr_chart_spec *spec, const msr__grouping *gr, const bool *leaked,
                         size_t **out, size_t *n_out, ms_error *err)
{
    const ms_timeline *tl = src->tl;
    size_t top = spec->top ? spec->top : MSR_CHART_DEFAULT_TOP_ALLOCS;
    if (top > MSR_CHART_MAX_GROUPS)
        top = MSR_CHART_MAX_GROUPS;
    scored *heap = msr__alloc_n(top, sizeof *heap);
    size_t *chosen = msr__alloc_n(top + spec->n_highlights, sizeof *chosen);
    if (!heap || !chosen) {
        free(heap);
        free(chosen);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory choosing bands");
    }
    size_t n_heap = 0;
    double window = chart->x_hi - chart->x_lo;
    for (size_t i = 0; i < tl->n_allocs; i++) {
        /* No lifetime exceeds the window: most small allocations are out before their
         * event times are even looked up. */
        if ((n_heap == top && (double)tl->allocs[i].size * window <= heap[0].score) ||
            (leaked && leaked[i]))
            continue;
        double s = life_score(gr, src, chart->x_mode, i, &tl->allocs[i], chart->x_lo,
                              chart->x_hi);
        if (!(s > 0))
            continue;
        if (n_heap < top) {
            heap[n_heap++] = (scored){s, i};
            if (n_heap == top)
                for (size_t k = top / 2 + 1; k-- > 0;)
                    heap_down(heap, n_heap, k);
        } else if (s > heap[0].score) {
            heap[0] = (scored){s, i};
            heap_down(heap, n_heap, 0);
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < n_heap; i++)
        chosen[n++] = heap[i].index;
    free(heap);
    msr__keyed *keys = msr__alloc_n(n, sizeof *keys);
    if (!keys) {
        free(chosen);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory choosing bands");
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (msr__keyed){tl->allocs[chosen[i]].alloc_event, chosen[i]};
    /* Stack order is allocation order; allocations alive before the trace (alloc_event
     * -1) came first, wherever allocs[] keeps them. */
    qsort(keys, n, sizeof *keys, msr__keyed_up);
    for (size_t i = 0; i < n; i++)
        chosen[i] = keys[i].index;
    free(keys);
    *out = chosen;
    *n_out = n;
    return 0;
}

/* Colour by site: every site gets the colour of its text (msr__text_rgb), the same in any
 * panel, file or window; each allocation a shade of it. The sites holding the most band
 * area are named in the legend; the rest keep their own colours under one line. */
static int colour_by_site(msr_chart *chart, const msr_chart_source *src,
                          const msr_chart_spec *spec, ms_error *err)
{
    size_t n = chart->n_groups;
    site_score *ss = msr__alloc_n(n, sizeof *ss);
    if (!ss)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory ranking sites");
    for (size_t i = 0; i < n; i++)
        ss[i] = (site_score){chart->groups[i].site, chart->groups[i].score};
    qsort(ss, n, sizeof *ss, site_score_by_site);
    size_t n_sites = 0;
    for (size_t i = 0; i < n; i++) {
        if (n_sites && ss[n_sites - 1].site == ss[i].site)
            ss[n_sites - 1].score += ss[i].score;
        else
            ss[n_sites++] = ss[i];
    }
    qsort(ss, n_sites, sizeof *ss, site_score_desc);
    size_t cap = msr__legend_capacity(chart);
    size_t fixed = 5; /* header gap, other sites, other allocations, reserved, peak */
    size_t n_named = cap > fixed ? cap - fixed : 0;
    if (n_named > MSR__PALETTE_N)
        n_named = MSR__PALETTE_N;
    if (n_named > n_sites)
        n_named = n_sites;
    if (spec->no_legend)
        n_named = 0;
    /* One colour per site, looked up once: sites are few next to allocations. */
    msr_chart_rgb *base = msr__alloc_n(n_sites, sizeof *base);
    char (*where)[MSR_CHART_TEXT] = msr__alloc_n(n_sites, sizeof *where);
    const char **names = msr__alloc_n(n_sites, sizeof *names);
    int64_t *tallest = msr__alloc_n(n_sites, sizeof *tallest);
    bool *shown = msr__alloc_n(n_sites, sizeof *shown);
    if (!base || !where || !names || !tallest || !shown)
        goto nomem;
    /* The named sites' texts tell apart sites that read alike (site_labels). */
    site_labels(src->snap, ss, n_named, where);
    for (size_t k = 0; k < n_sites; k++) {
        if (k >= n_named)
            msr__site_label(src->snap, ss[k].site, where[k], sizeof where[k]);
        names[k] = where[k];
    }
    /* Rank of each site, found by site id (score holds the rank). */
    for (size_t k = 0; k < n_sites; k++)
        ss[k].score = (double)k;
    qsort(ss, n_sites, sizeof *ss, site_score_by_site);
    /* A site whose bands are all under 1.5 px tall is a sliver nobody tells apart: it
     * keeps its own colour and leaves the distinct ones to the sites one can see, and to
     * those the legend names. */
    for (size_t i = 0; i < n; i++) {
        site_score want = {chart->groups[i].site, 0};
        const site_score *hit = bsearch(&want, ss, n_sites, sizeof *ss, site_score_by_site);
        int64_t size = (int64_t)src->tl->allocs[chart->groups[i].alloc].size;
        if (hit && size > tallest[(size_t)hit->score])
            tallest[(size_t)hit->score] = size;
    }
    for (size_t k = 0; k < n_sites; k++)
        shown[k] = k < n_named ||
                   (chart->y_max > 0 && (double)tallest[k] / chart->y_max * chart->plot.h >= 1.5);
    if (msr__distinct_colours(base, names, shown, n_sites, &chart->theme))
        goto nomem;
    for (size_t k = 0; k < n_named; k++)
        msr__legend_add(chart, MSR_CHART_KEY_SWATCH, base[k], where[k]);
    chart->key_names = where;
    chart->key_shown = shown;
    chart->n_key_names = n_sites;
    free(names);
    free(tallest);
    bool unnamed = false;
    for (size_t i = 0; i < n; i++) {
        msr_chart_group *g = &chart->groups[i];
        /* The shade follows the allocation itself, not its index, so a chart of a window
         * built from a slice of the trace colours it as the whole trace's chart does. */
        const ms_alloc *a = &src->tl->allocs[g->alloc];
        uint64_t key = a->addr ^ (a->size * 0x9e3779b97f4a7c15ULL) ^ a->stream;
        site_score want = {g->site, 0};
        const site_score *hit = bsearch(&want, ss, n_sites, sizeof *ss, site_score_by_site);
        size_t k = hit ? (size_t)hit->score : n_sites;
        g->fill = msr__shade(k < n_sites ? base[k] : chart->theme.other, key);
        g->key_rgb = k < n_sites ? base[k] : chart->theme.other;
        g->key_index = k < n_sites ? (int)k : -1;
        g->shade_key = key;
        g->legend = k < n_named ? (int)k : -1;
        unnamed |= k >= n_named;
    }
    free(base);
    free(ss);
    if (unnamed && n_sites > n_named)
        msr__legend_add(chart, MSR_CHART_KEY_SWATCH, chart->theme.muted,
                       "more sites, each in its own colour");
    return 0;
nomem:
    free(ss);
    free(base);
    free(where);
    free(names);
    free(tallest);
    free(shown);
    return msr__render_fail(err, MS_ERR_NOMEM, "out of memory colouring sites");
}

/* The viewer's stacking: one band per chosen allocation, in allocation order, so a band
 * sits on the bands allocated before it and slides down when they are freed. */
static int groups_by_alloc(msr_chart *chart, const msr_chart_source *src,
                           const msr_chart_spec *spec, msr__site_cache *sc, msr__grouping *gr,
                           ms_error *err)
{
    const ms_timeline *tl = src->tl;
    size_t *chosen = NULL, n = 0;
    bool *leaked = NULL;
    if (spec->n_highlights) {
        leaked = msr__alloc_n(tl->n_allocs, sizeof *leaked);
        if (!leaked)
            return msr__render_fail(err, MS_ERR_NOMEM, "out of memory choosing bands");
        for (size_t h = 0; h < spec->n_highlights; h++)
            leaked[spec->highlights[h].alloc] = true;
    }
    int rc = choose_allocs(chart, src, spec, gr, leaked, &chosen, &n, err);
    free(leaked);
    if (rc)
        return rc;
    chart->groups = msr__alloc_n(n + spec->n_highlights, sizeof *chart->groups);
    if (!chart->groups) {
        free(chosen);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for %zu bands", n);
    }
    /* Band labels name a size and a site: 400 bands share a few dozen sites and sizes,
     * each formatted once (printf was a fifth of choosing the bands). */
    text_memo sites = {0}, sizes = {0};
    if (text_memo_init(&sites, n) || text_memo_init(&sizes, n)) {
        text_memo_free(&sites);
        text_memo_free(&sizes);
        free(chosen);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory labelling bands");
    }
    for (size_t i = 0; i < n; i++) {
        const ms_alloc *a = &tl->allocs[chosen[i]];
        msr_chart_group g;
        memset(&g, 0, sizeof g);
        g.kind = MSR_CHART_GROUP_ALLOC;
        g.alloc = (int64_t)chosen[i];
        g.site = site_of(sc, a->stack);
        g.legend = -1;
        g.score = life_score(gr, src, chart->x_mode, chosen[i], a, chart->x_lo, chart->x_hi);
        bool fresh;
        char *size = text_memo_get(&sizes, a->size, &fresh);
        if (fresh)
            msr_chart_format_bytes((double)a->size, size, 32);
        char *where = text_memo_get(&sites, g.site, &fresh);
        if (fresh)
            msr__site_label(src->snap, g.site, where, 128);
        /* "%s %s": at most 31 + 1 + 127 bytes, never cut in a label of 160. */
        size_t n_size = strlen(size), n_where = strlen(where);
        memcpy(g.label, size, n_size);
        g.label[n_size] = ' ';
        memcpy(g.label + n_size + 1, where, n_where + 1);
        chart->groups[chart->n_groups++] = g;
        gr->of_alloc[chosen[i]] = (int32_t)i;
    }
    text_memo_free(&sites);
    text_memo_free(&sizes);
    free(chosen);
    gr->n_groups = n;
    rc = colour_by_site(chart, src, spec, err);
    if (!rc)
        rc = leak_bands(chart, src, spec, sc, 0, gr, err);
    return rc;
}

/* ------------------------------------------------------------------ by site or phase */

/* Per allocation its key (*out, caller frees): the site's frame id, or for phases the
 * name (string id) of the top-level annotation range it was allocated in; UINT32_MAX is
 * "none". */
static int keys_of_allocs(const msr_chart_source *src, bool by_phase, bool by_compile,
                          msr__site_cache *sc, const msr__range *r, size_t n_r, const ms_phases *ph,
                          uint32_t **out,
                          ms_error *err)
{
    const ms_timeline *tl = src->tl;
    uint32_t *key = msr__alloc_n(tl->n_allocs, sizeof *key);
    size_t *top_ranges = NULL, n_top = 0;
    if (!key)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory grouping allocations");
    if (by_phase) {
        top_ranges = msr__alloc_n(n_r, sizeof *top_ranges);
        if (!top_ranges) {
            free(key);
            return msr__render_fail(err, MS_ERR_NOMEM, "out of memory grouping allocations");
        }
        for (size_t i = 0; i < n_r; i++)
            if (r[i].depth == 0)
                top_ranges[n_top++] = i;
    }
    for (size_t i = 0; i < tl->n_allocs; i++) {
        const ms_alloc *a = &tl->allocs[i];
        key[i] = UINT32_MAX;
        if (by_compile) {
            /* MS_NO_STRING (no compile context, or made before the trace) is the eager
             * band: rank_keys's keyless slot. */
            if (a->alloc_event >= 0 && (size_t)a->alloc_event < src->trace->n)
                key[i] = src->trace->compile_context[a->alloc_event];
            continue;
        }
        if (!by_phase) {
            key[i] = site_of(sc, a->stack);
            continue;
        }
        if (a->alloc_event < 0)
            continue;
        if (ph) {
            /* Inferred phases: the key is the kind of the phase it was made in. */
            size_t k = ms_phases_at_event(ph, a->alloc_event);
            ms_phase_kind kind = k < ph->n ? ph->items[k].kind : MS_PHASE_GAP;
            if (kind == MS_PHASE_FORWARD || kind == MS_PHASE_BACKWARD || kind == MS_PHASE_OPTIMIZER ||
                kind == MS_PHASE_COMPILE)
                key[i] = (uint32_t)kind;
            continue;
        }
        int64_t t = src->trace->time_us[a->alloc_event];
        size_t lo = 0, hi = n_top; /* last top-level range starting at or before t */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (r[top_ranges[mid]].start_us <= t)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && t <= r[top_ranges[lo - 1]].end_us)
            key[i] = r[top_ranges[lo - 1]].name;
    }
    free(top_ranges);
    *out = key;
    return 0;
}

/* The `top` keys with the most bytes x lifetime, largest first (*out, caller frees;
 * .site holds the key), and each allocation's group (gr->of_alloc). */
static int rank_keys(const msr_chart *chart, const msr_chart_source *src, bool by_phase,
                     bool inferred, bool by_string, const uint32_t *key, size_t top,
                     site_score **out,
                     size_t *n_out, msr__grouping *gr, ms_error *err)
{
    const ms_timeline *tl = src->tl;
    /* Totals per key in a dense table: ids are small (frames or strings of this file), and
     * a million allocations must not cost a million-element sort. The last slot holds
     * allocations without a key. */
    size_t n_ids = inferred   ? (size_t)MS_PHASE_KIND_COUNT
                   : !src->snap ? 0
                   : by_string ? ms_snapshot_string_count(src->snap)
                              : ms_snapshot_frame_count(src->snap);
    double *total = msr__alloc_n(n_ids + 1, sizeof *total);
    int32_t *group_of_slot = msr__alloc_n(n_ids + 1, sizeof *group_of_slot);
    site_score *ss = msr__alloc_n(n_ids + 1, sizeof *ss);
    if (!total || !group_of_slot || !ss) {
        free(total);
        free(group_of_slot);
        free(ss);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory ranking groups");
    }
#define SLOT(k) ((k) < n_ids ? (size_t)(k) : n_ids)
    for (size_t i = 0; i < tl->n_allocs; i++) {
        if (by_phase && key[i] == UINT32_MAX)
            continue;
        double sc_i = life_score(gr, src, chart->x_mode, i, &tl->allocs[i], chart->x_lo,
                                 chart->x_hi);
        if (sc_i > 0)
            total[SLOT(key[i])] += sc_i;
    }
    size_t n_keys = 0;
    for (size_t k = 0; k <= n_ids; k++) {
        group_of_slot[k] = -1;
        if (total[k] > 0)
            ss[n_keys++] = (site_score){k == n_ids ? UINT32_MAX : (uint32_t)k, total[k]};
    }
    free(total);
    qsort(ss, n_keys, sizeof *ss, site_score_desc);
    if (n_keys > top)
        n_keys = top;
    for (size_t k = 0; k < n_keys; k++)
        group_of_slot[SLOT(ss[k].site)] = (int32_t)k;
    for (size_t i = 0; i < tl->n_allocs; i++)
        gr->of_alloc[i] = by_phase && key[i] == UINT32_MAX ? -1 : group_of_slot[SLOT(key[i])];
#undef SLOT
    free(group_of_slot);
    *out = ss;
    *n_out = n_keys;
    return 0;
}

/* --by site, --by phase and --by compile: allocations grouped by a key, the K keys with
 * the most bytes x lifetime get bands in rank order (largest at the bottom). */
static int groups_by_key(msr_chart *chart, const msr_chart_source *src, const msr_chart_spec *spec,
                         msr__site_cache *sc, const msr__range *r, size_t n_r, const ms_phases *ph,
                         msr__grouping *gr, ms_error *err)
{
    bool by_phase = spec->by == MSR_CHART_BY_PHASE;
    bool by_compile = spec->by == MSR_CHART_BY_COMPILE;
    if (by_compile && (!src->snap || !src->trace->compile_context))
        return msr__render_fail(err, MS_ERR_ARG,
                               "this trace carries no compile context: record with "
                               "_record_memory_history(compile_context=True)");
    size_t top = spec->top ? spec->top : MSR_CHART_DEFAULT_TOP_GROUPS;
    size_t cap = msr__legend_capacity(chart);
    if (!spec->no_legend && cap > 3 && top > cap - 3)
        top = cap - 3; /* every band must be named in the legend */
    if (top > MSR__PALETTE_N * 4)
        top = MSR__PALETTE_N * 4;

    uint32_t *key = NULL;
    site_score *ss = NULL;
    size_t n_keys = 0;
    if (!by_phase)
        ph = NULL;
    int rc = keys_of_allocs(src, by_phase, by_compile, sc, r, n_r, ph, &key, err);
    if (rc)
        return rc;
    rc = rank_keys(chart, src, by_phase, ph != NULL, (by_phase && !ph) || by_compile, key, top,
                   &ss, &n_keys, gr, err);
    free(key);
    if (rc)
        return rc;

    size_t cap_groups = n_keys + spec->n_highlights;
    chart->groups = msr__alloc_n(cap_groups, sizeof *chart->groups);
    bool by_site = !by_phase && !by_compile;
    char(*named)[MSR_CHART_TEXT] = by_site && n_keys ? msr__alloc_n(n_keys, sizeof *named) : NULL;
    if (!chart->groups || (by_site && n_keys && !named)) {
        free(ss);
        free(named);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for bands");
    }
    if (by_site)
        site_labels(src->snap, ss, n_keys, named);
    for (size_t k = 0; k < n_keys && !rc; k++) {
        msr_chart_group g;
        memset(&g, 0, sizeof g);
        g.kind = by_phase     ? MSR_CHART_GROUP_PHASE
                 : by_compile ? MSR_CHART_GROUP_COMPILE
                              : MSR_CHART_GROUP_SITE;
        g.alloc = -1;
        g.site = by_phase || by_compile ? UINT32_MAX : ss[k].site;
        g.score = ss[k].score;
        if (ph)
            msr__copy_text(g.label, sizeof g.label, ms_phase_kind_text((ms_phase_kind)ss[k].site));
        else if (by_compile && ss[k].site == UINT32_MAX)
            msr__copy_text(g.label, sizeof g.label, "eager (no compile context)");
        else if (by_phase || by_compile)
            msr__copy_text(g.label, sizeof g.label, ms_snapshot_string(src->snap, ss[k].site));
        else
            memcpy(g.label, named[k], sizeof g.label);
        rc = add_group(chart, cap_groups, g, err);
    }
    free(ss);
    free(named);
    /* A name keeps its colour in every chart, unless another band here looks like it. */
    size_t n_named = chart->n_groups;
    const char **names = msr__alloc_n(n_named ? n_named : 1, sizeof *names);
    msr_chart_rgb *rgb = msr__alloc_n(n_named ? n_named : 1, sizeof *rgb);
    chart->key_names = msr__alloc_n(n_named ? n_named : 1, sizeof *chart->key_names);
    chart->key_shown = msr__alloc_n(n_named ? n_named : 1, sizeof *chart->key_shown);
    for (size_t k = 0; names && chart->key_names && chart->key_shown && k < n_named; k++) {
        msr__copy_text(chart->key_names[k], sizeof chart->key_names[k], chart->groups[k].label);
        chart->key_shown[k] = true; /* every band of these is named in the legend */
        names[k] = chart->key_names[k];
    }
    if (!rc && (!names || !rgb || !chart->key_names || !chart->key_shown ||
                msr__distinct_colours(rgb, names, NULL, n_named, &chart->theme)))
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory colouring bands");
    if (!rc)
        chart->n_key_names = n_named;
    for (size_t k = 0; !rc && k < n_named; k++) {
        msr_chart_group *g = &chart->groups[k];
        g->fill = g->key_rgb = rgb[k];
        g->key_index = (int)k;
        g->legend = (int)chart->n_legend;
        msr__legend_add(chart, MSR_CHART_KEY_SWATCH, g->fill, g->label);
    }
    free(names);
    free(rgb);
    gr->n_groups = chart->n_groups;
    if (!rc)
        rc = leak_bands(chart, src, spec, sc, 0, gr, err);
    return rc;
}

/* ------------------------------------------------------------------ by category */

/* Stacking order, bottom first, as the Hugging Face training-memory picture stacks it:
 * what lives through the whole run (weights, the optimizer's state, and the library
 * workspaces made once at first use) at the bottom, so those bands stay flat; then what
 * each step builds up and drops (gradients; the batch and the activations made from it),
 * then short-lived memory on top, where its spikes read as spikes. (Workspace on top
 * drew a constant 65 MiB that traced every spike of the outline and read as churn.) */
_Static_assert(MS_CAT_COUNT == 8, "CATEGORY_ORDER lists every category");
static const ms_category CATEGORY_ORDER[MS_CAT_COUNT] = {
    MS_CAT_PARAMETER,  MS_CAT_OPTIMIZER_STATE, MS_CAT_WORKSPACE, MS_CAT_GRADIENT,
    MS_CAT_INPUT,      MS_CAT_ACTIVATION,      MS_CAT_TEMPORARY, MS_CAT_OTHER,
};

/* --by category: one band per category, always all eight in CATEGORY_ORDER so a band's
 * place and colour never depend on the data. Every allocation belongs to one, so the
 * "other" remainder is only what the timeline's curve holds beyond its allocations. */
static int groups_by_category(msr_chart *chart, const msr_chart_source *src,
                              const msr_chart_spec *spec, msr__site_cache *sc, msr__grouping *gr,
                              ms_error *err)
{
    const ms_timeline *tl = src->tl;
    size_t cap = MS_CAT_COUNT + spec->n_highlights;
    chart->groups = msr__alloc_n(cap, sizeof *chart->groups);
    if (!chart->groups)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for bands");
    int32_t band_of[MS_CAT_COUNT];
    for (size_t k = 0; k < MS_CAT_COUNT; k++) {
        msr_chart_group g = new_band(MSR_CHART_GROUP_CATEGORY);
        g.category = CATEGORY_ORDER[k];
        g.legend = -1; /* named once the heights show it holds bytes in the window */
        g.fill = g.key_rgb = msr__category_rgb(g.category);
        msr__category_label(g.category, g.label, sizeof g.label);
        band_of[g.category] = (int32_t)k;
        chart->groups[chart->n_groups++] = g;
    }
    for (size_t i = 0; i < tl->n_allocs; i++) {
        size_t at = src->category_alloc ? src->category_alloc[i] : i;
        ms_category c = ms_categories_of(src->categories, at);
        gr->of_alloc[i] = band_of[(unsigned)c < MS_CAT_COUNT ? c : MS_CAT_OTHER];
    }
    gr->n_groups = chart->n_groups;
    /* Leaked memory right above what lives through the whole run (parameters, optimizer
     * state, workspace) and under what each step builds and drops: a floor that grows,
     * not a sawtooth riding the activation hills. */
    return leak_bands(chart, src, spec, sc, 3, gr, err);
}

void msr__legend_categories(msr_chart *chart)
{
    size_t W = chart->n_cols;
    for (size_t g = 0; g < chart->n_groups; g++) {
        msr_chart_group *gp = &chart->groups[g];
        if (gp->kind != MSR_CHART_GROUP_CATEGORY)
            continue;
        if (msr__band_first_col(chart, g) == W)
            continue;
        gp->legend = (int)chart->n_legend;
        msr__legend_add(chart, MSR_CHART_KEY_SWATCH, gp->fill, gp->label);
    }
}

/* ------------------------------------------------------------------ by the user's groups */

/* --by group: one band per --group rule in the order given (the first rule at the bottom),
 * each named by the rule; what no rule matches is the "other" band. The rules are matched
 * once per distinct frame (msr_chart_group_rules_classify), here or, for the view's many
 * charts, once for the file by the caller (src->group_of_stack). */
static int groups_by_user(msr_chart *chart, const msr_chart_source *src, const msr_chart_spec *spec,
                          msr__site_cache *sc, msr__grouping *gr, ms_error *err)
{
    const msr_chart_group_rules *rules = src->group_rules;
    if (!rules || rules->n == 0)
        return msr__render_fail(err, MS_ERR_ARG, "--by group needs at least one --group NAME=REGEX");
    size_t n_stacks = src->snap ? ms_snapshot_stack_count(src->snap) : 0;
    int8_t *own = NULL;
    const int8_t *rule_of = src->group_of_stack;
    if (!rule_of && n_stacks) {
        int rc = msr_chart_group_rules_classify(rules, src->snap, src->tl, &own, err);
        if (rc)
            return rc;
        rule_of = own;
    }
    chart->groups = msr__alloc_n(rules->n + spec->n_highlights, sizeof *chart->groups);
    if (!chart->groups) {
        free(own);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for bands");
    }
    for (size_t k = 0; k < rules->n; k++) {
        msr_chart_group g = new_band(MSR_CHART_GROUP_USER);
        msr__copy_text(g.label, sizeof g.label, rules->name[k]);
        /* A few names the user chose: the palette's hues in rule order keep them apart
         * (a hash may give two of them one hue), and the same rules colour alike. */
        g.fill = k < MSR__PALETTE_N ? msr__palette(k) : msr__text_rgb(g.label);
        g.key_rgb = g.fill;
        g.legend = (int)chart->n_legend;
        msr__legend_add(chart, MSR_CHART_KEY_SWATCH, g.fill, g.label);
        chart->groups[chart->n_groups++] = g;
    }
    for (size_t i = 0; i < src->tl->n_allocs; i++) {
        uint32_t st = src->tl->allocs[i].stack;
        gr->of_alloc[i] = st < n_stacks ? rule_of[st] : -1;
    }
    free(own);
    gr->n_groups = chart->n_groups;
    return leak_bands(chart, src, spec, sc, 0, gr, err);
}

int msr__build_groups(msr_chart *chart, const msr_chart_source *src, const msr_chart_spec *spec,
                     msr__site_cache *sc, const msr__range *r, size_t n_r, const ms_phases *ph,
                     msr__grouping *gr, ms_error *err)
{
    if (spec->by == MSR_CHART_BY_ALLOC)
        return groups_by_alloc(chart, src, spec, sc, gr, err);
    if (spec->by == MSR_CHART_BY_CATEGORY)
        return groups_by_category(chart, src, spec, sc, gr, err);
    if (spec->by == MSR_CHART_BY_GROUP)
        return groups_by_user(chart, src, spec, sc, gr, err);
    return groups_by_key(chart, src, spec, sc, r, n_r, ph, gr, err);
}
