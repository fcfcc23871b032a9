/* Each trace entry's compile_context and user_metadata (PyTorch 2.4+): read into two
 * per-event arrays of string ids, made only when some entry carries a value other than
 * the default ('N/A', ""). compile_ctx_recorded was recorded with
 * _record_memory_history(compile_context=True) and _set_memory_metadata("step=N"); its
 * truth.json counts the entries per value. Every other snapshot carries only defaults,
 * so its arrays must stay NULL. Each file is read by one thread and with the second
 * thread forced on (parallel_min_bytes = 1): both must agree. */
#include "check.h"

/* Entries per value of `arr` over every device, as "value" -> count, the default
 * counted under `def`, compared with truth's dump_scan.<key>. */
static void check_counts(const char *ctx, const ms_snapshot *s, int which, const cJSON *want,
                         const char *def)
{
    cJSON *have = cJSON_CreateObject();
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        const ms_trace *t = ms_snapshot_trace(s, d);
        const uint32_t *arr = which ? t->user_metadata : t->compile_context;
        CHECK_TRUE_IN(ctx, t->n == 0 || arr != NULL);
        for (size_t i = 0; i < t->n; i++) {
            const char *v = arr && arr[i] != MS_NO_STRING ? ms_snapshot_string(s, arr[i]) : def;
            CHECK_TRUE_IN(ctx, !arr || arr[i] == MS_NO_STRING || strcmp(v, def) != 0);
            cJSON *c = cJSON_GetObjectItemCaseSensitive(have, v);
            if (c)
                cJSON_SetNumberValue(c, c->valuedouble + 1);
            else
                cJSON_AddNumberToObject(have, v, 1);
        }
    }
    CHECK_EQ_INT_IN(ctx, cJSON_GetArraySize(have), cJSON_GetArraySize(want));
    const cJSON *w;
    cJSON_ArrayForEach(w, want)
    {
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(have, w->string);
        CHECK_EQ_INT_IN(w->string, h ? (long long)h->valuedouble : -1, (long long)w->valuedouble);
    }
    cJSON_Delete(have);
}

static void recorded(const ms_limits *lim, const char *ctx)
{
    cJSON *truth = check_truth_load("compile_ctx_recorded");
    const cJSON *scan = cJSON_GetObjectItemCaseSensitive(truth, "dump_scan");
    const cJSON *cc = cJSON_GetObjectItemCaseSensitive(scan, "compile_context_values");
    const cJSON *um = cJSON_GetObjectItemCaseSensitive(scan, "user_metadata_values");
    CHECK_TRUE_IN(ctx, cJSON_IsObject(cc) && cJSON_IsObject(um));
    ms_snapshot *s = NULL;
    ms_error err;
    CHECK_EQ_INT_IN(ctx, ms_snapshot_read_file(&s, "testdata/compile_ctx_recorded.pickle", lim, &err), 0);
    if (s && cc && um) {
        check_counts(ctx, s, 0, cc, "N/A");
        check_counts(ctx, s, 1, um, "");
    }
    ms_snapshot_free(s);
    cJSON_Delete(truth);
}

static void defaults_only(const char *path, const char *name, void *arg)
{
    (void)arg;
    if (strcmp(name, "compile_ctx_recorded") == 0)
        return;
    ms_limits lims[2] = {ms_limits_default(), ms_limits_default()};
    lims[0].parallel_min_bytes = 0;
    lims[1].parallel_min_bytes = 1;
    for (int k = 0; k < 2; k++) {
        ms_snapshot *s = NULL;
        ms_error err;
        CHECK_EQ_INT_IN(name, ms_snapshot_read_file(&s, path, &lims[k], &err), 0);
        for (int d = 0; s && d < ms_snapshot_device_count(s); d++) {
            const ms_trace *t = ms_snapshot_trace(s, d);
            CHECK_TRUE_IN(name, t->compile_context == NULL);
            CHECK_TRUE_IN(name, t->user_metadata == NULL);
        }
        ms_snapshot_free(s);
    }
}

/* `leaks --all --stack` and `leaks --all --json`: a finding whose representative
 * allocation was made in a compiled region under _set_memory_metadata("step=0") says so
 * (the 33 MiB cuBLAS workspace made in the first compiled forward); a file with only
 * defaults says nothing, and its JSON holds null. */
static void leaks_cli(const char *bin)
{
    char cmd[1024];
    int st = 0;
    snprintf(cmd, sizeof cmd, "'%s' leaks --all --stack testdata/compile_ctx_recorded.pickle", bin);
    char *out = check_run(cmd, &st);
    CHECK_EQ_INT(st, 0);
    CHECK_TRUE(out && strstr(out, "\n            compile context: Torch-Compiled Region: 1/0\n"
                                  "            user metadata: step=0\n"));
    CHECK_TRUE(out && strstr(out, "\n            user metadata: build\n"));
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' leaks --all --json testdata/compile_ctx_recorded.pickle", bin);
    out = check_run(cmd, &st);
    cJSON *doc = out ? cJSON_Parse(out) : NULL;
    const cJSON *leaks = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "files"), 0), "leaks");
    size_t compiled = 0, step0 = 0, nulls = 0;
    const cJSON *L;
    cJSON_ArrayForEach(L, leaks)
    {
        const cJSON *cc = cJSON_GetObjectItemCaseSensitive(L, "compile_context");
        const cJSON *um = cJSON_GetObjectItemCaseSensitive(L, "user_metadata");
        CHECK_TRUE(cc && um);
        compiled += cJSON_IsString(cc) && strcmp(cc->valuestring, "Torch-Compiled Region: 1/0") == 0;
        step0 += cJSON_IsString(um) && strcmp(um->valuestring, "step=0") == 0;
        nulls += cJSON_IsNull(cc);
    }
    CHECK_TRUE(compiled >= 1 && step0 >= 1 && nulls >= 1);
    cJSON_Delete(doc);
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' leaks --all --stack testdata/gpt2_train.pickle", bin);
    out = check_run(cmd, &st);
    CHECK_TRUE(out && strstr(out, "stack (innermost first") && !strstr(out, "compile context:") &&
               !strstr(out, "user metadata:"));
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' leaks --all --json testdata/gpt2_train.pickle", bin);
    out = check_run(cmd, &st);
    CHECK_TRUE(out && strstr(out, "\"compile_context\":\tnull") && !strstr(out, "\"compile_context\":\t\""));
    free(out);
}

/* `render --by compile` draws on the recorded trace; a trace without any real compile
 * context is refused with exit 2 and says how to record one. */
static void render_cli(const char *bin)
{
    char cmd[1024], dir[] = "/tmp/memsnap_cctx_XXXXXX";
    int st = 0;
    if (!mkdtemp(dir)) {
        check_fail("mkdtemp");
        return;
    }
    snprintf(cmd, sizeof cmd,
             "'%s' render --by compile testdata/compile_ctx_recorded.pickle -o %s/c.svg && head -c 5 %s/c.svg",
             bin, dir, dir);
    char *out = check_run(cmd, &st);
    CHECK_EQ_INT(st, 0);
    CHECK_TRUE(out && strncmp(out, "<?xml", 5) == 0); /* text is drawn as paths: see the PNG */
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' render --by compile testdata/gpt2_train.pickle -o %s/d.svg 2>&1", bin,
             dir);
    out = check_run(cmd, &st);
    CHECK_EQ_INT(st, 2);
    CHECK_TRUE(out && strstr(out, "this trace carries no compile context: record with "
                                  "_record_memory_history(compile_context=True)"));
    free(out);
    check_remove_dir(dir);
}

int main(void)
{
    ms_limits one = ms_limits_default(), two = ms_limits_default();
    one.parallel_min_bytes = 0;
    two.parallel_min_bytes = 1;
    recorded(&one, "one thread");
    recorded(&two, "two threads");
    CHECK_TRUE(check_each_snapshot(defaults_only, NULL) > 40);
    const char *bin = getenv("MEMSNAP_BIN");
    CHECK_TRUE(bin != NULL);
    if (bin)
        leaks_cli(bin);
    if (bin)
        render_cli(bin);
    return check_finish("test_compile_context");
}
