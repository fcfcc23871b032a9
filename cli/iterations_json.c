/* The text of the iterations table and of a leak's user frame, printed from the library's
 * JSON (json/json_iterations.h) or its results, so every view words them alike. */
#include "iterations_json.h"
#include "cli_util.h"
#include "term_text.h"

#include <stdlib.h>
#include <string.h>

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
    double before = (double)ms__iter_idle_us(idle, k, false) / 1e6;
    double inside = (double)ms__iter_idle_us(idle, k, true) / 1e6;
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
        if (ms__iter_idle_us(idle, k, false) > 0 || ms__iter_idle_us(idle, k, true) > 0)
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

static row row_json(const cJSON *e, bool times)
{
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(e, "footprint_bytes");
    /* busy_s where the idle is known, else the whole duration. */
    bool busy = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "busy_s"));
    row r = {cli_json_num(e, "start_s"), cli_json_num(e, busy ? "busy_s" : "duration_s"),
             cli_json_num(e, "idle_before_s"), cli_json_num(e, "idle_inside_s"), (int64_t)cli_json_num(e, "peak_bytes"),
             (int64_t)cli_json_num(e, "live_end_bytes"), cJSON_IsNumber(fp) ? (int64_t)fp->valuedouble : -1,
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "partial")), times,
             (int64_t)cli_json_num(e, "start_event"), (int64_t)cli_json_num(e, "end_event"), false};
    return r;
}

void leaks_iteration_idle_text(const cJSON *item, char *buf, size_t cap)
{
    row r = row_json(item, true);
    idle_words(&r, buf, cap);
}

void leaks_iterations_trailing_text(const cJSON *iterations, char *buf, size_t cap)
{
    double t = cli_json_num(iterations, "trailing_idle_s");
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
        col = col || cli_json_num(e, "idle_before_s") > 0 || cli_json_num(e, "idle_inside_s") > 0;
    }
    print_head(out, n, cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(iterations, "unfinished")),
               cli_json_str(iterations, "method"), cli_json_str(iterations, "method_text"),
               cli_json_str(iterations, "detail"), col, indent);
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
        print_trailing(out, cli_json_num(iterations, "trailing_idle_s"), indent);
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

