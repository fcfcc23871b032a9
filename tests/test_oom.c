/* memsnap oom against OOMs recorded on a GPU (testdata/oom_*.pickle): the allocator state
 * rebuilt at the oom event equals what torch.cuda.memory_snapshot() showed inside the
 * OOM observer (truth `oom.at_oom`: every segment's blocks, free bytes, free blocks,
 * largest free block), the state before the failing call equals `before_request` where
 * the truth has it, and the cause is the scenario's. The cause rule is also checked on
 * constructed inputs, one per cause and at each boundary. */
#include "check.h"
#include "memsnap/oom.h"

static ms_block_state state_of(const char *text)
{
    if (!strcmp(text, "active_allocated"))
        return MS_BLOCK_ACTIVE_ALLOCATED;
    if (!strcmp(text, "active_pending_free"))
        return MS_BLOCK_ACTIVE_PENDING_FREE;
    if (!strcmp(text, "inactive"))
        return MS_BLOCK_INACTIVE;
    return MS_BLOCK_OTHER;
}

/* The allocator's counters against a measured state (the truth's memory_snapshot()). */
static void check_counters(const char *ctx, uint64_t allocated, uint64_t reserved,
                           uint64_t free_bytes, uint64_t free_blocks, uint64_t largest_free,
                           const cJSON *want)
{
    CHECK_EQ_INT_IN(ctx, allocated, check_truth_num(want, "allocated_bytes"));
    CHECK_EQ_INT_IN(ctx, reserved, check_truth_num(want, "reserved_bytes"));
    CHECK_EQ_INT_IN(ctx, free_bytes, check_truth_num(want, "inactive_blocks_bytes"));
    CHECK_EQ_INT_IN(ctx, free_blocks, check_truth_num(want, "inactive_blocks_count"));
    CHECK_EQ_INT_IN(ctx, largest_free, check_truth_num(want, "largest_inactive_block_bytes"));
}

/* A rebuilt state against a measured one: counters and every segment's blocks. */
static void check_state(const char *ctx, const ms_heap *h, const cJSON *want)
{
    check_counters(ctx, h->allocated_bytes, h->reserved_bytes, h->inactive_bytes,
                   h->inactive_count, h->largest_inactive, want);
    const cJSON *segs = cJSON_GetObjectItemCaseSensitive(want, "segments");
    CHECK_EQ_INT_IN(ctx, h->n_segments, cJSON_GetArraySize(segs));
    const cJSON *sg;
    size_t blocks_checked = 0;
    cJSON_ArrayForEach(sg, segs)
    {
        uint64_t addr = (uint64_t)check_truth_num(sg, "address");
        size_t k = 0;
        while (k < h->n_segments && h->segments[k].address != addr)
            k++;
        if (k == h->n_segments) {
            check_fail("%s: segment %#llx not rebuilt", ctx, (unsigned long long)addr);
            continue;
        }
        const ms_heap_segment *g = &h->segments[k];
        CHECK_EQ_INT_IN(ctx, g->total_size, check_truth_num(sg, "total_size"));
        CHECK_EQ_INT_IN(ctx, g->is_expandable,
                        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sg, "is_expandable")));
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sg, "segment_type"));
        if (type)
            CHECK_EQ_INT_IN(ctx, g->is_small, !strcmp(type, "small"));
        const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(sg, "blocks");
        CHECK_EQ_INT_IN(ctx, g->n_blocks, cJSON_GetArraySize(blocks));
        size_t j = 0;
        const cJSON *b;
        cJSON_ArrayForEach(b, blocks)
        {
            if (j >= g->n_blocks)
                break;
            const ms_heap_block *ours = &h->blocks[g->first_block + j++];
            CHECK_EQ_INT_IN(ctx, ours->address, cJSON_GetArrayItem(b, 0)->valuedouble);
            CHECK_EQ_INT_IN(ctx, ours->size, cJSON_GetArrayItem(b, 1)->valuedouble);
            CHECK_EQ_INT_IN(ctx, ours->state,
                            state_of(cJSON_GetStringValue(cJSON_GetArrayItem(b, 2))));
            blocks_checked++;
        }
    }
    CHECK_TRUE_IN(ctx, blocks_checked > 0);
}

/* The rule's evidence on the recordings, against what the script measured. */
static void check_cause_rule(const char *name, const cJSON *truth, const ms_oom *o)
{
    char ctx[128];
    snprintf(ctx, sizeof ctx, "%s cause rule", name);
    const uint64_t MiB = 1u << 20;
    /* The advice starts with the cause's. */
    CHECK_TRUE_IN(ctx, o->n_advice >= 1);
    /* The iterations listed end with the failing one, unfinished, with its peak so far:
     * at least what is alive at the failure. */
    if (o->n_iters > 0) {
        const ms_oom_iter *last = &o->iters[o->n_iters - 1];
        CHECK_TRUE_IN(ctx, last->unfinished);
        CHECK_TRUE_IN(ctx, last->peak_bytes >= (int64_t)o->live_requested_bytes);
        for (size_t i = 0; i + 1 < o->n_iters; i++)
            CHECK_TRUE_IN(ctx, !o->iters[i].unfinished);
    }
    if (!strcmp(name, "oom_fragmentation")) {
        /* No iteration before it: the free pieces (544 MiB), joined, serve the request. */
        CHECK_EQ_INT_IN(ctx, o->basis, MS_OOM_BASIS_SHARE_OF_LIVE);
        CHECK_EQ_STR_IN(ctx, o->evidence,
                        "joined, the 544.00 MiB of free pieces would serve the 200.00 MiB request");
        CHECK_TRUE_IN(ctx, strstr(o->advice[0], "expandable_segments:True") != NULL);
    }
    if (!strcmp(name, "oom_act_trap")) {
        /* Batches 2048, 4096, 8192: two complete iterations whose peaks the script
         * measured (allocated bytes; ours are requested bytes, which differ by the
         * rounding of the small allocations, well under 1 MiB), then the failing third. */
        const cJSON *peaks =
            cJSON_GetObjectItemCaseSensitive(truth, "per_iteration_peak_allocated_bytes");
        int n_peaks = cJSON_GetArraySize(peaks);
        CHECK_EQ_INT_IN(ctx, o->n_iters, (size_t)n_peaks + 1);
        for (int i = 0; i < n_peaks && (size_t)i < o->n_iters; i++) {
            double want = cJSON_GetArrayItem(peaks, i)->valuedouble;
            double got = (double)o->iters[i].peak_bytes;
            CHECK_TRUE_IN(ctx, got <= want && want - got < (double)MiB);
        }
        CHECK_EQ_INT_IN(ctx, o->iters[o->n_iters - 1].index + 1,
                        (size_t)check_truth_num(truth, "iterations") + 1);
        /* The real peak is in the failing iteration. */
        CHECK_EQ_INT_IN(ctx, o->peak_iteration, o->iters[o->n_iters - 1].index);
        /* The free pieces add up to more than the request and would have served it
         * joined, but the failing iteration (grown twice as much as the one before at
         * the same allocation) still had to allocate more than them. */
        const cJSON *t_oom = cJSON_GetObjectItemCaseSensitive(truth, "oom");
        CHECK_EQ_INT_IN(ctx, o->usable_free_bytes,
                        check_truth_num(t_oom, "free_in_reserved_large_pool_bytes"));
        CHECK_TRUE_IN(ctx, o->usable_free_bytes > o->request_block_bytes);
        CHECK_EQ_INT_IN(ctx, o->basis, MS_OOM_BASIS_PREVIOUS_ALLOCATIONS);
        CHECK_EQ_INT_IN(ctx, o->basis_iteration, o->iters[o->n_iters - 2].index);
        CHECK_TRUE_IN(ctx, o->still_to_allocate > o->usable_free_bytes);
        /* Activations: 95% of live memory, one 8 MiB tensor (8192 rows x 256 floats) per
         * layer call; checkpointing would save most of them. */
        CHECK_TRUE_IN(ctx, check_truth_num(t_oom, "activation_fraction_of_live") > 0.9);
        CHECK_TRUE_IN(ctx, o->act_layer_calls > 200);
        CHECK_EQ_INT_IN(ctx, o->act_layer_bytes / (int64_t)o->act_layer_calls,
                        check_truth_num(t_oom, "rows") * 256 * 4);
        CHECK_TRUE_IN(ctx, o->checkpoint_save_bytes * 4 > o->act_layer_bytes * 3);
        CHECK_TRUE_IN(ctx, strstr(o->advice[0], "activation checkpointing") != NULL);
        CHECK_TRUE_IN(ctx, strstr(o->advice[0], "8.00 MiB per layer call") != NULL);
        /* Model state (parameters and AdamW's two states) holds 5%: no advice of its own. */
        for (size_t i = 0; i < o->n_advice; i++)
            CHECK_TRUE_IN(ctx, strstr(o->advice[i], "FSDP") == NULL);
        /* The free pieces are named, and why they would not have been enough. */
        bool said = false;
        for (size_t i = 0; i < o->n_advice; i++)
            said = said || strstr(o->advice[i], "still had to allocate") != NULL;
        CHECK_TRUE_IN(ctx, said);
    }
}

static void one(const char *path, const char *name, void *arg)
{
    size_t *n_files = arg;
    if (strncmp(name, "oom_", 4) != 0)
        return;
    (*n_files)++;
    cJSON *truth = check_truth_load(name);
    const cJSON *oom = cJSON_GetObjectItemCaseSensitive(truth, "oom");
    ms_snapshot *s = NULL;
    ms_timeline *t = NULL;
    int device;
    if (!oom || check_open_timeline(path, &s, &device, &t)) {
        check_fail("%s: no truth or no snapshot", name);
        cJSON_Delete(truth);
        return;
    }
    ms_oom_report *r = NULL;
    ms_error err;
    if (ms_oom_report_build(&r, s, device, t, NULL, &err)) {
        check_fail("%s: %s", name, err.message);
    } else {
        CHECK_EQ_INT_IN(name, r->n, 1);
        for (size_t i = 0; i < r->n; i++) {
            const ms_oom *o = &r->items[i];
            const cJSON *at = cJSON_GetObjectItemCaseSensitive(oom, "at_oom");
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(oom, "observer_args");
            char ctx[128];
            snprintf(ctx, sizeof ctx, "%s at_oom", name);
            check_counters(ctx, o->allocated_bytes, o->reserved_bytes, o->free_in_reserved_bytes,
                           o->free_blocks, o->largest_free_block_bytes, at);
            CHECK_EQ_INT_IN(ctx, o->device_free_bytes, check_truth_num(args, "device_free"));
            /* The observer's `alloc` is the cudaMalloc the allocator tried. */
            CHECK_EQ_INT_IN(ctx, o->segment_request_bytes, check_truth_num(args, "alloc"));
            const cJSON *req = cJSON_GetObjectItemCaseSensitive(oom, "request_bytes");
            if (cJSON_IsNumber(req))
                CHECK_EQ_INT_IN(ctx, o->request_bytes, req->valuedouble);
            check_state(ctx, o->heap, at);
            /* Every recording names its cause; oom_act_trap's (activations, though its free
             * pieces add up to far more than the request) is issue 22's rule. */
            const char *want_cause =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(oom, "expected_cause"));
            CHECK_TRUE_IN(ctx, want_cause != NULL);
            if (want_cause)
                CHECK_EQ_STR_IN(ctx, ms_oom_cause_name(o->cause), want_cause);
            check_cause_rule(name, truth, o);
            /* A leak names the injected site, and what it holds at the failure. */
            const cJSON *leaks = cJSON_GetObjectItemCaseSensitive(truth, "leaks");
            if (o->cause == MS_OOM_LEAK && cJSON_GetArraySize(leaks) > 0) {
                const cJSON *l0 = cJSON_GetArrayItem(leaks, 0);
                const ms_frame *fr = ms_snapshot_frame(s, o->leak_site);
                CHECK_TRUE_IN(ctx, fr != NULL);
                if (fr) {
                    CHECK_EQ_INT_IN(ctx, fr->line, check_truth_num(l0, "line"));
                    CHECK_EQ_STR_IN(ctx, ms_snapshot_string(s, fr->filename),
                                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l0, "filename")));
                }
                CHECK_EQ_INT_IN(ctx, o->leak_bytes,
                                check_truth_num(l0, "count") *
                                    check_truth_num(l0, "bytes_each_requested"));
            }
            /* Every recording ran under a per-process limit with the GPU mostly free. */
            CHECK_TRUE_IN(ctx, o->limit_refused);
            CHECK_TRUE_IN(ctx, o->n_advice >= 2);
            /* A wrapped trace lost what the allocator held before it: say so. */
            CHECK_EQ_INT_IN(ctx, o->approximate, !t->trace_complete);

            /* Before the failing call: the allocator's retry released cached segments
             * (segment_free / segment_unmap) right before the oom event. */
            const cJSON *before = cJSON_GetObjectItemCaseSensitive(oom, "before_request");
            if (before) {
                int64_t ev = o->event - 1;
                const ms_trace *tr = ms_snapshot_trace(s, device);
                while (ev >= 0 && (tr->action[ev] == MS_ACT_SEGMENT_FREE ||
                                   tr->action[ev] == MS_ACT_SEGMENT_UNMAP))
                    ev--;
                ms_heap *h = NULL;
                snprintf(ctx, sizeof ctx, "%s before_request (event %lld)", name, (long long)ev);
                if (ms_heap_build(&h, s, device, ev, &err))
                    check_fail("%s: %s", ctx, err.message);
                else
                    check_state(ctx, h, before);
                ms_heap_free(h);
            }
        }
    }
    ms_oom_report_free(r);
    ms_timeline_free(t);
    ms_snapshot_free(s);
    cJSON_Delete(truth);
}

/* The rule on constructed numbers: one case per cause, and each just on the other side
 * of its boundary. */
static void check_decide(void)
{
    const uint64_t MiB = 1u << 20;
    char why[320];
    int64_t cats[MS_OOM_CATEGORIES] = {0};
    ms_oom_facts f = {200 * MiB, 480 * MiB, 544 * MiB, 8, 124 * MiB, 60 * MiB, NULL, 0, 0, 0,
                      MS_OOM_BASIS_SHARE_OF_LIVE, 0, false};
    CHECK_EQ_STR(ms_oom_cause_name(ms_oom_decide(&f, why, sizeof why)), "fragmentation");
    CHECK_TRUE(strstr(why, "544.00 MiB") && strstr(why, "8 pieces"));
    f.largest_usable_block = 200 * MiB; /* a block fits: not fragmentation */
    CHECK_TRUE(ms_oom_decide(&f, why, sizeof why) != MS_OOM_FRAGMENTATION);
    f.largest_usable_block = 124 * MiB;
    f.usable_free_bytes = 199 * MiB; /* free memory would not cover it anyway */
    CHECK_TRUE(ms_oom_decide(&f, why, sizeof why) != MS_OOM_FRAGMENTATION);

    /* Without history the counterfactual is the request alone (issue 35): joined, free
     * pieces that serve it are the cause, whatever share of live memory they are. */
    char ev[320];
    f.usable_free_bytes = 239 * MiB; /* more than the request, less than half of live */
    CHECK_EQ_INT(ms_oom_decide_evidence(&f, why, sizeof why, ev, sizeof ev), MS_OOM_FRAGMENTATION);
    CHECK_EQ_STR(ev, "joined, the 239.00 MiB of free pieces would serve the 200.00 MiB request");
    /* With history, what the iteration still had to allocate decides, whatever share
     * of live memory the free pieces are. */
    f.usable_free_bytes = 239 * MiB;
    f.basis = MS_OOM_BASIS_PREVIOUS_PEAK;
    f.still_to_allocate = 239 * MiB;
    CHECK_EQ_INT(ms_oom_decide(&f, why, sizeof why), MS_OOM_FRAGMENTATION);
    CHECK_TRUE(strstr(why, "239.00 MiB the iteration still had to allocate") != NULL);
    ms_oom_decide_evidence(&f, why, sizeof why, ev, sizeof ev);
    CHECK_TRUE(strstr(ev, "and the 239.00 MiB the iteration still had to allocate") != NULL);
    f.still_to_allocate = 239 * MiB + 1;
    CHECK_TRUE(ms_oom_decide(&f, why, sizeof why) != MS_OOM_FRAGMENTATION);
    f.basis = MS_OOM_BASIS_PREVIOUS_ALLOCATIONS;
    f.usable_free_bytes = 544 * MiB;
    f.still_to_allocate = 2800 * MiB; /* a larger iteration: the rest does not fit */
    CHECK_TRUE(ms_oom_decide(&f, why, sizeof why) != MS_OOM_FRAGMENTATION);
    f.basis = MS_OOM_BASIS_SHARE_OF_LIVE;
    f.still_to_allocate = 0;
    for (int b = 0; b < MS_OOM_BASIS_COUNT; b++)
        CHECK_TRUE(strlen(ms_oom_basis_text((ms_oom_basis)b)) > 0);
    CHECK_EQ_STR(ms_oom_basis_name(MS_OOM_BASIS_PREVIOUS_PEAK), "previous_iteration_peak");

    ms_oom_facts one_big = {3072 * MiB, 161 * MiB, 60 * MiB, 10, 16 * MiB, 64 * MiB, NULL, 0, 0, 0,
                            MS_OOM_BASIS_SHARE_OF_LIVE, 0, false};
    CHECK_EQ_INT(ms_oom_decide(&one_big, why, sizeof why), MS_OOM_SINGLE_ALLOCATION);
    ms_oom_facts held = {64 * MiB, 1000 * MiB, 0, 0, 0, 501 * MiB, NULL, 0, 0, 0,
                         MS_OOM_BASIS_SHARE_OF_LIVE, 0, false};
    /* A large allocation beside the request is a bystander, not the cause (issue 35). */
    CHECK_TRUE(ms_oom_decide(&held, why, sizeof why) != MS_OOM_SINGLE_ALLOCATION);
    /* issue 35's trap: a 900 MiB bystander, 524 MiB free in 5 pieces (largest 124 MiB), a
     * 300 MiB request, no history. */
    ms_oom_facts bystander = {300 * MiB, 1400 * MiB, 524 * MiB, 5, 124 * MiB, 900 * MiB, NULL,
                              0, 0, 0, MS_OOM_BASIS_SHARE_OF_LIVE, 2048 * MiB, false};
    CHECK_EQ_INT(ms_oom_decide_evidence(&bystander, why, sizeof why, ev, sizeof ev),
                 MS_OOM_FRAGMENTATION);
    CHECK_EQ_STR(ev, "joined, the 524.00 MiB of free pieces would serve the 300.00 MiB request");
    /* A request over what the process is allowed is its own cause, however much is
     * alive beside it. */
    ms_oom_facts over = {3072 * MiB, 4000 * MiB, 0, 0, 0, 100 * MiB, NULL, 0, 0, 0,
                         MS_OOM_BASIS_SHARE_OF_LIVE, 2048 * MiB, false};
    CHECK_EQ_INT(ms_oom_decide_evidence(&over, why, sizeof why, ev, sizeof ev),
                 MS_OOM_SINGLE_ALLOCATION);
    CHECK_TRUE(strstr(ev, "over the 2.00 GiB allowed") != NULL);
    over.limit_bytes = 3072 * MiB; /* exactly the limit: not over it */
    CHECK_TRUE(ms_oom_decide(&over, why, sizeof why) != MS_OOM_SINGLE_ALLOCATION);

    ms_oom_facts leak = {32 * MiB, 1500 * MiB, 16 * MiB, 1, 16 * MiB, 32 * MiB, NULL,
                         1184 * MiB, 32.0 * (double)MiB, 0, MS_OOM_BASIS_SHARE_OF_LIVE, 0, false};
    CHECK_EQ_INT(ms_oom_decide(&leak, why, sizeof why), MS_OOM_LEAK);
    leak.leak_growth_bytes = 0; /* kept but not growing: not a leak */
    CHECK_TRUE(ms_oom_decide(&leak, why, sizeof why) != MS_OOM_LEAK);
    leak.leak_growth_bytes = 1 * MiB;
    leak.leak_bytes = 20 * MiB; /* below a tenth of memory and below the request */
    CHECK_TRUE(ms_oom_decide(&leak, why, sizeof why) != MS_OOM_LEAK);

    ms_oom_facts cat = {64 * MiB, 2000 * MiB, 0, 0, 0, 64 * MiB, cats, 0, 0, 0,
                        MS_OOM_BASIS_SHARE_OF_LIVE, 0, false};
    cats[0] = 640 * MiB, cats[1] = 640 * MiB, cats[2] = 640 * MiB, cats[7] = 80 * MiB;
    CHECK_EQ_INT(ms_oom_decide(&cat, why, sizeof why), MS_OOM_MODEL_STATE);
    CHECK_TRUE(strstr(why, "optimizer state") != NULL);
    /* An inference run: the same split names parameters alone (issue 35). */
    memset(cats, 0, sizeof cats);
    cats[0] = 1800 * MiB, cats[3] = 200 * MiB;
    cat.inference = true;
    CHECK_EQ_INT(ms_oom_decide(&cat, why, sizeof why), MS_OOM_MODEL_STATE);
    CHECK_TRUE(strstr(why, "an inference run") && !strstr(why, "gradients 0"));
    cat.inference = false;
    memset(cats, 0, sizeof cats);
    cats[0] = 300 * MiB, cats[3] = 1500 * MiB, cats[4] = 200 * MiB;
    CHECK_EQ_INT(ms_oom_decide(&cat, why, sizeof why), MS_OOM_ACTIVATIONS);
    memset(cats, 0, sizeof cats);
    cats[0] = 600 * MiB, cats[3] = 600 * MiB, cats[7] = 800 * MiB; /* nothing holds half */
    CHECK_EQ_INT(ms_oom_decide(&cat, why, sizeof why), MS_OOM_OTHER);
    cat.category_bytes = NULL; /* unknown categories: no guess */
    CHECK_EQ_INT(ms_oom_decide(&cat, why, sizeof why), MS_OOM_OTHER);
    CHECK_TRUE(strstr(why, "not known") != NULL);
    for (int c = 0; c < MS_OOM_CAUSE_COUNT; c++)
        CHECK_TRUE(strlen(ms_oom_cause_text((ms_oom_cause)c)) > 0);
}

/* Damaged recordings: every byte flip that still reads as a snapshot gets an answer
 * (possibly approximate) or a clean error, never a crash (the sanitizers watch). */
static void check_damaged(const char *path)
{
    size_t len = 0;
    unsigned char *data = check_read_file(path, &len);
    if (!data || len < 64) {
        check_fail("%s: cannot read", path);
        free(data);
        return;
    }
    unsigned char *copy = malloc(len);
    size_t read_ok = 0, answered = 0;
    srand(7);
    for (int round = 0; round < 300 && copy; round++) {
        memcpy(copy, data, len);
        for (int k = 0; k < 1 + round % 4; k++)
            copy[(size_t)rand() % len] ^= (unsigned char)(1u << (rand() % 8));
        ms_snapshot *s = NULL;
        ms_error err;
        if (ms_snapshot_read_memory(&s, copy, len, NULL, &err) != 0)
            continue;
        read_ok++;
        for (int d = 0; d < ms_snapshot_device_count(s); d++) {
            ms_oom_report *r = NULL;
            int rc = ms_oom_report_build(&r, s, d, NULL, NULL, &err);
            CHECK_TRUE_IN(path, rc == 0 || err.message[0] != '\0');
            answered += rc == 0;
            ms_oom_report_free(r);
        }
        ms_snapshot_free(s);
    }
    printf("  %s: %zu damaged copies read, %zu device analyses answered\n", path, read_ok, answered);
    CHECK_TRUE_IN(path, answered > 0);
    free(copy);
    free(data);
}

int main(void)
{
    check_decide();
    check_damaged("testdata/oom_fragmentation.pickle");
    check_damaged("testdata/oom_single_expandable.pickle");
    size_t n_files = 0;
    check_each_snapshot(one, &n_files);
    CHECK_TRUE(n_files >= 6);
    return check_finish("test_oom");
}
