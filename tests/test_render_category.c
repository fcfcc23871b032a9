/* The chart by category (render --by category), checked against the categories analysis
 * it is drawn from, on every snapshot in testdata/:
 *  - eight bands in a fixed order with fixed colours and labels, the same in every file
 *    and in both themes, none of them the red of leak outlines;
 *  - at every column each band holds exactly the bytes ms_categories_at_event() gives its
 *    category at the column's event, and the bands make up the column's top (the grey
 *    remainder is empty: every allocation has a category);
 *  - a legend entry per category with bytes in the window, in stacking order;
 *  - an inference trace has no gradient or optimizer-state band;
 *  - leak outlines take their allocations out of their category, on top;
 *  - without categories (or with another file's) the chart is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "check_categories.h"
#include "memsnap/categories.h"
#include "memsnap/leaks.h"

static const msr_chart_rect AREA = {0, 0, 1600, 800};

/* The Hugging Face picture's order, bottom first (render/group.c). */
static const ms_category ORDER[MS_CAT_COUNT] = {
    MS_CAT_PARAMETER,  MS_CAT_OPTIMIZER_STATE, MS_CAT_WORKSPACE, MS_CAT_GRADIENT,
    MS_CAT_INPUT,      MS_CAT_ACTIVATION,      MS_CAT_TEMPORARY, MS_CAT_OTHER,
};

/* The colour each category got in the first chart built: every later chart must agree. */
static msr_chart_rgb first_fill[MS_CAT_COUNT];
static bool have_fill;

static double dist(msr_chart_rgb a, msr_chart_rgb b)
{
    return sqrt((a.r - b.r) * (a.r - b.r) + (a.g - b.g) * (a.g - b.g) + (a.b - b.b) * (a.b - b.b));
}

static bool same_rgb(msr_chart_rgb a, msr_chart_rgb b)
{
    return a.r == b.r && a.g == b.g && a.b == b.b;
}

/* Bands 0..7 are the categories in ORDER, labelled as people read them, coloured as in
 * every other chart, tellable apart and unlike the leak red of the chart's theme. */
static void check_bands(const char *ctx, const msr_chart *ch)
{
    CHECK_TRUE_IN(ctx, ch->by == MSR_CHART_BY_CATEGORY);
    CHECK_TRUE_IN(ctx, ch->n_groups >= MS_CAT_COUNT);
    if (ch->n_groups < MS_CAT_COUNT)
        return;
    if (!have_fill) {
        for (size_t k = 0; k < MS_CAT_COUNT; k++)
            first_fill[ch->groups[k].category] = ch->groups[k].fill;
        have_fill = true;
    }
    /* Leak findings' bands sit right above parameter, optimizer state and workspace. */
    size_t n_leak = 0;
    while (3 + n_leak < ch->n_groups && ch->groups[3 + n_leak].kind == MSR_CHART_GROUP_LEAK)
        n_leak++;
    CHECK_TRUE_IN(ctx, ch->n_groups == MS_CAT_COUNT + n_leak);
    for (size_t i = 0; i < n_leak; i++)
        CHECK_TRUE_IN(ctx, ch->groups[3 + i].highlight);
    for (size_t k = 0; k < MS_CAT_COUNT; k++) {
        const msr_chart_group *g = &ch->groups[k < 3 ? k : k + n_leak];
        CHECK_TRUE_IN(ctx, g->kind == MSR_CHART_GROUP_CATEGORY);
        CHECK_EQ_INT_IN(ctx, g->category, ORDER[k]);
        CHECK_EQ_INT_IN(ctx, g->alloc, -1);
        CHECK_TRUE_IN(ctx, !g->highlight);
        char want[64];
        snprintf(want, sizeof want, "%s", ms_category_name(ORDER[k]));
        for (char *p = want; *p; p++)
            *p = *p == '_' ? ' ' : *p;
        CHECK_EQ_STR_IN(ctx, g->label, want);
        CHECK_TRUE_IN(ctx, same_rgb(g->fill, first_fill[ORDER[k]]));
        CHECK_TRUE_IN(ctx, dist(g->fill, ch->theme.highlight) > 0.35);
        CHECK_TRUE_IN(ctx, dist(g->fill, ch->theme.other) > 0.1);
        for (size_t j = 0; j < k; j++)
            CHECK_TRUE_IN(ctx, dist(g->fill, ch->groups[j < 3 ? j : j + n_leak].fill) > 0.2);
    }
}

static bool has_bytes(const msr_chart *ch, size_t g)
{
    for (size_t c = 0; c < ch->n_cols; c++)
        if (ch->heights[g * ch->n_cols + c] > 0)
            return true;
    return false;
}

/* One legend line per category band with bytes, bottom band first, then the fixed lines;
 * the grey remainder is named only where it shows. */
static void check_legend(const char *ctx, const msr_chart *ch)
{
    size_t next = 0;
    for (size_t k = 0; k < ch->n_groups; k++) {
        const msr_chart_group *g = &ch->groups[k];
        if (g->kind == MSR_CHART_GROUP_LEAK)
            continue;
        if (!has_bytes(ch, k)) {
            CHECK_EQ_INT_IN(ctx, g->legend, -1);
            continue;
        }
        CHECK_EQ_INT_IN(ctx, g->legend, next);
        if (g->legend >= 0 && (size_t)g->legend < ch->n_legend) {
            CHECK_EQ_STR_IN(ctx, ch->legend[g->legend].text, g->label);
            CHECK_TRUE_IN(ctx, same_rgb(ch->legend[g->legend].rgb, g->fill));
        }
        next++;
    }
    bool remainder = false;
    for (size_t c = 0; c < ch->n_cols; c++)
        remainder = remainder || ch->col_other[c] > 0;
    bool named = false;
    for (size_t i = 0; i < ch->n_legend; i++)
        named = named || !strcmp(ch->legend[i].text, "no allocation recorded");
    CHECK_EQ_INT_IN(ctx, named, remainder);
    CHECK_EQ_STR_IN(ctx, ch->legend_title, "bands: what the memory is");
}

/* Every `step`-th column: band k holds ms_categories_at_event()'s bytes of its category
 * at the column's event, less what highlighted allocations of that category hold (they
 * have bands of their own); the bands and the remainder make the column's top. */
/* The highlights of the chart under test (all one finding), or NULL. */
static const msr_chart_highlight *heights_hl;
static size_t heights_nhl;

static void check_heights(const char *ctx, const msr_chart *ch, const ms_categories *cats,
                          size_t step)
{
    const ms_timeline *tl = ms_categories_timeline(cats);
    size_t W = ch->n_cols, bad = 0, bad_sum = 0, other = 0;
    for (size_t c = 0; c < W; c += step) {
        int64_t e = ch->col_event[c], by[MS_CAT_COUNT] = {0};
        if (e != MSR_CHART_NO_EVENT && ms_categories_at_event(by, cats, e, NULL) != 0) {
            check_fail("%s: ms_categories_at_event(%lld) failed", ctx, (long long)e);
            return;
        }
        int64_t sum = ch->col_other[c], leaked = 0;
        for (size_t i = 0; i < heights_nhl; i++) {
            const ms_alloc *a = &tl->allocs[heights_hl[i].alloc];
            bool alive = e != MSR_CHART_NO_EVENT && a->alloc_event <= e &&
                         (a->free_event < 0 || a->free_event > e);
            if (alive) {
                leaked += (int64_t)a->size;
                by[ms_categories_of(cats, heights_hl[i].alloc)] -= (int64_t)a->size;
            }
        }
        for (size_t k = 0; k < ch->n_groups; k++) {
            int64_t h = ch->heights[k * W + c];
            if (ch->groups[k].kind == MSR_CHART_GROUP_LEAK)
                bad += h != leaked;
            else
                bad += h != by[ch->groups[k].category];
            sum += h;
        }
        bad_sum += sum != ch->col_active[c];
        other += ch->col_other[c] != 0;
    }
    CHECK_EQ_INT_IN(ctx, bad, 0);
    CHECK_EQ_INT_IN(ctx, bad_sum, 0);
    CHECK_EQ_INT_IN(ctx, other, 0);
}

static int build(msr_chart **ch, const msr_chart_source *src, const msr_chart_spec *spec,
                 const char *ctx)
{
    ms_error err;
    int rc = msr_chart_build(ch, src, spec, AREA, &err);
    CHECK_EQ_INT_IN(ctx, rc, 0);
    if (rc)
        fprintf(stderr, "%s: %s\n", ctx, err.message);
    return rc;
}

/* The snapshots the issue names get every column, in several windows and both axes. */
static bool named(const char *name)
{
    return !strcmp(name, "cat_adamw") || !strcmp(name, "gpt2_train") ||
           !strcmp(name, "cat_infer");
}

static void zoomed(const char *path, const msr_chart_source *src, const ms_categories *cats)
{
    const ms_timeline *tl = src->tl;
    msr_chart_spec spec = {0};
    spec.by = MSR_CHART_BY_CATEGORY;
    spec.x_mode = MSR_CHART_X_EVENTS;
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s events axis", path);
    msr_chart *ch = NULL;
    if (!build(&ch, src, &spec, ctx)) {
        check_bands(ctx, ch);
        check_heights(ctx, ch, cats, 1);
        check_legend(ctx, ch);
    }
    msr_chart_free(ch);
    ch = NULL;
    spec.has_from = spec.has_to = true;
    spec.from = (double)(tl->n_events / 3);
    spec.to = (double)(tl->n_events / 3 + tl->n_events / 5 + 2);
    snprintf(ctx, sizeof ctx, "%s events %.0f-%.0f", path, spec.from, spec.to);
    if (!build(&ch, src, &spec, ctx)) {
        check_bands(ctx, ch);
        check_heights(ctx, ch, cats, 1);
        check_legend(ctx, ch);
    }
    msr_chart_free(ch);
}

/* cat_infer: no backward pass and no optimizer, so neither band holds a byte anywhere
 * and the legend does not name them. */
static void inference(const char *ctx, const msr_chart *ch)
{
    for (size_t k = 0; k < MS_CAT_COUNT && k < ch->n_groups; k++) {
        ms_category c = ch->groups[k].category;
        if (c != MS_CAT_GRADIENT && c != MS_CAT_OPTIMIZER_STATE)
            continue;
        int64_t most = 0;
        for (size_t col = 0; col < ch->n_cols; col++)
            most = ch->heights[k * ch->n_cols + col] > most ? ch->heights[k * ch->n_cols + col]
                                                            : most;
        CHECK_EQ_INT_IN(ctx, most, 0);
        CHECK_EQ_INT_IN(ctx, ch->groups[k].legend, -1);
    }
    bool params = false;
    for (size_t k = 0; k < MS_CAT_COUNT && k < ch->n_groups; k++)
        params = params || (ch->groups[k].category == MS_CAT_PARAMETER && has_bytes(ch, k));
    CHECK_TRUE_IN(ctx, params);
}

/* Leak outlines on top: the blamed allocations leave their category's band for bands of
 * their own, outlined, and the columns still add up. */
static void highlighted(const char *path, const ms_snapshot *s, const msr_chart_source *src,
                        const ms_categories *cats)
{
    ms_leak_mark *marks = NULL;
    size_t n = 0;
    ms_error err;
    if (ms_leak_marks_build(&marks, &n, s, src->tl, NULL, &err) || n == 0) {
        ms_leak_marks_free(marks);
        return;
    }
    msr_chart_highlight *hl = calloc(n, sizeof *hl);
    for (size_t i = 0; i < n; i++)
        hl[i] = (msr_chart_highlight){marks[i].alloc_index, i ? NULL : marks[i].label, false, false};
    msr_chart_spec spec = {0};
    spec.by = MSR_CHART_BY_CATEGORY;
    spec.highlights = hl;
    spec.n_highlights = n;
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s with %zu leak outlines", path, n);
    msr_chart *ch = NULL;
    if (!build(&ch, src, &spec, ctx)) {
        check_bands(ctx, ch);
        CHECK_TRUE_IN(ctx, ch->n_groups > MS_CAT_COUNT);
        heights_hl = hl;
        heights_nhl = n;
        check_heights(ctx, ch, cats, 3);
        heights_hl = NULL;
        heights_nhl = 0;
        size_t pinned = 0;
        for (size_t g = 0; g < ch->n_groups; g++)
            pinned += ch->groups[g].pinned;
        CHECK_EQ_INT_IN(ctx, pinned, 1);
    }
    msr_chart_free(ch);
    free(hl);
    ms_leak_marks_free(marks);
}

static void check_file(const char *path, const char *name, void *arg)
{
    (void)arg;
    check_cats x;
    if (check_cats_open(&x, path))
        return;
    ms_error err;
    msr_chart_source src = {.snap = x.s, .trace = ms_snapshot_trace(x.s, x.device), .tl = x.t,
                           .label = name, .categories = x.c};
    msr_chart_spec spec = {0};
    spec.by = MSR_CHART_BY_CATEGORY;
    msr_chart *ch = NULL;
    if (!build(&ch, &src, &spec, path)) {
        check_bands(path, ch);
        check_heights(path, ch, x.c, named(name) ? 1 : 3);
        check_legend(path, ch);
        if (!strcmp(name, "cat_infer"))
            inference(path, ch);
    }
    msr_chart_free(ch);
    ch = NULL;

    /* The dark theme keeps the colours: they are the categories', not the theme's. */
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s dark", path);
    spec.dark = true;
    if (!build(&ch, &src, &spec, ctx))
        check_bands(ctx, ch);
    msr_chart_free(ch);
    ch = NULL;
    spec.dark = false;

    if (named(name))
        zoomed(path, &src, x.c);
    highlighted(path, x.s, &src, x.c);

    /* No categories: refused with a message, not drawn as one grey band. */
    src.categories = NULL;
    CHECK_EQ_INT_IN(path, msr_chart_build(&ch, &src, &spec, AREA, &err), MS_ERR_ARG);
    CHECK_TRUE_IN(path, ch == NULL);
    CHECK_TRUE_IN(path, strstr(err.message, "categor") != NULL);
    /* The other groupings never look at them. */
    spec.by = MSR_CHART_BY_SITE;
    CHECK_EQ_INT_IN(path, msr_chart_build(&ch, &src, &spec, AREA, &err), 0);
    msr_chart_free(ch);

    check_cats_close(&x);
}

/* Categories of one file given with another's timeline are refused. */
static void check_mismatch(void)
{
    const char *ctx = "mismatch";
    ms_snapshot *a, *b;
    ms_timeline *ta, *tb;
    int da, db;
    if (check_open_timeline("testdata/cat_adamw.pickle", &a, &da, &ta))
        return;
    if (check_open_timeline("testdata/cat_infer.pickle", &b, &db, &tb)) {
        ms_timeline_free(ta);
        ms_snapshot_free(a);
        return;
    }
    ms_categories *cb = NULL;
    ms_error err;
    CHECK_EQ_INT_IN(ctx, ms_categories_build(&cb, b, db, tb, NULL, &err), 0);
    msr_chart_source src = {.snap = a, .trace = ms_snapshot_trace(a, da), .tl = ta,
                           .label = "a", .categories = cb};
    msr_chart_spec spec = {0};
    spec.by = MSR_CHART_BY_CATEGORY;
    msr_chart *ch = NULL;
    CHECK_EQ_INT_IN(ctx, msr_chart_build(&ch, &src, &spec, AREA, &err), MS_ERR_ARG);
    CHECK_TRUE_IN(ctx, ch == NULL);
    /* An index map that points outside the categories' timeline, too. */
    size_t *map = calloc(ta->n_allocs + 1, sizeof *map);
    for (size_t i = 0; i < ta->n_allocs; i++)
        map[i] = i;
    if (ta->n_allocs)
        map[ta->n_allocs - 1] = ms_categories_timeline(cb)->n_allocs;
    src.category_alloc = map;
    CHECK_EQ_INT_IN(ctx, msr_chart_build(&ch, &src, &spec, AREA, &err),
                    ta->n_allocs ? MS_ERR_ARG : 0);
    msr_chart_free(ch);
    free(map);
    ms_categories_free(cb);
    ms_timeline_free(ta);
    ms_timeline_free(tb);
    ms_snapshot_free(a);
    ms_snapshot_free(b);
}

int main(void)
{
    size_t files = check_each_snapshot(check_file, NULL);
    if (files < 10)
        check_fail("expected the testdata snapshots (10 or more), found %zu", files);
    check_mismatch();
    printf("render by category: %zu snapshots\n", files);
    return check_finish("test_render_category");
}
