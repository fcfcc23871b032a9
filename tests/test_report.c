/* `memsnap report` run as CI runs it: every gate both ways on real snapshots, with the
 * limits taken from the snapshots' truth files (the allocator's own counters) so the
 * test holds the gates to the real numbers, not to numbers memsnap printed before. Also:
 * summary.json agrees with the truth, the report is written when a gate fails, and the
 * text helpers escape what a hostile snapshot could put in a page. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
/* The helpers are small and pure; compiling them in tests them without a library. */
#include "cli_util.c"
#include "report_util.c"
#include "term_text.c"

static const char *bin;
static char tmpdir[64] = "/tmp/memsnap-report-XXXXXX";

static char *run(const char *args, int *status)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' report %s 2>&1", bin, args);
    return check_run(cmd, status);
}

/* Runs `memsnap report ARGS`, checks the exit status, and that the output holds `want`
 * (when not NULL); prints everything on a mismatch. */
static char *expect(int want_status, const char *want, const char *args)
{
    int st = 0;
    char *out = run(args, &st);
    CHECK_EQ_INT(st, want_status);
    bool has = out && (!want || strstr(out, want));
    CHECK_TRUE(has);
    if (st != want_status || !has)
        fprintf(stderr, "  memsnap report %s\n  wanted exit %d and \"%s\"; got:\n%s\n", args,
                want_status, want ? want : "", out ? out : "(nothing)");
    return out;
}

static cJSON *read_json(const char *path)
{
    size_t len = 0;
    char *text = check_read_text(path, &len);
    cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    if (!doc)
        fprintf(stderr, "cannot read JSON %s\n", path);
    return doc;
}

/* A counter of a snapshot's truth file ("requested_bytes.all.peak"). */
static double truth(const char *name, const char *counter)
{
    double v = check_truth_file_counter(name, counter);
    CHECK_TRUE(v >= 0);
    return v;
}

static bool exists(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && st.st_size > 0;
}

static void free_out(char *s)
{
    free(s);
}

static void test_max_peak(void)
{
    double peak = truth("gpt2_train", "requested_bytes.all.peak");
    char args[1024], dir[256], want[256];
    snprintf(dir, sizeof dir, "%s/peak", tmpdir);

    /* One byte under the truth peak fails, and says what was measured against what. */
    snprintf(args, sizeof args, "testdata/gpt2_train.pickle -o %s --max-peak %.0f", dir, peak - 1);
    snprintf(want, sizeof want,
             "FAILED --max-peak: gpt2_train.pickle device 0: peak 523.84 MiB (%.0f bytes) is "
             "over the limit",
             peak);
    free_out(expect(1, want, args));
    /* The report is written when a gate fails: that is when it is needed. */
    CHECK_TRUE(exists(dir, "index.html"));
    CHECK_TRUE(exists(dir, "summary.md"));
    CHECK_TRUE(exists(dir, "summary.json"));
    cJSON *doc;
    snprintf(args, sizeof args, "%s/summary.json", dir);
    doc = read_json(args);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(doc, "gates");
    CHECK_TRUE(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(g, "passed")));
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g, "checked"), 0);
    CHECK_EQ_STR(cli_json_str(c, "gate"), "max_peak");
    CHECK_EQ_INT(cli_json_num(c, "measured"), peak);
    CHECK_EQ_INT(cli_json_num(c, "limit"), peak - 1);
    /* summary.json's numbers are the allocator's. */
    const cJSON *dev = cJSON_GetArrayItem(
        cli_json_get(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "files"), 0),
                   "devices"),
        0);
    CHECK_EQ_INT(cli_json_num(dev, "peak.bytes"), peak);
    CHECK_EQ_INT(cli_json_num(dev, "reserved.peak_bytes"),
                 truth("gpt2_train", "reserved_bytes.all.peak"));
    CHECK_EQ_INT(cli_json_num(dev, "live_end.bytes"),
                 truth("gpt2_train", "requested_bytes.all.current"));
    cJSON_Delete(doc);

    /* At the peak exactly and one byte over it passes: the limit is inclusive. */
    snprintf(args, sizeof args, "testdata/gpt2_train.pickle -o %s --max-peak %.0f", dir, peak);
    free_out(expect(0, "passed --max-peak", args));
    snprintf(args, sizeof args, "testdata/gpt2_train.pickle -o %s --max-peak %.0f", dir, peak + 1);
    free_out(expect(0, "passed --max-peak", args));
    /* Sizes with units work as in every other command. */
    snprintf(args, sizeof args, "testdata/gpt2_train.pickle -o %s --max-peak 1GiB", dir);
    free_out(expect(0, "is within the limit 1.00 GiB (1073741824 bytes)", args));
}

static void test_max_reserved(void)
{
    double res = truth("gpt2_train", "reserved_bytes.all.peak");
    char args[1024], dir[256];
    snprintf(dir, sizeof dir, "%s/reserved", tmpdir);
    snprintf(args, sizeof args, "testdata/gpt2_train.pickle -o %s --max-reserved %.0f", dir,
             res - 1);
    free_out(expect(1, "FAILED --max-reserved: gpt2_train.pickle device 0: reserved peak", args));
    snprintf(args, sizeof args, "testdata/gpt2_train.pickle -o %s --max-reserved %.0f", dir, res);
    free_out(expect(0, "passed --max-reserved", args));
    /* Two gates, one failing: exit 1 and both reported. */
    snprintf(args, sizeof args,
             "testdata/gpt2_train.pickle -o %s --max-reserved %.0f --max-peak 100GiB", dir,
             res - 1);
    char *out = expect(1, "passed --max-peak", args);
    CHECK_TRUE(out && strstr(out, "FAILED --max-reserved") && strstr(out, "1 gate check failed"));
    free(out);
}

static void test_leaks(void)
{
    char args[1024], dir[256];
    snprintf(dir, sizeof dir, "%s/leaks", tmpdir);
    snprintf(args, sizeof args, "testdata/leak_layers.pickle -o %s --fail-on-leaks", dir);
    char *out = expect(1, "FAILED --fail-on-leaks: leak_layers.pickle: 2 leaking sites", args);
    /* The worst site is named, as the truth file has it. */
    CHECK_TRUE(out && strstr(out, "scenarios.py:12"));
    free(out);
    CHECK_TRUE(exists(dir, "index.html"));
    snprintf(args, sizeof args, "testdata/noleak_layers.pickle -o %s --fail-on-leaks", dir);
    free_out(expect(0, "passed --fail-on-leaks: noleak_layers.pickle: no leak", args));
    /* Both at once: the leaking file fails the run, the clean one passes. */
    snprintf(args, sizeof args,
             "testdata/noleak_layers.pickle testdata/leak_layers.pickle -o %s --fail-on-leaks",
             dir);
    out = expect(1, "passed --fail-on-leaks: noleak_layers.pickle", args);
    CHECK_TRUE(out && strstr(out, "FAILED --fail-on-leaks: leak_layers.pickle"));
    free(out);
    /* Without the gate a leak is reported but does not fail the run. */
    snprintf(args, sizeof args, "testdata/leak_layers.pickle -o %s", dir);
    free_out(expect(0, NULL, args));
}

/* The graph leak in a report: one finding named by its pattern and the line calling the
 * forward, its sites listed under it, the stack of one allocation behind a click. */
static void test_graph_leak(void)
{
    char args[1024], dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/graph", tmpdir);
    snprintf(args, sizeof args, "testdata/leak_eval_graph.pickle -o %s --fail-on-leaks", dir);
    free_out(expect(1,
                    "FAILED --fail-on-leaks: leak_eval_graph.pickle: 15 leaking sites (1 finding) "
                    "hold 566.73 MiB and grow by 70.84 MiB per iteration; largest: a graph kept "
                    "from the model called at scenarios_explain.py:355 leak_eval_graph",
                    args));
    snprintf(path, sizeof path, "%s/index.html", dir);
    size_t len = 0;
    char *html = check_read_text(path, &len);
    CHECK_TRUE(html && strstr(html, "<td class=\"site\">graph: 15 sites</td>"));
    CHECK_TRUE(html && strstr(html, "<b>graph</b> (model called at scenarios_explain.py:355"));
    CHECK_TRUE(html && strstr(html, "<td class=\"site member\">activations.py:66 forward</td>"));
    CHECK_TRUE(html && strstr(html, "<details class=\"stack\"><summary>stack of one allocation "
                                    "(109 frames, innermost first)</summary>"));
    CHECK_TRUE(html && strstr(html, "<b>&gt; /home/ml/train/scenarios_explain.py:355 "
                                    "leak_eval_graph</b>"));
    free(html);
    snprintf(path, sizeof path, "%s/summary.md", dir);
    char *md = check_read_text(path, &len);
    CHECK_TRUE(md && strstr(md, "| leak | graph: 15 sites, model called at "
                                "scenarios\\_explain.py:355 leak\\_eval\\_graph | 648 |"));
    free(md);
}

static void test_growth(void)
{
    double p0 = truth("ddp_rank0", "requested_bytes.all.peak");
    double p1 = truth("ddp_rank1", "requested_bytes.all.peak");
    double growth = 100.0 * (p1 - p0) / p0;
    char args[1024], dir[256], base[256];
    snprintf(dir, sizeof dir, "%s/growth", tmpdir);
    snprintf(base, sizeof base, "%s/base", tmpdir);

    /* A limit just below the real growth fails, just above passes. */
    snprintf(args, sizeof args,
             "testdata/ddp_rank1.pickle -o %s --baseline testdata/ddp_rank0.pickle "
             "--max-growth %.4f",
             dir, growth - 0.01);
    free_out(expect(1, "FAILED --max-growth: ddp_rank1.pickle device 1: peak 845.55 MiB is "
                       "+51.0",
                    args));
    snprintf(args, sizeof args,
             "testdata/ddp_rank1.pickle -o %s --baseline testdata/ddp_rank0.pickle "
             "--max-growth %.4f",
             dir, growth + 0.01);
    free_out(expect(0, "passed --max-growth", args));
    snprintf(args, sizeof args, "%s/summary.json", dir);
    cJSON *doc = read_json(args);
    const cJSON *pair = cJSON_GetArrayItem(cli_json_get(doc, "baseline.pairs"), 0);
    CHECK_EQ_INT(cli_json_num(pair, "peak_delta_bytes"), p1 - p0);
    const cJSON *c = cJSON_GetArrayItem(cli_json_get(doc, "gates.checked"), 0);
    CHECK_TRUE(fabs(cli_json_num(c, "measured") - growth) < 1e-9);
    cJSON_Delete(doc);

    /* The baseline may be an earlier report: its directory or its summary.json. */
    snprintf(args, sizeof args, "testdata/ddp_rank0.pickle -o %s", base);
    free_out(expect(0, NULL, args));
    snprintf(args, sizeof args,
             "testdata/ddp_rank1.pickle -o %s --baseline %s --max-growth %.4f", dir, base,
             growth - 0.01);
    free_out(expect(1, "FAILED --max-growth", args));
    snprintf(args, sizeof args,
             "testdata/ddp_rank1.pickle -o %s --baseline %s/summary.json --max-growth %.4f", dir,
             base, growth + 0.01);
    free_out(expect(0, "passed --max-growth", args));
    /* Shrinking is not growth. */
    snprintf(args, sizeof args,
             "testdata/ddp_rank0.pickle -o %s --baseline testdata/ddp_rank1.pickle "
             "--max-growth 0",
             dir);
    free_out(expect(0, "is -33.", args));
}

static void test_usage(void)
{
    char args[1024];
    free_out(expect(2, "no output directory", "testdata/oom.pickle"));
    free_out(expect(2, "no input file", "-o /tmp/x"));
    free_out(expect(2, "--max-growth needs --baseline", "testdata/oom.pickle -o /tmp/x --max-growth 5"));
    free_out(expect(2, "--max-peak: 'lots' is not a size", "testdata/oom.pickle -o /tmp/x --max-peak lots"));
    free_out(expect(2, "unknown option '--bogus'", "testdata/oom.pickle -o /tmp/x --bogus"));
    free_out(expect(0, "usage: memsnap report", "--help"));
    snprintf(args, sizeof args, "%s/nope.pickle -o %s/u", tmpdir, tmpdir);
    free_out(expect(2, "nope.pickle: cannot open", args));
    snprintf(args, sizeof args, "testdata/oom.pickle -o %s/u --baseline %s/nope.json", tmpdir,
             tmpdir);
    free_out(expect(2, "nope.json", args));
}

static void test_helpers(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    report_html_escape(f, "<script>alert('x')</script> & \"q\"\x01");
    fclose(f);
    CHECK_EQ_STR(text, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;?");
    free(text);
    f = open_memstream(&text, &len);
    report_md_escape(f, "a|b_c*<img src=x>\n");
    fclose(f);
    CHECK_EQ_STR(text, "a\\|b\\_c\\*&lt;img src=x&gt; ");
    free(text);

    const char *taken[2] = {"timeline-mem.png", "timeline-mem-2.png"};
    char name[256];
    report_png_name("run/mem.pickle.gz", taken, 0, name, sizeof name);
    CHECK_EQ_STR(name, "timeline-mem.png");
    report_png_name("other/mem.pickle", taken, 2, name, sizeof name);
    CHECK_EQ_STR(name, "timeline-mem-3.png");
    report_png_name("-", NULL, 0, name, sizeof name);
    CHECK_EQ_STR(name, "timeline-stdin.png");
    report_png_name("x/a b<c>.pkl", NULL, 0, name, sizeof name);
    CHECK_EQ_STR(name, "timeline-a_b_c_.png");

    const char *svg = "<?xml version=\"1.0\"?>\n<svg><defs><g id=\"glyph0-1\"/></defs>"
                      "<use xlink:href=\"#glyph0-1\"/><g clip-path=\"url(#clip1)\"/></svg>";
    char *out = report_svg_inline(svg, strlen(svg), "f1-");
    CHECK_EQ_STR(out, "<svg><defs><g id=\"f1-glyph0-1\"/></defs><use xlink:href=\"#f1-glyph0-1\"/>"
                      "<g clip-path=\"url(#f1-clip1)\"/></svg>");
    free(out);
    /* Surfaces are numbered per chart, whatever cairo's process-wide counter says. */
    svg = "<svg><g id=\"surface194\"><use xlink:href=\"#surface7\"/>"
          "<use xlink:href=\"#surface194\"/><g id=\"surfaces\"/></g></svg>";
    out = report_svg_inline(svg, strlen(svg), "c1-");
    CHECK_EQ_STR(out, "<svg><g id=\"c1-surface1\"><use xlink:href=\"#c1-surface2\"/>"
                      "<use xlink:href=\"#c1-surface1\"/><g id=\"c1-surfaces\"/></g></svg>");
    free(out);
}

int main(void)
{
    if (check_cli_setup(&bin, tmpdir))
        return 1;
    test_helpers();
    test_usage();
    test_max_peak();
    test_max_reserved();
    test_growth();
    test_leaks();
    test_graph_leak();
    check_remove_dir(tmpdir);
    return check_finish("test_report");
}
