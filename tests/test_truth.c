/* The timeline against the allocator's own counters (truth.json) on every real snapshot
 * in testdata/: exact peaks for complete traces, exact end state for all. */
#include <cjson/cJSON.h>

#include "check.h"
#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"

typedef struct seen {
    int complete, incomplete;
} seen;

static void check_snapshot(const char *path, const char *name, void *arg)
{
    seen *counts = arg;
    cJSON *truth = check_truth_load(name);
    CHECK_TRUE_IN(name, truth != NULL);
    if (!truth)
        return;

    ms_snapshot *s = NULL;
    ms_timeline *t = NULL;
    ms_error err;
    int d;
    if (check_open_timeline(path, &s, &d, &t)) {
        cJSON_Delete(truth);
        return;
    }
    printf("%-16s device %d: %zu events, peak %lld, live %lld, reserved peak %lld end %lld, %s\n",
           name, d, t->n_events, (long long)t->peak_bytes, (long long)t->live_end_bytes,
           (long long)t->reserved_peak_bytes, (long long)t->reserved_end_bytes,
           t->trace_complete ? "complete" : "incomplete");

    /* Every trace: the curves end exactly at the allocator's final state. */
    CHECK_EQ_INT_IN(name, t->live_end_bytes,
                    check_truth_counter(truth, "requested_bytes.all.current"));
    CHECK_EQ_INT_IN(name, t->reserved_end_bytes,
                    check_truth_counter(truth, "reserved_bytes.all.current"));
    if (t->n_events) {
        CHECK_EQ_INT_IN(name, t->active[t->n_events - 1], t->live_end_bytes);
        CHECK_EQ_INT_IN(name, t->reserved[t->n_events - 1], t->reserved_end_bytes);
    }
    /* What was alive when recording began, by the allocator's counters. */
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(truth, "counters_at_start");
    double start_live = cJSON_GetObjectItemCaseSensitive(start, "requested_bytes.all.current")->valuedouble;
    double start_reserved = cJSON_GetObjectItemCaseSensitive(start, "reserved_bytes.all.current")->valuedouble;
    const cJSON *wrap = cJSON_GetObjectItemCaseSensitive(truth, "max_entries");
    if (t->trace_complete) {
        /* A complete trace holds every allocation made while recording. */
        counts->complete++;
        CHECK_TRUE_IN(name, wrap == NULL); /* a wrapped ring buffer cannot look complete */
        CHECK_EQ_INT_IN(name, start_live, 0);
        CHECK_EQ_INT_IN(name, start_reserved, 0);
        const cJSON *allocs = cJSON_GetObjectItemCaseSensitive(truth, "allocs_during_trace");
        CHECK_EQ_INT_IN(name, t->action_counts[MS_ACT_ALLOC], allocs->valuedouble);
        /* The allocator counts a free when the tensor is released (free_requested); with
         * record_stream the block comes back later (free_completed) or not yet. */
        const cJSON *frees = cJSON_GetObjectItemCaseSensitive(truth, "frees_during_trace");
        CHECK_EQ_INT_IN(name, t->action_counts[MS_ACT_FREE_REQUESTED], frees->valuedouble);
        CHECK_TRUE_IN(name, t->action_counts[MS_ACT_FREE_COMPLETED] <=
                                t->action_counts[MS_ACT_FREE_REQUESTED]);
        CHECK_EQ_INT_IN(name, t->preexisting_count, 0);
    } else {
        counts->incomplete++;
        CHECK_TRUE_IN(name, wrap != NULL || start_live > 0 || start_reserved > 0);
        CHECK_TRUE_IN(name, t->preexisting_count > 0 || t->reserved_start > 0);
    }
    /* A wrapped ring buffer is claimed only on evidence, and never for a recording that
     * merely started late (cat_prebuilt, old20_cat_prebuilt). */
    if (wrap)
        CHECK_TRUE_IN(name, t->wrap_evidence != MS_WRAP_NONE);
    else
        CHECK_EQ_INT_IN(name, t->wrap_evidence, MS_WRAP_NONE);
    if (wrap) {
        /* Dropped events: the reconstruction can only make the peak lower, never higher. */
        CHECK_TRUE_IN(name, t->peak_bytes <=
                      (int64_t)check_truth_counter(truth, "requested_bytes.all.peak"));
        CHECK_EQ_INT_IN(name, t->n_events, wrap->valuedouble);
    } else {
        /* Nothing dropped (recording may have started late): what was alive at the start
         * is rebuilt exactly, so the peaks are exact too. */
        CHECK_EQ_INT_IN(name, t->preexisting_bytes, start_live);
        CHECK_EQ_INT_IN(name, t->reserved_start, start_reserved);
        CHECK_EQ_INT_IN(name, t->peak_bytes,
                        check_truth_counter(truth, "requested_bytes.all.peak"));
        CHECK_EQ_INT_IN(name, t->reserved_peak_bytes,
                        check_truth_counter(truth, "reserved_bytes.all.peak"));
    }
    /* The peak is the curve's maximum and sits at the event it names. */
    int64_t max = t->active_start;
    for (size_t i = 0; i < t->n_events; i++)
        if (t->active[i] > max)
            max = t->active[i];
    CHECK_EQ_INT_IN(name, max, t->peak_bytes);
    if (t->peak_event >= 0)
        CHECK_EQ_INT_IN(name, t->active[t->peak_event], t->peak_bytes);

    /* The allocation list explains the curve: alive-at-peak sums to the peak. */
    ms_alloc *alive = NULL;
    size_t n_alive = 0;
    CHECK_EQ_INT_IN(name, ms_timeline_alive_at(&alive, &n_alive, s, t, t->peak_event, &err), 0);
    int64_t sum = 0;
    for (size_t i = 0; i < n_alive; i++)
        sum += (int64_t)alive[i].size;
    CHECK_EQ_INT_IN(name, sum, t->peak_bytes);
    int64_t sum2 = 0;
    for (size_t i = 0; i < t->n_allocs; i++) {
        const ms_alloc *a = &t->allocs[i];
        if (a->alloc_event <= t->peak_event && (a->free_event == -1 || a->free_event > t->peak_event))
            sum2 += (int64_t)a->size;
    }
    CHECK_EQ_INT_IN(name, sum2, t->peak_bytes);
    int64_t live = 0;
    uint64_t live_n = 0;
    for (size_t i = 0; i < t->n_allocs; i++)
        if (t->allocs[i].free_event == -1) {
            live += (int64_t)t->allocs[i].size;
            live_n++;
        }
    CHECK_EQ_INT_IN(name, live, t->live_end_bytes);
    CHECK_EQ_INT_IN(name, live_n, t->live_end_count);

    /* summary's one pass (active curve only, peak set collected while building) gives
     * the same iterations and the same allocations alive at the peak as the full
     * curves and a replay; a timeline without curves (iterations by replay) too. */
    {
        ms_timeline *lean = NULL, *bare = NULL;
        ms_iterations *with_curve = NULL, *one_pass = NULL, *replayed = NULL;
        CHECK_EQ_INT_IN(name, ms_timeline_build(&lean, s, t->device,
                                                MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE, &err),
                        0);
        CHECK_EQ_INT_IN(name, ms_timeline_build(&bare, s, t->device, 0, &err), 0);
        CHECK_EQ_INT_IN(name, ms_iterations_find(&with_curve, s, t->device, t, NULL, &err), 0);
        if (lean && bare) {
            CHECK_TRUE_IN(name, lean->reserved == NULL && lean->active != NULL);
            CHECK_EQ_INT_IN(name, ms_iterations_find(&one_pass, s, t->device, lean, NULL, &err), 0);
            CHECK_EQ_INT_IN(name, ms_iterations_find(&replayed, s, t->device, bare, NULL, &err), 0);
            CHECK_EQ_INT_IN(name, lean->n_peak_alive, n_alive);
            int64_t sum3 = 0;
            for (size_t i = 0; i < lean->n_peak_alive; i++)
                sum3 += (int64_t)lean->peak_alive[i].size;
            CHECK_EQ_INT_IN(name, sum3, t->peak_bytes);
            CHECK_EQ_INT_IN(name, lean->peak_event, t->peak_event);
        }
        const ms_iterations *others[2] = {one_pass, replayed};
        for (int o = 0; o < 2 && with_curve; o++) {
            if (!others[o])
                continue;
            CHECK_EQ_INT_IN(name, others[o]->n, with_curve->n);
            for (size_t k = 0; k < others[o]->n && k < with_curve->n; k++) {
                CHECK_EQ_INT_IN(name, others[o]->items[k].start_event, with_curve->items[k].start_event);
                CHECK_EQ_INT_IN(name, others[o]->items[k].peak_bytes, with_curve->items[k].peak_bytes);
                CHECK_EQ_INT_IN(name, others[o]->items[k].live_end_bytes,
                                with_curve->items[k].live_end_bytes);
            }
        }
        ms_iterations_free(with_curve);
        ms_iterations_free(one_pass);
        ms_iterations_free(replayed);
        ms_timeline_free(lean);
        ms_timeline_free(bare);
    }

    /* OOM scenario: the trace records the refused request. */
    const cJSON *oom = cJSON_GetObjectItemCaseSensitive(truth, "oom_observer_args");
    if (oom) {
        CHECK_EQ_INT_IN(name, t->oom_count, check_truth_counter(truth, "num_ooms"));
        const ms_trace *tr = ms_snapshot_trace(s, d);
        for (size_t i = 0; i < tr->n; i++)
            if (tr->action[i] == MS_ACT_OOM) {
                /* The trace keeps the requested size; the observer sees it rounded up to
                 * the allocator's 2 MiB granularity for large blocks. */
                double rounded = cJSON_GetObjectItemCaseSensitive(oom, "alloc")->valuedouble;
                CHECK_TRUE_IN(name, (double)tr->size[i] <= rounded &&
                                        rounded - (double)tr->size[i] < 2097152);
                /* scenarios.py asks for 256 MiB + 512 * i bytes for tensor i. */
                double made =
                    cJSON_GetObjectItemCaseSensitive(truth, "tensors_before_oom")->valuedouble;
                CHECK_EQ_INT_IN(name, tr->size[i], 256.0 * 1048576 + 512 * made);
                CHECK_EQ_INT_IN(name, tr->addr[i],
                                cJSON_GetObjectItemCaseSensitive(oom, "device_free")->valuedouble);
            }
    }
    ms_free(alive);
    ms_timeline_free(t);
    ms_snapshot_free(s);
    cJSON_Delete(truth);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* keep lines in order with failures on stderr */
    seen counts = {0, 0};
    size_t files = check_each_snapshot(check_snapshot, &counts);
    /* Guard against an empty or partial testdata/ silently passing. */
    CHECK_TRUE(files >= 17);
    CHECK_TRUE(counts.complete >= 11);
    CHECK_TRUE(counts.incomplete >= 6);
    return check_finish("test_truth");
}
