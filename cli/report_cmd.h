/* memsnap report's own pieces, split by what they do: cmd_report.c (options, the per-file
 * analysis, the order of the whole), report_jobs.c (the chart thread of one file),
 * report_compare.c (files side by side, and against --baseline) and report_write.c (the
 * report directory, its files, and what the command prints). */
#ifndef MEMSNAP_CLI_REPORT_CMD_H
#define MEMSNAP_CLI_REPORT_CMD_H

#include <pthread.h>

#include "report.h"

#define REPORT_CMD "report"
/* The comparison chart keeps every file's snapshot open; past this many files it is left
 * out and each snapshot is freed as soon as it is summarised. */
#define MAX_CHART_FILES 16

typedef struct file_state {
    const char *path;
    ms_snapshot *snap;     /* kept open only for the comparison chart */
    ms_run *run;           /* the charted device's run: every section reads it */
    const ms_timeline *tl; /* the run's */
    ms_profile *profile;
    const ms_categories *cats; /* the run's: what each allocation of `tl` is */
    char label[256];
    char png[300];
    char cat_png[320];     /* the chart by category beside png, or "" */
    char *cat_svg;         /* the chart by category, prefixed ids, or NULL */
    char *oom_svg;         /* the first OOM's picture, prefixed ids, or NULL */
    char *view;            /* the interactive timeline's data (view_page.h) */
} file_state;

/* The file's charts as PNGs (timeline-NAME.png; categories-NAME.png beside it, with its
 * SVG for the page under the categories table). They are drawn on a second thread while
 * the calling thread builds the page's interactive view: both only read the run, whose
 * facts and the snapshot's site cache are complete before the thread starts. */
typedef struct chart_job {
    const report_opts *o;
    const file_state *f;
    char *png_path, *cat_png_path;
    char *cat_svg;
    int rc, cat_rc;
    ms_error err, cat_err;
    /* On two threads: the chart thread finds the run's leak findings while the caller
     * categorises, and draws once the caller has the categories and its sections. */
    bool threaded;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool leaks_done, cats_done, cats_ok, sections_done;
} chart_job;


/* ------------------------------------------------------------------ the chart thread */

/* Signals or waits for one of the job's flags (leaks_done, cats_done, sections_done). */
void report_job_signal(chart_job *j, bool *flag);
void report_job_wait(chart_job *j, const bool *flag);
/* Draws the file's charts (the thread's body; called directly when unthreaded). */
void *report_draw_charts(void *arg);
/* Starts the chart thread: j->threaded tells whether it runs (else nothing to undo). */
void report_charts_start(chart_job *j, pthread_t *th);
void report_charts_join(chart_job *j, pthread_t th);
/* After the charts: the JSON's names, the SVG for the page, or the error (exit 2). */
int report_charts_done(chart_job *j, size_t index, file_state *f, cJSON *fj);

/* ------------------------------------------------------------------ comparisons */

/* The files side by side (ranks, the pair of two, the comparison chart): the document's
 * "comparison", its chart's SVG in *svg_out; *rc 2 on failure (told). */
cJSON *report_compare_files(const report_opts *o, file_state *fs, size_t n, char **svg_out,
                            int *rc);
/* The document's "baseline": each file against its --baseline file; NULL with *rc 2 on
 * failure (told). */
cJSON *report_compare_baseline(const report_opts *o, const file_state *fs, size_t n, int *rc);

/* ------------------------------------------------------------------ the directory and its files */

/* "DIR/NAME" on the heap, or NULL. */
char *report_join(const char *dir, const char *name);
/* Creates o->out_dir as mkdir -p does (the directories made are removed again by a
 * failed or interrupted run) and begins the batch of files renamed into place together.
 * Returns 0, or 2 (told). */
int report_dir_begin(const report_opts *o);
/* Ends the batch: rc 2 removes what was written and the directories made; else they
 * stay. */
void report_dir_end(int rc);
typedef int (*report_writer_fn)(FILE *out, const cJSON *doc, const void *ctx);
/* A device object the page and the Markdown do not show, written out of the tree: its
 * text (as cli_json_format gives it at `depth`) goes to an unlinked temporary file and
 * the tree keeps a raw item that stands for it in summary.json, so 65,536 devices do not
 * hold 65,536 cJSON trees. The raw item still holds the values at the paths of `keep`
 * (NULL-ended: what every device is read for, by the gates and report_device_shown).
 * Returns the item to put in the tree: `dev` itself when the spool cannot be used (the
 * output is the same). */
cJSON *report_spool_device(cJSON *dev, size_t depth, const char *const *keep);
/* summary.json, summary.md and index.html of `doc` into o->out_dir, then the batch is
 * committed. Returns 0, or 2 (told). */
int report_write_all(const report_opts *o, const cJSON *doc, const report_svgs *svgs);
/* What the report wrote and how each gate went, for the CI log; 1 when a gate failed. */
int report_print_written(const report_opts *o, const file_state *fs, size_t n, const cJSON *doc,
                         bool ranks_png, const cJSON *gates, size_t failed);

#endif
