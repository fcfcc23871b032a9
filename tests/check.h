/* A small test harness: each failed check prints both sides and where, then the test
 * keeps going so one run shows every failure. main() returns check_finish().
 *
 * The _IN forms name what a check is about (a snapshot, a case) in the message, so a
 * test that runs over many files says which one failed. Beside the checks: reading
 * files, the snapshots' truth.json counters, a snapshot with its busiest device's
 * timeline, every testdata/ snapshot (or device) in turn, and running the CLI. */
#ifndef MEMSNAP_TEST_CHECK_H
#define MEMSNAP_TEST_CHECK_H

#include <cjson/cJSON.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memsnap/iterations.h"
#include "memsnap/memsnap.h"

static int check_failures = 0;
static int check_count = 0;

/* Counts a failed check and prints "FILE:LINE: [CTX: ]what". */
static inline void check_report_(const char *file, int line, const char *ctx, const char *fmt,
                                 ...) __attribute__((format(printf, 4, 5)));
static inline void check_report_(const char *file, int line, const char *ctx, const char *fmt,
                                 ...)
{
    va_list ap;
    check_failures++;
    fprintf(stderr, "%s:%d: ", file, line);
    if (ctx)
        fprintf(stderr, "%s: ", ctx);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* A failure that is not a comparison (a file that cannot be read): the message as given.
 * The helpers below count a passed check for each step that works, so a test's count
 * does not depend on whether its inputs loaded. */
static inline void check_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void check_fail(const char *fmt, ...)
{
    va_list ap;
    check_count++;
    check_failures++;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

#define CHECK_TRUE_IN(ctx, cond)                                                       \
    do {                                                                               \
        check_count++;                                                                 \
        if (!(cond))                                                                   \
            check_report_(__FILE__, __LINE__, (ctx), "CHECK_TRUE(%s) failed", #cond);  \
    } while (0)

#define CHECK_EQ_INT_IN(ctx, a, b)                                                     \
    do {                                                                               \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                \
        check_count++;                                                                 \
        if (check_a_ != check_b_)                                                      \
            check_report_(__FILE__, __LINE__, (ctx), "%s == %s failed: %lld != %lld", #a, \
                          #b, check_a_, check_b_);                                     \
    } while (0)

#define CHECK_EQ_STR_IN(ctx, a, b)                                                     \
    do {                                                                               \
        const char *check_a_ = (a), *check_b_ = (b);                                   \
        check_count++;                                                                 \
        if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0)                 \
            check_report_(__FILE__, __LINE__, (ctx), "%s == %s failed: \"%s\" != \"%s\"", \
                          #a, #b, check_a_ ? check_a_ : "(null)",                      \
                          check_b_ ? check_b_ : "(null)");                             \
    } while (0)

/* |a - b| <= tol; NaN on either side fails. */
#define CHECK_NEAR_IN(ctx, a, b, tol)                                                  \
    do {                                                                               \
        double check_a_ = (double)(a), check_b_ = (double)(b);                         \
        check_count++;                                                                 \
        if (!(fabs(check_a_ - check_b_) <= (tol)))                                     \
            check_report_(__FILE__, __LINE__, (ctx), "%s ~ %s failed: %.6f vs %.6f", #a, \
                          #b, check_a_, check_b_);                                     \
    } while (0)

#define CHECK_TRUE(cond) CHECK_TRUE_IN(NULL, cond)
#define CHECK_EQ_INT(a, b) CHECK_EQ_INT_IN(NULL, a, b)
#define CHECK_EQ_STR(a, b) CHECK_EQ_STR_IN(NULL, a, b)
#define CHECK_NEAR(a, b, tol) CHECK_NEAR_IN(NULL, a, b, tol)

static inline int check_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

/* ------------------------------------------------------------------ files */

static inline unsigned char *check_read_(const char *path, size_t *len, size_t extra)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = n >= 0 && (size_t)n + extra > 0 ? malloc((size_t)n + extra) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    if (extra)
        buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

/* Reads a whole file into a buffer of exactly its size, so the sanitizers see a parser
 * that reads one byte past the input; NULL when it cannot. */
static inline unsigned char *check_read_file(const char *path, size_t *len)
{
    return check_read_(path, len, 0);
}

/* Reads a whole file as a string (NUL-terminated; *len without the NUL); NULL when it
 * cannot. */
static inline char *check_read_text(const char *path, size_t *len)
{
    return (char *)check_read_(path, len, 1);
}

/* ------------------------------------------------------------------ snapshots */

/* testdata/NAME.truth.json, parsed (cJSON_Delete it); NULL, counted as a failure, when it
 * cannot be read. */
static inline cJSON *check_truth_load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "testdata/%s.truth.json", name);
    size_t len = 0;
    char *text = check_read_text(path, &len);
    cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    if (!doc)
        check_fail("%s: cannot read or parse", path);
    else
        check_count++;
    return doc;
}

/* The number `key` of an object of a truth file; -1, counted as a failure, when it lacks
 * one. */
static inline double check_truth_num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) {
        check_fail("truth lacks %s", key);
        return -1;
    }
    return v->valuedouble;
}

/* One of the allocator's counters at the end ("requested_bytes.all.peak"), as
 * check_truth_num. */
static inline double check_truth_counter(const cJSON *truth, const char *key)
{
    return check_truth_num(cJSON_GetObjectItemCaseSensitive(truth, "counters_at_end"), key);
}

/* The same counter from testdata/NAME.truth.json. */
static inline double check_truth_file_counter(const char *name, const char *key)
{
    cJSON *truth = check_truth_load(name);
    double v = truth ? check_truth_counter(truth, key) : -1;
    cJSON_Delete(truth);
    return v;
}

/* Reads a snapshot and builds the timeline (curves and allocations) of its busiest
 * device. On failure prints why, counts a failure, frees what it made and returns -1. */
static inline int check_open_timeline(const char *path, ms_snapshot **s, int *device,
                                      ms_timeline **t)
{
    ms_error err;
    *s = NULL;
    *t = NULL;
    if (ms_snapshot_read_file(s, path, NULL, &err)) {
        check_fail("%s: cannot read: %s", path, err.message);
        return -1;
    }
    check_count++;
    *device = ms_snapshot_busiest_device(*s);
    if (ms_timeline_build(t, *s, *device, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS, &err)) {
        check_fail("%s: timeline: %s", path, err.message);
        ms_snapshot_free(*s);
        *s = NULL;
        return -1;
    }
    check_count++;
    return 0;
}

/* Calls fn(path, name, arg) for every testdata/NAME`suffix` (".pickle", ".json"), in
 * directory order, and returns how many; testdata/ missing (not run from the repository
 * root) is a failure. */
static inline size_t check_each_file(const char *suffix,
                                     void (*fn)(const char *path, const char *name, void *arg),
                                     void *arg)
{
    DIR *dir = opendir("testdata");
    if (!dir) {
        check_fail("run from the repository root (testdata/ not found)");
        return 0;
    }
    check_count++;
    size_t files = 0, k = strlen(suffix);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n <= k || strcmp(de->d_name + n - k, suffix) != 0)
            continue;
        char path[512], name[256];
        snprintf(path, sizeof path, "testdata/%s", de->d_name);
        snprintf(name, sizeof name, "%.*s", (int)(n - k), de->d_name);
        fn(path, name, arg);
        files++;
    }
    closedir(dir);
    return files;
}

/* check_each_file for the snapshots, testdata/NAME.pickle. */
static inline size_t check_each_snapshot(void (*fn)(const char *path, const char *name,
                                                    void *arg),
                                         void *arg)
{
    return check_each_file(".pickle", fn, arg);
}

/* Reads every testdata/NAME.pickle and calls fn(name, snapshot, arg) with it; a file that
 * does not read is a failure. Returns how many files there were. */
typedef void (*check_snapshot_fn)(const char *name, ms_snapshot *s, void *arg);
struct check_read_ctx {
    check_snapshot_fn fn;
    void *arg;
};
static inline void check_read_one_(const char *path, const char *name, void *arg)
{
    const struct check_read_ctx *c = arg;
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, path, NULL, &err)) {
        check_fail("%s: %s", name, err.message);
        return;
    }
    c->fn(name, s, c->arg);
    ms_snapshot_free(s);
}
static inline size_t check_each_read(check_snapshot_fn fn, void *arg)
{
    struct check_read_ctx c = {fn, arg};
    return check_each_snapshot(check_read_one_, &c);
}

/* Reads `path` and calls fn for each device with its timeline of every life
 * (MS_TIMELINE_ALLOCS) and its iterations; a device whose are not built is a failure. */
static inline void check_each_device(const char *path, const char *name,
                                     void (*fn)(const char *name, const ms_snapshot *s, int d,
                                                const ms_timeline *t, const ms_iterations *it))
{
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, path, NULL, &err) != 0) {
        check_fail("%s: %s", name, err.message);
        return;
    }
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        ms_timeline *t = NULL;
        ms_iterations *it = NULL;
        if (ms_timeline_build(&t, s, d, MS_TIMELINE_ALLOCS, &err) != 0 ||
            ms_iterations_find(&it, s, d, t, NULL, &err) != 0) {
            check_fail("%s device %d: %s", name, d, err.message);
            ms_timeline_free(t);
            continue;
        }
        check_count++;
        fn(name, s, d, t, it);
        ms_iterations_free(it);
        ms_timeline_free(t);
    }
    ms_snapshot_free(s);
}

/* ------------------------------------------------------------------ the CLI */

/* The memsnap binary (ctest sets MEMSNAP_BIN) and a fresh directory made from the
 * mkdtemp template in `dir`; prints why and returns -1 when either is missing. */
static inline int check_cli_setup(const char **bin, char *dir)
{
    *bin = getenv("MEMSNAP_BIN");
    if (!*bin) {
        fprintf(stderr, "MEMSNAP_BIN is not set (ctest sets it)\n");
        return -1;
    }
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    return 0;
}

static inline void check_remove_dir(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* Runs a shell command and returns its standard output (caller frees; NULL when it could
 * not run), with the exit status in *status (-1 when it did not exit). */
static inline char *check_run(const char *cmdline, int *status)
{
    FILE *f = popen(cmdline, "r");
    if (!f) {
        *status = -1;
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 >= cap) {
            cap *= 2;
            char *p = realloc(buf, cap);
            if (!p)
                free(buf);
            buf = p;
        }
    }
    if (buf)
        buf[n] = '\0';
    int st = pclose(f);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

#endif
