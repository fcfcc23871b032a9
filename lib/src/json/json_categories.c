/* Categories of one device as JSON (docs/json.md `categories --json`), shared by
 * `categories`, `summary`, `report` and ms_run_json. */
#include "json/json_categories.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_shape.h"
#include "json/json_util.h"
#include "order.h"
#include "memsnap/run.h"

cJSON *categories_object(const int64_t bytes[MS_CAT_COUNT])
{
    cJSON *o = cJSON_CreateObject();
    for (int c = 0; c < MS_CAT_COUNT; c++)
        ms__json_int(o, ms_category_name((ms_category)c), bytes[c]);
    return o;
}

/* Times are null on a trace without times (its time_us are event indexes). */
static cJSON *point_json(const ms_category_point *p, int64_t t0, bool times)
{
    cJSON *o = cJSON_CreateObject();
    ms__json_int(o, "event", p->event);
    if (times) {
        ms__json_int(o, "time_us", p->time_us);
        ms__json_num(o, "seconds", ms__seconds(t0, p->time_us));
    } else {
        cJSON_AddNullToObject(o, "time_us");
        cJSON_AddNullToObject(o, "seconds");
    }
    ms__json_int(o, "bytes", p->bytes);
    cJSON_AddItemToObject(o, "categories", categories_object(p->by));
    return o;
}

typedef struct big {
    size_t index;
    uint64_t size;
} big;

static int by_size_desc(const void *a, const void *b)
{
    return MS__CMP(((const big *)b)->size, ((const big *)a)->size);
}

static cJSON *explain_one(const ms_snapshot *s, const ms_categories *c, size_t index)
{
    const ms_alloc *a = &ms_categories_timeline(c)->allocs[index];
    cJSON *e = cJSON_CreateObject();
    ms__json_int(e, "alloc_index", (int64_t)index);
    ms__json_int(e, "bytes", (int64_t)a->size);
    ms__json_int(e, "alloc_event", a->alloc_event);
    ms__json_int(e, "free_event", a->free_event);
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
    ms__json_int(o, "states_per_parameter", id.states_per_parameter);
    if (id.measured_states_per_parameter >= 0)
        ms__json_int(o, "measured_states_per_parameter", id.measured_states_per_parameter);
    else
        cJSON_AddNullToObject(o, "measured_states_per_parameter");
    ms__json_str_or_null(o, "state_names", id.state_names);
    ms__json_int(o, "event", id.event);
    ms__json_int(o, "parameter", id.parameter);
    ms__json_int(o, "trainable_parameter", id.trainable_parameter);
    ms__json_int(o, "gradient", id.gradient);
    ms__json_int(o, "optimizer_state", id.optimizer_state);
    ms__json_int(o, "expected_optimizer_state", id.expected_optimizer_state);
    ms__json_int(o, "state_before_trace", id.state_before_trace);
    ms__json_str_or_null(o, "off", id.off < MS_CAT_COUNT ? ms_category_name(id.off) : NULL);
    ms__json_int(o, "off_by_bytes", id.off_by);
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

cJSON *categories_device_json(const ms_snapshot *s, int device, const cat_query *q,
                              unsigned threads, ms_error *err)
{
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
        bool threaded = threads != 1 && ms_run_prepare_threads(run, &soft) == 0 &&
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
    ms__json_int(dev, "device", device);
    ms__json_int(dev, "events", (int64_t)t->n_events);
    cJSON *iters_info = cJSON_AddObjectToObject(dev, "iteration_method");
    cJSON_AddStringToObject(iters_info, "method", ms_iter_method_name(it->method));
    cJSON_AddStringToObject(iters_info, "text", ms_iter_method_text(it->method));
    ms_category_phases ph;
    ms_categories_phases(&ph, c);
    cJSON *phases = cJSON_AddObjectToObject(dev, "phases");
    ms__json_int(phases, "forward", (int64_t)ph.forward);
    ms__json_int(phases, "backward", (int64_t)ph.backward);
    ms__json_int(phases, "optimizer", (int64_t)ph.optimizer);
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
        ms__json_int(o, "held_by_leaks_bytes", last.held_by_leaks_bytes);
        ms__json_int(o, "leak_findings", (int64_t)last.leak_findings);
        cJSON_AddItemToObject(dev, "end", o);
    } else {
        cJSON_AddNullToObject(dev, "end");
    }

    cJSON *at = cJSON_AddArrayToObject(dev, "at");
    if (!t->has_times && q->n_at)
        ms__json_int(dev, "at_unplaced", (int64_t)q->n_at); /* instants asked for, no clock to place them */
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
        cJSON_ReplaceItemInObject(o, "seconds", cJSON_CreateNumber(ms__seconds(t0, us)));
        cJSON_AddStringToObject(o, "asked", q->at[i].text);
        /* An instant after the last event shows the state at the end; say so rather than
         * pass a typo (seconds for milliseconds) as a measurement. */
        cJSON_AddBoolToObject(o, "past_end", us > t->t_last_us);
        if (us > t->t_last_us)
            ms__json_num(o, "end_seconds", ms__seconds(t0, t->t_last_us));
        cJSON_AddItemToArray(at, o);
    }

    cJSON *iters = cJSON_AddArrayToObject(dev, "iterations");
    size_t peak_iter = SIZE_MAX;
    for (size_t k = 0; k < it->n; k++) {
        const ms_category_point *end = ms_categories_iteration_end(c, k);
        const ms_category_point *pk = ms_categories_iteration_peak(c, k);
        cJSON *o = cJSON_CreateObject();
        ms__json_int(o, "index", (int64_t)k + 1);
        ms__json_int(o, "start_us", it->items[k].start_us);
        ms__json_int(o, "end_us", it->items[k].end_us);
        ms__json_int(o, "end_event", end->event);
        ms__json_int(o, "end_bytes", end->bytes);
        cJSON_AddItemToObject(o, "at_end", categories_object(end->by));
        cJSON_AddItemToObject(o, "peak", point_json(pk, t0, t->has_times));
        cJSON_AddItemToArray(iters, o);
        if (peak_iter == SIZE_MAX || pk->bytes > ms_categories_iteration_peak(c, peak_iter)->bytes)
            peak_iter = k;
    }
    ms_category_formula f;
    if (peak_iter != SIZE_MAX && ms_categories_formula(&f, c, peak_iter, NULL) == 0) {
        cJSON *o = cJSON_AddObjectToObject(dev, "formula");
        ms__json_int(o, "iteration", (int64_t)f.iteration + 1);
        cJSON_AddStringToObject(o, "form", ms_formula_form_name(f.form));
        ms__json_int(o, "parameter", f.parameter);
        if (f.form == MS_FORM_INFERENCE) {
            ms__json_int(o, "input", f.input);
            ms__json_int(o, "activation_temporary", f.activation_temporary);
        } else {
            ms__json_int(o, "optimizer_state", f.optimizer_state);
            ms__json_int(o, "gradient", f.gradient);
            ms__json_int(o, "optimizer_temporary", f.optimizer_temporary);
            ms__json_int(o, "activation", f.activation);
        }
        ms__json_int(o, "estimate", f.estimate);
        ms__json_int(o, "measured_peak", f.measured_peak);
        /* The formula covers complete iterations; the run's real peak may be in the
         * unfinished one the trace ends in (an OOM's). */
        const ms_category_point *rp = ms_categories_peak(c);
        if (it->n_unfinished && rp->event >= it->items[it->n].start_event)
            ms__json_int(o, "real_peak_unfinished_iteration", (int64_t)it->n + 1);
    } else {
        cJSON_AddNullToObject(dev, "formula");
    }
    cJSON_AddItemToObject(dev, "optimizer_identity", identity_json(c));
    if (q->explain)
        cJSON_AddItemToObject(dev, "explain", explain_json(s, c, q->explain_top));
    return dev;
}

cJSON *categories_file_json(const char *path, const ms_snapshot *s, const cat_query *q,
                            unsigned threads, ms_error *err)
{
    cJSON *file = cJSON_CreateObject();
    cJSON_AddStringToObject(file, "path", path);
    cJSON *devices = cJSON_AddArrayToObject(file, "devices");
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        if (q->device >= 0 ? d != q->device : !ms__device_in_use(s, d))
            continue;
        cJSON *dev = categories_device_json(s, d, q, threads, err);
        if (!dev) {
            cJSON_Delete(file);
            return NULL;
        }
        cJSON_AddItemToArray(devices, dev);
    }
    return file;
}

void categories_add_peak_free(cJSON *peak, const ms_free_in_reserved *f)
{
    ms__json_int(peak, "free_in_reserved_bytes", (int64_t)f->free_bytes);
    ms__json_int(peak, "free_blocks", (int64_t)f->free_blocks);
    ms__json_int(peak, "largest_free_block_bytes", (int64_t)f->largest_free);
    cJSON_AddBoolToObject(peak, "free_approximate", f->approximate);
}
