#include "term_text.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

size_t cli_term_special(const char *s, unsigned *cp)
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
    if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0x8E || p[2] == 0x8F || (p[2] >= 0xAA && p[2] <= 0xAE))) {
        *cp = 0x2000u + (p[2] & 0x3Fu); /* U+200E/F, U+202A..U+202E */
        return 3;
    }
    if (p[0] == 0xE2 && p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA9) {
        *cp = 0x2040u + (p[2] & 0x3Fu); /* U+2066..U+2069 */
        return 3;
    }
    return 0;
}

void cli_term_into(const char *s, char *buf, size_t cap)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t o = 0;
    while (*p) {
        unsigned cp;
        size_t n = cli_term_special((const char *)p, &cp);
        char esc[16];
        const char *piece;
        size_t len;
        if (n) {
            len = (size_t)(cp < 0x100 ? snprintf(esc, sizeof esc, "\\x%02x", cp)
                                      : snprintf(esc, sizeof esc, "\\u{%04X}", cp));
            piece = esc;
        } else {
            /* One whole UTF-8 character (or one stray byte). */
            n = 1;
            while (n < 4 && (p[n] & 0xC0) == 0x80)
                n++;
            piece = (const char *)p;
            len = n;
        }
        if (o + len >= cap)
            break;
        memcpy(buf + o, piece, len);
        o += len;
        p += n;
    }
    buf[o] = '\0';
}

const char *cli_term(const char *s)
{
    static char bufs[8][1024];
    static unsigned next;
    if (!s)
        return "";
    bool clean = true;
    for (const unsigned char *p = (const unsigned char *)s; *p && clean; p++) {
        unsigned cp;
        clean = cli_term_special((const char *)p, &cp) == 0;
    }
    if (clean)
        return s;
    char *b = bufs[next++ % 8];
    cli_term_into(s, b, sizeof bufs[0]);
    return b;
}
