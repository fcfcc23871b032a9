/* Issue 34's hostile sizes ("linear in every count", "memory bounded by the file"): each
 * file written here by tests/gen_hostile.h, run through the memsnap binary (MEMSNAP_BIN),
 * and held to a generous bound on the child's own CPU time and peak RSS (wait4), a guard
 * against going quadratic or keeping a state per event, not a benchmark: the figures
 * are in docs/benchmarks.md and docs/security.md. CPU time rather than wall time, so a
 * loaded CI machine does not fail it.
 *
 * The rows are scaled down where the full size would cost a CI machine more than a few
 * seconds (the bounds scale with them; an ASan build, whose time and memory say nothing,
 * runs a tenth of each and checks only exit codes and outputs). `test_hostile_bounds
 * OUTDIR KIND N` writes one file, for timing the full sizes by hand. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>

#include "check.h"
#include "gen_hostile.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* The hostile inputs by name (the child process is told which to write). */
static const struct {
    const char *kind;
    void (*write)(hg *g, int n);
} KINDS[] = {
    {"oom_each", hg_oom_each}, {"devices", hg_devices}, {"stacks", hg_stacks},
    {"lists", hg_lists},       {"pushes", hg_pushes},   {"memos", hg_memos},
    {"strings", hg_strings},   {"segments", hg_segments},
};

static int write_kind(const char *path, const char *kind, int n)
{
    hg g;
    memset(&g, 0, sizeof g);
    size_t k = 0;
    while (k < sizeof KINDS / sizeof KINDS[0] && strcmp(KINDS[k].kind, kind))
        k++;
    if (k == sizeof KINDS / sizeof KINDS[0])
        return -1;
    KINDS[k].write(&g, n);
    FILE *f = fopen(path, "wb");
    int rc = f && fwrite(g.w.p, 1, g.w.n, f) == g.w.n ? 0 : -1;
    if (f && fclose(f))
        rc = -1;
    free(g.w.p);
    return rc;
}

typedef struct cost {
    int status; /* exit code, or 128 + signal */
    double cpu_s; /* user + system */
    double rss_mib;
} cost;

/* Runs argv (stdout and stderr to files in dir), and what the child itself cost. */
static cost run(const char *dir, char *const argv[])
{
    cost c = {-1, 0, 0};
    pid_t pid = fork();
    if (pid == 0) {
        /* A regression fails the test in a minute rather than hanging it. */
        struct rlimit cpu = {60, 60};
        setrlimit(RLIMIT_CPU, &cpu);
        char path[4096];
        snprintf(path, sizeof path, "%s/stdout", dir);
        int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        snprintf(path, sizeof path, "%s/stderr", dir);
        int err = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) != pid)
        return c;
    c.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    c.cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
              (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    c.rss_mib = (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
    return c;
}

static double file_mib(const char *path)
{
    struct stat st;
    return stat(path, &st) ? 0 : (double)st.st_size / (1024.0 * 1024.0);
}

static bool stderr_has(const char *dir, const char *what)
{
    char path[4096], buf[4096];
    snprintf(path, sizeof path, "%s/stderr", dir);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    return strstr(buf, what) != NULL;
}

/* Files in dir whose name starts with ".memsnap." (a report's temporaries). */
static int temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += !strncmp(e->d_name, ".memsnap.", 9);
    if (d)
        closedir(d);
    return n;
}

static char *bin;
static char tmp[] = "/tmp/memsnap_hostile_XXXXXX";

/* Runs argv in tmp and prints what it cost, under `what`. */
static cost timed(const char *what, char *const argv[])
{
    cost c = run(tmp, argv);
    printf("  %-34s exit %d, %.2f s CPU, %.1f MiB\n", what, c.status, c.cpu_s, c.rss_mib);
    return c;
}

/* The hostile input `kind` of size n, written to tmp/KIND.pickle (its path into path);
 * its size in MiB. */
static double hostile_file(char *path, size_t cap, const char *kind, int n)
{
    snprintf(path, cap, "%s/%s.pickle", tmp, kind);
    CHECK_EQ_INT(write_kind(path, kind, n), 0);
    return file_mib(path);
}

/* `memsnap summary FILE`, which must exit with `status`. */
static cost summary_of(const char *file, const char *what, int status)
{
    char *argv[] = {bin, "summary", (char *)file, NULL};
    cost c = timed(what, argv);
    CHECK_EQ_INT(c.status, status);
    return c;
}

/* `memsnap report FILE -o TMP/DIR`, which must succeed. */
static cost report_into(const char *file, const char *dir, const char *what)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/%s", tmp, dir);
    char *argv[] = {bin, "report", (char *)file, "-o", out, NULL};
    cost c = timed(what, argv);
    CHECK_EQ_INT(c.status, 0);
    return c;
}

/* `render --format json` of FILE: its OOM marks run down the plot, or (`rug`) only its
 * top 9 pixels. */
static void oom_marks(const char *file, bool rug)
{
    char json[4096];
    snprintf(json, sizeof json, "%s/oom_marks.json", tmp);
    char *argv[] = {bin, "render", (char *)file, "--format", "json", "-o", json, NULL};
    CHECK_EQ_INT(timed(rug ? "oom_each: OOM rug" : "oom_each: OOM lines", argv).status, 0);
    size_t len = 0;
    char *text = check_read_text(json, &len);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *panel = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "panels"), 0);
    const cJSON *plot = cJSON_GetObjectItemCaseSensitive(panel, "plot");
    double plot_h = cJSON_GetNumberValue(cJSON_GetArrayItem(plot, 3));
    int marks = 0;
    const cJSON *line;
    cJSON_ArrayForEach(line, cJSON_GetObjectItemCaseSensitive(panel, "lines")) {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "kind")), "oom"))
            continue;
        const cJSON *pts = cJSON_GetObjectItemCaseSensitive(line, "points");
        double y0 = cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetArrayItem(pts, 0), 1));
        double y1 = cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetArrayItem(pts, 1), 1));
        CHECK_TRUE(rug ? fabs(y1 - y0) <= 9.01 : fabs(fabs(y1 - y0) - plot_h) < 0.01);
        marks++;
    }
    CHECK_TRUE(marks >= (rug ? 500 : 50));
    cJSON_Delete(doc);
}

/* An OOM after every allocation: one state kept per OOM was quadratic in time and
 * memory (10k OOMs: 5.7 s and 515 MB). Issue 34: 300,000 in under 3 s, peak memory at
 * most 4x the file. Run at 100,000 here, with 3 s of CPU each. */
static void oom_each(void)
{
    int n = SANITIZED ? 10000 : 100000;
    char path[4096];
    double mib = hostile_file(path, sizeof path, "oom_each", n);
    cost c = summary_of(path, "oom_each: summary", 0);
    char *oom[] = {bin, "oom", "--json", path, NULL};
    cost o = timed("oom_each: oom --json", oom);
    CHECK_EQ_INT(o.status, 0);
    /* The first 100 explained, the rest counted. */
    char stdout_path[4096];
    snprintf(stdout_path, sizeof stdout_path, "%s/stdout", tmp);
    size_t len = 0;
    char *text = check_read_text(stdout_path, &len);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECK_TRUE(doc != NULL);
    const cJSON *file = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "files"), 0);
    if (!file)
        file = doc;
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(file, "ooms")), 100);
    const cJSON *left = cJSON_GetObjectItemCaseSensitive(file, "ooms_left_out");
    CHECK_EQ_INT(cJSON_IsNumber(left) ? (int64_t)left->valuedouble : -1, n - 100);
    cJSON_Delete(doc);
    cost r = report_into(path, "report_oom", "oom_each: report");
    /* What a report holds whatever the file's size (libraries, fonts, the 1600 x 800
     * picture, an OOM marker in each of its columns, which cairo strokes as one dashed
     * path of 11 MB): a report of 2,000 OOMs (140 KB), written over the large file,
     * which is done with. */
    char small[4096];
    hostile_file(small, sizeof small, "oom_each", 2000);
    cost r0 = report_into(small, "report_small", "oom_each: report of 2,000");
    /* Its 2,000 OOMs fill every column: marked along the top, not a line down each
     * (which hid the chart); 50 OOMs keep their lines. */
    oom_marks(small, true);
    char few[4096];
    hostile_file(few, sizeof few, "oom_each", 50);
    oom_marks(few, false);
    /* The view embeds no state it cannot show: past 20,000 blocks a state is left out.
     * Right after event e (a segment, then an alloc and an oom each) the one segment
     * holds (e + 1) / 2 allocations and the free rest: at most 39,997 qualifies. */
    char page[4096];
    snprintf(page, sizeof page, "%s/report_oom/index.html", tmp);
    size_t page_len = 0;
    char *html = check_read_text(page, &page_len);
    const char *st = html ? strstr(html, "\"states\":{") : NULL;
    CHECK_TRUE(st != NULL);
    int shown = 0;
    long long last = -1;
    for (const char *p = st; p && (p = strstr(p, "{\"ev\":")); p++) {
        long long ev = strtoll(p + 6, NULL, 10);
        CHECK_TRUE((ev + 1) / 2 + 1 <= 20000);
        CHECK_TRUE(ev > last);
        last = ev;
        shown++;
    }
    CHECK_TRUE(shown >= 3);
    free(html);
    if (SANITIZED)
        return;
    CHECK_TRUE(c.cpu_s < 3.0);
    CHECK_TRUE(o.cpu_s < 3.0);
    CHECK_TRUE(r.cpu_s < 3.0);
    /* oom keeps one state, not one per OOM, and summary each life once (the set alive
     * at the peak is read from the lives, the peak's free memory from a replay of 32
     * bytes a block): both within the 4x the file, plus the process itself.
     * The report within 4x the file beyond what a report of 100 OOMs takes: its view
     * slices the trace only within the file's size, its states' replay stops at the
     * largest state it can show, and its charts are drawn beside nothing else. */
    CHECK_TRUE(o.rss_mib < 4 * mib + 8);
    CHECK_TRUE(c.rss_mib < 4 * mib + 8);
    CHECK_TRUE(r.rss_mib < 4 * mib + r0.rss_mib);
}

/* The trap for the states' bound, which counts the blocks a state shows, not all it
 * holds: 400 segments of 61 blocks (24,400), of which a state shows 300 (18,300). The
 * states after the last segment must be on the page; a bound on all the blocks, or the
 * live allocations (24,000) taken for what is shown, would leave them out. */
static void segments_shown(void)
{
    char path[4096], page[4096];
    hostile_file(path, sizeof path, "segments", 400);
    snprintf(page, sizeof page, "%s/segments.html", tmp);
    char *view[] = {bin, "view", path, "-o", page, NULL};
    CHECK_EQ_INT(timed("segments: view", view).status, 0);
    size_t len = 0;
    char *html = check_read_text(page, &len);
    int full = 0;
    for (const char *p = html; p && (p = strstr(p, "\"nseg\":400,")); p++)
        full++;
    CHECK_TRUE(full >= 1);
    free(html);
}

/* Devices, one allocation and one OOM each: report counted and looked devices up per
 * device (8,000: 11.3 s; quadratic). Issue 34: 65,535 in under 5 s. Run at 16,384 here
 * with the same 5 s; no temporary files left. */
/* ooms_left_out, absent when none is */
static int report_left_out(const cJSON *dev)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(dev, "ooms_left_out");
    return cJSON_IsNumber(v) ? v->valueint : 0;
}

static void devices(void)
{
    int n = SANITIZED ? 2048 : 16384;
    char path[4096], out[4096];
    hostile_file(path, sizeof path, "devices", n);
    snprintf(out, sizeof out, "%s/report_devices", tmp);
    char *rep[] = {bin, "report", path, "-o", out, NULL};
    cost r = timed("devices: report", rep);
    CHECK_EQ_INT(r.status, 0);
    CHECK_EQ_INT(temporaries(out), 0);
    char index[4200];
    snprintf(index, sizeof index, "%s/index.html", out);
    CHECK_TRUE(file_mib(index) > 0);
    if (!SANITIZED)
        CHECK_TRUE(r.cpu_s < 5.0); /* the time for four times the devices */
    /* Devices past the page's 64 are written to summary.json from a spool, not the tree
     * (report_spool_device): every one is back in place, whole, in order. */
    char sj[4200];
    snprintf(sj, sizeof sj, "%s/summary.json", out);
    size_t len;
    unsigned char *text = check_read_file(sj, &len);
    cJSON *doc = text ? cJSON_ParseWithLength((const char *)text, len) : NULL;
    CHECK_TRUE(doc != NULL);
    const cJSON *file = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "files"), 0);
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(file, "devices");
    const cJSON *leaks = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(file, "leaks"), "devices");
    CHECK_EQ_INT(cJSON_GetArraySize(devs), n);
    CHECK_EQ_INT(cJSON_GetArraySize(leaks), n);
    int k = 0, bad = 0;
    const cJSON *dev, *ld = leaks ? leaks->child : NULL;
    cJSON_ArrayForEach(dev, devs)
    {
        const cJSON *peak = cJSON_GetObjectItemCaseSensitive(dev, "peak");
        const cJSON *ooms = cJSON_GetObjectItemCaseSensitive(dev, "ooms");
        /* one allocation of 512 bytes and one OOM on each device, by construction */
        if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(dev, "device")) != k ||
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(peak, "bytes")) != 512 ||
            cJSON_GetArraySize(ooms) + report_left_out(dev) != 1 ||
            !ld || cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ld, "device")) != k ||
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ld, "oom_count")) != 1)
            bad++;
        ld = ld ? ld->next : NULL;
        k++;
    }
    CHECK_EQ_INT(bad, 0);
    cJSON_Delete(doc);
    free(text);
}

/* Never-freed allocations, each with its own stack: view charted every life in every
 * window and made a retained finding per site (500,000: 21.9 s, render 0.6 s). Issue
 * 34: view at most 3x render. Run at 150,000 here; the guard allows a second more. */
static void stacks(void)
{
    int n = SANITIZED ? 15000 : 150000;
    char path[4096], html[4096], png[4096];
    hostile_file(path, sizeof path, "stacks", n);
    snprintf(html, sizeof html, "%s/stacks.html", tmp);
    snprintf(png, sizeof png, "%s/stacks.png", tmp);
    char *view[] = {bin, "view", path, "-o", html, NULL};
    char *render[] = {bin, "render", path, "-o", png, NULL};
    cost v = timed("stacks: view", view);
    cost r = timed("stacks: render", render);
    CHECK_EQ_INT(v.status, 0);
    CHECK_EQ_INT(r.status, 0);
    CHECK_TRUE(file_mib(html) > 0);
    if (!SANITIZED)
        CHECK_TRUE(v.cpu_s < 3 * r.cpu_s + 1.0);
}

/* `]` then `]a` 20 million times (40 MB): 944 MB before the missing STOP refused it.
 * Issue 34: refused before memory passes 4x the file. */
static void lists(void)
{
    char path[4096];
    double mib = hostile_file(path, sizeof path, "lists", SANITIZED ? 2000000 : 20000000);
    cost c = summary_of(path, "lists: summary", 2);
    /* Refused by the containers' ceiling, not by the missing STOP at the end. */
    CHECK_TRUE(stderr_has(tmp, "containers"));
    if (!SANITIZED)
        CHECK_TRUE(c.rss_mib < 4 * mib);
}

int main(int argc, char **argv)
{
    if (argc == 4)
        return write_kind(argv[1], argv[2], atoi(argv[3])) ? 2 : 0;
    bin = getenv("MEMSNAP_BIN");
    if (!bin || access(bin, X_OK)) {
        printf("SKIP: MEMSNAP_BIN is not set to the memsnap binary\n");
        return 77;
    }
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 2;
    }
    oom_each();
    stacks();
    segments_shown();
    lists();
    /* Last: it reads the 65,535-device report's summary.json into this process, and a
     * child forked after that starts with this process's pages in its ru_maxrss, which
     * the other cases hold to a bound. */
    devices();
    check_remove_dir(tmp);
    return check_finish("test_hostile_bounds");
}
