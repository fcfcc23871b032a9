/* libFuzzer target: the whole read path (input, VM, model) and the timeline over any
 * bytes, and the read with two threads (split_reader.c), which must come out the same:
 * same error at the same byte, or the same events and tables. Then every analysis a
 * command runs on a model: sites, iterations and leaks, categories (checkpoints,
 * formula, explanations), the allocator state at the start, the middle and the end,
 * and the OOM analysis. Last, every command on the same bytes as the tool runs it, output
 * writers included (fuzz_commands.c: render's charts by every grouping, view's page,
 * report, diff and ranks). Also linked with replay_main.c as a plain test that replays
 * the corpus. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "read/vm_iface.h"

#include "fuzz_commands.h"

#include "memsnap/allocator.h"
#include "memsnap/categories.h"
#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"
#include "memsnap/oom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The split read against the one-thread read `a` (NULL when it failed with `ea`);
 * aborts on any difference, which libFuzzer reports as a crash. */
static void check_split_read(const uint8_t *data, size_t size, const ms_limits *lim,
                             const ms_snapshot *a, int ra, const ms_error *ea)
{
    ms_limits two = *lim;
    two.parallel_min_bytes = 1; /* whatever the size */
    ms_snapshot *b = NULL;
    ms_error eb;
    /* Every other input with the VM made to help the thread, or the thread to steal
     * from the VM (two parts handed over either way). */
    ms__split_test_hold = (size & 3) == 1;
    ms__split_test_steal = (size & 3) == 3;
    int rb = ms_snapshot_read_memory(&b, data, size, &two, &eb);
    ms__split_test_hold = ms__split_test_steal = false;
    bool same = ra == rb;
    if (same && ra)
        same = ea->offset == eb.offset && strcmp(ea->message, eb.message) == 0;
    if (same && !ra) {
        same = a->strings.count == b->strings.count && a->n_frames == b->n_frames &&
               a->n_stacks == b->n_stacks && a->n_streams == b->n_streams &&
               a->n_devices == b->n_devices &&
               (!a->n_frames || !memcmp(a->frames, b->frames, a->n_frames * sizeof *a->frames)) &&
               (!a->n_stacks || !memcmp(a->stack_frames, b->stack_frames,
                                        a->n_stack_frames * sizeof *a->stack_frames));
        for (int d = 0; same && d < a->n_devices; d++) {
            const ms_trace *x = &a->traces[d].view, *y = &b->traces[d].view;
            same = x->n == y->n &&
                   (!x->n || (!memcmp(x->action, y->action, x->n) && !memcmp(x->addr, y->addr, x->n * 8) &&
                              !memcmp(x->size, y->size, x->n * 8) && !memcmp(x->time_us, y->time_us, x->n * 8) &&
                              !memcmp(x->stack, y->stack, x->n * 4) && !memcmp(x->stream, y->stream, x->n * 2)));
        }
    }
    ms_snapshot_free(b);
    if (!same)
        abort();
}

/* The analyses that came after the reader, on one device's timeline. Their answers on
 * damaged input may be approximate; what is checked here is that they never crash,
 * hang, leak or overflow (ASan/UBSan), whatever the model holds. */
static void fuzz_analyses(const ms_snapshot *s, int d, const ms_timeline *t)
{
    ms_error err;
    ms_categories *c = NULL;
    if (ms_categories_build(&c, s, d, t, NULL, &err) == 0) {
        int64_t by[MS_CAT_COUNT];
        const ms_trace *tr = ms_snapshot_trace(s, d);
        int64_t n = tr ? (int64_t)tr->n : 0;
        ms_categories_at_event(by, c, -1, NULL);
        ms_categories_at_event(by, c, n / 2, NULL);
        ms_categories_at_event(by, c, n - 1, NULL);
        ms_categories_at_time(by, c, INT64_MIN, NULL);
        ms_categories_at_time(by, c, INT64_MAX, NULL);
        const ms_iterations *it = ms_categories_iterations(c);
        for (size_t k = 0; it && k < it->n && k < 4; k++) {
            ms_category_formula f;
            ms_categories_formula(&f, c, k, NULL);
            ms_categories_iteration_end(c, k);
            ms_categories_iteration_peak(c, k);
        }
        char buf[320];
        for (size_t i = 0; i < t->n_allocs && i < 16; i++)
            ms_categories_explain(c, i, buf, sizeof buf);
        ms_category_phases ph;
        ms_categories_phases(&ph, c);
    }
    ms_categories_free(c);
    const ms_trace *tr = ms_snapshot_trace(s, d);
    int64_t last = tr && tr->n ? (int64_t)tr->n - 1 : -1;
    int64_t at[3] = {-1, last / 2, last};
    for (int k = 0; k < 3; k++) {
        ms_heap *h = NULL;
        if (ms_heap_build(&h, s, d, at[k], &err) == 0) {
            uint64_t bytes, largest;
            ms_heap_usable_free(&bytes, &largest, h, 2u << 20, 0);
        }
        ms_heap_free(h);
    }
    ms_oom_report *o = NULL;
    if (ms_oom_report_build(&o, s, d, t, NULL, &err) == 0)
        ms_oom_report_free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ms_snapshot *s = NULL;
    ms_error err;
    ms_limits lim = fuzz_limits();
    int rc = ms_snapshot_read_memory(&s, data, size, &lim, &err);
    check_split_read(data, size, &lim, s, rc, &err);
    if (rc != 0) {
        fuzz_commands(data, size, NULL);
        return 0;
    }
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        ms_timeline *t = NULL;
        if (ms_timeline_build(&t, s, d, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS | MS_TIMELINE_PEAK_ALIVE, &err) == 0) {
            ms_alloc *alive = NULL;
            size_t n = 0;
            if (ms_timeline_alive_at(&alive, &n, s, t, t->peak_event, &err) == 0) {
                ms_site_total *tot = NULL;
                size_t nt = 0;
                if (ms_site_totals(&tot, &nt, s, alive, n, &err) == 0) {
                    char buf[256];
                    for (size_t i = 0; i < nt; i++)
                        ms_site_format(s, tot[i].site, buf, sizeof buf);
                }
                ms_free(tot);
            }
            ms_free(alive);
            /* The iterations and leak analyses read the same model. */
            ms_leak_report *r = NULL;
            if (ms_leak_report_build(&r, s, d, t, NULL, &err) == 0)
                ms_leak_report_free(r);
            fuzz_analyses(s, d, t);
        }
        ms_timeline_free(t);
    }
    fuzz_commands(data, size, s);
    ms_snapshot_free(s);
    return 0;
}
