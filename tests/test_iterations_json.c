/* The iterations JSON that `summary`, `leaks --json` and ms_run_json share (the library's
 * builder), and the tool's text printed from it. cli/ is not a library, so the printers'
 * source is compiled into this test. */
#include "cli_util.c"
#include "iterations_json.c"
#include "term_text.c"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json/json_writer.h"
#include "memsnap/run.h"

static char *printed_struct(const ms_iterations *it, const ms_idle *idle, int64_t t0)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    leaks_iterations_print(f, it, idle, t0, 2);
    fclose(f);
    return buf;
}

static char *printed_json(const cJSON *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    leaks_iterations_print_json(f, o, 2);
    fclose(f);
    return buf;
}

static void check_file(const char *path, int expect_n, const char *expect_method)
{
    ms_snapshot *s = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_snapshot_read_file(&s, path, NULL, &err), 0);
    if (!s)
        return;
    ms_iterations *it = NULL;
    CHECK_EQ_INT(ms_iterations_find(&it, s, 0, NULL, NULL, &err), 0);
    const ms_trace *tr0 = ms_snapshot_trace(s, 0);
    cJSON *o = it ? leaks_iterations_to_json(it, NULL, tr0->n ? tr0->time_us[0] : 0) : NULL;
    CHECK_TRUE(o != NULL);
    /* The run's view (ms_run_json) finds the same iterations. */
    ms_run *run = NULL;
    char *rj = NULL;
    CHECK_EQ_INT(ms_run_open(&run, s, 0, NULL, &err), 0);
    CHECK_EQ_INT(run ? ms_run_json(&rj, NULL, run, "iterations", &err) : -1, 0);
    cJSON *ro = rj ? cJSON_Parse(rj) : NULL;
    CHECK_TRUE(ro && cJSON_GetObjectItem(ro, "count") &&
               (int)cJSON_GetObjectItem(ro, "count")->valuedouble == expect_n);
    cJSON_Delete(ro);
    ms_free(rj);
    CHECK_TRUE(run == NULL || ms_run_json(&rj, NULL, run, "nonsense", &err) == MS_ERR_ARG);
    /* Every other view parses, and says what the run's results say. */
    static const char *const views[] = {"summary", "shape",     "leaks",
                                        "categories", "ooms", "segments"};
    for (size_t v = 0; run && v < sizeof views / sizeof views[0]; v++) {
        size_t len = 0;
        rj = NULL;
        CHECK_EQ_INT(ms_run_json(&rj, &len, run, views[v], &err), 0);
        cJSON *vo = rj ? cJSON_Parse(rj) : NULL;
        CHECK_TRUE(vo != NULL && len == strlen(rj));
        const ms_oom_report *orep = NULL;
        const ms_leak_report *lrep = NULL;
        if (vo && !strcmp(views[v], "ooms") && ms_run_ooms(&orep, run, &err) == 0)
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(vo, "ooms")), orep->n);
        if (vo && !strcmp(views[v], "leaks") && ms_run_leaks(&lrep, run, &err) == 0)
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(vo, "leaks")), lrep->n);
        const ms_timeline *tl = NULL;
        if (vo && !strcmp(views[v], "summary") && ms_run_timeline(&tl, run, &err) == 0)
            CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(vo, "peak"), "bytes")->valuedouble,
                         tl->peak_bytes);
        /* The states at the peak and at the end (one when they are one event), each kept
         * as text of its own: laid out as the writer lays out the whole. */
        if (vo && !strcmp(views[v], "segments") && ms_run_timeline(&tl, run, &err) == 0) {
            const cJSON *at = cJSON_GetObjectItem(vo, "at");
            int64_t last = (int64_t)ms_snapshot_trace(s, 0)->n - 1;
            CHECK_EQ_INT(cJSON_GetArraySize(at), tl->peak_event == last ? 1 : 2);
            CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetArrayItem(at, 0), "event")->valuedouble,
                         tl->peak_event);
            CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetArrayItem(at, -1 + cJSON_GetArraySize(at)),
                                             "event")->valuedouble,
                         last);
            char *again = ms__json_format(vo, true, NULL);
            CHECK_TRUE(again && !strcmp(again, rj));
            free(again);
        }
        cJSON_Delete(vo);
        ms_free(rj);
    }
    ms_run_free(run);
    if (o && it) {
        CHECK_EQ_INT(cJSON_GetObjectItem(o, "count")->valuedouble, expect_n);
        CHECK_TRUE(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "method")),
                           expect_method));
        cJSON *items = cJSON_GetObjectItem(o, "items");
        CHECK_EQ_INT(cJSON_GetArraySize(items), expect_n);
        for (int k = 0; k < cJSON_GetArraySize(items) && (size_t)k < it->n; k++) {
            cJSON *e = cJSON_GetArrayItem(items, k);
            CHECK_EQ_INT(cJSON_GetObjectItem(e, "start_event")->valuedouble,
                         it->items[k].start_event);
            CHECK_EQ_INT(cJSON_GetObjectItem(e, "end_event")->valuedouble,
                         it->items[k].end_event);
            CHECK_EQ_INT(cJSON_GetObjectItem(e, "live_end_bytes")->valuedouble,
                         it->items[k].live_end_bytes);
        }
        /* Microsecond times survive the trip through text exactly. */
        char *text = cJSON_PrintUnformatted(o);
        cJSON *back = text ? cJSON_Parse(text) : NULL;
        cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(back, "items"), 0);
        if (it->n)
            CHECK_TRUE(first && (int64_t)cJSON_GetObjectItem(first, "end_us")->valuedouble ==
                                    it->items[0].end_us);
        cJSON_Delete(back);
        free(text);
        /* Text from the struct and from the JSON agree line for line, with and without
         * the idle time. */
        const ms_trace *tr = ms_snapshot_trace(s, 0);
        int64_t t0 = tr->n ? tr->time_us[0] : 0;
        char *a = printed_struct(it, NULL, t0), *b = printed_json(o);
        CHECK_TRUE(a && b && !strcmp(a, b));
        if (a && b && strcmp(a, b))
            fprintf(stderr, "struct:\n%s\njson:\n%s\n", a, b);
        free(a);
        free(b);
        ms_idle *idle = NULL;
        CHECK_EQ_INT(ms_idle_find(&idle, tr, it, NULL, &err), 0);
        cJSON *oi = idle ? leaks_iterations_to_json(it, idle, t0) : NULL;
        a = printed_struct(it, idle, t0);
        b = oi ? printed_json(oi) : NULL;
        CHECK_TRUE(a && b && !strcmp(a, b));
        if (a && b && strcmp(a, b))
            fprintf(stderr, "struct:\n%s\njson:\n%s\n", a, b);
        free(a);
        free(b);
        cJSON_Delete(oi);
        ms_idle_free(idle);
    }
    cJSON_Delete(o);
    ms_iterations_free(it);
    ms_snapshot_free(s);
}

int main(void)
{
    check_file("testdata/leak_layers.pickle", 3, "optimizer-annotation");
    check_file("testdata/linear_infer.pickle", 3, "forward-calls");
    check_file("testdata/streams.pickle", 20, "baseline");
    check_file("testdata/oom.pickle", 0, "none");
    check_file("testdata/v3_pauses.pickle", 6, "optimizer-annotation");
    return check_finish("test_iterations_json");
}
