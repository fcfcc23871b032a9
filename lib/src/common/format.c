/* Human-readable sizes, both ways. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

/* Text cut by a buffer's end must not end inside a UTF-8 character (docs/security.md). */
void ms__utf8_trim(char *buf)
{
    size_t n = strlen(buf), i = n;
    while (i > 0 && n - i < 3 && ((unsigned char)buf[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0 || (unsigned char)buf[i - 1] < 0xC0)
        return;
    unsigned char lead = (unsigned char)buf[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (n - (i - 1) < need)
        buf[i - 1] = '\0';
}

size_t ms__text_done(char *buf, size_t cap, int n)
{
    if (n < 0) { /* an encoding error: nothing sensible was written */
        if (cap)
            buf[0] = '\0';
        return 0;
    }
    if (cap && (size_t)n >= cap)
        ms__utf8_trim(buf);
    return (size_t)n;
}

size_t ms_format_bytes(int64_t bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    const char *sign = bytes < 0 ? "-" : "";
    uint64_t mag = bytes < 0 ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes;
    if (mag < 1024)
        return ms__text_done(buf, cap,
                             snprintf(buf, cap, "%s%llu B", sign, (unsigned long long)mag));
    double v = (double)mag;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    return ms__text_done(buf, cap, snprintf(buf, cap, "%s%.2f %s", sign, v, units[u]));
}

static int parse_size(const char *text, uint64_t *out);

int ms_parse_size(uint64_t *out, const char *text, ms_error *err)
{
    int rc = parse_size(text, out);
    if (rc)
        return ms__fail(err, rc, MS_NO_OFFSET, "not a size: '%.200s'", text ? text : "");
    return 0;
}

static int parse_size(const char *text, uint64_t *out)
{
    if (!text || !*text)
        return MS_ERR_ARG;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '-' || *p == '+')
        return MS_ERR_ARG;
    errno = 0;
    char *end;
    double v = strtod(p, &end);
    if (end == p || errno || !isfinite(v) || v < 0)
        return MS_ERR_ARG;
    /* Decimal only: strtod also takes hex ("0x10" would be 16 B), inf and nan. */
    for (const char *c = p; c < end; c++)
        if (!strchr("0123456789.eE+-", *c))
            return MS_ERR_ARG;
    while (isspace((unsigned char)*end))
        end++;
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {{"", 1},
                 {"b", 1},
                 {"k", 1024.0},
                 {"kb", 1e3},
                 {"kib", 1024.0},
                 {"m", 1048576.0},
                 {"mb", 1e6},
                 {"mib", 1048576.0},
                 {"g", 1073741824.0},
                 {"gb", 1e9},
                 {"gib", 1073741824.0},
                 {"t", 1099511627776.0},
                 {"tb", 1e12},
                 {"tib", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            double bytes = v * units[i].mult;
            if (bytes >= 9223372036854775807.0) /* llround's range */
                return MS_ERR_ARG;
            /* Plain byte counts must be whole numbers; scaled ones round to a byte. */
            if (units[i].mult == 1 && bytes != floor(bytes))
                return MS_ERR_ARG;
            *out = (uint64_t)llround(bytes);
            return 0;
        }
    }
    return MS_ERR_ARG;
}

size_t ms__text_special(const char *s, unsigned *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    if (p[0] < 0x20 || p[0] == 0x7F) {
        *cp = p[0];
        return 1;
    }
    if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) { /* C1 controls */
        *cp = p[1];
        return 2;
    }
    if (p[0] == 0xD8 && p[1] == 0x9C) { /* U+061C arabic letter mark */
        *cp = 0x061C;
        return 2;
    }
    /* U+200B..U+200F (zero-width space, joiners, LRM/RLM), U+2028/U+2029 (line and
     * paragraph separators), U+202A..U+202E (bidi embeddings and overrides) */
    if (p[0] == 0xE2 && p[1] == 0x80 && ((p[2] >= 0x8B && p[2] <= 0x8F) || (p[2] >= 0xA8 && p[2] <= 0xAE))) {
        *cp = 0x2000u + (p[2] & 0x3Fu);
        return 3;
    }
    /* U+2060..U+206F: word joiner, invisible operators, the bidi isolates U+2066..U+2069
     * and the deprecated format controls; all invisible */
    if (p[0] == 0xE2 && p[1] == 0x81 && p[2] >= 0xA0 && p[2] <= 0xAF) {
        *cp = 0x2040u + (p[2] & 0x3Fu);
        return 3;
    }
    if (p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) { /* U+FEFF zero-width no-break space */
        *cp = 0xFEFF;
        return 3;
    }
    return 0;
}
