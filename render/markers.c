/* Markers of the chart model (see chart_impl.h): the peak, out-of-memory events and the
 * highlighted (leaked) allocations' outlines and label pins. */
#include "chart_impl.h"
#include "memsnap/leaks.h"

int msr_chart_highlights_from_marks(msr_chart_highlight **out, const ms_leak_mark *marks,
                                   size_t n, ms_error *err)
{
    *out = NULL;
    if (n == 0)
        return 0;
    msr_chart_highlight *hl = msr__alloc_n(n, sizeof *hl);
    if (!hl)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for leak highlights");
    for (size_t k = 0; k < n; k++) {
        /* Marks come grouped by finding: a label per allocation would hide the chart (a
         * leak of 24 allocations, the 15 sites of one graph). */
        bool first = !k || marks[k].finding != marks[k - 1].finding;
        hl[k].alloc = marks[k].alloc_index;
        hl[k].label = first ? marks[k].label : NULL;
        hl[k].suspect = marks[k].kind != MS_LEAK_LEAK; /* red is for leak findings */
        hl[k].alive_end = marks[k].kind == MS_LEAK_ALIVE_AT_END;
    }
    *out = hl;
    return 0;
}

/* The first OOM event at or after `e` (tr->n: none). OOMs are rare and every window's
 * chart looks for them: memchr scans the actions many bytes at a time. */
static size_t next_oom(const ms_trace *tr, size_t e)
{
    if (e >= tr->n)
        return tr->n;
    const uint8_t *p = memchr(tr->action + e, MS_ACT_OOM, tr->n - e);
    return p ? (size_t)(p - tr->action) : tr->n;
}

int msr__find_ooms(msr_chart *chart, const msr_chart_source *src, ms_error *err)
{
    const ms_trace *tr = src->trace;
    size_t n = 0;
    for (size_t e = next_oom(tr, 0); e < tr->n; e = next_oom(tr, e + 1))
        n++;
    if (n == 0)
        return 0;
    /* A marker per pixel column at most: an OOM after every allocation would otherwise
     * keep a slot per OOM in every chart the view builds (300,000: 2.4 MB each). */
    size_t cap = n < chart->n_cols ? n : chart->n_cols;
    chart->oom_px = msr__alloc_n(cap ? cap : 1, sizeof *chart->oom_px);
    if (!chart->oom_px)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for OOM markers");
    int64_t last_col = -1;
    for (size_t e = next_oom(tr, 0); e < tr->n; e = next_oom(tr, e + 1)) {
        if (chart->oom_label[0] == '\0') {
            /* The first failure says what was asked and what the device had left. */
            char want[32], left[32];
            msr_chart_format_bytes((double)tr->size[e], want, sizeof want);
            msr_chart_format_bytes((double)tr->addr[e], left, sizeof left);
            snprintf(chart->oom_label, sizeof chart->oom_label, "OOM: asked %s, %s free", want,
                     left);
        }
        int64_t c = msr__column_of(msr__event_x(src, chart->x_mode, (int64_t)e), chart->x_lo,
                                  chart->x_hi, chart->dx, chart->n_cols);
        if (c < 0 || c >= (int64_t)chart->n_cols)
            continue;
        chart->n_ooms++;
        /* One marker per pixel column is all a reader can see; columns only go up (x
         * follows event order), so a full list has every column. */
        if (c == last_col || chart->n_oom_px == cap)
            continue;
        last_col = c;
        chart->oom_px[chart->n_oom_px++] = chart->plot.x + (double)c + 0.5;
    }
    chart->oom_rug = chart->n_oom_px * 8 > chart->n_cols;
    return 0;
}

void msr__find_peak(msr_chart *chart, const msr_chart_source *src)
{
    const int64_t *act = chart->col_active, *ev = chart->col_event;
    chart->has_peak = false;
    size_t best = 0;
    for (size_t c = 0; c < chart->n_cols; c++) {
        if (ev[c] == MSR_CHART_NO_EVENT)
            continue;
        if (!chart->has_peak || act[c] > act[best]) {
            best = c;
            chart->has_peak = true;
        }
    }
    if (!chart->has_peak || act[best] <= 0) {
        chart->has_peak = false;
        return;
    }
    chart->peak_bytes = act[best];
    double x = msr__event_x(src, chart->x_mode, ev[best]);
    if (ev[best] < 0 || x < chart->x_lo)
        x = chart->x_lo + (double)best * chart->dx; /* carried in from before the window */
    chart->peak_x = x;
    chart->peak_px = chart->plot.x + (double)best + 0.5;
    chart->peak_py = msr_chart_py(chart, (double)act[best]);
    char size[32], at[48];
    msr_chart_format_bytes((double)act[best], size, sizeof size);
    msr__format_at(chart, x, at, sizeof at);
    /* The state before the first event (a trace of no events, or one whose recording
     * began after its peak) has no time nor event of its own: say so, as summary does. */
    if (ev[best] < 0)
        snprintf(chart->peak_label, sizeof chart->peak_label,
                 "peak %s before the first recorded event", size);
    else
        snprintf(chart->peak_label, sizeof chart->peak_label, "peak %s at %s", size, at);
}

void msr__find_overlay_peak(msr_chart *chart, const msr_chart_source *srcs)
{
    size_t best_series = 0;
    int64_t best_peak = -1;
    for (size_t i = 0; i < chart->n_series; i++) {
        if (chart->series[i].peak_bytes > best_peak) {
            best_peak = chart->series[i].peak_bytes;
            best_series = i;
        }
    }
    if (best_peak <= 0)
        return;
    const msr_chart_series *s = &chart->series[best_series];
    chart->has_peak = true;
    chart->peak_bytes = best_peak;
    chart->peak_x = s->peak_x;
    chart->peak_px = msr_chart_px(chart, s->peak_x);
    if (chart->peak_px >= chart->plot.x + chart->plot.w)
        chart->peak_px = chart->plot.x + chart->plot.w - 0.5;
    chart->peak_py = msr_chart_py(chart, (double)best_peak);
    char size[32], at[48];
    msr_chart_format_bytes((double)best_peak, size, sizeof size);
    msr__format_at(chart, s->peak_x, at, sizeof at);
    snprintf(chart->peak_label, sizeof chart->peak_label, "peak %s at %s (%s)", size, at,
             srcs[best_series].label ? srcs[best_series].label : "snapshot");
}

/* Where a labelled band's arrow points: the middle of its first column with bytes, on top
 * of the bands stacked below it there. */
size_t msr__band_first_col(const msr_chart *chart, size_t g)
{
    size_t W = chart->n_cols, c = 0;
    const int64_t *h = chart->heights + g * W;
    while (c < W && h[c] <= 0)
        c++;
    return c;
}

static void pin(msr_chart *chart, size_t g)
{
    size_t W = chart->n_cols;
    const int64_t *h = chart->heights + g * W;
    size_t c = msr__band_first_col(chart, g);
    if (c == W)
        return;
    int64_t below = 0;
    for (size_t k = 0; k < g; k++)
        below += chart->heights[k * W + c];
    chart->groups[g].pinned = true;
    chart->groups[g].pin_px = chart->plot.x + (double)c + 0.5;
    chart->groups[g].pin_py = msr_chart_py(chart, (double)below + (double)h[c] / 2);
}

void msr__mark_highlights(msr_chart *chart, const msr_chart_spec *spec, const msr__grouping *gr)
{
    for (size_t h = 0; h < spec->n_highlights; h++) {
        int32_t g = gr->of_alloc[spec->highlights[h].alloc];
        if (g < 0)
            continue;
        chart->groups[g].highlight = true;
        if (spec->highlights[h].label)
            msr__copy_text(chart->groups[g].mark, sizeof chart->groups[g].mark,
                          spec->highlights[h].label);
    }
    for (size_t g = 0; g < chart->n_groups; g++)
        if (chart->groups[g].highlight && chart->groups[g].mark[0])
            pin(chart, g);
}
