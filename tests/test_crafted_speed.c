/* Inputs crafted to make memsnap crawl (issue 24, docs/security.md "Inputs that made it
 * crawl"): each is written here as a pickle, then every command that reads it must
 * finish within a generous bound. A regression guard, not a benchmark: the bounds are
 * about 5x what the near-linear code takes under ASan on two busy shared cores (2-4 s,
 * report 12 s), and far below what the quadratic code took (oom 14 s and categories
 * 38 s in a Release build; docs/benchmarks.md).
 *
 *   test_crafted_speed            the test (ctest; MEMSNAP_BIN names the binary)
 *   test_crafted_speed OUTDIR     only writes the crafted files into OUTDIR
 *   test_crafted_speed OUTDIR S   the same at scale S (S=1: the sizes of the issue;
 *                                 tests/fuzz/corpus/issue24-* are S=0.05 and 0.002)
 */
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "check.h"
#include "pickle_writer.h"
#include "memsnap/allocator.h"
#include "memsnap/oom.h"
#include "memsnap/phases.h"

/* {'action': ..., 'addr': ..., 'size': ..., 'stream': 0, 'time_us': ..., 'frames': []} */
static void event(pk *w, const char *action, int64_t addr, int64_t size, int64_t t)
{
    op(w, '}');
    op(w, '(');
    str(w, "action");
    str(w, action);
    str(w, "addr");
    num(w, addr);
    str(w, "size");
    num(w, size);
    str(w, "stream");
    num(w, 0);
    str(w, "time_us");
    num(w, t);
    str(w, "frames");
    op(w, ']');
    op(w, 'u');
}

static void annotation(pk *w, const char *name, bool start, int64_t t)
{
    op(w, '}');
    op(w, '(');
    str(w, "name");
    str(w, name);
    str(w, "stage");
    str(w, start ? "START" : "END");
    str(w, "device");
    num(w, 0);
    str(w, "time_us");
    num(w, t);
    op(w, 'u');
}

static void begin(pk *w)
{
    snapshot_begin(w);
    op(w, '(');
    op(w, ']');
    op(w, '(');
}

/* Closes the trace list; annotations follow when `annotations` is true. */
static void end_trace(pk *w, bool annotations)
{
    op(w, 'e'); /* the events into the trace */
    op(w, 'e'); /* the trace into device_traces */
    if (annotations) {
        str(w, "external_annotations");
        op(w, ']');
        op(w, '(');
    }
}

static void finish(pk *w, bool annotations)
{
    if (annotations)
        op(w, 'e');
    op(w, 'u');
    op(w, '.');
}

/* One segment; `allocs` allocations each starting in the middle of a free block (the
 * address the allocator could not have chosen, so each is placed by carving the free
 * block that holds it), then `ooms` oom events. */
static void make_oom_storm(pk *w, int allocs, int ooms)
{
    const int64_t base = (int64_t)0x7f0000000000;
    begin(w);
    int64_t t = 1000;
    event(w, "segment_alloc", base, (int64_t)allocs * 4096 + 4096, t++);
    for (int k = 0; k < allocs; k++)
        event(w, "alloc", base + (int64_t)k * 4096 + 1024, 512, t++);
    for (int k = 0; k < ooms; k++)
        event(w, "oom", 1 << 20, (int64_t)1 << 30, t++);
    end_trace(w, false);
    finish(w, false);
}

/* `n` `## forward ##` STARTs followed by `n` ENDs, plus n/2 STARTs of a second name
 * opened inside them and closed after them (each forward END then passes the other
 * name's open ranges), over a trace of `events` allocations and frees. */
static void make_annotation_storm(pk *w, int n, int events)
{
    const int64_t base = (int64_t)0x7f0000000000;
    begin(w);
    int64_t t0 = 1000, span = (int64_t)n * 4 + 100;
    event(w, "segment_alloc", base, (int64_t)events * 4096, t0);
    for (int k = 0; k < events / 2; k++) {
        event(w, "alloc", base + (int64_t)k * 4096, 4096, t0 + 1 + span * k / (events / 2));
        if (k % 2)
            event(w, "free_completed", base + (int64_t)k * 4096, 4096,
                  t0 + 2 + span * k / (events / 2));
    }
    end_trace(w, true);
    int64_t t = t0 + 1;
    for (int k = 0; k < n; k++)
        annotation(w, "## forward ##", true, t++);
    for (int k = 0; k < n / 2; k++)
        annotation(w, "## backward ##", true, t++);
    for (int k = 0; k < n; k++)
        annotation(w, "## forward ##", false, t++);
    for (int k = 0; k < n / 2; k++)
        annotation(w, "## backward ##", false, t++);
    finish(w, true);
}

/* `n` segments made at falling addresses (each new one sorts first), each holding one
 * allocation, then all freed, then one oom: the allocator replay keeps its segments by
 * address and works out which segments were there before the trace began. */
static void make_segment_storm(pk *w, int n)
{
    const int64_t base = (int64_t)0x7f0000000000, seg = 2 << 20;
    begin(w);
    int64_t t = 1000;
    for (int k = n; k-- > 0;) {
        event(w, "segment_alloc", base + (int64_t)k * seg, seg, t++);
        event(w, "alloc", base + (int64_t)k * seg, seg, t++);
    }
    for (int k = 0; k < n; k++) {
        event(w, "free_completed", base + (int64_t)k * seg, seg, t++);
        event(w, "segment_free", base + (int64_t)k * seg, seg, t++);
    }
    event(w, "oom", 1 << 20, (int64_t)1 << 30, t++);
    end_trace(w, false);
    finish(w, false);
}

static int write_file(const char *path, const pk *w)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(w->p, 1, w->n, f) != w->n) {
        if (f)
            fclose(f);
        fprintf(stderr, "cannot write %s\n", path);
        return -1;
    }
    return fclose(f);
}

static int write_all(const char *dir, double scale)
{
    char path[1024];
    pk w = {0};
    int allocs = (int)(2000 * scale), ooms = (int)(1000 * scale), n = (int)(100000 * scale);
    make_oom_storm(&w, allocs > 2 ? allocs : 2, ooms > 1 ? ooms : 1);
    snprintf(path, sizeof path, "%s/crafted_oom_storm.pickle", dir);
    int rc = write_file(path, &w);
    w.n = 0;
    int events = (int)(2000 * scale);
    make_annotation_storm(&w, n > 2 ? n : 2, events > 20 ? events : 20);
    snprintf(path, sizeof path, "%s/crafted_annotation_storm.pickle", dir);
    rc |= write_file(path, &w);
    w.n = 0;
    make_segment_storm(&w, n / 2 > 2 ? n / 2 : 2);
    snprintf(path, sizeof path, "%s/crafted_segment_storm.pickle", dir);
    rc |= write_file(path, &w);
    free(w.p);
    return rc;
}

/* ------------------------------------------------------------------ the test */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs `memsnap ARGS FILE` and checks its exit code and time. */
static void timed(const char *bin, const char *args, const char *file, const char *outdir,
                  int want_rc, double bound_s)
{
    char cmd[2048], what[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s '%s' > out.txt 2> err.txt", outdir, bin, args,
             file);
    snprintf(what, sizeof what, "memsnap %s %s", args, strrchr(file, '/') + 1);
    double t = now();
    int st = system(cmd);
    t = now() - t;
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    fprintf(stderr, "%-60s exit %d, %.2f s (bound %.0f s)\n", what, rc, t, bound_s);
    CHECK_EQ_INT_IN(what, rc, want_rc);
    CHECK_TRUE_IN(what, t < bound_s);
}

/* How often `needle` occurs in OUTDIR/out.txt (the last command's stdout). */
static size_t count_in_output(const char *outdir, const char *needle)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/out.txt", outdir);
    size_t len = 0, n = 0;
    char *text = check_read_text(path, &len);
    for (const char *p = text; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    free(text);
    return n;
}

/* The pairing itself: every START closed by its own name's END, innermost first. */
static void check_pairing(const char *path, int n)
{
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, path, NULL, &err)) {
        check_fail("%s: %s", path, err.message);
        return;
    }
    double t = now();
    ms_annotation_range *r = NULL;
    size_t nr = 0;
    CHECK_EQ_INT(ms_annotation_ranges(&r, &nr, s, 0, &err), 0);
    t = now() - t;
    fprintf(stderr, "ms_annotation_ranges: %zu ranges, %.3f s\n", nr, t);
    CHECK_TRUE(t < 5);
    CHECK_EQ_INT(nr, (size_t)n + (size_t)n / 2);
    size_t open = 0, forward = 0;
    for (size_t i = 0; i < nr; i++) {
        open += r[i].open_end || r[i].lost_start;
        forward += !strcmp(ms_snapshot_string(s, r[i].name), "## forward ##");
    }
    CHECK_EQ_INT(open, 0);
    CHECK_EQ_INT(forward, (size_t)n);
    if (nr) {
        /* The outermost forward range opened first and closed by the last forward END. */
        int64_t first_end = 1001 + (int64_t)n + (int64_t)n / 2 + (int64_t)n - 1;
        CHECK_EQ_INT(r[0].start_us, 1001);
        CHECK_EQ_INT(r[0].end_us, first_end);
        CHECK_EQ_INT(r[0].depth, 0);
        /* The innermost forward range: closed by the first forward END, inside all others. */
        CHECK_EQ_INT(r[n - 1].start_us, 1000 + n);
        CHECK_EQ_INT(r[n - 1].end_us, 1001 + n + n / 2);
        CHECK_EQ_INT(r[n - 1].depth, n - 1);
    }
    free(r);
    ms_snapshot_free(s);
}

static bool same_heap(const ms_heap *a, const ms_heap *b)
{
    if (a->n_segments != b->n_segments || a->n_blocks != b->n_blocks ||
        a->allocated_bytes != b->allocated_bytes || a->active_bytes != b->active_bytes ||
        a->reserved_bytes != b->reserved_bytes || a->inactive_bytes != b->inactive_bytes ||
        a->inactive_count != b->inactive_count || a->largest_inactive != b->largest_inactive ||
        a->approximate != b->approximate || a->inconsistencies != b->inconsistencies ||
        strcmp(a->note, b->note))
        return false;
    for (size_t k = 0; k < a->n_segments; k++) {
        const ms_heap_segment *x = &a->segments[k], *y = &b->segments[k];
        if (x->address != y->address || x->total_size != y->total_size ||
            x->stream_raw != y->stream_raw || x->is_expandable != y->is_expandable ||
            x->is_small != y->is_small || x->first_block != y->first_block ||
            x->n_blocks != y->n_blocks)
            return false;
    }
    for (size_t k = 0; k < a->n_blocks; k++) {
        const ms_heap_block *x = &a->blocks[k], *y = &b->blocks[k];
        if (x->address != y->address || x->size != y->size ||
            x->requested_size != y->requested_size || x->state != y->state ||
            x->alloc_event != y->alloc_event || x->stack != y->stack ||
            x->estimated != y->estimated)
            return false;
    }
    return true;
}

/* One forward replay for many events gives, at each, the state a replay to that event
 * alone gives; a repeated event shares the state before it. */
static void check_build_each(const char *name, ms_snapshot *s, void *arg)
{
    (void)arg;
    ms_error err;
    int device = ms_snapshot_busiest_device(s);
    const ms_trace *tr = ms_snapshot_trace(s, device);
    int64_t n = (int64_t)tr->n;
    int64_t at[6] = {-1, n / 3 - 1, n / 3 - 1, n / 2, (2 * n) / 3, n - 1};
    for (int k = 0; k < 6; k++)
        if (at[k] < -1)
            at[k] = -1;
    ms_heap *each[6];
    CHECK_EQ_INT_IN(name, ms_heap_build_each(each, s, device, at, 6, &err), 0);
    for (int k = 0; k < 6 && each[0]; k++) {
        ms_heap *one = NULL;
        CHECK_EQ_INT_IN(name, ms_heap_build(&one, s, device, at[k], &err), 0);
        CHECK_TRUE_IN(name, one && each[k] && same_heap(one, each[k]));
        ms_heap_free(one);
    }
    if (each[0])
        CHECK_TRUE_IN(name, each[2] == each[1]); /* the same event twice: one state */
    ms_heap_free_each(each, 6);
    /* Out of order: refused. */
    int64_t bad[2] = {n - 1, 0};
    CHECK_EQ_INT_IN(name, n > 1 ? ms_heap_build_each(each, s, device, bad, 2, &err) : MS_ERR_ARG,
                    MS_ERR_ARG);
}

int main(int argc, char **argv)
{
    if (argc >= 2)
        return write_all(argv[1], argc >= 3 ? atof(argv[2]) : 1.0) ? 2 : 0;
    const char *bin;
    char dir[] = "/tmp/memsnap-crafted-XXXXXX";
    if (check_cli_setup(&bin, dir))
        return 1;
    if (write_all(dir, 1.0))
        return 1;
    char oom[1100], ann[1100], segs[1100];
    snprintf(oom, sizeof oom, "%s/crafted_oom_storm.pickle", dir);
    snprintf(ann, sizeof ann, "%s/crafted_annotation_storm.pickle", dir);
    snprintf(segs, sizeof segs, "%s/crafted_segment_storm.pickle", dir);

    /* The allocator state at 1,000 OOMs over 2,000 carved allocations: built once,
     * forward. The quadratic build took 10.7 s (oom) and 20.7 s (report) in Release. */
    timed(bin, "oom", oom, dir, 0, 20);
    timed(bin, "oom --json", oom, dir, 0, 20);
    /* The first MS_OOM_MAX_EXPLAINED ooms explained, each with the state the 2,000 carved
     * allocations left: 1000 KiB allocated, 2,000 free gaps and the tail, one segment;
     * the other 900 counted. */
    CHECK_EQ_INT(count_in_output(dir, "\"request_bytes\":\t1073741824"), MS_OOM_MAX_EXPLAINED);
    CHECK_EQ_INT(count_in_output(dir, "\"allocated_bytes\":\t1024000,"), MS_OOM_MAX_EXPLAINED);
    CHECK_EQ_INT(count_in_output(dir, "\"free_blocks\":\t2001,"), MS_OOM_MAX_EXPLAINED);
    CHECK_EQ_INT(count_in_output(dir, "\"segments\":\t1,"), MS_OOM_MAX_EXPLAINED);
    CHECK_EQ_INT(count_in_output(dir, "\"ooms_left_out\":\t900"), 1);
    timed(bin, "report -o r.html", oom, dir, 0, 60);
    timed(bin, "summary", oom, dir, 0, 20);
    /* 100k badly nested annotations: 2.7 s in categories when quadratic. */
    check_pairing(ann, 100000);
    timed(bin, "categories", ann, dir, 0, 20);
    timed(bin, "summary", ann, dir, 0, 20);
    timed(bin, "leaks", ann, dir, 0, 20);
    timed(bin, "report -o r.html", ann, dir, 0, 60);
    /* 50,000 segments made and freed before one oom: 10.6 s in oom when the starting
     * state's address ranges were a list scanned for every segment event. */
    timed(bin, "oom", segs, dir, 0, 20);
    CHECK_EQ_INT(count_in_output(dir, "in 0 segments"), 1);
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, segs, NULL, &err) == 0) {
        /* After the last allocation: every segment there, each one block in use. */
        ms_heap *h = NULL;
        CHECK_EQ_INT(ms_heap_build(&h, s, 0, 2 * 50000 - 1, &err), 0);
        CHECK_EQ_INT(h ? h->n_segments : 0, 50000);
        CHECK_EQ_INT(h ? h->allocated_bytes : 0, (uint64_t)50000 << 21);
        CHECK_EQ_INT(h ? h->inactive_count : 1, 0);
        CHECK_TRUE(h && !h->approximate);
        ms_heap_free(h);
    } else {
        check_fail("%s: %s", segs, err.message);
    }
    ms_snapshot_free(s);
    check_remove_dir(dir);
    check_each_read(check_build_each, NULL);
    return check_finish("test_crafted_speed");
}
