/* Annotation lanes of the chart model (see chart_impl.h): record_function START/END
 * annotations paired into ranges, and the runs of pixel columns each name covers in the
 * strips above the plot (depth 0 and 1). */
#include "chart_impl.h"

#include <math.h>

#include "memsnap/phases.h"

/* The run's annotation ranges (msr_chart_source.ranges) on the chart's clock: a range
 * whose START was lost opens at the trace's first event, one never closed runs to its
 * last. */
int msr__build_ranges(const msr_chart_source *src, msr__range **out, size_t *n_out,
                     ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    size_t n = src->ranges ? src->n_ranges : 0;
    if (n == 0)
        return 0;
    const ms_annotation_range *ar = src->ranges;
    msr__range *r = msr__alloc_n(n, sizeof *r);
    if (!r)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for %zu annotations", n);
    int64_t t_first = src->trace->n ? src->trace->time_us[0] : 0;
    int64_t t_end = src->trace->n ? src->trace->time_us[src->trace->n - 1] : 0;
    for (size_t i = 0; i < n; i++)
        r[i] = (msr__range){ar[i].lost_start ? t_first : ar[i].start_us,
                           ar[i].open_end ? t_end : ar[i].end_us, ar[i].name, ar[i].depth};
    *out = r;
    *n_out = n;
    return 0;
}

/* Index into chart->names of a string id, adding it when new; -1 when the table is full
 * (the extra names are simply not drawn). */
#define MAX_NAMES 256
static int name_index(msr_chart *chart, const ms_snapshot *snap, uint32_t *ids, uint32_t id)
{
    for (size_t i = 0; i < chart->n_names; i++)
        if (ids[i] == id)
            return (int)i;
    if (chart->n_names >= MAX_NAMES)
        return -1;
    size_t i = chart->n_names++;
    ids[i] = id;
    const char *text = ms_snapshot_string(snap, id);
    msr__copy_text(chart->names[i], MSR_CHART_TEXT, text);
    chart->name_rgb[i] = msr__name_rgb(text);
    return (int)i;
}

/* The runs of one lane: owner[c] is the name shown in column c, or -1. */
static int lane_runs(msr_chart *chart, size_t lane, const int32_t *owner, ms_error *err)
{
    size_t runs = 0;
    for (size_t c = 0; c < chart->n_cols; c++)
        if (owner[c] >= 0 && (c == 0 || owner[c - 1] != owner[c]))
            runs++;
    chart->lane_runs[lane] = msr__alloc_n(runs, sizeof(msr_chart_lane_run));
    if (!chart->lane_runs[lane])
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for annotation lanes");
    size_t k = 0;
    for (size_t c = 0; c < chart->n_cols; c++) {
        if (owner[c] < 0)
            continue;
        if (c > 0 && owner[c - 1] == owner[c]) {
            chart->lane_runs[lane][k - 1].x1 = chart->plot.x + (double)(c + 1);
            continue;
        }
        chart->lane_runs[lane][k++] = (msr_chart_lane_run){
            chart->plot.x + (double)c, chart->plot.x + (double)(c + 1), (uint32_t)owner[c]};
    }
    chart->n_lane_runs[lane] = k;
    return 0;
}

int msr__build_lanes(msr_chart *chart, const msr_chart_source *src, const msr__range *r,
                    size_t n_r, ms_error *err)
{
    chart->names = msr__alloc_n(MAX_NAMES, sizeof *chart->names);
    chart->name_rgb = msr__alloc_n(MAX_NAMES, sizeof *chart->name_rgb);
    uint32_t *name_ids = msr__alloc_n(MAX_NAMES, sizeof *name_ids);
    int32_t *owner = msr__alloc_n(chart->n_cols, sizeof *owner);
    int rc = 0;
    if (!chart->names || !chart->name_rgb || !name_ids || !owner)
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory for annotation lanes");
    for (size_t lane = 0; lane < chart->n_lanes && !rc; lane++) {
        for (size_t c = 0; c < chart->n_cols; c++)
            owner[c] = -1;
        for (size_t i = 0; i < n_r; i++) {
            if (r[i].depth != (int)lane)
                continue;
            double a = (msr__time_to_x(src, chart->x_mode, r[i].start_us) - chart->x_lo) /
                       chart->dx;
            double b = (msr__time_to_x(src, chart->x_mode, r[i].end_us) - chart->x_lo) /
                       chart->dx;
            if (b < 0 || a >= (double)chart->n_cols)
                continue;
            a = msr__clampd(a, 0, (double)chart->n_cols);
            b = msr__clampd(b, 0, (double)chart->n_cols);
            size_t c0 = (size_t)floor(a);
            size_t c1 = (size_t)ceil(b);
            if (c1 <= c0)
                c1 = c0 + 1; /* a range thinner than a pixel still shows */
            if (c1 > chart->n_cols)
                c1 = chart->n_cols;
            int idx = name_index(chart, src->snap, name_ids, r[i].name);
            if (idx < 0)
                continue;
            for (size_t c = c0; c < c1; c++)
                owner[c] = idx;
        }
        rc = lane_runs(chart, lane, owner, err);
    }
    free(owner);
    free(name_ids);
    return rc;
}
