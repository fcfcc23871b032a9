/* `memsnap diff` and `memsnap ranks` run as users run them, their JSON parsed and held
 * to the truth files; and the same comparisons made from `summary --json` files must
 * give the same numbers as from the pickles. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char *bin;
static char tmpdir[64] = "/tmp/memsnap-cmp-XXXXXX";

static cJSON *run_json(const char *args, int want_status)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s", bin, args);
    int st = 0;
    char *out = check_run(cmd, &st);
    if (st != want_status)
        check_fail("`%s` exited %d, wanted %d", cmd, st, want_status);
    cJSON *doc = out ? cJSON_Parse(out) : NULL;
    if (!doc)
        check_fail("`%s` printed no JSON", cmd);
    free(out);
    return doc;
}

static double num(const cJSON *o, const char *key)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const char *const FILES[] = {
    "ddp_rank0", "ddp_rank1",    "expandable", "gpt2_train", "leak_layers",
    "linear_infer", "noleak_layers", "oom",     "ring_wrap",  "streams",
};
#define N_FILES (sizeof FILES / sizeof FILES[0])

/* Every snapshot summarised once with all its sites, as a host would before shipping. */
static void write_summaries(void)
{
    for (size_t i = 0; i < N_FILES; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "'%s' summary testdata/%s.pickle --json --top 100000 > %s/%s.json",
                 bin, FILES[i], tmpdir, FILES[i]);
        CHECK_EQ_INT(system(cmd), 0);
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%s' summary testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle --json --top 100000 "
             "> %s/both.json",
             bin, tmpdir);
    CHECK_EQ_INT(system(cmd), 0);
}

static const cJSON *pair0(const cJSON *doc)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "pairs"), 0);
}

/* The verdict up to where it talks about the end, which summaries do not break down. */
static void check_same_verdict_start(const cJSON *x, const cJSON *y)
{
    const char *vx = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "verdict"));
    const char *vy = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(y, "verdict"));
    CHECK_TRUE(vx && vy);
    if (!vx || !vy)
        return;
    const char *ex = strstr(vx, " At the end");
    const char *ey = strstr(vy, " At the end");
    size_t lx = ex ? (size_t)(ex - vx) : strlen(vx), ly = ey ? (size_t)(ey - vy) : strlen(vy);
    CHECK_EQ_INT(lx, ly);
    CHECK_TRUE(lx == ly && memcmp(vx, vy, lx) == 0);
}

static void test_ddp_pair(void)
{
    cJSON *doc = run_json("diff testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle --json", 0);
    const cJSON *p = pair0(doc);
    CHECK_TRUE(p != NULL);
    double d = check_truth_file_counter("ddp_rank1", "requested_bytes.all.peak") -
               check_truth_file_counter("ddp_rank0", "requested_bytes.all.peak");
    CHECK_EQ_INT(num(p, "peak_delta_bytes"), d);
    CHECK_TRUE(num(p, "peak_delta_pct") > 40.0);
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(doc, "files");
    CHECK_EQ_INT(cJSON_GetArraySize(files), 2);
    const char *path = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(files, 1), "path"));
    CHECK_TRUE(path && !strcmp(path, "testdata/ddp_rank1.pickle"));
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "verdict"));
    CHECK_TRUE(v && strncmp(v, "rank1 peaks ", 12) == 0 && strstr(v, "higher than rank0"));
    const cJSON *top = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(p, "sites"), 0);
    const char *site = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(top, "site"));
    CHECK_TRUE(site && v && strstr(v, site));
    CHECK_EQ_INT(num(top, "delta_bytes"), num(top, "b_bytes") - num(top, "a_bytes"));
    CHECK_TRUE(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(p, "match")));
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "outliers")), 0);

    /* The same pair from summaries: every number and every site at the peak agree. */
    char args[1024];
    snprintf(args, sizeof args, "diff %s/ddp_rank0.json %s/ddp_rank1.json --json", tmpdir,
             tmpdir);
    cJSON *sdoc = run_json(args, 0);
    const cJSON *sp = pair0(sdoc);
    CHECK_TRUE(sp != NULL);
    static const char *const same[] = {"peak_delta_bytes", "peak_delta_pct", "metrics", "sites",
                                       "a_label", "b_label", "a_device", "b_device",
                                       "sites_complete"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        bool eq = cJSON_Compare(cJSON_GetObjectItemCaseSensitive(p, same[i]),
                                cJSON_GetObjectItemCaseSensitive(sp, same[i]), true);
        if (!eq)
            fprintf(stderr, "pickle and summary disagree on \"%s\"\n", same[i]);
        CHECK_TRUE(eq);
    }
    check_same_verdict_start(p, sp);
    CHECK_TRUE(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(sp, "sites_at_end")));

    /* One summary holding both ranks is a pair too; a pickle and a summary mix. */
    snprintf(args, sizeof args, "diff %s/both.json --json", tmpdir);
    cJSON *bdoc = run_json(args, 0);
    CHECK_TRUE(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(pair0(bdoc), "metrics"),
                             cJSON_GetObjectItemCaseSensitive(p, "metrics"), true));
    snprintf(args, sizeof args, "diff testdata/ddp_rank0.pickle %s/ddp_rank1.json --json",
             tmpdir);
    cJSON *mdoc = run_json(args, 0);
    CHECK_TRUE(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(pair0(mdoc), "sites"),
                             cJSON_GetObjectItemCaseSensitive(p, "sites"), true));
    cJSON_Delete(mdoc);
    cJSON_Delete(bdoc);
    cJSON_Delete(sdoc);
    cJSON_Delete(doc);
}

static void test_self(void)
{
    cJSON *doc = run_json("diff testdata/streams.pickle testdata/streams.pickle --json", 0);
    const cJSON *p = pair0(doc);
    CHECK_EQ_INT(num(p, "peak_delta_bytes"), 0);
    CHECK_EQ_INT(num(p, "peak_delta_pct"), 0);
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(p, "metrics"))
        CHECK_EQ_INT(num(m, "delta"), 0);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "sites")), 0);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "sites_at_end")), 0);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "only_in_a")), 0);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "only_in_b")), 0);
    CHECK_TRUE(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "match")));
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "verdict"));
    CHECK_TRUE(v && strstr(v, " match"));
    cJSON_Delete(doc);
}

static void test_ranks(void)
{
    char pickles[4096] = "", summaries[4096] = "", mixed[4096] = "";
    for (size_t i = 0; i < N_FILES; i++) {
        char one[512];
        snprintf(one, sizeof one, " testdata/%s.pickle", FILES[i]);
        strcat(pickles, one);
        if (i % 2)
            strcat(mixed, one);
        snprintf(one, sizeof one, " %s/%s.json", tmpdir, FILES[i]);
        strcat(summaries, one);
        if (!(i % 2))
            strcat(mixed, one);
    }
    char args[8192];
    snprintf(args, sizeof args, "ranks --json%s", pickles);
    cJSON *doc = run_json(args, 0);
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(doc, "ranks");
    CHECK_EQ_INT(cJSON_GetArraySize(ranks), N_FILES);

    /* Outliers from the allocator's own counters: live memory at the end is exact for
     * every trace, wrapped or not, so it is the metric checked file by file here. */
    double live[N_FILES], sorted[N_FILES];
    for (size_t i = 0; i < N_FILES; i++)
        sorted[i] = live[i] = check_truth_file_counter(FILES[i], "requested_bytes.all.current");
    for (size_t i = 0; i < N_FILES; i++)
        for (size_t j = i + 1; j < N_FILES; j++)
            if (sorted[j] < sorted[i]) {
                double t = sorted[i];
                sorted[i] = sorted[j];
                sorted[j] = t;
            }
    double med = (double)(((long long)sorted[N_FILES / 2 - 1] + (long long)sorted[N_FILES / 2]) / 2);
    CHECK_EQ_INT(num(cJSON_GetObjectItemCaseSensitive(doc, "median"), "live_end_bytes"), med);
    const cJSON *outliers = cJSON_GetObjectItemCaseSensitive(doc, "outliers");
    for (size_t i = 0; i < N_FILES; i++) {
        double pct = 100.0 * (live[i] - med) / med;
        bool want = pct > 10.0 || pct < -10.0;
        bool got = false;
        const cJSON *o;
        cJSON_ArrayForEach(o, outliers)
        {
            const char *metric = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "metric"));
            if (num(o, "file") == (double)i && metric && !strcmp(metric, "live_end_bytes"))
                got = true;
        }
        if (want != got)
            fprintf(stderr, "%s: live-at-end outlier %d, expected %d\n", FILES[i], got, want);
        CHECK_TRUE(want == got);
    }
    /* The DDP ranks: rank 1 is more than 10% above the median peak in this mix? Only the
     * counters can say; check the row against them. */
    const cJSON *r1 = cJSON_GetArrayItem(ranks, 1);
    CHECK_EQ_INT(num(r1, "peak_bytes"),
                 check_truth_file_counter("ddp_rank1", "requested_bytes.all.peak"));
    CHECK_EQ_INT(num(r1, "rank"), 1);

    /* Summaries, and a mix of both, give the very same table. */
    snprintf(args, sizeof args, "ranks --json%s", summaries);
    cJSON *sdoc = run_json(args, 0);
    snprintf(args, sizeof args, "ranks --json%s", mixed);
    cJSON *mdoc = run_json(args, 0);
    /* Except the sites alive at the end, which a summary does not carry: the pickles' rows
     * have them (and a live-at-end outlier points at them), the summaries' do not. */
    cJSON *row0, *out0;
    cJSON_ArrayForEach(row0, cJSON_GetObjectItemCaseSensitive(sdoc, "ranks"))
        CHECK_TRUE(!cJSON_HasObjectItem(row0, "sites_at_end"));
    cJSON_ArrayForEach(row0, cJSON_GetObjectItemCaseSensitive(doc, "ranks"))
    {
        CHECK_TRUE(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(row0, "sites_at_end")));
        cJSON_DeleteItemFromObjectCaseSensitive(row0, "sites_at_end");
    }
    cJSON_ArrayForEach(row0, cJSON_GetObjectItemCaseSensitive(mdoc, "ranks"))
        cJSON_DeleteItemFromObjectCaseSensitive(row0, "sites_at_end");
    cJSON *docs[3] = {doc, sdoc, mdoc};
    for (int d = 0; d < 3; d++)
        cJSON_ArrayForEach(out0, cJSON_GetObjectItemCaseSensitive(docs[d], "outliers"))
        {
            const char *metric = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out0, "metric"));
            const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out0, "sites_key"));
            CHECK_TRUE(key != NULL);
            if (key && metric && !strcmp(metric, "live_end_bytes"))
                CHECK_EQ_STR(key, d == 0 ? "sites_at_end" : ""); /* mixed: not every file has them */
            cJSON_DeleteItemFromObjectCaseSensitive(out0, "sites_key");
        }
    static const char *const same[] = {"ranks", "outliers", "median", "threshold_pct"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(doc, same[i]);
        CHECK_TRUE(cJSON_Compare(x, cJSON_GetObjectItemCaseSensitive(sdoc, same[i]), true));
        if (i == 0) {
            /* The mix lists the files in another order; compare row by path. */
            const cJSON *row;
            cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(mdoc, "ranks"))
            {
                const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "path"));
                const cJSON *twin = NULL, *r;
                cJSON_ArrayForEach(r, x)
                {
                    const char *q = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "path"));
                    if (path && q && !strcmp(path, q))
                        twin = r;
                }
                CHECK_TRUE(twin && num(twin, "peak_delta_bytes") == num(row, "peak_delta_bytes") &&
                           cJSON_Compare(cJSON_GetObjectItemCaseSensitive(twin, "sites"),
                                         cJSON_GetObjectItemCaseSensitive(row, "sites"), true));
            }
        }
    }
    cJSON_Delete(mdoc);
    cJSON_Delete(sdoc);
    cJSON_Delete(doc);

    /* `diff` with three files is the ranks table. */
    doc = run_json("diff testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle "
                   "testdata/gpt2_train.pickle --json --threshold 5",
                   0);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "ranks")), 3);
    CHECK_EQ_INT(num(doc, "threshold_pct"), 5);
    cJSON_Delete(doc);
}

/* ------------------------------------------------------------------ leaks */

/* The leak totals the truth implies: every injected leak is `count` tensors of
 * `bytes_each_requested`, made evenly over the iterations, and the injection groups
 * them into one finding (the sites leak together in the same forward pass). */
typedef struct truth_leaks {
    double findings, bytes, growth;
} truth_leaks;

static truth_leaks truth_leaks_of(const char *name)
{
    truth_leaks t = {0, 0, 0};
    cJSON *truth = check_truth_load(name);
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(truth, "leaks"))
        t.bytes += num(l, "count") * num(l, "bytes_each_requested");
    double iters = num(truth, "iterations");
    t.growth = iters > 0 ? t.bytes / iters : 0;
    t.findings = t.bytes > 0 ? 1 : 0;
    cJSON_Delete(truth);
    return t;
}

/* What `memsnap leaks --json` says for the same file (one device in use). */
static truth_leaks leaks_cmd(const char *name)
{
    char args[512];
    snprintf(args, sizeof args, "leaks testdata/%s.pickle --json", name);
    cJSON *doc = run_json(args, 0);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "files"), 0), "verdict");
    truth_leaks t = {num(v, "leaks"), num(v, "leaked_bytes"), num(v, "growth_bytes_per_iteration")};
    cJSON_Delete(doc);
    return t;
}

static void check_leaks_obj(const char *ctx, const cJSON *o, truth_leaks want)
{
    CHECK_TRUE_IN(ctx, cJSON_IsObject(o));
    CHECK_EQ_INT_IN(ctx, num(o, "findings"), want.findings);
    CHECK_EQ_INT_IN(ctx, num(o, "bytes"), want.bytes);
    CHECK_EQ_INT_IN(ctx, num(o, "growth_per_iteration_bytes"), want.growth);
}

static const cJSON *file_leaks(const cJSON *doc, int file)
{
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "files"), file);
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(f, "devices"), 0);
    return cJSON_GetObjectItemCaseSensitive(d, "leaks");
}

static void test_leaks(void)
{
    truth_leaks leak = truth_leaks_of("leak_layers"), none = truth_leaks_of("noleak_layers");
    /* 24 x 768 KiB + 24 x 3 MiB over 3 iterations: the truth, written out once. */
    CHECK_EQ_INT(leak.bytes, 94470144);
    CHECK_EQ_INT(leak.growth, 31490048);
    CHECK_EQ_INT(none.bytes, 0);
    truth_leaks by_cmd = leaks_cmd("leak_layers");
    CHECK_EQ_INT(by_cmd.findings, leak.findings);
    CHECK_EQ_INT(by_cmd.bytes, leak.bytes);
    CHECK_EQ_INT(by_cmd.growth, leak.growth);
    truth_leaks none_cmd = leaks_cmd("noleak_layers");
    CHECK_EQ_INT(none_cmd.findings, 0);

    /* diff: each file's leaks, the pair's, and a verdict naming the one that leaks. */
    cJSON *doc = run_json("diff testdata/noleak_layers.pickle testdata/leak_layers.pickle --json",
                          0);
    check_leaks_obj("diff A", file_leaks(doc, 0), none);
    check_leaks_obj("diff B", file_leaks(doc, 1), leak);
    const cJSON *p = pair0(doc);
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(p, "leaks");
    CHECK_EQ_INT(num(pl, "a_findings"), 0);
    CHECK_EQ_INT(num(pl, "b_findings"), 1);
    CHECK_EQ_INT(num(pl, "delta_bytes"), leak.bytes);
    CHECK_EQ_INT(num(pl, "b_growth_per_iteration_bytes"), leak.growth);
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "verdict"));
    CHECK_TRUE(v && strstr(v, " leak_layers.pickle leaks 1 finding, 90.09 MiB, +30.03 MiB per "
                              "iteration; noleak_layers.pickle does not."));
    CHECK_TRUE(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(p, "match")));
    cJSON_Delete(doc);

    /* The same from the summaries: the leak figures survive the round trip. */
    char args[1024];
    snprintf(args, sizeof args, "diff %s/noleak_layers.json %s/leak_layers.json --json", tmpdir,
             tmpdir);
    doc = run_json(args, 0);
    check_leaks_obj("summary diff A", file_leaks(doc, 0), none);
    check_leaks_obj("summary diff B", file_leaks(doc, 1), leak);
    pl = cJSON_GetObjectItemCaseSensitive(pair0(doc), "leaks");
    CHECK_EQ_INT(num(pl, "delta_findings"), 1);
    CHECK_EQ_INT(num(pl, "delta_bytes"), leak.bytes);
    v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pair0(doc), "verdict"));
    CHECK_TRUE(v && strstr(v, "leak_layers.pickle leaks 1 finding, 90.09 MiB"));
    cJSON_Delete(doc);

    /* ranks: per file, the DDP ranks leak nothing (as `leaks` says), leak_layers does. */
    doc = run_json("ranks testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle "
                   "testdata/leak_layers.pickle --json",
                   0);
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(doc, "ranks");
    const char *names[3] = {"ddp_rank0", "ddp_rank1", "leak_layers"};
    for (int i = 0; i < 3; i++) {
        truth_leaks want = i < 2 ? truth_leaks_of(names[i]) : leak;
        truth_leaks cmd = leaks_cmd(names[i]);
        CHECK_EQ_INT_IN(names[i], cmd.bytes, want.bytes);
        CHECK_EQ_INT_IN(names[i], cmd.findings, want.findings);
        check_leaks_obj(names[i],
                        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ranks, i), "leaks"),
                        want);
        check_leaks_obj(names[i], file_leaks(doc, i), want);
    }
    cJSON_Delete(doc);

    /* A summary written before summaries carried leaks: unknown, never 0. */
    char old[512];
    snprintf(old, sizeof old, "%s/old.json", tmpdir);
    cJSON *sum = NULL;
    {
        char path[512];
        snprintf(path, sizeof path, "%s/leak_layers.json", tmpdir);
        size_t len = 0;
        char *text = check_read_text(path, &len);
        sum = text ? cJSON_Parse(text) : NULL;
        free(text);
    }
    CHECK_TRUE(sum != NULL);
    if (sum) {
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(sum, "files"))
        {
            cJSON *d;
            cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(f, "devices"))
                cJSON_DeleteItemFromObjectCaseSensitive(d, "leaks");
        }
        char *text = cJSON_Print(sum);
        FILE *out = fopen(old, "w");
        CHECK_TRUE(out && text);
        if (out && text)
            fputs(text, out);
        if (out)
            fclose(out);
        free(text);
        cJSON_Delete(sum);
    }
    snprintf(args, sizeof args, "ranks %s testdata/leak_layers.pickle --json", old);
    doc = run_json(args, 0);
    ranks = cJSON_GetObjectItemCaseSensitive(doc, "ranks");
    CHECK_TRUE(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ranks, 0), "leaks")));
    check_leaks_obj("ranks pickle beside old summary",
                    cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ranks, 1), "leaks"), leak);
    cJSON_Delete(doc);
    snprintf(args, sizeof args, "diff testdata/noleak_layers.pickle %s --json", old);
    doc = run_json(args, 0);
    p = pair0(doc);
    CHECK_TRUE(cJSON_GetObjectItemCaseSensitive(p, "leaks") == NULL);
    v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "verdict"));
    CHECK_TRUE(v && !strstr(v, "leaks"));
    cJSON_Delete(doc);
    snprintf(args, sizeof args, "diff %s testdata/leak_layers.pickle --json", old);
    doc = run_json(args, 0);
    v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pair0(doc), "verdict"));
    CHECK_TRUE(v && strstr(v, "; whether A leaks is unknown"));
    cJSON_Delete(doc);
}

int main(void)
{
    if (check_cli_setup(&bin, tmpdir))
        return 1;
    write_summaries();
    test_ddp_pair();
    test_self();
    test_ranks();
    test_leaks();
    check_remove_dir(tmpdir);
    return check_finish("test_compare_cli");
}
