/* The one text of a number in every JSON file memsnap writes (see json_number.h): the
 * text cJSON_Print (libcjson 1.7.15) gives it, written without its strlen and sscanf
 * round trips, null for what JSON cannot hold, and optionally whole numbers up to 2^53
 * as integers. cli/json_print.c writes cJSON trees with it and render/export_text.c the
 * charts' JSON; tests/test_json_print.c compares it with cJSON on the edges and on
 * random values. */
#include "json_number.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
size_t ms__json_number(char *out, double d, bool whole_integers)
{
    if (isnan(d) || isinf(d)) {
        memcpy(out, "null", 4);
        return 4;
    }
    double limit = whole_integers ? 9007199254740992.0 : 1e15;
    if (fabs(d) < limit) {
        int64_t i = (int64_t)d; /* in range: |d| < 2^53 */
        if ((double)i == d) {
            if (i == 0 && signbit(d)) {
                memcpy(out, "-0", 2);
                return 2;
            }
            return format_int(out, i);
        }
    }
    size_t short_len = format_short_decimal(out, d);
    if (short_len)
        return short_len;
    /* Everything else (1/3, 1e-7, 1e300): the C library's texts, as cJSON writes them. */
    int n = snprintf(out, MS_JSON_NUMBER_MAX, "%1.15g", d);
    if (n > 0 && n < MS_JSON_NUMBER_MAX && !same_double(strtod(out, NULL), d))
        n = snprintf(out, MS_JSON_NUMBER_MAX, "%1.17g", d);
    if (n < 0 || n > 25) /* cJSON's 26-byte number buffer; %1.17g needs at most 24 */
        return 0;
    return (size_t)n;
}

