/* Busy and idle time apart (memsnap/idle.h), against a recording whose truth has them:
 * v3_pauses sleeps 1.5 s after steps 2, 4 and 6 of six AdamW steps (truth: each step's
 * busy start and end, each pause's start and end). Checked:
 *  - each iteration's busy time is the truth's step time within 3 ms, the first one (60
 *    times as long: CUDA's warm-up) included: warm-up is work, not idle;
 *  - the pauses after steps 2 and 4 are idle before iterations 3 and 5, 1.5 s each within
 *    10 ms, and no other iteration has idle time;
 *  - the pause after step 6 has no event after it in the file (the trace ends before
 *    it starts), so nothing is trailing idle; on streams, idle after the last
 *    iteration is trailing idle;
 *  - the table agrees with the chart: every idle gap lies inside a break of the run
 *    axis laid from the same finding, and the set-up and the warm-up too;
 *  - summary prints the idle column ("+1.50 s idle before") and --json its fields;
 *  - torch.compile's compile windows are set-up: breaks of the axis, never idle. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "chart.h"
#include "memsnap/idle.h"
#include "memsnap/run.h"

static const char *bin;

static double jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Every gap of the finding lies in a break of the axis laid from it. */
static void agrees_with_axis(const char *name, const ms_trace *tr, const ms_idle *idle)
{
    msr_chart_warp w;
    msr_chart_warp_from_idle(&w, idle);
    int64_t t0 = tr->n ? tr->time_us[0] : 0;
    for (size_t i = 0; i < idle->n_gaps; i++) {
        double a = (double)(idle->gaps[i].start_us - t0) / 1e6;
        double b = (double)(idle->gaps[i].end_us - t0) / 1e6;
        bool in_break = false;
        for (size_t s = 0; s < w.n_segments && !in_break; s++)
            in_break = w.gap[s] && a >= w.t[s] - 1e-9 && b <= w.t[s + 1] + 1e-9;
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s: gap %zu (%.6f-%.6f s) in a break", name, i, a, b);
        CHECK_TRUE_IN(ctx, in_break);
    }
    CHECK_EQ_INT_IN(name, (int)w.n_breaks, (int)idle->n_breaks);
}

static void pauses(void)
{
    cJSON *truth = check_truth_load("v3_pauses");
    ms_snapshot *s = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_snapshot_read_file(&s, "testdata/v3_pauses.pickle", NULL, &err), 0);
    if (!s || !truth) {
        cJSON_Delete(truth);
        ms_snapshot_free(s);
        return;
    }
    ms_run *run = NULL;
    const ms_iterations *it = NULL;
    const ms_idle *idle = NULL;
    int rc = ms_run_open(&run, s, 0, NULL, &err);
    if (!rc)
        rc = ms_run_iterations(&it, run, &err);
    if (!rc)
        rc = ms_run_idle(&idle, run, &err);
    CHECK_EQ_INT(rc, 0);
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(truth, "steps");
    const cJSON *pauses = cJSON_GetObjectItemCaseSensitive(truth, "pauses");
    if (!rc) {
        CHECK_EQ_INT((int)it->n, cJSON_GetArraySize(steps));
        CHECK_EQ_INT((int)idle->n_items, (int)(it->n + it->n_unfinished));
        for (size_t k = 0; k < it->n && k < (size_t)cJSON_GetArraySize(steps); k++) {
            const cJSON *st = cJSON_GetArrayItem(steps, (int)k);
            char ctx[64];
            snprintf(ctx, sizeof ctx, "step %zu", k + 1);
            double busy = (double)(it->items[k].end_us - it->items[k].start_us -
                                   idle->idle_inside_us[k]) / 1e6;
            CHECK_NEAR_IN(ctx, busy, jnum(st, "busy_seconds"), 0.003);
            /* Idle before the steps after a pause: the pause. */
            double want = 0;
            const cJSON *p;
            cJSON_ArrayForEach(p, pauses)
                if ((size_t)jnum(p, "after_step") == k)
                    want = jnum(p, "seconds");
            CHECK_NEAR_IN(ctx, (double)idle->idle_before_us[k] / 1e6, want, 0.010);
            CHECK_EQ_INT_IN(ctx, (int)idle->idle_inside_us[k], 0);
        }
        /* The first step's warm-up is set-up: compressed on the axis, not idle. */
        CHECK_TRUE(idle->setup_us[0] > 100000);
        CHECK_TRUE(idle->setup_before_us > 3000000); /* 4 s of set-up before the loop */
        /* The last pause: no event after it, so the file cannot show it. */
        const cJSON *trail = cJSON_GetObjectItemCaseSensitive(truth, "trailing_idle_us");
        const ms_trace *tr = ms_snapshot_trace(s, 0);
        const cJSON *trail0 = cJSON_GetArrayItem(trail, 0);
        CHECK_TRUE(cJSON_IsNumber(trail0) &&
                   (double)tr->time_us[tr->n - 1] < trail0->valuedouble);
        CHECK_EQ_INT((int)idle->trailing_us, 0);
        CHECK_NEAR((double)idle->idle_us / 1e6, 3.0, 0.02);
        agrees_with_axis("v3_pauses", tr, idle);
    }
    ms_run_free(run);
    ms_snapshot_free(s);
    cJSON_Delete(truth);
}

/* torch.compile's compile windows (the run's shape) are set-up: no idle gap inside one,
 * and shape_compile_autotune's (the first call, 24.6 s, and the first backward, 53.1 s,
 * by its truth; one window of the first iteration here) lie in breaks. */
static void compile_is_work(const char *name, const ms_trace *tr, ms_run *run,
                            const ms_idle *idle)
{
    const ms_shape *sh = NULL;
    ms_error err;
    CHECK_EQ_INT_IN(name, ms_run_shape(&sh, run, &err), 0);
    if (!sh || !tr->n)
        return;
    size_t in_break = 0;
    for (size_t k = 0; k < sh->n_compile; k++) {
        const ms_shape_compile *c = &sh->compile[k];
        for (size_t i = 0; i < idle->n_gaps; i++) {
            char ctx[160];
            snprintf(ctx, sizeof ctx, "%s: idle gap %zu inside compile window %zu", name, i, k);
            CHECK_TRUE_IN(ctx, idle->gaps[i].after_event < c->start_event ||
                                   idle->gaps[i].after_event >= c->end_event - 1);
        }
        double a = (double)(c->start_us - tr->time_us[0]) / 1e6;
        double b = (double)(c->end_us - tr->time_us[0]) / 1e6;
        for (size_t j = 0; j < idle->n_breaks; j++)
            if (a >= idle->breaks[j].from_s - 1e-9 && b <= idle->breaks[j].to_s + 1e-9) {
                in_break++;
                break;
            }
    }
    if (!strcmp(name, "shape_compile_autotune")) {
        CHECK_TRUE_IN(name, sh->n_compile >= 1);
        CHECK_EQ_INT_IN(name, (int)in_break, (int)sh->n_compile);
    }
}

/* Idle after the last iteration is trailing idle, and every finding agrees with its axis. */
static void each(const char *name, ms_snapshot *s, void *arg)
{
    (void)arg;
    ms_error err;
    ms_run *run = NULL;
    const ms_idle *idle = NULL;
    int rc = ms_run_open(&run, s, ms_snapshot_busiest_device(s), NULL, &err);
    if (!rc)
        rc = ms_run_idle(&idle, run, &err);
    CHECK_EQ_INT_IN(name, rc, 0);
    if (!rc) {
        agrees_with_axis(name, ms_snapshot_trace(s, ms_run_device(run)), idle);
        int64_t sum = idle->trailing_us;
        for (size_t k = 0; k < idle->n_items; k++)
            sum += idle->idle_before_us[k] + idle->idle_inside_us[k];
        for (size_t i = 0; i < idle->n_gaps; i++)
            if (idle->gaps[i].place == MS_IDLE_GAP)
                sum += idle->gaps[i].end_us - idle->gaps[i].start_us;
        CHECK_EQ_INT_IN(name, (int)sum, (int)idle->idle_us);
        if (!strcmp(name, "streams"))
            CHECK_TRUE_IN(name, idle->trailing_us > 10000);
        compile_is_work(name, ms_snapshot_trace(s, ms_run_device(run)), run, idle);
    }
    ms_run_free(run);
}

static void cli(void)
{
    char cmd[512];
    int st = 0;
    snprintf(cmd, sizeof cmd, "'%s' summary testdata/v3_pauses.pickle", bin);
    char *out = check_run(cmd, &st);
    CHECK_EQ_INT(st, 0);
    if (out) {
        CHECK_TRUE(strstr(out, "busy") != NULL);
        /* Iterations 3 and 5, each after a pause. */
        const char *a = strstr(out, "+1.50 s idle before");
        CHECK_TRUE(a && strstr(a + 1, "+1.50 s idle before"));
    }
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' summary --json testdata/v3_pauses.pickle", bin);
    out = check_run(cmd, &st);
    cJSON *doc = out ? cJSON_Parse(out) : NULL;
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "files"), 0);
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "devices"), 0);
    const cJSON *its = cJSON_GetObjectItem(d, "iterations");
    const cJSON *third = cJSON_GetArrayItem(cJSON_GetObjectItem(its, "items"), 2);
    CHECK_NEAR(jnum(third, "idle_before_s"), 1.5, 0.01);
    CHECK_NEAR(jnum(third, "busy_s"), 0.0047, 0.003);
    CHECK_NEAR(jnum(its, "trailing_idle_s"), 0, 1e-9);
    cJSON_Delete(doc);
    free(out);
}

int main(void)
{
    char dir[] = "/tmp/memsnap_idle_XXXXXX";
    if (check_cli_setup(&bin, dir))
        return 1;
    pauses();
    CHECK_TRUE(check_each_read(each, NULL) >= 70);
    cli();
    check_remove_dir(dir);
    return check_finish("test_idle");
}
