/* Private to the files that compute the chart model (chart.h): what each of them offers
 * the others. Nothing here draws, prints or is part of render/'s interface; draw.c and
 * callers outside render/ see only chart.h.
 *
 * Who does what, in the order chart.c calls them:
 *   theme.c        colours: the two themes, the band palette, shades of a hue, the
 *                  categories' colours
 *   layout.c       the panel's rectangles (title, lanes, plot, legend), legend entries, titles
 *   xwarp.c        the run axis: which idle stretches become breaks (msr_chart_warp)
 *   scale.c        x positions of events, the x window, y and x scales, ticks, labels,
 *                  the axis's segments and the breaks' labels
 *   lod.c          level of detail: what each pixel column shows (one pass over the trace)
 *   group.c        which allocations make up which band, and the bands' colours
 *   stack.c        band heights per column (one pass over the bands' allocations)
 *   annotations.c  annotation ranges and the lanes drawn above the plot
 *   markers.c      peak, OOM and highlight markers
 *   chart.c        the pipeline (msr_chart_build, msr_chart_build_overlay), msr_chart_free
 *   figure.c       several charts in one image on shared scales (msr_chart_build_figure) */
#ifndef MEMSNAP_RENDER_CHART_IMPL_H
#define MEMSNAP_RENDER_CHART_IMPL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "memsnap/iterations.h"
#include "memsnap/phases.h"
#include "render_util.h"
#include "utf8.h"

/* ------------------------------------------------------------------ small helpers */

/* calloc with the multiplication checked, so no size computed from trace lengths can
 * wrap around into a short buffer. */
static inline void *msr__alloc_n(size_t n, size_t size)
{
    if (n == 0)
        n = 1;
    if (size && n > SIZE_MAX / size)
        return NULL;
    return calloc(n, size);
}

static inline void msr__copy_text(char *dst, size_t cap, const char *src)
{
    src = src ? src : "";
    size_t n = msr__utf8_prefix(src, strlen(src), cap - 1); /* never inside a character */
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static inline double msr__clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* ------------------------------------------------------------------ theme.c */

#define MSR__PALETTE_N ((size_t)12)

/* Band hue k of the palette (k wraps around). */
msr_chart_rgb msr__palette(size_t k);
msr_chart_rgb msr__mix(msr_chart_rgb a, msr_chart_rgb b, double t);
/* `base` lightened or darkened by an amount fixed by `key`, so neighbouring bands of one
 * hue stay tellable apart. */
msr_chart_rgb msr__shade(msr_chart_rgb base, uint64_t key);
msr_chart_theme msr__theme(bool dark);
uint32_t msr__hash32(uint64_t v);
/* The colour of an annotation name: the same name gets the same hue in every chart. */
msr_chart_rgb msr__name_rgb(const char *name);
/* Red and the hues next to it (degrees), kept for leaks and OOMs: no fill uses them. */
#define MSR__RED_HUE_MIN 335.0
#define MSR__RED_HUE_MAX 25.0
msr_chart_rgb msr__hsl(double h_deg, double s, double l);
/* A site's (or any band name's) colour, from its text alone. */
msr_chart_rgb msr__text_rgb(const char *text);
/* The hash that picks it, and the k-th of its 3 x MSR__PALETTE_N colours (hue k % 12,
 * lightness k / 12). */
uint32_t msr__text_hash(const char *text);
msr_chart_rgb msr__text_rgb_variant(size_t k);

/* colour.c: CIEDE2000 between two CIELAB colours and between two sRGB colours. */
double msr__ciede2000(double L1, double a1, double b1, double L2, double a2, double b2);
double msr__delta_e(msr_chart_rgb x, msr_chart_rgb y);
/* Bands one chart shows stay this far apart (CIEDE2000). */
#define MSR__MIN_DELTA_E 12.0
/* The colours of n names shown together: each its own (msr__text_rgb) unless it lies
 * within MSR__MIN_DELTA_E of a name kept before it (names in the order of their hash), or
 * of the theme's background, grey or muted grey; the names that do not keep theirs then
 * take, in the same order, the first candidate colour from a place their hash fixes
 * that keeps the distance to every colour placed (with none, the farthest). Names with
 * shown[i] false (NULL: all shown) keep their own colour and are not placed: slivers
 * nobody tells apart. -1 on no memory (out[] then holds the names' own colours). */
int msr__distinct_colours(msr_chart_rgb *out, const char *const *names, const bool *shown,
                         size_t n, const msr_chart_theme *theme);
/* The panels of one figure coloured together: the names of all of them resolved as one
 * set (msr__distinct_colours), so a site has one colour in every panel. -1 on no memory
 * (each panel then keeps its own). */
int msr__colours_together(msr_chart *const *charts, size_t n);
/* The hue of a colour in degrees, and its saturation (HSL) in *sat when not NULL. */
double msr__hue(msr_chart_rgb c, double *sat);
/* A site's band label ("file:line function", or "(no stack recorded)") and the colour
 * every chart gives it (group.c): a by-site band, a block of the allocator's state. */
void msr__site_label(const ms_snapshot *snap, uint32_t site, char *buf, size_t cap);
msr_chart_rgb msr__site_rgb(const ms_snapshot *snap, uint32_t site);
/* The fixed colour of a category's band (both themes). */
msr_chart_rgb msr__category_rgb(ms_category c);
/* "optimizer state": a category's key as people read it, for legends. */
void msr__category_label(ms_category c, char *buf, size_t cap);

/* ------------------------------------------------------------------ scale.c */

static inline int64_t msr__t_first(const msr_chart_source *src)
{
    return src->trace->n ? src->trace->time_us[0] : src->tl->t_first_us;
}

/* msr_chart_event_x, inline for the loops over every event or allocation. */
static inline double msr__event_x(const msr_chart_source *src, msr_chart_x mode, int64_t event)
{
    if (event < 0)
        event = 0;
    if (mode == MSR_CHART_X_EVENTS)
        return (double)event;
    if ((size_t)event >= src->trace->n)
        return mode == MSR_CHART_X_RUN && src->warp ? msr_chart_warp_u(src->warp, 0.0) : 0.0;
    double t = (double)(src->trace->time_us[event] - msr__t_first(src)) / 1e6;
    return mode == MSR_CHART_X_RUN && src->warp ? msr_chart_warp_u(src->warp, t) : t;
}

/* msr_chart_warp_u for a run of times that mostly grow: *k is the segment the last call
 * found, so a pass over a trace costs a compare or two per event. */
static inline double msr__warp_u_near(const msr_chart_warp *w, double t, size_t *k)
{
    size_t n = w->n_segments;
    if (t < w->t[0] || t >= w->t[n])
        return msr_chart_warp_u(w, t);
    while (*k + 1 < n && t >= w->t[*k + 1])
        (*k)++;
    while (*k > 0 && t < w->t[*k])
        (*k)--;
    size_t s = *k;
    if (!w->gap[s])
        return w->u[s] + (t - w->t[s]);
    return w->u[s] + (t - w->t[s]) / (w->t[s + 1] - w->t[s]) * (w->u[s + 1] - w->u[s]);
}

/* Where the whole trace ends, in x units; never zero so scales stay finite. */
double msr__full_span(const msr_chart_source *src, msr_chart_x mode);
/* x of a trace time: seconds, or the index of the first event at or after it. */
double msr__time_to_x(const msr_chart_source *src, msr_chart_x mode, int64_t t_us);
/* The spec's x window within [0, span]; MS_ERR_ARG when it is empty. */
int msr__window(const msr_chart_spec *spec, double span, double *lo, double *hi, ms_error *err);
/* Every byte axis (the plot's, the fragmentation panel's, the OOM picture's): from 0 to
 * at least `top` bytes in about `target` round steps (msr_chart_nice_step) of the largest
 * binary unit `top` reaches. Fills ticks[0 .. *n) (at most MSR_CHART_MAX_TICKS) with their
 * values in bytes and labels ("0", "250 MiB", "2.5 GiB": the tick variant of
 * msr_chart_format_bytes, as many decimals as the step needs), px left 0 for the caller;
 * returns the axis's top, a whole number of steps. */
double msr__byte_axis(double top, int target, msr_chart_tick *ticks, size_t *n);
/* y_max and the y ticks for data up to data_max bytes (or fit, when larger). */
void msr__y_scale(msr_chart *chart, int64_t data_max, int64_t fit);
/* The x ticks and the x axis title for the chart's window. */
void msr__x_scale(msr_chart *chart);
/* "1.126 s" or "event 1544": an x position in a marker label. */
void msr__format_at(const msr_chart *chart, double x, char *buf, size_t cap);

/* ------------------------------------------------------------------ lod.c */

/* Column of an x value, or -1 before the window / n_cols after it. The last column takes
 * x_hi itself so the final event of an unzoomed time chart is shown. */
static inline int64_t msr__column_of(double x, double x_lo, double x_hi, double dx,
                                    size_t n_cols)
{
    if (!(x >= x_lo))
        return -1;
    if (x > x_hi)
        return (int64_t)n_cols;
    double c = floor((x - x_lo) / dx);
    if (c >= (double)n_cols)
        return (int64_t)n_cols - 1;
    return (int64_t)c;
}

/* Per column: the representative event (ev), the most active (act) and reserved (res)
 * bytes and the fewest active bytes (low) in the column's window; res and low may be
 * NULL. One pass over the trace whatever the pixel count. */
/* One band's run of equal heights: columns [c0, c0 + len) hold h > 0 bytes. */
typedef struct msr__run {
    uint32_t c0, len;
    int64_t h;
} msr__run;

/* Every band's heights as its maximal runs of equal positive bytes, bottom band first
 * (band g's are run[end[g - 1] .. end[g])): what the view's page writes, without a row of
 * n_cols numbers per band. `on` when the sweep left the bands to them: chart->heights
 * then holds only the first `dense_rows` rows, those the highlight markers and their
 * labels read (the highlighted bands and those below them). */
typedef struct msr__band_runs {
    bool on;
    size_t dense_rows;
    msr__run *run;
    size_t n, cap;
    size_t *end;
    size_t cap_end;
} msr__band_runs;

void msr__band_runs_free(msr__band_runs *r);

/* What the pyramid (export_tiles.c) hands a chart it builds beyond msr_chart_build's
 * arguments; NULL members are not given (all NULL: msr_chart_build). */
typedef struct msr__chart_aux {
    /* A chart of the same source and window in another grouping: its columns
     * (representative events, active, reserved, low) instead of aggregating them again
     * (the pyramid's groupings share a window's columns), taken only where its x window
     * and columns are the new chart's. */
    const msr_chart *cols;
    /* The bands' heights as runs where many bands each change in few columns (the
     * chart's other readers, draw.c and chart_json.c, need every row: only the exporter
     * asks for runs). */
    msr__band_runs *runs;
    /* On the time axis, the x of each allocation's alloc and free event (two doubles an
     * allocation, by the whole timeline's index; either is read only for an event the
     * allocation has), and the source's allocations' indices in it (NULL: the same): a
     * slice's x are the whole trace's, and a chart ranks its bands without looking up
     * two times per allocation at random in the events. */
    const double *life_x;
    const size_t *life_global;
} msr__chart_aux;

int msr__chart_build_aux(msr_chart **out, const msr_chart_source *src,
                        const msr_chart_spec *spec, msr_chart_rect area, const msr__chart_aux *aux,
                        ms_error *err);
int msr__aggregate(const msr_chart_source *src, msr_chart_x mode, double x_lo, double x_hi,
                  double dx, size_t n_cols, int64_t *ev, int64_t *act, int64_t *res,
                  int64_t *low, int64_t *hill, ms_error *err);
/* Whether the per-column minimum is worth a line (columns hide whole hills). */
bool msr__show_low(const msr_chart *chart);
/* One overlay series: its per-column curves, colour, peak and label. */
int msr__series(msr_chart *chart, msr_chart_series *s, const msr_chart_source *src, size_t i,
               int64_t *ev, int64_t *data_max, ms_error *err);

/* ------------------------------------------------------------------ annotations.c */

typedef struct msr__range {
    int64_t start_us, end_us;
    uint32_t name; /* string id */
    int depth;
} msr__range;

/* START/END annotations of the trace's device paired into ranges sorted by start; the
 * caller frees *out. */
int msr__build_ranges(const msr_chart_source *src, msr__range **out, size_t *n_out,
                     ms_error *err);
/* The lanes: runs of pixel columns per annotation name, and the names' table. */
int msr__build_lanes(msr_chart *chart, const msr_chart_source *src, const msr__range *r,
                    size_t n_r, ms_error *err);

/* ------------------------------------------------------------------ group.c */

/* Site of a stack, looked up once per stack. */
typedef struct msr__site_cache {
    const ms_snapshot *snap;
    uint32_t *of_stack; /* UINT32_MAX - 1: not yet asked */
    size_t n_stacks;
} msr__site_cache;

/* Per allocation, the group that owns its bytes (-1: the "other" band). */
typedef struct msr__grouping {
    int32_t *of_alloc;
    size_t n_groups;
    const double *life_x;       /* msr__chart_aux's, or NULL */
    const size_t *life_global;
} msr__grouping;

int msr__site_cache_init(msr__site_cache *sc, const ms_snapshot *snap);
void msr__site_cache_free(msr__site_cache *sc);
/* The bands of a stacked chart (chart->groups) by spec->by, their colours and legend
 * entries, and which band each allocation belongs to (gr->of_alloc, filled with -1 by the
 * caller). By category, src->categories must be there (msr__check_categories). By phase
 * with `ph` (the trace has no annotation ranges) the bands are the inferred phases'
 * kinds; else the top-level ranges' names. */
int msr__build_groups(msr_chart *chart, const msr_chart_source *src, const msr_chart_spec *spec,
                     msr__site_cache *sc, const msr__range *r, size_t n_r, const ms_phases *ph,
                     msr__grouping *gr, ms_error *err);

/* A legend entry for each category band that holds bytes somewhere in the window, in
 * stacking order (after msr__sweep_heights: a category with no bytes is not named). */
void msr__legend_categories(msr_chart *chart);

/* ------------------------------------------------------------------ stack.c */

/* chart->heights and chart->col_other from the grouping and the columns' events. */
/* With `runs` (dense_rows set by the caller), the bands as runs when they are many and
 * change in few columns (runs->on); else every row, as without. */
int msr__sweep_heights(msr_chart *chart, const msr_chart_source *src, const msr__grouping *gr,
                      msr__band_runs *runs, ms_error *err);

/* ------------------------------------------------------------------ layout.c */

/* The panel's rectangles inside `area`, n_cols and the lanes' rectangles. */
int msr__layout(msr_chart *chart, msr_chart_rect area, size_t n_lanes, bool legend,
               bool frag, ms_error *err);

/* ------------------------------------------------------------------ frag.c */

/* The fragmentation panel's columns, scales and title (chart->has_frag), from
 * src->frag over the chart's columns. */
int msr__frag_panel(msr_chart *chart, const msr_chart_source *src, ms_error *err);
/* Entries that fit the legend's height (0 without a legend). */
size_t msr__legend_capacity(const msr_chart *chart);
void msr__legend_add(msr_chart *chart, msr_chart_key key, msr_chart_rgb rgb, const char *text);
/* The fixed entries after a stacked chart's bands, and the legend's and axes' titles. */
void msr__legend_finish_stacked(msr_chart *chart, const msr_chart_spec *spec);
void msr__legend_finish_overlay(msr_chart *chart);
void msr__title_stacked(msr_chart *chart, const msr_chart_source *src, const msr_chart_spec *spec);
void msr__title_overlay(msr_chart *chart, const msr_chart_source *srcs, size_t n_srcs,
                       const msr_chart_spec *spec);

/* ------------------------------------------------------------------ markers.c */

int msr__find_ooms(msr_chart *chart, const msr_chart_source *src, ms_error *err);
/* The tallest column of a stacked chart. */
void msr__find_peak(msr_chart *chart, const msr_chart_source *src);
/* The tallest series peak of an overlay. */
void msr__find_overlay_peak(msr_chart *chart, const msr_chart_source *srcs);
/* Marks the highlighted allocations' bands and where their labels' arrows point. */
void msr__mark_highlights(msr_chart *chart, const msr_chart_spec *spec, const msr__grouping *gr);
/* The first pixel column where band g holds bytes; chart->n_cols where it holds none. */
size_t msr__band_first_col(const msr_chart *chart, size_t g);

/* ------------------------------------------------------------------ label_place.c */

/* The labels inside the plot (chart->labels): the OOM's, the peak's, then one per marked
 * band in group order (the order the highlights were given), each clear of the others, of the
 * reserved and peak lines, the OOM markers and the plot's edge; cut with an ellipsis when
 * no place fits it whole, else named in the legend instead. Last step of a build. */
void msr__place_labels(msr_chart *chart);

/* ------------------------------------------------------------------ chart.c */

/* The axis's pieces in pixels (chart->segments) once the window and plot are known, and
 * the breaks' labels. */
void msr__segments(msr_chart *chart);
/* The run axis of a source: its warp, or laid from its idle stretches (none: the
 * identity, no breaks). */
void msr__source_warp(msr_chart_warp *w, const msr_chart_source *src);
/* xwarp.c: *out is src, and for *mode == MSR_CHART_X_RUN carries a warp (src->warp, or one
 * laid into *w); *mode becomes MSR_CHART_X_TIME when that warp has no break, so a run axis
 * with nothing to compress draws exactly as the time axis. */
void msr__run_source(msr_chart_source *out, msr_chart_warp *w, const msr_chart_source *src,
                    msr_chart_x *mode);

/* MS_ERR_ARG unless the source has a trace and a timeline built with the curves (and the
 * allocations, when need_allocs). */
int msr__check_source(const msr_chart_source *src, bool need_allocs, ms_error *err);
/* chart->iters from src->iterations (none without). */
int msr__chart_iterations(msr_chart *chart, const msr_chart_source *src, ms_error *err);

#endif
