#include "categories_json.h"
#include "shape_json.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "memsnap/run.h"
#include "cli_util.h"

static void num(cJSON *o, const char *key, int64_t v)
{
    cJSON_AddNumberToObject(o, key, (double)v);
}

cJSON *categories_object(const int64_t bytes[MS_CAT_COUNT])
{
    cJSON *o = cJSON_CreateObject();
    for (int c = 0; c < MS_CAT_COUNT; c++)
        num(o, ms_category_name((ms_category)c), bytes[c]);
    return o;
}

/* Times are null on a trace without times (its time_us are event indexes). */
static cJSON *point_json(const ms_category_point *p, int64_t t0, bool times)
{
    cJSON *o = cJSON_CreateObject();
    num(o, "event", p->event);
    if (times) {
        num(o, "time_us", p->time_us);
        cJSON_AddNumberToObject(o, "seconds", cli_seconds(t0, p->time_us));
    } else {
        cJSON_AddNullToObject(o, "time_us");
        cJSON_AddNullToObject(o, "seconds");
    }
    num(o, "bytes", p->bytes);
    cJSON_AddItemToObject(o, "categories", categories_object(p->by));
    return o;
}

typedef struct big {
    size_t index;
    uint64_t size;
} big;

static int by_size_desc(const void *a, const void *b)
{
    uint64_t x = ((const big *)a)->size, y = ((const big *)b)->size;
    return (x < y) - (x > y);
}

static cJSON *explain_one(const ms_snapshot *s, const ms_categories *c, size_t index)
{
    const ms_alloc *a = &ms_categories_timeline(c)->allocs[index];
    cJSON *e = cJSON_CreateObject();
    num(e, "alloc_index", (int64_t)index);
    num(e, "bytes", (int64_t)a->size);
    num(e, "alloc_event", a->alloc_event);
    num(e, "free_event", a->free_event);
    ms_category_reason r = ms_categories_reason(c, index);
    cJSON_AddStringToObject(e, "category", ms_category_name(ms_categories_of(c, index)));
    cJSON_AddStringToObject(e, "reason", ms_category_reason_name(r));
    cJSON_AddBoolToObject(e, "weak", ms_category_reason_weak(r));
    char site[512] = "(no stack)";
    uint32_t f = a->stack == MS_NO_STACK ? UINT32_MAX : ms_stack_site(s, a->stack);
    if (f != UINT32_MAX)
        ms_site_format(s, f, site, sizeof site);
    cJSON_AddStringToObject(e, "site", site);
    char why[512];
    ms_categories_explain(c, index, why, sizeof why);
    cJSON_AddStringToObject(e, "why", why);
    return e;
}

/* The biggest allocations alive at the peak, `top` of each category, each with why it
 * got its category: every category's choice is explained, not only the largest. */
static cJSON *explain_json(const ms_snapshot *s, const ms_categories *c, int top)
{
    const ms_timeline *t = ms_categories_timeline(c);
    int64_t p = t->peak_event;
    big *v = malloc((t->n_allocs ? t->n_allocs : 1) * sizeof *v);
    cJSON *arr = cJSON_CreateArray();
    if (!v)
        return arr;
    size_t n = 0;
    for (size_t i = 0; i < t->n_allocs; i++) {
        const ms_alloc *a = &t->allocs[i];
        if (a->alloc_event <= p && (a->free_event < 0 || a->free_event > p))
            v[n++] = (big){i, a->size};
    }
    qsort(v, n, sizeof *v, by_size_desc);
    int shown[MS_CAT_COUNT] = {0};
    for (int want = 0; want < MS_CAT_COUNT; want++) {
        for (size_t k = 0; k < n && shown[want] < top; k++) {
            if (ms_categories_of(c, v[k].index) != (ms_category)want)
                continue;
            shown[want]++;
            cJSON_AddItemToArray(arr, explain_one(s, c, v[k].index));
        }
    }
    free(v);
    return arr;
}

/* The optimizer identity at the last step; null on a run without one (inference) or
 * without gradients alive at it. */
static cJSON *identity_json(const ms_categories *c)
{
    ms_category_identity id;
    if (ms_categories_identity(&id, c, NULL) || !id.checked)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "holds", id.holds);
    if (id.optimizer[0]) {
        cJSON_AddStringToObject(o, "optimizer", id.optimizer);
        cJSON_AddStringToObject(o, "optimizer_from", id.optimizer_from_frames ? "frames"
                                                                             : "annotation");
    } else {
        cJSON_AddNullToObject(o, "optimizer");
        cJSON_AddNullToObject(o, "optimizer_from");
    }
    num(o, "states_per_parameter", id.states_per_parameter);
    if (id.measured_states_per_parameter >= 0)
        num(o, "measured_states_per_parameter", id.measured_states_per_parameter);
    else
        cJSON_AddNullToObject(o, "measured_states_per_parameter");
    if (id.state_names)
        cJSON_AddStringToObject(o, "state_names", id.state_names);
    else
        cJSON_AddNullToObject(o, "state_names");
    num(o, "event", id.event);
    num(o, "parameter", id.parameter);
    num(o, "trainable_parameter", id.trainable_parameter);
    num(o, "gradient", id.gradient);
    num(o, "optimizer_state", id.optimizer_state);
    num(o, "expected_optimizer_state", id.expected_optimizer_state);
    num(o, "state_before_trace", id.state_before_trace);
    if (id.off < MS_CAT_COUNT)
        cJSON_AddStringToObject(o, "off", ms_category_name(id.off));
    else
        cJSON_AddNullToObject(o, "off");
    num(o, "off_by_bytes", id.off_by);
    return o;
}

typedef struct leaks_job {
    ms_run *run;
    const ms_leak_report *lr;
    int rc;
} leaks_job;

static void *find_leaks(void *arg)
{
    leaks_job *j = arg;
    ms_error soft;
    j->rc = ms_run_leaks(&j->lr, j->run, &soft);
    return NULL;
}

cJSON *categories_device_json(const ms_snapshot *s, int device, const ms_timeline *tl,
                              const cat_query *q, ms_error *err)
{
    if (tl) {
        ms_categories *c = NULL;
        if (ms_categories_build(&c, s, device, tl, NULL, err))
            return NULL;
        cJSON *dev = categories_json_of(s, device, c, NULL, q, NULL);
        ms_categories_free(c);
        return dev;
    }
    /* The device's run, with the timeline categories need and no more. */
    ms_run *run = NULL;
    const ms_categories *c = NULL;
    ms_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.timeline_flags = MS_TIMELINE_ALLOCS | MS_TIMELINE_ACTIVE;
    cJSON *dev = NULL;
    const ms_leak_report *lr = NULL;
    ms_error soft;
    /* The leak findings, for what they hold at the end, on a second thread while this
     * one categorises; else first, and the run takes its iterations from them. A trace
     * they cannot read leaves "end" to ms_categories_end, which says so. */
    if (!ms_run_open(&run, s, device, &ro, err)) {
        leaks_job job = {run, NULL, 0};
        pthread_t th;
        bool threaded = cli_limits()->threads != 1 && ms_run_prepare_threads(run, &soft) == 0 &&
                        pthread_create(&th, NULL, find_leaks, &job) == 0;
        if (!threaded)
            find_leaks(&job);
        int rc = ms_run_categories(&c, run, err);
        if (threaded)
            pthread_join(th, NULL);
        lr = job.rc ? NULL : job.lr;
        ms_free_in_reserved pf;
        bool have_pf = !rc && ms_run_peak_free(&pf, run, &soft) == 0;
        if (!rc)
            dev = categories_json_of(s, device, c, lr, q, have_pf ? &pf : NULL);
        cJSON *shape = dev ? shape_json_of_run(run, err) : NULL;
        if (dev && !shape) {
            cJSON_Delete(dev);
            dev = NULL;
        }
        if (dev)
            cJSON_AddItemToObject(dev, "shape", shape);
    }
    ms_run_free(run);
    return dev;
}

/* `lr`: the device's leak findings when the caller has them (NULL: found here). */
cJSON *categories_json_of(const ms_snapshot *s, int device, const ms_categories *c,
                          const ms_leak_report *lr, const cat_query *q,
                          const ms_free_in_reserved *peak_free)
{
    const ms_timeline *t = ms_categories_timeline(c);
    const ms_iterations *it = ms_categories_iterations(c);
    int64_t t0 = t->t_first_us;
    cJSON *dev = cJSON_CreateObject();
    num(dev, "device", device);
    num(dev, "events", (int64_t)t->n_events);
    cJSON *iters_info = cJSON_AddObjectToObject(dev, "iteration_method");
    cJSON_AddStringToObject(iters_info, "method", ms_iter_method_name(it->method));
    cJSON_AddStringToObject(iters_info, "text", ms_iter_method_text(it->method));
    ms_category_phases ph;
    ms_categories_phases(&ph, c);
    cJSON *phases = cJSON_AddObjectToObject(dev, "phases");
    num(phases, "forward", (int64_t)ph.forward);
    num(phases, "backward", (int64_t)ph.backward);
    num(phases, "optimizer", (int64_t)ph.optimizer);
    cJSON *src = cJSON_AddArrayToObject(phases, "evidence");
    if (ph.from_annotations)
        cJSON_AddItemToArray(src, cJSON_CreateString("annotations"));
    if (ph.from_python_frames)
        cJSON_AddItemToArray(src, cJSON_CreateString("python-frames"));
    if (ph.from_engine_frames)
        cJSON_AddItemToArray(src, cJSON_CreateString("autograd-engine-frames"));
    if (ph.from_empty_stacks)
        cJSON_AddItemToArray(src, cJSON_CreateString("autograd-thread-empty-stacks"));
    cJSON_AddBoolToObject(phases, "no_stacks", ph.no_stacks);
    cJSON_AddBoolToObject(phases, "cuda_graph_pools", ph.cuda_graph_pools);
    cJSON *peak = point_json(ms_categories_peak(c), t0, t->has_times);
    if (peak_free)
        categories_add_peak_free(peak, peak_free);
    cJSON_AddItemToObject(dev, "peak", peak);
    /* What is left at the end and how much of it leaks hold; null when the leak analysis
     * cannot read this trace. */
    ms_category_end last;
    ms_error eerr;
    if (ms_categories_end(&last, c, lr, &eerr) == 0) {
        cJSON *o = point_json(&last.at, t0, t->has_times);
        num(o, "held_by_leaks_bytes", last.held_by_leaks_bytes);
        num(o, "leak_findings", (int64_t)last.leak_findings);
        cJSON_AddItemToObject(dev, "end", o);
    } else {
        cJSON_AddNullToObject(dev, "end");
    }

    cJSON *at = cJSON_AddArrayToObject(dev, "at");
    if (!t->has_times && q->n_at)
        num(dev, "at_unplaced", (int64_t)q->n_at); /* instants asked for, no clock to place them */
    for (size_t i = 0; t->has_times && i < q->n_at; i++) {
        int64_t us = q->at[i].is_us ? q->at[i].time_us
                                    : t0 + (int64_t)(q->at[i].seconds * 1e6 + 0.5);
        ms_category_point p;
        memset(&p, 0, sizeof p);
        p.event = ms_categories_event_at_time(c, us);
        ms_categories_at_event(p.by, c, p.event, NULL);
        for (int k = 0; k < MS_CAT_COUNT; k++)
            p.bytes += p.by[k];
        cJSON *o = point_json(&p, t0, true);
        /* time_us is the instant asked for; the state is the one after `event`. */
        cJSON_ReplaceItemInObject(o, "time_us", cJSON_CreateNumber((double)us));
        cJSON_ReplaceItemInObject(o, "seconds", cJSON_CreateNumber(cli_seconds(t0, us)));
        cJSON_AddStringToObject(o, "asked", q->at[i].text);
        /* An instant after the last event shows the state at the end; say so rather than
         * pass a typo (seconds for milliseconds) as a measurement. */
        cJSON_AddBoolToObject(o, "past_end", us > t->t_last_us);
        if (us > t->t_last_us)
            cJSON_AddNumberToObject(o, "end_seconds", cli_seconds(t0, t->t_last_us));
        cJSON_AddItemToArray(at, o);
    }

    cJSON *iters = cJSON_AddArrayToObject(dev, "iterations");
    size_t peak_iter = SIZE_MAX;
    for (size_t k = 0; k < it->n; k++) {
        const ms_category_point *end = ms_categories_iteration_end(c, k);
        const ms_category_point *pk = ms_categories_iteration_peak(c, k);
        cJSON *o = cJSON_CreateObject();
        num(o, "index", (int64_t)k + 1);
        num(o, "start_us", it->items[k].start_us);
        num(o, "end_us", it->items[k].end_us);
        num(o, "end_event", end->event);
        num(o, "end_bytes", end->bytes);
        cJSON_AddItemToObject(o, "at_end", categories_object(end->by));
        cJSON_AddItemToObject(o, "peak", point_json(pk, t0, t->has_times));
        cJSON_AddItemToArray(iters, o);
        if (peak_iter == SIZE_MAX || pk->bytes > ms_categories_iteration_peak(c, peak_iter)->bytes)
            peak_iter = k;
    }
    ms_category_formula f;
    if (peak_iter != SIZE_MAX && ms_categories_formula(&f, c, peak_iter, NULL) == 0) {
        cJSON *o = cJSON_AddObjectToObject(dev, "formula");
        num(o, "iteration", (int64_t)f.iteration + 1);
        cJSON_AddStringToObject(o, "form", ms_formula_form_name(f.form));
        num(o, "parameter", f.parameter);
        if (f.form == MS_FORM_INFERENCE) {
            num(o, "input", f.input);
            num(o, "activation_temporary", f.activation_temporary);
        } else {
            num(o, "optimizer_state", f.optimizer_state);
            num(o, "gradient", f.gradient);
            num(o, "optimizer_temporary", f.optimizer_temporary);
            num(o, "activation", f.activation);
        }
        num(o, "estimate", f.estimate);
        num(o, "measured_peak", f.measured_peak);
        /* The formula covers complete iterations; the run's real peak may be in the
         * unfinished one the trace ends in (an OOM's). */
        const ms_category_point *rp = ms_categories_peak(c);
        if (it->n_unfinished && rp->event >= it->items[it->n].start_event)
            num(o, "real_peak_unfinished_iteration", (int64_t)it->n + 1);
    } else {
        cJSON_AddNullToObject(dev, "formula");
    }
    cJSON_AddItemToObject(dev, "optimizer_identity", identity_json(c));
    if (q->explain)
        cJSON_AddItemToObject(dev, "explain", explain_json(s, c, q->explain_top));
    return dev;
}

cJSON *categories_file_json(const char *path, const ms_snapshot *s, const cat_query *q,
                            ms_error *err)
{
    cJSON *file = cJSON_CreateObject();
    cJSON_AddStringToObject(file, "path", path);
    cJSON *devices = cJSON_AddArrayToObject(file, "devices");
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        if (q->device >= 0 ? d != q->device : !cli_device_in_use(s, d))
            continue;
        cJSON *dev = categories_device_json(s, d, NULL, q, err);
        if (!dev) {
            cJSON_Delete(file);
            return NULL;
        }
        cJSON_AddItemToArray(devices, dev);
    }
    return file;
}

/* ------------------------------------------------------------------ text */

static double get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void size_text(double v, char *buf, size_t cap)
{
    ms_format_bytes((int64_t)v, buf, cap);
}

void categories_add_peak_free(cJSON *peak, const ms_free_in_reserved *f)
{
    num(peak, "free_in_reserved_bytes", (int64_t)f->free_bytes);
    num(peak, "free_blocks", (int64_t)f->free_blocks);
    num(peak, "largest_free_block_bytes", (int64_t)f->largest_free);
    cJSON_AddBoolToObject(peak, "free_approximate", f->approximate);
}

bool categories_peak_free_text(const cJSON *peak, char *buf, size_t cap)
{
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(peak, "free_in_reserved_bytes")))
        return false;
    char a[32], b[32];
    double pieces = get(peak, "free_blocks");
    size_text(get(peak, "free_in_reserved_bytes"), a, sizeof a);
    size_text(get(peak, "largest_free_block_bytes"), b, sizeof b);
    snprintf(buf, cap, "at the peak, free inside reserved segments: %s in %.0f piece%s, largest %s%s",
             a, pieces, pieces == 1 ? "" : "s", b,
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(peak, "free_approximate"))
                 ? " (approximate)"
                 : "");
    return true;
}


void categories_print_line(FILE *out, const cJSON *cats, double total)
{
    int first = 1;
    for (int c = 0; c < MS_CAT_COUNT; c++) {
        const char *name = ms_category_name((ms_category)c);
        double v = get(cats, name);
        if (v <= 0)
            continue;
        char a[32];
        size_text(v, a, sizeof a);
        fprintf(out, "%s%s %s (%.0f%%)", first ? "" : ", ", name, a,
                total > 0 ? 100.0 * v / total : 0.0);
        first = 0;
    }
    if (first)
        fprintf(out, "nothing alive");
}

typedef struct column {
    char head[48];
    const cJSON *cats;
    double total;
} column;

static void print_table(FILE *out, const column *col, size_t ncol)
{
    fprintf(out, "  %-16s", "category");
    for (size_t k = 0; k < ncol; k++)
        fprintf(out, "  %19s", col[k].head);
    fputc('\n', out);
    for (int c = 0; c <= MS_CAT_COUNT; c++) {
        const char *name = c < MS_CAT_COUNT ? ms_category_name((ms_category)c) : "total";
        fprintf(out, "  %-16s", name);
        for (size_t k = 0; k < ncol; k++) {
            double v = c < MS_CAT_COUNT ? get(col[k].cats, name) : col[k].total;
            char a[32];
            size_text(v, a, sizeof a);
            fprintf(out, "  %12s %5.1f%%", a, col[k].total > 0 ? 100.0 * v / col[k].total : 0.0);
        }
        fputc('\n', out);
    }
}

/* The identity, the numbers on both sides and whether it holds; where it fails, on a
 * second line, which side the other two contradict and by how much. */
static void print_identity(FILE *out, const cJSON *id)
{
    if (!cJSON_IsObject(id))
        return;
    char st[32], tp[32], gr[32], fr[32], by[32];
    double k = get(id, "states_per_parameter");
    size_text(get(id, "optimizer_state"), st, sizeof st);
    size_text(get(id, "trainable_parameter"), tp, sizeof tp);
    size_text(get(id, "gradient"), gr, sizeof gr);
    double frozen = get(id, "parameter") - get(id, "trainable_parameter") -
                    get(id, "state_before_trace");
    size_text(frozen, fr, sizeof fr);
    const char *opt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(id, "optimizer"));
    const char *names = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(id, "state_names"));
    bool holds = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(id, "holds"));
    fprintf(out, "  optimizer identity (%s, k=%.0f", opt ? cli_term(opt) : "optimizer not named",
            k);
    if (names)
        fprintf(out, ": %s", names);
    fprintf(out, "): state %s %s %.0f x trainable parameters %s, gradients %s: %s", st,
            holds ? "=" : "vs", k, tp, gr, holds ? "holds" : "fails");
    if (frozen > 0)
        fprintf(out, "; %s of parameters have no gradient (frozen)", fr);
    const cJSON *mk = cJSON_GetObjectItemCaseSensitive(id, "measured_states_per_parameter");
    if (cJSON_IsNumber(mk) && mk->valuedouble != k)
        fprintf(out, "; the sizes show %.0f state%s a gradient, which %s does not keep",
                mk->valuedouble, mk->valuedouble == 1 ? "" : "s", opt ? cli_term(opt) : "it");
    fputc('\n', out);
    if (holds)
        return;
    const char *off = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(id, "off"));
    double d = get(id, "off_by_bytes");
    size_text(d < 0 ? -d : d, by, sizeof by);
    const char *dir = d < 0 ? "short" : "over";
    if (off && !strcmp(off, "parameter"))
        fprintf(out, "    the parameters are %s %s: the gradients%s mirror parameters that sit "
                     "in other categories\n",
                by, dir, k > 0 ? " and the state" : "");
    else if (off && !strcmp(off, "optimizer_state") && d < 0 &&
             get(id, "state_before_trace") > 0) {
        char pre[32];
        size_text(get(id, "state_before_trace"), pre, sizeof pre);
        fprintf(out, "    the optimizer state is %s short: made before the trace began, it is "
                     "among the parameters alive before the first event (%s of them repeat "
                     "the gradients' sizes)\n",
                by, pre);
    } else if (off && !strcmp(off, "optimizer_state"))
        fprintf(out, "    the optimizer state is %s %s (the parameters and gradients agree)\n",
                by, dir);
    else if (off && !strcmp(off, "gradient"))
        fprintf(out, "    the gradients are %s %s (the parameters and state agree)\n", by, dir);
    else
        fprintf(out, "    no two sides agree (the state is %s %s)\n", by, dir);
}

static void print_device(FILE *out, const cJSON *dev)
{
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(dev, "phases");
    const cJSON *im = cJSON_GetObjectItemCaseSensitive(dev, "iteration_method");
    const cJSON *iters = cJSON_GetObjectItemCaseSensitive(dev, "iterations");
    int nit = cJSON_GetArraySize(iters);
    fprintf(out, "device %.0f: %d iteration%s (%s); phases: %.0f forward, %.0f backward, "
                 "%.0f optimizer step",
            get(dev, "device"), nit, nit == 1 ? "" : "s",
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(im, "method")),
            get(ph, "forward"), get(ph, "backward"), get(ph, "optimizer"));
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(ph, "evidence");
    int first = 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        fprintf(out, "%s%s", first ? " (from " : ", ", cli_term(cJSON_GetStringValue(e)));
        first = 0;
    }
    fprintf(out, "%s\n", first ? "" : ")");
    shape_print_json(out, cJSON_GetObjectItemCaseSensitive(dev, "shape"), 2, 0);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ph, "no_stacks")))
        fprintf(out, "  no stacks were recorded (context='state' or None): what the iterations "
                     "made is 'other', not guessed\n");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ph, "cuda_graph_pools")))
        fprintf(out, "  CUDA-graph pools: graph replays allocate nothing, so what a replay "
                     "writes (gradients included) is in the pool's reserved memory, in no category\n");
    if (get(ph, "forward") + get(ph, "backward") + get(ph, "optimizer") == 0)
        fprintf(out, "  no forward, backward or optimizer phase found: every allocation is "
                     "'other' (the stacks and annotations say nothing)\n");

    column col[16];
    size_t ncol = 0;
    const cJSON *peak = cJSON_GetObjectItemCaseSensitive(dev, "peak");
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(peak, "seconds")))
        snprintf(col[ncol].head, sizeof col[ncol].head, "peak %.3fs", get(peak, "seconds"));
    else
        snprintf(col[ncol].head, sizeof col[ncol].head, "peak #%.0f", get(peak, "event"));
    col[ncol].cats = cJSON_GetObjectItemCaseSensitive(peak, "categories");
    col[ncol++].total = get(peak, "bytes");
    const cJSON *a;
    if (get(dev, "at_unplaced") > 0)
        fprintf(out, "  --at: %.0f instant%s not placed: this PyTorch recorded no times\n",
                get(dev, "at_unplaced"), get(dev, "at_unplaced") == 1 ? "" : "s");
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(dev, "at"))
    {
        if (ncol >= 12)
            break;
        snprintf(col[ncol].head, sizeof col[ncol].head, "at %.3fs", get(a, "seconds"));
        col[ncol].cats = cJSON_GetObjectItemCaseSensitive(a, "categories");
        col[ncol++].total = get(a, "bytes");
    }
    /* Iteration ends: all of a few, else the first two and the last. */
    for (int k = 0; k < nit && ncol < 16; k++) {
        if (nit > 3 && k >= 2 && k < nit - 1)
            continue;
        const cJSON *x = cJSON_GetArrayItem(iters, k);
        snprintf(col[ncol].head, sizeof col[ncol].head, "end of #%d", k + 1);
        col[ncol].cats = cJSON_GetObjectItemCaseSensitive(x, "at_end");
        col[ncol++].total = get(x, "end_bytes");
    }
    print_table(out, col, ncol);
    char free_line[256];
    if (categories_peak_free_text(peak, free_line, sizeof free_line))
        fprintf(out, "  %s\n", free_line);
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(dev, "at"))
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "past_end")))
            fprintf(out, "  (at %.3fs lies past the end of the trace at %.3fs: its column is the "
                         "state at the end)\n",
                    get(a, "seconds"), get(a, "end_seconds"));
    if (nit == 4)
        fprintf(out, "  (the end of iteration 3 is in --json)\n");
    else if (nit > 4)
        fprintf(out, "  (the ends of iterations 3..%d are in --json)\n", nit - 1);
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(dev, "end");
    if (cJSON_IsObject(end)) {
        /* Leaked tensors sit in whatever category their phase gave them; this line says
         * how much of the end they are. */
        char held[32];
        size_text(get(end, "held_by_leaks_bytes"), held, sizeof held);
        double nf = get(end, "leak_findings");
        fprintf(out, "  at end: ");
        categories_print_line(out, cJSON_GetObjectItemCaseSensitive(end, "categories"),
                              get(end, "bytes"));
        fprintf(out, "; held by leaks: %s (%.0f finding%s)\n", held, nf, nf == 1 ? "" : "s");
    }

    const cJSON *f = cJSON_GetObjectItemCaseSensitive(dev, "formula");
    const char *form = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "form"));
    if (cJSON_IsObject(f) && form && !strcmp(form, "inference")) {
        char p[32], in[32], act[32], est[32], meas[32];
        size_text(get(f, "parameter"), p, sizeof p);
        size_text(get(f, "input"), in, sizeof in);
        size_text(get(f, "activation_temporary"), act, sizeof act);
        size_text(get(f, "estimate"), est, sizeof est);
        size_text(get(f, "measured_peak"), meas, sizeof meas);
        fprintf(out, "  peak iteration %.0f (inference: no backward, no optimizer step): "
                     "parameters + inputs and KV caches + activations and temporaries\n",
                get(f, "iteration"));
        fprintf(out, "    = %s + %s + %s = %s; measured peak %s\n", p, in, act, est, meas);
        const cJSON *x = cJSON_GetArrayItem(iters, (int)get(f, "iteration") - 1);
        const cJSON *pc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(x, "peak"), "categories");
        if (pc) {
            char w[32], ot[32];
            size_text(get(pc, "workspace"), w, sizeof w);
            size_text(get(pc, "other"), ot, sizeof ot);
            fprintf(out, "    not in the formula, at that peak: workspace %s, other %s\n", w, ot);
        }
    } else if (cJSON_IsObject(f)) {
        char p[32], o[32], g[32], t[32], act[32], est[32], meas[32];
        size_text(get(f, "parameter"), p, sizeof p);
        size_text(get(f, "optimizer_state"), o, sizeof o);
        size_text(get(f, "gradient"), g, sizeof g);
        size_text(get(f, "optimizer_temporary"), t, sizeof t);
        size_text(get(f, "activation"), act, sizeof act);
        size_text(get(f, "estimate"), est, sizeof est);
        size_text(get(f, "measured_peak"), meas, sizeof meas);
        fprintf(out, "  peak iteration %.0f: parameters + optimizer state + max(gradients + "
                     "optimizer intermediates, activations)\n",
                get(f, "iteration"));
        fprintf(out, "    = %s + %s + max(%s + %s, %s) = %s; measured peak %s\n", p, o, g, t, act,
                est, meas);
        /* What the formula leaves out, at that iteration's peak. */
        const cJSON *x = cJSON_GetArrayItem(iters, (int)get(f, "iteration") - 1);
        const cJSON *pc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(x, "peak"), "categories");
        if (pc) {
            char w[32], tm[32], ot[32];
            size_text(get(pc, "workspace"), w, sizeof w);
            size_text(get(pc, "temporary"), tm, sizeof tm);
            size_text(get(pc, "other"), ot, sizeof ot);
            fprintf(out, "    not in the formula, at that peak: workspace %s, temporaries %s, "
                         "other %s\n",
                    w, tm, ot);
        }
        if (get(f, "real_peak_unfinished_iteration") > 0) {
            char real[32];
            size_text(get(cJSON_GetObjectItemCaseSensitive(dev, "peak"), "bytes"), real, sizeof real);
            fprintf(out, "    the real peak, %s, is in iteration %.0f, unfinished (the trace ends "
                         "in it, at an OOM)\n",
                    real, get(f, "real_peak_unfinished_iteration"));
        }
    }
    print_identity(out, cJSON_GetObjectItemCaseSensitive(dev, "optimizer_identity"));
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(dev, "explain");
    if (cJSON_IsArray(ex)) {
        fprintf(out, "  why: the biggest allocations of each category alive at the peak\n");
        cJSON_ArrayForEach(e, ex)
        {
            char b[32];
            size_text(get(e, "bytes"), b, sizeof b);
            fprintf(out, "  %12s  %-15s %s\n  %12s  %-15s %s\n", b,
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "category")),
                    cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "site"))), "", "",
                    cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "why"))));
        }
    }
}

void categories_print_file(FILE *out, const cJSON *file)
{
    fprintf(out, "%s\n", cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(file, "path"))));
    const cJSON *devices = cJSON_GetObjectItemCaseSensitive(file, "devices");
    if (cJSON_GetArraySize(devices) == 0)
        fprintf(out, "no device has events or segments\n");
    const cJSON *dev;
    cJSON_ArrayForEach(dev, devices) print_device(out, dev);
}
