/* Slices of a trace for the chart pyramid (chart_export.c): the events of one x window as
 * a trace of their own, so charting a window costs its events and allocations, not the
 * whole trace's. Private to render/; the public entry is msr_chart_build_window()
 * (chart_export.h). */
#ifndef MEMSNAP_RENDER_CHART_SLICE_H
#define MEMSNAP_RENDER_CHART_SLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chart.h"

/* A window's events as a trace of their own: a stand-in event at the trace's first time
 * holding the state carried into the window (so x values stay those of the whole trace),
 * then the window's events; its allocations are those alive in it, with their events
 * renumbered. Charts built on it equal charts of the whole trace with the same window. */
#define MSR__SLICER_BLOCK 64

typedef struct msr__slicer {
    const msr_chart_source *src;
    size_t *order;      /* trace allocations by alloc event (NULL: allocs[] order) */
    int64_t *order_ev;  /* their alloc and free events, two per entry: the sweep reads
                           16 bytes of each allocation, in order, not 48 scattered */
    size_t n_order;
    int64_t *block_free; /* per MSR__SLICER_BLOCK entries of order[], their last free
                            event (INT64_MAX: one is never freed) */
    size_t *pre;        /* allocations alive before the trace */
    size_t n_pre;
    bool shared;        /* order, order_ev and pre are another slicer's (read only) */
    int64_t first_oom;  /* the trace's first OOM event, -1 */
    size_t next;        /* sweep position in order[] */
    size_t *alive;      /* positions in order[] allocated before the current window
                           start and alive at it */
    size_t n_alive, cap_alive;
    /* The slice. */
    ms_trace trace;
    ms_timeline tl;
    uint8_t *action;
    uint64_t *addr, *size;
    int64_t *time_us;   /* the curves, addresses and sizes are mostly the trace's own */
    size_t cap_events;
    ms_alloc *allocs;
    size_t *global;     /* slice alloc -> global index */
    size_t *cat_of;     /* slice alloc -> index in the categories' timeline, when the
                           source maps its own allocations (else `global` is that) */
    size_t cap_allocs;
    int32_t *slice_of;  /* global -> slice index, -1 */
    msr_chart_highlight *hl;
    msr_chart_source out;
} msr__slicer;

int msr__slicer_init(msr__slicer *s, const msr_chart_source *src, size_t n_highlights,
                    ms_error *err);
/* A second slicer of the same source for another thread: it reads the first's order of
 * allocations (which must outlive it) instead of sorting its own. */
int msr__slicer_init_shared(msr__slicer *s, const msr__slicer *base, size_t n_highlights,
                           ms_error *err);
void msr__slicer_free(msr__slicer *s);
/* Back to the trace's start: the next cut may be any window. */
void msr__slicer_restart(msr__slicer *s);
/* The slice of events [e0, e1) in s->out (e0 > 0: with the stand-in event first), and
 * the highlights that fall in it (s->hl, *n_hl_out of them). Windows must come in
 * increasing order between msr__slicer_restart() calls.
 *
 * A chart of a slice differs from the whole trace's in two things outside the window:
 * an annotation range left open runs to the slice's last event, not the trace's, and
 * the OOM markers' label names the slice's first OOM, not the trace's. `as_whole` keeps
 * those as the whole trace has them: a second stand-in after the window sits at the
 * trace's last time, and the stand-in before or after the window is the trace's first
 * OOM when that lies on its side of the window (no column shows either stand-in). With
 * `as_whole`, the highlighted allocations outside the window come too (their leak
 * bands, empty, are in the whole trace's chart). */
int msr__slicer_cut(msr__slicer *s, int64_t e0, int64_t e1, bool as_whole,
                   const msr_chart_highlight *hl, size_t n_hl, size_t *n_hl_out, ms_error *err);

/* x (seconds since the first event) of event e of a source with events. */
double msr__slice_x(const msr_chart_source *src, size_t e);
/* First event whose x is at least (strict: above) `x`. */
int64_t msr__slice_first_event(const msr_chart_source *src, double x, bool strict);

#endif
