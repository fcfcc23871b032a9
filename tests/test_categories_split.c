/* The categorisation on two threads (categories_build.c): the classification of every
 * allocation in two halves and the sweep of running totals in two halves of the trace
 * give the one-thread result on every testdata snapshot, and on a trace built so that
 * both halves of the classification name the same events. */
#include "analysis/cat_internal.h"
#include "check.h"
#include "memsnap/categories.h"
#include "pickle_writer.h"

static bool same_totals_at(const ms_categories *one, const ms_categories *two, int64_t e)
{
    int64_t a[MS_CAT_COUNT], b[MS_CAT_COUNT];
    ms_error err;
    return ms_categories_at_event(a, one, e, &err) == 0 &&
           ms_categories_at_event(b, two, e, &err) == 0 && memcmp(a, b, sizeof a) == 0;
}

static bool same_point(const ms_category_point *a, const ms_category_point *b)
{
    return (a == NULL) == (b == NULL) && (!a || memcmp(a, b, sizeof *a) == 0);
}

/* The categorisation classified and swept by two threads (two halves of the allocations;
 * two halves of the trace split at an iteration's start, the second half's totals made
 * whole afterwards) equals the one-thread one: every allocation's category and reason,
 * the peak, every iteration's end and peak, and the totals at every checkpoint. */
static void build_two_threads_device(const char *name, const ms_snapshot *s, int d,
                                     const ms_timeline *t, const ms_iterations *it)
{
    ms_error err;
    ms_categories *one = NULL, *two = NULL;
    size_t saved = ms__cat_build_parallel_min;
    ms__cat_build_parallel_min = SIZE_MAX;
    int r1 = ms_categories_build(&one, s, d, t, it, &err);
    ms__cat_build_parallel_min = 1;
    int r2 = ms_categories_build(&two, s, d, t, it, &err);
    ms__cat_build_parallel_min = saved;
    CHECK_EQ_INT_IN(name, r1, 0);
    CHECK_EQ_INT_IN(name, r2, 0);
    if (r1 == 0 && r2 == 0) {
        bool same = true;
        for (size_t i = 0; same && i < t->n_allocs; i++)
            same = ms_categories_of(one, i) == ms_categories_of(two, i) &&
                   ms_categories_reason(one, i) == ms_categories_reason(two, i);
        CHECK_TRUE_IN(name, same);
        CHECK_TRUE_IN(name, same_point(ms_categories_peak(one), ms_categories_peak(two)));
        same = true;
        for (size_t k = 0; same && k < it->n; k++)
            same = same_point(ms_categories_iteration_end(one, k),
                              ms_categories_iteration_end(two, k)) &&
                   same_point(ms_categories_iteration_peak(one, k),
                              ms_categories_iteration_peak(two, k));
        CHECK_TRUE_IN(name, same);
        /* At e = q * 4096 - 1 the totals are a checkpoint's, with nothing replayed;
         * the last event replays the last stride. */
        int64_t n = (int64_t)t->n_events;
        same = true;
        for (int64_t e = -1; same && e < n; e += 4096)
            same = same_totals_at(one, two, e);
        CHECK_TRUE_IN(name, same && same_totals_at(one, two, n - 1));
    }
    ms_categories_free(one);
    ms_categories_free(two);
}

static void check_build_two_threads(const char *path, const char *name, void *arg)
{
    (void)arg;
    check_each_device(path, name, build_two_threads_device);
}

/* Every address handed out twice without a free between: the event that makes the second
 * life also ends the first (the timeline's lives), so two allocations name that event,
 * and the one-thread index keeps the later one (the new life). The first lives are the
 * first half of the allocations and the second lives the second half, so with two threads
 * every such event is named from both halves. The result must still be the one-thread
 * one, run after run (and ThreadSanitizer must see no race on the index). */
static void check_double_handout(void)
{
    enum { M = 3000 };
    pk p = {0};
    put(&p, "\x80\x02}(", 4);
    str(&p, "segments");
    put(&p, "]", 1);
    str(&p, "device_traces");
    put(&p, "](](", 4);
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < M; k++) {
            put(&p, "}(", 2);
            str(&p, "action");
            str(&p, "alloc");
            str(&p, "addr");
            num(&p, 4096 * (int64_t)(k + 1));
            str(&p, "size");
            num(&p, round ? 1024 : 512);
            str(&p, "stream");
            num(&p, 0);
            str(&p, "time_us");
            num(&p, 1000 + round * M + k);
            str(&p, "frames");
            put(&p, "]u", 2);
        }
    put(&p, "eeu.", 4);
    ms_snapshot *s = NULL;
    ms_error err;
    int rc = ms_snapshot_read_memory(&s, p.p, p.n, NULL, &err);
    free(p.p);
    if (rc != 0) {
        check_fail("double_handout: %s", err.message);
        return;
    }
    ms_timeline *t = NULL;
    ms_iterations *it = NULL;
    if (ms_timeline_build(&t, s, 0, MS_TIMELINE_ALLOCS, &err) != 0 ||
        ms_iterations_find(&it, s, 0, t, NULL, &err) != 0) {
        check_fail("double_handout: %s", err.message);
    } else if (t->n_allocs == 2 * M) {
        /* Each second life starts at the event that ends the first. */
        CHECK_EQ_INT(t->allocs[0].free_event, t->allocs[M].alloc_event);
        size_t splits = ms__cat_build_splits;
        for (int run = 0; run < 20; run++)
            build_two_threads_device("double_handout", s, 0, t, it);
        CHECK_EQ_INT((int64_t)(ms__cat_build_splits - splits), 20);
        /* Each shared event ends a first life and starts a second: after the last event
         * the totals hold the second lives' 1024 bytes each and nothing of the first, as
         * the timeline does. */
        ms_categories *c = NULL;
        if (ms_categories_build(&c, s, 0, t, it, &err) == 0) {
            int64_t by[MS_CAT_COUNT], sum = 0;
            CHECK_EQ_INT(ms_categories_at_event(by, c, 2 * M - 1, &err), 0);
            for (int q = 0; q < MS_CAT_COUNT; q++)
                sum += by[q];
            CHECK_EQ_INT(sum, (int64_t)M * 1024);
            /* Halfway through the second lives: 1,500 of each. */
            CHECK_EQ_INT(ms_categories_at_event(by, c, M + M / 2 - 1, &err), 0);
            sum = 0;
            for (int q = 0; q < MS_CAT_COUNT; q++)
                sum += by[q];
            CHECK_EQ_INT(sum, (int64_t)(M / 2) * 1024 + (int64_t)(M / 2) * 512);
        } else {
            check_fail("double_handout: %s", err.message);
        }
        ms_categories_free(c);
    } else {
        check_fail("double_handout: %zu lives, not %d", t->n_allocs, 2 * M);
    }
    ms_iterations_free(it);
    ms_timeline_free(t);
    ms_snapshot_free(s);
}

int main(void)
{
    size_t splits = ms__cat_build_splits;
    CHECK_TRUE(check_each_snapshot(check_build_two_threads, NULL) >= 20);
    /* Most testdata traces have a second iteration to split at. */
    CHECK_TRUE(ms__cat_build_splits - splits >= 20);
    printf("categorisation swept in two halves: %zu devices\n", ms__cat_build_splits - splits);
    check_double_handout();
    return check_finish("test_categories_split");
}
