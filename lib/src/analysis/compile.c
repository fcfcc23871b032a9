/* Compile-time work: what torch.compile allocates while it compiles and autotunes, as
 * opposed to the compiled code running. Dynamo converts a frame (every Dynamo and
 * Inductor compile step runs under torch/_dynamo/convert_frame.py), and Inductor
 * benchmarks kernels and choices (its runtime/benchmarking.py, select_algorithm.py,
 * autotune_process.py, pad_mm's benchmark, a CachingAutotuner's benchmark_all_configs on
 * the first call), the latter also announced by annotations such as
 * `pad_mm_benchmark (dynamo_timed)`. The compiled code itself (the torchinductor_USER
 * cache, output_code.py's __call__) is the program running, not compile-time work.
 *
 * These stacks and annotations make the compile windows: the stretch of the trace from
 * the first compile event to the last, one window per iteration that compiles (a
 * recompile in step 40 is a window of its own), or one for a trace without iterations. */
#include <stdlib.h>
#include <string.h>

#include "compile_internal.h"
#include "internal.h"
#include "memsnap/phases.h"
#include "timeline_internal.h"

/* `file` contains `part`, with either path separator (a Windows recording writes
 * torch\_dynamo\convert_frame.py); `part` is written with '/'. */
static bool path_has(const char *file, const char *part)
{
    size_t n = strlen(part);
    for (const char *p = file; *p; p++) {
        size_t k = 0;
        while (k < n && p[k] && (p[k] == part[k] || (part[k] == '/' && p[k] == '\\')))
            k++;
        if (k == n)
            return true;
    }
    return false;
}

static const char *const AUTOTUNE_FUNCTIONS[] = {
    "benchmark_all_configs", "autotune_to_one_config", "pad_mm_benchmark",
    "benchmark_choice",      "benchmark_example_value", "do_autotuning"};

/* MS__COMPILE_* bits of one frame. */
static uint8_t frame_compile(const ms_snapshot *s, uint32_t id)
{
    const ms_frame *f = ms_snapshot_frame(s, id);
    if (!f)
        return 0;
    const char *file = ms_snapshot_string(s, f->filename);
    const char *name = ms_snapshot_string(s, f->name);
    if (!file || (!path_has(file, "_inductor/") && !path_has(file, "_dynamo/")))
        return 0;
    if (path_has(file, "_inductor/runtime/benchmarking.py") ||
        path_has(file, "_inductor/select_algorithm.py") ||
        path_has(file, "_inductor/autotune_process.py") ||
        path_has(file, "_inductor/fx_passes/pad_mm.py"))
        return MS__COMPILE | MS__COMPILE_AUTOTUNE;
    for (size_t k = 0; name && k < sizeof AUTOTUNE_FUNCTIONS / sizeof *AUTOTUNE_FUNCTIONS; k++)
        if (!strcmp(name, AUTOTUNE_FUNCTIONS[k]))
            return MS__COMPILE | MS__COMPILE_AUTOTUNE;
    if (path_has(file, "_dynamo/convert_frame.py"))
        return MS__COMPILE;
    return 0;
}

int ms__compile_stacks(uint8_t **out, bool *any, const ms_snapshot *s, ms_error *err)
{
    *out = NULL;
    *any = false;
    uint8_t *ff, *sf;
    int rc = ms__frame_flag_arrays(&ff, &sf, s, frame_compile, err);
    if (rc)
        return rc;
    size_t nframes = ms_snapshot_frame_count(s), nstacks = ms_snapshot_stack_count(s);
    bool frames_any = false;
    for (size_t i = 0; i < nframes; i++)
        frames_any |= ff[i] != 0;
    for (size_t sid = 0; frames_any && sid < nstacks; sid++) {
        size_t n = 0;
        const uint32_t *fr = ms_snapshot_stack(s, (uint32_t)sid, &n);
        uint8_t acc = 0;
        for (size_t k = 0; k < n; k++)
            if (fr[k] < nframes)
                acc |= ff[fr[k]];
        sf[sid] = acc;
        *any |= acc != 0;
    }
    free(ff);
    *out = sf;
    return 0;
}

uint8_t ms__compile_annotation(const char *name)
{
    if (!name)
        return 0;
    if (strstr(name, "pad_mm_benchmark") || strstr(name, "benchmark_all_configs") ||
        strstr(name, "select_algorithm") || strstr(name, "autotune") ||
        !strncmp(name, "do_bench", 8))
        return MS__COMPILE | MS__COMPILE_AUTOTUNE;
    if (strstr(name, "(dynamo_timed)"))
        return MS__COMPILE;
    return 0;
}


static int range_cmp(const void *pa, const void *pb)
{
    const ms__compile_range *a = pa, *b = pb;
    return MS__CMP(a->first, b->first);
}

int ms__compile_ranges(ms__compile_range **out, size_t *n_out, const ms_snapshot *s,
                       const ms_trace *tr, const ms__ann *ann, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (!tr->has_times || !tr->n)
        return 0; /* without times an annotation cannot be placed among the events */
    const ms_annotation_range *ar = ann->r;
    size_t nar = ann->n;
    ms__compile_range *r = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < nar; i++) {
        uint8_t bits = ms__compile_annotation(ms_snapshot_string(s, ar[i].name));
        if (!bits)
            continue;
        size_t h0 = 0, h1 = 0;
        int64_t first = ar[i].lost_start ? 0 : ms__event_at_time(tr, ar[i].start_us, false, &h0);
        int64_t end = ar[i].open_end ? (int64_t)tr->n : ms__event_at_time(tr, ar[i].end_us, true, &h1);
        if (end <= first)
            continue;
        if (!ms__grow((void **)&r, &cap, n + 1, sizeof *r)) {
            free(r);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for compile ranges");
        }
        r[n++] = (ms__compile_range){first, end, bits};
    }
    if (n > 1)
        qsort(r, n, sizeof *r, range_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && r[i].first <= r[m - 1].end) {
            if (r[i].end > r[m - 1].end)
                r[m - 1].end = r[i].end;
            r[m - 1].bits |= r[i].bits;
        } else {
            r[m++] = r[i];
        }
    }
    *out = r;
    *n_out = m;
    return 0;
}

/* The iteration holding an event (-1 before the first, or none); iterations ascend. */
static int64_t iter_at(const ms_iterations *it, int64_t e, size_t *hint)
{
    if (!it || !it->n)
        return -1;
    size_t n = it->n + it->n_unfinished;
    size_t k = *hint;
    while (k < n && it->items[k].end_event <= e)
        k++;
    *hint = k;
    return k < n && it->items[k].start_event <= e ? (int64_t)k : -1 - (int64_t)k;
}

void ms__compile_windows_free(ms__compile_windows *w)
{
    free(w->items);
    memset(w, 0, sizeof *w);
}

int ms__compile_windows_find(ms__compile_windows *out, const ms_snapshot *s, const ms_trace *tr,
                             const ms_iterations *it, const ms__ann *ann, ms_error *err)
{
    memset(out, 0, sizeof *out);
    uint8_t *cs = NULL;
    bool any = false;
    int rc = ms__compile_stacks(&cs, &any, s, err);
    ms__compile_range *ar = NULL;
    size_t nar = 0;
    if (!rc)
        rc = ms__compile_ranges(&ar, &nar, s, tr, ann, err);
    if (rc) {
        free(cs);
        return rc;
    }
    if (!any && !nar) {
        free(cs);
        return 0;
    }
    size_t nst = ms_snapshot_stack_count(s), cap = 0, hint = 0, ri = 0;
    int64_t cur_iter = INT64_MIN;
    ms__compile_window *w = NULL;
    for (size_t i = 0; i < tr->n; i++) {
        uint32_t sid = tr->stack[i];
        uint8_t bits = any && sid < nst ? cs[sid] : 0;
        while (ri < nar && ar[ri].end <= (int64_t)i)
            ri++;
        if (ri < nar && ar[ri].first <= (int64_t)i)
            bits |= ar[ri].bits;
        if (!bits)
            continue;
        /* A window never spans an iteration boundary: the compile of step 0 and a
         * recompile in a later step are two windows. */
        int64_t k = iter_at(it, (int64_t)i, &hint);
        if (out->n && k == cur_iter) {
            w[out->n - 1].end_event = (int64_t)i + 1;
            w[out->n - 1].bits |= bits;
            w[out->n - 1].events++;
            w[out->n - 1].allocations += tr->action[i] == MS_ACT_ALLOC;
            continue;
        }
        if (!ms__grow((void **)&w, &cap, out->n + 1, sizeof *w)) {
            free(w);
            free(cs);
            free(ar);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for compile windows");
        }
        w[out->n++] = (ms__compile_window){(int64_t)i, (int64_t)i + 1, bits, 1,
                                            tr->action[i] == MS_ACT_ALLOC};
        cur_iter = k;
    }
    free(cs);
    free(ar);
    out->items = w;
    return 0;
}
