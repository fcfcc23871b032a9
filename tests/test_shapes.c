/* The recording's shape (memsnap/shape.h) against the truth its script measured on the
 * GPU (testdata/shape_*.truth.json, tests/gen/scenarios_shapes.py): the kind; the
 * iteration count (0 for a forward, 1 for a step, N for loops) and where a lone step
 * begins; one finding, not one per site, for a forward's graph alive at the end, with the
 * script's allocation count and bytes; the compile phase (its seconds and peak, every
 * compile-time allocation in it, none in an iteration but the step that compiled); the
 * CUDA-graph pool's size and a replay iteration's footprint. Older recordings keep
 * their shapes. */
#include <string.h>

#include "analysis/compile_internal.h"
#include "check.h"
#include "memsnap/run.h"

static double jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The first event at or after time `us`. */
static int64_t event_at(const ms_trace *tr, double us)
{
    int64_t i = 0;
    while ((size_t)i < tr->n && (double)tr->time_us[i] < us)
        i++;
    return i;
}

typedef struct fixture {
    const char *name;
    cJSON *truth;
    ms_snapshot *s;
    ms_run *run;
    const ms_shape *sh;
    const ms_iterations *it;
    const ms_phases *ph;
    const ms_trace *tr;
} fixture;

static bool open_fixture(fixture *fx, const char *name)
{
    memset(fx, 0, sizeof *fx);
    fx->name = name;
    char path[256];
    snprintf(path, sizeof path, "testdata/%s.pickle", name);
    ms_error err;
    fx->truth = check_truth_load(name);
    if (!fx->truth)
        return false;
    if (ms_snapshot_read_file(&fx->s, path, NULL, &err) ||
        ms_run_open(&fx->run, fx->s, ms_snapshot_busiest_device(fx->s), NULL, &err) ||
        ms_run_shape(&fx->sh, fx->run, &err) || ms_run_iterations(&fx->it, fx->run, &err) ||
        ms_run_phases(&fx->ph, fx->run, &err)) {
        check_fail("%s: %s", name, err.message);
        return false;
    }
    fx->tr = ms_snapshot_trace(fx->s, ms_run_device(fx->run));
    check_count++;
    return true;
}

static void close_fixture(fixture *fx)
{
    ms_run_free(fx->run);
    ms_snapshot_free(fx->s);
    cJSON_Delete(fx->truth);
}

/* Kind, count, text. A recording whose first step compiles counts that step (as
 * compile_default's and shape_reduce_overhead's truths do): the truth's
 * iterations_including_compile_step where it gives one. */
static void check_kind(fixture *fx)
{
    const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fx->truth, "shape"));
    CHECK_EQ_STR_IN(fx->name, ms_shape_kind_name(fx->sh->kind), want ? want : "(none)");
    double n = jnum(fx->truth, "iterations_including_compile_step");
    if (n < 0)
        n = jnum(fx->truth, "iterations");
    CHECK_EQ_INT_IN(fx->name, fx->sh->iterations, (int64_t)n);
    CHECK_EQ_INT_IN(fx->name, fx->it->n, (int64_t)n);
    char text[512];
    CHECK_TRUE_IN(fx->name, ms_shape_text(fx->sh, text, sizeof text) > 0);
    CHECK_TRUE_IN(fx->name, strstr(text, ms_shape_kind_text(fx->sh->kind)) != NULL ||
                                fx->sh->kind == MS_SHAPE_BENCHMARK_LOOP);
    /* No iteration is spoken of where there is none. */
    if (n == 0)
        CHECK_TRUE_IN(fx->name, strstr(text, "iteration") == NULL);
}

/* One step: one iteration, from the forward's first event to the end of its last phase. */
static void check_step(fixture *fx)
{
    const cJSON *marks = cJSON_GetObjectItemCaseSensitive(fx->truth, "iteration_start_us");
    if (cJSON_GetArraySize(marks) != 2 || fx->it->n != 1)
        return;
    int64_t a = event_at(fx->tr, cJSON_GetArrayItem(marks, 0)->valuedouble);
    int64_t b = event_at(fx->tr, cJSON_GetArrayItem(marks, 1)->valuedouble);
    CHECK_EQ_INT_IN(fx->name, fx->it->items[0].start_event, a);
    CHECK_EQ_INT_IN(fx->name, fx->it->items[0].end_event, b);
}

/* One forward with its graph alive: one finding of kind alive_at_end holding what the
 * script measured (allocations and requested bytes made during the recording and alive
 * at the dump), from the line that called the model; no suspect, no leak. */
static void check_alive(fixture *fx)
{
    double count = jnum(fx->truth, "graph_alive_at_end_allocations");
    double bytes = jnum(fx->truth, "graph_alive_at_end_requested_bytes");
    if (count < 0)
        return;
    CHECK_EQ_INT_IN(fx->name, fx->sh->alive_end_count, (int64_t)count);
    CHECK_EQ_INT_IN(fx->name, fx->sh->alive_end_bytes, (int64_t)bytes);
    const ms_leak_report *r = NULL;
    ms_error err;
    if (ms_run_leaks(&r, fx->run, &err)) {
        check_fail("%s: leaks: %s", fx->name, err.message);
        return;
    }
    size_t alive = 0, other = 0;
    const ms_leak *A = NULL;
    for (size_t i = 0; i < r->n; i++) {
        if (r->items[i].kind == MS_LEAK_ALIVE_AT_END) {
            alive++;
            A = &r->items[i];
        } else if (r->items[i].kind != MS_LEAK_RETAINED) {
            other++;
        }
    }
    CHECK_EQ_INT_IN(fx->name, alive, 1);
    CHECK_EQ_INT_IN(fx->name, other, 0);
    if (!A)
        return;
    CHECK_EQ_INT_IN(fx->name, A->count, (int64_t)count);
    CHECK_EQ_INT_IN(fx->name, A->bytes, (int64_t)bytes);
    CHECK_EQ_INT_IN(fx->name, A->pattern, MS_LEAK_PATTERN_END_GRAPH);
    const cJSON *uf = cJSON_GetObjectItemCaseSensitive(fx->truth, "user_frame");
    const ms_frame *f = ms_snapshot_frame(fx->s, A->call_site);
    CHECK_TRUE_IN(fx->name, f != NULL);
    if (f && uf) {
        CHECK_EQ_STR_IN(fx->name, ms_snapshot_string(fx->s, f->filename),
                        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(uf, "filename")));
        CHECK_EQ_INT_IN(fx->name, f->line, (int64_t)jnum(uf, "line"));
    }
}

/* The compile phase: its seconds (the script's windows, summed) within 5%, its peak the
 * script's where it measured one, every allocation of compile-time code inside a compile
 * phase, and all of it inside the step that compiled: no other iteration counts any. */
static void check_compile(fixture *fx)
{
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(fx->truth, "compile_windows");
    if (!ws)
        return;
    double secs = 0;
    const cJSON *w;
    cJSON_ArrayForEach(w, ws) secs += (jnum(w, "end_us") - jnum(w, "start_us")) / 1e6;
    CHECK_TRUE_IN(fx->name, fx->sh->n_compile >= 1);
    CHECK_NEAR_IN(fx->name, (double)fx->sh->compile_us / 1e6 / secs, 1.0, 0.05);
    double peak = jnum(fx->truth, "compile_peak_requested_bytes");
    if (peak >= 0)
        CHECK_EQ_INT_IN(fx->name, fx->sh->compile_peak_bytes, (int64_t)peak);
    CHECK_TRUE_IN(fx->name, fx->ph->counts[MS_PHASE_COMPILE] >= 1);
    uint8_t *cs = NULL;
    bool any = false;
    ms_error err;
    if (ms__compile_stacks(&cs, &any, fx->s, &err)) {
        check_fail("%s: %s", fx->name, err.message);
        return;
    }
    CHECK_TRUE_IN(fx->name, any);
    size_t outside = 0, allocs = 0, nst = ms_snapshot_stack_count(fx->s);
    for (size_t i = 0; i < fx->tr->n; i++) {
        uint32_t st = fx->tr->stack[i];
        if (fx->tr->action[i] != MS_ACT_ALLOC || st >= nst || !cs[st])
            continue;
        allocs++;
        size_t k = ms_phases_at_event(fx->ph, (int64_t)i);
        outside += k >= fx->ph->n || fx->ph->items[k].kind != MS_PHASE_COMPILE;
        for (size_t j = 1; j < fx->it->n; j++)
            outside += (int64_t)i >= fx->it->items[j].start_event &&
                       (int64_t)i < fx->it->items[j].end_event;
    }
    free(cs);
    CHECK_TRUE_IN(fx->name, allocs > 0);
    CHECK_EQ_INT_IN(fx->name, outside, 0);
    double n_alloc = jnum(fx->truth, "compile_allocations");
    if (n_alloc > 0) /* the script counted what its compile windows allocated */
        CHECK_TRUE_IN(fx->name, (double)allocs <= n_alloc);
}

/* CUDA graphs: the pool is the final segments of a private pool, as the script summed
 * them; a replay iteration holds its peak plus the pool not already live. */
static void check_graphs(fixture *fx)
{
    double pool = jnum(fx->truth, "cudagraph_pool_bytes");
    if (pool < 0)
        return;
    CHECK_EQ_INT_IN(fx->name, fx->sh->graph_pool_bytes, (int64_t)pool);
    if (pool == 0) {
        CHECK_EQ_INT_IN(fx->name, fx->sh->graph_replay_count, 0);
        return;
    }
    double live = 0;
    const cJSON *sg;
    cJSON_ArrayForEach(sg, cJSON_GetObjectItemCaseSensitive(fx->truth, "cudagraph_pool_segments"))
        live += jnum(sg, "allocated_size");
    CHECK_EQ_INT_IN(fx->name, fx->sh->graph_pool_live_bytes, (int64_t)live);
    const cJSON *peaks = cJSON_GetObjectItemCaseSensitive(fx->truth,
                                                          "per_iteration_requested_peak_bytes");
    /* Replays: the iterations after the one that recorded the graphs. */
    CHECK_TRUE_IN(fx->name, fx->sh->graph_replay_count >= 1);
    for (size_t k = 0; k < fx->it->n && k < (size_t)cJSON_GetArraySize(peaks); k++) {
        if (!ms_shape_is_replay(fx->sh, k))
            continue;
        double want = cJSON_GetArrayItem(peaks, (int)k)->valuedouble + pool - live;
        CHECK_EQ_INT_IN(fx->name, ms_shape_footprint(fx->sh, k, &fx->it->items[k]),
                        (int64_t)want);
    }
}

static void check_recording(const char *name)
{
    fixture fx;
    if (open_fixture(&fx, name)) {
        check_kind(&fx);
        check_step(&fx);
        check_alive(&fx);
        check_compile(&fx);
        check_graphs(&fx);
        if (fx.sh->kind == MS_SHAPE_BENCHMARK_LOOP)
            CHECK_TRUE_IN(name, fx.sh->warm_start);
    }
    close_fixture(&fx);
}

/* Recordings made before shapes: the loops they are. */
static void check_older(const char *name, ms_shape_kind kind, uint32_t iterations)
{
    char path[256];
    snprintf(path, sizeof path, "testdata/%s.pickle", name);
    ms_snapshot *s = NULL;
    ms_run *run = NULL;
    const ms_shape *sh = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, path, NULL, &err) || ms_run_open(&run, s, 0, NULL, &err) ||
        ms_run_shape(&sh, run, &err)) {
        check_fail("%s: %s", name, err.message);
    } else {
        CHECK_EQ_STR_IN(name, ms_shape_kind_name(sh->kind), ms_shape_kind_name(kind));
        CHECK_EQ_INT_IN(name, sh->iterations, iterations);
        CHECK_EQ_INT_IN(name, sh->n_compile, 0);
    }
    ms_run_free(run);
    ms_snapshot_free(s);
}

int main(void)
{
    static const char *const SHAPES[] = {
        "shape_forward_kept", "shape_fwd_bwd",          "shape_one_step",
        "shape_bench_loop",   "shape_infer_loop",       "shape_compile_autotune",
        "shape_reduce_overhead", "shape_eager_twin"};
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++)
        check_recording(SHAPES[i]);
    check_older("gpt2_train", MS_SHAPE_TRAINING_LOOP, 3);
    check_older("cat_infer", MS_SHAPE_INFERENCE_LOOP, 3);
    /* 20 rounds of side-stream buffers: a loop, with no model in it. */
    check_older("streams", MS_SHAPE_LOOP, 20);
    return check_finish("test_shapes");
}
