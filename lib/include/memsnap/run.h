/* memsnap run: one analysed run per file and device, that every command and chart
 * reads. Each fact (timeline, iterations, annotation ranges, phases, frame classes,
 * categories, leak findings, OOM analyses) is computed once, on first request, from
 * the others, so two views can never compute the same fact two ways; a view pays
 * only for what it asks.
 *
 * Ownership: ms_run_open's result belongs to the caller (ms_run_free); every pointer a
 * getter returns belongs to the run and lives as long as it. The snapshot must outlive
 * the run. A run is not safe to share between threads while getters may build. */
#ifndef MEMSNAP_RUN_H
#define MEMSNAP_RUN_H

#include "memsnap/categories.h"
#include "memsnap/export.h"
#include "memsnap/idle.h"
#include "memsnap/iterations.h"
#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"
#include "memsnap/oom.h"
#include "memsnap/phases.h"
#include "memsnap/shape.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_run ms_run;

/* What a device's leak findings add up to: the figures `memsnap leaks` prints in its
 * verdict, and the ones every summary and comparison carries, so all of them read the
 * same analysis. Only findings of kind MS_LEAK_LEAK count (not suspects or retained). */
typedef struct ms_leak_totals {
    uint64_t findings;   /* leak findings (a finding may group several sites) */
    uint64_t bytes;      /* requested bytes their allocations hold (ms_leak.bytes) */
    double growth_bytes; /* growth per iteration, summed (ms_leak.growth_bytes) */
} ms_leak_totals;

MS_API ms_leak_totals ms_leak_report_totals(const ms_leak_report *r);

/* Every kind of finding of a device's leak report, counted once by the run: the verdicts
 * of `leaks` and `report` read these, not a count of their own. */
typedef struct ms_leak_counts {
    ms_leak_totals leaks;  /* the MS_LEAK_LEAK findings (ms_leak_report_totals) */
    uint64_t leak_sites;   /* the sites those findings group (ms_leak.n_members) */
    uint64_t suspects;     /* MS_LEAK_SUSPECT findings */
    uint64_t retained;     /* findings of every other kind but alive-at-end */
    uint64_t alive_at_end; /* MS_LEAK_ALIVE_AT_END findings */
} ms_leak_counts;

/* Where an event falls in the run: which iteration and which phase. Two ranks of one job
 * start recording at different wall-clock times, so the time of their peaks says little;
 * "iteration 3, backward" in both says they peak at the same point of the work. */
typedef struct ms_peak_place {
    bool known;          /* false: not computed (a summary written before it carried it) */
    uint32_t iteration;  /* 1-based; 0 when the event lies outside every iteration */
    uint32_t iterations; /* complete iterations the run has */
    bool unfinished;     /* the event lies in the unfinished last iteration */
    int phase;           /* ms_phase_kind, -1 when no phase holds it */
} ms_peak_place;

/* The place of `event` (-1: before the first event) in the iterations and phases of one
 * device; `ph` may be NULL (phase -1). */
MS_API ms_peak_place ms_peak_place_of(const ms_iterations *it, const ms_phases *ph,
                                      int64_t event);

typedef struct ms_run_options {
    ms_iter_options iter;     /* how iterations are found (every view uses the same) */
    uint64_t leak_min_bytes;  /* ms_leak_options.min_bytes */
    size_t oom_top_sites;     /* ms_oom_options.top_sites (0: 10) */
    /* MS_TIMELINE_* flags of the run's timeline; 0: MS_TIMELINE_CURVES |
     * MS_TIMELINE_ALLOCS, which every getter can use. A view that asks only for
     * categories may pass MS_TIMELINE_ALLOCS | MS_TIMELINE_ACTIVE (half the memory);
     * `summary` MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE. A getter that needs more
     * (leaks: allocations and the active curve; OOMs: both curves) simulates the trace
     * once more for everything any getter reads, and the arrays the timeline lacked
     * join it: a run has one timeline object, simulated at most twice (once with the
     * defaults), and a pointer handed out before stays valid with more filled in. */
    unsigned timeline_flags;
} ms_run_options;

/* `opt` may be NULL (defaults). Nothing is computed yet. */
MS_API int ms_run_open(ms_run **out, const ms_snapshot *s, int device, const ms_run_options *opt,
                       ms_error *err);
MS_API void ms_run_free(ms_run *r);

MS_API const ms_snapshot *ms_run_snapshot(const ms_run *r);
MS_API int ms_run_device(const ms_run *r);

/* The device's timeline (ms_run_options.timeline_flags; filled in further once a getter
 * needed more, see there). */
MS_API int ms_run_timeline(const ms_timeline **out, ms_run *r, ms_error *err);
/* Iterations (with the unfinished last one, see memsnap/iterations.h). The leak report
 * holds the same object. */
MS_API int ms_run_iterations(const ms_iterations **out, ms_run *r, ms_error *err);
/* The quiet stretches under the run's iterations (memsnap/idle.h): idle time apart from
 * work for the iterations table, and the breaks of the charts' run axis. */
MS_API int ms_run_idle(const ms_idle **out, ms_run *r, ms_error *err);
/* The device's annotation ranges (ms_annotation_ranges), paired once. */
MS_API int ms_run_annotation_ranges(const ms_annotation_range **out, size_t *n_out, ms_run *r,
                                    ms_error *err);
/* The phase list (inferred from stacks where there are no annotations). */
MS_API int ms_run_phases(const ms_phases **out, ms_run *r, ms_error *err);
/* What kind of recording it is (memsnap/shape.h), from the iterations and phases above,
 * the compile phase and CUDA-graph pools. */
MS_API int ms_run_shape(const ms_shape **out, ms_run *r, ms_error *err);
/* The class of every frame of the snapshot, indexed by frame id (ms_frame_classify). */
MS_API int ms_run_frame_classes(const ms_frame_class **out, size_t *n_out, ms_run *r,
                                ms_error *err);
/* Categories of the timeline's allocations, built on the run's iterations. */
MS_API int ms_run_categories(const ms_categories **out, ms_run *r, ms_error *err);
/* Leak findings (their alloc indices refer to ms_run_timeline). */
MS_API int ms_run_leaks(const ms_leak_report **out, ms_run *r, ms_error *err);
/* OOM analyses, with the run's categories behind their category breakdowns. */
MS_API int ms_run_ooms(const ms_oom_report **out, ms_run *r, ms_error *err);

/* The peak, as `memsnap summary` and the comparisons (diff, ranks) read it. */
/* The allocations alive right after the timeline's peak event, in no fixed order (its
 * peak_alive when the run's timeline_flags have MS_TIMELINE_PEAK_ALIVE; else read once
 * from the timeline's allocs when it has them, or found by a replay). */
MS_API int ms_run_peak_alive(const ms_alloc **out, size_t *n_out, ms_run *r, ms_error *err);
/* Their bytes by site, largest first (ms_site_totals). */
MS_API int ms_run_peak_sites(const ms_site_total **out, size_t *n_out, ms_run *r,
                             ms_error *err);
/* Their bytes by category, as ms_run_categories would class them (ms_categories_sum
 * over the run's iterations); the phases are found in the same pass when the run has
 * none yet. */
MS_API int ms_run_peak_categories(int64_t out[MS_CAT_COUNT], ms_run *r, ms_error *err);
/* Where the peak falls (ms_peak_place_of) in the run's iterations and phases; phases
 * that cannot be found leave phase -1. */
MS_API int ms_run_peak_place(ms_peak_place *out, ms_run *r, ms_error *err);
/* Free memory inside reserved segments right after one event (the allocator's state,
 * memsnap/allocator.h): what fragmentation costs at that moment. */
typedef struct ms_free_in_reserved {
    int64_t event;           /* -1: before the first event */
    uint64_t free_bytes;     /* reserved minus the active blocks' bytes */
    uint64_t largest_free;   /* the largest free block */
    uint64_t free_blocks;    /* how many free blocks */
    bool approximate;        /* the rebuilt state is approximate (ms_heap.approximate) */
} ms_free_in_reserved;

/* Free memory inside reserved segments after every event (ms_heap_frag_build): one
 * replay of the allocator, 20 bytes per event; only charts over the whole run ask. */
MS_API int ms_run_fragmentation(const ms_heap_frag **out, ms_run *r, ms_error *err);
/* The same at the timeline's peak event: read from ms_run_fragmentation when the run has
 * it, else one replay up to the peak that keeps nothing but these numbers. */
MS_API int ms_run_peak_free(ms_free_in_reserved *out, ms_run *r, ms_error *err);
/* The category (ms_category) of each block of `h`, a state of this run's device: the
 * run's categories (ms_run_categories) of the allocation the block holds; MS_CAT_COUNT
 * for a free block or one the timeline does not know. out has h->n_blocks entries. */
MS_API int ms_run_block_categories(uint8_t *out, ms_run *r, const ms_heap *h, ms_error *err);

/* Builds what ms_run_leaks and ms_run_categories would both build lazily (the timeline,
 * the iterations, every stack's site), so that the two may then run on two threads at
 * once, one each, with the same results as one after the other. */
MS_API int ms_run_prepare_threads(ms_run *r, ms_error *err);
/* The marks ms_leak_marks_from_report gives of ms_run_leaks' report, on the run's
 * timeline (allocation indices into its allocs[]); without that report at hand, from a
 * leak pass that skips retained findings (marks show none), which the run does not keep.
 * Free with ms_leak_marks_free. */
MS_API int ms_run_leak_marks(ms_leak_mark **out, size_t *n_out, ms_run *r, ms_error *err);

/* ms_leak_report_totals of ms_run_leaks. */
MS_API int ms_run_leak_totals(ms_leak_totals *out, ms_run *r, ms_error *err);
/* ms_leak_counts of ms_run_leaks, counted on first use and kept. */
MS_API int ms_run_leak_counts(ms_leak_counts *out, ms_run *r, ms_error *err);

/* One analysis of the run as JSON text (docs/json.md "ms_run_json"), written by the
 * same builders and the same writer as `memsnap <command> --json`, so a binding needs
 * no more than ms_snapshot_read_file, ms_run_open, ms_run_json, ms_free and the two
 * frees. `what`:
 *   "summary"     a files[].devices[] object of `summary --json` (top 10 sites);
 *   "iterations"  the iterations object (summary's devices[].iterations);
 *   "shape"       the recording's shape object;
 *   "leaks"       {"device", "iterations", "shape", "oom_count", "totals", "leaks": [...]}
 *                 with every finding as in `leaks --json` files[].leaks[];
 *   "categories"  a files[].devices[] object of `categories --json`;
 *   "ooms"        {"ooms": [...], "ooms_left_out"?} as in `oom --json` files[];
 *   "segments"    a files[].devices[] object of `segments --json` without --at: the
 *                 allocator's state at the peak and at the end (at[] holds one state
 *                 when the two are one event); other instants are the tool's (--at,
 *                 --at-us, --event).
 * Two runs compared: ms_run_compare_json (memsnap/compare.h).
 * *out is NUL-terminated and belongs to the caller (ms_free); *len_out (may be NULL) gets
 * its length. MS_ERR_ARG for an unknown `what`. */
MS_API int ms_run_json(char **out, size_t *len_out, ms_run *r, const char *what, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
