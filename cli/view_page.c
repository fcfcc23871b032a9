/* The interactive timeline's page parts (see view_page.h). */
#include "view_page.h"

#include <stdlib.h>
#include <string.h>

#include "chart_export.h"
#include "cli_util.h"
#include "memsnap/idle.h"
#include "memsnap/leaks.h"
#include "memsnap/run.h"
#include "report.h"

/* Generated from cli/view/ at build time (cli/view/embed.cmake). */
extern const unsigned char view_js[];
extern const unsigned long view_js_len;
extern const unsigned char view_css[];
extern const unsigned long view_css_len;

/* ------------------------------------------------------------------ chart data */

/* Per allocation its category as an index into ms_category_name()'s names, for the
 * tooltips; the by-category grouping reads the categorisation itself. */
static uint8_t *alloc_categories(const ms_categories *c, size_t n)
{
    uint8_t *out = malloc(n ? n : 1);
    for (size_t i = 0; out && i < n; i++)
        out[i] = (uint8_t)ms_categories_of(c, i);
    return out;
}

/* The instants whose allocator state the page embeds (docs/view.md, "Allocator states"):
 * the peak and the end first, then each iteration's peak (48 of them, evenly chosen, when
 * there are more), then 96 instants evenly spread over the page's x axis (the run axis
 * unless --x time), coarse spacings before fine ones; the exporter keeps them in that
 * order while they fit. */
#define STATE_ITERS 48
#define STATE_SPREAD 96

typedef struct instant_list {
    msr_export_instant *v;
    char (*labels)[40];
    size_t n;
} instant_list;

static int by_event(const void *a, const void *b)
{
    const msr_export_instant *x = a, *y = b;
    int c = CLI_CMP(x->event, y->event);
    return c ? c : CLI_CMP(x->priority, y->priority);
}

static int state_instants(instant_list *L, const ms_timeline *t, const ms_trace *tr,
                          const ms_idle *idle, const ms_categories *cats,
                          const ms_iterations *it, bool x_time)
{
    size_t cap = 2 + STATE_ITERS + STATE_SPREAD;
    L->v = calloc(cap, sizeof *L->v);
    L->labels = calloc(cap, sizeof *L->labels);
    L->n = 0;
    if (!L->v || !L->labels)
        return MS_ERR_NOMEM;
    L->v[L->n++] = (msr_export_instant){t->peak_event, "peak", 0};
    L->v[L->n++] = (msr_export_instant){(int64_t)tr->n - 1, "end", 0};
    size_t n_it = it ? it->n : 0;
    for (size_t j = 0; cats && j < n_it && j < STATE_ITERS; j++) {
        size_t k = n_it <= STATE_ITERS ? j : j * (n_it - 1) / (STATE_ITERS - 1);
        const ms_category_point *pk = ms_categories_iteration_peak(cats, k);
        if (!pk)
            continue;
        snprintf(L->labels[L->n], sizeof L->labels[L->n], "iteration %zu peak", k + 1);
        L->v[L->n] = (msr_export_instant){pk->event, L->labels[L->n], 1};
        L->n++;
    }
    int64_t t0 = t->t_first_us, span = t->t_last_us - t->t_first_us;
    msr_chart_warp wp;
    /* Spread on the run axis the chart draws: laid from the run's idle stretches. */
    msr_chart_warp_from_idle(&wp, idle);
    bool warped = !x_time && tr->has_times && wp.n_breaks > 0;
    double u0 = warped ? msr_chart_warp_u(&wp, 0) : 0;
    double u1 = warped ? msr_chart_warp_u(&wp, (double)span / 1e6) : 0;
    for (size_t j = 0; tr->n && j < STATE_SPREAD; j++) {
        /* 2 + the level at which j first appears when halving the spacing */
        int level = 0;
        for (size_t step = STATE_SPREAD / 3; step >= 1 && j % step; step /= 2)
            level++;
        double f = ((double)j + 0.5) / STATE_SPREAD;
        int64_t at = warped ? t0 + (int64_t)(msr_chart_warp_t(&wp, u0 + f * (u1 - u0)) * 1e6)
                            : t0 + (int64_t)((double)span * f);
        L->v[L->n++] = (msr_export_instant){ms_heap_event_at_time(tr, at), NULL, 2 + level};
    }
    qsort(L->v, L->n, sizeof *L->v, by_event);
    /* One state per event: its most important ask, with a label when any had one. */
    size_t w = 0;
    for (size_t i = 0; i < L->n; i++) {
        if (w && L->v[w - 1].event == L->v[i].event) {
            if (!L->v[w - 1].label)
                L->v[w - 1].label = L->v[i].label;
            continue;
        }
        L->v[w++] = L->v[i];
    }
    L->n = w;
    return 0;
}

static int block_categories(void *ctx, uint8_t *out, const ms_heap *h, ms_error *err)
{
    return ms_run_block_categories(out, ctx, h, err);
}

int view_chart_json(char **out, ms_run *run, const char *label, const view_opts *o,
                    size_t *bytes, int *levels, ms_error *err)
{
    *out = NULL;
    msr_chart_leaks leaks = {0};
    msr_export_iteration *iters = NULL;
    uint8_t *alloc_cat = NULL;
    const char *cat_names[MS_CAT_COUNT];
    for (int k = 0; k < MS_CAT_COUNT; k++)
        cat_names[k] = ms_category_name((ms_category)k);
    /* The page's groupings read the categories (and the tooltips each allocation's); the
     * iterations the strip shows are the ones the categories are cut by: the run's. */
    msr_chart_source src;
    int rc = msr_chart_source_from_run(&src, run, label,
                                      MSR_CHART_RUN_STACKED | MSR_CHART_RUN_CATEGORIES |
                                          MSR_CHART_RUN_AXIS,
                                      err);
    if (!rc && o->leaks)
        rc = msr_chart_leaks_from_run(&leaks, run, err);
    const ms_iterations *it = src.iterations;
    const ms_timeline *t = src.tl;
    if (!rc && it->n && !(iters = calloc(it->n, sizeof *iters)))
        rc = MS_ERR_NOMEM;
    for (size_t i = 0; !rc && i < it->n; i++)
        iters[i] = (msr_export_iteration){it->items[i].start_us, it->items[i].end_us};
    if (!rc && !(alloc_cat = alloc_categories(src.categories, t->n_allocs)))
        rc = MS_ERR_NOMEM;
    instant_list inst = {NULL, NULL, 0};
    if (!rc)
        rc = state_instants(&inst, t, src.trace, src.idle, src.categories, it, o->x_time);
    if (rc == MS_ERR_NOMEM && err) {
        err->code = MS_ERR_NOMEM;
        err->offset = MS_NO_OFFSET;
        snprintf(err->message, sizeof err->message, "out of memory");
    }
    if (!rc) {
        src.group_rules = o->groups;
        msr_chart_export_opts eo = {0};
        eo.x_set = true;
        eo.x_mode = o->x_time ? MSR_CHART_X_TIME : MSR_CHART_X_RUN;
        eo.alloc_category = alloc_cat;
        eo.category_names = cat_names;
        eo.n_category_names = MS_CAT_COUNT;
        eo.budget = o->budget;
        eo.highlights = leaks.highlights;
        eo.n_highlights = leaks.n;
        eo.iterations = iters;
        eo.n_iterations = it->n;
        eo.limits = cli_limits();
        eo.instants = inst.v;
        eo.n_instants = inst.n;
        eo.block_categories = block_categories;
        eo.block_categories_ctx = run;
        msr_chart_export_stats st;
        rc = msr_chart_export_json(out, &st, &src, &eo, err);
        if (!rc && bytes)
            *bytes = st.bytes;
        if (!rc && levels)
            *levels = st.levels[0];
    }
    free(inst.v);
    free(inst.labels);
    free(alloc_cat);
    free(iters);
    msr_chart_leaks_free(&leaks);
    return rc;
}

/* ------------------------------------------------------------------ SHA-256 */

/* For the script's hash in the Content-Security-Policy (FIPS 180-4). */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void sha_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

/* Exposed for the unit test (tests/test_view.c checks the FIPS example digests). */
void view_sha256(const void *data, size_t n, unsigned char out[32]);
void view_sha256(const void *data, size_t n, unsigned char out[32])
{
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const unsigned char *p = data;
    size_t left = n;
    for (; left >= 64; left -= 64, p += 64)
        sha_block(h, p);
    unsigned char tail[128] = {0};
    memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t len = left + 9 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        tail[len - 1 - (size_t)i] = (unsigned char)(bits >> (8 * i));
    sha_block(h, tail);
    if (len == 128)
        sha_block(h, tail + 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(h[i] >> 8);
        out[4 * i + 3] = (unsigned char)h[i];
    }
}

const char *view_csp(void)
{
    static char csp[256];
    if (csp[0])
        return csp;
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char d[33] = {0};
    view_sha256(view_js, view_js_len, d);
    char b64[48];
    size_t k = 0;
    for (size_t i = 0; i < 33; i += 3) {
        uint32_t w = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        b64[k++] = A[w >> 18];
        b64[k++] = A[(w >> 12) & 63];
        b64[k++] = A[(w >> 6) & 63];
        b64[k++] = A[w & 63];
    }
    b64[43] = '='; /* 32 bytes: 43 characters and one pad */
    b64[44] = '\0';
    snprintf(csp, sizeof csp,
             "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-%s'",
             b64);
    return csp;
}

/* ------------------------------------------------------------------ page parts */

void view_write_css(FILE *out)
{
    fwrite(view_css, 1, view_css_len, out);
}

void view_write_script(FILE *out)
{
    /* The bytes between the tags are exactly what the hash covers. */
    fputs("<script>", out);
    fwrite(view_js, 1, view_js_len, out);
    fputs("</script>\n", out);
}

void view_write_chart(FILE *out, const char *json, size_t index)
{
    fprintf(out, "<script type=\"application/json\" id=\"memsnap-data-%zu\">", index);
    fputs(json, out);
    fprintf(out, "</script>\n<section class=\"msv\" id=\"memsnap-view-%zu\" "
                 "data-memsnap-view=\"memsnap-data-%zu\"></section>\n",
            index, index);
}

int view_write_page(FILE *out, const char *title, const char *const *json,
                    const char *const *labels, size_t n)
{
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                 "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n<title>",
            view_csp());
    report_html_escape(out, title);
    fputs("</title>\n<style>\nbody{margin:0;background:#f6f7f9;color:#1d2330;"
          "font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif}\n"
          "main{max-width:1720px;margin:0 auto;padding:14px 24px 40px}\n"
          "h1{font-size:21px;margin:0 0 4px}h2{font-size:17px;margin:18px 0 4px}\n"
          ".sub{color:#5b6475;margin:0 0 8px;font-size:13.5px}\n",
          out);
    view_write_css(out);
    fputs("</style></head>\n<body><main>\n<h1>", out);
    report_html_escape(out, title);
    fputs("</h1>\n<p class=\"sub\">Hover a band for its allocation, click it for its stack "
          "trace; drag across the chart to zoom, double-click to zoom out; click an annotation "
          "or an iteration to zoom to it.</p>\n",
          out);
    for (size_t i = 0; i < n; i++) {
        if (n > 1) {
            fputs("<h2>", out);
            report_html_escape(out, labels[i]);
            fputs("</h2>\n", out);
        }
        view_write_chart(out, json[i], i + 1);
    }
    fputs("</main>\n", out);
    view_write_script(out);
    fputs("</body></html>\n", out);
    return ferror(out) ? -1 : 0;
}
