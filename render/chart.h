/* The chart model: what an active-memory chart shows, as plain data — the x window and
 * its pixel columns, the y scale and ticks, the bands (groups) and their heights per
 * column, the curves, annotation lanes, peak / OOM / highlight markers, the legend and
 * the title. Every back-end draws from this and only this: draw.c (cairo: PNG, SVG, the
 * report's in-memory SVG) today, the HTML explorer's data next. A back-end must not
 * recompute anything here (no second grouping, no second level of detail); what it may
 * decide is looks — fonts, line widths, dashes, where text goes.
 *
 * Building it is msr_chart_build() (one file, stacked bands) or msr_chart_build_overlay()
 * (several files, curves on shared axes): the one way from analysis results (a snapshot,
 * its device trace, its timeline) to a chart. How it is computed lives in one file per
 * concern, none of which draws (see chart_impl.h): theme.c (colours), scale.c (x/y
 * scales, ticks, number formatting), lod.c (per-column aggregation), group.c (which
 * allocations form which band), stack.c (band heights per column), annotations.c (lanes),
 * layout.c (rectangles, legend, title), markers.c (peak, OOM, highlight pins), xwarp.c
 * (the run axis: where its breaks go), chart.c
 * (the pipeline, msr_chart_free). msr_chart_build_figure (figure.c) does a whole image of
 * several files: panels on shared scales, or an overlay.
 *
 * Serialising it (for a JSON or HTML exporter): every field below is either a number, a
 * fixed-size NUL-terminated string, or an array whose length is a sibling count field
 * (noted beside it). Coordinates are device pixels of the surface the chart was built
 * for (`area`); byte counts are int64 bytes; x values are in x units (seconds, event
 * index, or the run axis's units, see msr_chart_x). Colours are sRGB components in [0, 1].
 *
 * Ownership: msr_chart_build*() hands out an msr_chart that the caller releases with
 * msr_chart_free(); the chart copies every string it shows, so it does not keep the
 * snapshot or timeline alive, but it must be built while they are.
 *
 * Level of detail: a chart never holds more than a few numbers per pixel column and
 * group, whatever the trace length. Each column stands for one x window and shows the
 * allocator state with the most active bytes inside that window (the "representative
 * event"), so the outline is exactly the per-window maximum of the active curve and a
 * 4M-event trace draws as fast as a 40-event one. */
#ifndef MEMSNAP_RENDER_CHART_H
#define MEMSNAP_RENDER_CHART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memsnap/allocator.h"
#include "memsnap/categories.h"
#include "memsnap/phases.h"
#include "memsnap/shape.h"
#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A column shows nothing: it lies before or outside every state of the trace. */
#define MSR_CHART_NO_EVENT INT64_MIN

#define MSR_CHART_DEFAULT_TOP_ALLOCS 400
#define MSR_CHART_DEFAULT_TOP_GROUPS 12
/* Bounds that keep a chart's memory proportional to pixels, not to the trace. */
#define MSR_CHART_MAX_GROUPS 20000
#define MSR_CHART_MAX_CELLS ((size_t)64 * 1024 * 1024) /* groups x columns */
#define MSR_CHART_MAX_SERIES 16
#define MSR_CHART_MAX_LANES 2
#define MSR_CHART_MAX_TICKS 24
#define MSR_CHART_MAX_LEGEND 40
#define MSR_CHART_TEXT 160

typedef struct msr_chart_rect {
    double x, y, w, h;
} msr_chart_rect;

typedef struct msr_chart_rgb {
    double r, g, b;
} msr_chart_rgb;

typedef enum msr_chart_x {
    MSR_CHART_X_TIME = 0, /* seconds since the first event of the trace */
    MSR_CHART_X_EVENTS,   /* event index; event i spans [i, i+1) */
    MSR_CHART_X_RUN       /* the run axis: seconds, with idle stretches and slow set-up
                            compressed into marked breaks (msr_chart_warp); x units are
                            axis units u = W(seconds) */
} msr_chart_x;

/* The run axis's warp W: a monotone piecewise-linear map from trace time (seconds since
 * the first event) to axis units u. Segments that are not breaks run at one second per
 * unit, so time reads the same everywhere outside a break; a break squeezes a long idle
 * stretch (or a slow set-up) into a narrow piece of fixed share. Columns are uniform in
 * u, so a window [from, to] in u (spec->from/to with MSR_CHART_X_RUN) zooms across breaks
 * like any other. Outside [t[0], t[n_segments]] W runs on at one second per unit.
 * Times are seconds since the first event of the trace it was found from: a source over
 * a slice of that trace (its own first event later) needs the knots shifted to match.
 * Plain data: it can be copied and serialised as it is. */
#define MSR_CHART_MAX_BREAKS 12 /* MS_IDLE_MAX_BREAKS */
#define MSR_CHART_MAX_SEGMENTS (2 * MSR_CHART_MAX_BREAKS + 1)
typedef struct msr_chart_warp {
    size_t n_segments;                    /* 1 .. MSR_CHART_MAX_SEGMENTS */
    double t[MSR_CHART_MAX_SEGMENTS + 1];  /* knots, seconds, strictly increasing */
    double u[MSR_CHART_MAX_SEGMENTS + 1];  /* the knots' axis units, strictly increasing */
    bool gap[MSR_CHART_MAX_SEGMENTS];      /* segment k = [t[k], t[k+1]] is a break */
    size_t n_breaks;                      /* segments with gap set */
} msr_chart_warp;

struct ms_iterations;
struct ms_idle;
/* The run axis of a device trace: its breaks are the quiet stretches the library finds
 * (memsnap/idle.h). msr_chart_warp_from_idle lays it from stretches already found (a
 * run's, ms_run_idle: what every chart reads, so the iterations table and the chart read
 * one finding); NULL gives the identity (one segment, no break). msr_chart_warp_find is
 * the low-level way for a trace without a run: the stretches found from its times and,
 * when given, its iterations and shape (its compile phase, set-up compressed like the
 * start; NULL: none). A trace without times, or one where nothing needs compressing,
 * gets the identity. */
int msr_chart_warp_find(msr_chart_warp *out, const ms_trace *trace,
                       const struct ms_iterations *it, const ms_shape *shape, ms_error *err);
int msr_chart_warp_from_idle(msr_chart_warp *out, const struct ms_idle *idle);
/* u of a time in seconds, and the time of an axis position (the inverse). */
double msr_chart_warp_u(const msr_chart_warp *w, double t);
double msr_chart_warp_t(const msr_chart_warp *w, double u);

typedef enum msr_chart_by {
    MSR_CHART_BY_ALLOC = 0, /* one band per large allocation, stacked as PyTorch's viewer */
    MSR_CHART_BY_SITE,      /* one band per allocation site */
    MSR_CHART_BY_PHASE,     /* one band per top-level annotation name; without annotations
                              one per inferred phase kind (forward, backward, optimizer) */
    MSR_CHART_BY_CATEGORY,  /* one band per category (memsnap/categories.h), fixed order
                              and colours; needs msr_chart_source.categories */
    MSR_CHART_BY_COMPILE,   /* one band per compile context (ms_trace.compile_context), and
                              one for allocations made outside any (eager); MS_ERR_ARG
                              for a trace that carries none */
    MSR_CHART_BY_GROUP      /* one band per user rule (msr_chart_source.group_rules), in
                              the rules' order, and "other" for what none matches */
} msr_chart_by;

/* --group NAME=REGEX rules: an allocation belongs to the first rule whose PCRE2 pattern
 * matches any frame of its stack written as "file:line function" (the frame's whole file
 * name and function; "file function" when the file gave no line); none: "other".
 * Patterns are bytes, never UTF-8 mode. Every step is bounded (docs/security.md
 * "Patterns"); reaching a bound is MS_ERR_LIMIT with the rule's name and the bound. */
#define MSR_CHART_MAX_RULES 16
#define MSR_CHART_RULE_MAX_PATTERN 4096        /* bytes of one pattern */
#define MSR_CHART_RULE_NEST_LIMIT 64           /* nested parentheses (PCRE2: 250) */
#define MSR_CHART_RULE_COMPILE_MEMORY (16 << 20) /* bytes one compilation may allocate */
#define MSR_CHART_RULE_MAX_COMPILED 65536      /* bytes of compiled pattern */
#define MSR_CHART_RULE_MATCH_LIMIT 1000000     /* backtracking steps of one match (PCRE2: 10M) */
#define MSR_CHART_RULE_DEPTH_LIMIT 100000      /* nested backtracking points (interpreter) */
#define MSR_CHART_RULE_HEAP_LIMIT_KIB 32768    /* heap of one match (interpreter), KiB */
#define MSR_CHART_RULE_JIT_STACK (4 << 20)     /* JIT stack, bytes */
/* Per file: a match may take STEPS_BASE + STEPS_PER_BYTE x its text's bytes; beyond that
 * it draws on EXTRA_STEPS shared by every match of the file. The rules together read at
 * most TEXT_BASE + TEXT_PER_BYTE x the file's bytes of frame text. */
#define MSR_CHART_RULE_STEPS_BASE 32
#define MSR_CHART_RULE_STEPS_PER_BYTE 2
#define MSR_CHART_RULE_EXTRA_STEPS 16000000
#define MSR_CHART_RULE_TEXT_BASE ((uint64_t)64 << 20)
#define MSR_CHART_RULE_TEXT_PER_BYTE 64
typedef struct msr_chart_group_rules {
    size_t n;
    char name[MSR_CHART_MAX_RULES][64];
    void *code[MSR_CHART_MAX_RULES]; /* compiled pcre2_code, owned */
    void *mem[MSR_CHART_MAX_RULES];  /* the allocator it frees itself through, owned */
} msr_chart_group_rules;

/* Adds "NAME=REGEX"; MS_ERR_ARG with the reason for a missing '=', an empty name, a bad
 * pattern or too many rules, MS_ERR_LIMIT for a pattern too long or too large. */
int msr_chart_group_rules_add(msr_chart_group_rules *rules, const char *text, ms_error *err);
void msr_chart_group_rules_free(msr_chart_group_rules *rules);
/* The rule of every stack that an allocation of `tl` has: (*out)[stack] is 0 .. n-1, or
 * -1 for none (and for the stacks no allocation of `tl` has); ms_snapshot_stack_count
 * entries, the caller frees them. Each distinct frame is matched once, by the rules in
 * order up to the first that matches; a stack's rule is the lowest of its frames'.
 * MS_ERR_LIMIT naming the rule and the limit when a match reaches one. */
int msr_chart_group_rules_classify(const msr_chart_group_rules *rules, const ms_snapshot *snap,
                                  const ms_timeline *tl, int8_t **out, ms_error *err);

/* An allocation to draw with a band of its own, outlined in red, and with a label, an
 * arrow to where the band starts (the leaks command passes the allocations it blames;
 * labelling one allocation per site keeps the picture readable). */
typedef struct msr_chart_highlight {
    size_t alloc;      /* index into the timeline's allocs[] */
    const char *label; /* copied; NULL: outline only, no arrow. A highlight with a label
                          starts a finding: it and the label-less ones after it share one
                          outlined band (a graph leak of 486 allocations is one region) */
    bool suspect;      /* a suspect, not a leak finding: a neutral outline, never red */
    bool alive_end;    /* with suspect: what one forward left alive at the end (no leak) */
} msr_chart_highlight;

struct ms_leak_mark;
/* The leak marks of a run (ms_leak_marks_from_report) as highlights, one rule for every
 * picture that outlines leaks (render --leaks, the report's timeline, the view): every
 * allocation outlined, a finding labelled once (at its first mark), suspects neutral
 * (what one forward left alive at the end flagged alive_end).
 * The labels point into `marks`, which must outlive the highlights; *out is NULL for no
 * marks and is released with free(). */
int msr_chart_highlights_from_marks(msr_chart_highlight **out, const struct ms_leak_mark *marks,
                                   size_t n, ms_error *err);

typedef struct msr_chart_spec {
    msr_chart_x x_mode;
    msr_chart_by by;
    size_t top;               /* bands (alloc) or groups (site, phase); 0: the default */
    bool has_from, has_to;    /* x window in x units; absent: the whole trace */
    double from, to;
    int64_t y_fit;            /* the y scale fits at least this many bytes (0: the data);
                                 panels pass one shared value so they compare */
    const char *title;        /* NULL: "file · cuda:N · peak … · reserved peak …" */
    bool dark;
    bool no_legend;
    /* A trace without times is drawn over events whatever x_mode asks; true keeps
     * MSR_CHART_X_TIME on its event-index clock (the view's export, which labels those
     * instants as events itself). */
    bool keep_time_axis;
    const msr_chart_highlight *highlights;
    size_t n_highlights;
    /* A lower panel over the same x axis: the free memory inside reserved segments, the
     * largest free block and the free-block count (needs msr_chart_source.frag; stacked
     * charts of a whole trace only). */
    bool fragmentation;
} msr_chart_spec;

/* One file's data: what the chart reads, complete. Nothing here is computed by the
 * chart: a field left NULL (or a count left 0) means the chart shows none of it, and a
 * grouping or axis that needs a missing field fails with MS_ERR_ARG naming it. Fill it
 * from the file's run with msr_chart_source_from_run (below), so a chart reads the same
 * facts as every command. The timeline needs MS_TIMELINE_CURVES, and MS_TIMELINE_ALLOCS
 * for stacked charts (overlays draw only curves). */
typedef struct msr_chart_source {
    const ms_snapshot *snap; /* NULL: no site names or stream info */
    const ms_trace *trace;   /* the timeline's device trace (times, actions) */
    const ms_timeline *tl;
    const char *label;       /* usually the file's base name */
    /* The device's annotation ranges (ms_run_annotation_ranges): the lanes above the
     * plot and, by phase, the bands. n_ranges 0: none. Times are absolute, so a chart of
     * a slice of the trace reads the same ranges. */
    const ms_annotation_range *ranges;
    size_t n_ranges;
    /* What each allocation is, for MSR_CHART_BY_CATEGORY (ms_run_categories); only that
     * grouping needs it. */
    const ms_categories *categories;
    /* Per allocation of `tl`, its index in the timeline the categories were built from;
     * NULL when `tl` is that timeline. A chart of a slice of the trace (chart_export.c)
     * sets it. */
    const size_t *category_alloc;
    /* The run's phases (ms_run_phases): MSR_CHART_BY_PHASE draws them when the trace has
     * no top-level annotation range (msr_chart_phases_needed). */
    const ms_phases *phases;
    /* The run's iterations (memsnap/iterations.h), for the chart model's iteration spans;
     * NULL: none shown. */
    const struct ms_iterations *iterations;
    /* --by group: the user's rules, matched against each allocation's frames. */
    const struct msr_chart_group_rules *group_rules;
    /* Their result per stack of `snap` (msr_chart_group_rules_classify); NULL: each chart
     * classifies its allocations' stacks itself. Pass it when many charts are built from
     * one file (the view's pyramid finds it once). */
    const int8_t *group_of_stack;
    /* The run's quiet stretches (ms_run_idle) the run axis is laid from; NULL (with no
     * `warp`): no breaks, the run axis is the time axis. */
    const struct ms_idle *idle;
    /* MSR_CHART_X_RUN: the trace's warp (msr_chart_warp_from_idle); NULL: laid from
     * `idle`. Pass it when the window was given in seconds and converted with it. */
    const msr_chart_warp *warp;
    /* The recording's shape (memsnap/shape.h): its compile phase is compressed on the run
     * axis like the set-up, and the title names a CUDA-graph pool; NULL: neither. */
    const ms_shape *shape;
    /* The allocator's fragmentation after every event of `trace` (ms_heap_frag_build,
     * ms_run_fragmentation), for spec.fragmentation; NULL otherwise. */
    const ms_heap_frag *frag;
} msr_chart_source;

struct ms_run;
/* What msr_chart_source_from_run reads from the run besides the snapshot, trace and
 * timeline (the curves, all an overlay draws). */
enum {
    MSR_CHART_RUN_STACKED = 1u << 0,    /* annotation ranges: lanes and phase bands */
    MSR_CHART_RUN_CATEGORIES = 1u << 1, /* the categories (by category, tooltips) */
    MSR_CHART_RUN_PHASES = 1u << 2,     /* the phases, when msr_chart_phases_needed */
    MSR_CHART_RUN_AXIS = 1u << 3,       /* iterations, idle stretches and shape */
    MSR_CHART_RUN_FRAG = 1u << 4        /* the allocator's fragmentation series */
};
/* What a stacked chart of `spec` reads: MSR_CHART_RUN_STACKED and what its grouping, axis
 * and panels need. */
unsigned msr_chart_run_needs(const msr_chart_spec *spec);
/* *out from the run's getters: every field `needs` names, the others NULL (group rules
 * are the caller's to add). The run must outlive the source. */
int msr_chart_source_from_run(msr_chart_source *out, struct ms_run *run, const char *label,
                             unsigned needs, ms_error *err);
/* Whether a chart by phase draws the phases: the trace has no top-level (depth 0)
 * annotation range, so the ranges cannot make the bands. */
bool msr_chart_phases_needed(const ms_annotation_range *ranges, size_t n);

/* The leak marks of a run (ms_run_leak_marks) and their highlights
 * (msr_chart_highlights_from_marks), which point into the marks: what render --leaks,
 * the report's timeline and the view outline. n == 0: no marks. */
typedef struct msr_chart_leaks {
    struct ms_leak_mark *marks;
    msr_chart_highlight *highlights;
    size_t n;
} msr_chart_leaks;
int msr_chart_leaks_from_run(msr_chart_leaks *out, struct ms_run *run, ms_error *err);
void msr_chart_leaks_free(msr_chart_leaks *l);

typedef enum msr_chart_group_kind {
    MSR_CHART_GROUP_ALLOC = 0, /* one allocation */
    MSR_CHART_GROUP_SITE,
    MSR_CHART_GROUP_PHASE,
    MSR_CHART_GROUP_CATEGORY,
    MSR_CHART_GROUP_COMPILE,
    MSR_CHART_GROUP_LEAK,      /* the allocations of one leak finding (or suspect) */
    MSR_CHART_GROUP_USER       /* --by group: one of the user's --group rules */
} msr_chart_group_kind;

/* A band: stacked in array order, bottom first, with "other" on top of them all. */
typedef struct msr_chart_group {
    msr_chart_group_kind kind;
    int64_t alloc;           /* allocs[] index for MSR_CHART_GROUP_ALLOC, else -1 */
    uint32_t site;           /* frame id of its site, UINT32_MAX when unknown */
    ms_category category;    /* MSR_CHART_GROUP_CATEGORY: which one (else meaningless) */
    int legend;              /* legend entry that names its colour, -1 for none */
    bool highlight;          /* outline it */
    bool leak;               /* a leak finding's band: outlined in red */
    bool suspect;            /* a suspect's band: outlined in a neutral colour */
    bool alive_end;          /* ... of what one forward left alive at the end */
    char mark[MSR_CHART_TEXT]; /* highlights: text at an arrow to where it starts, or "" */
    bool pinned;             /* mark[0] and the band shows somewhere: the arrow points at */
    double pin_px, pin_py;   /* the middle of its first column with bytes (pixels) */
    msr_chart_rgb fill;
    /* The colour of what it belongs to (its site, phase, rule, category), as the legend
     * shows it; an allocation's fill is a shade of its site's. The colours of the bands
     * one chart shows taller than 1.5 px stay MSR__MIN_DELTA_E (CIEDE2000 12) apart. */
    msr_chart_rgb key_rgb;
    int key_index;           /* its name in key_names[] (what key_rgb is the colour of), or
                                -1 for a fixed colour (categories, rules, leaks) */
    uint64_t shade_key;      /* an allocation's band: what picks its shade of key_rgb */
    double score;            /* bytes x lifetime in the window, what ranked it (0 for
                                category bands: their order is fixed) */
    char label[MSR_CHART_TEXT];
} msr_chart_group;

typedef enum msr_chart_key {
    MSR_CHART_KEY_SWATCH = 0, /* filled square */
    MSR_CHART_KEY_LINE,       /* solid line */
    MSR_CHART_KEY_DASH,       /* dashed line */
    MSR_CHART_KEY_DOT         /* a marker */
} msr_chart_key;

typedef struct msr_chart_legend_entry {
    msr_chart_key key;
    msr_chart_rgb rgb;
    char text[MSR_CHART_TEXT];
} msr_chart_legend_entry;

typedef struct msr_chart_tick {
    double value; /* bytes for y, x units for x */
    double px;    /* device position along its axis */
    char label[32];
} msr_chart_tick;

/* A stretch of pixel columns that one annotation name covers in a lane. */
typedef struct msr_chart_lane_run {
    double x0, x1;   /* pixels */
    uint32_t name;   /* index into names[] */
} msr_chart_lane_run;

/* One overlaid file: its curve per column. */
typedef struct msr_chart_series {
    int64_t *active;   /* n_cols, per-column max (MSR_CHART_NO_EVENT columns hold -1) */
    int64_t *reserved; /* n_cols, per-column max, or NULL */
    msr_chart_rgb rgb;
    int64_t peak_bytes;
    double peak_x;
    char label[MSR_CHART_TEXT];
} msr_chart_series;

typedef struct msr_chart_theme {
    msr_chart_rgb bg, fg, muted, grid, other, reserved, peak, oom, highlight, outline;
} msr_chart_theme;
/* The theme's colours in that order, X(name) each, for code that lists them all (the
 * interactive page's theme). */
#define MSR_CHART_THEME_COLOURS(X)                                                            \
    X(bg) X(fg) X(muted) X(grid) X(other) X(reserved) X(peak) X(oom) X(highlight) X(outline)

/* A text the chart shows inside the plot, placed by the model (label_place.c) so that no
 * two overlap and none crosses the reserved or peak line or the plot's edge. */
typedef enum msr_chart_label_kind {
    MSR_CHART_LABEL_PEAK = 0,
    MSR_CHART_LABEL_LEAK,
    MSR_CHART_LABEL_OOM,
    MSR_CHART_LABEL_ANNOTATION,
    MSR_CHART_LABEL_OTHER
} msr_chart_label_kind;

#define MSR_CHART_MAX_LABELS 16

typedef struct msr_chart_label {
    msr_chart_label_kind kind;
    char text[MSR_CHART_TEXT + 32]; /* as drawn: ends in an ellipsis when it was cut */
    msr_chart_rect box;             /* device pixels; the text's baseline is box.y+box.h-4 */
    double font_px;                /* bold, this size */
    bool leader;                   /* a line from (lx, ly) on the box to (ax, ay) */
    double ax, ay, lx, ly;
    msr_chart_rgb rgb;
} msr_chart_label;

/* A piece of the x axis inside the window, left to right: the whole plot for the time and
 * events axes, the run axis's segments (msr_chart_warp) for MSR_CHART_X_RUN. */
typedef struct msr_chart_segment {
    double px0, px1;     /* pixels */
    double from, to;     /* seconds (event index on the events axis) */
    bool gap;            /* a break: drawn hatched, with `label` under the axis */
    char label[32];      /* a break's duration, "⋯ 3.6 s"; "" otherwise */
    double label_x, label_w; /* the label's centre and estimated width (pixels) */
} msr_chart_segment;

/* One iteration of the run inside the window, in pixels. */
typedef struct msr_chart_iter {
    size_t index; /* 0-based, as memsnap iterations numbers them */
    double px0, px1;
} msr_chart_iter;

typedef struct msr_chart {
    msr_chart_rect area;  /* the panel */
    msr_chart_rect plot;  /* the data area; plot.w == n_cols exactly */
    msr_chart_theme theme;
    msr_chart_x x_mode;   /* MSR_CHART_X_RUN only when the warp has a break; a run axis
                            with nothing to compress is the time axis (run_axis says) */
    bool run_axis;       /* the run axis was asked for (and the trace has times) */
    msr_chart_warp warp;  /* MSR_CHART_X_RUN: the warp the x units come from */
    bool event_clock;    /* MSR_CHART_X_TIME over a trace without times: x is event / 1e6 */
    msr_chart_by by;
    bool overlay;

    /* The x window: column c covers [x_lo + c*dx, x_lo + (c+1)*dx) in x units (the last
     * column also takes x_hi itself). */
    double x_lo, x_hi, dx;
    size_t n_cols;
    /* The axis's pieces inside the window (one unless the run axis has breaks in it). */
    msr_chart_segment segments[MSR_CHART_MAX_SEGMENTS];
    size_t n_segments;
    double y_max;        /* bytes at the top of the plot, a multiple of the tick step */

    /* Per column, n_cols each (stacked charts; NULL in overlays). */
    int64_t *col_event;    /* representative event, -1 = the state before the first
                              event, MSR_CHART_NO_EVENT = nothing to show */
    int64_t *col_active;   /* max active bytes in the window = the top of the stack */
    int64_t *col_reserved; /* max reserved bytes in the window, or NULL */
    int64_t *col_other;    /* the "other" band: col_active minus the groups below */
    int64_t *col_low;      /* min active bytes in the window: where a column holds many
                              events (a training step narrower than a pixel), memory
                              swings between this and the top */
    int64_t *col_hill;     /* how far the top rises above both the state the column
                              starts in and the one it ends in: a whole hill (a step
                              rising and falling back) narrower than the column */
    bool show_low;         /* hills narrower than a pixel: the minimum line is worth it */

    /* The bands, bottom first; "other" (col_other) goes on top of them all. */
    size_t n_groups;
    msr_chart_group *groups;  /* n_groups */
    /* The names the bands' colours belong to (sites, phases, compile contexts), and
     * whether a band of each shows (over 1.5 px, or named in the legend): what a figure
     * of several panels resolves together so a name has one colour in all of them. */
    size_t n_key_names;
    char (*key_names)[MSR_CHART_TEXT]; /* n_key_names */
    bool *key_shown;                  /* n_key_names */
    int64_t *heights;      /* n_groups x n_cols bytes, heights[g * n_cols + c] */

    /* Overlays: one curve pair per file (n_series == 0 for stacked charts). */
    size_t n_series;
    msr_chart_series series[MSR_CHART_MAX_SERIES];

    /* Ticks: value in bytes (y) or x units (x), px the device position along the axis. */
    msr_chart_tick yticks[MSR_CHART_MAX_TICKS];
    size_t n_yticks;
    msr_chart_tick xticks[MSR_CHART_MAX_TICKS];
    size_t n_xticks;
    char x_title[64];
    char y_title[64];

    /* The largest column; for an unzoomed chart it is the timeline's peak. */
    bool has_peak;
    int64_t peak_bytes;
    double peak_x;       /* x units of the peak's event */
    double peak_px, peak_py;
    char peak_label[MSR_CHART_TEXT];

    double *oom_px;      /* n_oom_px: x pixel of each column that holds an OOM event */
    size_t n_oom_px;
    uint64_t n_ooms;     /* OOM events in the window (several may share a column) */
    /* OOMs in more than an eighth of the columns: drawn as their marks along the top
     * only, since a dashed line down every such column would hide the bands (an OOM
     * after each allocation filled the plot with red). */
    bool oom_rug;
#define MSR_CHART_OOM_MARK_H 9.0 /* an OOM mark's height, down from the plot's top */
    char oom_label[MSR_CHART_TEXT]; /* about the first OOM in the window */

    /* Annotation ranges (depth 0 and 1), drawn as strips above the plot. */
    size_t n_lanes;
    msr_chart_rect lane_rect[MSR_CHART_MAX_LANES];
    msr_chart_lane_run *lane_runs[MSR_CHART_MAX_LANES]; /* n_lane_runs[lane] each */
    size_t n_lane_runs[MSR_CHART_MAX_LANES];
    char (*names)[MSR_CHART_TEXT]; /* n_names annotation names, what lane runs point at */
    msr_chart_rgb *name_rgb;       /* n_names: each name's colour */
    size_t n_names;

    msr_chart_rect legend_rect;     /* w == 0: no legend */
    double legend_row;             /* pixels per entry; entries start 22 px below the top */
    char legend_title[64];         /* the heading above the entries */
    msr_chart_legend_entry legend[MSR_CHART_MAX_LEGEND]; /* n_legend; groups[].legend */
    size_t n_legend;                                  /* points into it */

    char title[512];
    msr_chart_rect title_rect;

    /* Texts inside the plot (peak, OOM, leak callouts), placed clear of each other and
     * of the lines; labels that found no room are counted in n_hidden_labels (the legend
     * says "+N more"). */
    msr_chart_label labels[MSR_CHART_MAX_LABELS];
    size_t n_labels;
    size_t n_hidden_labels;

    /* The run's iterations inside the window (n_iters; NULL when none were given). */
    msr_chart_iter *iters;
    size_t n_iters;

    /* The fragmentation panel (spec.fragmentation): under the plot, its own rectangle with
     * the plot's x and width, so column c lies at the same pixels in both. Per column the
     * highest value of the column's events (a column between events carries the state
     * before it; -1: nothing to show): the free bytes inside reserved segments (reserved
     * minus the active blocks), the largest free block, the free-block count; and the
     * lowest free bytes (frag_free_low: where a column holds many events, the free memory
     * swings between the two). Bytes on the left axis (frag_yticks, frag_ymax at the
     * top), counts on the right (frag_cticks, frag_cmax). */
    bool has_frag;
    msr_chart_rect frag_rect;
    int64_t *frag_free, *frag_free_low, *frag_largest, *frag_blocks; /* n_cols each */
    double frag_ymax, frag_cmax;
    msr_chart_tick frag_yticks[MSR_CHART_MAX_TICKS], frag_cticks[MSR_CHART_MAX_TICKS];
    size_t n_frag_yticks, n_frag_cticks;
    char frag_title[128];

    char source_label[MSR_CHART_TEXT]; /* the file's label (src->label); overlays: "" */
    char other_label[64];             /* what the "other" band on top holds */
    int device;                       /* its device; overlays: -1 */
} msr_chart;

/* The entries that build the model from analysis results. Every back-end (PNG, SVG, the
 * report's SVG, an HTML/JSON exporter) takes the msr_chart these return and computes
 * nothing of its own.
 *
 * A stacked chart of one file in `area` (device pixels of the caller's surface). */
int msr_chart_build(msr_chart **out, const msr_chart_source *src, const msr_chart_spec *spec,
                   msr_chart_rect area, ms_error *err);
/* Curves of several files on shared axes, one colour each. */
int msr_chart_build_overlay(msr_chart **out, const msr_chart_source *srcs, size_t n_srcs,
                           const msr_chart_spec *spec, msr_chart_rect area, ms_error *err);
void msr_chart_free(msr_chart *chart);

/* What one image shows: one chart per file stacked as panels, or one overlay chart. */
typedef struct msr_chart_figure {
    int width, height;                      /* the image, device pixels */
    size_t n_charts;
    msr_chart *charts[MSR_CHART_MAX_SERIES];  /* n_charts, each drawn in its own area */
} msr_chart_figure;

typedef struct msr_chart_figure_spec {
    msr_chart_spec chart;  /* for every chart; its highlights are ignored, see below */
    bool overlay;         /* several files: curves on one chart instead of panels */
    int width, height;
    /* Panels: per file, the allocations to highlight (both NULL: none). */
    const msr_chart_highlight *const *highlights; /* n_srcs arrays */
    const size_t *n_highlights;                  /* n_srcs counts */
} msr_chart_figure_spec;

/* The whole image in one call: one file gives one stacked chart; several give panels on
 * shared scales (the y scale fits the largest file, an open-ended window ends where the
 * longest file does), or with `overlay` one chart of curves. It is msr_chart_build /
 * msr_chart_build_overlay plus the scale sharing, so callers with several files need not
 * repeat it. Release with msr_chart_figure_free (accepts NULL). */
int msr_chart_build_figure(msr_chart_figure **out, const msr_chart_source *srcs, size_t n_srcs,
                          const msr_chart_figure_spec *spec, ms_error *err);
void msr_chart_figure_free(msr_chart_figure *fig);
/* Panel i of n stacked vertically in a width x height image. */
msr_chart_rect msr_render_panel_rect(int width, int height, size_t n, size_t i);

/* The data extent of a source under a spec's window: the span of x (x units, from the
 * window start) and the largest active or reserved byte count inside it. Panels use it
 * to agree on shared scales before building. */
int msr_chart_extent(const msr_chart_source *src, const msr_chart_spec *spec, double *x_span,
                    int64_t *y_bytes, ms_error *err);

/* Pixel position of x (x units) and of a byte count inside the chart's plot. */
double msr_chart_px(const msr_chart *chart, double x);
/* Seconds since the first event at an x position of a time or run chart (x itself on the
 * time axis, W^-1(x) on the run axis). */
double msr_chart_x_seconds(const msr_chart *chart, double x);
double msr_chart_py(const msr_chart *chart, double bytes);
/* The x value of an event of the source the chart was built from (-1: x of event 0). */
double msr_chart_event_x(const msr_chart_source *src, msr_chart_x mode, int64_t event);

/* Round tick spacing: the smallest 1, 2, 2.5 or 5 times a power of ten that cuts `span`
 * into at most `max_ticks` steps. */
double msr_chart_nice_step(double span, int max_ticks);
/* "523.79 MiB", "1.50 GiB", "812 B": the text outputs' rule (ms_format_bytes: binary
 * units, two decimals), for every size a picture or the view prints; "?" for NaN. Axis
 * ticks are shorter: their labels carry the decimals their step needs ("250 MiB",
 * "2.5 GiB"), one rule for every byte axis (scale.c). */
void msr_chart_format_bytes(double bytes, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
