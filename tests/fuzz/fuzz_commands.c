/* The fuzz target's second half: every memsnap command on the fuzzed bytes, run the way
 * the tool runs it (cmd_*(argc, argv), cli/commands.h), so the CLI's formatters and
 * writers are fuzzed with the analyses behind them: summary, leaks (--stack, --all),
 * categories (--explain, --at), oom (text, JSON and the picture), render (the chart model
 * by alloc, site, phase, category, compile and group; PNG, SVG and the model's JSON),
 * view (the chart pyramid, msr_chart_export_json, and the page, with a 64 KiB budget), diff
 * and ranks (the input against itself and a real snapshot) and report of the input twice
 * (summary.json, index.html, summary.md, charts, the comparison, gates).
 *
 * The input is written to a file in a private directory on tmpfs (/dev/shm, else
 * $TMPDIR), where the outputs go too; what a command prints to stdout or stderr goes
 * to /dev/null through the stdio streams, while a sanitizer's report (written to file
 * descriptor 2 directly) still shows. Files are cleared after each input, so every run
 * starts from the same state.
 *
 * What is costly is bounded so that a run stays fast (about 4 ms for the text commands,
 * 13 ms for the charts and the view, 10-50 ms for a report under ASan): a file
 * that does not read runs one command (the error path is shared by all); the charts and
 * the view run for one input in FUZZ_DRAW_EVERY, the report for one in
 * FUZZ_REPORT_EVERY, chosen by a hash of the bytes, so the choice is the same whenever
 * an input is replayed; and neither runs above FUZZ_DRAW_EVENTS or FUZZ_REPORT_EVENTS
 * events. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "fuzz_commands.h"
#include "memsnap/memsnap.h"

#ifndef MEMSNAP_FUZZ_REF
#error "MEMSNAP_FUZZ_REF: the real snapshot diff and ranks compare the input with"
#endif

#define FUZZ_DRAW_EVENTS 20000
#define FUZZ_REPORT_EVENTS 4000
#define FUZZ_DRAW_EVERY 4
#define FUZZ_REPORT_EVERY 32

static char dir[256];
static char in_path[300], out_path[300], rep_path[300];
static FILE *devnull;

static void remove_dir(void)
{
    rmdir(dir);
}

static int setup(void)
{
    static int state; /* 0 not yet, 1 ready, -1 failed */
    if (state)
        return state;
    state = -1;
    const char *base = "/dev/shm";
    struct stat st;
    if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode) || access(base, W_OK) != 0) {
        base = getenv("TMPDIR");
        if (!base || !*base)
            base = "/tmp";
    }
    snprintf(dir, sizeof dir, "%s/memsnap-fuzz.XXXXXX", base);
    if (!mkdtemp(dir))
        return state;
    atexit(remove_dir); /* emptied after every input */
    snprintf(in_path, sizeof in_path, "%s/input.pickle", dir);
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    snprintf(rep_path, sizeof rep_path, "%s/report", dir);
    devnull = fopen("/dev/null", "w");
    if (!devnull)
        return state;
    /* The fuzz target's small limits, one thread. */
    ms_limits lim = fuzz_limits();
    lim.threads = 1;
    cli_set_limits(&lim);
    state = 1;
    return state;
}

/* Removes what the commands wrote (the report's directory one level deep). */
static void clear_dir(const char *path, int depth)
{
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    char p[600];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (depth < 2)
                clear_dir(p, depth + 1);
            rmdir(p);
        } else {
            unlink(p);
        }
    }
    closedir(d);
}

static int run(int (*cmd)(int, char **), const char *const *args)
{
    char *argv[24];
    int argc = 0;
    while (args[argc] && argc < 23) {
        argv[argc] = (char *)args[argc];
        argc++;
    }
    argv[argc] = NULL;
    int rc = cmd(argc, argv);
    /* Every command returns 0, 1 (findings, a failed gate) or 2 (bad input); anything
     * else is a bug. */
    if (rc < 0 || rc > 2)
        abort();
    return rc;
}

#define RUN(cmd, ...) run(cmd, (const char *const[]){__VA_ARGS__, NULL})

static void write_input(const uint8_t *data, size_t size)
{
    int fd = open(in_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        abort();
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0)
            abort();
        done += (size_t)w;
    }
    close(fd);
}

void fuzz_commands(const uint8_t *data, size_t size, const ms_snapshot *s)
{
    if (setup() != 1)
        abort();
    write_input(data, size);
    FILE *out = stdout, *err = stderr;
    fflush(stdout);
    fflush(stderr);
    stdout = devnull;
    stderr = devnull;
    const char *in = in_path, *ref = MEMSNAP_FUZZ_REF;
    char o[400];
    if (!s) {
        /* Every command reads its files through cli_load: one of them is enough. */
        RUN(cmd_summary, "summary", in);
        goto done;
    }
    uint32_t hash = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ data[i]) * 16777619u;
    uint64_t events = 0;
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        const ms_trace *t = ms_snapshot_trace(s, d);
        events += t ? t->n : 0;
    }
    RUN(cmd_summary, "summary", in);
    RUN(cmd_summary, "summary", "--json", in);
    RUN(cmd_leaks, "leaks", "--stack", "--all", in);
    RUN(cmd_leaks, "leaks", "--json", "--all", in);
    RUN(cmd_categories, "categories", "--explain", "--at", "0.001", in);
    RUN(cmd_categories, "categories", "--json", in);
    RUN(cmd_oom, "oom", in);
    RUN(cmd_oom, "oom", "--json", in);
    RUN(cmd_segments, "segments", in, "--event", "-1", "--at", "0.001");
    RUN(cmd_segments, "segments", "--json", in);
    RUN(cmd_diff, "diff", in, ref, "--threads", "1");
    RUN(cmd_diff, "diff", "--json", ref, in, "--threads", "1");
    RUN(cmd_ranks, "ranks", in, in, ref, "--threads", "1");
    if (events > FUZZ_DRAW_EVENTS || hash % FUZZ_DRAW_EVERY)
        goto done;
    snprintf(o, sizeof o, "%s.svg", out_path);
    RUN(cmd_oom, "oom", in, "-o", o);
    RUN(cmd_segments, "segments", in, "-o", o, "--by", "site");
    snprintf(o, sizeof o, "%s.png", out_path);
    RUN(cmd_render, "render", in, "-o", o, "--width", "320", "--height", "240", "--leaks");
    snprintf(o, sizeof o, "%s.svg", out_path);
    static const char *const by[] = {"alloc", "site", "phase", "category", "compile"};
    for (size_t i = 0; i < sizeof by / sizeof by[0]; i++)
        RUN(cmd_render, "render", in, "-o", o, "--width", "480", "--height", "300", "--by", by[i]);
    RUN(cmd_render, "render", in, "-o", o, "--width", "480", "--height", "300", "--by", "group",
        "--group", "fwd=forward|linear", "--group", "opt=optim");
    snprintf(o, sizeof o, "%s.json", out_path);
    RUN(cmd_render, "render", in, ref, "-o", o, "--format", "json", "--x", "events", "--width",
        "640", "--height", "480", "--show", "fragmentation");
    RUN(cmd_render, "render", in, ref, "-o", o, "--format", "json", "--overlay", "--width", "640",
        "--height", "300");
    snprintf(o, sizeof o, "%s.html", out_path);
    RUN(cmd_view, "view", in, "-o", o, "--budget", "64KiB");
    if (events > FUZZ_REPORT_EVENTS || (hash / FUZZ_DRAW_EVERY) % (FUZZ_REPORT_EVERY / FUZZ_DRAW_EVERY))
        goto done;
    /* The input twice: the comparison section with the fuzzed numbers on both sides, and
     * no real snapshot's charts drawn at every run. */
    RUN(cmd_report, "report", in, in, "-o", rep_path, "--max-peak", "1GiB", "--fail-on-leaks",
        "--fail-on-oom");
done:
    fflush(devnull);
    stdout = out;
    stderr = err;
    clear_dir(dir, 0);
}
