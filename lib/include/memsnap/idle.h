/* memsnap idle: the stretches of a device's trace where the program made no allocator
 * call for long, told apart from the work of its iterations.
 *
 * One rule decides them for every view: the iterations table (busy time and idle time
 * apart, idle after the last iteration as trailing idle) and the run axis of the charts
 * (whose breaks are exactly these stretches), so a table never calls idle what a chart
 * draws as work, or the other way round. The rule, in the trace's own terms:
 *   - With two or more complete iterations, m is their (lower) median duration. The
 *     set-up before the first iteration is set-up (not idle) and a break of its own when
 *     it lasts longer than m. The rest is cut into pieces: each iteration, the stretches
 *     between them and after the last. A piece longer than its fair share (1.5 m) is
 *     slow: its longest quiet gaps (consecutive events at least m/8 apart) are taken,
 *     longest first, until what remains fits the share. Those gaps are idle, except in
 *     the first iteration, whose slow part is the warm-up of CUDA and its libraries
 *     (set-up, work the program did). The stretch from the first to the last gap taken
 *     in a piece is one candidate break.
 *   - Without iterations, a gap between two events is idle when it is longer than half
 *     of everything else that remains.
 *   - torch.compile's compile phase (the recording's shape, memsnap/shape.h: compiling
 *     and autotuning, minutes of benchmark runs before the step they serve) is set-up,
 *     not idle: each compile window is a candidate break, with iterations when it lasts
 *     longer than m, and no quiet gap inside one counts as idle.
 *   - Candidates that touch, or have less than a break's width of time between them,
 *     merge; at most MS_IDLE_MAX_BREAKS are kept (those that hide the most), and a break
 *     must hide a twentieth of the axis and squeeze its stretch at least four times, or
 *     it is dropped, and its gaps are not counted as idle either. Each break takes
 *     MS_IDLE_BREAK_SHARE of the final axis whatever it hides.
 *
 * Ownership follows memsnap.h: ms_idle_find's result belongs to the caller
 * (ms_idle_free); a run's (ms_run_idle, memsnap/run.h) belongs to the run. */
#ifndef MEMSNAP_IDLE_H
#define MEMSNAP_IDLE_H

#include "memsnap/export.h"
#include "memsnap/iterations.h"
#include "memsnap/memsnap.h"
#include "memsnap/shape.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MS_IDLE_MAX_BREAKS 12
#define MS_IDLE_BREAK_SHARE 0.015 /* of the run axis, per break */

/* Where a quiet gap lies, for the iterations table. */
typedef enum ms_idle_place {
    MS_IDLE_SETUP = 0,  /* before the first iteration, or the warm-up inside it */
    MS_IDLE_BEFORE,     /* between the previous iteration's end and this one's start */
    MS_IDLE_INSIDE,     /* inside the iteration */
    MS_IDLE_TRAILING,   /* after the last iteration */
    MS_IDLE_GAP         /* no iterations: a long gap */
} ms_idle_place;

typedef struct ms_idle_gap {
    int64_t after_event;  /* the gap runs from this event to the next */
    int64_t start_us, end_us;
    ms_idle_place place;
    int64_t iteration;    /* 0-based index into the iterations' items (BEFORE, INSIDE and
                             the first iteration's warm-up), else -1 */
} ms_idle_gap;

/* A stretch the run axis compresses: seconds since the trace's first event. */
typedef struct ms_idle_break {
    double from_s, to_s;
} ms_idle_break;

typedef struct ms_idle {
    size_t n_gaps;
    ms_idle_gap *gaps;        /* the quiet gaps inside the kept breaks, in time order */
    size_t n_breaks;
    ms_idle_break breaks[MS_IDLE_MAX_BREAKS]; /* in time order, disjoint */
    double break_width_s;     /* axis units each break takes; 0 without breaks */
    double span_s;            /* the trace's first to last event, seconds */
    /* Per iteration (items[0 .. n_items) of the iterations, the unfinished one too):
     * idle between the previous iteration and it, idle inside it, and for the first its
     * warm-up; microseconds. NULL when n_items is 0. */
    size_t n_items;
    int64_t *idle_before_us;
    int64_t *idle_inside_us;
    int64_t *setup_us;
    int64_t setup_before_us;  /* set-up before the first iteration, when it is a break */
    int64_t trailing_us;      /* idle after the last iteration */
    int64_t idle_us;          /* every idle gap (not set-up) */
} ms_idle;

/* The quiet stretches of a device trace under its iterations (NULL or none: the rule
 * without iterations) and its shape (NULL: no compile phase). A trace without times has
 * none. */
MS_API int ms_idle_find(ms_idle **out, const ms_trace *trace, const ms_iterations *it,
                        const ms_shape *shape, ms_error *err);
MS_API void ms_idle_free(ms_idle *idle);

#ifdef __cplusplus
}
#endif
#endif
