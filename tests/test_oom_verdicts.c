/* Issue 35's OOM traps, recorded on a GPU (tests/gen/scenarios_verdicts3.py), against
 * what the script measured:
 * - v3_oom_bystander: 524 MiB free in 5 pieces (largest 124 MiB), a 900 MiB bystander, a
 *   300 MiB request under a 2 GiB limit. The cause is fragmentation, with the
 *   counterfactual as evidence; the bystander is no cause and gets no advice to shrink it.
 * - v3_oom_deep_growing: 24 blocks, the second forward at a 4x larger input fails after
 *   12 of them. How far the step got, how much larger it is, and whether each remedy fits
 *   under the 2 GiB limit; summary lists the failing iteration as oom does. */
#include "check.h"
#include "analysis/oom_internal.h"
#include "memsnap/oom.h"
#include "memsnap/run.h"

/* `memsnap ARGS testdata/NAME.pickle` (MEMSNAP_BIN, which ctest sets), which must exit 0:
 * its output, to free(). */
static char *cli_out(const char *args, const char *name)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' %s testdata/%s.pickle", getenv("MEMSNAP_BIN"), args, name);
    int st = 0;
    char *out = check_run(cmd, &st);
    CHECK_EQ_INT_IN(name, st, 0);
    return out;
}

static const char *bytes(double v, char *buf)
{
    ms_format_bytes((int64_t)v, buf, 32);
    return buf;
}

/* The one OOM of testdata/NAME.pickle as the run (what every view reads) explains it. */
typedef struct opened {
    ms_snapshot *s;
    ms_run *run;
    const ms_oom *o;
    const ms_iterations *it;
    cJSON *truth;
    const cJSON *t_oom; /* the truth's "oom" */
} opened;

static int open_oom(opened *x, const char *name)
{
    memset(x, 0, sizeof *x);
    char path[256];
    snprintf(path, sizeof path, "testdata/%s.pickle", name);
    ms_error err;
    x->truth = check_truth_load(name);
    if (!x->truth || ms_snapshot_read_file(&x->s, path, NULL, &err)) {
        check_fail("%s: cannot read", path);
        return -1;
    }
    const ms_oom_report *r = NULL;
    if (ms_run_open(&x->run, x->s, ms_snapshot_busiest_device(x->s), NULL, &err) ||
        ms_run_ooms(&r, x->run, &err) || ms_run_iterations(&x->it, x->run, &err)) {
        check_fail("%s: %s", path, err.message);
        return -1;
    }
    CHECK_EQ_INT_IN(name, r->n, 1);
    if (r->n != 1)
        return -1;
    x->o = &r->items[0];
    /* Every recording names its cause. */
    x->t_oom = cJSON_GetObjectItemCaseSensitive(x->truth, "oom");
    CHECK_EQ_STR_IN(name, ms_oom_cause_name(x->o->cause),
                    cJSON_GetStringValue(
                        cJSON_GetObjectItemCaseSensitive(x->t_oom, "expected_cause")));
    return 0;
}

static void close_oom(opened *x)
{
    ms_run_free(x->run);
    ms_snapshot_free(x->s);
    cJSON_Delete(x->truth);
}

/* Calls fn with the one OOM of testdata/NAME.pickle, opened (open_oom), then closes it. */
static void with_oom(const char *name, void (*fn)(const char *ctx, const opened *x))
{
    opened x;
    if (open_oom(&x, name) == 0)
        fn(name, &x);
    close_oom(&x);
}

/* The limit the script set (the observer's device_allocated: "2.00 GiB allowed"). */
static void check_limit(const char *ctx, const ms_oom *o, const cJSON *t_oom)
{
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(t_oom, "observer_args");
    CHECK_TRUE_IN(ctx, o->limit_refused);
    CHECK_TRUE_IN(ctx, !o->limit_is_device);
    CHECK_EQ_INT_IN(ctx, o->limit_bytes, check_truth_num(args, "device_allocated"));
}

static bool any_advice(const ms_oom *o, const char *needle)
{
    for (size_t i = 0; i < o->n_advice; i++)
        if (strstr(o->advice[i], needle))
            return true;
    return false;
}

static void bystander_verdict(const char *ctx, const opened *x)
{
    const ms_oom *o = x->o;
    const cJSON *t_oom = x->t_oom;
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(t_oom, "at_oom");
    /* No iteration before it: the request alone is weighed. */
    CHECK_EQ_INT_IN(ctx, o->basis, MS_OOM_BASIS_SHARE_OF_LIVE);
    char a[32], b[32], want[200];
    snprintf(want, sizeof want, "joined, the %s of free pieces would serve the %s request",
             bytes(check_truth_num(at, "inactive_blocks_bytes"), a),
             bytes(check_truth_num(t_oom, "request_bytes"), b));
    CHECK_EQ_STR_IN(ctx, o->evidence, want);
    CHECK_EQ_STR_IN(ctx, o->evidence,
                    "joined, the 524.00 MiB of free pieces would serve the 300.00 MiB request");
    CHECK_EQ_INT_IN(ctx, o->usable_free_blocks, check_truth_num(at, "inactive_blocks_count"));
    CHECK_EQ_INT_IN(ctx, o->largest_usable_block,
                    check_truth_num(at, "largest_inactive_block_bytes"));
    /* The bystander is the largest allocation alive, and no advice blames it. */
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(x->truth, "bystander");
    CHECK_EQ_INT_IN(ctx, o->largest_alive_bytes, check_truth_num(by, "bytes"));
    CHECK_TRUE_IN(ctx, !any_advice(o, "split or shrink"));
    check_limit(ctx, o, t_oom);
    /* Joined, the pieces hold the request: 1.37 GiB + 300 MiB fits under 2 GiB. */
    CHECK_TRUE_IN(ctx, strstr(o->advice[0], "expandable_segments:True") != NULL);
    CHECK_TRUE_IN(ctx, strstr(o->advice[0], "fits under the 2.00 GiB limit") != NULL);
}

static void bystander(void)
{
    const char *ctx = "v3_oom_bystander";
    with_oom(ctx, bystander_verdict);
    if (!getenv("MEMSNAP_BIN"))
        return;
    char *out = cli_out("oom", ctx);
    CHECK_TRUE_IN(ctx, out && strstr(out, "cause fragmentation\n"));
    CHECK_TRUE_IN(ctx, out && strstr(out, "evidence          joined, the 524.00 MiB of free pieces "
                                          "would serve the 300.00 MiB request\n"));
    free(out);
    out = cli_out("oom --json", ctx);
    cJSON *j = out ? cJSON_Parse(out) : NULL;
    const cJSON *e = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "files"), 0), "ooms"),
        0);
    CHECK_EQ_STR_IN(ctx, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "evidence")),
                    "joined, the 524.00 MiB of free pieces would serve the 300.00 MiB request");
    CHECK_EQ_STR_IN(ctx, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "cause_basis")),
                    "share_of_live");
    CHECK_EQ_INT_IN(ctx, cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "limit_bytes")),
                    2147483648.0);
    cJSON_Delete(j);
    free(out);
}

static void deep_growing_verdict(const char *ctx, const opened *x)
{
    const ms_oom *o = x->o;
    const cJSON *t_oom = x->t_oom;
    check_limit(ctx, o, t_oom);
    /* How far it got: 12 of 24 blocks (two layer calls a block; the head is one more
     * call in the previous step, hence within 3%). */
    double done = check_truth_num(t_oom, "blocks_completed_at_oom") /
                  check_truth_num(t_oom, "blocks_total");
    printf("  %s: %llu of %llu layer calls (%.3f, truth %.3f), ratio %.3f (truth %.3f)\n", ctx,
           (unsigned long long)o->act_layer_calls, (unsigned long long)o->prev_layer_calls,
           o->step_done, done, o->act_ratio, check_truth_num(t_oom, "activation_per_block_ratio"));
    CHECK_TRUE_IN(ctx, o->step_done > done - 0.03 && o->step_done < done + 0.03);
    CHECK_EQ_INT_IN(ctx, o->act_layer_calls, 2 * check_truth_num(t_oom, "blocks_completed_at_oom"));
    /* Per call, 3.85x the previous step's: within 5%. */
    double ratio = check_truth_num(t_oom, "activation_per_block_ratio");
    CHECK_TRUE_IN(ctx, o->act_ratio > ratio * 0.95 && o->act_ratio < ratio * 1.05);
    /* The whole forward at this size: the parameters, the input and every block's
     * activations as the script measured them in the failing step, completed to 24
     * blocks: the estimate within 10%, and over the limit. */
    const cJSON *fw = cJSON_GetObjectItemCaseSensitive(x->truth, "forwards");
    const cJSON *last = cJSON_GetArrayItem(fw, cJSON_GetArraySize(fw) - 1);
    const cJSON *per = cJSON_GetObjectItemCaseSensitive(last, "per_block_activation_bytes");
    double sum = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, per) sum += v->valuedouble;
    double forward = check_truth_num(x->truth, "parameter_bytes") +
                     check_truth_num(last, "input_bytes") +
                     sum / cJSON_GetArraySize(per) * check_truth_num(t_oom, "blocks_total");
    printf("  forward need %.0f MiB (truth about %.0f MiB), step %.0f MiB\n",
           (double)o->forward_need_bytes / 1048576, forward / 1048576,
           (double)o->step_need_bytes / 1048576);
    CHECK_TRUE_IN(ctx, (double)o->forward_need_bytes > forward * 0.9 &&
                           (double)o->forward_need_bytes < forward * 1.1);
    CHECK_TRUE_IN(ctx, o->step_need_bytes >= o->forward_need_bytes);
    CHECK_TRUE_IN(ctx, (uint64_t)o->step_need_bytes > o->limit_bytes);
    /* Every remedy says whether it fits: checkpointing the whole forward does, half
     * the batch does not (its activations alone are 1.69 GiB), a quarter does. */
    CHECK_TRUE_IN(ctx, strstr(o->advice[0], "activation checkpointing") != NULL);
    CHECK_TRUE_IN(ctx, strstr(o->advice[0], "at the peak, fits under the 2.00 GiB limit") != NULL);
    CHECK_TRUE_IN(ctx,
                  strstr(o->advice[0], "half the micro-batch / sequence length: about") != NULL);
    CHECK_TRUE_IN(ctx, strstr(o->advice[0],
                              "does not fit under the 2.00 GiB limit; 1/4 of it") != NULL);
    /* The run's iterations end with the failing one, as oom lists it. */
    CHECK_EQ_INT_IN(ctx, x->it->n_unfinished, 1);
    CHECK_EQ_INT_IN(ctx, x->it->n + x->it->n_unfinished,
                    check_truth_num(t_oom, "failing_step") + 1);
    CHECK_EQ_INT_IN(ctx, o->iters[o->n_iters - 1].index + 1, x->it->n + x->it->n_unfinished);
}

static void deep_growing(void)
{
    const char *ctx = "v3_oom_deep_growing";
    with_oom(ctx, deep_growing_verdict);
    /* summary shows it too, last and marked. */
    if (!getenv("MEMSNAP_BIN"))
        return;
    char *out = cli_out("summary", ctx);
    CHECK_TRUE_IN(ctx, out && strstr(out, "iterations: 1 complete and the unfinished one the failure ended"));
    const char *row = out ? strstr(out, "\n       2 ") : NULL;
    CHECK_TRUE_IN(ctx, row && strstr(row, "unfinished: the failure (peak so far)"));
    free(out);
    /* oom's text says how far the step got and how much larger it is. */
    out = cli_out("oom", ctx);
    CHECK_TRUE_IN(ctx, out && strstr(out, "step so far       24 of the previous step's 49 layer "
                                          "calls (49%); 72.00 MiB per call, 4.0x the previous "
                                          "18.00 MiB: the input grew"));
    CHECK_TRUE_IN(ctx, out && strstr(out, "whole step needs  about ") &&
                           strstr(out, "the limit is about 2.00 GiB"));
    free(out);
}

/* The advice's wording on constructed numbers: an inference run gets no checkpointing,
 * and a measured training step weighs each remedy against the limit. */
static void advice_forms(void)
{
    const int64_t MiB = 1 << 20;
    ms_oom o;
    memset(&o, 0, sizeof o);
    o.limit_bytes = 2048 * MiB;
    o.allocated_bytes = o.reserved_bytes = 1900 * MiB;
    o.act_layer_calls = 24, o.act_layer_bytes = 24 * 72 * MiB;
    o.prev_layer_calls = 48;
    o.step_base_bytes = 250 * MiB;
    o.step_need_bytes = 250 * MiB + 48 * 72 * MiB + 200 * MiB;
    o.checkpoint_keep_bytes = 14 * 72 * MiB;
    o.checkpoint_save_bytes = 34 * 72 * MiB;
    /* The step's own 3656 MiB: checkpointing keeps 1208 MiB of it (1458 MiB with the
     * base), half the batch 250 + 1828 MiB, a quarter 250 + 914 MiB. */
    char buf[400];
    ms__oom_activation_advice(&o, 1728 * MiB, 90, buf, sizeof buf);
    CHECK_TRUE_IN(buf, strstr(buf, "in 7 segments: about 1.42 GiB at the peak, fits under the 2.00 GiB limit"));
    CHECK_TRUE_IN(buf, strstr(buf, "half the micro-batch / sequence length: about 2.03 GiB, does not fit"));
    CHECK_TRUE_IN(buf, strstr(buf, "1/4 of it: about 1.14 GiB, fits"));
    o.step_need_bytes += 1024 * MiB; /* checkpointing alone no longer fits */
    ms__oom_activation_advice(&o, 1728 * MiB, 90, buf, sizeof buf);
    CHECK_TRUE_IN(buf, strstr(buf, "does not fit under the 2.00 GiB limit: also halve the batch"));
    o.inference = true; /* half of 250 + 4680 MiB's own: 2590 MiB */
    ms__oom_activation_advice(&o, 1728 * MiB, 90, buf, sizeof buf);
    CHECK_TRUE_IN(buf, strstr(buf, "an inference run keeps none for a backward") &&
                           !strstr(buf, "checkpoint") && strstr(buf, "about 2.53 GiB, does not fit under"));
    o.limit_bytes = 0; /* unknown: no fit claimed */
    ms__oom_fit_clause(&o, 1, false, buf, sizeof buf);
    CHECK_EQ_STR(buf, "");
}

int main(void)
{
    advice_forms();
    bystander();
    deep_growing();
    return check_finish("test_oom_verdicts");
}
