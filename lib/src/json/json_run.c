/* ms_run_json: every analysis of a run as JSON text, through the builders the tool's
 * --json output uses, so a binding needs no JSON library of its own and reads what
 * `memsnap <command> --json` writes. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json/json_categories.h"
#include "json/json_iterations.h"
#include "json/json_leaks.h"
#include "json/json_oom.h"
#include "json/json_run.h"
#include "json/json_segments.h"
#include "json/json_shape.h"
#include "json/json_summary.h"
#include "json/json_util.h"
#include "json/json_writer.h"
#include "memsnap/run.h"

/* Sites at the peak that "summary" lists, as `memsnap summary --json` does by default. */
#define RUN_JSON_TOP_SITES 10

static cJSON *iterations_of(ms_run *run, ms_error *err)
{
    const ms_iterations *it = NULL;
    const ms_idle *idle = NULL;
    const ms_timeline *t = NULL;
    const ms_shape *sh = NULL;
    if (ms_run_timeline(&t, run, err) || ms_run_iterations(&it, run, err) ||
        ms_run_idle(&idle, run, err) || ms_run_shape(&sh, run, err))
        return NULL;
    cJSON *o = leaks_iterations_to_json(it, idle, t->t_first_us);
    if (!o)
        return ms__json_nomem(err);
    shape_mark_iterations(o, sh, it);
    return o;
}

/* The `leaks --json` view of one device: its iterations and shape, its OOMs, the leak
 * totals and every finding (kinds leak, suspect and retained). */
static cJSON *leaks_of(ms_run *run, ms_error *err)
{
    const ms_snapshot *s = ms_run_snapshot(run);
    int device = ms_run_device(run);
    const ms_timeline *t = NULL;
    const ms_leak_report *r = NULL;
    if (ms_run_timeline(&t, run, err) || ms_run_leaks(&r, run, err))
        return NULL;
    ms_leak_totals lt = ms_leak_report_totals(r);
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return ms__json_nomem(err);
    ms__json_int(o, "device", device);
    cJSON *it = iterations_of(run, err);
    cJSON *shape = it ? shape_json_of_run(run, err) : NULL;
    if (!shape) {
        cJSON_Delete(it);
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddItemToObject(o, "iterations", it);
    cJSON_AddItemToObject(o, "shape", shape);
    ms__json_int(o, "oom_count", (int64_t)r->oom_count);
    if (r->oom_count) {
        ms__json_int(o, "first_oom_us", r->first_oom_us);
        ms__json_int(o, "first_oom_bytes", (int64_t)r->first_oom_bytes);
    }
    cJSON_AddItemToObject(o, "totals", summary_leaks_json(&lt));
    cJSON *leaks = cJSON_AddArrayToObject(o, "leaks");
    for (size_t i = 0; leaks && i < r->n; i++)
        cJSON_AddItemToArray(leaks, leaks_finding_json(s, t, r, &r->items[i], device));
    return o;
}

static cJSON *categories_of(ms_run *run, ms_error *err)
{
    const ms_categories *c = NULL;
    const ms_leak_report *lr = NULL;
    ms_error soft;
    if (ms_run_categories(&c, run, err))
        return NULL;
    /* What leaks hold at the end; a trace the leak analysis cannot read leaves it null. */
    if (ms_run_leaks(&lr, run, &soft))
        lr = NULL;
    ms_free_in_reserved pf;
    bool have_pf = ms_run_peak_free(&pf, run, &soft) == 0;
    cat_query q;
    memset(&q, 0, sizeof q);
    q.device = ms_run_device(run);
    q.explain_top = 3;
    cJSON *dev = categories_json_of(ms_run_snapshot(run), q.device, c, lr, &q,
                                    have_pf ? &pf : NULL);
    if (!dev)
        return ms__json_nomem(err);
    cJSON *shape = shape_json_of_run(run, err);
    if (!shape) {
        cJSON_Delete(dev);
        return NULL;
    }
    cJSON_AddItemToObject(dev, "shape", shape);
    return dev;
}

/* {"device", "ooms": [...], "ooms_left_out"}: the device's OOM analyses. */
static cJSON *ooms_of(ms_run *run, ms_error *err)
{
    const ms_oom_report *r = NULL;
    if (ms_run_ooms(&r, run, err))
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "ooms") : NULL;
    cJSON *shape = arr && r->n ? shape_json_of_run(run, err) : NULL;
    if (!arr || (r->n && !shape)) {
        cJSON_Delete(o);
        return arr ? NULL : ms__json_nomem(err);
    }
    for (size_t i = 0; i < r->n; i++) {
        cJSON *e = oom_to_json(ms_run_snapshot(run), &r->items[i]);
        cJSON_AddItemToObject(e, "shape", cJSON_Duplicate(shape, true));
        cJSON_AddItemToArray(arr, e);
    }
    cJSON_Delete(shape);
    oom_left_out_json(o, r->n_events - r->n);
    return o;
}

static cJSON *view_of(ms_run *run, const char *what, ms_error *err)
{
    if (!strcmp(what, "summary"))
        return summary_run_device_json(run, RUN_JSON_TOP_SITES, err);
    if (!strcmp(what, "iterations"))
        return iterations_of(run, err);
    if (!strcmp(what, "shape"))
        return shape_json_of_run(run, err);
    if (!strcmp(what, "leaks"))
        return leaks_of(run, err);
    if (!strcmp(what, "categories"))
        return categories_of(run, err);
    if (!strcmp(what, "ooms"))
        return ooms_of(run, err);
    if (!strcmp(what, "segments")) {
        /* No instants asked: the peak and the end, as `segments --json` without --at. The
         * object stands alone, so its at[] elements sit two tabs deep. */
        seg_request q;
        memset(&q, 0, sizeof q);
        return segments_run_json(run, &q, 2, err);
    }
    ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET,
             "no JSON view \"%s\" (summary, iterations, shape, leaks, categories, ooms, "
             "segments)",
             what);
    return NULL;
}

int ms__json_text(char **out, size_t *len_out, bool args_ok, const char *fn,
                  ms__json_build_fn build, void *ctx, ms_error *err)
{
    if (!out || !args_ok)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "%s: NULL argument", fn);
    *out = NULL;
    if (len_out)
        *len_out = 0;
    ms_error local;
    if (!err)
        err = &local;
    ms_error_clear(err);
    cJSON *doc = build(ctx, err);
    if (!doc)
        return err->code ? err->code : MS_ERR_NOMEM;
    /* 15+-digit integers as integers, as every --json of the tool writes them. */
    *out = ms__json_format(doc, true, len_out);
    cJSON_Delete(doc);
    if (!*out)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "%s", ms_code_text(MS_ERR_NOMEM));
    return 0;
}

typedef struct view_ask {
    ms_run *run;
    const char *what;
} view_ask;

static cJSON *view_build(void *ctx, ms_error *err)
{
    const view_ask *v = ctx;
    return view_of(v->run, v->what, err);
}

int ms_run_json(char **out, size_t *len_out, ms_run *r, const char *what, ms_error *err)
{
    view_ask v = {r, what};
    return ms__json_text(out, len_out, r && what, "ms_run_json", view_build, &v, err);
}
