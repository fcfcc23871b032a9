/* The chart model as data for the HTML explorer (memsnap view, the report's interactive
 * timeline): a pyramid of charts built by msr_chart_build() — the whole trace at the page's
 * width, then 2, 4, 8 ... windows of it, each a chart of its own at the same width — and
 * written as compact JSON with the tables a tooltip and a stack panel need (allocations,
 * sites, stacks, frames). The page draws what it is given; it groups nothing and picks no
 * level of detail of its own (docs/view.md describes the format).
 *
 * Windows are built from a slice of the trace (the events inside the window, the state
 * carried in from before it, the allocations alive in it), so a level costs one pass over
 * the trace whatever the number of windows, and each window's chart equals the chart
 * `memsnap render --from A --to B` draws for it. The deepest level is chosen so that the
 * output stays within `budget` bytes and no window is finer than its events.
 *
 * Ownership: msr_chart_export_json() hands out a NUL-terminated heap string the caller
 * releases with free(); it keeps nothing of its inputs. */
#ifndef MEMSNAP_RENDER_CHART_EXPORT_H
#define MEMSNAP_RENDER_CHART_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "chart.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Format version of the JSON (docs/view.md); bumped when a key changes meaning. */
#define MSR_CHART_EXPORT_VERSION 1
#define MSR_CHART_EXPORT_MAX_LEVELS 12
#define MSR_CHART_EXPORT_DEFAULT_BUDGET ((size_t)9 * 1024 * 1024)

/* One training iteration, for the iteration strip and tooltips (trace times). */
typedef struct msr_export_iteration {
    int64_t start_us, end_us;
} msr_export_iteration;

/* An instant whose allocator state the page may embed (docs/view.md, "Allocator
 * states"): the state right after `event` (-1: before the first), a label for it, and a
 * priority: when the states' share of the budget runs short, higher numbers go first. */
typedef struct msr_export_instant {
    int64_t event;
    const char *label;
    int priority;
} msr_export_instant;

typedef struct msr_chart_export_opts {
    double width, height;     /* the chart's area in CSS pixels (0: 1320 x 560) */
    size_t budget;            /* bytes of JSON for the whole pyramid (0: the default) */
    int max_levels;           /* 0: MSR_CHART_EXPORT_MAX_LEVELS; 1: the whole trace only */
    /* Bytes the deeper levels' slices of the trace may hold at once (0: the snapshot's
     * decompressed size, at least 16 MiB; without a snapshot, no bound). A level whose
     * largest window would pass it is not built, and one thread builds when a slice per
     * thread would pass it (the page is the same): the window copies its events and every
     * allocation alive in it, which for never-freed allocations is most of the trace. */
    uint64_t slice_memory;
    bool no_site_mode;        /* leave out the by-site pyramid */
    const msr_chart_highlight *highlights; /* outlined as in render --leaks */
    size_t n_highlights;
    const msr_export_iteration *iterations;
    size_t n_iterations;
    /* What each allocation is, for tooltips (the categories analysis): per timeline
     * allocation an index into category_names, or 255 for none. NULL: no categories. */
    const uint8_t *alloc_category;
    const char *const *category_names;
    size_t n_category_names;
    /* The limits the source's snapshot was read with (NULL: ms_limits_default()): their
     * `threads`, the one thread setting, is the most threads building charts at once. 2
     * builds a level's windows on two threads, the page unchanged; below 2, the caller's
     * thread only. */
    const ms_limits *limits;
    /* The x axis, when `x_set`: MSR_CHART_X_RUN or MSR_CHART_X_TIME; unset, the run axis
     * (render's default). On the run axis the pyramid's windows are uniform in axis units
     * of one warp for the whole trace, laid from the run's idle stretches (src->idle,
     * msr_chart_warp_from_idle); a trace without times, or with nothing to compress (or no
     * idle given), gets the time axis's page exactly. */
    msr_chart_x x_mode;
    bool x_set;
    /* The allocator's states at these instants (trace order), rebuilt by one replay each
     * pass and embedded in what the pyramid leaves of the budget, at least a floor the
     * pyramid does without (a 32nd of the budget, a quarter of one under 2 MiB), or in
     * states_budget bytes when it is set. block_categories (NULL: none) gives each block's
     * ms_category (MS_CAT_COUNT: none) of a state, as ms_run_block_categories. */
    const msr_export_instant *instants;
    size_t n_instants;
    size_t states_budget;
    int (*block_categories)(void *ctx, uint8_t *out, const ms_heap *h, ms_error *err);
    void *block_categories_ctx;
} msr_chart_export_opts;

/* Facts about what was written, for logs and tests. */
typedef struct msr_chart_export_stats {
    size_t bytes;
    int levels[4];            /* levels written: [0] by allocation, [1] by site, [2] by
                                 category, [3] by group */
    size_t tiles;             /* charts built */
    size_t allocs, stacks, frames;
    size_t states;            /* allocator states embedded */
    size_t state_bytes;       /* their JSON text */
} msr_chart_export_stats;

/* The chart msr_chart_build() makes of the window spec->from .. spec->to (both given; the
 * time axis, or the run axis in the units of src->warp, which must then be set), built
 * from a slice of the trace: it costs the window's events and allocations, not the
 * trace's. Its groups' alloc indices refer to the whole timeline, its col_event
 * to the whole trace's events. The pyramid builds its windows this way. */
int msr_chart_build_window(msr_chart **out, const msr_chart_source *src, const msr_chart_spec *spec,
                          msr_chart_rect area, ms_error *err);

/* The pyramid of `src` (a stacked chart; MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS) as
 * JSON text: by allocation, by site (unless opts->no_site_mode), when src->categories is
 * given by category, and when src->group_rules has rules by group. `stats` may be NULL. */
int msr_chart_export_json(char **out, msr_chart_export_stats *stats, const msr_chart_source *src,
                         const msr_chart_export_opts *opts, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
