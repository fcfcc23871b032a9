/* A chart's source filled from the file's run (see chart.h): the chart reads the facts
 * every command reads (annotation ranges, phases, iterations, idle stretches, shape,
 * categories, fragmentation, leak marks) and computes none of them itself. */
#include "chart_impl.h"

#include "memsnap/run.h"

bool msr_chart_phases_needed(const ms_annotation_range *ranges, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ranges[i].depth == 0)
            return false;
    return true;
}

unsigned msr_chart_run_needs(const msr_chart_spec *spec)
{
    unsigned needs = MSR_CHART_RUN_STACKED;
    if (spec->by == MSR_CHART_BY_CATEGORY)
        needs |= MSR_CHART_RUN_CATEGORIES;
    if (spec->by == MSR_CHART_BY_PHASE)
        needs |= MSR_CHART_RUN_PHASES;
    if (spec->x_mode == MSR_CHART_X_RUN)
        needs |= MSR_CHART_RUN_AXIS;
    if (spec->fragmentation)
        needs |= MSR_CHART_RUN_FRAG;
    return needs;
}

int msr_chart_source_from_run(msr_chart_source *out, ms_run *run, const char *label,
                             unsigned needs, ms_error *err)
{
    *out = (msr_chart_source){0};
    const ms_snapshot *s = ms_run_snapshot(run);
    const ms_timeline *tl = NULL;
    int rc = ms_run_timeline(&tl, run, err);
    if (rc)
        return rc;
    *out = (msr_chart_source){.snap = s, .trace = ms_snapshot_trace(s, ms_run_device(run)),
                             .tl = tl, .label = label};
    if (needs & (MSR_CHART_RUN_STACKED | MSR_CHART_RUN_PHASES))
        rc = ms_run_annotation_ranges(&out->ranges, &out->n_ranges, run, err);
    if (!rc && (needs & MSR_CHART_RUN_CATEGORIES))
        rc = ms_run_categories(&out->categories, run, err);
    if (!rc && (needs & MSR_CHART_RUN_PHASES) &&
        msr_chart_phases_needed(out->ranges, out->n_ranges))
        rc = ms_run_phases(&out->phases, run, err);
    if (!rc && (needs & MSR_CHART_RUN_FRAG))
        rc = ms_run_fragmentation(&out->frag, run, err);
    if (!rc && (needs & MSR_CHART_RUN_AXIS))
        rc = ms_run_iterations(&out->iterations, run, err);
    if (!rc && (needs & MSR_CHART_RUN_AXIS))
        rc = ms_run_shape(&out->shape, run, err);
    if (!rc && (needs & MSR_CHART_RUN_AXIS))
        rc = ms_run_idle(&out->idle, run, err);
    /* A getter may have built a fuller timeline (categories, fragmentation): the chart
     * reads the one the run holds last. */
    if (!rc)
        rc = ms_run_timeline(&out->tl, run, err);
    return rc;
}

int msr_chart_leaks_from_run(msr_chart_leaks *out, ms_run *run, ms_error *err)
{
    *out = (msr_chart_leaks){0};
    int rc = ms_run_leak_marks(&out->marks, &out->n, run, err);
    if (!rc)
        rc = msr_chart_highlights_from_marks(&out->highlights, out->marks, out->n, err);
    if (rc)
        msr_chart_leaks_free(out);
    return rc;
}

void msr_chart_leaks_free(msr_chart_leaks *l)
{
    if (!l)
        return;
    free(l->highlights);
    ms_leak_marks_free(l->marks);
    *l = (msr_chart_leaks){0};
}
