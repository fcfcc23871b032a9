/* The chart export's encodings (see export_text.h). */
#include "export_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_number.h"
#include "utf8.h"

/* ------------------------------------------------------------------ growable text */

/* Every buffer here has a ceiling: a page the browser can open is far below it. */
#define MAX_OUT ((size_t)1 << 30)

static void sb_grow(msr__sbuf *b, size_t more)
{
    if (b->bad)
        return;
    if (more > MAX_OUT - b->n - 1) {
        b->bad = true;
        return;
    }
    size_t need = b->n + more + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->bad = true;
        return;
    }
    b->p = p;
    b->cap = cap;
}

void msr__sb_put(msr__sbuf *b, const char *s, size_t n)
{
    sb_grow(b, n);
    if (b->bad)
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void msr__sb_puts(msr__sbuf *b, const char *s)
{
    msr__sb_put(b, s, strlen(s));
}

void msr__sb_printf(msr__sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->bad = true;
        return;
    }
    msr__sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Every JSON file's rule (ms__json_number): null for what JSON cannot hold, whole
 * numbers as integers. */
void msr__sb_num(msr__sbuf *b, double v)
{
    char tmp[MS_JSON_NUMBER_MAX];
    size_t n = ms__json_number(tmp, v, true);
    if (n == 0)
        b->bad = true;
    else
        msr__sb_put(b, tmp, n);
}

/* A JSON string that is also safe inside <script type="application/json">: '<', '>' and
 * '&' are escaped, so no snapshot text can close the element or start markup; bidi and
 * C1 controls become the visible text \u{XXXX} (docs/security.md). */
void msr__sb_str(msr__sbuf *b, const char *s)
{
    msr__sb_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            msr__sb_put(b, esc, 2);
        } else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&' || *p == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            msr__sb_put(b, esc, 6);
        } else if (*p >= 0x80 && ms__text_special((const char *)p, &(unsigned){0})) {
            /* A bidi or C1 control is shown, not obeyed, as in the rest of the report. */
            unsigned cp;
            size_t n = ms__text_special((const char *)p, &cp);
            char shown[24];
            int k = snprintf(shown, sizeof shown, "\\\\u{%04X}", cp);
            msr__sb_put(b, shown, (size_t)k);
            p += n - 1;
        } else {
            msr__sb_put(b, (const char *)p, 1);
        }
    }
    msr__sb_put(b, "\"", 1);
}

/* What msr__sb_str writes for `s`, quotes and comma included: the page's budget counts
 * escapes, since C++ frames' template brackets cost six bytes each (\u003c). */
static size_t str_cost(const char *s)
{
    size_t n = 3;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned cp;
        size_t k;
        if (*p == '"' || *p == '\\')
            n += 2;
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&' || *p == 0x7f)
            n += 6;
        else if (*p >= 0x80 && (k = ms__text_special((const char *)p, &cp)) != 0) {
            n += cp > 0xffff ? 10 : 9;
            p += k - 1;
        } else
            n++;
    }
    return n;
}

/* ------------------------------------------------------------------ integer streams */

/* Room for n more bytes, doubling; false (and the buffer marked bad) past MAX_OUT. */
static bool vb_reserve(msr__vbuf *v, size_t n)
{
    if (v->bad)
        return false;
    if (n <= v->cap - v->n)
        return true;
    size_t cap = v->cap ? v->cap : 256;
    while (cap - v->n < n && cap <= MAX_OUT)
        cap *= 2;
    uint8_t *p = cap <= MAX_OUT ? realloc(v->p, cap) : NULL;
    if (!p) {
        v->bad = true;
        return false;
    }
    v->p = p;
    v->cap = cap;
    return true;
}

static void vb_byte(msr__vbuf *v, uint8_t c)
{
    if (vb_reserve(v, 1))
        v->p[v->n++] = c;
}

void msr__vb_u(msr__vbuf *v, uint64_t x)
{
    while (x >= 0x80) {
        vb_byte(v, (uint8_t)(x | 0x80));
        x >>= 7;
    }
    vb_byte(v, (uint8_t)x);
}

void msr__vb_append(msr__vbuf *v, const msr__vbuf *w)
{
    if (w->bad)
        v->bad = true;
    if (v->bad || !w->n || !vb_reserve(v, w->n))
        return;
    memcpy(v->p + v->n, w->p, w->n);
    v->n += w->n;
}

void msr__vb_s(msr__vbuf *v, int64_t x)
{
    uint64_t z = x < 0 ? ((uint64_t)(-(x + 1)) << 1) | 1 : (uint64_t)x << 1;
    msr__vb_u(v, z);
}

void msr__sb_b64(msr__sbuf *b, msr__vbuf *v)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (v->bad) {
        b->bad = true;
        return;
    }
    sb_grow(b, (v->n + 2) / 3 * 4 + 2);
    if (b->bad)
        return;
    char *o = b->p + b->n;
    *o++ = '"';
    size_t i = 0;
    for (; i + 2 < v->n; i += 3) {
        uint32_t w = (uint32_t)v->p[i] << 16 | (uint32_t)v->p[i + 1] << 8 | v->p[i + 2];
        *o++ = A[w >> 18];
        *o++ = A[(w >> 12) & 63];
        *o++ = A[(w >> 6) & 63];
        *o++ = A[w & 63];
    }
    if (i < v->n) {
        uint32_t w = (uint32_t)v->p[i] << 16 | (i + 1 < v->n ? (uint32_t)v->p[i + 1] << 8 : 0);
        *o++ = A[w >> 18];
        *o++ = A[(w >> 12) & 63];
        *o++ = i + 1 < v->n ? A[(w >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o++ = '"';
    b->n = (size_t)(o - b->p);
    b->p[b->n] = '\0';
    v->n = 0;
}

/* ------------------------------------------------------------------ string table */

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

int64_t msr__st_id(msr__str_table *t, const char *s)
{
    if (t->bad)
        return 0;
    if (!s)
        s = "";
    if (t->n * 2 >= t->n_slots) {
        size_t ns = t->n_slots ? t->n_slots * 2 : 1024;
        uint32_t *slot = calloc(ns, sizeof *slot);
        if (!slot || t->n >= UINT32_MAX - 1) {
            free(slot);
            t->bad = true;
            return 0;
        }
        for (size_t i = 0; i < t->n; i++) {
            size_t k = str_hash(t->s[i]) & (ns - 1);
            while (slot[k])
                k = (k + 1) & (ns - 1);
            slot[k] = (uint32_t)i + 1;
        }
        free(t->slot);
        t->slot = slot;
        t->n_slots = ns;
    }
    size_t k = str_hash(s) & (t->n_slots - 1);
    while (t->slot[k]) {
        if (!strcmp(t->s[t->slot[k] - 1], s))
            return t->slot[k] - 1;
        k = (k + 1) & (t->n_slots - 1);
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        char **p = realloc(t->s, cap * sizeof *p);
        if (!p) {
            t->bad = true;
            return 0;
        }
        t->s = p;
        t->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy) {
        t->bad = true;
        return 0;
    }
    t->s[t->n] = copy;
    t->bytes += str_cost(copy);
    t->slot[k] = (uint32_t)t->n + 1;
    return (int64_t)t->n++;
}

/* Forgets the strings added after the first `n` (a level that did not fit). */
void msr__st_truncate(msr__str_table *t, size_t n)
{
    if (t->bad || n >= t->n)
        return;
    for (size_t i = n; i < t->n; i++) {
        t->bytes -= str_cost(t->s[i]);
        free(t->s[i]);
    }
    t->n = n;
    memset(t->slot, 0, t->n_slots * sizeof *t->slot);
    for (size_t i = 0; i < t->n; i++) {
        size_t k = str_hash(t->s[i]) & (t->n_slots - 1);
        while (t->slot[k])
            k = (k + 1) & (t->n_slots - 1);
        t->slot[k] = (uint32_t)i + 1;
    }
}

void msr__st_free(msr__str_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    free(t->slot);
}
