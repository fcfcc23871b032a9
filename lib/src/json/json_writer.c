#include "json/json_writer.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h" /* ms__text_special */

/* The format copied here is cJSON 1.7.15's print_value/print_number/print_string_ptr/
 * print_array/print_object with format on:
 *   object   "{\n", per member DEPTH tabs, the key as a string, ":\t", the value, "," unless
 *            last, "\n"; then DEPTH-1 tabs and "}". An empty object is "{\n" TABS "}".
 *   array    "[" values joined by ", " "]", all on one line; an array counts as a level
 *            of depth too, so an object inside an array is indented one tab more.
 *   string   '"' and '\\' and the control bytes \b \f \n \r \t escaped by letter, the
 *            other bytes below 32 as \u00xx (lower-case hex), every other byte as is; a
 *            NULL text (a value or a key) is "".
 *            One difference, on purpose: the characters a terminal must not obey or that
 *            cannot be seen (DEL, C1 controls U+0080..U+009F, bidi controls, U+200B,
 *            U+2028, U+FEFF, ...: ms__text_special) are written as \uXXXX (lower-case
 *            hex) where cJSON copies their bytes. The string a reader gets is the same; `cat` of the
 *            JSON shows them instead of obeying them (docs/security.md).
 *   number   NaN and infinities "null"; else %1.15g, or %1.17g when the %1.15g text
 *            does not read back to the same double (cJSON's compare_double: equal
 *            within DBL_EPSILON of the larger). 1.7.15 has no %d path: -0.0 is "-0".
 *   raw      its text as is; a raw item without text fails the whole print.
 *   other    an item of no known type (the low byte of type) fails the whole print.
 * The decimal point: cJSON uses the locale's; memsnap never calls setlocale, so it is '.'. */

/* cJSON refuses to grow its buffer past INT_MAX bytes; so does this one, so the same
 * documents fail. */
#define JSON_MAX_TEXT ((size_t)INT_MAX)

typedef struct {
    char *p;
    size_t len, cap;
} json_buf;

static bool grow(json_buf *b, size_t more)
{
    if (more > JSON_MAX_TEXT - b->len - 1)
        return false;
    size_t need = b->len + more + 1, cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap = cap > JSON_MAX_TEXT / 2 ? JSON_MAX_TEXT : cap * 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return false;
    b->p = p;
    b->cap = cap;
    return true;
}

/* Room for `more` bytes and the final NUL. */
static inline bool reserve(json_buf *b, size_t more)
{
    return b->cap - b->len > more || grow(b, more);
}

static inline bool put(json_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return false;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return true;
}

static bool put_tabs(json_buf *b, size_t n)
{
    static const char tabs[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
    if (!reserve(b, n))
        return false;
    for (size_t i = 0; i < n; i += sizeof tabs - 1) {
        size_t k = n - i < sizeof tabs - 1 ? n - i : sizeof tabs - 1;
        memcpy(b->p + b->len, tabs, k);
        b->len += k;
    }
    return true;
}

/* Writes v in decimal into out (at least 21 bytes); returns the length. */
static size_t format_int(char *out, int64_t v)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    char tmp[24], *end = tmp + sizeof tmp, *p = end;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        *--p = pairs[2 * r + 1];
        *--p = pairs[2 * r];
    }
    if (u >= 10) {
        *--p = pairs[2 * u + 1];
        *--p = pairs[2 * u];
    } else {
        *--p = (char)('0' + u);
    }
    if (v < 0)
        *--p = '-';
    size_t n = (size_t)(end - p);
    memcpy(out, p, n);
    return n;
}

/* cJSON's compare_double, the round-trip test of its %1.15g text. */
static bool same_double(double a, double b)
{
    double max = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= max * DBL_EPSILON;
}

/* Seconds and shares (0.351898, 38.315906) are most of the fractions memsnap prints: a
 * double that is the nearest one to a decimal D = r / 10^k of at most 15 significant
 * digits (r < 1e15, no trailing zero) with 1e-4 <= |D|. For such a d, %1.15g writes D in
 * plain notation, so D's digits are written here without snprintf or strtod:
 *   - d is within half an ulp of D, a relative 2^-53 (1.1e-16); the 15-digit decimals
 *     near D are at least 1e-15 of D apart, so D is the 15-digit decimal nearest d and
 *     %1.15g's rounding gives D (also when D = 10^X and d is just below it: the grid
 *     below 10^X is 1e-15 * 10^X apart, still more than twice d's distance).
 *   - D's exponent X is at least -4 and at most 13 (|D| < 1e14: r < 1e15, k >= 1), so
 *     %g uses style f with 14 - X fraction digits; D has at most that many (15
 *     significant digits), and %g strips the trailing zeros: D's own digits remain.
 *   - the text reads back to the double nearest D, which is d: the round trip holds and
 *     cJSON keeps the 15-digit text.
 * d is the double nearest D exactly when r / 10^k == d in double arithmetic: r and 10^k
 * (k <= 22) are exact doubles and IEEE division rounds correctly to nearest. The
 * smallest such k gives r without a trailing zero. m = |d| * 10^k is within 0.2 of r
 * (d's error times 10^k, plus m's own rounding), so nearbyint(m) finds r whenever it
 * exists. Returns the length written to out (at least 24 bytes), or 0 when d is not such
 * a decimal. */
static size_t format_short_decimal(char *out, double d)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,
                                   1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19};
    double a = fabs(d);
    if (!(a >= 1e-4) || a >= 1e14)
        return 0;
    for (size_t k = 1; k < sizeof pow10 / sizeof pow10[0]; k++) {
        double m = a * pow10[k];
        if (m >= 1e15)
            return 0;
        double r = nearbyint(m);
        if (r / pow10[k] != a)
            continue;
        char digits[24];
        size_t nd = format_int(digits, (int64_t)r), n = 0;
        if (d < 0)
            out[n++] = '-';
        if (nd <= k) { /* 0.000ddd: at most 3 zeros, as |D| >= 1e-4 */
            out[n++] = '0';
            out[n++] = '.';
            for (size_t z = nd; z < k; z++)
                out[n++] = '0';
            memcpy(out + n, digits, nd);
            n += nd;
        } else {
            memcpy(out + n, digits, nd - k);
            n += nd - k;
            out[n++] = '.';
            memcpy(out + n, digits + nd - k, k);
            n += k;
        }
        return n;
    }
    return 0;
}

/* A whole number d with |d| < 1e15 has at most 15 significant digits, and %1.15g writes
 * it as a plain integer, so the integer formatter gives the same text:
 *   - %g with precision P = 15 uses style f when the decimal exponent X (of d written
 *     with 15 significant digits) satisfies -4 <= X < P. For 1 <= |d| < 1e15, X is
 *     floor(log10 |d|) in 0..14; rounding to 15 significant digits cannot carry into a
 *     16th because d has at most 15 digits (999999999999999 stays as is); for d = 0,
 *     X = 0. So style f, with P - 1 - X fraction digits.
 *   - d is exactly representable (|d| < 2^53) and whole, so every fraction digit is 0;
 *     without '#', %g removes trailing zeros and then the bare decimal point.
 *   - the text reads back to exactly d (a decimal integer below 2^53 converts exactly),
 *     so cJSON's round-trip test passes and %1.17g is never used.
 * The sign of zero survives: -0.0 is "-0" in %g. tests/test_json_print.c checks this
 * against snprintf for the edges (0, ±1, powers of 10 and 2, 1e15-1) and random values.
 * With whole_integers the same holds up to 2^53 by the rule of cli_json_format, which
 * replaces cJSON's %1.15g exponent text (exact there as %.0f) with the integer. */
static bool put_number(json_buf *b, double d, bool whole_integers)
{
    if (!reserve(b, 32))
        return false;
    char *out = b->p + b->len;
    if (isnan(d) || isinf(d)) {
        memcpy(out, "null", 4);
        b->len += 4;
        return true;
    }
    double limit = whole_integers ? 9007199254740992.0 : 1e15;
    if (fabs(d) < limit) {
        int64_t i = (int64_t)d; /* in range: |d| < 2^53 */
        if ((double)i == d) {
            if (i == 0 && signbit(d)) {
                memcpy(out, "-0", 2);
                b->len += 2;
            } else {
                b->len += format_int(out, i);
            }
            return true;
        }
    }
    size_t short_len = format_short_decimal(out, d);
    if (short_len) {
        b->len += short_len;
        return true;
    }
    /* Everything else (1/3, 1e-7, 1e300): the C library's texts, as cJSON writes them. */
    int n = snprintf(out, 32, "%1.15g", d);
    if (n > 0 && n < 32 && !same_double(strtod(out, NULL), d))
        n = snprintf(out, 32, "%1.17g", d);
    if (n < 0 || n > 25) /* cJSON's 26-byte number buffer; %1.17g needs at most 24 */
        return false;
    b->len += (size_t)n;
    return true;
}

/* 0: copied as is; else the letter after the backslash ('u': \u00xx). */
static const unsigned char escape_of[256] = {
    ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
    [0x01] = 'u', [0x02] = 'u', [0x03] = 'u', [0x04] = 'u', [0x05] = 'u', [0x06] = 'u',
    [0x07] = 'u', [0x0b] = 'u', [0x0e] = 'u', [0x0f] = 'u', [0x10] = 'u', [0x11] = 'u',
    [0x12] = 'u', [0x13] = 'u', [0x14] = 'u', [0x15] = 'u', [0x16] = 'u', [0x17] = 'u',
    [0x18] = 'u', [0x19] = 'u', [0x1a] = 'u', [0x1b] = 'u', [0x1c] = 'u', [0x1d] = 'u',
    [0x1e] = 'u', [0x1f] = 'u', ['"'] = '"', ['\\'] = '\\', [0x7f] = 'u',
    /* lead bytes of the characters ms__text_special names: looked at more closely */
    [0xc2] = 'x', [0xd8] = 'x', [0xe2] = 'x', [0xef] = 'x',
};

static bool put_string(json_buf *b, const char *text)
{
    if (!text)
        return put(b, "\"\"", 2);
    const unsigned char *s = (const unsigned char *)text, *end = s + strlen(text);
    /* Room for the text unescaped; each escape reserves its own extra bytes. */
    if (!reserve(b, (size_t)(end - s) + 2))
        return false;
    b->p[b->len++] = '"';
    while (s < end) {
        const unsigned char *run = s;
        while (s < end && !escape_of[*s])
            s++;
        memcpy(b->p + b->len, run, (size_t)(s - run));
        b->len += (size_t)(s - run);
        if (s == end)
            break;
        /* 6 bytes for this one, the rest unescaped and the closing quote */
        if (!reserve(b, 6 + (size_t)(end - s) + 1))
            return false;
        char *o = b->p + b->len;
        unsigned char e = escape_of[*s];
        static const char hex[] = "0123456789abcdef";
        if (e == 'x') {
            unsigned cp;
            size_t n = ms__text_special((const char *)s, &cp);
            if (!n) { /* an ordinary character: its first byte as is, the rest follows */
                *o++ = (char)*s++;
                b->len = (size_t)(o - b->p);
                continue;
            }
            *o++ = '\\';
            *o++ = 'u';
            *o++ = hex[(cp >> 12) & 15];
            *o++ = hex[(cp >> 8) & 15];
            *o++ = hex[(cp >> 4) & 15];
            *o++ = hex[cp & 15];
            b->len = (size_t)(o - b->p);
            s += n;
            continue;
        }
        *o++ = '\\';
        *o++ = (char)e;
        if (e == 'u') {
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[*s >> 4];
            *o++ = hex[*s & 15];
        }
        b->len = (size_t)(o - b->p);
        s++;
    }
    b->p[b->len++] = '"';
    return true;
}

/* depth: the number of arrays and objects around item (cJSON's printbuffer depth). */
static bool put_value(json_buf *b, const cJSON *item, size_t depth, bool whole_integers)
{
    switch (item->type & 0xFF) {
    case cJSON_NULL:
        return put(b, "null", 4);
    case cJSON_False:
        return put(b, "false", 5);
    case cJSON_True:
        return put(b, "true", 4);
    case cJSON_Number:
        return put_number(b, item->valuedouble, whole_integers);
    case cJSON_Raw:
        return item->valuestring && put(b, item->valuestring, strlen(item->valuestring));
    case cJSON_String:
        return put_string(b, item->valuestring);
    case cJSON_Array:
        if (!put(b, "[", 1))
            return false;
        for (const cJSON *c = item->child; c; c = c->next) {
            if (!put_value(b, c, depth + 1, whole_integers))
                return false;
            if (c->next && !put(b, ", ", 2))
                return false;
        }
        return put(b, "]", 1);
    case cJSON_Object:
        if (!put(b, "{\n", 2))
            return false;
        for (const cJSON *c = item->child; c; c = c->next) {
            if (!put_tabs(b, depth + 1) || !put_string(b, c->string) || !put(b, ":\t", 2) ||
                !put_value(b, c, depth + 1, whole_integers) ||
                !put(b, c->next ? ",\n" : "\n", c->next ? 2 : 1))
                return false;
        }
        return put_tabs(b, depth) && put(b, "}", 1);
    default:
        return false;
    }
}

char *ms__json_format(const cJSON *item, bool whole_integers, size_t *len_out)
{
    json_buf b = {0};
    if (!item || !put_value(&b, item, 0, whole_integers) || !reserve(&b, 0)) {
        free(b.p);
        return NULL;
    }
    b.p[b.len] = '\0';
    if (len_out)
        *len_out = b.len;
    return b.p;
}
