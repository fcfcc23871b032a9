/* memsnap compare — set snapshots side by side: two files (ranks, or a run before and
 * after a change) or many rank files with their median and outliers.
 *
 * Comparisons work on profiles, not snapshots: a profile is the handful of numbers and
 * site lists of one device of one file. A profile is built from a snapshot by the
 * library, or filled by the caller from another source through ms_profile_new() and the
 * setters (the tool reads back the JSON of `memsnap summary --json`, which it also
 * writes: that format is the tool's, and it lives with the tool), so hundreds of ranks
 * can be summarised where they were written and compared anywhere.
 *
 * Ownership follows memsnap.h: every `**out` object belongs to the caller and is
 * released with its own *_free(), which accepts NULL; strings and arrays reached through
 * an object live as long as that object. A comparison result points into the profiles it
 * was made from, so those must outlive it.
 */
#ifndef MEMSNAP_COMPARE_H
#define MEMSNAP_COMPARE_H

#include "memsnap/export.h"
#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"
#include "memsnap/phases.h"
#include "memsnap/run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ms_leak_totals (the leak findings' totals every comparison carries) and
 * ms_peak_place (where the peak falls in the run) are the run's: memsnap/run.h. */

/* ------------------------------------------------------------------ place of the peak */

/* Text writer (memsnap/core.h): "iteration 3 of 5, backward", "outside the iterations,
 * setup", "no iterations"; "unknown" when not known. */
MS_API size_t ms_peak_place_format(const ms_peak_place *pl, char *buf, size_t cap);

/* ------------------------------------------------------------------ profiles */

typedef enum ms_site_set {
    MS_SITES_AT_PEAK = 0, /* bytes alive at the device's peak, by site */
    MS_SITES_AT_END,      /* bytes alive after the last event */
    MS_SITES_TOTAL,       /* every allocation of the trace (bytes allocated, count) */
    MS_SITE_SETS
} ms_site_set;

typedef struct ms_profile_site {
    const char *site;     /* "file:line", as ms_site_format_location() writes it */
    const char *function; /* the frame's function name, "" when unknown */
    uint64_t bytes;
    uint64_t count;
    /* The shape of the stack behind the site (ms_profile_site_shape), "" when unknown: a
     * comparison matches a site whose line moved by its file, function and shape. */
    const char *shape;
} ms_profile_site;

typedef struct ms_profile_graphs {
    bool known;                    /* false: the source did not say (an older summary) */
    uint64_t pool_bytes;           /* the private pools' reserved bytes, 0 none */
    uint32_t replay_iterations;    /* complete iterations after the capture */
    int64_t replay_footprint_bytes;/* the highest replay iteration's peak plus the pool */
} ms_profile_graphs;

typedef struct ms_profile {
    const char *name;     /* the input's path, as given */
    int rank;             /* ms_rank_from_name(name), or -1 */
    int device;
    uint64_t events;
    int64_t t_first_us;   /* first event; times below are relative to it in reports */
    int64_t peak_bytes;
    int64_t peak_time_us; /* absolute, same clock as t_first_us */
    int64_t peak_event;   /* -1: the peak is the state before the first event */
    int64_t reserved_peak_bytes;
    int64_t reserved_end_bytes;
    int64_t live_end_bytes;
    uint64_t live_end_count;
    uint64_t alloc_count;
    uint64_t oom_count;
    bool trace_complete;
    /* false for a trace without times: peak_time_us is then the peak's event index and
     * t_first_us 0, and the time of the peak is no measure to compare. */
    bool has_times;

    /* Sites largest bytes first. A set is `known` when the source had it at all and
     * `complete` when it lists every site (a summary lists only its top sites). */
    ms_profile_site *sites[MS_SITE_SETS];
    size_t n_sites[MS_SITE_SETS];
    bool sites_known[MS_SITE_SETS];
    bool sites_complete[MS_SITE_SETS];

    /* Iteration peaks: empty until the caller sets them (ms_profile_set_iteration_peaks);
     * comparisons then report their differences too. */
    int64_t *iteration_peaks; /* peak active bytes of each iteration, in order */
    size_t n_iterations;
    /* The leak findings of the device (ms_leak_totals): filled by
     * ms_profile_from_snapshot, or by the caller through ms_profile_set_leaks. False
     * means unknown (a summary written before summaries carried leaks), not "no leak". */
    bool leaks_known;
    ms_leak_totals leaks;
    /* Where the peak falls in the run (ms_profile_from_snapshot; a caller reading a
     * summary sets it with ms_profile_set_peak_place). */
    ms_peak_place peak_place;
    /* CUDA graphs (memsnap/shape.h): a replay allocates from the graph's private pool,
     * which no allocation in the trace shows, so the peak undercounts what a graphed run
     * holds. Filled by ms_profile_from_run, or by ms_profile_set_graphs. */
    ms_profile_graphs graphs;

    void *priv_; /* owned strings; not for callers */
} ms_profile;

/* Profile of one device of a snapshot: timeline, sites alive at the peak and at the end,
 * all allocations by site, and the leak totals (ms_leak_report_build with default options; when
 * that analysis fails the leaks stay unknown rather than failing the profile). `device`
 * -1 picks the device with the most events (ties: the lowest id). `name` is copied.
 * Made from a run of its own (ms_profile_from_run). */
MS_API int ms_profile_from_snapshot(ms_profile **out, const ms_snapshot *s, const char *name,
                                    int device, ms_error *err);
/* The same profile read from a run of the device (memsnap/run.h): its timeline, the sites
 * alive at its peak, its leak totals and the place of its peak are the run's, so a view
 * of the same run (the summary) shows the same figures. The run's leak analysis runs with
 * its options. */
MS_API int ms_profile_from_run(ms_profile **out, ms_run *run, const char *name, ms_error *err);

/* An empty profile for callers that fill the numbers themselves (all zero, rank from
 * the name, site sets unknown). */
MS_API int ms_profile_new(ms_profile **out, const char *name, ms_error *err);
/* Appends a site to a set (strings copied) and marks the set known. Keeps the caller's
 * order; call ms_profile_sort_sites() when the source was not sorted. */
MS_API int ms_profile_add_site(ms_profile *p, ms_site_set set, const char *site,
                               const char *function, uint64_t bytes, uint64_t count,
                               ms_error *err);
/* The same with the site's stack shape (NULL or "": unknown). */
MS_API int ms_profile_add_site_shaped(ms_profile *p, ms_site_set set, const char *site,
                                      const char *function, const char *shape, uint64_t bytes,
                                      uint64_t count, ms_error *err);
/* A text writer (memsnap/core.h): the shape of the stack behind a site total (its
 * `stack`), as 16 hex digits: a hash of the files of the Python frames that called the
 * site's frame, in order (shortened as ms_site_format_location does), without lines or
 * function names, so an edit that shifts lines or renames a caller keeps it. "" when
 * the total has no stack. */
MS_API size_t ms_profile_site_shape(const ms_snapshot *s, const ms_site_total *t, char *buf,
                                    size_t cap);
MS_API void ms_profile_sort_sites(ms_profile *p, ms_site_set set);

/* Setters for callers that analysed more themselves (copied): iteration peaks, and leak
 * totals (from ms_leak_report_totals, e.g. with the caller's own leak options, or read
 * back from a summary); setting leaks marks them known. */
MS_API int ms_profile_set_iteration_peaks(ms_profile *p, const int64_t *peaks, size_t n,
                                          ms_error *err);
MS_API void ms_profile_set_leaks(ms_profile *p, const ms_leak_totals *leaks);
MS_API void ms_profile_set_peak_place(ms_profile *p, const ms_peak_place *place);
/* Sets the CUDA-graph figures (marks them known). */
MS_API void ms_profile_set_graphs(ms_profile *p, const ms_profile_graphs *graphs);
MS_API void ms_profile_free(ms_profile *p);

/* The rank written in a file name: "rank3", "ddp_rank1", "rank_12", "mem-3.pickle",
 * "mem_3.pickle.gz" (a number that ends the name after '-', '_' or '.'); -1 when none.
 * Digits inside a word ("gpt2_train") are not a rank. */
MS_API int ms_rank_from_name(const char *path);

/* Loads pickles in parallel and profiles each one, with `limits` (NULL:
 * ms_limits_default()). Its `threads` is the budget of the whole call: that many files
 * at once (never more than the number of files), and each file read and analysed with
 * the share left to it (limits.threads / files at once). Every entry of out[] and
 * errs[] is written: a file that failed has out[i] NULL and errs[i] filled; the return
 * value is 0 when all loaded, else the code of the first failure in path order.
 * `hook`, when not NULL, runs on the worker thread for each file that loaded, with the
 * run the profile was read from (its snapshot still open: ms_run_snapshot), so a caller
 * takes more from the same analysis; a non-zero return fails that file with the hook's
 * error. */
typedef int (*ms_profile_hook)(void *ctx, size_t index, const char *path, ms_run *run,
                               const ms_profile *p, ms_error *err);
MS_API int ms_profiles_load(ms_profile **out, ms_error *errs, const char *const *paths,
                            size_t n, int device, const ms_limits *limits,
                            ms_profile_hook hook, void *ctx);

/* ------------------------------------------------------------------ two files */

typedef struct ms_delta {
    int64_t a, b;
    int64_t delta;   /* b - a */
    double pct;      /* 100 * delta / a; 0 when both are 0 */
    bool pct_valid;  /* false when a is 0 and b is not */
} ms_delta;

typedef struct ms_site_delta {
    const char *site;      /* point into the profiles; A's location when the site moved */
    const char *function;
    int64_t a_bytes, b_bytes, delta_bytes;
    uint64_t a_count, b_count;
    /* A site whose line moved: B's location ("file:47" against A's "file:35"), else NULL.
     * Sites of one file and function whose lines differ are one site when their stack
     * shapes agree (or either is unknown) and the lines pair up: in line order when both
     * files have as many such sites, else those that moved by the most common shift. */
    const char *b_site;
} ms_site_delta;

typedef enum ms_metric {
    MS_M_PEAK = 0,
    MS_M_PEAK_TIME,        /* microseconds since each file's first event */
    MS_M_RESERVED_PEAK,
    MS_M_RESERVED_END,
    MS_M_LIVE_END,
    MS_M_LIVE_END_COUNT,
    MS_M_ALLOCS,
    MS_M_OOMS,
    MS_M_EVENTS,
    MS_M_COUNT
} ms_metric;

/* "peak_bytes", "peak_time_us", ... (JSON keys) */
MS_API const char *ms_metric_name(ms_metric m);

typedef struct ms_pair {
    const ms_profile *a, *b;
    ms_delta m[MS_M_COUNT];

    /* Sites by |change|, largest first; sites whose bytes did not change are left out,
     * unless they moved (b_site set: a moved site is listed whatever its change).
     * A set is absent (n 0, known false) when either profile lacks it. */
    ms_site_delta *sites[MS_SITE_SETS];
    size_t n_sites[MS_SITE_SETS];
    bool sites_known[MS_SITE_SETS];
    /* True when both sides listed every site; otherwise a site missing on one side may
     * just be below that side's top-K cut and its delta is an upper bound. */
    bool sites_complete[MS_SITE_SETS];

    /* Sites seen in one file only (by the richest set both have: all allocations, else
     * the peak and end sets), largest first. */
    ms_site_delta *only_a, *only_b;
    size_t n_only_a, n_only_b;
    /* Sites that moved (b_site set), by the same richest set, largest bytes first. */
    ms_site_delta *moved;
    size_t n_moved;

    /* Filled when both profiles carry them (see the setters above). */
    ms_delta *iteration_peaks;
    size_t n_iterations;
    bool leaks_known;        /* both profiles' leaks are known */
    ms_delta leak_findings;  /* ms_leak_totals of a and b */
    ms_delta leak_bytes;
    ms_delta leak_growth;    /* growth per iteration, rounded to whole bytes */

    bool match; /* every number and every site equal */
} ms_pair;

/* A text writer (memsnap/core.h): "moved :35 → :47" for a site at `a_site` in A and
 * `b_site` in B ("moved a.py:35 → b.py:47" when the files differ); "" when b_site is
 * NULL or empty. The verdict and every view of a comparison write a move with it. */
MS_API size_t ms_site_moved_format(const char *a_site, const char *b_site, char *buf,
                                   size_t cap);

MS_API int ms_pair_compare(ms_pair **out, const ms_profile *a, const ms_profile *b,
                           ms_error *err);
MS_API void ms_pair_free(ms_pair *p);

/* A text writer (memsnap/core.h): the plain-words verdict, one paragraph, e.g. "rank1
 * peaks 51.0% higher than rank0 (+286.1 MiB: 845.5 MiB at 0.92 s vs 559.4 MiB at
 * 0.61 s); most of it (+240.0 MiB) is held at the peak by modeling_gpt2.py:123 forward."
 * A site is "most of it" only when its change has the total's sign and is at most the
 * total; when the largest change is of the other sign or larger than the total, the
 * verdict names the largest changes on each side instead. Sites that moved are named.
 * When either file leaks it says so: "A leaks 1 finding, 90.09 MiB, +30.03 MiB per
 * iteration; B does not." Names default to "rankN" or the file's base name. */
MS_API size_t ms_pair_verdict(const ms_pair *p, const char *name_a, const char *name_b,
                              char *buf, size_t cap);

/* The comparison of two runs (two files, two ranks, before and after a change) as JSON
 * text: the pairs[] object of `memsnap diff --json A B` ({"a": 0, "b": 1, "a_label",
 * "b_label", "metrics", "sites", ..., "match", "verdict"}; docs/json.md), written by the
 * same builder and writer, with each site list cut at 10 as diff does by default. Each
 * run gives a profile (ms_profile_from_run), named `name_a` / `name_b` (NULL: "A", "B"),
 * which labels it as diff does: "rankN" or the base name, and "A" / "B" when the two
 * labels are the same. *out is NUL-terminated and belongs to the caller (ms_free);
 * *len_out (may be NULL) gets its length. With ms_run_json, what a binding needs for
 * every analysis of one run and of two. */
MS_API int ms_run_compare_json(char **out, size_t *len_out, ms_run *a, const char *name_a,
                               ms_run *b, const char *name_b, ms_error *err);

/* A text writer (memsnap/core.h): "rank3" when the name holds a rank, else the file's
 * base name ("stdin" for "-"). */
MS_API size_t ms_profile_label(const ms_profile *p, char *buf, size_t cap);

/* ------------------------------------------------------------------ many ranks */

enum {
    MS_OUT_PEAK = 1u << 0,
    MS_OUT_RESERVED = 1u << 1,
    MS_OUT_LIVE_END = 1u << 2
};

typedef struct ms_rank_row {
    const ms_profile *p;
    ms_delta peak;          /* a = median, b = this file */
    ms_delta reserved_peak;
    ms_delta live_end;
    unsigned outlier;       /* MS_OUT_* bits: metrics more than threshold% from the median */
    /* This file's sites at its peak against the median of each site over all files,
     * by |change|, largest first (unchanged ones left out). a_bytes is the median. */
    ms_site_delta *sites;
    size_t n_sites;
    /* The same for the sites alive at the end (what explains a live-at-end outlier);
     * known only when every profile has its sites at the end (a summary JSON has not). */
    ms_site_delta *sites_end;
    size_t n_sites_end;
    bool sites_end_known;
} ms_rank_row;

typedef struct ms_ranks {
    size_t n;
    ms_rank_row *rows;       /* in input order */
    int64_t median_peak;     /* of an even count: the mean of the middle two, rounded down */
    int64_t median_reserved_peak;
    int64_t median_live_end;
    double threshold_pct;
    size_t n_outliers;       /* rows with any outlier bit */
    /* Two files: the median of two is their mean, so each is as far from it as the other
     * and neither is the odd one out. No row is flagged; compare them as a pair
     * (ms_pair_compare) instead. Outliers need three files or more. */
    bool pair;
} ms_ranks;

MS_API int ms_ranks_compare(ms_ranks **out, const ms_profile *const *profiles, size_t n,
                            double threshold_pct, ms_error *err);
MS_API void ms_ranks_free(ms_ranks *r);

#ifdef __cplusplus
}
#endif
#endif
