/* Private entry points the run model (run.c) uses so each fact is computed once. */
#ifndef MEMSNAP_RUN_INTERNAL_H
#define MEMSNAP_RUN_INTERNAL_H

#include "memsnap/run.h"

/* ms_oom_report_build with the run's leak report and categories (NULL: built inside). */
int ms__oom_analyze_with(ms_oom_report **out, const ms_snapshot *s, int device,
                         const ms_timeline *t, const ms_oom_options *opt,
                         const ms_leak_report *lr, const ms_categories *cats, ms_error *err);

/* The run's timeline with at least the MS_TIMELINE_* flags `need` (MS_TIMELINE_CURVES
 * covers MS_TIMELINE_ACTIVE): the run's own when it has them, else a fuller one that
 * replaces it as the run's (the one handed out before lives as long as the run). */
int ms__run_timeline_with(const ms_timeline **out, ms_run *r, unsigned need, ms_error *err);

#endif
