/* The timeline's replay with its curves on a second thread (timeline.c, curve_main) must
 * give exactly what one thread gives: every figure, curve, allocation and error, on every
 * snapshot and on crafted traces where the curve thread's guess is wrong (a free whose
 * size differs from its allocation's, an address handed out twice) or where the sums go
 * past 2^56 in either thread first. The testdata traces are below the size that starts
 * the second thread, so the threshold is lowered here. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pickle_writer.h"
#include "internal.h"
#include "analysis/timeline_internal.h"
#include "memsnap/memsnap.h"

static const unsigned FLAG_SETS[] = {
    MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE,
    MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS,
    MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS | MS_TIMELINE_PEAK_ALIVE,
    MS_TIMELINE_ACTIVE | MS_TIMELINE_ALLOCS,
};

static bool same_allocs(const ms_alloc *a, const ms_alloc *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].addr != b[i].addr || a[i].size != b[i].size ||
            a[i].alloc_event != b[i].alloc_event || a[i].free_event != b[i].free_event ||
            a[i].free_requested_event != b[i].free_requested_event || a[i].stack != b[i].stack ||
            a[i].stream != b[i].stream)
            return false;
    return true;
}

/* The first difference between two timelines, or NULL. */
static const char *timeline_difference(const ms_timeline *a, const ms_timeline *b)
{
    if (a->n_events != b->n_events || memcmp(a->action_counts, b->action_counts, sizeof a->action_counts))
        return "events or action counts";
    if (a->peak_bytes != b->peak_bytes || a->peak_event != b->peak_event ||
        a->peak_time_us != b->peak_time_us)
        return "peak";
    if (a->live_end_bytes != b->live_end_bytes || a->live_end_count != b->live_end_count ||
        a->active_start != b->active_start)
        return "live end or start";
    if (a->reserved_peak_bytes != b->reserved_peak_bytes ||
        a->reserved_end_bytes != b->reserved_end_bytes || a->reserved_start != b->reserved_start ||
        a->preexisting_segment_bytes != b->preexisting_segment_bytes)
        return "reserved";
    if (a->preexisting_bytes != b->preexisting_bytes || a->preexisting_count != b->preexisting_count ||
        a->trace_complete != b->trace_complete || a->wrap_evidence != b->wrap_evidence ||
        a->oom_count != b->oom_count)
        return "preexisting, completeness or OOMs";
    if ((a->active == NULL) != (b->active == NULL) || (a->reserved == NULL) != (b->reserved == NULL))
        return "curves present";
    if (a->active && memcmp(a->active, b->active, a->n_events * sizeof *a->active))
        return "active curve";
    if (a->reserved && memcmp(a->reserved, b->reserved, a->n_events * sizeof *a->reserved))
        return "reserved curve";
    if (a->n_allocs != b->n_allocs || !same_allocs(a->allocs, b->allocs, a->n_allocs))
        return "allocations";
    if (a->n_peak_alive != b->n_peak_alive || !same_allocs(a->peak_alive, b->peak_alive, a->n_peak_alive))
        return "alive at the peak";
    return NULL;
}

/* Builds device d's timeline both ways with each flag set and compares. */
static void compare_both_ways(const ms_snapshot *s, int d, const char *name)
{
    for (size_t f = 0; f < sizeof FLAG_SETS / sizeof FLAG_SETS[0]; f++) {
        ms_timeline *one = NULL, *two = NULL;
        ms_error e1, e2;
        size_t saved = ms__timeline_parallel_min;
        ms__timeline_parallel_min = SIZE_MAX;
        int r1 = ms_timeline_build(&one, s, d, FLAG_SETS[f], &e1);
        ms__timeline_parallel_min = 0;
        int r2 = ms_timeline_build(&two, s, d, FLAG_SETS[f], &e2);
        ms__timeline_parallel_min = saved;
        CHECK_EQ_INT_IN(name, r2, r1);
        if (r1 != 0 && r2 != 0) {
            CHECK_EQ_STR_IN(name, e2.message, e1.message);
        } else if (r1 == 0 && r2 == 0) {
            const char *diff = timeline_difference(one, two);
            if (diff)
                check_fail("%s device %d flags %u: %s differs with two threads", name, d,
                           FLAG_SETS[f], diff);
            else
                check_count++;
        }
        ms_timeline_free(one);
        ms_timeline_free(two);
    }
}

static void check_snapshot(const char *path, const char *name, void *arg)
{
    (void)arg;
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, path, NULL, &err) != 0) {
        check_fail("%s: %s", name, err.message);
        return;
    }
    for (int d = 0; d < ms_snapshot_device_count(s); d++)
        compare_both_ways(s, d, name);
    ms_snapshot_free(s);
}

/* ------------------------------------------------------------------ crafted traces */

typedef struct ev {
    const char *action;
    int64_t addr, size;
} ev;

/* A snapshot of one device whose trace is `evs`, times 1000, 1001, ... */
static void crafted(pk *p, const ev *evs, size_t n)
{
    p->n = 0;
    put(p, "\x80\x02}(", 4);
    str(p, "segments");
    put(p, "]", 1);
    str(p, "device_traces");
    put(p, "](](", 4);
    for (size_t i = 0; i < n; i++) {
        put(p, "}(", 2);
        str(p, "action");
        str(p, evs[i].action);
        str(p, "addr");
        num(p, evs[i].addr);
        str(p, "size");
        num(p, evs[i].size);
        str(p, "stream");
        num(p, 0);
        str(p, "time_us");
        num(p, 1000 + (int64_t)i);
        str(p, "frames");
        put(p, "]u", 2);
    }
    put(p, "eeu.", 4);
}

static void check_crafted(const char *name, const ev *evs, size_t n, int want_rc)
{
    pk p = {0};
    crafted(&p, evs, n);
    ms_snapshot *s = NULL;
    ms_error err;
    int read_rc = ms_snapshot_read_memory(&s, p.p, p.n, NULL, &err);
    free(p.p);
    if (read_rc != 0) {
        check_fail("%s: %s", name, err.message);
        return;
    }
    compare_both_ways(s, 0, name);
    ms_timeline *t = NULL;
    int rc = ms_timeline_build(&t, s, 0, MS_TIMELINE_ACTIVE, &err);
    CHECK_EQ_INT_IN(name, rc, want_rc);
    ms_timeline_free(t);
    ms_snapshot_free(s);
}

#define P55 ((int64_t)1 << 55)

int main(void)
{
    CHECK_TRUE(check_each_snapshot(check_snapshot, NULL) >= 20);

    /* Frees whose sizes differ from the allocation's, an address handed out twice, a
     * free of a block from before the trace: the curve thread's sums are wrong at each,
     * the corrections make them right. */
    static const ev guesses[] = {
        {"alloc", 4096, 100},           {"alloc", 8192, 50},
        {"free_requested", 4096, 100},  {"free_completed", 4096, 100},
        {"alloc", 16384, 64},           {"alloc", 16384, 32},
        {"alloc", 32768, 1000},         {"free_requested", 32768, 10},
        {"free_completed", 32768, 10},  {"free_completed", 65536, 77},
        {"segment_alloc", 1 << 20, 4096}, {"oom", 0, 0},
        {"alloc", 4096, 3000},          {"segment_free", 1 << 20, 4096},
        {"free_completed", 16384, 9},   {"alloc", 131072, 7},
    };
    check_crafted("guesses", guesses, sizeof guesses / sizeof guesses[0], 0);

    /* Sums past 2^56: reserved memory first (the curve thread's error), live memory
     * first (the replay's), and both at once. */
    static const ev reserved_first[] = {
        {"segment_alloc", 4096, P55}, {"segment_alloc", 8192, P55}, {"segment_alloc", 12288, P55},
        {"alloc", 4096, P55},         {"alloc", 8192, P55},         {"alloc", 12288, P55},
    };
    check_crafted("reserved_first", reserved_first, 6, MS_ERR_FORMAT);
    static const ev live_first[] = {
        {"alloc", 4096, P55},         {"alloc", 8192, P55},         {"alloc", 12288, P55},
        {"segment_alloc", 4096, P55}, {"segment_alloc", 8192, P55}, {"segment_alloc", 12288, P55},
    };
    check_crafted("live_first", live_first, 6, MS_ERR_FORMAT);
    static const ev freed_huge[] = {
        {"segment_alloc", 4096, P55}, {"free_completed", 4096, P55}, {"free_completed", 8192, P55},
        {"free_completed", 12288, P55}, {"segment_free", 4096, P55}, {"segment_free", 4096, P55},
        {"segment_free", 4096, P55},
    };
    check_crafted("freed_huge", freed_huge, 7, MS_ERR_FORMAT);
    return check_finish("test_timeline_split");
}
