/* Iterations and leaks on the real snapshots, checked against their truth.json. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memsnap/allocator.h"
#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"

typedef struct fixture {
    ms_snapshot *s;
    cJSON *truth;
    int device;
    ms_timeline *t;
} fixture;

static int open_fixture(fixture *fx, const char *name)
{
    char path[256];
    memset(fx, 0, sizeof *fx);
    snprintf(path, sizeof path, "testdata/%s.pickle", name);
    /* The rank files trace on their own device: the busiest one. */
    if (check_open_timeline(path, &fx->s, &fx->device, &fx->t))
        return -1;
    fx->truth = check_truth_load(name);
    if (!fx->truth) {
        ms_timeline_free(fx->t);
        ms_snapshot_free(fx->s);
        return -1;
    }
    return 0;
}

static void close_fixture(fixture *fx)
{
    ms_timeline_free(fx->t);
    ms_snapshot_free(fx->s);
    cJSON_Delete(fx->truth);
}

static ms_leak_report *find(const char *name, fixture *fx)
{
    ms_leak_report *r = NULL;
    ms_error err;
    if (ms_leak_report_build(&r, fx->s, fx->device, fx->t, NULL, &err)) {
        check_fail("%s: ms_leak_report_build: %s", name, err.message);
        return NULL;
    }
    return r;
}

/* Calls fn with testdata/NAME's fixture and its leak report when both could be made (a
 * failure is counted), then frees them. */
typedef void (*report_fn)(const char *name, fixture *fx, ms_leak_report *r, void *arg);
static void with_report(const char *name, report_fn fn, void *arg)
{
    fixture fx;
    if (open_fixture(&fx, name))
        return;
    ms_leak_report *r = find(name, &fx);
    if (r)
        fn(name, &fx, r, arg);
    ms_leak_report_free(r);
    close_fixture(&fx);
}

static size_t count_kind(const ms_leak_report *r, ms_leak_kind k)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->items[i].kind == k;
    return n;
}

/* Truth iterations as event ranges: [first event at/after mark k, ... mark k+1). Those
 * with no event (dropped from a wrapped ring buffer) are skipped. Detected iterations must
 * match them exactly, event for event. */
static void check_iterations_slack(const char *name, fixture *fx, const ms_iterations *it,
                                   int64_t first_slack);

static void check_iterations(const char *name, fixture *fx, const ms_iterations *it)
{
    check_iterations_slack(name, fx, it, 0);
}

/* `first_slack`: events the first iteration may start late, for scenarios whose first
 * pass does extra work before the steady-state first event (docs/leaks.md, limits). */
static void check_iterations_slack(const char *name, fixture *fx, const ms_iterations *it,
                                   int64_t first_slack)
{
    cJSON *marks = cJSON_GetObjectItem(fx->truth, "iteration_start_us");
    if (!cJSON_IsArray(marks))
        return;
    const ms_trace *tr = ms_snapshot_trace(fx->s, fx->device);
    int nm = cJSON_GetArraySize(marks);
    int64_t idx[64];
    CHECK_TRUE_IN(name, nm >= 2 && nm <= 64);
    if (nm < 2 || nm > 64)
        return;
    for (int k = 0; k < nm; k++) {
        int64_t m = (int64_t)cJSON_GetArrayItem(marks, k)->valuedouble;
        int64_t i = 0;
        while ((size_t)i < tr->n && tr->time_us[i] < m)
            i++;
        idx[k] = i;
    }
    size_t expect = 0;
    for (int k = 0; k + 1 < nm; k++)
        if (idx[k + 1] > idx[k]) {
            if (expect < it->n) {
                if (expect == 0 && it->items[0].start_event > idx[k] &&
                    it->items[0].start_event - idx[k] <= first_slack)
                    CHECK_TRUE_IN(name, 1);
                else
                    CHECK_EQ_INT_IN(name, it->items[expect].start_event, idx[k]);
                CHECK_EQ_INT_IN(name, it->items[expect].end_event, idx[k + 1]);
            }
            expect++;
        }
    CHECK_EQ_INT_IN(name, it->n, expect);
    CHECK_TRUE_IN(name, it->method != MS_ITER_NONE);
}

/* The leak member (site) at file:line function, or NULL; *finding gets its finding. */
static const ms_leak_member *leak_member_at(const fixture *fx, const ms_leak_report *r,
                                            const char *file, long long line, const char *fn,
                                            const ms_leak **finding)
{
    for (size_t i = 0; i < r->n; i++) {
        const ms_leak *L = &r->items[i];
        if (L->kind != MS_LEAK_LEAK)
            continue;
        for (size_t m = 0; m < L->n_members; m++) {
            const ms_leak_member *M = &r->members[L->first_member + m];
            if (M->site == UINT32_MAX)
                continue;
            const ms_frame *f = ms_snapshot_frame(fx->s, M->site);
            if (!strcmp(ms_snapshot_string(fx->s, f->filename), file) && f->line == line &&
                !strcmp(ms_snapshot_string(fx->s, f->name), fn)) {
                *finding = L;
                return M;
            }
        }
    }
    return NULL;
}

static size_t count_leak_members(const ms_leak_report *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->items[i].kind == MS_LEAK_LEAK)
            n += r->items[i].n_members;
    return n;
}

/* A finding is the sum of its members, and its index range is theirs, in order. */
static void check_members_sum(const char *name, const ms_leak_report *r)
{
    size_t covered = 0;
    for (size_t i = 0; i < r->n; i++) {
        const ms_leak *L = &r->items[i];
        uint64_t count = 0, bytes = 0;
        size_t next = L->first_index;
        CHECK_TRUE_IN(name, L->n_members >= 1);
        for (size_t m = 0; m < L->n_members; m++) {
            const ms_leak_member *M = &r->members[L->first_member + m];
            count += M->count;
            bytes += M->bytes;
            CHECK_EQ_INT_IN(name, M->first_index, next);
            CHECK_EQ_INT_IN(name, M->n_index, M->count);
            next += M->n_index;
        }
        CHECK_EQ_INT_IN(name, count, L->count);
        CHECK_EQ_INT_IN(name, bytes, L->bytes);
        CHECK_EQ_INT_IN(name, next, L->first_index + L->n_index);
        covered += L->n_members;
    }
    CHECK_EQ_INT_IN(name, covered, r->n_members);
}

static bool frame_is(const fixture *fx, uint32_t frame, const char *file, long long line,
                     const char *fn)
{
    if (frame == UINT32_MAX)
        return false;
    const ms_frame *f = ms_snapshot_frame(fx->s, frame);
    return !strcmp(ms_snapshot_string(fx->s, f->filename), file) && f->line == line &&
           !strcmp(ms_snapshot_string(fx->s, f->name), fn);
}

static bool stack_has(const fixture *fx, uint32_t stack, uint32_t frame)
{
    size_t n = 0;
    const uint32_t *fr = ms_snapshot_stack(fx->s, stack, &n);
    for (size_t k = 0; k < n; k++)
        if (fr[k] == frame)
            return true;
    return false;
}

/* Every finding and member carries the stack of one of its own allocations, and that
 * stack holds the site it is blamed on. */
static void check_stacks(const char *name, const fixture *fx, const ms_leak_report *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const ms_leak *L = &r->items[i];
        bool own = false;
        for (size_t j = 0; j < L->n_index && !own; j++)
            own = fx->t->allocs[r->alloc_index[L->first_index + j]].stack == L->stack;
        CHECK_TRUE_IN(name, own);
        if (L->site != UINT32_MAX)
            CHECK_TRUE_IN(name, stack_has(fx, L->stack, L->site));
        for (size_t m = 0; m < L->n_members; m++) {
            const ms_leak_member *M = &r->members[L->first_member + m];
            if (M->site != UINT32_MAX)
                CHECK_TRUE_IN(name, stack_has(fx, M->stack, M->site));
        }
    }
}

/* Every snapshot whose truth lists injected leaks: exactly those sites leak (file, line,
 * function), each with its count, requested bytes each and a growth of count /
 * iterations per iteration; nothing else is a leak or a suspect. Sites that leak in the
 * same pass of the same iterations are members of one finding. */
static void truth_leak_checks(const char *name, fixture *fx, ms_leak_report *r, void *arg)
{
    bool check_marks = *(const bool *)arg;
    check_iterations(name, fx, r->iterations);
    cJSON *truth = cJSON_GetObjectItem(fx->truth, "leaks");
    long long iters = (long long)cJSON_GetObjectItem(fx->truth, "iterations")->valuedouble;
    CHECK_EQ_INT_IN(name, count_leak_members(r), cJSON_GetArraySize(truth));
    CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_SUSPECT), 0);
    check_members_sum(name, r);
    check_stacks(name, fx, r);
    long long leaked_allocs = 0;
    cJSON *tl;
    cJSON_ArrayForEach(tl, truth)
    {
        const char *file = cJSON_GetObjectItem(tl, "filename")->valuestring;
        long long line = (long long)cJSON_GetObjectItem(tl, "line")->valuedouble;
        const char *fn = cJSON_GetObjectItem(tl, "name")->valuestring;
        long long cnt = (long long)cJSON_GetObjectItem(tl, "count")->valuedouble;
        long long each =
            (long long)cJSON_GetObjectItem(tl, "bytes_each_requested")->valuedouble;
        leaked_allocs += cnt;
        const ms_leak *finding = NULL;
        const ms_leak_member *hit = leak_member_at(fx, r, file, line, fn, &finding);
        CHECK_TRUE_IN(name, hit != NULL);
        if (!hit) {
            fprintf(stderr, "%s: no leak found at %s:%lld %s\n", name, file, line, fn);
            continue;
        }
        CHECK_EQ_INT_IN(name, hit->count, cnt);
        CHECK_EQ_INT_IN(name, hit->bytes_each_min, each);
        CHECK_EQ_INT_IN(name, hit->bytes_each_max, each);
        CHECK_EQ_INT_IN(name, hit->bytes, cnt * each);
        /* Each scenario leaks the same number every iteration. */
        CHECK_EQ_INT_IN(name, (long long)(hit->growth_count + 0.5), cnt / iters);
        CHECK_EQ_INT_IN(name, (long long)(hit->growth_bytes + 0.5), cnt / iters * each);
        CHECK_EQ_INT_IN(name, hit->n_index, cnt);
        for (size_t j = 0; j < hit->n_index; j++)
            CHECK_EQ_INT_IN(name, fx->t->allocs[r->alloc_index[hit->first_index + j]].size,
                            each);
    }

    if (check_marks) {
        /* Chart marks: one per leaked allocation, labelled with site and size. */
        ms_leak_mark *mk = NULL;
        size_t nm = 0;
        ms_error err;
        CHECK_EQ_INT_IN(name, ms_leak_marks_build(&mk, &nm, fx->s, fx->t, NULL, &err), 0);
        CHECK_EQ_INT_IN(name, nm, leaked_allocs);
        for (size_t i = 0; i < nm; i++) {
            CHECK_TRUE_IN(name, mk[i].alloc_index < fx->t->n_allocs);
            CHECK_TRUE_IN(name, mk[i].kind == MS_LEAK_LEAK);
            CHECK_TRUE_IN(name, strstr(mk[i].label, "scenarios") != NULL);
        }
        ms_leak_marks_free(mk);
    }
}

static void test_truth_leaks(const char *name, bool check_marks)
{
    with_report(name, truth_leak_checks, &check_marks);
}

static bool frame_matches(const fixture *fx, uint32_t frame, const cJSON *want)
{
    const ms_frame *f = frame == UINT32_MAX ? NULL : ms_snapshot_frame(fx->s, frame);
    if (!f || !want)
        return false;
    return !strcmp(ms_snapshot_string(fx->s, f->filename),
                   cJSON_GetObjectItem(want, "filename")->valuestring) &&
           f->line == (int64_t)cJSON_GetObjectItem(want, "line")->valuedouble &&
           !strcmp(ms_snapshot_string(fx->s, f->name), cJSON_GetObjectItem(want, "name")->valuestring);
}

/* Issue 22, the user's own line: a leak made inside a library (a kept lm_head output, a
 * forward hook's Conv1D output) keeps its allocating site and names the user's line that
 * led to it, as the script measured it; its allocations are exactly the kept addresses. */
static void test_user_frame(const char *name)
{
    fixture fx;
    if (open_fixture(&fx, name))
        return;
    ms_leak_report *r = find(name, &fx);
    cJSON *tl, *list = r ? cJSON_GetObjectItem(fx.truth, "leaks") : NULL;
    cJSON_ArrayForEach(tl, list)
    {
        const ms_leak *L = NULL;
        const ms_leak_member *M = leak_member_at(
            &fx, r, cJSON_GetObjectItem(tl, "filename")->valuestring,
            (long long)cJSON_GetObjectItem(tl, "line")->valuedouble,
            cJSON_GetObjectItem(tl, "name")->valuestring, &L);
        CHECK_TRUE_IN(name, M != NULL);
        if (!M)
            continue;
        const cJSON *uf = cJSON_GetObjectItem(tl, "user_frame");
        CHECK_TRUE_IN(name, frame_matches(&fx, M->user_frame, uf));
        CHECK_TRUE_IN(name, frame_matches(&fx, L->user_frame, uf));
        CHECK_TRUE_IN(name, L->user_frame != L->site); /* the site stays the library's */
        const cJSON *addrs = cJSON_GetObjectItem(tl, "addresses");
        CHECK_EQ_INT_IN(name, M->n_index, cJSON_GetArraySize(addrs));
        for (size_t j = 0; j < M->n_index; j++) {
            uint64_t a = fx.t->allocs[r->alloc_index[M->first_index + j]].addr;
            bool listed = false;
            const cJSON *ad;
            cJSON_ArrayForEach(ad, addrs) listed = listed || (uint64_t)ad->valuedouble == a;
            CHECK_TRUE_IN(name, listed);
        }
    }
    ms_leak_report_free(r);
    close_fixture(&fx);
}

/* Leaks made by the user's own line: the user's line is the site itself. */
static void test_user_frame_is_site(const char *name)
{
    fixture fx;
    if (open_fixture(&fx, name))
        return;
    ms_leak_report *r = find(name, &fx);
    for (size_t i = 0; r && i < r->n; i++) {
        const ms_leak *L = &r->items[i];
        if (L->kind != MS_LEAK_LEAK)
            continue;
        for (size_t m = 0; m < L->n_members; m++) {
            const ms_leak_member *M = &r->members[L->first_member + m];
            CHECK_TRUE_IN(name, M->user_frame != UINT32_MAX);
            CHECK_EQ_INT_IN(name, M->user_frame, M->site);
            CHECK_EQ_INT_IN(name, ms_frame_kind_of(fx.s, M->user_frame), MS_FRAME_USER);
        }
    }
    ms_leak_report_free(r);
    close_fixture(&fx);
}

static bool frame_at(const ms_snapshot *s, uint32_t frame, const char *file_end, int64_t line,
                     const char *fn)
{
    const ms_frame *f = frame == UINT32_MAX ? NULL : ms_snapshot_frame(s, frame);
    if (!f)
        return false;
    const char *file = ms_snapshot_string(s, f->filename);
    size_t n = strlen(file), k = strlen(file_end);
    return n >= k && !strcmp(file + n - k, file_end) && f->line == line &&
           !strcmp(ms_snapshot_string(s, f->name), fn);
}

/* The user's line skips the standard library and names the same line for every top site.
 * ddp_rank0: each site in transformers was led to by train/ddp.py:30 worker (the forward
 * call), under multiprocessing's spawn.py and process.py frames; the model's .cuda() at
 * line 23. compile_reduce_overhead: 12 allocations made in contextlib.py's __exit__ (in
 * Inductor's cudagraph trees), 8 called from scenarios_compat.py:210 _compile_train, 4
 * with no other frame outside torch: no user line (stacks read with Python's pickle). */
static void test_site_user_frames(void)
{
    fixture fx;
    if (open_fixture(&fx, "ddp_rank0"))
        return;
    ms_timeline *t = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_timeline_build(&t, fx.s, fx.device, MS_TIMELINE_PEAK_ALIVE, &err), 0);
    ms_site_total *tot = NULL;
    size_t n = 0;
    if (t)
        CHECK_EQ_INT(ms_site_totals(&tot, &n, fx.s, t->peak_alive, t->n_peak_alive, &err), 0);
    size_t library = 0;
    for (size_t i = 0; i < n; i++) {
        if (tot[i].user_frame == UINT32_MAX)
            continue;
        CHECK_EQ_INT(ms_frame_kind_of(fx.s, tot[i].user_frame), MS_FRAME_USER);
        CHECK_TRUE(!ms_frame_is_stdlib(fx.s, tot[i].user_frame));
        if (ms_frame_kind_of(fx.s, tot[i].site) != MS_FRAME_LIBRARY)
            continue;
        library++;
        const ms_frame *sf = ms_snapshot_frame(fx.s, tot[i].site);
        bool cuda = !strcmp(ms_snapshot_string(fx.s, sf->name), "cuda");
        CHECK_TRUE(frame_at(fx.s, tot[i].user_frame, "/train/ddp.py", cuda ? 23 : 30, "worker"));
    }
    CHECK_TRUE(library >= 5);
    /* Sites made by the autograd engine's thread have no Python: no user line. */
    for (size_t i = 0; i < n; i++)
        if (ms_frame_kind_of(fx.s, tot[i].site) == MS_FRAME_NATIVE)
            CHECK_EQ_INT(tot[i].user_frame, UINT32_MAX);
    ms_free(tot);
    ms_timeline_free(t);
    close_fixture(&fx);

    if (open_fixture(&fx, "compile_reduce_overhead"))
        return;
    size_t ctx = 0, without = 0;
    for (uint32_t st = 0; st < ms_snapshot_stack_count(fx.s); st++) {
        size_t nf = 0;
        const uint32_t *fr = ms_snapshot_stack(fx.s, st, &nf);
        for (size_t k = 0; k < nf; k++) {
            if (ms_frame_kind_of(fx.s, fr[k]) != MS_FRAME_USER)
                continue;
            if (frame_at(fx.s, fr[k], "/usr/lib/python3.12/contextlib.py", 144, "__exit__")) {
                CHECK_TRUE(ms_frame_is_stdlib(fx.s, fr[k]));
                uint32_t uf = ms_stack_user_frame(fx.s, st);
                if (uf == UINT32_MAX)
                    without++;
                else if (frame_at(fx.s, uf, "/train/scenarios_compat.py", 210, "_compile_train"))
                    ctx++;
                else
                    CHECK_TRUE(!"contextlib's caller is scenarios_compat.py:210 or nothing");
            }
            break;
        }
    }
    CHECK_TRUE(ctx >= 1);
    CHECK_TRUE(without >= 1); /* cudagraph trees' own thread: contextlib and torch only */
    close_fixture(&fx);
}

/* The graph leak: an eval loop without no_grad summing losses as tensors. One finding,
 * named graph, blamed on the line that calls the forward, whose allocations come from
 * every step and grow by what the allocator's own counters measured per step (steps
 * after the first, which also makes one-time allocations). */
static void graph_leak_checks(const char *name, fixture *fx, ms_leak_report *r, void *arg)
{
    (void)arg;
    check_iterations(name, fx, r->iterations);
    check_members_sum(name, r);
    check_stacks(name, fx, r);
    CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_LEAK), 1);
    CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_SUSPECT), 0);
    cJSON *tl = cJSON_GetArrayItem(cJSON_GetObjectItem(fx->truth, "leaks"), 0);
    const ms_leak *L = r->n ? &r->items[0] : NULL;
    CHECK_TRUE_IN(name, L && L->kind == MS_LEAK_LEAK && tl);
    if (L && tl) {
        CHECK_EQ_STR_IN(name, ms_leak_pattern_name(L->pattern),
                        cJSON_GetObjectItem(tl, "kind")->valuestring);
        CHECK_TRUE_IN(name, L->n_members >= 2);
        CHECK_TRUE_IN(name,
                      frame_is(fx, L->call_site,
                               cJSON_GetObjectItem(tl, "filename")->valuestring,
                               (long long)cJSON_GetObjectItem(tl, "line")->valuedouble,
                               cJSON_GetObjectItem(tl, "name")->valuestring));
        /* Made in every step: `count` graphs are kept. */
        long long steps = (long long)cJSON_GetObjectItem(tl, "count")->valuedouble;
        size_t nit = r->iterations->n;
        bool *made = calloc(nit + 1, sizeof *made);
        long long distinct = 0;
        for (size_t j = 0; made && j < L->n_index; j++) {
            const ms_alloc *a = &fx->t->allocs[r->alloc_index[L->first_index + j]];
            size_t k = 0;
            while (k < nit && r->iterations->items[k].end_event <= a->alloc_event)
                k++;
            distinct += !made[k];
            made[k] = true;
        }
        free(made);
        CHECK_EQ_INT_IN(name, distinct, steps);
        cJSON *req = cJSON_GetObjectItem(fx->truth, "growth_per_step_requested_bytes");
        cJSON *alc = cJSON_GetObjectItem(fx->truth, "growth_per_step_allocated_bytes");
        double mreq = 0, malc = 0;
        int n = cJSON_GetArraySize(req);
        for (int k = 1; k < n; k++) {
            mreq += cJSON_GetArrayItem(req, k)->valuedouble / (n - 1);
            malc += cJSON_GetArrayItem(alc, k)->valuedouble / (n - 1);
        }
        /* Requested bytes, and block bytes as memory_allocated() counts them. */
        double g = L->growth_bytes, ga = L->growth_allocated_bytes;
        CHECK_TRUE_IN(name, fabs(g - mreq) <= 0.02 * mreq);
        CHECK_TRUE_IN(name, fabs(ga - malc) <= 0.02 * malc);
        if (fabs(g - mreq) > 0.02 * mreq || fabs(ga - malc) > 0.02 * malc)
            fprintf(stderr, "%s: growth %.0f (allocated %.0f), measured %.0f (%.0f)\n", name,
                    g, ga, mreq, malc);
    }
    /* The chart labels the finding once: every mark is of finding 0, one label. */
    ms_leak_mark *mk = NULL;
    size_t nm = 0;
    ms_error err;
    CHECK_EQ_INT_IN(name, ms_leak_marks_build(&mk, &nm, fx->s, fx->t, NULL, &err), 0);
    CHECK_EQ_INT_IN(name, nm, L ? L->count : 0);
    for (size_t i = 0; i < nm; i++) {
        CHECK_EQ_INT_IN(name, mk[i].finding, 0);
        CHECK_EQ_STR_IN(name, mk[i].label, mk[0].label);
    }
    CHECK_TRUE_IN(name, nm && strstr(mk[0].label, "graph") != NULL);
    ms_leak_marks_free(mk);
}

static void test_graph_leak(const char *name)
{
    with_report(name, graph_leak_checks, NULL);
}

/* The allocations a leak's line makes once (the cuBLAS workspace at the first matmul)
 * are not the leak: retained, named a workspace, with the bytes measured on the GPU. */
static void test_one_time(const char *name)
{
    fixture fx;
    if (open_fixture(&fx, name))
        return;
    ms_leak_report *r = find(name, &fx);
    cJSON *list = r ? cJSON_GetObjectItem(fx.truth, "one_time") : NULL, *once;
    CHECK_TRUE_IN(name, cJSON_GetArraySize(list) > 0);
    cJSON_ArrayForEach(once, list)
    {
        const char *file = cJSON_GetObjectItem(once, "filename")->valuestring;
        long long line = (long long)cJSON_GetObjectItem(once, "line")->valuedouble;
        const char *fn = cJSON_GetObjectItem(once, "name")->valuestring;
        long long bytes = (long long)cJSON_GetObjectItem(once, "bytes")->valuedouble;
        const ms_leak *hit = NULL;
        for (size_t i = 0; i < r->n; i++)
            if (r->items[i].kind == MS_LEAK_RETAINED && frame_is(&fx, r->items[i].site, file, line, fn))
                hit = &r->items[i];
        CHECK_TRUE_IN(name, hit != NULL);
        if (hit) {
            CHECK_EQ_INT_IN(name, hit->count, 1);
            CHECK_EQ_INT_IN(name, hit->bytes, bytes);
            CHECK_EQ_INT_IN(name, hit->pattern, MS_LEAK_PATTERN_WORKSPACE);
        }
    }
    ms_leak_report_free(r);
    close_fixture(&fx);
}

/* Whether any allocation of a finding was made under an optimizer frame. */
static bool made_by_optimizer(const fixture *fx, const ms_leak_report *r, const ms_leak *L)
{
    for (size_t j = 0; j < L->n_index; j++) {
        const ms_alloc *a = &fx->t->allocs[r->alloc_index[L->first_index + j]];
        size_t n = 0;
        const uint32_t *fr = ms_snapshot_stack(fx->s, a->stack, &n);
        for (size_t k = 0; k < n; k++)
            if (strstr(ms_snapshot_string(fx->s, ms_snapshot_frame(fx->s, fr[k])->filename),
                       "/torch/optim/"))
                return true;
    }
    return false;
}

static void no_leak_checks(const char *name, fixture *fx, ms_leak_report *r, void *arg)
{
    bool trained = *(const bool *)arg;
    check_iterations(name, fx, r->iterations);
    CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_LEAK), 0);
    CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_SUSPECT), 0);
    check_members_sum(name, r);
    check_stacks(name, fx, r);
    bool optim_retained = false;
    for (size_t i = 0; i < r->n; i++) {
        const ms_leak *L = &r->items[i];
        bool by_opt = made_by_optimizer(fx, r, L);
        if (by_opt)
            CHECK_TRUE_IN(name, L->kind == MS_LEAK_RETAINED);
        if (by_opt && L->kind == MS_LEAK_RETAINED)
            optim_retained = true;
    }
    /* Optimizer state exists when the whole first step is in the trace. */
    if (trained)
        CHECK_TRUE_IN(name, optim_retained);
}

static void test_no_leak(const char *name, bool trained)
{
    with_report(name, no_leak_checks, &trained);
}

static void oom_checks(const char *name, fixture *fx, ms_leak_report *r, void *arg)
{
    (void)arg;
    CHECK_TRUE_IN(name, r->oom_count >= 1);
    /* The scenario asks for 256 MiB + 512 bytes per tensor already made; the trace
     * keeps the requested size (the observer sees it rounded). */
    long long made =
        (long long)cJSON_GetObjectItem(fx->truth, "tensors_before_oom")->valuedouble;
    CHECK_EQ_INT_IN(name, r->first_oom_bytes, 256ll * 1048576 + 512 * made);
    CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_LEAK), 0);
}

static void test_oom(void)
{
    const char *name = "oom";
    with_report(name, oom_checks, NULL);
}

/* A stated count wins over the automatic one; --step names the marker. */
static void test_options(void)
{
    const char *name = "gpt2_train";
    fixture fx;
    if (open_fixture(&fx, name))
        return;
    ms_iterations *it = NULL;
    ms_error err;
    ms_iter_options o = {"## forward ##", 0, false};
    CHECK_EQ_INT_IN(name, ms_iterations_find(&it, fx.s, fx.device, fx.t, &o, &err), 0);
    if (it) {
        /* The forward ranges mark the iterations; the boundaries are the true ones. */
        CHECK_EQ_INT_IN(name, it->method, MS_ITER_ANNOTATION_STEP);
        check_iterations(name, &fx, it);
        ms_iterations_free(it);
    }
    o.step_name = "no such range";
    CHECK_EQ_INT_IN(name, ms_iterations_find(&it, fx.s, fx.device, NULL, &o, &err), 0);
    if (it) {
        CHECK_EQ_INT_IN(name, it->method, MS_ITER_ANNOTATION_OPTIMIZER);
        CHECK_EQ_INT_IN(name, it->n, 3);
        ms_iterations_free(it);
    }
    CHECK_TRUE_IN(name, ms_iterations_find(&it, fx.s, 99, NULL, NULL, &err) < 0);
    CHECK_EQ_INT_IN(name, err.code, MS_ERR_ARG);
    close_fixture(&fx);
}

/* The same boundaries without annotations: from optimizer stacks and memory alone. */
static void test_trace_only(const char *name, int64_t first_slack)
{
    fixture fx;
    if (open_fixture(&fx, name))
        return;
    ms_iterations *it = NULL;
    ms_error err;
    ms_iter_options o = {NULL, 0, true};
    CHECK_EQ_INT_IN(name, ms_iterations_find(&it, fx.s, fx.device, fx.t, &o, &err), 0);
    if (it) {
        CHECK_EQ_INT_IN(name, it->method, MS_ITER_OPTIMIZER_FRAMES);
        check_iterations_slack(name, &fx, it, first_slack);
        ms_iterations_free(it);
    }
    close_fixture(&fx);
}

/* A cache built on the first pass only: retained, never a leak. The first iteration's
 * cache-building events come before the steady-state first event (the batch), so its
 * start is found 5 events late; every other boundary is exact. */
static void warm_cache_checks(const char *name, fixture *fx, ms_leak_report *r, void *arg)
{
    (void)arg;
    check_iterations_slack(name, fx, r->iterations, 5);
    CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_LEAK), 0);
    CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_SUSPECT), 0);
    CHECK_TRUE_IN(name, count_kind(r, MS_LEAK_RETAINED) > 0);
}

static void test_warm_cache(void)
{
    const char *name = "noleak_warm_cache";
    with_report(name, warm_cache_checks, NULL);
    test_trace_only(name, 5);
}

/* Every snapshot in testdata/, the ones other tests name and any added later: where the
 * truth injected no leak (no `leaks`, or `leaks: []`), no leak and no suspect; where it
 * lists sites, exactly that many leaking sites (one finding for a graph), each found. */
static void snapshot_checks(const char *name, fixture *fx, ms_leak_report *r, void *arg)
{
    size_t *seen = arg;
    (*seen)++;
    check_members_sum(name, r);
    cJSON *truth = cJSON_GetObjectItem(fx->truth, "leaks"), *tl;
    /* Leaks whose sites cannot be named (a context=None rewrite), or whose naming is
     * issue 22's (made inside a library): found, at least; their sites are checked
     * where the site rule is. */
    if (!truth && (cJSON_GetObjectItem(fx->truth, "leaks_without_sites") ||
                   cJSON_GetObjectItem(fx->truth, "verdicts_for_issue_22"))) {
        bool leaks = cJSON_GetObjectItem(fx->truth, "leaks_without_sites") ||
                     cJSON_GetArraySize(cJSON_GetObjectItem(
                         cJSON_GetObjectItem(fx->truth, "verdicts_for_issue_22"), "leaks")) > 0;
        CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_LEAK) > 0, leaks);
        return;
    }
    CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_SUSPECT), 0);
    bool graph = false;
    cJSON_ArrayForEach(tl, truth)
    {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(tl, "kind"));
        graph = graph || (kind && !strcmp(kind, "graph"));
    }
    if (graph) {
        CHECK_EQ_INT_IN(name, count_kind(r, MS_LEAK_LEAK), 1);
    } else {
        CHECK_EQ_INT_IN(name, count_leak_members(r), cJSON_GetArraySize(truth));
        cJSON_ArrayForEach(tl, truth)
        {
            const ms_leak *finding = NULL;
            const ms_leak_member *M = leak_member_at(
                fx, r, cJSON_GetObjectItem(tl, "filename")->valuestring,
                (long long)cJSON_GetObjectItem(tl, "line")->valuedouble,
                cJSON_GetObjectItem(tl, "name")->valuestring, &finding);
            CHECK_TRUE_IN(name, M != NULL);
            if (M)
                CHECK_EQ_INT_IN(name, M->count,
                                (long long)cJSON_GetObjectItem(tl, "count")->valuedouble);
            /* The block each holds where the truth read it (seg_roundup: rounded by
             * roundup_power2_divisions): growth in blocks is the allocations' growth
             * times that block, and the allocator's rule gives it for the request. */
            const cJSON *alloc = cJSON_GetObjectItem(tl, "bytes_each_allocated");
            if (M && cJSON_IsNumber(alloc)) {
                double req = cJSON_GetObjectItem(tl, "bytes_each_requested")->valuedouble;
                CHECK_EQ_INT_IN(name, ms_alloc_block_size(fx->s, (uint64_t)req),
                                (long long)alloc->valuedouble);
                CHECK_TRUE_IN(name, M->growth_count > 0);
                CHECK_EQ_INT_IN(name, (long long)(M->growth_allocated_bytes + 0.5),
                                (long long)(M->growth_count * alloc->valuedouble + 0.5));
            }
        }
    }
}

static void each_snapshot(const char *path, const char *name, void *arg)
{
    (void)path;
    with_report(name, snapshot_checks, arg);
}

int main(void)
{
    size_t seen = 0;
    check_each_snapshot(each_snapshot, &seen);
    CHECK_TRUE(seen >= 23);
    test_truth_leaks("leak_layers", true);
    test_truth_leaks("leak_backward_hook", true);
    test_truth_leaks("leak_forward_hook", true);
    test_truth_leaks("leak_nograd_infer", true);
    test_truth_leaks("leak_after_step", true);
    test_truth_leaks("leak_hook_infer", true);
    test_truth_leaks("leak_shared_line", true);
    test_graph_leak("leak_eval_graph");
    test_truth_leaks("leak_library_logits", false);
    test_truth_leaks("leak_hook_library", false);
    test_user_frame("leak_library_logits");
    test_user_frame("leak_hook_library");
    /* A fresh process: the first step pays CUDA/cuBLAS set-up (the run axis's case). */
    test_truth_leaks("slow_first_leak", false);
    test_user_frame_is_site("leak_forward_hook");
    test_user_frame_is_site("leak_layers");
    test_site_user_frames();
    test_one_time("leak_shared_line");
    test_no_leak("noleak_keep_grad", true);
    test_no_leak("noleak_bounded_cache", true);
    test_no_leak("noleak_layers", true);
    test_no_leak("gpt2_train", true);
    test_no_leak("ddp_rank0", true);
    test_no_leak("ddp_rank1", true);
    test_no_leak("expandable", true);
    test_no_leak("noleak_grad_accum", true);
    test_no_leak("noleak_python_stacks", true);
    test_no_leak("ring_wrap", false);
    test_no_leak("linear_infer", false);
    test_no_leak("streams", false);
    test_no_leak("cudagraph", false);
    test_oom();
    test_options();
    const char *trained[] = {"leak_layers",       "noleak_layers",     "gpt2_train",
                             "ddp_rank0",         "ddp_rank1",         "expandable",
                             "ring_wrap",         "leak_backward_hook", "leak_forward_hook",
                             "noleak_grad_accum", "noleak_python_stacks"};
    for (size_t i = 0; i < sizeof trained / sizeof trained[0]; i++)
        test_trace_only(trained[i], 0);
    test_warm_cache();
    return check_finish("test_leaks");
}
