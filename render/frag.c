/* The fragmentation panel of the chart model (chart.h, spec.fragmentation): per pixel
 * column of the main plot, the free memory inside reserved segments, the largest free
 * block and the free-block count, each the highest of the column's events, from the
 * allocator replay's series (ms_heap_frag). One pass over the events in the window. */
#include "chart_impl.h"

/* Byte ticks on the left: the main plot's byte axis (msr__byte_axis). */
static void byte_ticks(msr_chart *chart, double top)
{
    if (top < 1024)
        top = 1024;
    int target = (int)msr__clampd(chart->frag_rect.h / 40.0, 2, 6);
    chart->frag_ymax = msr__byte_axis(top, target, chart->frag_yticks, &chart->n_frag_yticks);
    for (size_t k = 0; k < chart->n_frag_yticks; k++) {
        msr_chart_tick *t = &chart->frag_yticks[k];
        t->px = chart->frag_rect.y + chart->frag_rect.h * (1 - t->value / chart->frag_ymax);
    }
}

/* Count ticks on the right: whole numbers. */
static void count_ticks(msr_chart *chart, double top)
{
    if (top < 4)
        top = 4;
    int target = (int)msr__clampd(chart->frag_rect.h / 40.0, 2, 6);
    double step = ceil(msr_chart_nice_step(top, target));
    double steps = ceil(top / step - 1e-9);
    chart->frag_cmax = steps * step;
    chart->n_frag_cticks = 0;
    for (double k = 0; k <= steps + 1e-9 && chart->n_frag_cticks < MSR_CHART_MAX_TICKS; k += 1) {
        msr_chart_tick *t = &chart->frag_cticks[chart->n_frag_cticks++];
        t->value = k * step;
        t->px = chart->frag_rect.y + chart->frag_rect.h * (1 - t->value / chart->frag_cmax);
        snprintf(t->label, sizeof t->label, "%.0f", t->value);
    }
}

int msr__frag_panel(msr_chart *chart, const msr_chart_source *src, ms_error *err)
{
    const ms_heap_frag *f = src->frag;
    const ms_trace *tr = src->trace;
    if (!f || f->n != tr->n)
        return msr__render_fail(err, MS_ERR_ARG,
                               "the fragmentation panel needs the allocator's series of this "
                               "trace (msr_chart_source.frag)");
    size_t W = chart->n_cols;
    chart->frag_free = msr__alloc_n(W, sizeof *chart->frag_free);
    chart->frag_free_low = msr__alloc_n(W, sizeof *chart->frag_free_low);
    chart->frag_largest = msr__alloc_n(W, sizeof *chart->frag_largest);
    chart->frag_blocks = msr__alloc_n(W, sizeof *chart->frag_blocks);
    if (!chart->frag_free || !chart->frag_free_low || !chart->frag_largest || !chart->frag_blocks)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for the fragmentation panel");
    for (size_t c = 0; c < W; c++)
        chart->frag_free[c] = chart->frag_free_low[c] = chart->frag_largest[c] =
            chart->frag_blocks[c] = -1;
    /* The state before each column: the start, then each event's as the pass goes. */
    int64_t cur_free = (int64_t)f->start_free_bytes, cur_large = (int64_t)f->start_largest_free,
            cur_blocks = (int64_t)f->start_free_blocks;
    int64_t col = -1;
    size_t k = 0;
    for (size_t i = 0; i < tr->n; i++) {
        double x = chart->x_mode == MSR_CHART_X_EVENTS ? (double)i
                   : chart->x_mode == MSR_CHART_X_RUN && src->warp
                       ? msr__warp_u_near(src->warp, (double)(tr->time_us[i] - msr__t_first(src)) / 1e6, &k)
                       : msr__event_x(src, chart->x_mode, (int64_t)i);
        int64_t c = msr__column_of(x, chart->x_lo, chart->x_hi, chart->dx, W);
        if (c >= (int64_t)W)
            break;
        if (c >= 0) {
            /* Columns passed over since the last event hold the state it left. */
            for (int64_t q = col + 1; q < c; q++) {
                if (chart->col_event[q] == MSR_CHART_NO_EVENT)
                    continue;
                chart->frag_free[q] = chart->frag_free_low[q] = cur_free;
                chart->frag_largest[q] = cur_large;
                chart->frag_blocks[q] = cur_blocks;
            }
            if (c != col) {
                /* A column starts with the state before its first event. */
                chart->frag_free[c] = chart->frag_free_low[c] = cur_free;
                chart->frag_largest[c] = cur_large;
                chart->frag_blocks[c] = cur_blocks;
                col = c;
            }
        }
        cur_free = (int64_t)f->free_bytes[i];
        cur_large = (int64_t)f->largest_free[i];
        cur_blocks = (int64_t)f->free_blocks[i];
        if (c >= 0) {
            if (cur_free > chart->frag_free[c])
                chart->frag_free[c] = cur_free;
            if (cur_free < chart->frag_free_low[c])
                chart->frag_free_low[c] = cur_free;
            if (cur_large > chart->frag_largest[c])
                chart->frag_largest[c] = cur_large;
            if (cur_blocks > chart->frag_blocks[c])
                chart->frag_blocks[c] = cur_blocks;
        }
    }
    for (int64_t q = col + 1; q < (int64_t)W; q++) {
        if (chart->col_event[q] == MSR_CHART_NO_EVENT)
            continue;
        chart->frag_free[q] = chart->frag_free_low[q] = cur_free;
        chart->frag_largest[q] = cur_large;
        chart->frag_blocks[q] = cur_blocks;
    }
    double top = 0, ctop = 0;
    for (size_t c = 0; c < W; c++) {
        top = fmax(top, (double)chart->frag_free[c]);
        ctop = fmax(ctop, (double)chart->frag_blocks[c]);
    }
    byte_ticks(chart, top * 1.05);
    count_ticks(chart, ctop * 1.05);
    snprintf(chart->frag_title, sizeof chart->frag_title,
             "free inside reserved segments (reserved - allocated blocks)%s",
             f->approximate ? ", approximate: memory from before the first event" : "");
    chart->has_frag = true;
    return 0;
}
