/* Text helpers of the report writers: reading the document, escaping for HTML and
 * Markdown, file names for charts, and SVG fit to share a page with other SVGs. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "report.h"
#include "term_text.h"

const char *report_seconds(char *buf, size_t cap, const cJSON *o, const char *path)
{
    if (cJSON_IsNumber(cli_json_get(o, path)))
        snprintf(buf, cap, "%.3f s", cli_json_num(o, path));
    else
        snprintf(buf, cap, "-"); /* null: the trace has no times */
    return buf;
}

const cJSON *report_device_entry(const cJSON *list, int d, const cJSON **hint)
{
    const cJSON *start = *hint ? *hint : list ? list->child : NULL;
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *stop = pass ? start : NULL;
        for (const cJSON *e = pass ? (list ? list->child : NULL) : start; e && e != stop;
             e = e->next)
            if ((int)cli_json_num(e, "device") == d) {
                *hint = e->next;
                return e;
            }
    }
    return NULL;
}

bool report_device_shown(const cJSON *file, size_t k, int device)
{
    return k < REPORT_PAGE_DEVICES || device == (int)cli_json_num(file, "chart_device");
}

void report_html_escape(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: {
            /* Control characters have no business in a page; a snapshot may hold any.
             * Bidi controls would reorder what the reader sees: shown as \u{XXXX}. */
            unsigned cp;
            size_t n = (unsigned char)*s >= 0x80 ? cli_term_special(s, &cp) : 0;
            if (n) {
                fprintf(out, "\\u{%04X}", cp);
                s += n - 1;
            } else if (((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n') || *s == 0x7f) {
                fputc('?', out);
            } else {
                fputc(*s, out);
            }
        }
        }
    }
}

void report_md_escape(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '|' || c == '\\' || c == '*' || c == '_' || c == '`' || c == '[' ||
            c == ']' || c == '#' || c == '~') {
            fputc('\\', out);
            fputc(c, out);
        } else if (c == '<') {
            fputs("&lt;", out); /* GitHub renders raw HTML in Markdown */
        } else if (c == '>') {
            fputs("&gt;", out);
        } else if (c == '&') {
            fputs("&amp;", out);
        } else if (c < 0x20 || c == 0x7f) {
            fputc(' ', out); /* a newline would end the table row */
        } else if (c >= 0x80 && cli_term_special(s, &(unsigned){0})) {
            unsigned cp;
            size_t n = cli_term_special(s, &cp);
            fprintf(out, "\\u{%04X}", cp); /* a bidi control, shown (docs/security.md) */
            s += n - 1;
        } else {
            fputc(c, out);
        }
    }
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && strncmp(s + n - k, suffix, k) == 0;
}

void report_png_name(const char *path, const char *const *taken, size_t n_taken, char *buf,
                     size_t cap)
{
    const char *base = strcmp(path, "-") ? cli_basename(path) : "stdin";
    size_t n = strlen(base);
    if (ends_with(base, n, ".gz"))
        n -= 3;
    if (ends_with(base, n, ".pickle"))
        n -= 7;
    else if (ends_with(base, n, ".pkl"))
        n -= 4;
    char stem[128];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof stem; i++) {
        unsigned char c = (unsigned char)base[i];
        stem[k++] = (char)(isalnum(c) || c == '.' || c == '_' || c == '-' ? c : '_');
    }
    stem[k] = '\0';
    if (k == 0 || stem[0] == '.')
        snprintf(stem, sizeof stem, "file");
    for (unsigned suffix = 1;; suffix++) {
        if (suffix == 1)
            snprintf(buf, cap, "timeline-%s.png", stem);
        else
            snprintf(buf, cap, "timeline-%s-%u.png", stem, suffix);
        bool clash = false;
        for (size_t i = 0; i < n_taken && !clash; i++)
            clash = taken[i] && strcmp(taken[i], buf) == 0;
        if (!clash)
            return;
    }
}

/* A growable string; the report's SVGs are megabytes at most. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) {
            if (cap > SIZE_MAX / 2) {
                b->failed = true;
                return;
            }
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

char *report_svg_inline(const char *svg, size_t len, const char *prefix)
{
    /* cairo names its glyphs, clips and images "glyph0-1", "clip1", ... in every file it
     * writes. Two such SVGs inline in one page share one id space, and the second chart
     * would draw the first chart's glyphs; prefixing every id and reference keeps each
     * chart to its own. */
    static const char *const REFS[] = {"id=\"", "href=\"#", "url(#"};
    sbuf b = {0};
    char surf[64][12];
    size_t n_surf = 0;
    size_t i = 0;
    if (len >= 5 && strncmp(svg, "<?xml", 5) == 0) {
        const char *end = memchr(svg, '>', len);
        i = end ? (size_t)(end - svg) + 1 : len;
        while (i < len && (svg[i] == '\n' || svg[i] == '\r'))
            i++;
    }
    size_t start = i;
    while (i < len) {
        size_t hit = 0;
        for (size_t r = 0; r < sizeof REFS / sizeof REFS[0]; r++) {
            size_t k = strlen(REFS[r]);
            if (len - i >= k && memcmp(svg + i, REFS[r], k) == 0) {
                hit = k;
                break;
            }
        }
        if (!hit) {
            i++;
            continue;
        }
        sb_put(&b, svg + start, i + hit - start);
        sb_put(&b, prefix, strlen(prefix));
        i += hit;
        start = i;
        /* cairo numbers surfaces from one counter for the whole process, so a chart's
         * "surfaceN" would depend on every surface drawn before it (the PNGs, the other
         * charts, in whatever order): numbered per chart instead, by first use. */
        size_t digits = 0;
        while (len - i > 7 + digits && svg[i + 7 + digits] >= '0' && svg[i + 7 + digits] <= '9')
            digits++;
        if (digits && digits < 12 && memcmp(svg + i, "surface", 7) == 0) {
            char num[12];
            memcpy(num, svg + i + 7, digits);
            num[digits] = '\0';
            size_t k = 0;
            while (k < n_surf && strcmp(surf[k], num) != 0)
                k++;
            if (k == n_surf && n_surf < sizeof surf / sizeof surf[0])
                memcpy(surf[n_surf++], num, digits + 1);
            if (k < n_surf) {
                char id[32];
                int w = snprintf(id, sizeof id, "surface%zu", k + 1);
                sb_put(&b, id, (size_t)w);
                i += 7 + digits;
                start = i;
            }
        }
    }
    sb_put(&b, svg + start, len - start);
    if (b.failed || !b.p) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

cairo_status_t report_buf_write(void *closure, const unsigned char *data, unsigned int len)
{
    report_buf *b = closure;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->n + len + 1) {
            if (cap > SIZE_MAX / 2)
                return CAIRO_STATUS_NO_MEMORY;
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (!p)
            return CAIRO_STATUS_NO_MEMORY;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = '\0';
    return CAIRO_STATUS_SUCCESS;
}

void report_each_check(FILE *out, const cJSON *checked,
                       void (*fn)(FILE *out, bool passed, const char *message))
{
    const cJSON *c;
    for (int pass = 0; pass < 2; pass++) {
        cJSON_ArrayForEach(c, checked)
        {
            bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "passed"));
            if (ok == (pass == 1))
                fn(out, ok, cli_json_str(c, "message"));
        }
    }
}

bool report_site_moved(const cJSON *site, char *buf, size_t cap)
{
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(site, "b_site");
    if (!cJSON_IsString(bs))
        return false;
    ms_site_moved_format(cli_json_str(site, "site"), bs->valuestring, buf, cap);
    return true;
}
