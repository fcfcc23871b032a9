/* CI gates of `memsnap report`. They read the report document, not the snapshots, so
 * a gate judges exactly the numbers the page and summary.json show. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "oom_json.h"
#include "report.h"

static const char *file_name(const cJSON *file)
{
    return cli_basename(cli_json_str(file, "path"));
}

static void add_check(cJSON *list, const char *gate, const char *option, const cJSON *file,
                      int device, double measured, double limit, bool passed,
                      const char *message, size_t *failed)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "gate", gate);
    cJSON_AddStringToObject(c, "option", option);
    cJSON_AddStringToObject(c, "file", cli_json_str(file, "path"));
    if (device >= 0)
        cJSON_AddNumberToObject(c, "device", device);
    else
        cJSON_AddNullToObject(c, "device");
    cJSON_AddNumberToObject(c, "measured", measured);
    cJSON_AddNumberToObject(c, "limit", limit);
    cJSON_AddBoolToObject(c, "passed", passed);
    cJSON_AddStringToObject(c, "message", message);
    cJSON_AddItemToArray(list, c);
    if (!passed)
        (*failed)++;
}

/* --max-peak / --max-reserved: every device of every file, since any GPU running out
 * of memory fails the job. */
static void size_gate(cJSON *list, const cJSON *files, const char *gate, const char *option,
                      const char *what, const char *key, uint64_t limit, size_t *failed)
{
    const cJSON *file;
    cJSON_ArrayForEach(file, files)
    {
        const cJSON *dev;
        cJSON_ArrayForEach(dev, cJSON_GetObjectItemCaseSensitive(file, "devices"))
        {
            double v = cli_json_num(dev, key);
            int d = (int)cli_json_num(dev, "device");
            bool ok = v <= (double)limit;
            char vb[32], lb[32], msg[512];
            ms_format_bytes((int64_t)v, vb, sizeof vb);
            ms_format_bytes((int64_t)limit, lb, sizeof lb);
            snprintf(msg, sizeof msg, "%s: %s device %d: %s %s (%.0f bytes) %s the limit %s (%llu bytes)",
                     option, file_name(file), d, what, vb, v, ok ? "is within" : "is over", lb,
                     (unsigned long long)limit);
            add_check(list, gate, option, file, d, v, (double)limit, ok, msg, failed);
        }
    }
}

/* --fail-on-leaks[=SIZE]: the rule of `leaks --fail` (cli_leak_gate_trips) on the figures
 * of the file's leak verdict. */
static void leak_gate(cJSON *list, const cJSON *files, uint64_t min_bytes, size_t *failed)
{
    char lim[32] = "";
    if (min_bytes)
        ms_format_bytes((int64_t)min_bytes, lim, sizeof lim);
    const cJSON *file;
    cJSON_ArrayForEach(file, files)
    {
        const cJSON *v = cli_json_get(file, "leaks.verdict");
        double n = cli_json_num(v, "leaks");
        double leaked = cli_json_num(v, "leaked_bytes");
        double growth = cli_json_num(v, "growth_bytes_per_iteration");
        bool ok = !cli_leak_gate_trips(n > 0 ? (uint64_t)n : 0, leaked, growth, min_bytes);
        char msg[768];
        if (n == 0) {
            double iters = 0;
            const cJSON *dev;
            cJSON_ArrayForEach(dev, cli_json_get(file, "leaks.devices"))
            {
                double k = cli_json_num(dev, "iterations.count");
                iters = k > iters ? k : iters;
            }
            snprintf(msg, sizeof msg, "--fail-on-leaks: %s: no leak (%.0f iteration%s checked)",
                     file_name(file), iters, iters == 1 ? "" : "s");
        } else {
            char bytes[32], growth_t[32], site[400] = "", under[96] = "";
            ms_format_bytes((int64_t)leaked, bytes, sizeof bytes);
            ms_format_bytes((int64_t)(growth + 0.5), growth_t, sizeof growth_t);
            /* Findings are listed leaks first, most bytes first: the first names the worst. */
            const cJSON *first = cJSON_GetArrayItem(cli_json_get(file, "leaks.leaks"), 0);
            if (first && !strcmp(cli_json_str(first, "kind"), "leak") &&
                !strcmp(cli_json_str(first, "pattern"), "graph"))
                /* A graph's sites are the model's layers: the line that called the forward
                 * and kept its output is the bug. */
                snprintf(site, sizeof site, "; largest: a graph kept from the model called at %s:%.0f %s",
                         cli_basename(cli_json_str(first, "call_site.filename")),
                         cli_json_num(first, "call_site.line"),
                         cli_json_str(first, "call_site.function"));
            else if (first && !strcmp(cli_json_str(first, "kind"), "leak"))
                snprintf(site, sizeof site, "; largest at %s:%.0f %s",
                         cli_basename(cli_json_str(first, "site.filename")),
                         cli_json_num(first, "site.line"), cli_json_str(first, "site.function"));
            if (min_bytes)
                snprintf(under, sizeof under, "; %s the limit %s", ok ? "under" : "reaches", lim);
            /* Sites are what the table lists; findings (causes) when fewer. */
            double sites = cli_json_num(v, "leak_sites");
            if (sites < n)
                sites = n;
            char causes[64] = "";
            if (n < sites)
                snprintf(causes, sizeof causes, " (%.0f finding%s)", n, n == 1 ? "" : "s");
            snprintf(msg, sizeof msg,
                     "--fail-on-leaks: %s: %.0f leaking site%s%s hold%s %s and grow%s by %s per "
                     "iteration%s%s",
                     file_name(file), sites, sites == 1 ? "" : "s", causes, sites == 1 ? "s" : "",
                     bytes, sites == 1 ? "s" : "", growth_t, under, site);
        }
        /* Measured: the findings without a SIZE (limit 0), else the larger of the two
         * figures the SIZE is held to. */
        double measured = min_bytes ? (leaked > growth ? leaked : growth) : n;
        add_check(list, "leaks", "--fail-on-leaks", file, -1, measured, (double)min_bytes, ok, msg,
                  failed);
    }
}

/* One check per file: an OOM event fails it, and the message names the cause. */
static void oom_gate(cJSON *list, const cJSON *files, size_t *failed)
{
    const cJSON *file;
    cJSON_ArrayForEach(file, files)
    {
        const cJSON *ooms = cJSON_GetObjectItemCaseSensitive(file, "ooms");
        int n = oom_count_json(file);
        char msg[768];
        if (n == 0) {
            snprintf(msg, sizeof msg, "--fail-on-oom: %s: no OOM event", file_name(file));
        } else {
            const cJSON *e = cJSON_GetArrayItem(ooms, 0);
            char req[32], free_b[32];
            ms_format_bytes((int64_t)cli_json_num(e, "request_bytes"), req, sizeof req);
            ms_format_bytes((int64_t)cli_json_num(e, "free_in_reserved_bytes"), free_b, sizeof free_b);
            snprintf(msg, sizeof msg,
                     "--fail-on-oom: %s: %d OOM event%s; the first (device %.0f) asked for %s "
                     "with %s free in reserved segments: cause %s",
                     file_name(file), n, n == 1 ? "" : "s", cli_json_num(e, "device"), req, free_b,
                     cli_json_str(e, "cause"));
        }
        add_check(list, "oom", "--fail-on-oom", file, -1, n, 0, n == 0, msg, failed);
    }
}

static void growth_gate(cJSON *list, const cJSON *doc, double limit, size_t *failed)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(doc, "files");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(doc, "baseline");
    const cJSON *bfiles = cJSON_GetObjectItemCaseSensitive(base, "files");
    const cJSON *pair;
    cJSON_ArrayForEach(pair, cJSON_GetObjectItemCaseSensitive(base, "pairs"))
    {
        const cJSON *file = cJSON_GetArrayItem(files, (int)cli_json_num(pair, "b"));
        const cJSON *bfile = cJSON_GetArrayItem(bfiles, (int)cli_json_num(pair, "a"));
        const cJSON *m = cli_json_get(pair, "metrics.peak_bytes");
        double a = cli_json_num(m, "a"), b = cli_json_num(m, "b");
        /* From the exact byte counts, not the pct rounded for display: a limit of 51.07
         * must fail a growth of 51.071%. A baseline that used no memory makes any use
         * infinite growth. */
        double g = a > 0 ? 100.0 * (b - a) / a : (b > a ? INFINITY : 0);
        bool ok = g <= limit;
        char ab[32], bb[32], gtext[32], msg[768];
        ms_format_bytes((int64_t)a, ab, sizeof ab);
        ms_format_bytes((int64_t)b, bb, sizeof bb);
        if (isinf(g))
            snprintf(gtext, sizeof gtext, "new");
        else
            snprintf(gtext, sizeof gtext, "%+.3f%%", g);
        snprintf(msg, sizeof msg,
                 "--max-growth: %s device %.0f: peak %s is %s against the baseline %s "
                 "device %.0f (%s); %s the limit %+g%%",
                 file_name(file), cli_json_num(pair, "b_device"), bb, gtext, file_name(bfile),
                 cli_json_num(pair, "a_device"), ab, ok ? "within" : "over", limit);
        add_check(list, "growth", "--max-growth", file, (int)cli_json_num(pair, "b_device"),
                  isinf(g) ? 0 : g, limit, ok, msg, failed);
        /* JSON has no infinity: a growth from nothing is recorded as null. */
        cJSON *c = cJSON_GetArrayItem(list, cJSON_GetArraySize(list) - 1);
        if (isinf(g))
            cJSON_ReplaceItemInObjectCaseSensitive(c, "measured", cJSON_CreateNull());
    }
}

cJSON *report_gates(const cJSON *doc, const report_opts *o, size_t *failed)
{
    *failed = 0;
    cJSON *g = cJSON_CreateObject();
    if (!g)
        return NULL;
    cJSON *list = cJSON_CreateArray();
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(doc, "files");
    if (o->has_max_peak)
        size_gate(list, files, "max_peak", "--max-peak", "peak", "peak.bytes", o->max_peak,
                  failed);
    if (o->has_max_reserved)
        size_gate(list, files, "max_reserved", "--max-reserved", "reserved peak",
                  "reserved.peak_bytes", o->max_reserved, failed);
    if (o->fail_on_leaks)
        leak_gate(list, files, o->fail_on_leaks_bytes, failed);
    if (o->fail_on_oom)
        oom_gate(list, files, failed);
    if (o->has_max_growth)
        growth_gate(list, doc, o->max_growth, failed);
    cJSON_AddBoolToObject(g, "passed", *failed == 0);
    cJSON_AddNumberToObject(g, "failed", (double)*failed);
    cJSON_AddItemToObject(g, "checked", list);
    return g;
}
