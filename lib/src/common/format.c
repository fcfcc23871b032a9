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
