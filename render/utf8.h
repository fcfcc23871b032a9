/* UTF-8 helpers for text handed to cairo, which refuses a whole string ("input string
 * not valid UTF-8") for one bad byte: cut only on character boundaries, and replace what
 * is not UTF-8 (a snapshot's names are the file's bytes) before drawing. */
#ifndef MEMSNAP_RENDER_UTF8_H
#define MEMSNAP_RENDER_UTF8_H

#include <stddef.h>

/* The longest prefix of s[0..len) of at most max bytes that ends on a character
 * boundary (never inside a multi-byte sequence). */
size_t msr__utf8_prefix(const char *s, size_t len, size_t max);

/* s when it is valid UTF-8; else a copy in buf (cap >= 4) with each invalid byte
 * replaced by '?', cut on a boundary when it does not fit. */
const char *msr__utf8_safe(const char *s, char *buf, size_t cap);

/* Defined beside the JSON writer that escapes the same characters (lib/src/common/
 * internal.h says which). */
size_t ms__text_special(const char *s, unsigned *cp);

#endif
