/* `memsnap report` opens each device's run once (issue 36): the summary, the leaks and
 * the OOMs of a device all read one run, so its timeline is built once. Counted through
 * the run's test hook (ms__run_stats) around cmd_report run in this process, on bundled
 * recordings (one device; two files) and on a file of five devices, each with one
 * allocation and one OOM (tests/gen_hostile.h), whose truth is known by construction.
 * Each run pairs its device's annotations once: iterations, phases, compile windows,
 * categories and shape all read the run's ranges. Also: summary.json writes the recording's 16-digit times as integers, and one run
 * answering the summary, leaks, categories and OOMs simulates its trace once (twice
 * when opened with summary's cheap timeline), with the same JSON either way. */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
/* Only hg_devices of the generators is used here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "gen_hostile.h"
#pragma GCC diagnostic pop

#include "analysis/run_internal.h"
#include "commands.h"

/* The charts' fonts: fontconfig keeps its caches for the process (as test_oom_chart). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig\n";
}

static char tmpdir[64] = "/tmp/memsnap-report-runs-XXXXXX";

/* Runs `memsnap report FILES... -o DIR` in this process; the runs and timelines it made. */
static ms__run_counts report(char **files, int n, const char *dir, int *rc)
{
    char *argv[8];
    int argc = 0;
    argv[argc++] = "report";
    for (int i = 0; i < n; i++)
        argv[argc++] = files[i];
    argv[argc++] = "-o";
    argv[argc++] = (char *)dir;
    argv[argc] = NULL;
    ms__run_counts before, after;
    ms__run_stats(&before);
    fflush(stdout);
    *rc = cmd_report(argc, argv);
    ms__run_stats(&after);
    return (ms__run_counts){after.runs_opened - before.runs_opened,
                            after.timelines_built - before.timelines_built,
                            after.annotations_paired - before.annotations_paired};
}

static void expect(const char *what, char **files, int n, size_t devices)
{
    static int k;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/r%d", tmpdir, k++);
    int rc = -1;
    ms__run_counts c = report(files, n, dir, &rc);
    CHECK_EQ_INT_IN(what, rc, 0);
    CHECK_EQ_INT_IN(what, (long long)c.runs_opened, (long long)devices);
    CHECK_EQ_INT_IN(what, (long long)c.timelines_built, (long long)devices);
    CHECK_EQ_INT_IN(what, (long long)c.annotations_paired, (long long)devices);
}

/* The summary, leaks, categories and OOMs of `path`'s device 0 from one run opened with
 * timeline flags `flags`: the JSON of each, and the timelines the run built (the run
 * pairs the annotations once, checked here). A cheap
 * timeline is first read as such, then its categories asked, so that the OOMs need the
 * reserved curve yet: three simulations before the run extended its one timeline. */
static size_t run_views(const char *path, unsigned flags, char *json[4])
{
    static const char *const what[4] = {"summary", "leaks", "categories", "ooms"};
    ms_snapshot *s = NULL;
    ms_run *run = NULL;
    ms_error err;
    ms_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.timeline_flags = flags;
    ms__run_counts before, after;
    ms__run_stats(&before);
    CHECK_EQ_INT_IN(path, ms_snapshot_read_file(&s, path, NULL, &err), 0);
    CHECK_EQ_INT_IN(path, s ? ms_run_open(&run, s, 0, &ro, &err) : -1, 0);
    const ms_timeline *t = NULL;
    const ms_categories *c = NULL;
    if (run && flags)
        CHECK_TRUE_IN(path, !ms_run_timeline(&t, run, &err) && !ms_run_categories(&c, run, &err));
    for (int i = 0; i < 4; i++) {
        json[i] = NULL;
        if (run)
            CHECK_EQ_INT_IN(what[i], ms_run_json(&json[i], NULL, run, what[i], &err), 0);
    }
    ms_run_free(run);
    ms_snapshot_free(s);
    ms__run_stats(&after);
    CHECK_EQ_INT_IN(path, (long long)(after.annotations_paired - before.annotations_paired), 1);
    return after.timelines_built - before.timelines_built;
}

static void one_timeline(const char *path)
{
    char *full[4], *cheap[4];
    CHECK_EQ_INT_IN(path, (long long)run_views(path, 0, full), 1);
    CHECK_EQ_INT_IN(path,
                    (long long)run_views(path, MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE, cheap),
                    2);
    for (int i = 0; i < 4; i++) {
        CHECK_TRUE_IN(path, full[i] && cheap[i] && !strcmp(full[i], cheap[i]));
        ms_free(full[i]);
        ms_free(cheap[i]);
    }
}

int main(void)
{
    one_timeline("testdata/oom.pickle");
    one_timeline("testdata/ddp_rank0.pickle");
    if (!mkdtemp(tmpdir)) {
        check_fail("cannot make a temporary directory");
        return check_finish("test_report_runs");
    }
    char *one[] = {"testdata/oom.pickle"};
    expect("oom.pickle", one, 1, 1);
    /* summary.json is written by the one JSON writer: the trace's 16-digit times are
     * whole integers, never 1.79531069481102e+15. */
    char sj[128];
    snprintf(sj, sizeof sj, "%s/r0/summary.json", tmpdir);
    size_t len = 0;
    char *text = check_read_text(sj, &len);
    CHECK_TRUE(text && strstr(text, "\"first_us\":\t1") && !strstr(text, "e+1"));
    free(text);
    char *ranks[] = {"testdata/ddp_rank0.pickle", "testdata/ddp_rank1.pickle"};
    expect("ddp ranks", ranks, 2, 2);

    hg g;
    memset(&g, 0, sizeof g);
    hg_devices(&g, 5);
    char path[128];
    snprintf(path, sizeof path, "%s/devices.pickle", tmpdir);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(g.w.p, 1, g.w.n, f) == g.w.n;
    if (f && fclose(f))
        ok = false;
    free(g.w.p);
    CHECK_TRUE(ok);
    char *five[] = {path};
    expect("five devices", five, 1, 5);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    CHECK_EQ_INT(system(cmd), 0);
    return check_finish("test_report_runs");
}
