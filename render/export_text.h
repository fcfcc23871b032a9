/* The encodings of the chart export (chart_export.c, docs/view.md): growable JSON text,
 * integer streams written as base64 of LEB128 varints, and a string table that writes
 * each repeated text once. Private to render/.
 *
 * Errors are sticky: a buffer that runs out of memory or past its ceiling (1 GiB) sets
 * `bad` and ignores what follows, so a writer checks once at the end. */
#ifndef MEMSNAP_RENDER_EXPORT_TEXT_H
#define MEMSNAP_RENDER_EXPORT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ growable text */

typedef struct msr__sbuf {
    char *p; /* NUL-terminated once anything was written; the owner frees it */
    size_t n, cap;
    bool bad;
} msr__sbuf;

void msr__sb_put(msr__sbuf *b, const char *s, size_t n);
void msr__sb_puts(msr__sbuf *b, const char *s);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void msr__sb_printf(msr__sbuf *b, const char *fmt, ...);
/* A number as every JSON file memsnap writes it (ms__json_number): null for NaN and
 * infinities, whole numbers up to 2^53 as integers, else cJSON's %1.15g / %1.17g. */
void msr__sb_num(msr__sbuf *b, double v);
/* A JSON string that is also safe inside <script type="application/json">: '<', '>' and
 * '&' are escaped, bidi and C1 controls become the visible text \u{XXXX}. */
void msr__sb_str(msr__sbuf *b, const char *s);

/* ------------------------------------------------------------------ integer streams */

/* Integer arrays travel as base64 of LEB128 varints (signed ones zigzagged): a column of
 * byte counts costs 2-5 characters instead of 8-12 as decimal text. */
typedef struct msr__vbuf {
    uint8_t *p;
    size_t n, cap;
    bool bad;
} msr__vbuf;

void msr__vb_u(msr__vbuf *v, uint64_t x);
void msr__vb_s(msr__vbuf *v, int64_t x);
/* Appends w's bytes to v (w unchanged). */
void msr__vb_append(msr__vbuf *v, const msr__vbuf *w);
/* The stream as a quoted base64 string; empties the stream for the next one. */
void msr__sb_b64(msr__sbuf *b, msr__vbuf *v);

/* ------------------------------------------------------------------ string table */

/* Site labels, frame names, file names, legend texts and colours repeat across windows;
 * each is written once and referred to by index. */
typedef struct msr__str_table {
    char **s;
    size_t n, cap;
    uint32_t *slot; /* open addressing: index + 1, 0 empty */
    size_t n_slots;
    size_t bytes;   /* their JSON text, about */
    bool bad;
} msr__str_table;

/* The index of `s` (NULL: ""), added when new. */
int64_t msr__st_id(msr__str_table *t, const char *s);
/* Forgets the strings added after the first `n` (a level that did not fit). */
void msr__st_truncate(msr__str_table *t, size_t n);
void msr__st_free(msr__str_table *t);

#endif
