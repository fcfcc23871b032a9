#include "term_text.h"
#include "utf8.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

size_t cli_term_special(const char *s, unsigned *cp)
{
    return ms__text_special(s, cp);
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
    static char bufs[8][8192];
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
