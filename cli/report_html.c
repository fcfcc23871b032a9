/* index.html of `memsnap report`: one page that needs nothing but itself. No fonts, no
 * images by URL, no script but the interactive timeline's own (inline, allowed by its hash):
 * styles are inline, charts are inline SVG or the timeline's embedded data, and every text
 * that came from a snapshot (file names, function names, annotation names) is escaped,
 * since a snapshot is untrusted input and the page may be opened from a CI artifact. */
#include <stdlib.h>
#include <string.h>

#include "categories_json.h"
#include "cli_util.h"
#include "iterations_json.h"
#include "oom_json.h"
#include "shape_json.h"
#include "report.h"
#include "summary_input.h"
#include "summary_json.h"
#include "view_page.h"

#define MAX_ITER_ROWS 60
#define MAX_LEAK_ROWS 40

static const char *CSS =
    ":root{--fg:#1d2330;--muted:#5b6475;--line:#dfe3ea;--head:#f1f3f7;--bad:#b42318;"
    "--good:#067647;--warn:#93370d;--accent:#2e5aac}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:#f6f7f9;color:var(--fg);"
    "font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}\n"
    "main{max-width:1380px;margin:0 auto;padding:18px 28px 56px}\n"
    "h1{font-size:24px;margin:0}\n"
    "h2{font-size:20px;margin:34px 0 10px;padding-top:14px;border-top:2px solid var(--line)}\n"
    "h3{font-size:16px;margin:22px 0 8px}\n"
    "p{margin:6px 0}\n"
    ".sub{color:var(--muted);margin:2px 0 10px}\n"
    "nav{margin:8px 0 4px;font-size:14px}nav a{margin-right:14px}\n"
    "a{color:var(--accent)}\n"
    "table{border-collapse:collapse;background:#fff;font-size:14px;margin:6px 0 10px}\n"
    "th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}\n"
    "th{background:var(--head);font-weight:600;white-space:nowrap}\n"
    ".num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "table.wide{width:100%}\n"
    "table.kv th{background:none;font-weight:normal;color:var(--muted);padding-left:0}\n"
    "td.site{overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}\n"
    ".grid{display:grid;grid-template-columns:minmax(300px,400px) minmax(0,1fr);gap:24px;align-items:start}\n"
    ".grid.fit{grid-template-columns:auto minmax(0,1fr)}\n"
    "@media (max-width:900px){.grid,.grid.fit{grid-template-columns:1fr}}\n"
    ".banner{padding:10px 14px;border-radius:6px;margin:12px 0;border:1px solid}\n"
    ".banner b{font-size:16px}\n"
    ".banner ul{margin:6px 0 0;padding-left:20px}\n"
    ".pass{background:#ecfdf3;color:var(--good);border-color:#abefc6}\n"
    ".fail{background:#fef3f2;color:var(--bad);border-color:#fecdca}\n"
    ".none{background:#fff;color:var(--muted);border-color:var(--line)}\n"
    ".bad{color:var(--bad);font-weight:600}.good{color:var(--good)}\n"
    ".chart{background:#fff;border:1px solid var(--line);border-radius:6px;padding:6px;margin:10px 0 4px}\n"
    ".chart svg{display:block;width:100%;height:auto}\n"
    ".caption{color:var(--muted);font-size:13px;margin:2px 0 12px}\n"
    ".verdict{background:#fff;border-left:4px solid var(--accent);padding:8px 12px;margin:8px 0}\n"
    ".oom{background:#fffaeb;border:1px solid #fedf89;border-radius:6px;padding:8px 12px;margin:8px 0;color:var(--warn)}\n"
    ".muted{color:var(--muted)}\n"
    "details.stack summary{cursor:pointer;color:var(--accent);font-size:13px}\n"
    "details.stack pre{margin:4px 0;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}\n"
    "details.stack b{color:var(--fg)}\n"
    "td.member{padding-left:28px}\n";

/* ------------------------------------------------------------------ small writers */

static void esc(FILE *out, const char *s)
{
    report_html_escape(out, s);
}

static const char *file_anchor(size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "file-%zu", i + 1);
    return buf;
}

/* ------------------------------------------------------------------ sections */

static void check_item(FILE *out, bool passed, const char *message)
{
    fprintf(out, "<li>%s ", passed ? "passed" : "<b>FAILED</b>");
    esc(out, message);
    fputs("</li>\n", out);
}

static void gates_banner(FILE *out, const cJSON *gates)
{
    const cJSON *checked = cJSON_GetObjectItemCaseSensitive(gates, "checked");
    int n = cJSON_GetArraySize(checked);
    if (n == 0) {
        fputs("<div class=\"banner none\">No gates were set (see <code>memsnap report "
              "--help</code>: <code>--max-peak</code>, <code>--max-reserved</code>, "
              "<code>--fail-on-leaks</code>, <code>--fail-on-oom</code>, <code>--baseline</code> with "
              "<code>--max-growth</code>).</div>\n",
              out);
        return;
    }
    int failed = (int)cli_json_num(gates, "failed");
    fprintf(out, "<div class=\"banner %s\"><b>%s</b>: %d of %d check%s %s\n<ul>\n",
            failed ? "fail" : "pass", failed ? "Gates failed" : "All gates passed",
            failed ? failed : n, n, n == 1 ? "" : "s", failed ? "failed" : "passed");
    report_each_check(out, checked, check_item);
    fputs("</ul></div>\n", out);
}

static const cJSON *leaks_verdict(const cJSON *file)
{
    return cli_json_get(file, "leaks.verdict");
}

static void leaks_summary_text(const cJSON *file, char *buf, size_t cap)
{
    const cJSON *v = leaks_verdict(file);
    if (!v) {
        snprintf(buf, cap, "-");
        return;
    }
    double n = cli_json_num(v, "leaks"), s = cli_json_num(v, "suspects");
    if (n > 0) {
        char b[32];
        ms_format_bytes((int64_t)cli_json_num(v, "leaked_bytes"), b, sizeof b);
        snprintf(buf, cap, "%.0f (%s)", n, b);
    } else if (s > 0) {
        snprintf(buf, cap, "none; %.0f suspect%s", s, s == 1 ? "" : "s");
    } else {
        snprintf(buf, cap, "none");
    }
}

static double iteration_count(const cJSON *file, int device, const cJSON **hint)
{
    const cJSON *d = report_device_entry(cli_json_get(file, "leaks.devices"), device, hint);
    return d ? cli_json_num(d, "iterations.count") : -1;
}

static void overview(FILE *out, const cJSON *files)
{
    fputs("<h2 id=\"overview\">Overview</h2>\n<table class=\"wide\"><tr><th>file</th>"
          "<th class=\"num\">device</th><th class=\"num\">peak</th><th class=\"num\">peak at</th>"
          "<th class=\"num\">reserved peak</th><th class=\"num\">live at end</th>"
          "<th class=\"num\">iterations</th><th>leaks</th><th class=\"num\">OOMs</th></tr>\n",
          out);
    const cJSON *file;
    size_t i = 0;
    cJSON_ArrayForEach(file, files)
    {
        char anchor[32];
        file_anchor(i++, anchor, sizeof anchor);
        const cJSON *dev, *hint = NULL;
        size_t k = 0, left = 0;
        cJSON_ArrayForEach(dev, cJSON_GetObjectItemCaseSensitive(file, "devices"))
        {
            int d = (int)cli_json_num(dev, "device");
            if (!report_device_shown(file, k++, d)) {
                left++;
                continue;
            }
            fprintf(out, "<tr><td><a href=\"#%s\">", anchor);
            esc(out, cli_json_str(file, "path"));
            fprintf(out, "</a></td><td class=\"num\">%d</td>", d);
            report_cell_size(out, cli_json_num(dev, "peak.bytes"));
            char when[32];
            fprintf(out, "<td class=\"num\">%s</td>",
                    report_seconds(when, sizeof when, dev, "peak.seconds"));
            report_cell_size(out, cli_json_num(dev, "reserved.peak_bytes"));
            report_cell_size(out, cli_json_num(dev, "live_end.bytes"));
            double it = iteration_count(file, d, &hint);
            if (it >= 0)
                fprintf(out, "<td class=\"num\">%.0f</td>", it);
            else
                fputs("<td class=\"num\">-</td>", out);
            char lk[64];
            leaks_summary_text(file, lk, sizeof lk);
            bool bad = cli_json_num(leaks_verdict(file), "leaks") > 0;
            fprintf(out, "<td%s>%s</td>", bad ? " class=\"bad\"" : "", lk);
            int ooms = oom_count_json(dev);
            fprintf(out, "<td class=\"num%s\">%d</td></tr>\n", ooms ? " bad" : "", ooms);
        }
        if (left)
            fprintf(out, "<tr><td colspan=\"9\" class=\"muted\">... %zu more device%s in "
                         "summary.json</td></tr>\n", left, left == 1 ? "" : "s");
    }
    fputs("</table>\n", out);
}

static void device_facts(FILE *out, const cJSON *dev)
{
    char extra[128], b[32];
    fputs("<table class=\"kv\">\n", out);
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(dev, "shape");
    const char *what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(shape, "text"));
    if (what)
        report_kv_text(out, "recording", what, NULL);
    const char *ctext = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(shape, "compile"), "text"));
    if (ctext && !strncmp(ctext, "compile ", 8))
        report_kv_text(out, "compile", ctext + 8, NULL);
    const char *gtext = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(shape, "cuda_graphs"), "text"));
    if (gtext && !strncmp(gtext, "CUDA graphs: ", 13))
        report_kv_text(out, "CUDA graphs", gtext + 13, NULL);
    if (cJSON_IsNumber(cli_json_get(dev, "peak.seconds")))
        snprintf(extra, sizeof extra, "at %s (event %.0f)",
                 cli_seconds_text(b, sizeof b, cli_json_num(dev, "peak.seconds"),
                                  cli_json_num(dev, "time.seconds")),
                 cli_json_num(dev, "peak.event"));
    else
        snprintf(extra, sizeof extra, "at event %.0f", cli_json_num(dev, "peak.event"));
    report_kv_size(out, "peak", cli_json_num(dev, "peak.bytes"), extra);
    ms_format_bytes((int64_t)cli_json_num(dev, "reserved.end_bytes"), b, sizeof b);
    snprintf(extra, sizeof extra, "%s at the end", b);
    report_kv_size(out, "reserved peak", cli_json_num(dev, "reserved.peak_bytes"), extra);
    snprintf(extra, sizeof extra, "in %.0f allocation%s", cli_json_num(dev, "live_end.count"),
             cli_plural(cli_json_num(dev, "live_end.count")));
    report_kv_size(out, "live at end", cli_json_num(dev, "live_end.bytes"), extra);
    char ev[64], span[128];
    snprintf(ev, sizeof ev, "%.0f", cli_json_num(dev, "events"));
    if (cJSON_IsNumber(cli_json_get(dev, "time.seconds")))
        snprintf(span, sizeof span, "over %s",
                 cli_seconds_text(b, sizeof b, cli_json_num(dev, "time.seconds"),
                                  cli_json_num(dev, "time.seconds")));
    else if (cJSON_IsTrue(cli_json_get(dev, "one_instant")))
        snprintf(span, sizeof span, "all at one instant: no span of time");
    else if (cJSON_IsNumber(cli_json_get(dev, "times_backward_at")))
        cli_times_backward_text(span, sizeof span, cli_json_num(dev, "times_backward_at"));
    else
        snprintf(span, sizeof span, "this PyTorch recorded no times");
    report_kv_text(out, "events", ev, span);
    snprintf(ev, sizeof ev, "%.0f", cli_json_num(dev, "actions.alloc"));
    report_kv_text(out, "allocations", ev, NULL);
    bool complete = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "trace_complete"));
    if (complete) {
        report_kv_text(out, "trace", "complete", NULL);
    } else {
        ms_format_bytes((int64_t)cli_json_num(dev, "preexisting.bytes"), b, sizeof b);
        snprintf(extra, sizeof extra, "%s in %.0f allocation%s rebuilt from before the first event",
                 b, cli_json_num(dev, "preexisting.count"),
                 cli_plural(cli_json_num(dev, "preexisting.count")));
        report_kv_text(out, "trace", "incomplete", extra);
    }
    snprintf(ev, sizeof ev, "%.0f", cli_json_num(dev, "annotations"));
    report_kv_text(out, "annotations", ev, NULL);
    fputs("</table>\n", out);
}

static void top_sites(FILE *out, const cJSON *dev)
{
    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(dev, "top_sites");
    fputs("<h3 style=\"margin-top:4px\">Top sites alive at the peak</h3>\n", out);
    if (cJSON_GetArraySize(sites) == 0) {
        fputs("<p class=\"muted\">Nothing is alive at the peak.</p>\n", out);
        return;
    }
    double peak = cli_json_num(dev, "peak.bytes");
    fputs("<table class=\"wide\"><tr><th class=\"num\">bytes</th><th class=\"num\">share</th>"
          "<th class=\"num\">count</th><th>site</th></tr>\n",
          out);
    const cJSON *s;
    cJSON_ArrayForEach(s, sites)
    {
        double bytes = cli_json_num(s, "bytes");
        fputs("<tr>", out);
        report_cell_size(out, bytes);
        fprintf(out, "<td class=\"num\">%.1f%%</td>", peak > 0 ? 100.0 * bytes / peak : 0.0);
        fprintf(out, "<td class=\"num\">%.0f</td>", cli_json_num(s, "count"));
        report_cell_site_user(out, cli_json_str(s, "site"), cli_json_str(s, "function"), s,
                       cli_json_str(s, "filename"), cli_json_num(s, "line"));
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

static void ooms(FILE *out, const cJSON *dev)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(dev, "ooms");
    int n = oom_count_json(dev);
    if (!n)
        return;
    double t0 = cli_json_num(dev, "time.first_us");
    fprintf(out, "<div class=\"oom\"><b>Out of memory: %d allocation%s failed on device %.0f.</b>"
                 "<table><tr><th class=\"num\">event</th><th class=\"num\">at</th>"
                 "<th class=\"num\">requested</th><th class=\"num\">free on the device</th></tr>\n",
            n, n == 1 ? "" : "s", cli_json_num(dev, "device"));
    const cJSON *o;
    int shown = 0;
    cJSON_ArrayForEach(o, list)
    {
        if (shown++ == 20)
            break;
        if (cJSON_IsNumber(cli_json_get(o, "time_us")))
            fprintf(out, "<tr><td class=\"num\">%.0f</td><td class=\"num\">%.3f s</td>",
                    cli_json_num(o, "event"), (cli_json_num(o, "time_us") - t0) / 1e6);
        else
            fprintf(out, "<tr><td class=\"num\">%.0f</td><td class=\"num\">-</td>",
                    cli_json_num(o, "event"));
        report_cell_size(out, cli_json_num(o, "requested_bytes"));
        report_cell_size(out, cli_json_num(o, "device_free_bytes"));
        fputs("</tr>\n", out);
    }
    fputs("</table>", out);
    if (n > 20)
        fprintf(out, "<p>... and %d more.</p>", n - 20);
    fputs("</div>\n", out);
}

/* A finding's stack, collapsed until clicked: the user's frames in bold, runs of torch's
 * own and native frames folded into one line (`memsnap leaks --stack` prints the same). */
static void fold_line(FILE *out, int torch, int native)
{
    if (!torch && !native)
        return;
    fputs("<span class=\"muted\">  ... ", out);
    if (torch)
        fprintf(out, "%d torch frame%s", torch, torch == 1 ? "" : "s");
    if (torch && native)
        fputs(" and ", out);
    if (native)
        fprintf(out, "%d native frame%s", native, native == 1 ? "" : "s");
    fputs("</span>\n", out);
}

static void stack_details(FILE *out, const cJSON *stack)
{
    int n = cJSON_GetArraySize(stack), users = 0, torches = 0;
    if (n == 0)
        return;
    const cJSON *f;
    cJSON_ArrayForEach(f, stack)
    {
        users += !strcmp(cli_json_str(f, "kind"), "user");
        torches += !strcmp(cli_json_str(f, "kind"), "torch");
    }
    fprintf(out, "<details class=\"stack\"><summary>stack of one allocation (%d frame%s, "
                 "innermost first)</summary><pre>",
            n, cli_plural(n));
    int torch = 0, native = 0, shown = 0;
    cJSON_ArrayForEach(f, stack)
    {
        const char *kind = cli_json_str(f, "kind");
        bool user = !strcmp(kind, "user"), is_torch = !strcmp(kind, "torch");
        /* Without user frames (a backward node), torch's frames are what there is. */
        bool show = user || (!users && is_torch) || (!users && !torches && !shown);
        if (!show) {
            torch += is_torch;
            native += !is_torch;
            continue;
        }
        fold_line(out, torch, native);
        torch = native = 0;
        shown++;
        char line[32] = ":? "; /* a null line: the snapshot gave none */
        if (cJSON_IsNumber(cli_json_get(f, "line")))
            snprintf(line, sizeof line, ":%.0f ", cli_json_num(f, "line"));
        fputs(user ? "<b>&gt; " : "  ", out);
        esc(out, cli_json_str(f, "filename"));
        esc(out, line);
        esc(out, cli_json_str(f, "name"));
        fputs(user ? "</b>\n" : "\n", out);
    }
    fold_line(out, torch, native);
    fputs("</pre></details>", out);
}

/* A finding's (or a member's) site, "file.py:12" or "(no stack)", and its bytes each,
 * "2.00 MiB" or a range "1.00 MiB..4.00 MiB". */
static void leak_site_each(const cJSON *L, char *site, size_t site_cap, char *each,
                           size_t each_cap)
{
    char a[32], b[32];
    snprintf(site, site_cap, "%s:%.0f", cli_basename(cli_json_str(L, "site.filename")),
             cli_json_num(L, "site.line"));
    if (!*cli_json_str(L, "site.filename"))
        snprintf(site, site_cap, "(no stack)");
    ms_format_bytes((int64_t)cli_json_num(L, "bytes_each"), a, sizeof a);
    ms_format_bytes((int64_t)cli_json_num(L, "bytes_each_max"), b, sizeof b);
    if (cli_json_num(L, "bytes_each_max") > cli_json_num(L, "bytes_each"))
        snprintf(each, each_cap, "%s..%s", a, b);
    else
        snprintf(each, each_cap, "%s", a);
}

static void leaks_table(FILE *out, const cJSON *file)
{
    const cJSON *lk = cJSON_GetObjectItemCaseSensitive(file, "leaks");
    fputs("<h3>Leaks</h3>\n", out);
    if (!cJSON_IsObject(lk)) {
        fputs("<p class=\"muted\">Leak analysis not available in this build.</p>\n", out);
        return;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(lk, "verdict");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(lk, "leaks");
    double n_leaks = cli_json_num(v, "leaks");
    fprintf(out, "<p class=\"%s\">", n_leaks > 0 ? "bad" : "good");
    if (n_leaks > 0) {
        char b[32], g[32];
        ms_format_bytes((int64_t)cli_json_num(v, "leaked_bytes"), b, sizeof b);
        ms_format_bytes((int64_t)(cli_json_num(v, "growth_bytes_per_iteration") + 0.5), g, sizeof g);
        double sites = cli_json_num(v, "leak_sites") > n_leaks ? cli_json_num(v, "leak_sites") : n_leaks;
        fprintf(out, "LEAK: %.0f site%s", sites, sites == 1 ? "" : "s");
        if (n_leaks < sites)
            fprintf(out, " (%.0f finding%s)", n_leaks, n_leaks == 1 ? "" : "s");
        fprintf(out, " hold%s %s and grow%s by %s per iteration.", sites == 1 ? "s" : "", b,
                sites == 1 ? "s" : "", g);
    } else {
        fputs("No leak found.", out);
    }
    double s = cli_json_num(v, "suspects");
    if (s > 0)
        fprintf(out, " <span class=\"muted\">%.0f suspect%s: kept while the rest of their layer "
                     "call was freed (lower confidence).</span>",
                s, s == 1 ? "" : "s");
    fputs("</p>\n", out);
    if (cJSON_GetArraySize(items) == 0)
        return;
    /* Without iterations nothing grows per iteration (one forward's alive_at_end). */
    double iters = 0;
    const cJSON *ld;
    cJSON_ArrayForEach(ld, cJSON_GetObjectItemCaseSensitive(lk, "devices"))
        if (cli_json_num(ld, "iterations.count") > iters)
            iters = cli_json_num(ld, "iterations.count");
    fprintf(out, "<table class=\"wide\"><tr><th>kind</th><th>site</th><th>layer</th>"
                 "<th class=\"num\">count</th><th class=\"num\">bytes each</th>"
                 "<th class=\"num\">alive</th><th class=\"num\">growth%s</th>"
                 "<th class=\"num\">first</th><th class=\"num\">last</th></tr>\n",
            iters > 0 ? " / iteration" : "");
    const cJSON *L;
    int rows = 0;
    cJSON_ArrayForEach(L, items)
    {
        if (rows++ == MAX_LEAK_ROWS)
            break;
        const char *kind = cli_json_str(L, "kind");
        char site[600], each[80], growth[80] = "-";
        leak_site_each(L, site, sizeof site, each, sizeof each);
        if (!strcmp(kind, "leak")) {
            char gb[32];
            ms_format_bytes((int64_t)(cli_json_num(L, "growth_per_iteration.bytes") + 0.5), gb,
                            sizeof gb);
            snprintf(growth, sizeof growth, "+%.3g alloc%s, +%s",
                     cli_json_num(L, "growth_per_iteration.count"),
                     cli_plural(cli_json_num(L, "growth_per_iteration.count")), gb);
        }
        const cJSON *members = cJSON_GetObjectItemCaseSensitive(L, "members");
        int nm = cJSON_GetArraySize(members);
        fprintf(out, "<tr><td class=\"%s\">", !strcmp(kind, "leak") ? "bad" : "");
        esc(out, kind);
        fputs("</td>", out);
        if (nm > 1) {
            /* One cause, several sites: the pattern is the finding, its sites follow. */
            snprintf(site, sizeof site, "%s: %d sites", cli_json_str(L, "pattern"), nm);
            report_cell_site(out, site, NULL);
            report_cell_site(out, "-", NULL);
        } else {
            report_cell_site_user(out, site, cli_json_str(L, "site.function"), L,
                           cli_json_str(L, "site.filename"), cli_json_num(L, "site.line"));
            const char *layer = cli_json_str(L, "layer");
            report_cell_site(out, *layer ? layer : "-", NULL);
        }
        fprintf(out, "<td class=\"num\">%.0f</td>", cli_json_num(L, "count"));
        report_cell_text(out, "num", each);
        report_cell_size(out, cli_json_num(L, "bytes"));
        report_cell_text(out, "num", growth);
        fprintf(out, "<td class=\"num\">%.3f s</td><td class=\"num\">%.3f s</td></tr>\n",
                cli_json_num(L, "first_alloc_s"), cli_json_num(L, "last_alloc_s"));
        if (nm > 1 || !strcmp(cli_json_str(L, "pattern"), "workspace")) {
            fputs("<tr><td></td><td colspan=\"8\"><b>", out);
            esc(out, cli_json_str(L, "pattern"));
            fputs("</b>", out);
            if (*cli_json_str(L, "call_site.filename")) {
                char cs[600];
                snprintf(cs, sizeof cs, " (model called at %s:%.0f %s)",
                         cli_basename(cli_json_str(L, "call_site.filename")),
                         cli_json_num(L, "call_site.line"), cli_json_str(L, "call_site.function"));
                esc(out, cs);
            }
            fputs(": ", out);
            esc(out, cli_json_str(L, "pattern_text"));
            fputs("</td></tr>\n", out);
        }
        const cJSON *M, *listed = nm > 1 ? members : NULL;
        cJSON_ArrayForEach(M, listed)
        {
            char msite[600], meach[80];
            leak_site_each(M, msite, sizeof msite, meach, sizeof meach);
            fputs("<tr><td></td><td class=\"site member\">", out);
            esc(out, msite);
            fputc(' ', out);
            esc(out, cli_json_str(M, "site.function"));
            fputs("</td>", out);
            const char *ml = cli_json_str(M, "layer");
            report_cell_site(out, *ml ? ml : "-", NULL);
            fprintf(out, "<td class=\"num\">%.0f</td>", cli_json_num(M, "count"));
            report_cell_text(out, "num", meach);
            report_cell_size(out, cli_json_num(M, "bytes"));
            fputs("<td></td><td></td><td></td></tr>\n", out);
        }
        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(L, "stack"))) {
            fputs("<tr><td></td><td colspan=\"8\">", out);
            stack_details(out, cJSON_GetObjectItemCaseSensitive(L, "stack"));
            fputs("</td></tr>\n", out);
        }
    }
    fputs("</table>\n", out);
    if (cJSON_GetArraySize(items) > MAX_LEAK_ROWS)
        fprintf(out, "<p class=\"muted\">... %d more in summary.json.</p>\n",
                cJSON_GetArraySize(items) - MAX_LEAK_ROWS);
}

/* The devices a section leaves out (report_device_shown). */
static void devices_left_out(FILE *out, size_t left)
{
    if (left)
        fprintf(out, "<p class=\"muted\">... %zu more device%s in summary.json.</p>\n", left,
                left == 1 ? "" : "s");
}

static void iterations_table(FILE *out, const cJSON *file)
{
    const cJSON *dev;
    size_t k = 0, left = 0;
    cJSON_ArrayForEach(dev, cli_json_get(file, "leaks.devices"))
    {
        if (!report_device_shown(file, k++, (int)cli_json_num(dev, "device"))) {
            left++;
            continue;
        }
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(dev, "iterations");
        double n = cli_json_num(it, "count");
        fprintf(out, "<h3>Iterations (device %.0f)</h3>\n<p>", cli_json_num(dev, "device"));
        if (n == 0) {
            fputs("None found: ", out);
            esc(out, cli_json_str(it, "method_text"));
            fputs(".</p>\n", out);
            continue;
        }
        fprintf(out, "%.0f, found by ", n);
        esc(out, cli_json_str(it, "method"));
        fputs(" <span class=\"muted\">(", out);
        esc(out, cli_json_str(it, "method_text"));
        if (*cli_json_str(it, "detail")) {
            fputs("; ", out);
            esc(out, cli_json_str(it, "detail"));
        }
        fputs(")</span>. Live memory that grows from one iteration end to the next is the "
              "first sign of a leak.</p>\n",
              out);
        /* Busy and idle time apart, as summary and the run axis tell them, once some
         * iteration had idle time. */
        const cJSON *x;
        bool idle = false;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(it, "items"))
            idle = idle || cli_json_num(x, "idle_before_s") > 0 || cli_json_num(x, "idle_inside_s") > 0;
        fprintf(out, "<table><tr><th class=\"num\">#</th><th class=\"num\">start</th>"
                     "<th class=\"num\">%s</th><th class=\"num\">peak</th>"
                     "<th class=\"num\">live at end</th><th class=\"num\">change</th>%s</tr>\n",
                idle ? "busy" : "duration", idle ? "<th>idle</th>" : "");
        int rows = 0;
        double prev = -1;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(it, "items"))
        {
            double live = cli_json_num(x, "live_end_bytes");
            if (rows++ < MAX_ITER_ROWS) {
                char w0[32], w1[32];
                if (!cJSON_IsNumber(cli_json_get(x, "start_s"))) { /* no times: events */
                    snprintf(w0, sizeof w0, "event %.0f", cli_json_num(x, "start_event"));
                    snprintf(w1, sizeof w1, "%.0f events",
                             cli_json_num(x, "end_event") - cli_json_num(x, "start_event"));
                } else {
                    report_seconds(w0, sizeof w0, x, "start_s");
                    report_seconds(w1, sizeof w1, x,
                                   cJSON_IsNumber(cli_json_get(x, "busy_s")) ? "busy_s"
                                                                            : "duration_s");
                }
                fprintf(out, "<tr><td class=\"num\">%.0f%s</td><td class=\"num\">%s</td>"
                             "<td class=\"num\">%s</td>",
                        cli_json_num(x, "index"),
                        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "partial")) ? " (partial)"
                                                                                     : "",
                        w0, w1);
                report_cell_size(out, cli_json_num(x, "peak_bytes"));
                report_cell_size(out, live);
                char d[48] = "";
                if (prev >= 0)
                    report_signed_size(live - prev, d, sizeof d);
                fprintf(out, "<td class=\"num\">%s</td>", d);
                if (idle) {
                    char iw[128];
                    leaks_iteration_idle_text(x, iw, sizeof iw);
                    fprintf(out, "<td class=\"muted\">%s</td>", iw);
                }
                /* A CUDA-graph replay: what it really holds is its live bytes plus the
                 * pool (said once above the table). */
                if (cJSON_IsNumber(cli_json_get(x, "footprint_bytes"))) {
                    char fb[32];
                    ms_format_bytes((int64_t)cli_json_num(x, "footprint_bytes"), fb, sizeof fb);
                    fprintf(out, "<td>replay: %s with the pool</td>", fb);
                }
                fputs("</tr>\n", out);
            }
            prev = live;
        }
        /* The iteration an OOM ended, last and marked, as summary and oom list it. */
        const cJSON *unf = cJSON_GetObjectItemCaseSensitive(it, "unfinished");
        if (cJSON_IsObject(unf)) {
            char w0[32] = "", w1[32] = "";
            if (cJSON_IsNumber(cli_json_get(unf, "start_s"))) {
                report_seconds(w0, sizeof w0, unf, "start_s");
                report_seconds(w1, sizeof w1, unf, "duration_s");
            }
            fprintf(out, "<tr><td class=\"num\">%.0f</td><td class=\"num\">%s</td>"
                         "<td class=\"num\">%s</td>",
                    cli_json_num(unf, "index"), w0, w1);
            report_cell_size(out, cli_json_num(unf, "peak_bytes"));
            fputs("<td class=\"num\">-</td><td>unfinished: the failure (peak so far)</td></tr>\n",
                  out);
        }
        fputs("</table>\n", out);
        char tr[32];
        leaks_iterations_trailing_text(it, tr, sizeof tr);
        if (tr[0])
            fprintf(out, "<p class=\"muted\">Trailing idle: %s after the last iteration.</p>\n",
                    tr);
        if (rows > MAX_ITER_ROWS)
            fprintf(out, "<p class=\"muted\">... %d more in summary.json.</p>\n",
                    rows - MAX_ITER_ROWS);
    }
    devices_left_out(out, left);
}

/* What the memory is on the charted device: bytes by category at the peak and at the
 * end of the last iteration, and the training-memory formula with measured numbers. */
static void categories_table(FILE *out, const cJSON *file)
{
    static const char *const names[] = {"parameter", "gradient",  "optimizer_state",
                                        "activation", "temporary", "workspace",
                                        "input",      "other"};
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(file, "categories");
    if (!cJSON_IsObject(c))
        return;
    const cJSON *iters = cJSON_GetObjectItemCaseSensitive(c, "iterations");
    int nit = cJSON_GetArraySize(iters);
    const cJSON *last = nit ? cJSON_GetArrayItem(iters, nit - 1) : NULL;
    double peak = cli_json_num(c, "peak.bytes"), end = last ? cli_json_num(last, "end_bytes") : 0;
    fprintf(out, "<h3>What the memory is (device %.0f)</h3>\n<p>Each allocation's category "
                 "comes from the phase it was made in (%.0f forward, %.0f backward, %.0f "
                 "optimizer step found) and whether it outlived it.</p>\n",
            cli_json_num(c, "device"), cli_json_num(c, "phases.forward"),
            cli_json_num(c, "phases.backward"), cli_json_num(c, "phases.optimizer"));
    fputs("<table><tr><th>category</th><th class=\"num\">at the peak</th>"
          "<th class=\"num\">share</th>",
          out);
    if (last)
        fprintf(out, "<th class=\"num\">end of iteration %.0f</th>", cli_json_num(last, "index"));
    fputs("</tr>\n", out);
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        double v = cli_json_num(cli_json_get(c, "peak.categories"), names[k]);
        fputs("<tr><td>", out);
        esc(out, names[k]);
        fputs("</td>", out);
        report_cell_size(out, v);
        fprintf(out, "<td class=\"num\">%.1f%%</td>", peak > 0 ? 100.0 * v / peak : 0.0);
        if (last)
            report_cell_size(out, cli_json_num(cli_json_get(last, "at_end"), names[k]));
        fputs("</tr>\n", out);
    }
    fputs("<tr><td>total</td>", out);
    report_cell_size(out, peak);
    fputs("<td class=\"num\">100%</td>", out);
    if (last)
        report_cell_size(out, end);
    fputs("</tr></table>\n", out);
    char free_line[256];
    if (categories_peak_free_text(cJSON_GetObjectItemCaseSensitive(c, "peak"), free_line,
                                  sizeof free_line)) {
        free_line[0] = 'A'; /* a sentence of its own */
        fputs("<p>", out);
        esc(out, free_line);
        fputs(".</p>\n", out);
    }
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "formula");
    const char *form = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "form"));
    if (cJSON_IsObject(f) && form && !strcmp(form, "inference")) {
        char p[32], in[32], a[32], e[32], m[32];
        ms_format_bytes((int64_t)cli_json_num(f, "parameter"), p, sizeof p);
        ms_format_bytes((int64_t)cli_json_num(f, "input"), in, sizeof in);
        ms_format_bytes((int64_t)cli_json_num(f, "activation_temporary"), a, sizeof a);
        ms_format_bytes((int64_t)cli_json_num(f, "estimate"), e, sizeof e);
        ms_format_bytes((int64_t)cli_json_num(f, "measured_peak"), m, sizeof m);
        fprintf(out, "<p>Iteration %.0f, an inference run (no backward, no optimizer step): "
                     "parameters + inputs and KV caches + activations and temporaries = %s + "
                     "%s + %s = %s; measured peak %s.</p>\n",
                cli_json_num(f, "iteration"), p, in, a, e, m);
    } else if (cJSON_IsObject(f)) {
        char p[32], o[32], g[32], t[32], a[32], e[32], m[32];
        ms_format_bytes((int64_t)cli_json_num(f, "parameter"), p, sizeof p);
        ms_format_bytes((int64_t)cli_json_num(f, "optimizer_state"), o, sizeof o);
        ms_format_bytes((int64_t)cli_json_num(f, "gradient"), g, sizeof g);
        ms_format_bytes((int64_t)cli_json_num(f, "optimizer_temporary"), t, sizeof t);
        ms_format_bytes((int64_t)cli_json_num(f, "activation"), a, sizeof a);
        ms_format_bytes((int64_t)cli_json_num(f, "estimate"), e, sizeof e);
        ms_format_bytes((int64_t)cli_json_num(f, "measured_peak"), m, sizeof m);
        fprintf(out, "<p>Iteration %.0f, the guide's formula: parameters + optimizer state + "
                     "max(gradients + optimizer intermediates, activations) = %s + %s + "
                     "max(%s + %s, %s) = %s; measured peak %s.</p>\n",
                cli_json_num(f, "iteration"), p, o, g, t, a, e, m);
    }
}

/* The chart by category under the table: the same timeline, each band one category. */
static void category_chart(FILE *out, const cJSON *file, const char *svg)
{
    if (!svg || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(file, "categories")))
        return;
    fputs("<div class=\"chart\">", out);
    fputs(svg, out);
    fputs("</div>\n<p class=\"caption\">Active memory over time by category: parameters at "
          "the bottom, then optimizer state, workspaces, gradients, the input batch, "
          "activations and temporaries, each band the bytes its category holds",
          out);
    const char *png = cli_json_str(file, "categories_png");
    if (*png) {
        fputs(" (also <code>", out);
        esc(out, png);
        fputs("</code>)", out);
    }
    fputs(".</p>\n", out);
}

static void file_section(FILE *out, const cJSON *file, size_t index, const char *view,
                         const char *cat_svg)
{
    char anchor[32];
    fprintf(out, "<h2 id=\"%s\">", file_anchor(index, anchor, sizeof anchor));
    esc(out, cli_json_str(file, "path"));
    fputs("</h2>\n<p class=\"sub\">", out);
    fprintf(out, "pickle protocol %.0f, %.0f byte%s", cli_json_num(file, "pickle_protocol"),
            cli_json_num(file, "pickle_bytes"), cli_plural(cli_json_num(file, "pickle_bytes")));
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(file, "allocator_settings");
    const cJSON *kv;
    bool first = true;
    cJSON_ArrayForEach(kv, set)
    {
        if (!cJSON_IsString(kv) || summary_setting_is_default(kv->string, kv->valuestring))
            continue; /* what every file has says nothing */
        fputs(first ? " · allocator: " : ", ", out);
        esc(out, kv->string);
        fputc('=', out);
        esc(out, kv->valuestring);
        first = false;
    }
    fputs("</p>\n", out);
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(file, "devices");
    if (cJSON_GetArraySize(devs) == 0)
        fputs("<p class=\"muted\">No device has events or segments.</p>\n", out);
    int chart_dev = (int)cli_json_num(file, "chart_device");
    /* Counted once: a count walks the list, and a file may have 65,536 devices. */
    bool several = devs && devs->child && devs->child->next;
    const cJSON *dev;
    size_t k = 0, left = 0;
    cJSON_ArrayForEach(dev, devs)
    {
        int d = (int)cli_json_num(dev, "device");
        if (!report_device_shown(file, k++, d)) {
            left++;
            continue;
        }
        if (several)
            fprintf(out, "<h3>Device %d</h3>\n", d);
        fputs("<div class=\"grid\"><div>\n", out);
        device_facts(out, dev);
        fputs("</div><div>\n", out);
        top_sites(out, dev);
        fputs("</div></div>\n", out);
        ooms(out, dev);
        if (view && d == chart_dev) {
            view_write_chart(out, view, index + 1);
            fputs("<p class=\"caption\">Active memory over time on device ", out);
            fprintf(out, "%d: each large allocation is a band stacked on those alive below it, "
                         "smaller ones form the grey band on top; leaked allocations are "
                         "outlined in red; hover a band for its allocation, click it for its "
                         "stack trace, drag to zoom, double-click to zoom out",
                    d);
            const char *png = cli_json_str(file, "timeline_png");
            if (*png) {
                fputs(" (also <code>", out);
                esc(out, png);
                fputs("</code>)", out);
            }
            fputs(".</p>\n", out);
        }
    }
    devices_left_out(out, left);
    categories_table(out, file);
    category_chart(out, file, cat_svg);
    leaks_table(out, file);
    iterations_table(out, file);
}

int report_write_html(FILE *out, const cJSON *doc, const report_svgs *svgs)
{
    const char *title = cli_json_str(doc, "title");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(doc, "files");
    int n = cJSON_GetArraySize(files);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          /* Belt and braces: even if some text slipped through unescaped, the browser
           * may load nothing and run nothing. */
          "<meta http-equiv=\"Content-Security-Policy\" content=\"",
          out);
    /* The interactive charts' one script is allowed by its hash; nothing else runs. */
    fputs(view_csp(), out);
    fputs("\">\n<title>", out);
    esc(out, title);
    fprintf(out, "</title>\n<style>\n%s", CSS);
    view_write_css(out);
    fputs("</style></head>\n<body><main>\n<h1>", out);
    esc(out, title);
    fprintf(out, "</h1>\n<p class=\"sub\">%d snapshot%s · memsnap %s · <code>summary.json</code> "
                 "and <code>summary.md</code> beside this page hold the same facts</p>\n",
            n, n == 1 ? "" : "s", cli_json_str(doc, "memsnap_version"));
    fputs("<nav><a href=\"#overview\">Overview</a>", out);
    const cJSON *cmp = cJSON_GetObjectItemCaseSensitive(doc, "comparison");
    if (cJSON_IsObject(cmp))
        fputs("<a href=\"#comparison\">Comparison</a>", out);
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "baseline")))
        fputs("<a href=\"#baseline\">Baseline</a>", out);
    const cJSON *file;
    size_t i = 0;
    cJSON_ArrayForEach(file, files)
    {
        char anchor[32];
        fprintf(out, "<a href=\"#%s\">", file_anchor(i++, anchor, sizeof anchor));
        esc(out, cli_basename(cli_json_str(file, "path")));
        fputs("</a>", out);
    }
    fputs("</nav>\n", out);
    gates_banner(out, cJSON_GetObjectItemCaseSensitive(doc, "gates"));
    overview(out, files);
    if (cJSON_IsObject(cmp))
        report_html_comparison(out, cmp, svgs ? svgs->compare_svg : NULL);
    report_html_baseline(out, doc);
    i = 0;
    bool any_view = false;
    cJSON_ArrayForEach(file, files)
    {
        const char *view = svgs && svgs->file_view && i < svgs->n_files ? svgs->file_view[i]
                                                                          : NULL;
        const char *cat_svg = svgs && svgs->category_svg && i < svgs->n_files
                                  ? svgs->category_svg[i]
                                  : NULL;
        any_view = any_view || view;
        file_section(out, file, i, view, cat_svg);
        report_html_ooms(out, file, svgs && svgs->oom_svg && i < svgs->n_files ? svgs->oom_svg[i] : NULL);
        i++;
    }
    fputs("</main>\n", out);
    if (any_view)
        view_write_script(out);
    fputs("</body></html>\n", out);
    return ferror(out) ? -1 : 0;
}
