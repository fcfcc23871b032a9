/* The chart data of the interactive timeline (render/chart_export.c), on every snapshot in
 * testdata/:
 *  - a window chart built from a slice of the trace equals msr_chart_build() of the same
 *    window on the whole trace, column by column and band by band (the pyramid's windows
 *    are render's charts, not an approximation);
 *  - the JSON parses, its levels tile the trace (level k: 2^k windows edge to edge), its
 *    curves decode to the charts' columns, its allocation table holds the timeline's
 *    sizes and stacks, the leak outlines are there, and it keeps to its budget;
 *  - with the categories given, a by-category grouping whose whole-trace window is the
 *    chart by category, band heights included. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart_export.h"
#include "check.h"
#include "chart.h"
#include "memsnap/categories.h"
#include "memsnap/idle.h"
#include "memsnap/leaks.h"

static const msr_chart_rect AREA = {0, 0, 1320, 560};

/* ------------------------------------------------------------------ varints */

static size_t b64_decode(const char *s, unsigned char **out)
{
    size_t n = strlen(s), k = 0;
    unsigned char *o = malloc(n / 4 * 3 + 3);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n && s[i] != '='; i++) {
        const char *A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *p = strchr(A, s[i]);
        if (!p)
            break;
        acc = acc << 6 | (uint32_t)(p - A);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[k++] = (unsigned char)(acc >> bits);
        }
    }
    *out = o;
    return k;
}

/* All varints of a base64 stream; signed ones unzigzagged. */
static size_t varints(const char *s, int64_t **out, bool is_signed)
{
    unsigned char *b;
    size_t n = b64_decode(s ? s : "", &b), k = 0;
    int64_t *v = malloc((n + 1) * sizeof *v);
    uint64_t x = 0;
    int shift = 0;
    for (size_t i = 0; i < n; i++) {
        x |= (uint64_t)(b[i] & 127) << shift;
        shift += 7;
        if (b[i] & 128)
            continue;
        v[k++] = is_signed ? (x & 1 ? -(int64_t)(x >> 1) - 1 : (int64_t)(x >> 1)) : (int64_t)x;
        x = 0;
        shift = 0;
    }
    free(b);
    *out = v;
    return k;
}

/* A curve as chart_export.c writes it: deltas shifted by one, 0 + count for a run. */
static size_t curve_decode(const char *s, int64_t *out, size_t cap)
{
    int64_t *v;
    size_t n = varints(s, &v, false), k = 0;
    int64_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == 0 && i + 1 < n) {
            for (int64_t r = 0; r < v[i + 1] && k < cap; r++)
                out[k++] = cur;
            i++;
            continue;
        }
        uint64_t z = (uint64_t)v[i] - 1;
        cur += z & 1 ? -(int64_t)(z >> 1) - 1 : (int64_t)(z >> 1);
        if (k < cap)
            out[k++] = cur;
    }
    free(v);
    return k;
}

/* ------------------------------------------------------------------ windows */

/* Bands with bytes somewhere in the window, in stacking order. A chart of the whole trace
 * also carries highlighted allocations that live outside the window as empty bands; a
 * slice leaves them out, and an empty band draws nothing. */
static size_t visible_groups(const msr_chart *ch, size_t *out)
{
    size_t n = 0;
    for (size_t g = 0; g < ch->n_groups; g++) {
        bool any = false;
        for (size_t c = 0; c < ch->n_cols && !any; c++)
            any = ch->heights[g * ch->n_cols + c] > 0;
        if (any)
            out[n++] = g;
    }
    return n;
}

static void same_chart(const char *ctx, const msr_chart *a, const msr_chart *b, bool legends)
{
    CHECK_EQ_INT_IN(ctx, a->n_cols, b->n_cols);
    CHECK_TRUE_IN(ctx, a->y_max == b->y_max);
    CHECK_EQ_INT_IN(ctx, a->n_xticks, b->n_xticks);
    if (legends)
        CHECK_EQ_INT_IN(ctx, a->n_legend, b->n_legend);
    CHECK_EQ_INT_IN(ctx, a->has_peak, b->has_peak);
    CHECK_EQ_INT_IN(ctx, a->peak_bytes, b->peak_bytes);
    CHECK_EQ_INT_IN(ctx, a->n_lanes, b->n_lanes);
    if (a->n_cols != b->n_cols)
        return;
    size_t *va = malloc((a->n_groups + 1) * sizeof *va), *vb = malloc((b->n_groups + 1) * sizeof *vb);
    size_t na = visible_groups(a, va), nb = visible_groups(b, vb);
    CHECK_EQ_INT_IN(ctx, na, nb);
    size_t bad_cols = 0, bad_cells = 0, bad_groups = 0, bad_fill = 0;
    for (size_t c = 0; c < a->n_cols; c++)
        bad_cols += a->col_event[c] != b->col_event[c] || a->col_active[c] != b->col_active[c] ||
                    a->col_reserved[c] != b->col_reserved[c] || a->col_low[c] != b->col_low[c] ||
                    a->col_other[c] != b->col_other[c];
    for (size_t k = 0; k < na && k < nb; k++) {
        const msr_chart_group *x = &a->groups[va[k]], *y = &b->groups[vb[k]];
        bad_groups += x->kind != y->kind || x->category != y->category;
        bad_groups += x->alloc != y->alloc || x->site != y->site || x->highlight != y->highlight ||
                      strcmp(x->label, y->label) != 0 || strcmp(x->mark, y->mark) != 0;
        bad_fill += x->fill.r != y->fill.r || x->fill.g != y->fill.g || x->fill.b != y->fill.b;
        for (size_t c = 0; c < a->n_cols; c++)
            bad_cells += a->heights[va[k] * a->n_cols + c] != b->heights[vb[k] * b->n_cols + c];
    }
    CHECK_EQ_INT_IN(ctx, bad_cols, 0);
    CHECK_EQ_INT_IN(ctx, bad_groups, 0);
    CHECK_EQ_INT_IN(ctx, bad_fill, 0);
    CHECK_EQ_INT_IN(ctx, bad_cells, 0);
    free(va);
    free(vb);
    for (size_t i = 0; i < a->n_xticks && i < b->n_xticks; i++)
        CHECK_EQ_STR_IN(ctx, a->xticks[i].label, b->xticks[i].label);
    /* Highlights outside the window still name their site in a whole-trace chart's
     * legend; compare legends where every highlight is in view. */
    for (size_t i = 0; legends && i < a->n_legend && i < b->n_legend; i++)
        CHECK_EQ_STR_IN(ctx, a->legend[i].text, b->legend[i].text);
    for (size_t l = 0; l < a->n_lanes && l < b->n_lanes; l++)
        CHECK_EQ_INT_IN(ctx, a->n_lane_runs[l], b->n_lane_runs[l]);
    CHECK_EQ_STR_IN(ctx, a->peak_label, b->peak_label);
}

/* Everything the page writes of a window (chart_export.c's write_tile) is the same: the
 * window chart keeps the highlighted allocations outside the window as empty bands, the
 * annotation lanes that stay open to the trace's end and the trace's first OOM, as the
 * whole trace's chart does. */
static void same_page_tile(const char *ctx, const msr_chart *a, const msr_chart *b)
{
    CHECK_TRUE_IN(ctx, a->x_lo == b->x_lo && a->x_hi == b->x_hi);
    CHECK_EQ_INT_IN(ctx, a->n_groups, b->n_groups);
    CHECK_EQ_INT_IN(ctx, a->n_legend, b->n_legend);
    CHECK_EQ_INT_IN(ctx, a->show_low, b->show_low);
    CHECK_EQ_INT_IN(ctx, a->n_ooms, b->n_ooms);
    CHECK_EQ_INT_IN(ctx, a->n_oom_px, b->n_oom_px);
    CHECK_EQ_STR_IN(ctx, a->oom_label, b->oom_label);
    if (a->n_groups != b->n_groups || a->n_cols != b->n_cols)
        return;
    size_t bad_groups = 0, bad_cells = 0;
    for (size_t g = 0; g < a->n_groups; g++) {
        const msr_chart_group *x = &a->groups[g], *y = &b->groups[g];
        bad_groups += x->kind != y->kind || x->alloc != y->alloc || x->site != y->site ||
                      x->legend != y->legend || x->highlight != y->highlight ||
                      x->suspect != y->suspect || strcmp(x->label, y->label) != 0 ||
                      strcmp(x->mark, y->mark) != 0 || x->fill.r != y->fill.r ||
                      x->fill.g != y->fill.g || x->fill.b != y->fill.b;
        for (size_t c = 0; c < a->n_cols; c++)
            bad_cells += a->heights[g * a->n_cols + c] != b->heights[g * b->n_cols + c];
    }
    CHECK_EQ_INT_IN(ctx, bad_groups, 0);
    CHECK_EQ_INT_IN(ctx, bad_cells, 0);
    for (size_t i = 0; i < a->n_legend && i < b->n_legend; i++)
        CHECK_EQ_STR_IN(ctx, a->legend[i].text, b->legend[i].text);
    size_t bad_runs = 0;
    for (size_t l = 0; l < a->n_lanes && l < b->n_lanes; l++)
        for (size_t i = 0; i < a->n_lane_runs[l] && i < b->n_lane_runs[l]; i++)
            bad_runs += a->lane_runs[l][i].x0 != b->lane_runs[l][i].x0 ||
                        a->lane_runs[l][i].x1 != b->lane_runs[l][i].x1 ||
                        strcmp(a->names[a->lane_runs[l][i].name],
                               b->names[b->lane_runs[l][i].name]) != 0;
    CHECK_EQ_INT_IN(ctx, bad_runs, 0);
    for (size_t i = 0; i < a->n_oom_px && i < b->n_oom_px; i++)
        CHECK_TRUE_IN(ctx, a->oom_px[i] == b->oom_px[i]);
}

static const char *const BY_NAME[] = {"alloc", "site", "phase", "category"};

/* Export options that mark the leaks' allocations. */
static msr_chart_export_opts marked(const msr_chart_highlight *hl, size_t n_hl)
{
    msr_chart_export_opts o = {0};
    o.highlights = hl;
    o.n_highlights = n_hl;
    return o;
}

/* The page's chart JSON of src (free()); NULL, counted as a failure, when it cannot be
 * written. */
static char *export_text(const char *ctx, const msr_chart_source *src,
                         const msr_chart_export_opts *o, msr_chart_export_stats *st)
{
    char *text = NULL;
    ms_error err;
    int rc = msr_chart_export_json(&text, st, src, o, &err);
    CHECK_EQ_INT_IN(ctx, rc, 0);
    if (rc)
        fprintf(stderr, "%s: %s\n", ctx, err.message);
    return rc ? NULL : text;
}

/* A budget is kept: the levels stop before the text outgrows it (tables included, a
 * third is kept for them). */
static void within_budget(const char *ctx, const msr_chart_source *src, msr_chart_export_opts o)
{
    ms_error err;
    msr_chart_export_stats st;
    char *text = NULL;
    o.budget = 300 * 1024;
    int rc = msr_chart_export_json(&text, &st, src, &o, &err);
    CHECK_EQ_INT_IN(ctx, rc, 0);
    if (!rc)
        CHECK_EQ_INT_IN(ctx, st.bytes <= o.budget ? 0 : st.bytes, 0);
    free(text);
}

static void windows(const char *path, const char *name, const ms_snapshot *s,
                    const ms_timeline *t, const ms_categories *cats,
                    const msr_chart_highlight *hl, size_t n_hl)
{
    msr_chart_source src = {.snap = s, .trace = ms_snapshot_trace(s, t->device), .tl = t,
                           .label = name, .categories = cats};
    /* Time windows need a clock: a trace without times is drawn over events (test_compat). */
    if (src.trace->n < 4 || !src.trace->has_times)
        return;
    double span = (double)(src.trace->time_us[src.trace->n - 1] - src.trace->time_us[0]) / 1e6;
    if (!(span > 0))
        return;
    /* Windows at the start, the middle, the end, inside one burst, and off the grid. */
    static const double W[][2] = {{0, 0.5},     {0.25, 0.5},   {0.5, 1.0}, {0.9, 0.95},
                                  {0.123, 0.31}, {0.999, 1.0}, {0, 1.0},   {0.47, 0.4701}};
    /* Each file takes a quarter of the windows, by its name, and the whole trace:
     * across the 79 bundled recordings every window is still checked on about twenty,
     * at a third of the cost of what was CI's slowest test. */
    unsigned half = 0;
    for (const char *c = name; *c; c++)
        half = half * 31u + (unsigned char)*c;
    for (size_t w = 0; w < sizeof W / sizeof W[0]; w++) {
        if ((w + half) % 4 && !(W[w][0] == 0 && W[w][1] == 1.0))
            continue;
        for (int by = 0; by < 6; by++) {
            /* By allocation, site and category (a slice maps its allocations to the
             * categories' timeline), each without and with leak outlines. */
            msr_chart_by grouping = by / 2 == 0   ? MSR_CHART_BY_ALLOC
                                   : by / 2 == 1 ? MSR_CHART_BY_SITE
                                                 : MSR_CHART_BY_CATEGORY;
            char ctx[300];
            snprintf(ctx, sizeof ctx, "%s window %.4f-%.4f by %s%s", path, W[w][0], W[w][1],
                     BY_NAME[grouping], by & 1 ? " with leaks outlined" : "");
            msr_chart_spec spec = {0};
            spec.by = grouping;
            spec.has_from = spec.has_to = true;
            spec.from = span * W[w][0];
            spec.to = span * W[w][1];
            spec.highlights = by & 1 ? hl : NULL;
            spec.n_highlights = by & 1 ? n_hl : 0;
            if ((by & 1) && !n_hl)
                continue;
            msr_chart *whole = NULL, *sliced = NULL;
            ms_error err;
            int ra = msr_chart_build(&whole, &src, &spec, AREA, &err);
            int rb = msr_chart_build_window(&sliced, &src, &spec, AREA, &err);
            CHECK_EQ_INT_IN(ctx, ra, 0);
            CHECK_EQ_INT_IN(ctx, rb, 0);
            if (!ra && !rb) {
                same_chart(ctx, whole, sliced, !(by & 1));
                same_page_tile(ctx, whole, sliced);
            }
            msr_chart_free(whole);
            msr_chart_free(sliced);
        }
    }
    /* The run axis: windows in its units, across its breaks, are the whole trace's too
     * (the slice carries the trace's warp; it starts at the trace's first time). */
    msr_chart_warp warp;
    ms_error werr;
    CHECK_EQ_INT_IN(path, msr_chart_warp_find(&warp, src.trace, NULL, NULL, &werr), 0);
    if (!warp.n_breaks)
        return;
    src.warp = &warp;
    double uspan = msr_chart_warp_u(&warp, span);
    /* The first break and a little on either side of it, then windows as above. */
    size_t k = 0;
    while (!warp.gap[k])
        k++;
    double bu0 = warp.u[k], bu1 = warp.u[k + 1], pad = (bu1 - bu0) * 0.7;
    double RW[][2] = {{fmax(0, bu0 - pad), fmin(uspan, bu1 + pad)}, {0, uspan * 0.5},
                      {uspan * 0.25, uspan}, {uspan * 0.123, uspan * 0.31}};
    for (size_t w = 0; w < sizeof RW / sizeof RW[0]; w++) {
        for (int by = 0; by < 2; by++) {
            char ctx[300];
            snprintf(ctx, sizeof ctx, "%s run-axis window %.6f-%.6f by %s", path, RW[w][0],
                     RW[w][1], by ? "category" : "alloc");
            msr_chart_spec spec = {0};
            spec.x_mode = MSR_CHART_X_RUN;
            spec.by = by ? MSR_CHART_BY_CATEGORY : MSR_CHART_BY_ALLOC;
            spec.has_from = spec.has_to = true;
            spec.from = RW[w][0];
            spec.to = RW[w][1];
            msr_chart *whole = NULL, *sliced = NULL;
            int ra = msr_chart_build(&whole, &src, &spec, AREA, &werr);
            int rb = msr_chart_build_window(&sliced, &src, &spec, AREA, &werr);
            CHECK_EQ_INT_IN(ctx, ra, 0);
            CHECK_EQ_INT_IN(ctx, rb, 0);
            if (!ra && !rb) {
                CHECK_EQ_INT_IN(ctx, sliced->x_mode, MSR_CHART_X_RUN);
                same_chart(ctx, whole, sliced, true);
                same_page_tile(ctx, whole, sliced);
            }
            msr_chart_free(whole);
            msr_chart_free(sliced);
        }
    }
}

/* ------------------------------------------------------------------ the JSON */

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static void json_checks_idle(const char *path, const char *name, const ms_snapshot *s,
                             const ms_timeline *t, const msr_chart_highlight *hl, size_t n_hl,
                             const ms_idle *idle)
{
    msr_chart_source src = {.snap = s, .trace = ms_snapshot_trace(s, t->device), .tl = t,
                           .label = name};
    src.idle = idle; /* the run axis is laid from the quiet stretches it carries */
    msr_chart_export_opts o = marked(hl, n_hl);
    msr_chart_export_stats st;
    char *text = export_text(path, &src, &o, &st);
    if (!text)
        return;
    ms_error err;
    CHECK_EQ_INT_IN(path, st.bytes, strlen(text));
    /* Safe inside a <script> element: no markup characters outside escapes. */
    CHECK_TRUE_IN(path, strpbrk(text, "<>&") == NULL);
    cJSON *doc = cJSON_Parse(text);
    CHECK_TRUE_IN(path, doc != NULL);
    if (!doc) {
        free(text);
        return;
    }
    CHECK_EQ_INT_IN(path, cJSON_GetNumberValue(get(doc, "v")), MSR_CHART_EXPORT_VERSION);
    CHECK_EQ_INT_IN(path, cJSON_GetNumberValue(get(doc, "events")), src.trace->n);
    double span = cJSON_GetNumberValue(get(doc, "span"));
    size_t cols = (size_t)cJSON_GetNumberValue(get(doc, "cols"));
    const cJSON *levels = get(get(doc, "modes"), "alloc");
    /* The run axis: written only where the trace's warp has breaks, one segment per piece
     * of it; windows are then in its units. Elsewhere the page is the time axis's. */
    msr_chart_warp warp;
    msr_chart_warp_from_idle(&warp, idle);
    bool run = get(doc, "axis") != NULL;
    CHECK_EQ_INT_IN(path, run, warp.n_breaks > 0);
    if (run) {
        CHECK_EQ_STR_IN(path, cJSON_GetStringValue(get(doc, "axis")), "run");
        const cJSON *segs = get(doc, "segs");
        CHECK_EQ_INT_IN(path, cJSON_GetArraySize(segs), warp.n_segments);
        size_t n_gap = 0, bad_seg = 0;
        const cJSON *sg;
        cJSON_ArrayForEach(sg, segs)
        {
            double u0 = cJSON_GetNumberValue(cJSON_GetArrayItem(sg, 0));
            double t0 = cJSON_GetNumberValue(cJSON_GetArrayItem(sg, 2));
            bad_seg += fabs(msr_chart_warp_u(&warp, t0) - u0) > 1e-9 * (span + 1);
            n_gap += cJSON_GetNumberValue(cJSON_GetArrayItem(sg, 4)) != 0;
        }
        CHECK_EQ_INT_IN(path, bad_seg, 0);
        CHECK_EQ_INT_IN(path, n_gap, warp.n_breaks);
        span = cJSON_GetNumberValue(get(doc, "uspan"));
        const int64_t *tu = src.trace->time_us;
        double t_end = (double)(tu[src.trace->n - 1] - tu[0]) / 1e6;
        CHECK_TRUE_IN(path, fabs(span - msr_chart_warp_u(&warp, t_end)) < 1e-9);
    }
    /* --x time: no run axis keys; a trace with nothing to compress gets that very page,
     * built on one thread (ms_limits.threads) where the first took the default two. */
    msr_chart_export_opts ot = o;
    ms_limits one = ms_limits_default();
    one.threads = 1;
    ot.limits = &one;
    ot.x_set = true;
    ot.x_mode = MSR_CHART_X_TIME;
    char *text_time = NULL;
    if (msr_chart_export_json(&text_time, NULL, &src, &ot, &err) == 0) {
        CHECK_TRUE_IN(path, strstr(text_time, "\"segs\"") == NULL);
        if (!run)
            CHECK_EQ_INT_IN(path, strcmp(text, text_time) != 0, 0);
    } else {
        check_fail("%s: --x time page: %s", path, err.message);
    }
    free(text_time);
    /* Slices held to a byte: no level below the whole trace is built, which needs none,
     * and the page still holds every grouping's whole-trace chart (on two recordings of
     * 7 and 8 levels: a page each costs CI time under ASan). */
    if (strstr(path, "seg_churn") || strstr(path, "v3_oom_bystander")) {
        CHECK_TRUE_IN(path, st.levels[0] > 1);
        msr_chart_export_opts os = o;
        os.slice_memory = 1;
        msr_chart_export_stats st1;
        char *text_one = export_text(path, &src, &os, &st1);
        for (int k = 0; text_one && k < 4; k++)
            CHECK_EQ_INT_IN(path, st1.levels[k], st.levels[k] ? 1 : 0);
        free(text_one);
    }
    CHECK_EQ_INT_IN(path, cJSON_GetArraySize(levels), st.levels[0]);
    /* No categories given, no category mode. */
    CHECK_TRUE_IN(path, get(get(doc, "modes"), "category") == NULL);
    CHECK_EQ_INT_IN(path, st.levels[2], 0);
    CHECK_EQ_STR_IN(path, cJSON_GetStringValue(get(get(doc, "legtitle"), "site")),
                    "bands: allocation sites");
    CHECK_TRUE_IN(path, st.levels[0] >= 1);

    /* The whole trace at level 0 is msr_chart_build()'s chart with the shared y scale. */
    msr_chart_spec whole = {0};
    whole.keep_time_axis = true; /* as the export draws a trace without times */
    whole.x_mode = run ? MSR_CHART_X_RUN : MSR_CHART_X_TIME;
    double xs;
    int64_t fit = 0;
    msr_chart_extent(&src, &whole, &xs, &fit, &err);
    whole.y_fit = fit;
    whole.has_from = whole.has_to = true;
    whole.from = 0;
    whole.to = span > 0 ? span : 1e-6;
    whole.highlights = hl;
    whole.n_highlights = n_hl;
    msr_chart *ch = NULL;
    if (msr_chart_build(&ch, &src, &whole, AREA, &err) == 0) {
        const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetArrayItem(levels, 0), 0);
        int64_t *col = calloc(cols + 1, sizeof *col);
        size_t n = curve_decode(cJSON_GetStringValue(get(t0, "a")), col, cols);
        CHECK_EQ_INT_IN(path, n, ch->n_cols);
        size_t bad = 0;
        for (size_t c = 0; c < n && c < ch->n_cols; c++) {
            int64_t want = ch->col_event[c] == MSR_CHART_NO_EVENT
                               ? -1
                               : llround((double)ch->col_active[c] / ch->y_max * ch->plot.h * 4);
            bad += col[c] != want;
        }
        CHECK_EQ_INT_IN(path, bad, 0);
        int64_t *g;
        size_t ng = varints(cJSON_GetStringValue(get(t0, "g")), &g, true);
        CHECK_EQ_INT_IN(path, ng, ch->n_groups);
        size_t n_hl_groups = 0;
        for (size_t k = 0; k < ch->n_groups; k++)
            n_hl_groups += ch->groups[k].highlight;
        CHECK_EQ_INT_IN(path, cJSON_GetArraySize(get(t0, "hl")), n_hl_groups);
        if (n_hl)
            CHECK_TRUE_IN(path, n_hl_groups > 0);
        free(g);
        free(col);
        msr_chart_free(ch);
    } else {
        check_fail("%s: level-0 chart: %s", path, err.message);
    }

    /* Level k: 2^k windows, edge to edge from 0 to the span. */
    for (int k = 0; k < cJSON_GetArraySize(levels); k++) {
        const cJSON *L = cJSON_GetArrayItem(levels, k);
        CHECK_EQ_INT_IN(path, cJSON_GetArraySize(L), 1 << k);
        double edge = 0;
        size_t events = 0, bad = 0;
        const cJSON *tile;
        cJSON_ArrayForEach(tile, L)
        {
            bad += fabs(cJSON_GetNumberValue(get(tile, "x0")) - edge) > 1e-9 * (span + 1);
            edge = cJSON_GetNumberValue(get(tile, "x1"));
            events += (size_t)cJSON_GetNumberValue(get(tile, "ev"));
        }
        CHECK_EQ_INT_IN(path, bad, 0);
        CHECK_TRUE_IN(path, fabs(edge - span) <= 1e-9 * (span + 1));
        /* Every event falls in exactly one window. */
        CHECK_EQ_INT_IN(path, events, src.trace->n);
    }

    /* The allocation table: the timeline's sizes and stacks, by index. */
    const cJSON *al = get(doc, "allocs");
    int64_t *idx, *size, *stack;
    size_t n = varints(cJSON_GetStringValue(get(al, "idx")), &idx, true);
    size_t n2 = varints(cJSON_GetStringValue(get(al, "size")), &size, false);
    size_t n3 = varints(cJSON_GetStringValue(get(al, "stack")), &stack, true);
    CHECK_EQ_INT_IN(path, n, st.allocs);
    CHECK_EQ_INT_IN(path, n2, n);
    CHECK_EQ_INT_IN(path, n3, n);
    size_t bad = 0, pos = 0, n_stacks = 0, nf;
    int64_t cur = 0;
    for (size_t i = 0; i < n && i < n2; i++) {
        cur += idx[i];
        bad += cur < 0 || (size_t)cur >= t->n_allocs || t->allocs[cur].size != (uint64_t)size[i];
    }
    CHECK_EQ_INT_IN(path, bad, 0);
    /* Stacks: as many as declared, each its frame count then frames in the table. */
    int64_t n_frames = (int64_t)cJSON_GetNumberValue(get(get(doc, "frames"), "n"));
    bad = 0;
    int64_t *uf;
    nf = varints(cJSON_GetStringValue(get(get(doc, "stacks"), "f")), &uf, false);
    for (pos = 0; pos < nf; n_stacks++) {
        size_t k = (size_t)uf[pos++];
        for (size_t j = 0; j < k && pos < nf; j++, pos++) {
            int64_t f = uf[pos] & 1 ? -(uf[pos] >> 1) - 1 : uf[pos] >> 1;
            bad += f < 0 || f >= n_frames;
        }
    }
    CHECK_EQ_INT_IN(path, bad, 0);
    CHECK_EQ_INT_IN(path, n_stacks, st.stacks);
    for (size_t i = 0; i < n3; i++)
        bad += stack[i] >= (int64_t)n_stacks;
    CHECK_EQ_INT_IN(path, bad, 0);
    free(uf);
    free(idx);
    free(size);
    free(stack);
    cJSON_Delete(doc);
    free(text);

    within_budget(path, &src, o);
}

/* Band heights as chart_export.c writes them: per band its run count, then per run the
 * columns skipped, the run's length and its bytes. Fills heights[g * cols + c]. */
static bool heights_decode(const char *s, int64_t *heights, size_t n_groups, size_t cols)
{
    int64_t *v;
    size_t n = varints(s, &v, false), p = 0;
    bool ok = true;
    for (size_t g = 0; g < n_groups && ok; g++) {
        ok = p < n;
        int64_t runs = ok ? v[p++] : 0, c = 0;
        for (int64_t r = 0; r < runs && ok; r++) {
            ok = p + 3 <= n;
            if (!ok)
                break;
            c += v[p];
            int64_t len = v[p + 1], bytes = v[p + 2];
            p += 3;
            for (int64_t k = 0; k < len && ok; k++, c++) {
                ok = c >= 0 && (size_t)c < cols;
                if (ok)
                    heights[g * cols + (size_t)c] = bytes;
            }
        }
    }
    free(v);
    return ok && p == n;
}

static void json_checks(const char *path, const char *name, const ms_snapshot *s,
                        const ms_timeline *t, const msr_chart_highlight *hl, size_t n_hl)
{
    ms_idle *idle = NULL;
    ms_error err;
    int rc = ms_idle_find(&idle, ms_snapshot_trace(s, t->device), NULL, NULL, &err);
    CHECK_EQ_INT_IN(path, rc, 0);
    if (!rc)
        json_checks_idle(path, name, s, t, hl, n_hl, idle);
    ms_idle_free(idle);
}

/* With the categories given, the page gets a third grouping: its whole-trace window is
 * msr_chart_build()'s chart by category, band for band and column for column; the
 * budget still holds with three groupings. */
static void category_json(const char *path, const char *name, const ms_snapshot *s,
                          const ms_timeline *t, const ms_categories *cats,
                          const msr_chart_highlight *hl, size_t n_hl)
{
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s category mode", path);
    msr_chart_source src = {.snap = s, .trace = ms_snapshot_trace(s, t->device), .tl = t,
                           .label = name, .categories = cats};
    msr_chart_export_opts o = marked(hl, n_hl);
    msr_chart_export_stats st;
    char *text = export_text(ctx, &src, &o, &st);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    CHECK_TRUE_IN(ctx, doc != NULL);
    ms_error err;
    const cJSON *levels = get(get(doc, "modes"), "category");
    CHECK_TRUE_IN(ctx, cJSON_IsArray(levels));
    CHECK_EQ_INT_IN(ctx, cJSON_GetArraySize(levels), st.levels[2]);
    CHECK_TRUE_IN(ctx, st.levels[2] >= 1);
    CHECK_EQ_STR_IN(ctx, cJSON_GetStringValue(get(get(doc, "legtitle"), "category")),
                    "bands: what the memory is");
    const cJSON *strings = get(doc, "strings");
    double span = cJSON_GetNumberValue(get(doc, "span"));
    size_t cols = (size_t)cJSON_GetNumberValue(get(doc, "cols"));
    msr_chart_spec whole = {0};
    whole.keep_time_axis = true; /* as the export draws a trace without times */
    double xs;
    int64_t fit = 0;
    msr_chart_extent(&src, &whole, &xs, &fit, &err);
    if (get(doc, "axis")) {
        whole.x_mode = MSR_CHART_X_RUN;
        span = cJSON_GetNumberValue(get(doc, "uspan"));
    }
    whole.by = MSR_CHART_BY_CATEGORY;
    whole.y_fit = fit;
    whole.has_from = whole.has_to = true;
    whole.to = span > 0 ? span : 1e-6;
    whole.highlights = hl;
    whole.n_highlights = n_hl;
    msr_chart *ch = NULL;
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetArrayItem(levels, 0), 0);
    if (doc && t0 && msr_chart_build(&ch, &src, &whole, AREA, &err) == 0) {
        int64_t *g;
        size_t ng = varints(cJSON_GetStringValue(get(t0, "g")), &g, true);
        CHECK_EQ_INT_IN(ctx, ng, ch->n_groups);
        size_t bad_label = 0;
        for (size_t k = 0; k < ng && k < MS_CAT_COUNT; k++) {
            const char *label = cJSON_GetStringValue(cJSON_GetArrayItem(strings, (int)(-1 - g[k])));
            bad_label += g[k] >= 0 || !label || strcmp(label, ch->groups[k].label) != 0;
        }
        CHECK_EQ_INT_IN(ctx, bad_label, 0);
        int64_t *h = calloc(ch->n_groups * cols + 1, sizeof *h);
        CHECK_TRUE_IN(ctx, heights_decode(cJSON_GetStringValue(get(t0, "h")), h, ch->n_groups,
                                          cols));
        size_t bad = 0;
        for (size_t k = 0; k < ch->n_groups * ch->n_cols && cols == ch->n_cols; k++)
            bad += h[k] != ch->heights[k];
        CHECK_EQ_INT_IN(ctx, cols, ch->n_cols);
        CHECK_EQ_INT_IN(ctx, bad, 0);
        CHECK_EQ_INT_IN(ctx, cJSON_GetArraySize(get(t0, "leg")), ch->n_legend);
        free(h);
        free(g);
    } else {
        check_fail("%s: level-0 chart: %s", ctx, err.message);
    }
    msr_chart_free(ch);
    cJSON_Delete(doc);
    free(text);

    within_budget(ctx, &src, o);
}

/* --group rules: the page gets a by-group grouping whose bands are the rules' names (and
 * "other"), msr_chart_build()'s chart by group at level 0. */
static void group_json(const char *path, const char *name, const ms_snapshot *s,
                       const ms_timeline *t)
{
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s group mode", path);
    msr_chart_group_rules rules = {0};
    ms_error err;
    CHECK_EQ_INT_IN(ctx, msr_chart_group_rules_add(&rules, "hf=transformers/", &err), 0);
    CHECK_EQ_INT_IN(ctx, msr_chart_group_rules_add(&rules, "model=\\.py:[0-9]+ forward", &err), 0);
    msr_chart_source src = {.snap = s, .trace = ms_snapshot_trace(s, t->device), .tl = t,
                           .label = name, .group_rules = &rules};
    msr_chart_export_opts o = {0};
    o.no_site_mode = true;
    msr_chart_export_stats st;
    char *text = export_text(ctx, &src, &o, &st);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    const cJSON *levels = get(get(doc, "modes"), "group");
    CHECK_TRUE_IN(ctx, cJSON_IsArray(levels));
    CHECK_EQ_INT_IN(ctx, cJSON_GetArraySize(levels), st.levels[3]);
    CHECK_TRUE_IN(ctx, st.levels[3] >= 1);
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetArrayItem(levels, 0), 0);
    msr_chart_spec whole = {0};
    whole.keep_time_axis = true;
    whole.by = MSR_CHART_BY_GROUP;
    double xs;
    int64_t fit = 0;
    msr_chart_extent(&src, &whole, &xs, &fit, &err);
    whole.y_fit = fit;
    whole.x_mode = doc && get(doc, "axis") ? MSR_CHART_X_RUN : MSR_CHART_X_TIME;
    whole.has_from = whole.has_to = true;
    whole.to = doc ? cJSON_GetNumberValue(get(doc, get(doc, "axis") ? "uspan" : "span")) : 1;
    whole.to = whole.to > 0 ? whole.to : 1e-6;
    msr_chart *ch = NULL;
    if (t0 && msr_chart_build(&ch, &src, &whole, AREA, &err) == 0) {
        int64_t *g;
        size_t ng = varints(cJSON_GetStringValue(get(t0, "g")), &g, true);
        CHECK_EQ_INT_IN(ctx, ng, ch->n_groups);
        size_t bad_label = 0, named = 0;
        for (size_t k = 0; k < ng && k < ch->n_groups; k++) {
            const char *label = g[k] < 0 ? cJSON_GetStringValue(cJSON_GetArrayItem(
                                               get(doc, "strings"), (int)(-1 - g[k])))
                                         : NULL;
            bad_label += !label || strcmp(label, ch->groups[k].label) != 0;
            named += label && (!strcmp(label, "hf") || !strcmp(label, "model"));
        }
        CHECK_EQ_INT_IN(ctx, bad_label, 0);
        CHECK_TRUE_IN(ctx, named >= 1); /* the bands carry the rules' names */
        free(g);
    } else {
        check_fail("%s: level-0 chart: %s", ctx, err.message);
    }
    msr_chart_free(ch);
    cJSON_Delete(doc);
    free(text);
    msr_chart_group_rules_free(&rules);
}

static void one(const char *path, const char *name, void *arg)
{
    (void)arg;
    ms_snapshot *s;
    ms_timeline *t;
    int device;
    if (check_open_timeline(path, &s, &device, &t))
        return;
    ms_leak_mark *marks = NULL;
    size_t n_marks = 0;
    ms_error err;
    ms_leak_marks_build(&marks, &n_marks, s, t, NULL, &err);
    msr_chart_highlight *hl = calloc(n_marks + 1, sizeof *hl);
    for (size_t i = 0; i < n_marks; i++)
        hl[i] = (msr_chart_highlight){marks[i].alloc_index, marks[i].label, false, false};
    ms_categories *cats = NULL;
    if (ms_categories_build(&cats, s, device, t, NULL, &err))
        check_fail("%s: categories: %s", path, err.message);
    windows(path, name, s, t, cats, hl, n_marks);
    json_checks(path, name, s, t, hl, n_marks);
    if (cats)
        category_json(path, name, s, t, cats, hl, n_marks);
    if (strstr(path, "gpt2_train") || strstr(path, "idle_start"))
        group_json(path, name, s, t);
    ms_categories_free(cats);
    free(hl);
    ms_leak_marks_free(marks);
    ms_timeline_free(t);
    ms_snapshot_free(s);
}

int main(void)
{
    size_t files = check_each_snapshot(one, NULL);
    CHECK_TRUE(files >= 10);
    return check_finish("test_chart_export");
}
