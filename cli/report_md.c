/* summary.md of `memsnap report`: the report's facts as a few Markdown tables, sized for
 * a CI job summary (GitHub's $GITHUB_STEP_SUMMARY takes 1 MiB per step and shows it on
 * the run's page): gates first, one row per file, the comparison, and per file only the
 * top sites and the leaks. The full detail stays in index.html and summary.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "categories_json.h"
#include "cli_util.h"
#include "iterations_json.h"
#include "oom_json.h"
#include "shape_json.h"
#include "report.h"
#include "summary_input.h"

#define MD_SITES 5
#define MD_LEAKS 10
#define MD_RANKS 64
/* The bytes after which summary.md lists no more files' details (a job summary stays under
 * 64 KiB with the largest file's details and the footer after it). */
#define MD_BUDGET 56000L

static void md(FILE *out, const char *s)
{
    report_md_escape(out, s);
}

/* A function name, cut: C++ template names would make a table unreadable. */
static void md_function(FILE *out, const char *s)
{
    size_t n = strlen(s);
    if (n <= 80) {
        md(out, s);
        return;
    }
    size_t cut = 80;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    char buf[81];
    memcpy(buf, s, cut);
    buf[cut] = '\0';
    md(out, buf);
    fputs("...", out);
}

static void size_text(double bytes, char *buf, size_t cap)
{
    ms_format_bytes((int64_t)bytes, buf, cap);
}

static void check_item(FILE *out, bool passed, const char *message)
{
    fputs(passed ? "- passed " : "- **FAILED** ", out);
    md(out, message);
    fputc('\n', out);
}

static void gates(FILE *out, const cJSON *g)
{
    const cJSON *checked = cJSON_GetObjectItemCaseSensitive(g, "checked");
    int n = cJSON_GetArraySize(checked);
    if (n == 0) {
        fputs("No gates were set.\n\n", out);
        return;
    }
    int failed = (int)cli_json_num(g, "failed");
    if (failed)
        fprintf(out, "**:x: Gates failed: %d of %d check%s.**\n\n", failed, n, n == 1 ? "" : "s");
    else
        fprintf(out, "**:white_check_mark: All gates passed (%d check%s).**\n\n", n,
                n == 1 ? "" : "s");
    report_each_check(out, checked, check_item);
    fputc('\n', out);
}

/* The devices a section leaves out (report_device_shown). */
static void devices_left_out(FILE *out, size_t left)
{
    if (left)
        fprintf(out, "_... %zu more device%s in summary.json._\n\n", left, left == 1 ? "" : "s");
}

static void overview(FILE *out, const cJSON *files)
{
    size_t left = 0;
    fputs("| file | device | peak | peak at | reserved peak | live at end | iterations | leaks "
          "| OOMs |\n|---|--:|--:|--:|--:|--:|--:|---|--:|\n",
          out);
    const cJSON *file;
    cJSON_ArrayForEach(file, files)
    {
        const cJSON *dev, *hint = NULL;
        size_t k = 0;
        cJSON_ArrayForEach(dev, cJSON_GetObjectItemCaseSensitive(file, "devices"))
        {
            char p[32], r[32], l[32], it[32] = "-", lk[64] = "-";
            int d = (int)cli_json_num(dev, "device");
            if (!report_device_shown(file, k++, d)) {
                left++;
                continue;
            }
            size_text(cli_json_num(dev, "peak.bytes"), p, sizeof p);
            size_text(cli_json_num(dev, "reserved.peak_bytes"), r, sizeof r);
            size_text(cli_json_num(dev, "live_end.bytes"), l, sizeof l);
            const cJSON *ld = report_device_entry(cli_json_get(file, "leaks.devices"), d, &hint);
            if (ld)
                snprintf(it, sizeof it, "%.0f", cli_json_num(ld, "iterations.count"));
            const cJSON *v = cli_json_get(file, "leaks.verdict");
            if (v) {
                double n = cli_json_num(v, "leaks");
                if (n > 0) {
                    char b[32];
                    size_text(cli_json_num(v, "leaked_bytes"), b, sizeof b);
                    snprintf(lk, sizeof lk, "**%.0f** (%s)", n, b);
                } else {
                    snprintf(lk, sizeof lk, "none");
                }
            }
            fputs("| ", out);
            md(out, cli_basename(cli_json_str(file, "path")));
            char when[32];
            fprintf(out, " | %d | %s | %s | %s | %s | %s | %s | %d |\n", d, p,
                    report_seconds(when, sizeof when, dev, "peak.seconds"), r, l, it, lk,
                    oom_count_json(dev));
        }
    }
    fputc('\n', out);
    devices_left_out(out, left);
}

static void pct(FILE *out, const cJSON *v)
{
    if (cJSON_IsNumber(v))
        fprintf(out, "%+.1f%%", v->valuedouble);
    else
        fputs("new", out);
}

static void pair(FILE *out, const cJSON *p)
{
    fputs("> ", out);
    md(out, cli_json_str(p, "verdict"));
    fputs("\n\n", out);
    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(p, "sites");
    if (cJSON_GetArraySize(sites) == 0)
        return;
    fputs("| site | ", out);
    md(out, cli_json_str(p, "a_label"));
    fputs(" | ", out);
    md(out, cli_json_str(p, "b_label"));
    fputs(" | change |\n|---|--:|--:|--:|\n", out);
    const cJSON *s;
    int k = 0;
    cJSON_ArrayForEach(s, sites)
    {
        if (k++ == MD_SITES)
            break;
        char a[32], b[32], d[48];
        size_text(cli_json_num(s, "a_bytes"), a, sizeof a);
        size_text(cli_json_num(s, "b_bytes"), b, sizeof b);
        signed_size_text((int64_t)cli_json_num(s, "delta_bytes"), d, sizeof d);
        fputs("| ", out);
        md(out, cli_json_str(s, "site"));
        fputc(' ', out);
        md_function(out, cli_json_str(s, "function"));
        char mv[2100];
        if (report_site_moved(s, mv, sizeof mv)) {
            fputs(" (", out);
            md(out, mv);
            fputc(')', out);
        }
        fprintf(out, " | %s | %s | %s |\n", a, b, d);
    }
    fputc('\n', out);
}

static void comparison(FILE *out, const cJSON *cmp)
{
    fputs("### Comparison\n\n", out);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(cmp, "pair");
    if (cJSON_IsObject(p))
        pair(out, p);
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(cmp, "ranks");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ranks, "is_pair")))
        return; /* two files: the pair above, no median */
    fputs("| file | rank | peak | vs median | reserved peak | vs median | outlier |\n"
          "|---|--:|--:|--:|--:|--:|---|\n",
          out);
    const cJSON *row;
    int k = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(ranks, "ranks"))
    {
        if (k++ == MD_RANKS) {
            fputs("| ... | | | | | | |\n", out);
            break;
        }
        char pk[32], rs[32], rank[16] = "-";
        size_text(cli_json_num(row, "peak_bytes"), pk, sizeof pk);
        size_text(cli_json_num(row, "reserved_peak_bytes"), rs, sizeof rs);
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(row, "rank");
        if (cJSON_IsNumber(r))
            snprintf(rank, sizeof rank, "%d", r->valueint);
        fputs("| ", out);
        md(out, cli_json_str(row, "label"));
        fprintf(out, " | %s | %s | ", rank, pk);
        pct(out, cJSON_GetObjectItemCaseSensitive(row, "peak_delta_pct"));
        fprintf(out, " | %s | ", rs);
        pct(out, cJSON_GetObjectItemCaseSensitive(row, "reserved_delta_pct"));
        fprintf(out, " | %s |\n",
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "outlier")) ? "**yes**" : "");
    }
    fputc('\n', out);
}

static void baseline(FILE *out, const cJSON *doc)
{
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(doc, "baseline");
    if (!cJSON_IsObject(base))
        return;
    fputs("### Against the baseline\n\n", out);
    fputs("Baseline: ", out);
    md(out, cli_json_str(base, "path"));
    fputs("\n\n", out);
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(doc, "files");
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(base, "pairs"))
    {
        fputs("- **", out);
        md(out, cli_basename(cli_json_str(cJSON_GetArrayItem(files, (int)cli_json_num(p, "b")), "path")));
        fputs("**: ", out);
        md(out, cli_json_str(p, "verdict"));
        fputs("\n\n", out);
    }
}

/* Bytes by category at the peak of the charted device. */
static void categories(FILE *out, const cJSON *file)
{
    static const char *const names[] = {"parameter", "gradient",  "optimizer_state",
                                        "activation", "temporary", "workspace",
                                        "input",      "other"};
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(file, "categories");
    if (!cJSON_IsObject(c))
        return;
    double peak = cli_json_num(c, "peak.bytes");
    fprintf(out, "What the memory is at the peak (device %.0f):\n\n| category | bytes | share |\n"
                 "|---|--:|--:|\n",
            cli_json_num(c, "device"));
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        double v = cli_json_num(cli_json_get(c, "peak.categories"), names[k]);
        char b[32];
        size_text(v, b, sizeof b);
        fprintf(out, "| %s | %s | %.1f%% |\n", names[k], b, peak > 0 ? 100.0 * v / peak : 0.0);
    }
    fputc('\n', out);
    char free_line[256];
    if (categories_peak_free_text(cJSON_GetObjectItemCaseSensitive(c, "peak"), free_line,
                                  sizeof free_line)) {
        free_line[0] = 'A'; /* a sentence of its own */
        fprintf(out, "%s.\n\n", free_line);
    }
    /* The chart sits beside summary.md in the report directory. Its name is made of
     * [A-Za-z0-9._-] (report_png_name), which a link target takes as it is. */
    const char *png = cli_json_str(file, "categories_png");
    if (*png && strspn(png, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
                    strlen(png))
        fprintf(out, "![memory by category](%s)\n\n", png);
}

/* ", from train/ddp.py:30 worker": the user's line behind a site in a library. */
static void md_user_frame(FILE *out, const cJSON *o, const char *site_file, double site_line)
{
    char uf[512];
    if (!leaks_user_frame_text(cJSON_GetObjectItemCaseSensitive(o, "user_frame"), site_file,
                               site_line, uf, sizeof uf))
        return;
    fputs(", from ", out);
    md(out, uf);
}

/* "Idle time (what the charts compress): iteration 3 +1.50 s idle before, ...; trailing
 * idle 1.50 s." once some iteration had idle time (the breaks of the charts' run axis). */
static void md_idle(FILE *out, const cJSON *iterations)
{
    char line[1024] = "", iw[128], tr[32];
    size_t at = 0, shown = 0, more = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(iterations, "items"))
    {
        leaks_iteration_idle_text(x, iw, sizeof iw);
        if (!iw[0])
            continue;
        if (shown == 8) {
            more++;
            continue;
        }
        if (at < sizeof line)
            at += (size_t)snprintf(line + at, sizeof line - at, "%siteration %.0f %s",
                                   shown ? ", " : "", cli_json_num(x, "index"), iw);
        shown++;
    }
    leaks_iterations_trailing_text(iterations, tr, sizeof tr);
    if (!shown && !tr[0])
        return;
    fputs("Idle time (what the charts compress): ", out);
    md(out, shown ? line : "none inside the iterations");
    if (more)
        fprintf(out, " and %zu more", more);
    if (tr[0])
        fprintf(out, "; trailing idle %s after the last iteration", tr);
    fputs(".\n\n", out);
}

static void file_details(FILE *out, const cJSON *file)
{
    fputs("#### ", out);
    md(out, cli_json_str(file, "path"));
    fputs("\n\n", out);
    categories(out, file);
    const cJSON *dev;
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(file, "devices");
    /* Counted once: a count walks the list, and a file may have 65,536 devices. */
    bool several = devs && devs->child && devs->child->next;
    size_t shown_k = 0, left = 0;
    cJSON_ArrayForEach(dev, devs)
    {
        if (!report_device_shown(file, shown_k++, (int)cli_json_num(dev, "device"))) {
            left++;
            continue;
        }
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(dev, "shape");
        if (cJSON_IsObject(shape)) {
            char line[1024];
            shape_line_json(shape, line, sizeof line);
            fputs("**Recording**", out);
            if (several)
                fprintf(out, " (device %.0f)", cli_json_num(dev, "device"));
            fputs(": ", out);
            md(out, line);
            fputs("\n\n", out);
        }
        const cJSON *sites = cJSON_GetObjectItemCaseSensitive(dev, "top_sites");
        if (!sites || !sites->child)
            continue;
        md_idle(out, cJSON_GetObjectItemCaseSensitive(dev, "iterations"));
        fprintf(out, "Top sites alive at the peak%s", several ? " (device " : "");
        if (several)
            fprintf(out, "%.0f)", cli_json_num(dev, "device"));
        fputs(":\n\n| bytes | count | site |\n|--:|--:|---|\n", out);
        const cJSON *s;
        int k = 0;
        cJSON_ArrayForEach(s, sites)
        {
            if (k++ == MD_SITES)
                break;
            char b[32];
            size_text(cli_json_num(s, "bytes"), b, sizeof b);
            fprintf(out, "| %s | %.0f | ", b, cli_json_num(s, "count"));
            md(out, cli_json_str(s, "site"));
            fputc(' ', out);
            md_function(out, cli_json_str(s, "function"));
            md_user_frame(out, s, cli_json_str(s, "filename"), cli_json_num(s, "line"));
            fputs(" |\n", out);
        }
        fputc('\n', out);
        int n_oom = oom_count_json(dev);
        if (n_oom) {
            const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(dev, "ooms"), 0);
            char r[32], f[32];
            size_text(cli_json_num(o, "requested_bytes"), r, sizeof r);
            size_text(cli_json_num(o, "device_free_bytes"), f, sizeof f);
            fprintf(out, "**Out of memory**: %d allocation%s failed; the first asked for %s with "
                         "%s free.\n\n",
                    n_oom, n_oom == 1 ? "" : "s", r, f);
        }
    }
    devices_left_out(out, left);
    const cJSON *items = cli_json_get(file, "leaks.leaks");
    int shown = 0;
    const cJSON *L;
    cJSON_ArrayForEach(L, items)
    {
        const char *kind = cli_json_str(L, "kind");
        if (!strcmp(kind, "retained"))
            continue;
        if (shown == 0) {
            double iters = 0; /* without iterations nothing grows per iteration */
            const cJSON *ld;
            cJSON_ArrayForEach(ld, cli_json_get(file, "leaks.devices"))
                if (cli_json_num(ld, "iterations.count") > iters)
                    iters = cli_json_num(ld, "iterations.count");
            fprintf(out, "| kind | site | count | alive | growth%s |\n|---|---|--:|--:|--:|\n",
                    iters > 0 ? " / iteration" : "");
        }
        if (shown++ == MD_LEAKS)
            break;
        char b[32], g[48] = "-";
        size_text(cli_json_num(L, "bytes"), b, sizeof b);
        if (!strcmp(kind, "leak")) {
            char gb[32];
            size_text(cli_json_num(L, "growth_per_iteration.bytes") + 0.5, gb, sizeof gb);
            snprintf(g, sizeof g, "+%s", gb);
        }
        fputs("| ", out);
        md(out, kind);
        fputs(" | ", out);
        int nm = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(L, "members"));
        if (nm > 1) {
            /* One cause, several sites: the pattern, and for a pass the line calling it. */
            fprintf(out, "%s: %d sites", cli_json_str(L, "pattern"), nm);
            if (*cli_json_str(L, "call_site.filename")) {
                fputs(", model called at ", out);
                md(out, cli_basename(cli_json_str(L, "call_site.filename")));
                fprintf(out, ":%.0f ", cli_json_num(L, "call_site.line"));
                md(out, cli_json_str(L, "call_site.function"));
            }
        } else {
            md(out, cli_basename(cli_json_str(L, "site.filename")));
            fprintf(out, ":%.0f ", cli_json_num(L, "site.line"));
            md(out, cli_json_str(L, "site.function"));
            md_user_frame(out, L, cli_json_str(L, "site.filename"), cli_json_num(L, "site.line"));
        }
        fprintf(out, " | %.0f | %s | %s |\n", cli_json_num(L, "count"), b, g);
    }
    if (shown)
        fputc('\n', out);
}

static void write_page(FILE *out, const cJSON *doc)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(doc, "files");
    fputs("## ", out);
    md(out, cli_json_str(doc, "title"));
    fputs("\n\n", out);
    gates(out, cJSON_GetObjectItemCaseSensitive(doc, "gates"));
    overview(out, files);
    const cJSON *cmp = cJSON_GetObjectItemCaseSensitive(doc, "comparison");
    if (cJSON_IsObject(cmp))
        comparison(out, cmp);
    baseline(out, doc);
    fputs("### Details\n\n", out);
    /* A CI job summary must stay small however many files the report covers: the files'
     * details stop once the page holds MD_BUDGET bytes, and a line says where the rest
     * is (the overview above still has a row for every file). */
    long start = ftell(out);
    int left = cJSON_GetArraySize(files);
    const cJSON *file;
    cJSON_ArrayForEach(file, files)
    {
        long at = ftell(out);
        if (start >= 0 && at >= 0 && at > MD_BUDGET) {
            fprintf(out, "Details of %d more file%s: `index.html` and `summary.json`.\n\n", left,
                    left == 1 ? "" : "s");
            break;
        }
        file_details(out, file);
        report_md_ooms(out, file);
        left--;
    }
    fputs("Charts and full tables: `index.html` in the report directory; every number: "
          "`summary.json`.\n",
          out);
}

int report_write_markdown(FILE *out, const cJSON *doc)
{
    /* Written in memory first, where the page's length is known as it grows (the
     * report's own stream cannot tell its position). */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return -1;
    write_page(m, doc);
    bool bad = ferror(m) != 0;
    if (fclose(m) != 0 || bad) {
        free(buf);
        return -1;
    }
    fwrite(buf, 1, len, out);
    free(buf);
    return ferror(out) ? -1 : 0;
}
