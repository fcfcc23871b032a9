/* `memsnap report` opens each device's run once (issue 36): the summary, the leaks and
 * the OOMs of a device all read one run, so its timeline is built once. Counted through
 * the run's test hook (ms__run_stats) around cmd_report run in this process, on bundled
 * recordings (one device; two files) and on a file of five devices, each with one
 * allocation and one OOM (tests/gen_hostile.h), whose truth is known by construction.
 * Also: summary.json writes the recording's 16-digit times as integers. */
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
                            after.timelines_built - before.timelines_built};
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
}

int main(void)
{
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
