/* compare: profiles, pairs and ranks on the real snapshots, checked against the
 * allocator counters in their truth.json, plus hand-made profiles for the edge cases. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "memsnap/compare.h"
#include "memsnap/run.h"

static const char *const FILES[] = {
    "ddp_rank0", "ddp_rank1",    "expandable", "gpt2_train", "leak_layers",
    "linear_infer", "noleak_layers", "oom",     "ring_wrap",  "streams",
};
#define N_FILES (sizeof FILES / sizeof FILES[0])

typedef struct truth {
    int64_t peak, reserved_peak, current;
} truth;

static truth read_truth(const char *name)
{
    truth t = {-1, -1, -1};
    cJSON *doc = check_truth_load(name);
    if (!doc)
        return t;
    t.peak = (int64_t)check_truth_counter(doc, "requested_bytes.all.peak");
    t.reserved_peak = (int64_t)check_truth_counter(doc, "reserved_bytes.all.peak");
    t.current = (int64_t)check_truth_counter(doc, "requested_bytes.all.current");
    cJSON_Delete(doc);
    return t;
}

static ms_profile *load(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "testdata/%s.pickle", name);
    ms_snapshot *s = NULL;
    ms_profile *p = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, path, NULL, &err) ||
        ms_profile_from_snapshot(&p, s, path, -1, &err))
        check_fail("%s: %s", path, err.message);
    ms_snapshot_free(s);
    return p;
}

static int64_t sum_deltas(const ms_site_delta *d, size_t n)
{
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += d[i].delta_bytes;
    return sum;
}

static void test_rank_names(void)
{
    CHECK_EQ_INT(ms_rank_from_name("testdata/ddp_rank0.pickle"), 0);
    CHECK_EQ_INT(ms_rank_from_name("/x/y/ddp_rank1.pickle"), 1);
    CHECK_EQ_INT(ms_rank_from_name("mem-3.pickle"), 3);
    CHECK_EQ_INT(ms_rank_from_name("mem_12.pickle.gz"), 12);
    CHECK_EQ_INT(ms_rank_from_name("snapshot_rank_7.json"), 7);
    CHECK_EQ_INT(ms_rank_from_name("RANK5-out.pickle"), 5);
    CHECK_EQ_INT(ms_rank_from_name("gpt2_train.pickle"), -1);
    CHECK_EQ_INT(ms_rank_from_name("oom.pickle"), -1);
    CHECK_EQ_INT(ms_rank_from_name("run3.pickle"), -1); /* digits inside a word */
    CHECK_EQ_INT(ms_rank_from_name("rank/mem.pickle"), -1); /* a directory is not the name */
    CHECK_EQ_INT(ms_rank_from_name("99999999999-x.pickle"), -1);
}

/* The acceptance case: rank 1 trains on longer sequences, so it peaks higher. */
static void test_ddp_pair(void)
{
    ms_profile *a = load("ddp_rank0"), *b = load("ddp_rank1");
    if (!a || !b)
        goto out;
    truth ta = read_truth("ddp_rank0"), tb = read_truth("ddp_rank1");
    CHECK_EQ_INT(a->rank, 0);
    CHECK_EQ_INT(b->rank, 1);
    CHECK_EQ_INT(b->device, 1); /* each rank writes on its own GPU */
    CHECK_EQ_INT(a->peak_bytes, ta.peak);
    CHECK_EQ_INT(b->peak_bytes, tb.peak);

    ms_pair *p = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_pair_compare(&p, a, b, &err), 0);
    if (!p)
        goto out;
    CHECK_EQ_INT(p->m[MS_M_PEAK].delta, tb.peak - ta.peak);
    CHECK_EQ_INT(p->m[MS_M_RESERVED_PEAK].delta, tb.reserved_peak - ta.reserved_peak);
    CHECK_EQ_INT(p->m[MS_M_LIVE_END].delta, tb.current - ta.current);
    CHECK_TRUE(p->m[MS_M_PEAK].pct > 0);
    CHECK_TRUE(!p->match);

    /* Every byte of the peak belongs to some site, so the site changes add up to the
     * peak change exactly; the same holds at the end. */
    CHECK_TRUE(p->sites_complete[MS_SITES_AT_PEAK]);
    CHECK_EQ_INT(sum_deltas(p->sites[MS_SITES_AT_PEAK], p->n_sites[MS_SITES_AT_PEAK]),
                 p->m[MS_M_PEAK].delta);
    CHECK_EQ_INT(sum_deltas(p->sites[MS_SITES_AT_END], p->n_sites[MS_SITES_AT_END]),
                 p->m[MS_M_LIVE_END].delta);
    CHECK_TRUE(p->n_sites[MS_SITES_AT_PEAK] > 0);
    for (size_t i = 1; i < p->n_sites[MS_SITES_AT_PEAK]; i++) {
        int64_t x = p->sites[MS_SITES_AT_PEAK][i - 1].delta_bytes;
        int64_t y = p->sites[MS_SITES_AT_PEAK][i].delta_bytes;
        CHECK_TRUE((x < 0 ? -x : x) >= (y < 0 ? -y : y));
    }

    char v[2048];
    size_t need = ms_pair_verdict(p, NULL, NULL, v, sizeof v);
    CHECK_TRUE(need < sizeof v);
    CHECK_TRUE(strncmp(v, "rank1 peaks ", 12) == 0);
    CHECK_TRUE(strstr(v, "higher than rank0") != NULL);
    /* The largest growth at the peak is named, with its function. */
    const ms_site_delta *top = &p->sites[MS_SITES_AT_PEAK][0];
    CHECK_TRUE(top->delta_bytes > 0);
    CHECK_TRUE(strstr(v, top->site) != NULL);
    CHECK_TRUE(strstr(v, top->function) != NULL);
    /* Longer sequences grow activations in the model's own code. */
    CHECK_TRUE(strstr(top->site, ".py:") != NULL);
    printf("ddp verdict: %s\n", v);

    /* Truncation keeps a terminated prefix and reports the full length. */
    char small[16];
    CHECK_EQ_INT(ms_pair_verdict(p, NULL, NULL, small, sizeof small), need);
    CHECK_EQ_INT(strlen(small), sizeof small - 1);
    ms_pair_free(p);
out:
    ms_profile_free(a);
    ms_profile_free(b);
}

static void test_self(void)
{
    ms_profile *a = load("gpt2_train"), *b = load("gpt2_train");
    if (!a || !b)
        goto out;
    ms_pair *p = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_pair_compare(&p, a, b, &err), 0);
    if (!p)
        goto out;
    for (int m = 0; m < MS_M_COUNT; m++) {
        CHECK_EQ_INT(p->m[m].delta, 0);
        CHECK_TRUE(p->m[m].pct == 0.0);
    }
    for (int s = 0; s < MS_SITE_SETS; s++)
        CHECK_EQ_INT(p->n_sites[s], 0);
    CHECK_EQ_INT(p->n_only_a, 0);
    CHECK_EQ_INT(p->n_only_b, 0);
    CHECK_TRUE(p->match);
    char v[1024];
    ms_pair_verdict(p, "A", "B", v, sizeof v);
    CHECK_TRUE(strncmp(v, "A and B match", 13) == 0);
    ms_pair_free(p);
out:
    ms_profile_free(a);
    ms_profile_free(b);
}

/* Outliers expected from the allocator's own counters, against what ranks flags. */
static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static int64_t median_of(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static bool off(int64_t v, int64_t median, double pct)
{
    double d = 100.0 * ((double)v - (double)median) / (double)median;
    return d > pct || d < -pct;
}

static void test_ranks_real(void)
{
    const char *paths[N_FILES];
    char buf[N_FILES][128];
    for (size_t i = 0; i < N_FILES; i++) {
        snprintf(buf[i], sizeof buf[i], "testdata/%s.pickle", FILES[i]);
        paths[i] = buf[i];
    }
    ms_profile *pr[N_FILES];
    ms_error errs[N_FILES];
    ms_limits two = ms_limits_default();
    two.threads = 2;
    CHECK_EQ_INT(ms_profiles_load(pr, errs, paths, N_FILES, -1, &two, NULL, NULL), 0);
    for (size_t i = 0; i < N_FILES; i++)
        if (!pr[i]) {
            check_fail("%s: %s", paths[i], errs[i].message);
            return;
        }

    int64_t peaks[N_FILES], res[N_FILES], live[N_FILES];
    truth t[N_FILES];
    for (size_t i = 0; i < N_FILES; i++) {
        t[i] = read_truth(FILES[i]);
        /* A wrapped trace cannot see a peak that fell before its first kept event, so
         * only complete traces are held to the counters' peaks. */
        if (pr[i]->trace_complete) {
            CHECK_EQ_INT(pr[i]->peak_bytes, t[i].peak);
            CHECK_EQ_INT(pr[i]->reserved_peak_bytes, t[i].reserved_peak);
        }
        CHECK_EQ_INT(pr[i]->live_end_bytes, t[i].current);
        peaks[i] = t[i].peak;
        res[i] = t[i].reserved_peak;
        live[i] = t[i].current;
    }
    int64_t mp = median_of(peaks, N_FILES), mr = median_of(res, N_FILES),
            ml = median_of(live, N_FILES);

    ms_ranks *r = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_ranks_compare(&r, (const ms_profile *const *)pr, N_FILES, 10.0, &err), 0);
    if (r) {
        CHECK_EQ_INT(r->median_peak, mp);
        CHECK_EQ_INT(r->median_reserved_peak, mr);
        CHECK_EQ_INT(r->median_live_end, ml);
        size_t flagged = 0;
        for (size_t i = 0; i < N_FILES; i++) {
            const ms_rank_row *row = &r->rows[i];
            CHECK_TRUE(row->p == pr[i]);
            CHECK_EQ_INT(!!(row->outlier & MS_OUT_PEAK), off(t[i].peak, mp, 10.0));
            CHECK_EQ_INT(!!(row->outlier & MS_OUT_RESERVED), off(t[i].reserved_peak, mr, 10.0));
            CHECK_EQ_INT(!!(row->outlier & MS_OUT_LIVE_END), off(t[i].current, ml, 10.0));
            CHECK_EQ_INT(row->peak.delta, pr[i]->peak_bytes - mp);
            flagged += row->outlier != 0;
        }
        CHECK_EQ_INT(r->n_outliers, flagged);
        /* The DDP pair alone: the median sits between them, rank 1 is 20% above it and
         * rank 0 as far below; two files are a pair (issue 22): neither is an outlier. */
        ms_ranks_free(r);
        r = NULL;
        CHECK_EQ_INT(ms_ranks_compare(&r, (const ms_profile *const *)pr, 2, 10.0, &err), 0);
        if (r) {
            CHECK_EQ_INT(r->median_peak, (t[0].peak + t[1].peak) / 2);
            CHECK_TRUE(r->pair);
            CHECK_EQ_INT(r->n_outliers, 0);
            CHECK_EQ_INT(r->rows[0].outlier, 0);
            CHECK_EQ_INT(r->rows[1].outlier, 0);
            CHECK_TRUE(off(t[1].peak, r->median_peak, 10.0)); /* what used to flag them */
            CHECK_TRUE(r->rows[1].n_sites > 0 && r->rows[1].sites[0].delta_bytes > 0);
            /* Against the same per-site medians, the two rows' site changes differ by
             * exactly the gap between the peaks. */
            CHECK_EQ_INT(sum_deltas(r->rows[1].sites, r->rows[1].n_sites) -
                             sum_deltas(r->rows[0].sites, r->rows[0].n_sites),
                         t[1].peak - t[0].peak);
        }
        ms_ranks_free(r);
    }
    for (size_t i = 0; i < N_FILES; i++)
        ms_profile_free(pr[i]);
}

/* Many files at once: every one loaded, in order, with a bad path failing alone. */
static void test_parallel_load(void)
{
    enum { N = 64 };
    const char *paths[N];
    for (size_t i = 0; i < N; i++)
        paths[i] = i % 2 ? "testdata/ddp_rank1.pickle" : "testdata/ddp_rank0.pickle";
    paths[37] = "testdata/no-such-file.pickle";
    ms_profile *pr[N];
    ms_error errs[N];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = ms_profiles_load(pr, errs, paths, N, -1, NULL, NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("64 files: %.3f s wall\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    CHECK_TRUE(rc != 0);
    CHECK_TRUE(pr[37] == NULL);
    CHECK_TRUE(errs[37].code != 0);
    for (size_t i = 0; i < N; i++) {
        if (i == 37)
            continue;
        CHECK_TRUE(pr[i] != NULL);
        if (pr[i]) {
            CHECK_EQ_INT(pr[i]->rank, (int)(i % 2));
            CHECK_TRUE(!strcmp(pr[i]->name, paths[i]));
            CHECK_EQ_INT(pr[i]->peak_bytes, pr[i % 2]->peak_bytes);
        }
    }
    for (size_t i = 0; i < N; i++)
        ms_profile_free(pr[i]);
}

/* Hand-made profiles: the rules that real files rarely exercise. */
static ms_profile *made(const char *name, int64_t peak, int64_t reserved, int64_t live)
{
    ms_profile *p = NULL;
    ms_error err;
    if (ms_profile_new(&p, name, &err)) {
        check_fail("%s: %s", name, err.message);
        return NULL;
    }
    p->peak_bytes = peak;
    p->reserved_peak_bytes = reserved;
    p->live_end_bytes = live;
    return p;
}

static void test_made(void)
{
    ms_error err;
    ms_profile *a = made("old.pickle", 1000, 2000, 100);
    ms_profile *b = made("new.pickle", 1500, 2000, 100);
    if (!a || !b)
        return;
    CHECK_EQ_INT(a->rank, -1);
    ms_profile_add_site(a, MS_SITES_AT_PEAK, "m.py:1", "f", 600, 1, &err);
    ms_profile_add_site(a, MS_SITES_AT_PEAK, "m.py:2", "g", 400, 2, &err);
    ms_profile_add_site(b, MS_SITES_AT_PEAK, "m.py:1", "f", 1000, 1, &err);
    ms_profile_add_site(b, MS_SITES_AT_PEAK, "m.py:2", "g", 300, 2, &err);
    ms_profile_add_site(b, MS_SITES_AT_PEAK, "m.py:3", "h", 200, 1, &err);
    a->sites_complete[MS_SITES_AT_PEAK] = b->sites_complete[MS_SITES_AT_PEAK] = true;

    ms_pair *p = NULL;
    CHECK_EQ_INT(ms_pair_compare(&p, a, b, &err), 0);
    if (p) {
        CHECK_EQ_INT(p->m[MS_M_PEAK].delta, 500);
        CHECK_TRUE(p->m[MS_M_PEAK].pct == 50.0);
        CHECK_EQ_INT(p->n_sites[MS_SITES_AT_PEAK], 3);
        CHECK_TRUE(!strcmp(p->sites[MS_SITES_AT_PEAK][0].site, "m.py:1"));
        CHECK_EQ_INT(p->sites[MS_SITES_AT_PEAK][0].delta_bytes, 400);
        CHECK_EQ_INT(p->sites[MS_SITES_AT_PEAK][1].delta_bytes, 200);
        CHECK_EQ_INT(p->sites[MS_SITES_AT_PEAK][2].delta_bytes, -100);
        CHECK_TRUE(!p->sites_known[MS_SITES_AT_END]);
        /* Without all-allocation lists, one-sided sites come from the complete peak lists. */
        CHECK_EQ_INT(p->n_only_a, 0);
        CHECK_EQ_INT(p->n_only_b, 1);
        CHECK_TRUE(p->n_only_b == 1 && !strcmp(p->only_b[0].site, "m.py:3"));
        char v[1024];
        ms_pair_verdict(p, NULL, NULL, v, sizeof v);
        CHECK_TRUE(strstr(v, "new.pickle peaks 50% higher than old.pickle") == v);
        CHECK_TRUE(strstr(v, "most of it (+400 B) is held at the peak by m.py:1 f") != NULL);
        ms_pair_free(p);
    }

    /* A site below one side's top-K cut must not be called one-sided. */
    b->sites_complete[MS_SITES_AT_PEAK] = false;
    CHECK_EQ_INT(ms_pair_compare(&p, a, b, &err), 0);
    if (p) {
        CHECK_EQ_INT(p->n_only_b, 0);
        CHECK_TRUE(!p->sites_complete[MS_SITES_AT_PEAK]);
        ms_pair_free(p);
    }

    /* Lower, from zero, and the hooks for iterations and leaks. */
    ms_profile *z = made("z.pickle", 0, 0, 0);
    CHECK_EQ_INT(ms_pair_compare(&p, b, a, &err), 0);
    if (p) {
        char v[1024];
        ms_pair_verdict(p, "B", "A", v, sizeof v);
        CHECK_TRUE(strstr(v, "A peaks 33% lower than B (-500 B") == v);
        ms_pair_free(p);
    }
    CHECK_EQ_INT(ms_pair_compare(&p, z, a, &err), 0);
    if (p) {
        CHECK_TRUE(!p->m[MS_M_PEAK].pct_valid);
        ms_pair_free(p);
    }
    int64_t it_a[] = {10, 20, 30}, it_b[] = {10, 25};
    ms_profile_set_iteration_peaks(a, it_a, 3, &err);
    ms_profile_set_iteration_peaks(b, it_b, 2, &err);
    /* Leaks known on one side only say nothing about the pair... */
    ms_leak_totals none = {0, 0, 0.0}, some = {2, 4096, 1024.4};
    ms_profile_set_leaks(b, &some);
    CHECK_EQ_INT(ms_pair_compare(&p, a, b, &err), 0);
    if (p) {
        CHECK_TRUE(!p->leaks_known);
        char v[1024];
        ms_pair_verdict(p, "A", "B", v, sizeof v);
        CHECK_TRUE(strstr(v, " B leaks 2 findings, 4.00 KiB, +1.00 KiB per iteration; whether "
                             "A leaks is unknown") != NULL);
        ms_pair_free(p);
    }
    /* ...and with both known, the pair carries the three differences. */
    ms_profile_set_leaks(a, &none);
    CHECK_EQ_INT(ms_pair_compare(&p, a, b, &err), 0);
    if (p) {
        CHECK_EQ_INT(p->n_iterations, 2);
        CHECK_EQ_INT(p->iteration_peaks[1].delta, 5);
        CHECK_TRUE(p->leaks_known);
        CHECK_EQ_INT(p->leak_findings.delta, 2);
        CHECK_EQ_INT(p->leak_bytes.delta, 4096);
        CHECK_EQ_INT(p->leak_growth.delta, 1024); /* rounded to whole bytes */
        char v[1024];
        ms_pair_verdict(p, "A", "B", v, sizeof v);
        CHECK_TRUE(strstr(v, " B leaks 2 findings, 4.00 KiB, +1.00 KiB per iteration; A does "
                             "not.") != NULL);
        ms_pair_free(p);
    }
    /* A file against itself matches, and still says that it leaks. */
    CHECK_EQ_INT(ms_pair_compare(&p, b, b, &err), 0);
    if (p) {
        CHECK_TRUE(p->match);
        char v[1024];
        ms_pair_verdict(p, "A", "B", v, sizeof v);
        CHECK_TRUE(strstr(v, "A leaks 2 findings, 4.00 KiB, +1.00 KiB per iteration; B leaks 2 "
                             "findings, 4.00 KiB, +1.00 KiB per iteration.") != NULL);
        ms_pair_free(p);
    }

    /* Ranks: even count takes the mean of the middle two; a zero median flags any
     * non-zero value; the threshold is strict. */
    ms_profile *r0 = made("mem-0.pickle", 100, 100, 0), *r1 = made("mem-1.pickle", 110, 100, 0),
               *r2 = made("mem-2.pickle", 90, 100, 0), *r3 = made("mem-3.pickle", 200, 100, 5);
    const ms_profile *all[] = {r0, r1, r2, r3};
    ms_ranks *r = NULL;
    CHECK_EQ_INT(ms_ranks_compare(&r, all, 4, 10.0, &err), 0);
    if (r) {
        CHECK_EQ_INT(r->median_peak, 105);
        CHECK_EQ_INT(r->median_live_end, 0);
        CHECK_EQ_INT(r->rows[0].outlier, 0);
        CHECK_EQ_INT(r->rows[1].outlier, 0);
        CHECK_EQ_INT(r->rows[2].outlier, MS_OUT_PEAK); /* -14.3% */
        CHECK_EQ_INT(r->rows[3].outlier, MS_OUT_PEAK | MS_OUT_LIVE_END);
        CHECK_EQ_INT(r->n_outliers, 2);
        ms_ranks_free(r);
    }
    CHECK_TRUE(ms_ranks_compare(&r, all, 0, 10.0, &err) == MS_ERR_ARG);
    CHECK_TRUE(ms_ranks_compare(&r, all, 4, -1.0, &err) == MS_ERR_ARG);
    ms_profile_free(r0);
    ms_profile_free(r1);
    ms_profile_free(r2);
    ms_profile_free(r3);
    ms_profile_free(z);
    ms_profile_free(a);
    ms_profile_free(b);
}

/* Where the peak falls (issue 22): the two DDP ranks started recording 0.3 s apart, so
 * the times of their peaks since each trace's first event differ, yet both peak in the
 * same iteration: the one whose truth marks (iteration_start_us, from the script) hold
 * the peak's time, of the truth's count; and in the backward pass, where activations are
 * still alive while the gradients are made. */
static void test_peak_place(void)
{
    ms_profile *p[2] = {load("ddp_rank0"), load("ddp_rank1")};
    for (int k = 0; k < 2 && p[0] && p[1]; k++) {
        cJSON *doc = check_truth_load(k ? "ddp_rank1" : "ddp_rank0");
        if (!doc)
            continue;
        const cJSON *marks = cJSON_GetObjectItem(doc, "iteration_start_us");
        int n = cJSON_GetArraySize(marks), want = 0;
        for (int i = 0; i + 1 < n; i++)
            if (p[k]->peak_time_us >= (int64_t)cJSON_GetArrayItem(marks, i)->valuedouble &&
                p[k]->peak_time_us < (int64_t)cJSON_GetArrayItem(marks, i + 1)->valuedouble)
                want = i + 1;
        CHECK_TRUE(p[k]->peak_place.known);
        CHECK_TRUE(want > 0);
        CHECK_EQ_INT(p[k]->peak_place.iteration, want);
        CHECK_EQ_INT(p[k]->peak_place.iterations,
                     (int64_t)cJSON_GetObjectItem(doc, "iterations")->valuedouble);
        CHECK_EQ_INT(p[k]->peak_place.phase, MS_PHASE_BACKWARD);
        cJSON_Delete(doc);
    }
    if (p[0] && p[1]) {
        /* The wall-clock offsets differ by more than a tenth of a second... */
        int64_t ta = p[0]->peak_time_us - p[0]->t_first_us, tb = p[1]->peak_time_us - p[1]->t_first_us;
        CHECK_TRUE(tb - ta > 100000 || ta - tb > 100000);
        /* ... the verdict speaks of the place, not of those seconds. */
        ms_pair *pair = NULL;
        ms_error err;
        CHECK_EQ_INT(ms_pair_compare(&pair, p[0], p[1], &err), 0);
        char v[2048], place[128];
        ms_pair_verdict(pair, NULL, NULL, v, sizeof v);
        ms_peak_place_format(&p[0]->peak_place, place, sizeof place);
        CHECK_TRUE(strstr(v, place) != NULL);
        CHECK_TRUE(strstr(v, " s vs ") == NULL);
        ms_pair_free(pair);
    }
    ms_profile_free(p[0]);
    ms_profile_free(p[1]);
}

/* ms_run_compare_json: the pair of two runs as diff --json writes it, against the
 * allocator's counters; a run against itself matches, under the labels "A" and "B". */
static void test_run_compare_json(void)
{
    ms_snapshot *s[2] = {NULL, NULL};
    ms_run *run[2] = {NULL, NULL};
    ms_error err;
    static const char *const path[2] = {"testdata/ddp_rank0.pickle", "testdata/ddp_rank1.pickle"};
    for (int i = 0; i < 2; i++) /* each rank writes on its own GPU */
        if (ms_snapshot_read_file(&s[i], path[i], NULL, &err) ||
            ms_run_open(&run[i], s[i], i, NULL, &err))
            check_fail("%s: %s", path[i], err.message);
    truth ta = read_truth("ddp_rank0"), tb = read_truth("ddp_rank1");
    char *text = NULL;
    size_t len = 0;
    if (run[0] && run[1])
        CHECK_EQ_INT(ms_run_compare_json(&text, &len, run[0], path[0], run[1], path[1], &err), 0);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    CHECK_TRUE(o && len == strlen(text));
    if (o) {
        CHECK_TRUE(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "a_label")), "rank0"));
        CHECK_TRUE(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "b_label")), "rank1"));
        CHECK_EQ_INT(cJSON_GetObjectItem(o, "peak_delta_bytes")->valuedouble, tb.peak - ta.peak);
        const cJSON *peak = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metrics"), "peak_bytes");
        CHECK_EQ_INT(cJSON_GetObjectItem(peak, "a")->valuedouble, ta.peak);
        CHECK_EQ_INT(cJSON_GetObjectItem(peak, "b")->valuedouble, tb.peak);
        CHECK_TRUE(cJSON_IsFalse(cJSON_GetObjectItem(o, "match")));
        CHECK_TRUE(!strncmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "verdict")),
                            "rank1 peaks ", 12));
    }
    cJSON_Delete(o);
    ms_free(text);
    text = NULL;
    if (run[0])
        CHECK_EQ_INT(ms_run_compare_json(&text, NULL, run[0], NULL, run[0], NULL, &err), 0);
    o = text ? cJSON_Parse(text) : NULL;
    CHECK_TRUE(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "match")) &&
               !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "a_label")), "A") &&
               !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "b_label")), "B"));
    cJSON_Delete(o);
    ms_free(text);
    CHECK_EQ_INT(ms_run_compare_json(&text, NULL, run[0], NULL, NULL, NULL, &err), MS_ERR_ARG);
    for (int i = 0; i < 2; i++) {
        ms_run_free(run[i]);
        ms_snapshot_free(s[i]);
    }
}

int main(void)
{
    test_rank_names();
    test_made();
    test_ddp_pair();
    test_self();
    test_ranks_real();
    test_peak_place();
    test_parallel_load();
    test_run_compare_json();
    return check_finish("test_compare");
}
