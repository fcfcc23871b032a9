/* The view's pyramid (chart_export.c), its tiles: one window's chart each, built on the
 * whole trace or a slice of it (chart_slice.c), by up to two threads, and handed to the
 * writer in order (export_tiles.c). Internal to render/. */
#ifndef MEMSNAP_RENDER_EXPORT_TILES_H
#define MEMSNAP_RENDER_EXPORT_TILES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chart_export.h"
#include "chart_impl.h"
#include "chart_slice.h"

/* The groupings the page switches between, in the order they are built: the first also
 * gives the page its frame and takes what the others leave of the budget. */
enum { MODE_ALLOC, MODE_SITE, MODE_CATEGORY, MODE_GROUP, N_MODES };

/* One window's chart. A level's tiles are built by up to two threads (the caller's and a
 * helper, msr_chart_export_opts.limits) and written by the caller in order, so the
 * page's tables number allocations, stacks and strings as one thread would. */
typedef struct tile {
    msr_chart_by by;
    double lo, hi;
    size_t crowded;  /* events sharing a column with the one before, up to the 1% mark */
    size_t n_events; /* the events inside the window */
    msr_chart *ch;    /* its groups' alloc indices are the whole timeline's */
    msr__band_runs runs; /* its bands' heights, when the sweep left them as runs */
    int rc;
    ms_error err;
    bool done;
} tile;

typedef struct builder {
    const msr_chart_source *src;
    const msr_chart_export_opts *o;
    msr_chart_rect area;
    int64_t y_fit;
    tile *t;
    size_t n;
    size_t claimed, written; /* tiles handed out, tiles the writer is done with */
    size_t ahead;            /* charts built but not yet written, at most: their memory */
    bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    msr__slicer *sl[2];       /* one per thread: a slicer sweeps its windows in order */
    /* The run axis with breaks: windows are [lo, hi) in its units (src->warp); NULL: the
     * time axis, windows in seconds. */
    const msr_chart_warp *warp;
    bool count;              /* count the tiles' crowded events */
    /* The crowded events the level's tiles counted so far: once past 1% of the events
     * the level goes deeper whatever the rest count, so they count no more (build_mode
     * reads only whether the sum passes the mark). */
    atomic_size_t crowded_sum;
    /* On the time axis, the x of every allocation's alloc and free event
     * (msr__chart_aux.life_x), or NULL. */
    const double *life_x;
    int level;               /* the level being built (build_mode) */
    /* For plan_along: the groupings wanted, their shares of the budget, their level 0s. */
    const struct mode_out *mode_on;
    const size_t *share;
    const tile *first;
    const int *at;
    /* Per level, whether its windows' columns still split events (1), found by the first
     * grouping to build it (-1 before): the windows are the same in every grouping. */
    signed char deeper[MSR_CHART_EXPORT_MAX_LEVELS];
    /* Later groupings' tiles of a level, built with the first grouping's on the same
     * slice and columns (build_tile) and kept until their grouping's turn (NULL: built
     * then). `with` lists the groupings built along at the level being built. */
    tile *later[N_MODES][MSR_CHART_EXPORT_MAX_LEVELS];
    bool with[N_MODES];
    /* The levels whose windows' charts cost, together, what a few charts of the whole
     * trace do (msr__export_work_levels); deeper levels are not built. */
    int work_levels;
} builder;

/* The chart's area in the page's pixels (the options' size, or 1320 x 560). */
msr_chart_rect msr__export_area(const msr_chart_export_opts *o);
/* The axis's length: seconds, or on the run axis (src->warp set) its units. */
double msr__export_span(const msr_chart_source *src);

/* Builds b->t[0..n) and hands each to `take` in order (NULL: keep them all in the
 * tiles; then `ahead` must be n). Stops at the first tile that failed or that `take`
 * refused; returns that code. */
typedef int (*take_fn)(void *ctx, size_t k, tile *t);
int msr__run_tiles(builder *b, bool two, take_fn take, void *ctx);
void msr__free_tiles(tile *t, size_t n);

/* How many levels (1 to max_levels) the pyramid may build for its charting to stay
 * within a few charts of the whole trace, and its slices within `memory` bytes. A
 * window's chart costs its events and the allocations alive at its start (the slice
 * carries them in), so a trace whose allocations live long would cost windows x lives
 * (500,000 never freed: 2,000 windows of a quarter million each). The levels are counted
 * from level 0 until the lives their windows carry in pass a budget of 2 x (events +
 * allocations) + 4M (a level's events are walked once whatever its windows, so they are
 * not counted), or until the largest window's slice passes the memory: a slice copies
 * its window's events and every allocation alive in it, so an OOM after each of 300,000
 * never-freed allocations (21 MB) made slices of 27 MB a thread. *two is cleared when a
 * slicer per thread would pass the memory where one does not. */
int msr__export_work_levels(const msr_chart_source *src, int max_levels, size_t n_highlights,
                           uint64_t memory, bool *two);

#endif
