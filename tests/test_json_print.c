/* cli/json_print.c against cJSON_Print, byte for byte: the numbers at every edge of the
 * integer path, strings with every byte, empty and deep containers, raw items, items that
 * make both fail, seeded random trees, and every testdata truth file read back. The
 * whole-integer rule is checked against the rule it replaces (15+-digit whole numbers
 * turned into raw "%.0f" text before cJSON_Print). The one deliberate difference, the
 * invisible and control characters cJSON copies raw and memsnap writes as \uXXXX, is
 * applied to cJSON's text by an independent list (cjson_with_escapes). */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json_print.h"
#include "../render/export_text.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static unsigned rnd_below(unsigned n)
{
    return (unsigned)(rnd() % n);
}

/* The rule cli_json_text applied before this printer: whole numbers of 1e15 and more
 * (below 2^53) as raw "%.0f" text, on a copy, then cJSON_Print. (It skipped a top-level
 * number, which memsnap never prints; the printer's rule covers it too.) */
static void integers_as_raw(cJSON *node)
{
    if (cJSON_IsNumber(node)) {
        double v = node->valuedouble;
        if (v == floor(v) && fabs(v) >= 1e15 && fabs(v) < 9007199254740992.0) {
            char buf[32];
            snprintf(buf, sizeof buf, "%.0f", v);
            node->type = cJSON_Raw;
            node->valuestring = strdup(buf);
        }
        return;
    }
    for (cJSON *c = node->child; c; c = c->next)
        integers_as_raw(c);
}

/* The characters json_print.c escapes where cJSON copies them, written out here
 * independently of ms__text_special: DEL, C1 controls, U+061C, U+200B..U+200F,
 * U+2028..U+202E, U+2060..U+206F, U+FEFF. Outside strings cJSON writes only ASCII, so
 * replacing them in the whole text is exact. */
static size_t special_at(const unsigned char *p, unsigned *cp)
{
    if (p[0] == 0x7f)
        return *cp = 0x7f, 1;
    if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
        return *cp = p[1], 2;
    if (p[0] == 0xd8 && p[1] == 0x9c)
        return *cp = 0x61c, 2;
    if (p[0] == 0xe2 && p[1] == 0x80 && ((p[2] >= 0x8b && p[2] <= 0x8f) || (p[2] >= 0xa8 && p[2] <= 0xae)))
        return *cp = 0x2000 + (p[2] - 0x80u), 3;
    if (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa0 && p[2] <= 0xaf)
        return *cp = 0x2040 + (p[2] - 0x80u), 3;
    if (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
        return *cp = 0xfeff, 3;
    return 0;
}

static char *cjson_with_escapes(char *text)
{
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *out = malloc(3 * n + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        unsigned cp;
        size_t k = special_at(p, &cp);
        if (k) {
            o += sprintf(o, "\\u%04x", cp);
            p += k;
        } else {
            *o++ = (char)*p++;
        }
    }
    *o = '\0';
    free(text);
    return out;
}

static int shown = 0;

/* Prints `doc` both ways (plain and, on a copy, with the whole-integer rule) and compares. */
static void compare(const char *what, const cJSON *doc)
{
    char *want = cjson_with_escapes(cJSON_Print(doc));
    size_t len = 0;
    char *got = cli_json_format(doc, false, &len);
    CHECK_TRUE_IN(what, (want == NULL) == (got == NULL));
    if (want && got) {
        CHECK_EQ_INT_IN(what, len, strlen(want));
        bool same = strcmp(want, got) == 0;
        CHECK_TRUE_IN(what, same);
        if (!same && shown++ < 3) {
            size_t i = 0;
            while (want[i] && want[i] == got[i])
                i++;
            fprintf(stderr, "%s: first difference at byte %zu:\n want: %.80s\n got:  %.80s\n",
                    what, i, want + (i > 20 ? i - 20 : 0), got + (i > 20 ? i - 20 : 0));
        }
    }
    free(want);
    free(got);

    cJSON *copy = cJSON_Duplicate(doc, true);
    if (copy) {
        integers_as_raw(copy);
        want = cjson_with_escapes(cJSON_Print(copy));
        got = cli_json_format(doc, true, NULL);
        CHECK_TRUE_IN(what, (want == NULL) == (got == NULL));
        if (want && got)
            CHECK_EQ_STR_IN(what, got, want);
        free(want);
        free(got);
        cJSON_Delete(copy);
    }
}

static cJSON *number(double d)
{
    return cJSON_CreateNumber(d);
}

/* A whole number below 1e15 is written by %1.15g as its plain digits (the proof is at
 * put_number in cli/json_print.c): checked here on the edges and on random integers of
 * every length, through the printer's output. */
static void check_integer_text(double d)
{
    char want[64], ctx[64];
    snprintf(want, sizeof want, "%1.15g", d);
    cJSON *n = number(d);
    char *got = cli_json_format(n, false, NULL);
    snprintf(ctx, sizeof ctx, "integer %.17g", d);
    CHECK_EQ_STR_IN(ctx, got, want);
    /* and with no '.', 'e' or leading zero: a plain integer */
    CHECK_TRUE_IN(ctx, got && !strpbrk(got, ".eE"));
    free(got);
    cJSON_Delete(n);
}

static void test_integer_proof(void)
{
    const double edges[] = {0, 1, -1, 9, 10, 99, 100, 2147483647.0, 2147483648.0, -2147483648.0,
                            -2147483649.0, 4294967295.0, 4294967296.0, 1e14, 1e14 - 1,
                            1e15 - 1, -(1e15 - 1), 999999999999999.0, 123456789012345.0};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        check_integer_text(edges[i]);
    for (int k = 0; k < 50; k++) { /* 2^0 .. 2^49 < 1e15, and their neighbours */
        double p = ldexp(1, k);
        check_integer_text(p);
        check_integer_text(-p);
        check_integer_text(p + 1);
        check_integer_text(p - 1);
    }
    for (int k = 0; k < 15; k++) { /* 10^0 .. 10^14 and their neighbours */
        double p = pow(10, k);
        check_integer_text(p);
        check_integer_text(p - 1);
        check_integer_text(-(p + 1));
    }
    for (int i = 0; i < 20000; i++) { /* random lengths 1..15 digits */
        int digits = 1 + (int)rnd_below(15);
        double lim = pow(10, digits);
        double v = floor((double)(rnd() >> 11) / 9007199254740992.0 * lim);
        if (v >= 1e15)
            v = 1e15 - 1;
        check_integer_text(rnd() & 1 ? v : -v);
    }
}

/* Short decimals (seconds, shares) take the printer's own path: r / 10^k for r of every
 * length up to 17 digits and k up to 19, both signs, the 1e-4 and 1e14 edges, and
 * decimals just past 15 digits that must fall back to snprintf; each against cJSON_Print. */
static void test_short_decimals(void)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,
                                   1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19};
    const double edges[] = {0.0001, -0.0001, 0.00009999, 0.000100000001, 0.1, 0.01, 0.001,
                            0.5, 0.25, 0.125, 0.3, 2.675, 1.005, 99999999999999.9,
                            -99999999999999.9, 99999999999999.98, 9999999999999.99,
                            1e14 - 0.5, 0.1 + 0.2, 1.0 / 3, 0.351898, 38.315906, 0.007902,
                            123456789.123456, 12345678.9012345, 1.00000000000001,
                            1.000000000000001, 0.999999999999999, 0.9999999999999999,
                            0.0001234567890123, 0.00012345678901234};
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        cJSON_AddItemToArray(arr, number(edges[i]));
    for (int i = 0; i < 100000; i++) {
        int digits = 1 + (int)rnd_below(17), k = 1 + (int)rnd_below(19);
        double r = floor((double)(rnd() >> 11) / 9007199254740992.0 * pow10[digits]);
        double d = r / pow10[k];
        cJSON_AddItemToArray(arr, number(rnd() & 1 ? d : -d));
    }
    compare("short decimals", arr);
    cJSON_Delete(arr);
}

/* Numbers at every edge, one per array element and one per object member. */
/* p, -p, p +- 1 and the doubles on either side of p. */
static void add_with_neighbours(cJSON *arr, double p)
{
    cJSON_AddItemToArray(arr, number(p));
    cJSON_AddItemToArray(arr, number(-p));
    cJSON_AddItemToArray(arr, number(p + 1));
    cJSON_AddItemToArray(arr, number(p - 1));
    cJSON_AddItemToArray(arr, number(nextafter(p, 0)));
    cJSON_AddItemToArray(arr, number(nextafter(p, INFINITY)));
}

static void test_numbers(void)
{
    double v[] = {0.0,
                  -0.0,
                  1,
                  -1,
                  0.5,
                  -0.5,
                  0.1,
                  1.0 / 3,
                  2.0 / 3,
                  2147483647.0,
                  2147483648.0,
                  -2147483648.0,
                  -2147483649.0,
                  1e15 - 1,
                  1e15,
                  1e15 + 1,
                  -1e15,
                  -(1e15 + 1),
                  1e16,
                  1e16 + 2,
                  9007199254740991.0,
                  9007199254740992.0,
                  9007199254740994.0,
                  -9007199254740992.0,
                  1e17,
                  1e21,
                  1e22,
                  1e300,
                  -1e300,
                  DBL_MAX,
                  -DBL_MAX,
                  DBL_MIN,
                  DBL_TRUE_MIN,
                  -DBL_TRUE_MIN,
                  1e-5,
                  1e-4,
                  1.5e-7,
                  123456.789,
                  0.1 + 0.2,
                  1e15 + 0.5,
                  4503599627370495.5,
                  NAN,
                  -NAN,
                  INFINITY,
                  -INFINITY,
                  1795310694811020.0};
    cJSON *arr = cJSON_CreateArray(), *obj = cJSON_CreateObject();
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char key[16];
        snprintf(key, sizeof key, "n%zu", i);
        cJSON_AddItemToArray(arr, number(v[i]));
        cJSON_AddItemToObject(obj, key, number(v[i]));
        cJSON *one = number(v[i]);
        compare("one number", one);
        cJSON_Delete(one);
    }
    for (int k = 0; k < 64; k++) /* 2^0 .. 2^63 and neighbours: the int, 1e15, 2^53 edges */
        add_with_neighbours(arr, ldexp(1, k));
    for (int k = -30; k < 30; k++) /* powers of ten and their neighbours */
        add_with_neighbours(arr, pow(10, k));
    /* a valueint that disagrees with the double: 1.7.15 prints the double only */
    cJSON *odd = number(3.0);
    odd->valueint = 7;
    cJSON_AddItemToArray(arr, odd);
    compare("numbers array", arr);
    compare("numbers object", obj);
    cJSON_AddItemToObject(obj, "all", arr);
    compare("numbers nested", obj);
    cJSON_Delete(obj);
}

static void test_strings(void)
{
    char all[256];
    for (int i = 1; i < 256; i++)
        all[i - 1] = (char)i;
    all[255] = '\0';
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddStringToObject(obj, "every byte", all);
    cJSON_AddStringToObject(obj, all, "key with every byte");
    cJSON_AddStringToObject(obj, "", "");
    cJSON_AddStringToObject(obj, "quote\"back\\slash", "tab\there\nnew\rcr\bbs\fff\x01\x1f\x7f\xc3\xa9");
    for (int i = 1; i < 256; i++) { /* each byte alone, and between letters */
        char one[2] = {(char)i, 0}, mid[4] = {'a', (char)i, 'b', 0};
        cJSON_AddItemToObject(obj, one, cJSON_CreateString(mid));
    }
    /* a NULL text prints as "": as a value and as a key */
    cJSON *s = cJSON_CreateString("x");
    free(s->valuestring);
    s->valuestring = NULL;
    cJSON_AddItemToObject(obj, "null text", s);
    cJSON *k = cJSON_CreateString("value of a NULL key");
    cJSON_AddItemToObject(obj, "tmp", k);
    free(k->string);
    k->string = NULL;
    /* a long string with escapes at the end, past the first reservation */
    char *longs = malloc(100001);
    for (int i = 0; i < 100000; i++)
        longs[i] = i < 99000 ? 'x' : '\n';
    longs[100000] = '\0';
    cJSON_AddStringToObject(obj, "long", longs);
    free(longs);
    compare("strings", obj);
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToArray(arr, cJSON_CreateString(all));
    compare("string array", arr);
    cJSON_Delete(arr);
    cJSON_Delete(obj);

    /* Each class escaped, its neighbours with the same lead byte kept raw: C1 (U+0085,
     * beside U+00A0 and U+00E9), U+061C (beside U+0627), U+200B/U+200F, U+2028/U+2029
     * (beside U+2010 and the euro sign), U+2060/U+2064/U+2066/U+2069, U+FEFF (beside
     * U+FB01). */
    cJSON *v = cJSON_CreateString("a\xc2\x80\xc2\x85\xc2\x9f\xc2\xa0\xc3\xa9"
                                  "\xd8\x9c\xd8\xa7"
                                  "\xe2\x80\x8b\xe2\x80\x8f\xe2\x80\x90"
                                  "\xe2\x80\xa8\xe2\x80\xa9\xe2\x82\xac"
                                  "\xe2\x81\xa0\xe2\x81\xa4\xe2\x81\xa6\xe2\x81\xa9"
                                  "\xef\xbb\xbf\xef\xac\x81z");
    char *got = cli_json_format(v, false, NULL);
    CHECK_EQ_STR(got, "\"a\\u0080\\u0085\\u009f\xc2\xa0\xc3\xa9\\u061c\xd8\xa7\\u200b\\u200f"
                      "\xe2\x80\x90\\u2028\\u2029\xe2\x82\xac\\u2060\\u2064\\u2066\\u2069"
                      "\\ufeff\xef\xac\x81z\"");
    /* what a reader gets back is the text given */
    cJSON *back = got ? cJSON_Parse(got) : NULL;
    CHECK_TRUE(back && cJSON_IsString(back) && !strcmp(back->valuestring, v->valuestring));
    cJSON_Delete(back);
    free(got);
    /* a lead byte at the very end of the text */
    cJSON_SetValuestring(v, "x\xe2");
    got = cli_json_format(v, false, NULL);
    CHECK_EQ_STR(got, "\"x\xe2\"");
    free(got);
    cJSON_Delete(v);
}

static void test_containers(void)
{
    cJSON *obj = cJSON_CreateObject();
    compare("empty object", obj);
    cJSON *arr = cJSON_CreateArray();
    compare("empty array", arr);
    cJSON_AddItemToObject(obj, "empty array", arr);
    cJSON_AddItemToObject(obj, "empty object", cJSON_CreateObject());
    cJSON *a2 = cJSON_AddArrayToObject(obj, "array of empties");
    cJSON_AddItemToArray(a2, cJSON_CreateObject());
    cJSON_AddItemToArray(a2, cJSON_CreateArray());
    cJSON_AddItemToArray(a2, cJSON_CreateObject());
    cJSON *inner = cJSON_CreateObject();
    cJSON_AddNumberToObject(inner, "x", 1);
    cJSON_AddItemToArray(a2, inner);
    cJSON_AddItemToObject(obj, "t", cJSON_CreateTrue());
    cJSON_AddItemToObject(obj, "f", cJSON_CreateFalse());
    cJSON_AddItemToObject(obj, "n", cJSON_CreateNull());
    cJSON_AddRawToObject(obj, "raw", "{\"already\": [1,2]}");
    cJSON_AddRawToObject(obj, "empty raw", "");
    compare("containers", obj);
    cJSON_Delete(obj);

    /* top-level scalars */
    cJSON *t = cJSON_CreateTrue();
    compare("true", t);
    cJSON_Delete(t);
    cJSON *str = cJSON_CreateString("top");
    compare("top string", str);
    cJSON_Delete(str);
    cJSON *raw = cJSON_CreateRaw("raw text");
    compare("top raw", raw);
    cJSON_Delete(raw);

    /* deep nesting: objects in arrays in objects, 400 levels, then 2,000 arrays */
    cJSON *root = cJSON_CreateObject(), *at = root;
    for (int i = 0; i < 400; i++) {
        cJSON *next = i % 2 ? cJSON_CreateObject() : cJSON_CreateArray();
        if (cJSON_IsObject(at))
            cJSON_AddItemToObject(at, "k", next);
        else
            cJSON_AddItemToArray(at, next);
        if (cJSON_IsObject(at))
            cJSON_AddNumberToObject(at, "i", i);
        else
            cJSON_AddItemToArray(at, cJSON_CreateNumber(i));
        at = next;
    }
    compare("deep mixed", root);
    cJSON_Delete(root);
    root = cJSON_CreateArray();
    at = root;
    for (int i = 0; i < 2000; i++) {
        cJSON *next = cJSON_CreateArray();
        cJSON_AddItemToArray(at, next);
        at = next;
    }
    compare("deep arrays", root);
    cJSON_Delete(root);
}

/* Items that make cJSON_Print fail make this printer fail too. */
static void test_failures(void)
{
    CHECK_TRUE(cli_json_format(NULL, false, NULL) == NULL);
    cJSON *obj = cJSON_CreateObject();
    cJSON *raw = cJSON_AddRawToObject(obj, "raw", "x");
    free(raw->valuestring);
    raw->valuestring = NULL;
    CHECK_TRUE(cJSON_Print(obj) == NULL);
    CHECK_TRUE(cli_json_format(obj, false, NULL) == NULL);
    cJSON_Delete(obj);

    cJSON *arr = cJSON_CreateArray();
    cJSON *bad = cJSON_CreateNull();
    bad->type = cJSON_Invalid;
    cJSON_AddItemToArray(arr, bad);
    CHECK_TRUE(cJSON_Print(arr) == NULL);
    CHECK_TRUE(cli_json_format(arr, false, NULL) == NULL);
    bad->type = cJSON_Number | cJSON_String; /* two types at once: unknown */
    CHECK_TRUE(cJSON_Print(arr) == NULL);
    CHECK_TRUE(cli_json_format(arr, false, NULL) == NULL);
    bad->type = cJSON_NULL | cJSON_IsReference; /* flags above the low byte are ignored */
    compare("reference flag", arr);
    cJSON_Delete(arr);
}

static double random_number(void)
{
    switch (rnd_below(12)) {
    case 0:
        return (double)(int64_t)(rnd() % 2001) - 1000;
    case 1: { /* a whole number of any magnitude up to 2^63 */
        int bits = (int)rnd_below(64);
        double v = (double)(rnd() >> (63 - bits));
        return rnd() & 1 ? v : -v;
    }
    case 2: { /* near the 1e15 and 2^53 edges */
        double base = rnd() & 1 ? 1e15 : 9007199254740992.0;
        double v = base + (double)(int)(rnd_below(9)) - 4;
        return rnd() & 1 ? v : -v;
    }
    case 3:
        return (double)rnd_below(1000000) / (1 + rnd_below(1000));
    case 4: { /* any bit pattern: subnormals, NaN payloads, infinities */
        uint64_t u = rnd();
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    case 5:
        return ldexp((double)(rnd() >> 11), (int)rnd_below(2100) - 1100);
    case 6:
        return (double)rnd_below(100) * pow(10, (int)rnd_below(60) - 30);
    case 7:
        return rnd() & 1 ? -0.0 : 0.0;
    case 8:
        return (double)(rnd() >> 11) / 9007199254740992.0;
    case 9:
        return (double)(rnd() % 100000000000000000u) / 1000;
    case 10:
        return (double)(int64_t)rnd() * 1e-3;
    default:
        return (double)(rnd() >> (11 + rnd_below(40))); /* whole, below 2^53 */
    }
}

static char *random_text(void)
{
    size_t n = rnd_below(4) == 0 ? rnd_below(200) : rnd_below(12);
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned c = rnd_below(3) ? 32 + rnd_below(95) : 1 + rnd_below(255);
        s[i] = (char)c;
    }
    s[n] = '\0';
    return s;
}

static cJSON *random_tree(int depth)
{
    unsigned kind = rnd_below(depth > 6 ? 7 : 10);
    switch (kind) {
    case 0:
        return cJSON_CreateNull();
    case 1:
        return cJSON_CreateBool(rnd() & 1);
    case 2:
    case 3:
        return number(random_number());
    case 4:
    case 5: {
        char *t = random_text();
        cJSON *s = cJSON_CreateString(t);
        free(t);
        return s;
    }
    case 6: {
        char raw[32];
        snprintf(raw, sizeof raw, "%u", (unsigned)rnd_below(100000));
        return cJSON_CreateRaw(rnd_below(5) ? raw : "");
    }
    case 7:
    case 8: {
        cJSON *a = cJSON_CreateArray();
        unsigned n = rnd_below(6);
        for (unsigned i = 0; i < n; i++)
            cJSON_AddItemToArray(a, random_tree(depth + 1));
        return a;
    }
    default: {
        cJSON *o = cJSON_CreateObject();
        unsigned n = rnd_below(6);
        for (unsigned i = 0; i < n; i++) {
            char *k = random_text();
            cJSON_AddItemToObject(o, k, random_tree(depth + 1));
            free(k);
        }
        return o;
    }
    }
}

static void test_random(void)
{
    for (int i = 0; i < 3000; i++) {
        cJSON *t = random_tree(0);
        char ctx[32];
        snprintf(ctx, sizeof ctx, "random tree %d", i);
        compare(ctx, t);
        cJSON_Delete(t);
    }
    /* one wide array of random numbers: most of the number paths at once */
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < 200000; i++)
        cJSON_AddItemToArray(arr, number(random_number()));
    compare("random numbers", arr);
    cJSON_Delete(arr);
}

/* The truth files: real documents of every shape memsnap's JSON has. */
static void truth_file(const char *path, const char *name, void *arg)
{
    (void)name;
    int *parsed = arg;
    size_t len = 0;
    char *text = check_read_text(path, &len);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    if (doc) {
        compare(path, doc);
        (*parsed)++;
    }
    cJSON_Delete(doc);
    free(text);
}

static void test_truth_files(void)
{
    int parsed = 0;
    check_each_file(".json", truth_file, &parsed);
    CHECK_TRUE(parsed >= 20);
}

/* The charts' JSON (render/export_text.c) writes numbers as the tool's documents do:
 * one text per number, null where JSON has none, whole numbers as integers. */
static void test_chart_numbers(void)
{
    const double v[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, 1e15, 1503238553.6000001,
                        9007199254740991.0, 1.0 / 3, 0.1, -2.5e-7, 1e300};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        cJSON *doc = cJSON_CreateNumber(v[i]);
        char *want = cli_json_format(doc, true, NULL);
        msr__sbuf b = {0};
        msr__sb_num(&b, v[i]);
        char ctx[40];
        snprintf(ctx, sizeof ctx, "number %zu", i);
        CHECK_TRUE_IN(ctx, want && b.p && !b.bad);
        if (want && b.p)
            CHECK_EQ_STR_IN(ctx, b.p, want);
        free(b.p);
        free(want);
        cJSON_Delete(doc);
    }
    msr__sbuf b = {0};
    msr__sb_num(&b, NAN);
    msr__sb_puts(&b, ",");
    msr__sb_num(&b, 1e15);
    msr__sb_puts(&b, ",");
    msr__sb_num(&b, 1503238553.6000001);
    CHECK_EQ_STR(b.p ? b.p : "", "null,1000000000000000,1503238553.6");
    free(b.p);
}

int main(void)
{
    test_chart_numbers();
    test_integer_proof();
    test_numbers();
    test_short_decimals();
    test_strings();
    test_containers();
    test_failures();
    test_random();
    test_truth_files();
    return check_finish("test_json_print");
}
