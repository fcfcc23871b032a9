/* The report's OOM section: files[].ooms (the `oom --json` objects), the picture of the
 * allocator at the first OOM of each file (oom-NAME.png, and inline SVG for the page),
 * and the HTML and Markdown that show them. */
#include <cairo-svg.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "memsnap/oom.h"
#include "memsnap/run.h"
#include "oom_chart.h"
#include "safe_output.h"
#include "oom_json.h"
#include "report.h"

static int oom_svg(char **out, const ms_snapshot *s, const ms_oom *o, const char *title,
                   ms_error *err)
{
    report_buf b = {0};
    int w = MSR_OOM_CHART_WIDTH, h = msr_oom_chart_height(o);
    cairo_surface_t *surface = cairo_svg_surface_create_for_stream(report_buf_write, &b, w, h);
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    int rc = msr_oom_chart_draw(cr, 0, 0, w, h, s, o, title, err);
    cairo_destroy(cr);
    cairo_surface_finish(surface);
    cairo_status_t st = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    if (!rc && (st != CAIRO_STATUS_SUCCESS || !b.p)) {
        rc = ms_error_set(err, MS_ERR_NOMEM, MS_NO_OFFSET, "%s", cairo_status_to_string(st));
    }
    if (rc) {
        free(b.p);
        return rc;
    }
    *out = b.p;
    return 0;
}

void report_oom_device(report_devices *rd, ms_run *run)
{
    const ms_trace *tr = ms_snapshot_trace(ms_run_snapshot(run), ms_run_device(run));
    if (tr->n == 0 || rd->oom_rc)
        return;
    /* A file explains as many OOMs as one device does (the first, devices in order); the
     * rest are counted: a file of 65,536 devices, each with an OOM, would otherwise cost
     * an analysis and a page of advice per device. */
    if (rd->ooms_listed >= MS_OOM_MAX_EXPLAINED) {
        for (const uint8_t *p = tr->action, *end = tr->action + tr->n;
             (p = memchr(p, MS_ACT_OOM, (size_t)(end - p))) != NULL; p++)
            rd->ooms_left_out++;
        return;
    }
    const ms_oom_report *r = NULL;
    /* A failure is told after the charts, in the order the parts are written. */
    if ((rd->oom_rc = ms_run_ooms(&r, run, &rd->oom_err)) != 0)
        return;
    size_t room = MS_OOM_MAX_EXPLAINED - rd->ooms_listed;
    size_t take = r->n < room ? r->n : room;
    for (size_t i = 0; i < take; i++)
        cJSON_AddItemToArray(rd->ooms, oom_to_json(ms_run_snapshot(run), &r->items[i]));
    rd->ooms_listed += take;
    rd->ooms_left_out += r->n_events - take;
    if (r->n && !rd->oom_run)
        rd->oom_run = run; /* its first OOM is drawn: report_devices keeps the run */
}

int report_oom_file(cJSON *fj, const report_opts *o, size_t index, report_devices *rd,
                    char **svg_out, ms_error *err)
{
    *svg_out = NULL;
    if (rd->oom_rc) {
        *err = rd->oom_err;
        return rd->oom_rc;
    }
    cJSON_AddItemToObject(fj, "ooms", rd->ooms);
    rd->ooms = NULL;
    const ms_oom_report *r = NULL;
    int rc = 0;
    if (rd->oom_run && (rc = ms_run_ooms(&r, rd->oom_run, err)) != 0)
        return rc;
    if (r && r->n) {
        const ms_snapshot *s = ms_run_snapshot(rd->oom_run);
        /* timeline-NAME.png's sibling: oom-NAME.png */
        const char *tl = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fj, "timeline_png"));
        char name[320];
        if (tl && !strncmp(tl, "timeline-", 9))
            snprintf(name, sizeof name, "oom-%s", tl + 9);
        else
            snprintf(name, sizeof name, "oom-%zu.png", index + 1);
        size_t n = strlen(o->out_dir) + strlen(name) + 2;
        char *path = malloc(n);
        if (!path)
            return MS_ERR_NOMEM;
        snprintf(path, n, "%s/%s", o->out_dir, name);
        const char *label = cli_basename(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fj, "path")));
        rc = safe_out_oom_chart(path, s, &r->items[0], label, &(msr_image_meta){.source = label},
                                err);
        free(path);
        char *svg = NULL;
        if (!rc)
            rc = oom_svg(&svg, s, &r->items[0], label, err);
        if (rc)
            return rc;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "o%zu-", index + 1);
        *svg_out = report_svg_inline(svg, strlen(svg), prefix);
        free(svg);
        cJSON_AddStringToObject(fj, "oom_png", name);
    } else {
        cJSON_AddNullToObject(fj, "oom_png");
    }
    oom_left_out_json(fj, rd->ooms_left_out);
    return 0;
}

static const char *sz(double bytes, char *buf)
{
    ms_format_bytes((int64_t)bytes, buf, 32);
    return buf;
}

/* The iterations before the failure, one line: each one's peak and live memory at its
 * end, then the failing one with its peak so far ("" when none is known). */
typedef void (*escape_fn)(FILE *out, const char *s);

/* pre, the text escaped for the page or the Markdown, post; nothing for no text. */
static void text_part(FILE *out, escape_fn esc, const char *pre, const char *text, const char *post)
{
    if (!*text)
        return;
    fputs(pre, out);
    esc(out, text);
    fputs(post, out);
}

/* The OOM's advice, each item between pre and post. */
static void advice_items(FILE *out, escape_fn esc, const cJSON *e, const char *pre,
                         const char *post)
{
    const cJSON *adv;
    cJSON_ArrayForEach(adv, cJSON_GetObjectItemCaseSensitive(e, "advice"))
    {
        fputs(pre, out);
        esc(out, cJSON_GetStringValue(adv));
        fputs(post, out);
    }
}

static void iterations_line(char *buf, size_t cap, const cJSON *e)
{
    const cJSON *its = cli_json_get(e, "iterations");
    size_t used = 0;
    buf[0] = '\0';
    if (cJSON_GetArraySize(its) == 0)
        return;
    double top = cli_json_num(e, "peak_iteration");
    int n = snprintf(buf, cap, "Iterations up to it:");
    used = n > 0 && (size_t)n < cap ? (size_t)n : cap - 1;
    const cJSON *it;
    cJSON_ArrayForEach(it, its)
    {
        char a[32], b[32];
        double idx = cli_json_num(it, "index");
        const char *highest = idx == top ? ", the highest" : "";
        if (cJSON_IsTrue(cli_json_get(it, "unfinished")))
            n = snprintf(buf + used, cap - used, " #%.0f peak so far %s%s, unfinished: the failure.",
                         idx, sz(cli_json_num(it, "peak_bytes"), a), highest);
        else
            n = snprintf(buf + used, cap - used, " #%.0f peak %s%s, %s live at its end;", idx,
                         sz(cli_json_num(it, "peak_bytes"), a), highest,
                         sz(cli_json_num(it, "live_end_bytes"), b));
        if (n < 0 || (size_t)n >= cap - used)
            return; /* cut at the buffer's end */
        used += (size_t)n;
    }
}

void report_html_ooms(FILE *out, const cJSON *file, const char *svg)
{
    const cJSON *ooms = cJSON_GetObjectItemCaseSensitive(file, "ooms");
    if (cJSON_GetArraySize(ooms) == 0)
        return;
    char a[32], b[32], c[32], d[32], e2[32], f[32], g[32];
    fputs("<h3>Why it ran out of memory</h3>\n", out);
    const cJSON *e;
    int shown = 0;
    cJSON_ArrayForEach(e, ooms)
    {
        if (shown++ == 5)
            break;
        fprintf(out, "<div class=\"oom\"><b>OOM on device %.0f at event %.0f: cause ",
                cli_json_num(e, "device"), cli_json_num(e, "event"));
        report_html_escape(out, cli_json_str(e, "cause"));
        fprintf(out, "%s</b><br>", cJSON_IsTrue(cli_json_get(e, "approximate")) ? " (approximate)" : "");
        fprintf(out, "requested %s (block %s); %s free on the device; %s allocated of %s "
                     "reserved; free inside reserved segments %s in %.0f blocks, the largest %s.<br>",
                sz(cli_json_num(e, "request_bytes"), a), sz(cli_json_num(e, "request_block_bytes"), b),
                sz(cli_json_num(e, "device_free_bytes"), c), sz(cli_json_num(e, "allocated_bytes"), d),
                sz(cli_json_num(e, "reserved_bytes"), e2), sz(cli_json_num(e, "free_in_reserved_bytes"), f),
                cli_json_num(e, "free_blocks"), sz(cli_json_num(e, "largest_free_block_bytes"), g));
        report_html_escape(out, cli_json_str(e, "why"));
        /* the counterfactual that names the cause */
        text_part(out, report_html_escape, "<br>", cli_json_str(e, "evidence"), "");
        char iters[1024];
        iterations_line(iters, sizeof iters, e);
        text_part(out, report_html_escape, "<br>", iters, "");
        fputs("<ul>", out);
        advice_items(out, report_html_escape, e, "<li>", "</li>");
        fputs("</ul>", out);
        text_part(out, report_html_escape, "<i>", cli_json_str(e, "note"), "</i>");
        fputs("</div>\n", out);
    }
    if (svg) {
        fputs("<div class=\"chart\">", out);
        fputs(svg, out);
        fputs("</div>\n<p class=\"caption\">The allocator at the first OOM: every segment a bar "
              "to one scale, allocated blocks coloured by category, free blocks white with their "
              "sizes, the failed request in red; below, active and reserved memory before it",
              out);
        const char *png = cli_json_str(file, "oom_png");
        if (*png) {
            fputs(" (also <code>", out);
            report_html_escape(out, png);
            fputs("</code>)", out);
        }
        fputs(".</p>\n", out);
    }
}

void report_md_ooms(FILE *out, const cJSON *file)
{
    const cJSON *ooms = cJSON_GetObjectItemCaseSensitive(file, "ooms");
    if (cJSON_GetArraySize(ooms) == 0)
        return;
    char a[32], b[32], c[32], d[32];
    const cJSON *e;
    cJSON_ArrayForEach(e, ooms)
    {
        fprintf(out, "**OOM** on device %.0f at event %.0f: cause **", cli_json_num(e, "device"),
                cli_json_num(e, "event"));
        report_md_escape(out, cli_json_str(e, "cause"));
        fprintf(out, "**%s: requested %s, free inside reserved segments %s in %.0f blocks "
                     "(largest %s), %s free on the device.\n",
                cJSON_IsTrue(cli_json_get(e, "approximate")) ? " (approximate)" : "",
                sz(cli_json_num(e, "request_bytes"), a), sz(cli_json_num(e, "free_in_reserved_bytes"), b),
                cli_json_num(e, "free_blocks"), sz(cli_json_num(e, "largest_free_block_bytes"), c),
                sz(cli_json_num(e, "device_free_bytes"), d));
        text_part(out, report_md_escape, "", cli_json_str(e, "evidence"), "\n");
        char iters[1024];
        iterations_line(iters, sizeof iters, e);
        text_part(out, report_md_escape, "", iters, "\n");
        advice_items(out, report_md_escape, e, "- ", "\n");
        fputc('\n', out);
    }
}
