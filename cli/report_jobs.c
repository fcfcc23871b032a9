/* The chart thread of one report file (cmd_report.c): the timeline and the chart by
 * category drawn as PNGs while the calling thread builds the summary's sections and the
 * page's interactive view. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "report_cmd.h"

#define CMD REPORT_CMD

void report_job_signal(chart_job *j, bool *flag)
{
    pthread_mutex_lock(&j->mu);
    *flag = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

void report_job_wait(chart_job *j, const bool *flag)
{
    pthread_mutex_lock(&j->mu);
    while (!*flag)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

void *report_draw_charts(void *arg)
{
    chart_job *j = arg;
    const file_state *f = j->f;
    ms_error_clear(&j->err);
    ms_error_clear(&j->cat_err);
    if (j->threaded) {
        /* The leak findings, which the timeline marks: built here while the caller
         * categorises (the run's iterations are found first, so only this thread
         * writes the findings). One that fails is found again, and told, by the
         * summary's sections. */
        const ms_leak_report *lr = NULL;
        ms_error soft;
        bool ok = ms_run_leaks(&lr, f->run, &soft) == 0;
        report_job_signal(j, &j->leaks_done);
        if (!ok) {
            j->rc = MS_ERR_NOMEM;
            snprintf(j->err.message, sizeof j->err.message, "%s", soft.message);
            return NULL;
        }
    }
    /* The run axis reads the run's idle stretches, which the caller builds with the
     * categories: wait for them before reading the run again. And draw once the
     * caller's sections are written: they replay the allocator to the peak and the
     * OOMs, the largest thing a report holds beside the run (a block per live
     * allocation), and the charts drawn beside that replay took an OOM after each of
     * 300,000 never-freed allocations from 80 MB to 108 MB. */
    if (j->threaded) {
        report_job_wait(j, &j->cats_done);
        report_job_wait(j, &j->sections_done);
    }
    j->rc = j->png_path
                ? report_chart_file(f->run, cli_basename(f->path), j->o, j->png_path, &j->err)
                : MS_ERR_NOMEM;
    if (!j->rc && (!j->threaded || j->cats_ok))
        j->cat_rc = j->cat_png_path
                        ? report_chart_categories(&j->cat_svg, f->run, f->tl, f->cats,
                                                  cli_basename(f->path), j->o->x_time,
                                                  j->cat_png_path,
                                                  &j->cat_err)
                        : MS_ERR_NOMEM;
    return NULL;
}

/* The chart thread started (j->threaded), or nothing to undo. */
void report_charts_start(chart_job *j, pthread_t *th)
{
    if (pthread_mutex_init(&j->mu, NULL) != 0)
        return;
    if (pthread_cond_init(&j->cv, NULL) != 0) {
        pthread_mutex_destroy(&j->mu);
        return;
    }
    j->threaded = true;
    if (pthread_create(th, NULL, report_draw_charts, j) != 0) {
        j->threaded = false;
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
    }
}

void report_charts_join(chart_job *j, pthread_t th)
{
    pthread_join(th, NULL);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
}

/* After the charts: the JSON's names, the SVG for the page, or the error. */
int report_charts_done(chart_job *j, size_t index, file_state *f, cJSON *fj)
{
    if (j->rc) {
        cli_error(CMD, "%s: chart: %s", f->path, j->err.message);
        return 2;
    }
    cJSON_AddStringToObject(fj, "timeline_png", f->png);
    if (j->cat_rc) {
        cli_error(CMD, "%s: chart by category: %s", f->path, j->cat_err.message);
        return 2;
    }
    char prefix[32];
    snprintf(prefix, sizeof prefix, "c%zu-", index + 1);
    f->cat_svg = report_svg_inline(j->cat_svg, strlen(j->cat_svg), prefix);
    cJSON_AddStringToObject(fj, "categories_png", f->cat_png);
    return 0;
}

/* The file's sections of summary.json: the summary, the comparison profile, the leaks
 * and the categories, into *fj (added to files_json); the OOMs wait in *rd for the
 * charts (report_oom_file). */
