#include "utf8.h"

#include <stdint.h>
#include <string.h>

size_t msr__utf8_prefix(const char *s, size_t len, size_t max)
{
    size_t n = len < max ? len : max;
    while (n > 0 && n < len && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* Length of the valid sequence at p (1-4), or 0 when the bytes there are not UTF-8. */
static size_t seq_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!n)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    uint32_t cp = c & (0x7Fu >> n);
    for (size_t i = 1; i < n; i++)
        cp = cp << 6 | (p[i] & 0x3Fu);
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0; /* overlong, surrogate, beyond Unicode */
    return n;
}

const char *msr__utf8_safe(const char *s, char *buf, size_t cap)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n;
    while (*p && (n = seq_len(p)) != 0)
        p += n;
    if (!*p)
        return s;
    size_t o = 0;
    for (p = (const unsigned char *)s; *p;) {
        n = seq_len(p);
        size_t take = n ? n : 1;
        if (o + take >= cap)
            break;
        if (n)
            memcpy(buf + o, p, n);
        else
            buf[o] = '?';
        o += take;
        p += take;
    }
    buf[o] = '\0';
    return buf;
}
