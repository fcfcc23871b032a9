/* The report page's comparison sections (report.h): files side by side (two files,
 * or ranks of one job with their outliers) and the change against a baseline. Split
 * from report_html.c, which writes the page around them. */
#include <string.h>

#include "cli_util.h"
#include "report.h"

static void pair_sites_table(FILE *out, const cJSON *sites, const char *la, const char *lb)
{
    if (cJSON_GetArraySize(sites) == 0)
        return;
    bool moves = false;
    const cJSON *s;
    cJSON_ArrayForEach(s, sites) moves = moves || cJSON_GetObjectItemCaseSensitive(s, "b_site");
    fputs(moves ? "<table class=\"wide\"><tr><th>site</th><th></th><th class=\"num\">"
                : "<table class=\"wide\"><tr><th>site</th><th class=\"num\">",
          out);
    report_html_escape(out, la);
    fputs("</th><th class=\"num\">", out);
    report_html_escape(out, lb);
    fputs("</th><th class=\"num\">change</th></tr>\n", out);
    cJSON_ArrayForEach(s, sites)
    {
        char d[48];
        fputs("<tr>", out);
        report_cell_site(out, cli_json_str(s, "site"), cli_json_str(s, "function"));
        char mv[2100];
        if (report_site_moved(s, mv, sizeof mv)) {
            /* The same code at another line: one row, the move beside the site. */
            fputs("<td class=\"muted\">", out);
            report_html_escape(out, mv);
            fputs("</td>", out);
        } else if (moves) {
            fputs("<td></td>", out);
        }
        report_cell_size(out, cli_json_num(s, "a_bytes"));
        report_cell_size(out, cli_json_num(s, "b_bytes"));
        report_signed_size(cli_json_num(s, "delta_bytes"), d, sizeof d);
        fprintf(out, "<td class=\"num\">%s</td></tr>\n", d);
    }
    fputs("</table>\n", out);
}

static const char *const METRIC_ROWS[][2] = {
    {"peak_bytes", "peak"},
    {"reserved_peak_bytes", "reserved peak"},
    {"reserved_end_bytes", "reserved at end"},
    {"live_end_bytes", "live at end"},
    {"live_end_count", "live allocations"},
    {"allocs", "allocations"},
    {"ooms", "OOMs"},
};

static void pair_section(FILE *out, const cJSON *pair, const char *title_sites)
{
    const char *la = cli_json_str(pair, "a_label"), *lb = cli_json_str(pair, "b_label");
    fputs("<p class=\"verdict\">", out);
    report_html_escape(out, cli_json_str(pair, "verdict"));
    fputs("</p>\n<div class=\"grid fit\"><div><table><tr><th></th><th class=\"num\">", out);
    report_html_escape(out, la);
    fputs("</th><th class=\"num\">", out);
    report_html_escape(out, lb);
    fputs("</th><th class=\"num\">change</th><th class=\"num\"></th></tr>\n", out);
    for (size_t k = 0; k < sizeof METRIC_ROWS / sizeof METRIC_ROWS[0]; k++) {
        const cJSON *m = cli_json_get(cli_json_get(pair, "metrics"), METRIC_ROWS[k][0]);
        bool bytes = strstr(METRIC_ROWS[k][0], "bytes") != NULL;
        fprintf(out, "<tr><th>%s</th>", METRIC_ROWS[k][1]);
        if (bytes) {
            char d[48];
            report_cell_size(out, cli_json_num(m, "a"));
            report_cell_size(out, cli_json_num(m, "b"));
            report_signed_size(cli_json_num(m, "delta"), d, sizeof d);
            fprintf(out, "<td class=\"num\">%s</td>", d);
        } else {
            fprintf(out, "<td class=\"num\">%.0f</td><td class=\"num\">%.0f</td>"
                         "<td class=\"num\">%s%.0f</td>",
                    cli_json_num(m, "a"), cli_json_num(m, "b"), cli_json_num(m, "delta") > 0 ? "+" : "",
                    cli_json_num(m, "delta"));
        }
        report_cell_pct(out, cJSON_GetObjectItemCaseSensitive(m, "pct"));
        fputs("</tr>\n", out);
    }
    fputs("</table></div><div>\n", out);
    fprintf(out, "<h3 style=\"margin-top:4px\">%s</h3>\n", title_sites);
    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(pair, "sites");
    if (cJSON_GetArraySize(sites))
        pair_sites_table(out, sites, la, lb);
    else
        fputs("<p class=\"muted\">No site holds a different amount at the peak.</p>\n", out);
    fputs("</div></div>\n", out);
}

static void delta_cell(FILE *out, const cJSON *row, const char *value_key, const char *pct_key,
                       bool flagged)
{
    char v[32];
    ms_format_bytes((int64_t)cli_json_num(row, value_key), v, sizeof v);
    const cJSON *pct = cJSON_GetObjectItemCaseSensitive(row, pct_key);
    fprintf(out, "<td class=\"num%s\">%s ", flagged ? " bad" : "", v);
    if (cJSON_IsNumber(pct))
        fprintf(out, "<span class=\"muted\">(%+.1f%%)</span>", pct->valuedouble);
    fprintf(out, "%s</td>", flagged ? " *" : "");
}

static bool outlier_metric(const cJSON *ranks, double file, const char *metric)
{
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(ranks, "outliers"))
    {
        if (cli_json_num(o, "file") == file && !strcmp(cli_json_str(o, "metric"), metric))
            return true;
    }
    return false;
}

void report_html_comparison(FILE *out, const cJSON *cmp, const char *svg)
{
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(cmp, "ranks");
    fputs("<h2 id=\"comparison\">Comparison</h2>\n", out);
    const cJSON *pair = cJSON_GetObjectItemCaseSensitive(cmp, "pair");
    if (cJSON_IsObject(pair))
        pair_section(out, pair, "Sites by change in bytes held at the peak");
    if (svg) {
        fputs("<div class=\"chart\">", out);
        fputs(svg, out);
        fputs("</div>\n", out);
        const char *png = cli_json_str(cmp, "ranks_png");
        fputs("<p class=\"caption\">Active memory of every file on shared scales", out);
        if (*png) {
            fputs(" (also <code>", out);
            report_html_escape(out, png);
            fputs("</code>)", out);
        }
        fputs(".</p>\n", out);
    }
    /* Two files are a pair: the median of two is their mean and says nothing more. */
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ranks, "is_pair")))
        return;
    fprintf(out, "<h3>Ranks against the median</h3>\n<table class=\"wide\"><tr><th>file</th>"
                 "<th class=\"num\">rank</th><th class=\"num\">device</th>"
                 "<th class=\"num\">peak</th><th class=\"num\">reserved peak</th>"
                 "<th class=\"num\">live at end</th><th class=\"num\">peak at</th>"
                 "<th>top site at peak</th></tr>\n");
    const cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(ranks, "ranks"))
    {
        double f = cli_json_num(row, "file");
        fputs("<tr>", out);
        report_cell_text(out, NULL, cli_json_str(row, "label"));
        const cJSON *rank = cJSON_GetObjectItemCaseSensitive(row, "rank");
        if (cJSON_IsNumber(rank))
            fprintf(out, "<td class=\"num\">%d</td>", rank->valueint);
        else
            fputs("<td class=\"num\">-</td>", out);
        fprintf(out, "<td class=\"num\">%.0f</td>", cli_json_num(row, "device"));
        delta_cell(out, row, "peak_bytes", "peak_delta_pct",
                   outlier_metric(ranks, f, "peak_bytes"));
        delta_cell(out, row, "reserved_peak_bytes", "reserved_delta_pct",
                   outlier_metric(ranks, f, "reserved_peak_bytes"));
        delta_cell(out, row, "live_end_bytes", "live_end_delta_pct",
                   outlier_metric(ranks, f, "live_end_bytes"));
        if (cJSON_IsNumber(cli_json_get(row, "peak_time_us")))
            fprintf(out, "<td class=\"num\">%.3f s</td>", cli_json_num(row, "peak_time_us") / 1e6);
        else
            fputs("<td class=\"num\">-</td>", out); /* a trace without times */
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(row, "top_site");
        if (cJSON_IsObject(ts))
            report_cell_site(out, cli_json_str(ts, "site"), cli_json_str(ts, "function"));
        else
            fputs("<td>-</td>", out);
        fputs("</tr>\n", out);
    }
    char m1[32], m2[32], m3[32];
    ms_format_bytes((int64_t)cli_json_num(ranks, "median.peak_bytes"), m1, sizeof m1);
    ms_format_bytes((int64_t)cli_json_num(ranks, "median.reserved_peak_bytes"), m2, sizeof m2);
    ms_format_bytes((int64_t)cli_json_num(ranks, "median.live_end_bytes"), m3, sizeof m3);
    fprintf(out, "<tr><th>median</th><th></th><th></th><th class=\"num\">%s</th>"
                 "<th class=\"num\">%s</th><th class=\"num\">%s</th><th></th><th></th></tr>\n"
                 "</table>\n",
            m1, m2, m3);
    int n_out = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ranks, "outliers"));
    fprintf(out, "<p>%s (threshold %g%% from the median).</p>\n",
            n_out ? "<span class=\"bad\">*</span> marks a value far from the median"
                  : "No outliers: every file is near the median",
            cli_json_num(ranks, "threshold_pct"));
}

void report_html_baseline(FILE *out, const cJSON *doc)
{
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(doc, "baseline");
    if (!cJSON_IsObject(base))
        return;
    fputs("<h2 id=\"baseline\">Against the baseline</h2>\n<p class=\"sub\">Baseline: <code>",
          out);
    report_html_escape(out, cli_json_str(base, "path"));
    fputs("</code></p>\n", out);
    const cJSON *pair;
    cJSON_ArrayForEach(pair, cJSON_GetObjectItemCaseSensitive(base, "pairs"))
    {
        const cJSON *file = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "files"),
                                               (int)cli_json_num(pair, "b"));
        fputs("<h3>", out);
        report_html_escape(out, cli_json_str(file, "path"));
        fputs("</h3>\n", out);
        pair_section(out, pair, "Sites by change in bytes held at the peak");
    }
}
