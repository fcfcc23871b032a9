#include "json/json_writer.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_number.h"
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

/* The number's text by the one rule of every JSON file memsnap writes
 * (ms__json_number, lib/src/common/json_number.c). */
static bool put_number(json_buf *b, double d, bool whole_integers)
{
    if (!reserve(b, MS_JSON_NUMBER_MAX))
        return false;
    size_t n = ms__json_number(b->p + b->len, d, whole_integers);
    b->len += n;
    return n > 0;
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
