#include "iterations_json.h"
#include "term_text.h"

#include <stdlib.h>
#include <string.h>

void leaks_json_int(cJSON *obj, const char *key, int64_t v)
{
    cJSON_AddNumberToObject(obj, key, (double)v);
}

/* Idle of item k (before it, inside it), microseconds; 0 when unknown. */
static int64_t idle_of(const ms_idle *idle, size_t k, bool inside)
{
    if (!idle || k >= idle->n_items)
        return 0;
    return inside ? idle->idle_inside_us[k] : idle->idle_before_us[k];
}

cJSON *leaks_iterations_to_json(const ms_iterations *it, const ms_idle *idle, int64_t t0_us)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "method", ms_iter_method_name(it->method));
    cJSON_AddStringToObject(o, "method_text", ms_iter_method_text(it->method));
    cJSON_AddStringToObject(o, "detail", it->detail);
    leaks_json_int(o, "count", (int64_t)(it->n));
    if (!it->has_times)
        cJSON_AddFalseToObject(o, "has_times"); /* the times below are null */
    cJSON *items = cJSON_AddArrayToObject(o, "items");
    if (!items) {
        cJSON_Delete(o);
        return NULL;
    }
    /* The iteration the trace ended in (an OOM) is not in items (count stays the
     * complete ones) but in `unfinished`, which views list last, marked, as oom does. */
    cJSON *unf = NULL;
    if (it->n_unfinished) {
        unf = cJSON_CreateObject();
        if (!unf) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    cJSON_AddItemToObject(o, "unfinished", unf ? unf : cJSON_CreateNull());
    for (size_t k = 0; k < it->n + (unf ? 1 : 0); k++) {
        const ms_iteration *x = &it->items[k];
        cJSON *e = k < it->n ? cJSON_CreateObject() : unf;
        if (!e) {
            cJSON_Delete(o);
            return NULL;
        }
        if (k < it->n)
            cJSON_AddItemToArray(items, e);
        leaks_json_int(e, "index", (int64_t)((k + 1)));
        if (it->has_times) {
            leaks_json_int(e, "start_us", (int64_t)(x->start_us));
            leaks_json_int(e, "end_us", (int64_t)(x->end_us));
            cJSON_AddNumberToObject(e, "start_s", (double)(x->start_us - t0_us) / 1e6);
            cJSON_AddNumberToObject(e, "duration_s", (double)(x->end_us - x->start_us) / 1e6);
            if (idle) {
                /* Busy and idle apart, by the rule the charts' run axis compresses by. */
                int64_t before = idle_of(idle, k, false), inside = idle_of(idle, k, true);
                cJSON_AddNumberToObject(e, "busy_s",
                                        (double)(x->end_us - x->start_us - inside) / 1e6);
                cJSON_AddNumberToObject(e, "idle_before_s", (double)before / 1e6);
                cJSON_AddNumberToObject(e, "idle_inside_s", (double)inside / 1e6);
            }
        } else {
            cJSON_AddNullToObject(e, "start_us");
            cJSON_AddNullToObject(e, "end_us");
            cJSON_AddNullToObject(e, "start_s");
            cJSON_AddNullToObject(e, "duration_s");
            if (idle) {
                cJSON_AddNullToObject(e, "busy_s");
                cJSON_AddNullToObject(e, "idle_before_s");
                cJSON_AddNullToObject(e, "idle_inside_s");
            }
        }
        leaks_json_int(e, "start_event", (int64_t)(x->start_event));
        leaks_json_int(e, "end_event", (int64_t)(x->end_event));
        leaks_json_int(e, "peak_bytes", (int64_t)(x->peak_bytes));
        leaks_json_int(e, "live_end_bytes", (int64_t)(x->live_end_bytes));
        cJSON_AddBoolToObject(e, "partial", x->partial);
    }
    if (idle) {
        if (it->has_times)
            cJSON_AddNumberToObject(o, "trailing_idle_s", (double)idle->trailing_us / 1e6);
        else
            cJSON_AddNullToObject(o, "trailing_idle_s");
    }
    return o;
}

cJSON *leaks_iterations_json(const ms_snapshot *s, int device, const ms_timeline *t,
                             const ms_iter_options *opt, ms_error *err)
{
    ms_iterations *it = NULL;
    if (ms_iterations_find(&it, s, device, t, opt, err))
        return NULL;
    const ms_trace *tr = ms_snapshot_trace(s, device);
    cJSON *o = leaks_iterations_to_json(it, NULL, tr->n ? tr->time_us[0] : 0);
    ms_iterations_free(it);
    if (!o && err) {
        err->code = MS_ERR_NOMEM;
        err->offset = MS_NO_OFFSET;
        snprintf(err->message, sizeof err->message, "%s", ms_code_text(MS_ERR_NOMEM));
    }
    return o;
}

/* One table for both printers: rows come from either the library struct or the JSON. */
typedef struct row {
    double start_s, duration_s;     /* duration_s: the busy time when idle is known */
    double idle_before_s, idle_inside_s;
    int64_t peak, live_end;
    int64_t footprint;              /* a CUDA-graph replay's live bytes plus the pool, -1 */
    bool partial;
    bool times;                     /* false: the trace has no times, events stand in */
    int64_t start_event, end_event;
    bool unfinished;                /* the trace ended in it: peak so far, no end */
} row;

/* With idle time in the table, the duration column is the busy time and a last column
 * holds the idle; a run without idle keeps the table it always had. */
static void print_head(FILE *out, size_t n, bool unfinished, const char *key, const char *text,
                       const char *detail, bool idle, int indent)
{
    if (!n) {
        fprintf(out, "%*siterations: none found (%s)\n", indent, "",
                ms_iter_method_text(MS_ITER_NONE));
        return;
    }
    fprintf(out, "%*siterations: %zu%s, found by %s (%s%s%s)\n", indent, "", n,
            unfinished ? " complete and the unfinished one the failure ended" : "", key,
            cli_term(text), detail[0] ? "; " : "", cli_term(detail));
    if (idle)
        fprintf(out, "%*s  %4s %10s %10s %12s %14s  %-12s %s\n", indent, "", "#", "start", "busy",
                "peak", "live at end", "growth", "idle");
    else
        fprintf(out, "%*s  %4s %10s %10s %12s %14s  %s\n", indent, "", "#", "start", "duration",
                "peak", "live at end", "growth");
}

/* "1.50 s", "254 ms", "4.2 ms", "310 µs": an idle stretch at a precision it shows. */
static void seconds_text(double s, char *buf, size_t cap)
{
    if (s >= 1)
        snprintf(buf, cap, "%.2f s", s);
    else if (s >= 0.01)
        snprintf(buf, cap, "%.0f ms", s * 1e3);
    else if (s >= 0.001)
        snprintf(buf, cap, "%.1f ms", s * 1e3);
    else
        snprintf(buf, cap, "%.0f µs", s * 1e6);
}

/* "+1.50 s idle before", "+254 ms idle inside", both, or "". */
static void idle_words(const row *x, char *buf, size_t cap)
{
    bool before = x->idle_before_s > 0, inside = x->idle_inside_s > 0;
    char a[32], b[32];
    seconds_text(x->idle_before_s, a, sizeof a);
    seconds_text(x->idle_inside_s, b, sizeof b);
    if (before && inside)
        snprintf(buf, cap, "+%s idle before, +%s inside", a, b);
    else if (before || inside)
        snprintf(buf, cap, "+%s idle %s", before ? a : b, before ? "before" : "inside");
    else if (cap)
        buf[0] = '\0';
}

static void print_row(FILE *out, size_t k, const row *x, const row *prev, bool idle, int indent)
{
    char peak[32], live[32], growth[40] = "";
    ms_format_bytes(x->peak, peak, sizeof peak);
    ms_format_bytes(x->live_end, live, sizeof live);
    if (prev) {
        int64_t d = x->live_end - prev->live_end;
        char db[32];
        ms_format_bytes(d < 0 ? -d : d, db, sizeof db);
        snprintf(growth, sizeof growth, "%s%s", d < 0 ? "-" : "+", db);
    }
    char start[32], dur[32];
    if (x->times) {
        snprintf(start, sizeof start, "%9.3fs", x->start_s);
        snprintf(dur, sizeof dur, "%9.3fs", x->duration_s);
    } else {
        snprintf(start, sizeof start, "event %lld", (long long)x->start_event);
        snprintf(dur, sizeof dur, "%lld ev", (long long)(x->end_event - x->start_event));
    }
    char line[384], iw[128] = "";
    char replay[64] = "";
    if (x->footprint >= 0) {
        char fb[32];
        ms_format_bytes(x->footprint, fb, sizeof fb);
        snprintf(replay, sizeof replay, "%sreplay: %s with the pool",
                 growth[0] && !idle ? "  " : "", fb);
    }
    if (idle)
        idle_words(x, iw, sizeof iw);
    if (x->unfinished)
        snprintf(line, sizeof line, "%*s  %4zu %10s %10s %12s %14s  %s", indent, "", k + 1, start,
                 dur, peak, "-", "unfinished: the failure (peak so far)");
    else if (idle)
        snprintf(line, sizeof line, "%*s  %4zu %10s %10s %12s %14s  %-12s %s%s%s", indent, "",
                 k + 1, start, dur, peak, live, growth, iw, replay,
                 x->partial ? "(partial: began before the trace)" : "");
    else
        snprintf(line, sizeof line, "%*s  %4zu %10s %10s %12s %14s  %s%s%s", indent, "", k + 1,
                 start, dur, peak, live, growth, replay,
                 x->partial ? "(partial: began before the trace)" : "");
    size_t len = strlen(line);
    while (len && line[len - 1] == ' ')
        line[--len] = 0;
    fprintf(out, "%s\n", line);
}

/* Long runs (thousands of steps) show their start and end; JSON has every one. */
static bool elided(FILE *out, size_t n, size_t *k, int indent)
{
    size_t head = n > 20 ? 8 : n, tail_from = n > 20 ? n - 8 : n;
    if (*k == head && *k < tail_from) {
        fprintf(out, "%*s  %4s (%zu more)\n", indent, "", "...", tail_from - head);
        *k = tail_from - 1;
        return true;
    }
    return false;
}

static row row_of(const ms_iterations *it, const ms_idle *idle, size_t k, int64_t t0_us)
{
    const ms_iteration *x = &it->items[k];
    double before = (double)idle_of(idle, k, false) / 1e6;
    double inside = (double)idle_of(idle, k, true) / 1e6;
    row r = {(double)(x->start_us - t0_us) / 1e6,
             (double)(x->end_us - x->start_us) / 1e6 - inside,
             before, inside, x->peak_bytes, x->live_end_bytes, -1, x->partial, it->has_times,
             x->start_event, x->end_event, x->unfinished};
    return r;
}

/* The line after the table: idle after the last iteration, which no iteration holds. */
static void print_trailing(FILE *out, double trailing_s, int indent)
{
    char t[32];
    seconds_text(trailing_s, t, sizeof t);
    if (trailing_s > 0)
        fprintf(out, "%*s  trailing idle: %s after the last iteration\n", indent, "", t);
}

/* Whether the table needs its idle column: some iteration had idle time. */
static bool idle_column(const ms_iterations *it, const ms_idle *idle)
{
    for (size_t k = 0; idle && k < it->n; k++)
        if (idle_of(idle, k, false) > 0 || idle_of(idle, k, true) > 0)
            return true;
    return false;
}

void leaks_iterations_print(FILE *out, const ms_iterations *it, const ms_idle *idle,
                            int64_t t0_us, int indent)
{
    bool col = it->has_times && idle_column(it, idle);
    print_head(out, it->n, it->n && it->n_unfinished, ms_iter_method_name(it->method),
               ms_iter_method_text(it->method), it->detail, col, indent);
    for (size_t k = 0; k < it->n; k++) {
        if (elided(out, it->n, &k, indent))
            continue;
        row x = row_of(it, idle, k, t0_us), p;
        if (k)
            p = row_of(it, idle, k - 1, t0_us);
        print_row(out, k, &x, k ? &p : NULL, col, indent);
    }
    if (it->n_unfinished) {
        row x = row_of(it, idle, it->n, t0_us);
        x.unfinished = true;
        print_row(out, it->n, &x, NULL, col, indent);
    }
    if (it->n && it->has_times && idle)
        print_trailing(out, (double)idle->trailing_us / 1e6, indent);
}

static double jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return v ? v : "";
}

static row row_json(const cJSON *e, bool times)
{
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(e, "footprint_bytes");
    /* busy_s where the idle is known, else the whole duration. */
    bool busy = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "busy_s"));
    row r = {jnum(e, "start_s"), jnum(e, busy ? "busy_s" : "duration_s"),
             jnum(e, "idle_before_s"), jnum(e, "idle_inside_s"), (int64_t)jnum(e, "peak_bytes"),
             (int64_t)jnum(e, "live_end_bytes"), cJSON_IsNumber(fp) ? (int64_t)fp->valuedouble : -1,
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "partial")), times,
             (int64_t)jnum(e, "start_event"), (int64_t)jnum(e, "end_event"), false};
    return r;
}

void leaks_iteration_idle_text(const cJSON *item, char *buf, size_t cap)
{
    row r = row_json(item, true);
    idle_words(&r, buf, cap);
}

void leaks_iterations_trailing_text(const cJSON *iterations, char *buf, size_t cap)
{
    double t = jnum(iterations, "trailing_idle_s");
    if (t > 0)
        seconds_text(t, buf, cap);
    else if (cap)
        buf[0] = '\0';
}

void leaks_iterations_print_json(FILE *out, const cJSON *iterations, int indent)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(iterations, "items");
    size_t n = (size_t)cJSON_GetArraySize(items);
    bool times = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(iterations, "has_times"));
    bool col = false;
    for (size_t k = 0; times && k < n; k++) {
        const cJSON *e = cJSON_GetArrayItem(items, (int)k);
        col = col || jnum(e, "idle_before_s") > 0 || jnum(e, "idle_inside_s") > 0;
    }
    print_head(out, n, cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(iterations, "unfinished")),
               jstr(iterations, "method"), jstr(iterations, "method_text"),
               jstr(iterations, "detail"), col, indent);
    for (size_t k = 0; k < n; k++) {
        if (elided(out, n, &k, indent))
            continue;
        row x = row_json(cJSON_GetArrayItem(items, (int)k), times), p;
        if (k)
            p = row_json(cJSON_GetArrayItem(items, (int)k - 1), times);
        print_row(out, k, &x, k ? &p : NULL, col, indent);
    }
    const cJSON *unf = cJSON_GetObjectItemCaseSensitive(iterations, "unfinished");
    if (n && cJSON_IsObject(unf)) {
        row x = row_json(unf, times);
        x.unfinished = true;
        print_row(out, n, &x, NULL, col, indent);
    }
    if (n && times)
        print_trailing(out, jnum(iterations, "trailing_idle_s"), indent);
}

/* "line": the frame's line, null when the file gave none (MS_LINE_UNKNOWN). */
static void frame_line_json(cJSON *o, const ms_frame *f)
{
    if (f->line == MS_LINE_UNKNOWN)
        cJSON_AddNullToObject(o, "line");
    else
        leaks_json_int(o, "line", f->line);
}

/* {"filename", "line", "function"} of a site frame, empty when unknown. */
static void site_json(cJSON *o, const ms_snapshot *s, uint32_t frame)
{
    if (frame == UINT32_MAX)
        return;
    const ms_frame *f = ms_snapshot_frame(s, frame);
    cJSON_AddStringToObject(o, "filename", ms_snapshot_string(s, f->filename));
    frame_line_json(o, f);
    cJSON_AddStringToObject(o, "function", ms_snapshot_string(s, f->name));
}

void leaks_user_frame_json(cJSON *o, const ms_snapshot *s, uint32_t frame)
{
    if (frame == UINT32_MAX || !ms_snapshot_frame(s, frame)) {
        cJSON_AddNullToObject(o, "user_frame");
        return;
    }
    const ms_frame *f = ms_snapshot_frame(s, frame);
    cJSON *u = cJSON_AddObjectToObject(o, "user_frame");
    if (!u)
        return;
    cJSON_AddStringToObject(u, "filename", ms_snapshot_string(s, f->filename));
    frame_line_json(u, f);
    cJSON_AddStringToObject(u, "name", ms_snapshot_string(s, f->name));
}

bool leaks_user_frame_text(const cJSON *uf, const char *site_file, double site_line, char *buf,
                           size_t cap)
{
    if (cap)
        buf[0] = 0;
    const char *file = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(uf, "filename"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(uf, "name"));
    const cJSON *line = cJSON_GetObjectItemCaseSensitive(uf, "line");
    if (!file || !name || !cap)
        return false;
    if (site_file && !strcmp(site_file, file) && cJSON_IsNumber(line) && line->valuedouble == site_line)
        return false;
    char shortp[512]; /* the path as sites show it */
    ms_path_format(file, shortp, sizeof shortp);
    if (cJSON_IsNumber(line))
        snprintf(buf, cap, "%s:%.0f %s", shortp, line->valuedouble, name);
    else
        snprintf(buf, cap, "%s:? %s", shortp, name);
    return true;
}

static void layer_json(cJSON *o, const ms_snapshot *s, uint32_t layer)
{
    char buf[160];
    if (layer != UINT32_MAX && ms_layer_format(s, layer, buf, sizeof buf) > 0)
        cJSON_AddStringToObject(o, "layer", buf);
    else
        cJSON_AddNullToObject(o, "layer");
}

cJSON *leaks_stack_json(const ms_snapshot *s, uint32_t stack)
{
    cJSON *a = cJSON_CreateArray();
    size_t n = 0;
    const uint32_t *fr = ms_snapshot_stack(s, stack, &n);
    for (size_t k = 0; a && k < n; k++) {
        const ms_frame *f = ms_snapshot_frame(s, fr[k]);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(a, e);
        cJSON_AddStringToObject(e, "filename", ms_snapshot_string(s, f->filename));
        frame_line_json(e, f);
        cJSON_AddStringToObject(e, "name", ms_snapshot_string(s, f->name));
        cJSON_AddStringToObject(e, "kind", ms_frame_kind_name(ms_frame_kind_of(s, fr[k])));
    }
    return a;
}

void leaks_finding_context(const ms_snapshot *s, const ms_timeline *t, const ms_leak_report *r,
                           const ms_leak *L, const char **compile_context,
                           const char **user_metadata)
{
    *compile_context = *user_metadata = NULL;
    const ms_trace *tr = ms_snapshot_trace(s, r->device);
    if (!tr || (!tr->compile_context && !tr->user_metadata))
        return;
    for (size_t k = 0; k < L->n_index; k++) {
        const ms_alloc *a = &t->allocs[r->alloc_index[L->first_index + k]];
        if (a->stack != L->stack)
            continue;
        if (a->alloc_event < 0 || (size_t)a->alloc_event >= tr->n)
            return;
        size_t e = (size_t)a->alloc_event;
        if (tr->compile_context && tr->compile_context[e] != MS_NO_STRING)
            *compile_context = ms_snapshot_string(s, tr->compile_context[e]);
        if (tr->user_metadata && tr->user_metadata[e] != MS_NO_STRING)
            *user_metadata = ms_snapshot_string(s, tr->user_metadata[e]);
        return;
    }
}

static void string_or_null(cJSON *o, const char *key, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

cJSON *leaks_finding_json(const ms_snapshot *s, const ms_timeline *t, const ms_leak_report *r,
                          const ms_leak *L, int device)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "kind", ms_leak_kind_name(L->kind));
    cJSON_AddStringToObject(e, "pattern", ms_leak_pattern_name(L->pattern));
    cJSON_AddStringToObject(e, "pattern_text", ms_leak_pattern_text(L->pattern));
    leaks_json_int(e, "device", device);
    site_json(cJSON_AddObjectToObject(e, "site"), s, L->site);
    leaks_user_frame_json(e, s, L->user_frame);
    layer_json(e, s, L->layer);
    leaks_json_int(e, "count", (int64_t)L->count);
    leaks_json_int(e, "bytes", (int64_t)L->bytes);
    leaks_json_int(e, "bytes_each", (int64_t)L->bytes_each_min);
    leaks_json_int(e, "bytes_each_max", (int64_t)L->bytes_each_max);
    cJSON *g = cJSON_AddObjectToObject(e, "growth_per_iteration");
    cJSON_AddNumberToObject(g, "count", L->growth_count);
    cJSON_AddNumberToObject(g, "bytes", L->growth_bytes);
    cJSON_AddNumberToObject(g, "allocated_bytes", L->growth_allocated_bytes);
    if (t->has_times) {
        leaks_json_int(e, "first_alloc_us", L->first_alloc_us);
        leaks_json_int(e, "last_alloc_us", L->last_alloc_us);
        cJSON_AddNumberToObject(e, "first_alloc_s", (double)(L->first_alloc_us - t->t_first_us) / 1e6);
        cJSON_AddNumberToObject(e, "last_alloc_s", (double)(L->last_alloc_us - t->t_first_us) / 1e6);
    } else { /* no clock: the event indexes stand in (first_alloc_us holds them) */
        cJSON_AddNullToObject(e, "first_alloc_us");
        cJSON_AddNullToObject(e, "last_alloc_us");
        cJSON_AddNullToObject(e, "first_alloc_s");
        cJSON_AddNullToObject(e, "last_alloc_s");
        leaks_json_int(e, "first_alloc_event", L->first_alloc_us);
        leaks_json_int(e, "last_alloc_event", L->last_alloc_us);
    }
    if (L->call_site != UINT32_MAX)
        site_json(cJSON_AddObjectToObject(e, "call_site"), s, L->call_site);
    else
        cJSON_AddNullToObject(e, "call_site");
    cJSON *members = cJSON_AddArrayToObject(e, "members");
    for (size_t m = 0; members && m < L->n_members; m++) {
        const ms_leak_member *M = &r->members[L->first_member + m];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(members, o);
        site_json(cJSON_AddObjectToObject(o, "site"), s, M->site);
        leaks_user_frame_json(o, s, M->user_frame);
        layer_json(o, s, M->layer);
        leaks_json_int(o, "count", (int64_t)M->count);
        leaks_json_int(o, "bytes", (int64_t)M->bytes);
        leaks_json_int(o, "bytes_each", (int64_t)M->bytes_each_min);
        leaks_json_int(o, "bytes_each_max", (int64_t)M->bytes_each_max);
        cJSON *mg = cJSON_AddObjectToObject(o, "growth_per_iteration");
        cJSON_AddNumberToObject(mg, "count", M->growth_count);
        cJSON_AddNumberToObject(mg, "bytes", M->growth_bytes);
        cJSON_AddNumberToObject(mg, "allocated_bytes", M->growth_allocated_bytes);
    }
    cJSON_AddItemToObject(e, "stack", leaks_stack_json(s, L->stack));
    const char *cc, *um;
    leaks_finding_context(s, t, r, L, &cc, &um);
    string_or_null(e, "compile_context", cc);
    string_or_null(e, "user_metadata", um);
    return e;
}
