/* Text from a snapshot (function and file names, annotation names, settings) is the
 * file's bytes: before it reaches a terminal, control characters, the Unicode
 * bidirectional controls (U+202E and friends, which reorder what the reader sees) and the
 * invisible format characters (U+200B, U+2028, U+FEFF, ...: text the reader cannot see)
 * are written as visible escapes (docs/security.md). */
#ifndef MEMSNAP_CLI_TERM_TEXT_H
#define MEMSNAP_CLI_TERM_TEXT_H

#include <stddef.h>

/* s with C0/C1 controls and DEL as \xNN and bidi and invisible characters as \u{XXXX};
 * s itself when it has none. The result lives in one of 8 rotating buffers (8 KiB: a PATH_MAX path escaped
 * whole in most cases; longer text is cut on a character boundary), so up to 8 calls may
 * appear in one printf. */
const char *cli_term(const char *s);

/* At s: the byte length of a control, bidi or invisible character (0: none), its code point in
 * *cp. For other writers (HTML, Markdown) that show such characters visibly. */
size_t cli_term_special(const char *s, unsigned *cp);

/* The same into a caller's buffer (cap >= 16). */
void cli_term_into(const char *s, char *buf, size_t cap);

#endif
