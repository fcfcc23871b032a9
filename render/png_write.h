/* PNG files written with libpng from a cairo image surface, with provenance: tEXt chunks
 * Software, Source, Title and Peak, so a chart found later in a CI artifact says which
 * snapshot and which memsnap made it. (cairo's own PNG writer can add no text, and picks
 * the slow default compression.)
 *
 * The bytes go to a write callback of cairo's type, so the caller decides how the file is
 * opened (a plain fopen, or a temporary file renamed into place); msr_png_stdio_write
 * writes to a FILE*. The same provenance goes into SVG files as <metadata>
 * (msr_svg_meta_*). */
#ifndef MEMSNAP_RENDER_PNG_WRITE_H
#define MEMSNAP_RENDER_PNG_WRITE_H

#include <cairo.h>
#include <stddef.h>

#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Texts written into an image; a NULL or empty text is left out. UTF-8; in a PNG a text
 * that Latin-1 can hold is a tEXt chunk (the PNG text encoding), any other an iTXt. */
typedef struct msr_image_meta {
    const char *software; /* "memsnap 0.1.0" */
    const char *source;   /* the input file's name, several separated by ", " */
    const char *title;
    const char *peak;     /* "549289472 bytes (523.84 MiB) at event 1544" */
} msr_image_meta;

/* zlib level 1 with the Up filter: on memsnap's charts (large flat areas, horizontal
 * bands) this is several times faster than libpng's default (level 6, every filter tried
 * per row) for files a few percent larger; see docs/benchmarks.md. */
#define MSR_PNG_DEFAULT_LEVEL 1

/* Writes `image` (CAIRO_FORMAT_RGB24 as RGB; CAIRO_FORMAT_ARGB32 un-premultiplied as RGBA,
 * or as RGB when every pixel is opaque) as a PNG through write(closure, ...). `meta` may
 * be NULL. level: zlib level 0-9, or -1 for MSR_PNG_DEFAULT_LEVEL. Returns 0, MS_ERR_ARG
 * for a surface it cannot write, MS_ERR_IO when write() fails, MS_ERR_NOMEM. */
int msr_png_write(cairo_surface_t *image, cairo_write_func_t write, void *closure,
                 const msr_image_meta *meta, int level, ms_error *err);

/* A write callback for msr_png_write and the SVG surface: closure is a FILE*. */
cairo_status_t msr_png_stdio_write(void *closure, const unsigned char *data, unsigned int len);

/* An SVG written by cairo, with <title> and <metadata> inserted right after the opening
 * <svg> tag: create the surface with msr_svg_meta_write and an msr_svg_meta as its closure,
 * whose `write`/`closure` receive the result. The texts are escaped for XML. */
typedef struct msr_svg_meta {
    cairo_write_func_t write;
    void *closure;
    const msr_image_meta *meta;
    int state; /* 0: before "<svg", 1: inside its tag, 2: inserted (pass through) */
    size_t matched;
} msr_svg_meta;

cairo_status_t msr_svg_meta_write(void *closure, const unsigned char *data, unsigned int len);

#ifdef __cplusplus
}
#endif
#endif
