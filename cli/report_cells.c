/* The report page's table cells and rows (report.h), shared by the page's sections:
 * sizes, signed changes, shares, texts and sites, every text escaped. */
#include <string.h>

#include "iterations_json.h"
#include "report.h"
#include "summary_input.h"

void report_cell_size(FILE *out, double bytes)
{
    char b[32];
    ms_format_bytes((int64_t)bytes, b, sizeof b);
    fprintf(out, "<td class=\"num\">%s</td>", b);
}

void report_cell_text(FILE *out, const char *cls, const char *s)
{
    if (cls)
        fprintf(out, "<td class=\"%s\">", cls);
    else
        fputs("<td>", out);
    report_html_escape(out, s);
    fputs("</td>", out);
}

void report_signed_size(double v, char *buf, size_t cap)
{
    signed_size_text((int64_t)v, buf, cap);
}

void report_cell_pct(FILE *out, const cJSON *pct)
{
    if (cJSON_IsNumber(pct))
        fprintf(out, "<td class=\"num\">%+.1f%%</td>", pct->valuedouble);
    else
        fputs("<td class=\"num\">new</td>", out);
}

void report_kv_size(FILE *out, const char *k, double bytes, const char *extra)
{
    char b[32];
    ms_format_bytes((int64_t)bytes, b, sizeof b);
    fprintf(out, "<tr><th>%s</th><td class=\"num\">%s</td><td class=\"muted\">", k, b);
    report_html_escape(out, extra ? extra : "");
    fputs("</td></tr>\n", out);
}

void report_kv_text(FILE *out, const char *k, const char *v, const char *extra)
{
    fprintf(out, "<tr><th>%s</th><td class=\"num\">", k);
    report_html_escape(out, v);
    fputs("</td><td class=\"muted\">", out);
    report_html_escape(out, extra ? extra : "");
    fputs("</td></tr>\n", out);
}

#define MAX_FUNCTION 110

/* "site function" in one cell, as every table names a site. C++ template names run to
 * hundreds of characters; they are cut, with the whole name in the tooltip. */
void report_cell_site(FILE *out, const char *site, const char *function)
{
    report_cell_site_from(out, site, function, NULL);
}

/* The same, followed by the user's line behind the site when `o`'s user_frame is not the
 * site itself (a site inside a library). */
void report_cell_site_user(FILE *out, const char *site, const char *function, const cJSON *o,
                           const char *site_file, double site_line)
{
    char uf[512];
    bool shown = leaks_user_frame_text(cJSON_GetObjectItemCaseSensitive(o, "user_frame"),
                                       site_file, site_line, uf, sizeof uf);
    report_cell_site_from(out, site, function, shown ? uf : NULL);
}

void report_cell_site_from(FILE *out, const char *site, const char *function, const char *from)
{
    size_t n = function ? strlen(function) : 0;
    if (n > MAX_FUNCTION) {
        fputs("<td class=\"site\" title=\"", out);
        report_html_escape(out, function);
        fputs("\">", out);
    } else {
        fputs("<td class=\"site\">", out);
    }
    report_html_escape(out, site);
    if (n) {
        fputc(' ', out);
        if (n > MAX_FUNCTION) {
            /* Cut where a UTF-8 character begins, never inside one. */
            size_t cut = MAX_FUNCTION;
            while (cut > 0 && ((unsigned char)function[cut] & 0xC0) == 0x80)
                cut--;
            char buf[MAX_FUNCTION + 1];
            memcpy(buf, function, cut);
            buf[cut] = '\0';
            report_html_escape(out, buf);
            fputs("&hellip;", out);
        } else {
            report_html_escape(out, function);
        }
    }
    if (from) {
        fputs(" <span class=\"muted\">from ", out);
        report_html_escape(out, from);
        fputs("</span>", out);
    }
    fputs("</td>", out);
}
