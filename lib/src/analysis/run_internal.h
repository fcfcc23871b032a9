/* Private entry points the run model (run.c) uses so each fact is computed once. */
#ifndef MEMSNAP_RUN_INTERNAL_H
#define MEMSNAP_RUN_INTERNAL_H

#include "memsnap/run.h"
#include "phase_cut.h"

/* ms_oom_report_build with the run's leak report and categories (NULL: built inside). */
int ms__oom_analyze_with(ms_oom_report **out, const ms_snapshot *s, int device,
                         const ms_timeline *t, const ms_oom_options *opt,
                         const ms_leak_report *lr, const ms_categories *cats, ms_error *err);

/* The run's timeline with at least the MS_TIMELINE_* flags `need` (MS_TIMELINE_CURVES
 * covers MS_TIMELINE_ACTIVE): the run's own when it has them, else a fuller one that
 * replaces it as the run's (the one handed out before lives as long as the run). */
int ms__run_timeline_with(const ms_timeline **out, ms_run *r, unsigned need, ms_error *err);

/* ms_leak_report_totals of the report ms_leak_report_build would make with options
 * `opt`, from a timeline with the active curve but no list of lives and the iterations
 * those options find (the run's): a replay keeps only the lives a leak can hold
 * (leaks.c), so a summary's leak totals cost no list of every allocation. */
int ms__leak_totals_lean(ms_leak_totals *out, const ms_snapshot *s, const ms_timeline *t,
                         const ms_iterations *it, const ms_leak_options *opt, ms_error *err);

/* ms_shape_find with the iterations, phases and annotation ranges of a run. */
int ms__shape_find_with(ms_shape **out, const ms_snapshot *s, const ms_timeline *t,
                        const ms_iterations *it, const ms_phases *ph, const ms__ann *ann,
                        ms_error *err);

/* ms_leak_report_build on `t` with the run's iterations `it`, which the report holds
 * (and frees) once this succeeds; on failure they stay the caller's. */
int ms__leak_report_on(ms_leak_report **out, const ms_snapshot *s, const ms_timeline *t,
                       ms_iterations *it, const ms_leak_options *opt, ms_error *err);

/* ms_leak_marks_build on `t` with the run's iterations `it` (borrowed). */
int ms__leak_marks_with(ms_leak_mark **out, size_t *n_out, const ms_snapshot *s,
                        const ms_timeline *t, const ms_iterations *it,
                        const ms_leak_options *opt, ms_error *err);

/* ms_leak_counts of a leak report (the one place findings are counted). */
ms_leak_counts ms__leak_report_counts(const ms_leak_report *r);

/* Test hook: runs opened (ms_run_open), timelines built by runs and annotation pairings
 * (ms_annotation_ranges, by anyone) in this process. */
typedef struct ms__run_counts {
    size_t runs_opened;
    size_t timelines_built;
    size_t annotations_paired;
} ms__run_counts;
void ms__run_stats(ms__run_counts *out);

#endif
