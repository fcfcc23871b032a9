/* Chart geometry, checked numerically against the timeline it is drawn from: every
 * column's stack top is the largest active byte count in its window, the tallest column is
 * the peak (and the allocator's own peak for complete traces), the bands are the viewer's
 * stacking, ticks are round. Runs on every snapshot in testdata/ plus hand-made traces. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "chart.h"
#include "memsnap/memsnap.h"
#include "memsnap/run.h"

/* Stop flooding stderr once a file has shown what is wrong. */
#define BAIL_IF_MANY()                                                                 \
    do {                                                                               \
        if (check_failures > 40) {                                                     \
            fprintf(stderr, "too many failures\n");                                    \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static const msr_chart_rect AREA = {0, 0, 1600, 800};

/* ------------------------------------------------------------------ references */

/* The column of x by the chart's own definition: [x_lo + c*dx, x_lo + (c+1)*dx), the last
 * column closed at x_hi. -1 before, n_cols after. */
static long long col_of(const msr_chart *ch, double x)
{
    if (!(x >= ch->x_lo))
        return -1;
    if (x > ch->x_hi)
        return (long long)ch->n_cols;
    double c = floor((x - ch->x_lo) / ch->dx);
    return c >= (double)ch->n_cols ? (long long)ch->n_cols - 1 : (long long)c;
}

static int64_t active_at(const ms_timeline *tl, int64_t e)
{
    return e < 0 ? tl->active_start : tl->active[e];
}

static bool alive_at(const ms_alloc *a, int64_t e)
{
    return a->alloc_event <= e && (a->free_event < 0 || a->free_event > e);
}

/* Columns against the trace: the shown state is one in the window (an event inside the
 * column, or the state carried in from the left), its bytes are the column's top, and no
 * event inside the column has more. */
static void check_columns(const char *ctx, const msr_chart *ch, const msr_chart_source *src)
{
    const ms_timeline *tl = src->tl;
    size_t W = ch->n_cols;
    int64_t *col_max = malloc(W * sizeof *col_max);
    int64_t *last_before = malloc(W * sizeof *last_before);
    int64_t *first_in = malloc(W * sizeof *first_in);
    for (size_t c = 0; c < W; c++) {
        col_max[c] = -1;
        last_before[c] = -1;
        first_in[c] = MSR_CHART_NO_EVENT;
    }
    long long prev_col = -1;
    int64_t before_window = -1;
    for (int64_t e = 0; e < (int64_t)tl->n_events; e++) {
        long long c = col_of(ch, msr_chart_event_x(src, ch->x_mode, e));
        if (c < 0)
            before_window = e;
        if (c >= 0 && c < (long long)W) {
            if (tl->active[e] > col_max[c])
                col_max[c] = tl->active[e];
            if (first_in[c] == MSR_CHART_NO_EVENT)
                first_in[c] = e;
        }
        /* Times never go backwards in these files, so columns only grow. */
        CHECK_TRUE_IN(ctx, c >= prev_col);
        prev_col = c;
    }
    /* last_before[c]: the last event in any column before c. */
    int64_t carry = before_window;
    for (size_t c = 0; c < W; c++) {
        last_before[c] = carry;
        int64_t e = first_in[c];
        if (e != MSR_CHART_NO_EVENT) {
            while (e + 1 < (int64_t)tl->n_events &&
                   col_of(ch, msr_chart_event_x(src, ch->x_mode, e + 1)) == (long long)c)
                e++;
            carry = e;
        }
    }
    for (size_t c = 0; c < W; c++) {
        int64_t ev = ch->col_event[c];
        CHECK_TRUE_IN(ctx, ev != MSR_CHART_NO_EVENT);
        if (ev == MSR_CHART_NO_EVENT)
            continue;
        CHECK_EQ_INT_IN(ctx, ch->col_active[c], active_at(tl, ev));
        CHECK_TRUE_IN(ctx, ch->col_active[c] >= col_max[c]);
        bool inside = ev >= 0 && col_of(ch, msr_chart_event_x(src, ch->x_mode, ev)) == (long long)c;
        bool carried = ev == last_before[c];
        CHECK_TRUE_IN(ctx, inside || carried);
        if (first_in[c] == MSR_CHART_NO_EVENT)
            CHECK_EQ_INT_IN(ctx, ev, last_before[c]);
        else if (!carried)
            CHECK_EQ_INT_IN(ctx, ch->col_active[c], col_max[c]);
        BAIL_IF_MANY();
    }
    free(col_max);
    free(last_before);
    free(first_in);
}

/* The stack: groups plus "other" make exactly the column's top, and each band holds the
 * bytes its allocations have alive at the column's state. */
/* The highlights of the chart under test (NULL: none): each leak finding's band holds the
 * bytes of its allocations alive at the column's state. A highlight with a label starts
 * a finding (chart.h). */
static const msr_chart_highlight *stack_hl;
static size_t stack_nhl;

static void check_stack(const char *ctx, const msr_chart *ch, const msr_chart_source *src)
{
    const ms_timeline *tl = src->tl;
    size_t W = ch->n_cols;
    for (size_t c = 0; c < W; c++) {
        int64_t sum = ch->col_other[c];
        CHECK_TRUE_IN(ctx, ch->col_other[c] >= 0);
        for (size_t g = 0; g < ch->n_groups; g++)
            sum += ch->heights[g * W + c];
        CHECK_EQ_INT_IN(ctx, sum, ch->col_active[c]);
        BAIL_IF_MANY();
    }
    if (ch->by != MSR_CHART_BY_ALLOC)
        return;
    int64_t prev_event = INT64_MIN;
    size_t finding = 0;
    for (size_t g = 0; g < ch->n_groups; g++) {
        const msr_chart_group *gr = &ch->groups[g];
        if (gr->kind == MSR_CHART_GROUP_LEAK) {
            /* Leak findings at the bottom, in the order given. */
            CHECK_EQ_INT_IN(ctx, g, finding);
            for (size_t c = 0; c < W; c++) {
                int64_t want = 0;
                for (size_t h = 0, f = 0; h < stack_nhl; h++) {
                    if (h > 0 && stack_hl[h].label)
                        f++;
                    if (f == finding && alive_at(&tl->allocs[stack_hl[h].alloc], ch->col_event[c]))
                        want += (int64_t)tl->allocs[stack_hl[h].alloc].size;
                }
                CHECK_EQ_INT_IN(ctx, ch->heights[g * W + c], want);
            }
            finding++;
            continue;
        }
        CHECK_TRUE_IN(ctx, gr->kind == MSR_CHART_GROUP_ALLOC);
        CHECK_TRUE_IN(ctx, gr->alloc >= 0 && (size_t)gr->alloc < tl->n_allocs);
        const ms_alloc *a = &tl->allocs[gr->alloc];
        /* The viewer's order: a band lies on everything allocated before it. */
        CHECK_TRUE_IN(ctx, a->alloc_event >= prev_event);
        prev_event = a->alloc_event;
        for (size_t c = 0; c < W; c++) {
            int64_t want = alive_at(a, ch->col_event[c]) ? (int64_t)a->size : 0;
            CHECK_EQ_INT_IN(ctx, ch->heights[g * W + c], want);
        }
        BAIL_IF_MANY();
    }
}

/* Round ticks: a 1/2/2.5/5 x 10^k step in the axis unit, starting at zero for y. */
static bool is_nice(double step)
{
    double mag = pow(10.0, floor(log10(step)));
    double m = step / mag;
    return fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 2.5) < 1e-9 ||
           fabs(m - 5) < 1e-9 || fabs(m - 10) < 1e-9;
}

static void check_ticks(const char *ctx, const msr_chart *ch)
{
    CHECK_TRUE_IN(ctx, ch->n_yticks >= 3);
    CHECK_TRUE_IN(ctx, ch->n_xticks >= 2);
    if (ch->n_yticks < 3 || ch->n_xticks < 2)
        return;
    CHECK_EQ_INT_IN(ctx, ch->yticks[0].value, 0);
    double unit = 1;
    while (ch->y_max / (unit * 1024) >= 1)
        unit *= 1024;
    double step = ch->yticks[1].value - ch->yticks[0].value;
    CHECK_TRUE_IN(ctx, is_nice(step / unit));
    for (size_t i = 1; i < ch->n_yticks; i++) {
        CHECK_NEAR_IN(ctx, ch->yticks[i].value - ch->yticks[i - 1].value, step, step * 1e-9);
        CHECK_TRUE_IN(ctx, ch->yticks[i].px < ch->yticks[i - 1].px); /* up the screen */
    }
    CHECK_NEAR_IN(ctx, ch->yticks[ch->n_yticks - 1].value, ch->y_max, step * 1e-6);
    CHECK_NEAR_IN(ctx, ch->yticks[ch->n_yticks - 1].px, ch->plot.y, 1e-6);
    double xstep = ch->xticks[1].value - ch->xticks[0].value;
    CHECK_TRUE_IN(ctx, is_nice(xstep));
    for (size_t i = 0; i < ch->n_xticks; i++) {
        double k = ch->xticks[i].value / xstep;
        CHECK_NEAR_IN(ctx, k, floor(k + 0.5), 1e-6);
        CHECK_TRUE_IN(ctx, ch->xticks[i].px >= ch->plot.x - 1e-6 &&
                               ch->xticks[i].px <= ch->plot.x + ch->plot.w + 1e-6);
    }
}

/* ------------------------------------------------------------------ snapshots */

static void check_file(const char *path, const char *name, void *arg)
{
    (void)arg;
    const char *ctx = path;
    ms_error err;
    ms_snapshot *s;
    ms_timeline *tl;
    int dev;
    if (check_open_timeline(path, &s, &dev, &tl))
        return;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    msr_chart_source src = {.snap = s, .trace = ms_snapshot_trace(s, dev), .tl = tl, .label = base};
    /* What the chart reads from the run: the annotation ranges, and the phases by phase. */
    msr_chart *ch = NULL;
    ms_run *run = NULL;
    if (ms_run_open(&run, s, dev, NULL, &err) ||
        ms_run_annotation_ranges(&src.ranges, &src.n_ranges, run, &err) ||
        ms_run_phases(&src.phases, run, &err)) {
        check_fail("%s: run: %s", path, err.message);
        goto out;
    }

    /* Default chart: time axis, one band per large allocation. */
    msr_chart_spec spec;
    memset(&spec, 0, sizeof spec);
    int rc = msr_chart_build(&ch, &src, &spec, AREA, &err);
    CHECK_EQ_INT_IN(ctx, rc, 0);
    if (rc) {
        fprintf(stderr, "%s: build: %s\n", path, err.message);
        goto out;
    }
    CHECK_EQ_INT_IN(ctx, ch->plot.w, (double)ch->n_cols);
    check_columns(ctx, ch, &src);
    check_stack(ctx, ch, &src);
    check_ticks(ctx, ch);
    CHECK_TRUE_IN(ctx, ch->n_groups > 0 || tl->n_allocs == 0);
    CHECK_TRUE_IN(ctx, ch->n_groups <= MSR_CHART_DEFAULT_TOP_ALLOCS);
    CHECK_TRUE_IN(ctx, ch->n_legend >= 2);
    /* The tallest column is the timeline's peak, and lands on it within a pixel. */
    int64_t tallest = 0;
    for (size_t c = 0; c < ch->n_cols; c++)
        tallest = ch->col_active[c] > tallest ? ch->col_active[c] : tallest;
    if (tl->n_events) {
        CHECK_EQ_INT_IN(ctx, tallest, tl->peak_bytes);
        CHECK_TRUE_IN(ctx, ch->has_peak);
        CHECK_EQ_INT_IN(ctx, ch->peak_bytes, tl->peak_bytes);
        CHECK_NEAR_IN(ctx, ch->peak_py, msr_chart_py(ch, (double)tl->peak_bytes), 1.0);
        CHECK_TRUE_IN(ctx, ch->peak_py >= ch->plot.y && ch->peak_py <= ch->plot.y + ch->plot.h);
        if (tl->peak_event >= 0)
            CHECK_NEAR_IN(ctx, ch->peak_px, msr_chart_px(ch, msr_chart_event_x(&src, ch->x_mode,
                                                                              tl->peak_event)),
                          1.0);
        char want[64];
        msr_chart_format_bytes((double)tl->peak_bytes, want, sizeof want);
        CHECK_TRUE_IN(ctx, strstr(ch->peak_label, want) != NULL);
        CHECK_TRUE_IN(ctx, strstr(ch->title, want) != NULL);
        /* The allocator's own counter, for traces nothing was dropped from. */
        int64_t truth = (int64_t)check_truth_file_counter(name, "requested_bytes.all.peak");
        if (tl->trace_complete && truth >= 0)
            CHECK_EQ_INT_IN(ctx, tallest, truth);
    }
    CHECK_TRUE_IN(ctx, ch->y_max >= (double)tallest);
    int64_t top = tallest > tl->reserved_peak_bytes ? tallest : tl->reserved_peak_bytes;
    CHECK_TRUE_IN(ctx, ch->y_max <= (double)top * 2.5 + 4096);
    CHECK_EQ_INT_IN(ctx, ch->n_ooms, tl->action_counts[MS_ACT_OOM]);
    /* The recording itself (its torch 2.0 rewrites have no annotations and no frames). */
    if (strstr(path, "/gpt2_train")) {
        CHECK_TRUE_IN(ctx, ch->n_lanes >= 1);
        bool forward = false;
        for (size_t i = 0; i < ch->n_names; i++)
            forward = forward || !strcmp(ch->names[i], "## forward ##");
        CHECK_TRUE_IN(ctx, forward);
        CHECK_TRUE_IN(ctx, strstr(ch->legend[0].text, ".py:") != NULL);
    }
    msr_chart_free(ch);
    ch = NULL;

    /* Event axis, by site, zoomed into the middle half. */
    spec.x_mode = MSR_CHART_X_EVENTS;
    spec.by = MSR_CHART_BY_SITE;
    spec.has_from = spec.has_to = true;
    spec.from = (double)(tl->n_events / 4);
    spec.to = (double)(tl->n_events - tl->n_events / 4) + 1;
    rc = msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 400, 1000, 400}, &err);
    CHECK_EQ_INT_IN(ctx, rc, 0);
    if (!rc) {
        CHECK_NEAR_IN(ctx, ch->x_lo, spec.from, 1e-9);
        CHECK_TRUE_IN(ctx, ch->plot.y >= 400);
        check_columns(ctx, ch, &src);
        check_stack(ctx, ch, &src);
        check_ticks(ctx, ch);
        /* Site bands hold exactly their site's live bytes at the column's state. */
        for (size_t g = 0; g < ch->n_groups; g++) {
            for (size_t c = 0; c < ch->n_cols; c += 7) {
                int64_t want = 0;
                for (size_t i = 0; i < tl->n_allocs; i++) {
                    const ms_alloc *a = &tl->allocs[i];
                    uint32_t site = a->stack == MS_NO_STACK ? UINT32_MAX
                                                            : ms_stack_site(s, a->stack);
                    if (site == ch->groups[g].site && alive_at(a, ch->col_event[c]))
                        want += (int64_t)a->size;
                }
                CHECK_EQ_INT_IN(ctx, ch->heights[g * ch->n_cols + c], want);
            }
            BAIL_IF_MANY();
        }
    } else {
        fprintf(stderr, "%s: site build: %s\n", path, err.message);
    }
    msr_chart_free(ch);
    ch = NULL;

    /* By phase: annotation names where annotations exist, the inferred phases' kinds
     * (at most forward, backward, optimizer step) where they do not. */
    memset(&spec, 0, sizeof spec);
    spec.by = MSR_CHART_BY_PHASE;
    size_t n_ann = 0;
    ms_snapshot_annotations(s, &n_ann);
    rc = msr_chart_build(&ch, &src, &spec, AREA, &err);
    if (n_ann == 0) {
        CHECK_EQ_INT_IN(ctx, rc, 0);
        if (!rc) {
            check_stack(ctx, ch, &src);
            CHECK_TRUE_IN(ctx, ch->n_groups <= 3);
            for (size_t g = 0; g < ch->n_groups; g++)
                CHECK_TRUE_IN(ctx, ch->groups[g].kind == MSR_CHART_GROUP_PHASE);
        }
    } else {
        CHECK_EQ_INT_IN(ctx, rc, 0);
        if (!rc) {
            check_stack(ctx, ch, &src);
            CHECK_TRUE_IN(ctx, ch->n_groups >= 1);
        }
    }
    msr_chart_free(ch);
    ch = NULL;

    /* Highlights: a finding (two allocations, one outside the top bands) is one band of
     * its own at the bottom, outlined, with the finding's label. */
    if (tl->n_allocs > 2) {
        memset(&spec, 0, sizeof spec);
        spec.top = 1;
        msr_chart_highlight hl[2] = {{tl->n_allocs - 1, "leak here", false, false}, {0, NULL, false, false}};
        spec.highlights = hl;
        spec.n_highlights = 2;
        rc = msr_chart_build(&ch, &src, &spec, AREA, &err);
        CHECK_EQ_INT_IN(ctx, rc, 0);
        if (!rc) {
            stack_hl = hl;
            stack_nhl = 2;
            check_stack(ctx, ch, &src);
            stack_hl = NULL;
            stack_nhl = 0;
            size_t marked = 0;
            for (size_t g = 0; g < ch->n_groups; g++)
                if (ch->groups[g].highlight) {
                    marked++;
                    CHECK_EQ_INT_IN(ctx, g, 0);
                    CHECK_TRUE_IN(ctx, ch->groups[g].kind == MSR_CHART_GROUP_LEAK &&
                                           ch->groups[g].leak && !ch->groups[g].suspect);
                    CHECK_TRUE_IN(ctx, !strcmp(ch->groups[g].mark, "leak here"));
                }
            CHECK_EQ_INT_IN(ctx, marked, 1);
            CHECK_TRUE_IN(ctx, ch->n_groups <= 2);
        }
        msr_chart_free(ch);
        ch = NULL;
        msr_chart_highlight bad = {tl->n_allocs, "x", false, false};
        spec.highlights = &bad;
        spec.n_highlights = 1;
        CHECK_EQ_INT_IN(ctx, msr_chart_build(&ch, &src, &spec, AREA, &err), MS_ERR_ARG);
    }

    /* Extent agrees with what a chart shows. */
    memset(&spec, 0, sizeof spec);
    double span;
    int64_t bytes;
    CHECK_EQ_INT_IN(ctx, msr_chart_extent(&src, &spec, &span, &bytes, &err), 0);
    CHECK_EQ_INT_IN(ctx, bytes,
                    tl->peak_bytes > tl->reserved_peak_bytes ? tl->peak_bytes
                                                             : tl->reserved_peak_bytes);
out:
    ms_run_free(run);
    msr_chart_free(ch);
    ms_timeline_free(tl);
    ms_snapshot_free(s);
}

/* ------------------------------------------------------------------ hand-made trace */

/* A:100 at t=0, B:50 at t=1, C:30 at t=2, free A at t=3, free C at t=4: B must slide down
 * to 0 when A goes, and the outline must follow exactly. */
static void check_synthetic(void)
{
    const char *ctx = "synthetic";
    uint8_t action[] = {MS_ACT_ALLOC, MS_ACT_ALLOC, MS_ACT_ALLOC, MS_ACT_FREE_COMPLETED,
                        MS_ACT_FREE_COMPLETED};
    uint64_t addr[] = {0x1000, 0x2000, 0x3000, 0x1000, 0x3000};
    uint64_t size[] = {100, 50, 30, 100, 30};
    int64_t time_us[] = {1000000, 2000000, 3000000, 4000000, 5000000};
    uint32_t stack[] = {MS_NO_STACK, MS_NO_STACK, MS_NO_STACK, MS_NO_STACK, MS_NO_STACK};
    uint16_t stream[] = {0, 0, 0, 0, 0};
    ms_trace tr = {0, 5, action, addr, size, time_us, stack, stream, true, NULL, NULL, false, 0};
    int64_t active[] = {100, 150, 180, 80, 50};
    int64_t reserved[] = {200, 200, 200, 200, 200};
    ms_alloc allocs[] = {{0x1000, 100, 0, 3, -1, MS_NO_STACK, 0},
                         {0x2000, 50, 1, -1, -1, MS_NO_STACK, 0},
                         {0x3000, 30, 2, 4, -1, MS_NO_STACK, 0}};
    ms_timeline tl;
    memset(&tl, 0, sizeof tl);
    tl.n_events = 5;
    tl.t_first_us = time_us[0];
    tl.t_last_us = time_us[4];
    tl.active = active;
    tl.reserved = reserved;
    tl.peak_bytes = 180;
    tl.peak_event = 2;
    tl.reserved_peak_bytes = 200;
    tl.trace_complete = true;
    tl.allocs = allocs;
    tl.n_allocs = 3;
    msr_chart_source src = {.snap = NULL, .trace = &tr, .tl = &tl, .label = "synthetic"};
    msr_chart_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.no_legend = true;
    msr_chart *ch = NULL;
    ms_error err;
    int rc = msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 498, 300}, &err);
    CHECK_EQ_INT_IN(ctx, rc, 0);
    if (rc) {
        fprintf(stderr, "synthetic: %s\n", err.message);
        return;
    }
    CHECK_EQ_INT_IN(ctx, ch->n_cols, 400); /* 498 - 82 left - 16 right */
    CHECK_NEAR_IN(ctx, ch->x_hi, 4.0, 1e-12);
    CHECK_EQ_INT_IN(ctx, ch->n_groups, 3);
    check_columns(ctx, ch, &src);
    check_stack(ctx, ch, &src);
    check_ticks(ctx, ch);
    size_t W = ch->n_cols;
    /* Column 350 (x = 3.5 s): A freed, B and... C freed at 4 s is still alive. */
    size_t c = 350;
    CHECK_EQ_INT_IN(ctx, ch->col_event[c], 3);
    CHECK_EQ_INT_IN(ctx, ch->heights[0 * W + c], 0);
    CHECK_EQ_INT_IN(ctx, ch->heights[1 * W + c], 50);
    CHECK_EQ_INT_IN(ctx, ch->heights[2 * W + c], 30);
    CHECK_EQ_INT_IN(ctx, ch->col_active[c], 80);
    /* Column 150 (1.5 s): A then B on top of it. */
    CHECK_EQ_INT_IN(ctx, ch->heights[0 * W + 150], 100);
    CHECK_EQ_INT_IN(ctx, ch->heights[1 * W + 150], 50);
    CHECK_EQ_INT_IN(ctx, ch->col_other[150], 0);
    /* The last column takes the final event at exactly x_hi, but shows the larger state
     * carried into it (80 bytes after event 3 beats 50 after event 4). */
    CHECK_EQ_INT_IN(ctx, ch->col_event[W - 1], 3);
    CHECK_EQ_INT_IN(ctx, ch->col_active[W - 1], 80);
    CHECK_EQ_INT_IN(ctx, ch->col_event[W - 2], 3);
    CHECK_TRUE_IN(ctx, ch->has_peak);
    CHECK_EQ_INT_IN(ctx, ch->peak_bytes, 180);
    CHECK_NEAR_IN(ctx, ch->peak_x, 2.0, 1e-12);
    CHECK_TRUE_IN(ctx, strstr(ch->peak_label, "peak 180 B at 2.00 s") != NULL);
    CHECK_EQ_INT_IN(ctx, ch->legend_rect.w, 0);
    CHECK_TRUE_IN(ctx, !strcmp(ch->legend_title, "largest allocations, by site"));
    CHECK_TRUE_IN(ctx, !strcmp(ch->y_title, "active memory (requested bytes)"));
    msr_chart_free(ch);

    /* Highlights: two findings, B (no label, so no pin) and C, at the bottom in that
     * order; C's pin points at the middle of its first column (200, x = 2 s), on top of
     * B's band. */
    msr_chart_highlight hl[] = {{1, NULL, false, false}, {2, "C leaks", false, false}};
    spec.highlights = hl;
    spec.n_highlights = 2;
    rc = msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 498, 300}, &err);
    CHECK_EQ_INT_IN(ctx, rc, 0);
    if (!rc) {
        CHECK_EQ_INT_IN(ctx, ch->n_groups, 3);
        CHECK_TRUE_IN(ctx, ch->groups[0].highlight && !ch->groups[0].pinned);
        CHECK_TRUE_IN(ctx, ch->groups[1].highlight && ch->groups[1].pinned);
        CHECK_TRUE_IN(ctx, !strcmp(ch->groups[1].mark, "C leaks"));
        CHECK_NEAR_IN(ctx, ch->groups[1].pin_px, ch->plot.x + 200.5, 1e-9);
        CHECK_NEAR_IN(ctx, ch->groups[1].pin_py, msr_chart_py(ch, 50 + 15), 1e-9);
        CHECK_TRUE_IN(ctx, !ch->groups[2].highlight && !ch->groups[2].pinned);
        CHECK_TRUE_IN(ctx, ch->groups[2].kind == MSR_CHART_GROUP_ALLOC);
        msr_chart_free(ch);
    }
    spec.highlights = NULL;
    spec.n_highlights = 0;

    /* Zoom past the end: every column shows the last state. */
    spec.has_from = spec.has_to = true;
    spec.from = 5;
    spec.to = 6;
    rc = msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 498, 300}, &err);
    CHECK_EQ_INT_IN(ctx, rc, 0);
    if (!rc) {
        for (size_t k = 0; k < ch->n_cols; k++)
            CHECK_EQ_INT_IN(ctx, ch->col_event[k], 4);
        msr_chart_free(ch);
    }
    /* An empty window and a tiny area are refused, not drawn wrong. */
    spec.from = 2;
    spec.to = 2;
    CHECK_EQ_INT_IN(ctx, msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 498, 300}, &err),
                    MS_ERR_ARG);
    spec.has_from = spec.has_to = false;
    CHECK_EQ_INT_IN(ctx, msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 50, 30}, &err),
                    MS_ERR_ARG);
    /* Curves missing. */
    tl.active = NULL;
    CHECK_EQ_INT_IN(ctx, msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 498, 300}, &err),
                    MS_ERR_ARG);
}

static void check_numbers(void)
{
    const char *ctx = "numbers";
    char buf[32];
    msr_chart_format_bytes(549285896, buf, sizeof buf);
    CHECK_TRUE_IN(ctx, !strcmp(buf, "523.84 MiB"));
    msr_chart_format_bytes(812, buf, sizeof buf);
    CHECK_TRUE_IN(ctx, !strcmp(buf, "812 B"));
    msr_chart_format_bytes(1.5 * 1024 * 1024 * 1024, buf, sizeof buf);
    CHECK_TRUE_IN(ctx, !strcmp(buf, "1.50 GiB"));
    msr_chart_format_bytes(2181038080.0, buf, sizeof buf);
    CHECK_TRUE_IN(ctx, !strcmp(buf, "2.03 GiB"));
    msr_chart_format_bytes(10.0 * 1024 * 1024 - 1000, buf, sizeof buf);
    CHECK_TRUE_IN(ctx, !strcmp(buf, "10.00 MiB"));
    /* A picture prints a size as the text outputs do ("12.35 MiB", never "12.3 MiB"). */
    static const int64_t SIZES[] = {0, 1023, 1024, 12949914, (int64_t)(12.35 * 1048576), 1152, -5000,
                                    (int64_t)1 << 40, INT64_MAX};
    for (size_t i = 0; i < sizeof SIZES / sizeof SIZES[0]; i++) {
        char want[32];
        ms_format_bytes(SIZES[i], want, sizeof want);
        msr_chart_format_bytes((double)SIZES[i], buf, sizeof buf);
        CHECK_EQ_STR_IN(ctx, buf, want);
    }
    msr_chart_format_bytes(12.35 * 1048576, buf, sizeof buf);
    CHECK_EQ_STR_IN(ctx, buf, "12.35 MiB");
    msr_chart_format_bytes(NAN, buf, sizeof buf);
    CHECK_TRUE_IN(ctx, !strcmp(buf, "?"));
    static const double SPANS[] = {1, 3, 7, 10, 0.013, 523.8, 1e9, 4.6513, 1234567};
    for (size_t i = 0; i < sizeof SPANS / sizeof SPANS[0]; i++)
        for (int t = 2; t <= 12; t++) {
            double step = msr_chart_nice_step(SPANS[i], t);
            CHECK_TRUE_IN(ctx, is_nice(step));
            CHECK_TRUE_IN(ctx, SPANS[i] / step <= t + 1e-9);
            /* The next smaller nice step would need too many ticks. */
            CHECK_TRUE_IN(ctx, SPANS[i] / step > t / 2.6);
        }
    CHECK_NEAR_IN(ctx, msr_chart_nice_step(600, 6), 100, 1e-9);
    CHECK_NEAR_IN(ctx, msr_chart_nice_step(1, 4), 0.25, 1e-12);
    CHECK_NEAR_IN(ctx, msr_chart_nice_step(NAN, 4), 1, 0);
    CHECK_NEAR_IN(ctx, msr_chart_nice_step(-1, 4), 1, 0);
}

int main(void)
{
    check_numbers();
    check_synthetic();
    size_t files = check_each_snapshot(check_file, NULL);
    if (files < 10)
        check_fail("expected the testdata snapshots (10 or more), found %zu", files);
    printf("render geometry: %zu snapshots\n", files);
    return check_finish("test_render_geometry");
}
