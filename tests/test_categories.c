/* Categories against the truth measured on the GPU (testdata/cat_*.truth.json): at each
 * instant the script measured, parameters, gradients and optimizer state within 1% of
 * the bytes of the unique storages of model.parameters()+buffers(), p.grad and opt.state;
 * activations + input after forward within 5% of what the forward added; nothing
 * invented for inference; and the bookkeeping (every breakdown sums to the live bytes)
 * on every snapshot in testdata/. */
#include "analysis/cat_internal.h"
#include "check_categories.h"
#include "memsnap/categories.h"

static const char *const CAT_FILES[] = {
    "cat_adamw", "cat_sgd_frozen", "cat_accum_amp", "cat_prebuilt", "cat_gpt2_annotated",
    "cat_infer",
    /* torch.compile: the position embedding's .grad is written by Inductor into a buffer
     * its forward saved (backward-reused); with mode='reduce-overhead', CUDA-graph
     * replays from iteration 2 on (see check_truth_file). */
    "compile_default", "compile_ctx_recorded", "compile_reduce_overhead", "ctx_alloc",
    "stacks_python",
    /* Parameters made after training began (late-parameter). */
    "lazy_params", "meta_params", "late_layer",
    /* LazyLinear parameters made by a first forward under no_grad, before the first
     * iteration, then AdamW / SGD with momentum (mirrored-parameter). */
    "v3_lazy_adamw", "v3_lazy_sgd",
    /* Deep(512, 8) built in the recording, 6 batches under no_grad. */
    "shape_infer_loop"};

static double num(const cJSON *o, const char *key, bool *ok)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v)) {
        *ok = false;
        return 0;
    }
    return v->valuedouble;
}

/* Within `rel` of the truth; a truth of 0 must be exactly 0. */
static void near_truth(const char *ctx, const char *what, int64_t got, double truth, double rel)
{
    char where[256];
    snprintf(where, sizeof where, "%s %s", ctx, what);
    if (truth == 0)
        CHECK_EQ_INT_IN(where, got, 0);
    else
        CHECK_NEAR_IN(where, (double)got / truth, 1.0, rel);
}

static void check_truth_file(const char *name)
{
    cJSON *truth = check_truth_load(name);
    check_cats x;
    if (!truth || check_cats_open(&x, name)) {
        cJSON_Delete(truth);
        return;
    }
    const cJSON *instants = cJSON_GetObjectItemCaseSensitive(truth, "instants");
    CHECK_TRUE_IN(name, cJSON_GetArraySize(instants) >= 6);
    bool inference = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(truth, "inference")) ||
                     !strcmp(name, "cat_infer");
    /* mode='reduce-overhead': once the CUDA graphs are recorded, an iteration replays
     * them and makes no allocation at all (the script measured a forward growth of 0).
     * What a replay writes, gradients included, lives in the graph's private pool and is
     * in no allocation of the trace: categories must not invent it (gradient 0 there),
     * and parameters and optimizer state (made outside the graphs) are still exact. */
    const char *mode =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(truth, "compile_mode"));
    bool graphs = mode && !strcmp(mode, "reduce-overhead");
    int replay_from = INT32_MAX;
    const cJSON *in;
    cJSON_ArrayForEach(in, instants)
    {
        bool has = true;
        const char *label = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "label"));
        int iteration = (int)num(in, "iteration", &has);
        double growth = num(in, "forward_growth_bytes", &has);
        if (graphs && has && label && !strcmp(label, "after_forward") && growth == 0 &&
            iteration < replay_from)
            replay_from = iteration;
    }
    ms_category_phases ph;
    ms_categories_phases(&ph, x.c);
    CHECK_TRUE_IN(name, ph.cuda_graph_pools == graphs);
    CHECK_TRUE_IN(name, !ph.no_stacks);
    if (graphs)
        CHECK_TRUE_IN(name, replay_from == 2);
    int64_t before_ws = -1, before_params = 0;
    cJSON_ArrayForEach(in, instants)
    {
        bool ok = true;
        const char *label = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "label"));
        int iteration = (int)num(in, "iteration", &ok);
        bool mb_ok = true;
        int micro = (int)num(in, "micro_batch", &mb_ok);
        int64_t time_us = (int64_t)num(in, "time_us", &ok);
        double requested = num(in, "requested_bytes", &ok);
        double params = num(in, "parameter_bytes", &ok);
        double grads = num(in, "gradient_bytes", &ok);
        double state = num(in, "optimizer_state_bytes", &ok);
        char ctx[160];
        snprintf(ctx, sizeof ctx, "%s %s it %d mb %d", name, label ? label : "?", iteration,
                 mb_ok ? micro : 0);
        CHECK_TRUE_IN(ctx, ok && label);
        if (!ok || !label)
            continue;
        int64_t by[MS_CAT_COUNT];
        CHECK_EQ_INT_IN(ctx, ms_categories_at_time(by, x.c, time_us, NULL), 0);
        int64_t total = 0;
        for (int k = 0; k < MS_CAT_COUNT; k++) {
            CHECK_TRUE_IN(ctx, by[k] >= 0);
            total += by[k];
        }
        /* The instants sit in quiet gaps, so the trace's live bytes there are the
         * allocator's counter exactly. */
        CHECK_EQ_INT_IN(ctx, total, (int64_t)requested);
        near_truth(ctx, "parameter", by[MS_CAT_PARAMETER], params, 0.01);
        /* A buffer a compiled backward reuses for a .grad is one allocation with one
         * category (every view draws it so): gradient, from the forward that made it.
         * Where no .grad exists yet (after the forward), exactly those buffers are
         * counted early, and the activations miss them. */
        int64_t e = ms_categories_event_at_time(x.c, time_us), early = 0;
        for (size_t i = 0; grads == 0 && i < x.t->n_allocs; i++) {
            const ms_alloc *a = &x.t->allocs[i];
            if (ms_categories_reason(x.c, i) == MS_CATR_BACKWARD_REUSED && a->alloc_event <= e &&
                (a->free_event < 0 || a->free_event > e))
                early += (int64_t)a->size;
        }
        CHECK_TRUE_IN(ctx, early <= 524288);
        bool replay = iteration >= replay_from;
        if (replay)
            CHECK_EQ_INT_IN(ctx, by[MS_CAT_GRADIENT], 0);
        else
            near_truth(ctx, "gradient", by[MS_CAT_GRADIENT] - early, grads, 0.01);
        near_truth(ctx, "optimizer_state", by[MS_CAT_OPTIMIZER_STATE], state, 0.01);
        if (inference) {
            CHECK_EQ_INT_IN(ctx, by[MS_CAT_GRADIENT], 0);
            CHECK_EQ_INT_IN(ctx, by[MS_CAT_OPTIMIZER_STATE], 0);
        }
        if (!strcmp(label, "before_forward")) {
            before_ws = by[MS_CAT_WORKSPACE];
            before_params = (int64_t)params;
            bool has_input = true;
            double input = num(in, "input_bytes", &has_input);
            /* A replay has no forward phase (its forward allocates nothing) to say
             * what the batch is for. */
            if (has_input && !replay)
                near_truth(ctx, "input before forward", by[MS_CAT_INPUT], input, 0.01);
        }
        if (!strcmp(label, "after_forward")) {
            bool has = true;
            double growth = num(in, "forward_growth_bytes", &has);
            double input = num(in, "input_bytes", &has);
            CHECK_TRUE_IN(ctx, has && before_ws >= 0);
            /* The first forward also creates the cuBLAS/cuBLASLt workspaces (C++ frames
             * setWorkspaceForHandle, or the never-freed pattern): part of the growth, but
             * not activations; they are told apart and counted as workspace. */
            int64_t new_ws = before_ws >= 0 ? by[MS_CAT_WORKSPACE] - before_ws : 0;
            CHECK_TRUE_IN(ctx, new_ws == 0 || iteration == 0);
            CHECK_TRUE_IN(ctx, new_ws <= 40 * 1024 * 1024);
            /* Parameters a forward made (lazy modules, meta materialisation) are part
             * of what the script saw it add, and are not activations. */
            growth -= params - (double)before_params;
            if (replay)
                continue;
            near_truth(ctx, "activation+input after forward",
                       by[MS_CAT_ACTIVATION] + by[MS_CAT_INPUT] + new_ws + early, growth + input,
                       0.05);
            if (iteration > 0)
                near_truth(ctx, "activation+input after forward (no workspace made)",
                           by[MS_CAT_ACTIVATION] + by[MS_CAT_INPUT] + early, growth + input, 0.05);
        }
    }
    if (inference) {
        for (size_t i = 0; i < x.t->n_allocs; i++) {
            ms_category k = ms_categories_of(x.c, i);
            CHECK_TRUE_IN(name, k != MS_CAT_GRADIENT && k != MS_CAT_OPTIMIZER_STATE);
        }
    }
    check_cats_close(&x);
    cJSON_Delete(truth);
}

/* No gradient or optimizer state where there is no backward or optimizer. */
static void check_inference(const char *name)
{
    check_cats x;
    if (check_cats_open(&x, name))
        return;
    size_t bad = 0, activations = 0;
    for (size_t i = 0; i < x.t->n_allocs; i++) {
        ms_category k = ms_categories_of(x.c, i);
        bad += k == MS_CAT_GRADIENT || k == MS_CAT_OPTIMIZER_STATE;
        activations += k == MS_CAT_ACTIVATION || k == MS_CAT_TEMPORARY;
    }
    CHECK_EQ_INT_IN(name, bad, 0);
    CHECK_TRUE_IN(name, activations > 0);
    ms_category_phases ph;
    ms_categories_phases(&ph, x.c);
    CHECK_EQ_INT_IN(name, ph.backward, 0);
    CHECK_EQ_INT_IN(name, ph.optimizer, 0);
    CHECK_TRUE_IN(name, ph.forward >= 2);
    check_cats_close(&x);
}

/* Bookkeeping on any snapshot: breakdowns sum to the live bytes, checkpoints and sweeps
 * agree, the summary's path (classifying only the lives alive at the peak) gives the
 * same peak breakdown as the full build. */
static void check_consistency(const char *path, const char *name, void *arg)
{
    (void)arg;
    check_cats x;
    if (check_cats_open(&x, path))
        return;
    ms_error err;
    int64_t by[MS_CAT_COUNT];
    /* Every event of small traces, a stride of big ones. */
    size_t step = x.t->n_events > 20000 ? x.t->n_events / 5000 : 1;
    for (size_t e = 0; e < x.t->n_events; e += step) {
        if (ms_categories_at_event(by, x.c, (int64_t)e, NULL)) {
            check_fail("%s: at_event %zu failed", name, e);
            break;
        }
        int64_t total = 0;
        for (int k = 0; k < MS_CAT_COUNT; k++)
            total += by[k];
        if (total != x.t->active[e]) {
            CHECK_EQ_INT_IN(name, total, x.t->active[e]);
            break;
        }
    }
    check_count++;
    CHECK_EQ_INT_IN(name, ms_categories_at_event(by, x.c, -1, NULL), 0);
    int64_t start = 0;
    for (int k = 0; k < MS_CAT_COUNT; k++)
        start += by[k];
    CHECK_EQ_INT_IN(name, start, x.t->active_start);
    CHECK_TRUE_IN(name, ms_categories_at_event(by, x.c, (int64_t)x.t->n_events, NULL) != 0);
    CHECK_TRUE_IN(name, ms_categories_at_event(by, x.c, -2, NULL) != 0);
    /* A failure says why in the caller's ms_error, as every fallible function does. */
    ms_error aerr;
    ms_error_clear(&aerr);
    CHECK_EQ_INT_IN(name, ms_categories_at_event(by, x.c, -2, &aerr), MS_ERR_ARG);
    CHECK_EQ_INT_IN(name, aerr.code, MS_ERR_ARG);
    CHECK_EQ_STR_IN(name, aerr.message, "no event -2 in this trace");

    const ms_category_point *pk = ms_categories_peak(x.c);
    CHECK_EQ_INT_IN(name, pk->bytes, x.t->peak_bytes);
    CHECK_EQ_INT_IN(name, pk->event, x.t->peak_event);

    /* The summary's path. */
    ms_timeline *tp = NULL;
    if (ms_timeline_build(&tp, x.s, x.device, MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE,
                          &err) == 0) {
        int64_t sum[MS_CAT_COUNT];
        if (ms_categories_sum(sum, x.s, tp, ms_categories_iterations(x.c), tp->peak_alive,
                              tp->n_peak_alive, &err) == 0) {
            for (int k = 0; k < MS_CAT_COUNT; k++) {
                char ctx[128];
                snprintf(ctx, sizeof ctx, "%s summary path %s", name,
                         ms_category_name((ms_category)k));
                CHECK_EQ_INT_IN(ctx, sum[k], pk->by[k]);
            }
        } else {
            check_fail("%s: categories_sum: %s", name, err.message);
        }
        ms_timeline_free(tp);
    }

    /* Iteration ends and peaks agree with the iteration finder's own figures. */
    const ms_iterations *it = ms_categories_iterations(x.c);
    for (size_t k = 0; it && k < it->n; k++) {
        CHECK_EQ_INT_IN(name, ms_categories_iteration_end(x.c, k)->bytes,
                        it->items[k].live_end_bytes);
        CHECK_EQ_INT_IN(name, ms_categories_iteration_peak(x.c, k)->bytes, it->items[k].peak_bytes);
        ms_category_formula f;
        CHECK_EQ_INT_IN(name, ms_categories_formula(&f, x.c, k, NULL), 0);
        CHECK_EQ_INT_IN(name, f.measured_peak, it->items[k].peak_bytes);
        CHECK_TRUE_IN(name, f.estimate >= f.parameter + f.optimizer_state);
    }
    CHECK_TRUE_IN(name, ms_categories_iteration_end(x.c, it ? it->n : 0) == NULL);
    /* Explanations exist for everything and never overflow; as every text writer, the
     * result is the whole text's length, and a cut one is its start. */
    char small[24], buf[512];
    for (size_t i = 0; i < x.t->n_allocs && i < 2000; i++) {
        size_t need = ms_categories_explain(x.c, i, small, sizeof small);
        CHECK_TRUE_IN(name, strlen(small) < sizeof small);
        CHECK_EQ_INT_IN(name, ms_categories_explain(x.c, i, buf, sizeof buf), need);
        CHECK_EQ_INT_IN(name, strlen(buf), need);
        CHECK_TRUE_IN(name, strlen(buf) > 10);
        CHECK_TRUE_IN(name, strncmp(buf, small, strlen(small)) == 0);
        CHECK_EQ_INT_IN(name, ms_categories_explain(x.c, i, NULL, 0), need);
    }
    check_cats_close(&x);
}

typedef struct sweep_ctx {
    const ms_categories *c;
    int64_t next;
    bool ok;
} sweep_ctx;

static void sweep_fn(void *ctx, int64_t event, const int64_t bytes[MS_CAT_COUNT])
{
    sweep_ctx *x = ctx;
    int64_t by[MS_CAT_COUNT];
    if (event != x->next++ || ms_categories_at_event(by, x->c, event, NULL) ||
        memcmp(by, bytes, sizeof by))
        x->ok = false;
}

static void check_api(void)
{
    CHECK_EQ_STR(ms_category_name(MS_CAT_OPTIMIZER_STATE), "optimizer_state");
    CHECK_EQ_STR(ms_category_name(MS_CAT_COUNT), "unknown");
    CHECK_EQ_STR(ms_category_reason_name(MS_CATR_BACKWARD_KEPT), "backward-kept");
    CHECK_EQ_STR(ms_category_reason_name(MS_CATR_MIRRORED_PARAMETER), "mirrored-parameter");
    CHECK_TRUE(ms_category_reason_weak(MS_CATR_MIRRORED_PARAMETER));
    CHECK_EQ_STR(ms_formula_form_name(MS_FORM_INFERENCE), "inference");
    CHECK_EQ_STR(ms_formula_form_name(MS_FORM_TRAINING), "training");
    CHECK_TRUE(ms_categories_identity(NULL, NULL, NULL) == MS_ERR_ARG);
    CHECK_TRUE(ms_category_reason_weak(MS_CATR_PRETRACE_KEPT));
    CHECK_TRUE(!ms_category_reason_weak(MS_CATR_BACKWARD_KEPT));
    ms_categories_free(NULL);
    ms_snapshot *s = NULL;
    ms_timeline *t = NULL;
    int device = 0;
    if (check_open_timeline("testdata/cat_adamw.pickle", &s, &device, &t))
        return;
    ms_error err;
    ms_categories *c = NULL;
    CHECK_TRUE(ms_categories_build(&c, s, 5, NULL, NULL, &err) == MS_ERR_ARG);
    CHECK_TRUE(c == NULL);
    ms_timeline *noallocs = NULL;
    if (ms_timeline_build(&noallocs, s, device, MS_TIMELINE_ACTIVE, &err) == 0) {
        CHECK_TRUE(ms_categories_build(&c, s, device, noallocs, NULL, &err) == MS_ERR_ARG);
        ms_timeline_free(noallocs);
    }
    /* NULL timeline and iterations: built inside, same answer as with the caller's. */
    ms_categories *own = NULL, *given = NULL;
    CHECK_EQ_INT(ms_categories_build(&own, s, device, NULL, NULL, &err), 0);
    CHECK_EQ_INT(ms_categories_build(&given, s, device, t, NULL, &err), 0);
    if (own && given) {
        CHECK_EQ_INT(ms_categories_timeline(own)->n_allocs, t->n_allocs);
        for (size_t i = 0; i < t->n_allocs; i++)
            if (ms_categories_of(own, i) != ms_categories_of(given, i)) {
                CHECK_EQ_INT(ms_categories_of(own, i), ms_categories_of(given, i));
                break;
            }
        sweep_ctx x = {given, 10, true};
        CHECK_EQ_INT(
            ms_categories_sweep(given, 10, (int64_t)t->n_events - 1, sweep_fn, &x, NULL), 0);
        CHECK_TRUE(x.ok && x.next == (int64_t)t->n_events);
        CHECK_TRUE(ms_categories_sweep(given, 5, 4, sweep_fn, &x, NULL) != 0);
        ms_category_phases ph;
        ms_categories_phases(&ph, given);
        CHECK_EQ_INT(ph.forward, 3);
        CHECK_EQ_INT(ph.backward, 3);
        CHECK_EQ_INT(ph.optimizer, 3);
        CHECK_TRUE(ph.from_engine_frames);
        /* Times before the trace give the start, after it the end. */
        int64_t by[MS_CAT_COUNT], total = 0;
        CHECK_EQ_INT(ms_categories_event_at_time(given, t->t_first_us - 1), -1);
        CHECK_EQ_INT(ms_categories_at_time(by, given, INT64_MAX, NULL), 0);
        for (int k = 0; k < MS_CAT_COUNT; k++)
            total += by[k];
        CHECK_EQ_INT(total, t->live_end_bytes);
        CHECK_EQ_INT(ms_categories_of(given, t->n_allocs), MS_CAT_OTHER);
        char buf[8] = "x";
        CHECK_EQ_INT(ms_categories_explain(given, t->n_allocs, buf, sizeof buf), 0);
        CHECK_EQ_STR(buf, "");
    }
    ms_categories_free(own);
    ms_categories_free(given);
    ms_timeline_free(t);
    ms_snapshot_free(s);
}

/* stacks='python': the autograd thread's allocations have no frames; backward still
 * found, its cuBLAS workspace not taken for a kept gradient. */
static void check_python_stacks(void)
{
    check_cats x;
    if (check_cats_open(&x, "cat_sgd_frozen"))
        return;
    ms_category_phases ph;
    ms_categories_phases(&ph, x.c);
    CHECK_TRUE(ph.from_empty_stacks);
    CHECK_TRUE(!ph.from_engine_frames);
    CHECK_EQ_INT(ph.backward, 3);
    size_t pattern = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < x.t->n_allocs; i++)
        if (ms_categories_reason(x.c, i) == MS_CATR_WORKSPACE_PATTERN) {
            pattern++;
            bytes += x.t->allocs[i].size;
        }
    /* The main thread's cuBLAS (32 MiB) and cuBLASLt (1 MiB) workspaces at the first
     * forward matmul, the autograd thread's cuBLAS workspace at the first backward. */
    CHECK_EQ_INT(pattern, 3);
    CHECK_EQ_INT(bytes, 2 * 33554432 + 1048576);
    check_cats_close(&x);
}

/* The phases found with the trace tagged by two threads (each half, the run across the
 * middle joined) equal the one-thread result, segment for segment; testdata traces are
 * below the size that starts a second thread, so the threshold is lowered here. */
static void two_threads_device(const char *name, const ms_snapshot *s, int d,
                               const ms_timeline *t, const ms_iterations *it)
{
    (void)d;
    ms_error err;
    ms__cat_ctx one, two;
    size_t saved = ms__cat_parallel_min;
    ms_annotation_range *ar = NULL;
    size_t nar = 0;
    CHECK_EQ_INT_IN(name, ms_annotation_ranges(&ar, &nar, s, t->device, &err), 0);
    ms__ann ann = {ar, nar};
    ms__cat_parallel_min = SIZE_MAX;
    int r1 = ms__cat_ctx_build(&one, s, t, it, &ann, &err);
    ms__cat_parallel_min = 1;
    int r2 = ms__cat_ctx_build(&two, s, t, it, &ann, &err);
    ms__cat_parallel_min = saved;
    CHECK_EQ_INT_IN(name, r1, 0);
    CHECK_EQ_INT_IN(name, r2, 0);
    if (r1 == 0 && r2 == 0) {
        CHECK_EQ_INT_IN(name, (int64_t)two.nsegs, (int64_t)one.nsegs);
        bool same = one.nsegs == two.nsegs;
        for (size_t k = 0; same && k < one.nsegs; k++) {
            const ms__cat_seg *a = &one.segs[k], *b = &two.segs[k];
            same = a->start == b->start && a->end == b->end && a->last_alloc == b->last_alloc &&
                   a->close == b->close && a->ordinal == b->ordinal && a->kind == b->kind &&
                   a->src == b->src;
        }
        same = same && memcmp(one.counts, two.counts, sizeof one.counts) == 0 &&
                    one.have_phases == two.have_phases && one.src_all == two.src_all &&
                    one.last_phase_start == two.last_phase_start;
        CHECK_TRUE_IN(name, same);
    }
    if (r1 == 0)
        ms__cat_ctx_free(&one);
    if (r2 == 0)
        ms__cat_ctx_free(&two);
    free(ar);
}

static void check_two_threads(const char *path, const char *name, void *arg)
{
    (void)arg;
    check_each_device(path, name, two_threads_device);
}

/* Bytes of the allocations given reason `r`. */
static int64_t reason_bytes(const ms_categories *c, const ms_timeline *t, ms_category_reason r,
                            size_t *count)
{
    int64_t b = 0;
    *count = 0;
    for (size_t i = 0; i < t->n_allocs; i++)
        if (ms_categories_reason(c, i) == r) {
            b += (int64_t)t->allocs[i].size;
            (*count)++;
        }
    return b;
}

/* The evidence behind the rules: which allocations the refinements took, by the
 * truth's numbers. */
static void check_refined(const char *name, ms_category_reason r, int64_t want_bytes,
                          size_t want_count)
{
    check_cats x;
    if (check_cats_open(&x, name))
        return;
    size_t n = 0;
    int64_t b = reason_bytes(x.c, x.t, r, &n);
    CHECK_EQ_INT_IN(name, b, want_bytes);
    CHECK_EQ_INT_IN(name, n, want_count);
    CHECK_TRUE_IN(name, ms_category_reason_weak(r));
    check_cats_close(&x);
}

/* context None / 'state': no stacks, and only the optimizer's annotations. What was made
 * before the loop began and stays is the model (parameters exact); optimizer state comes
 * from the annotated steps (exact); the forward and backward passes, which nothing marks,
 * are 'other' with reason no-stacks: no gradient, activation or temporary invented. */
static void check_no_stacks(const char *name)
{
    cJSON *truth = check_truth_load(name);
    check_cats x;
    if (!truth || check_cats_open(&x, name)) {
        cJSON_Delete(truth);
        return;
    }
    ms_category_phases ph;
    ms_categories_phases(&ph, x.c);
    CHECK_TRUE_IN(name, ph.no_stacks);
    CHECK_EQ_INT_IN(name, ph.forward + ph.backward, 0);
    CHECK_EQ_INT_IN(name, ph.optimizer, 3);
    size_t n = 0;
    CHECK_TRUE_IN(name, reason_bytes(x.c, x.t, MS_CATR_NO_STACKS, &n) > 0 && n > 100);
    const cJSON *in;
    int instants = 0;
    cJSON_ArrayForEach(in, cJSON_GetObjectItemCaseSensitive(truth, "instants"))
    {
        bool ok = true;
        const char *label = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "label"));
        int64_t time_us = (int64_t)num(in, "time_us", &ok);
        double params = num(in, "parameter_bytes", &ok);
        double state = num(in, "optimizer_state_bytes", &ok);
        char ctx[160];
        snprintf(ctx, sizeof ctx, "%s %s it %d", name, label ? label : "?",
                 (int)num(in, "iteration", &ok));
        CHECK_TRUE_IN(ctx, ok);
        int64_t by[MS_CAT_COUNT];
        CHECK_EQ_INT_IN(ctx, ms_categories_at_time(by, x.c, time_us, NULL), 0);
        near_truth(ctx, "parameter", by[MS_CAT_PARAMETER], params, 0.01);
        near_truth(ctx, "optimizer_state", by[MS_CAT_OPTIMIZER_STATE], state, 0.01);
        CHECK_EQ_INT_IN(ctx, by[MS_CAT_GRADIENT], 0);
        CHECK_EQ_INT_IN(ctx, by[MS_CAT_ACTIVATION], 0);
        /* After the first step, the passes are 'other', not temporaries of a step. */
        if (label && !strcmp(label, "after_forward") && (int)num(in, "iteration", &ok) > 0)
            CHECK_EQ_INT_IN(ctx, by[MS_CAT_TEMPORARY], 0);
        instants++;
    }
    CHECK_EQ_INT_IN(name, instants, 15);
    check_cats_close(&x);
    cJSON_Delete(truth);
}

/* An inference loop with a preallocated KV cache: the cache (never freed, no gradient)
 * is not a parameter; the parameters are the truth's. */
static void check_kv_cache(void)
{
    const char *name = "noleak_kv_cache";
    cJSON *truth = check_truth_load(name);
    check_cats x;
    if (!truth || check_cats_open(&x, "noleak_kv_cache")) {
        cJSON_Delete(truth);
        return;
    }
    bool ok = true;
    double params = num(truth, "parameter_bytes", &ok);
    double kv = num(truth, "kv_cache_bytes", &ok);
    CHECK_TRUE_IN(name, ok && kv == 16777216);
    int64_t by[MS_CAT_COUNT];
    CHECK_EQ_INT_IN(name, ms_categories_at_event(by, x.c, (int64_t)x.t->n_events - 1, NULL), 0);
    near_truth(name, "parameter at end", by[MS_CAT_PARAMETER], params, 0.01);
    size_t n = 0;
    CHECK_EQ_INT_IN(name, reason_bytes(x.c, x.t, MS_CATR_LATE_PARAMETER, &n), 0);
    check_cats_close(&x);
    cJSON_Delete(truth);
}

/* The optimizer identity against the truth: k, the optimizer's name, and which side is
 * off where it fails. `want_off` MS_CAT_COUNT: it holds. */
static void check_identity(const char *name, int k, const char *optimizer, ms_category want_off,
                           int64_t want_off_by)
{
    check_cats x;
    if (check_cats_open(&x, name))
        return;
    ms_error err;
    ms_category_identity id;
    if (ms_categories_identity(&id, x.c, &err) == 0) {
        CHECK_TRUE_IN(name, id.checked);
        CHECK_EQ_INT_IN(name, id.states_per_parameter, k);
        CHECK_EQ_STR_IN(name, id.optimizer, optimizer);
        CHECK_EQ_INT_IN(name, id.holds, want_off == MS_CAT_COUNT);
        CHECK_EQ_INT_IN(name, id.off, want_off);
        CHECK_EQ_INT_IN(name, id.off_by, want_off_by);
        CHECK_TRUE_IN(name, id.trainable_parameter <= id.parameter && id.event >= 0);
        if (want_off == MS_CAT_COUNT)
            CHECK_EQ_INT_IN(name, id.expected_optimizer_state,
                            (int64_t)k * id.trainable_parameter);
    } else {
        check_fail("%s: %s", name, err.message);
    }
    check_cats_close(&x);
}

/* Inference runs: their own formula, no identity. */
static void check_inference_form(const char *name)
{
    check_cats x;
    if (check_cats_open(&x, name))
        return;
    const ms_iterations *it = ms_categories_iterations(x.c);
    CHECK_TRUE_IN(name, it->n >= 3);
    for (size_t k = 0; k < it->n; k++) {
        ms_category_formula f;
        CHECK_EQ_INT_IN(name, ms_categories_formula(&f, x.c, k, NULL), 0);
        CHECK_EQ_INT_IN(name, f.form, MS_FORM_INFERENCE);
        CHECK_EQ_INT_IN(name, f.estimate, f.parameter + f.input + f.activation_temporary);
        CHECK_EQ_INT_IN(name, f.gradient + f.optimizer_state + f.optimizer_temporary, 0);
        CHECK_TRUE_IN(name, f.activation_temporary > 0 && f.parameter > 0);
    }
    ms_category_identity id;
    CHECK_EQ_INT_IN(name, ms_categories_identity(&id, x.c, NULL), 0);
    CHECK_TRUE_IN(name, !id.checked && !id.holds);
    check_cats_close(&x);
}

int main(void)
{
    for (size_t i = 0; i < sizeof CAT_FILES / sizeof CAT_FILES[0]; i++)
        check_truth_file(CAT_FILES[i]);
    check_no_stacks("ctx_state");
    check_no_stacks("ctx_none");
    check_kv_cache();
    /* compile_default: wpe's .grad (1024 x 128 fp32) in each of the 4 iterations. */
    check_refined("compile_default", MS_CATR_BACKWARD_REUSED, 4 * 524288, 4);
    /* LazyLinear 1024 -> 4 x 2048 -> 1024: every weight and bias, once. */
    check_refined("lazy_params", MS_CATR_LATE_PARAMETER, 67145728, 10);
    /* nn.Linear(1024, 1024) added at step 2: weight and bias. */
    check_refined("late_layer", MS_CATR_LATE_PARAMETER, 4198400, 2);
    /* LazyLinear 1024 -> 4 x 2048 -> 1024 materialised by a no_grad forward before the
     * loop: every weight and bias, once, by the step's mirror. */
    check_refined("v3_lazy_adamw", MS_CATR_MIRRORED_PARAMETER, 67145728, 10);
    check_refined("v3_lazy_sgd", MS_CATR_MIRRORED_PARAMETER, 67145728, 10);
    check_identity("v3_lazy_adamw", 2, "AdamW", MS_CAT_COUNT, 0);
    check_identity("v3_lazy_sgd", 1, "SGD", MS_CAT_COUNT, 0);
    check_identity("cat_sgd_frozen", 1, "SGD", MS_CAT_COUNT, 0);
    check_identity("lazy_params", 2, "AdamW", MS_CAT_COUNT, 0);
    /* The backward hook keeps 24 slices of 256 KiB, made in backward: gradients over. */
    check_identity("leak_backward_hook", 2, "AdamW", MS_CAT_GRADIENT, 24 * 262144);
    check_inference_form("cat_infer");
    check_inference_form("shape_infer_loop");
    check_inference("cat_infer");
    check_inference("linear_infer");
    check_inference("leak_nograd_infer");
    check_api();
    check_python_stacks();
    CHECK_TRUE(check_each_snapshot(check_consistency, NULL) >= 20);
    CHECK_TRUE(check_each_snapshot(check_two_threads, NULL) >= 20);
    return check_finish("test_categories");
}
