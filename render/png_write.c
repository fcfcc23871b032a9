/* PNG and SVG provenance (see png_write.h). */
#include "png_write.h"

#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_util.h"

/* A text longer than this is cut (on a character boundary): titles and file lists are
 * short, and a chunk is not the place for a novel. */
#define TEXT_MAX 2048

/* ------------------------------------------------------------------ text */

/* Length of the valid UTF-8 sequence at p (1-4), 0 when p does not start one. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    size_t n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if (n == 3) {
        unsigned cp = (c & 0x0Fu) << 12 | (p[1] & 0x3Fu) << 6 | (p[2] & 0x3Fu);
        if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
    } else if (n == 4) {
        unsigned cp = (c & 0x07u) << 18 | (p[1] & 0x3Fu) << 12 | (p[2] & 0x3Fu) << 6;
        if (cp < 0x10000 || cp > 0x10FFFF)
            return 0;
    }
    return n;
}

/* Copies src into dst as valid UTF-8 without control characters (each invalid byte or
 * control character becomes '?'), cut on a character boundary to fit cap. A snapshot's
 * file name is whatever bytes the file system holds; neither a PNG text nor XML may
 * carry every byte. */
static void clean_text(const char *src, char *dst, size_t cap)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0;
    while (*p) {
        size_t n = utf8_len(p);
        bool ctl = n == 1 ? (*p < 0x20 || *p == 0x7F)
                 : n == 2 ? (p[0] == 0xC2 && p[1] < 0xA0) /* C1 controls */
                          : false;
        size_t take = n ? n : 1;
        if (o + (n && !ctl ? n : 1) >= cap)
            break;
        if (n && !ctl) {
            memcpy(dst + o, p, n);
            o += n;
        } else {
            dst[o++] = '?';
        }
        p += take;
    }
    dst[o] = '\0';
}

/* Latin-1 form of clean UTF-8 text, false when a character lies beyond U+00FF. */
static bool to_latin1(const char *src, char *dst, size_t cap)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0;
    while (*p && o + 1 < cap) {
        if (*p < 0x80) {
            dst[o++] = (char)*p++;
        } else if (p[0] == 0xC2 || p[0] == 0xC3) {
            dst[o++] = (char)(((p[0] & 0x03u) << 6) | (p[1] & 0x3Fu));
            p += 2;
        } else {
            return false;
        }
    }
    dst[o] = '\0';
    return true;
}

/* ------------------------------------------------------------------ PNG */

typedef struct png_sink {
    cairo_write_func_t write;
    void *closure;
    bool write_failed;
    char message[200];
    jmp_buf jump;
} png_sink;

static void on_png_error(png_structp png, png_const_charp msg)
{
    png_sink *sink = png_get_error_ptr(png);
    snprintf(sink->message, sizeof sink->message, "%s", msg);
    longjmp(sink->jump, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg; /* the library never prints */
}

static void on_png_write(png_structp png, png_bytep data, size_t len)
{
    png_sink *sink = png_get_io_ptr(png);
    /* cairo's callback takes an unsigned int; libpng hands over at most one zlib buffer
     * (64 KiB here) or one chunk header at a time. */
    while (len > 0) {
        unsigned int part = len > 0x40000000u ? 0x40000000u : (unsigned int)len;
        if (sink->write(sink->closure, data, part) != CAIRO_STATUS_SUCCESS) {
            sink->write_failed = true;
            png_error(png, "write failed");
        }
        data += part;
        len -= part;
    }
}

static void on_png_flush(png_structp png)
{
    (void)png;
}

/* One text entry per non-empty field: key, and the text as tEXt (Latin-1) or iTXt. */
typedef struct text_store {
    png_text text[4];
    char buf[4][TEXT_MAX];
    int n;
} text_store;

static void add_text(text_store *ts, const char *key, const char *value)
{
    if (!value || !*value)
        return;
    char clean[TEXT_MAX];
    clean_text(value, clean, sizeof clean);
    png_text *t = &ts->text[ts->n];
    memset(t, 0, sizeof *t);
    t->key = (png_charp)key;
    if (to_latin1(clean, ts->buf[ts->n], TEXT_MAX)) {
        t->compression = PNG_TEXT_COMPRESSION_NONE;
    } else {
        memcpy(ts->buf[ts->n], clean, strlen(clean) + 1);
        t->compression = PNG_ITXT_COMPRESSION_NONE;
    }
    t->text = ts->buf[ts->n];
    t->text_length = strlen(t->text);
    ts->n++;
}

/* Does every pixel of an ARGB32 surface have alpha 255? */
static bool opaque(const unsigned char *data, int width, int height, int stride)
{
    for (int y = 0; y < height; y++) {
        const uint32_t *row = (const uint32_t *)(const void *)(data + (size_t)y * (size_t)stride);
        for (int x = 0; x < width; x++)
            if ((row[x] >> 24) != 0xFF)
                return false;
    }
    return true;
}

/* One surface row as RGB or RGBA bytes (cairo keeps native-endian 0xAARRGGBB words,
 * premultiplied by alpha). */
static void convert_row(const unsigned char *src, unsigned char *dst, int width, bool alpha)
{
    const uint32_t *px = (const uint32_t *)(const void *)src;
    for (int x = 0; x < width; x++) {
        uint32_t v = px[x];
        unsigned a = v >> 24, r = (v >> 16) & 0xFF, g = (v >> 8) & 0xFF, b = v & 0xFF;
        if (alpha) {
            if (a == 0) {
                r = g = b = 0;
            } else if (a != 0xFF) {
                r = (r * 255 + a / 2) / a;
                g = (g * 255 + a / 2) / a;
                b = (b * 255 + a / 2) / a;
            }
            *dst++ = (unsigned char)r;
            *dst++ = (unsigned char)g;
            *dst++ = (unsigned char)b;
            *dst++ = (unsigned char)a;
        } else {
            *dst++ = (unsigned char)r;
            *dst++ = (unsigned char)g;
            *dst++ = (unsigned char)b;
        }
    }
}

/* The libpng part, kept apart so that nothing it touches after setjmp lives in a
 * register that longjmp would restore stale: every input is a parameter read only. */
static int encode(png_sink *sink, const unsigned char *data, int width, int height,
                  int stride, bool alpha, unsigned char *row, text_store *texts, int level)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, sink, on_png_error,
                                              on_png_warning);
    if (!png)
        return MS_ERR_NOMEM;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return MS_ERR_NOMEM;
    }
    if (setjmp(sink->jump)) {
        png_destroy_write_struct(&png, &info);
        return sink->write_failed ? MS_ERR_IO : MS_ERR_ARG;
    }
    png_set_write_fn(png, sink, on_png_write, on_png_flush);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
                 alpha ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, level);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
    png_set_compression_buffer_size(png, 65536);
    if (texts->n)
        png_set_text(png, info, texts->text, texts->n);
    png_write_info(png, info);
    for (int y = 0; y < height; y++) {
        convert_row(data + (size_t)y * (size_t)stride, row, width, alpha);
        png_write_row(png, row);
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}

int msr_png_write(cairo_surface_t *image, cairo_write_func_t write, void *closure,
                 const msr_image_meta *meta, int level, ms_error *err)
{
    if (!image || !write || cairo_surface_get_type(image) != CAIRO_SURFACE_TYPE_IMAGE)
        return msr__render_fail(err, MS_ERR_ARG, "PNG: not an image surface");
    cairo_surface_flush(image);
    cairo_format_t format = cairo_image_surface_get_format(image);
    int width = cairo_image_surface_get_width(image);
    int height = cairo_image_surface_get_height(image);
    int stride = cairo_image_surface_get_stride(image);
    const unsigned char *data = cairo_image_surface_get_data(image);
    if ((format != CAIRO_FORMAT_RGB24 && format != CAIRO_FORMAT_ARGB32) || !data ||
        width <= 0 || height <= 0)
        return msr__render_fail(err, MS_ERR_ARG, "PNG: unsupported surface (format %d, %dx%d)",
                               (int)format, width, height);
    if (level < 0 || level > 9)
        level = MSR_PNG_DEFAULT_LEVEL;
    bool alpha = format == CAIRO_FORMAT_ARGB32 && !opaque(data, width, height, stride);

    text_store *texts = calloc(1, sizeof *texts);
    unsigned char *row = malloc((size_t)width * 4);
    png_sink *sink = calloc(1, sizeof *sink);
    int rc = MS_ERR_NOMEM;
    if (texts && row && sink) {
        if (meta) {
            add_text(texts, "Software", meta->software);
            add_text(texts, "Source", meta->source);
            add_text(texts, "Title", meta->title);
            add_text(texts, "Peak", meta->peak);
        }
        sink->write = write;
        sink->closure = closure;
        rc = encode(sink, data, width, height, stride, alpha, row, texts, level);
    }
    if (rc == MS_ERR_NOMEM)
        msr__render_fail(err, rc, "PNG: out of memory");
    else if (rc == MS_ERR_IO)
        msr__render_fail(err, rc, "PNG: write failed");
    else if (rc)
        msr__render_fail(err, rc, "PNG: %s", sink->message);
    free(sink);
    free(row);
    free(texts);
    return rc;
}

cairo_status_t msr_png_stdio_write(void *closure, const unsigned char *data, unsigned int len)
{
    return fwrite(data, 1, len, (FILE *)closure) == len ? CAIRO_STATUS_SUCCESS
                                                         : CAIRO_STATUS_WRITE_ERROR;
}

/* ------------------------------------------------------------------ SVG */

/* Appends clean, XML-escaped text. */
static size_t xml_escaped(char *out, size_t o, size_t cap, const char *text)
{
    char clean[TEXT_MAX];
    clean_text(text, clean, sizeof clean);
    for (const char *p = clean; *p; p++) {
        const char *rep = *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;"
                        : *p == '"' ? "&quot;" : NULL;
        size_t n = rep ? strlen(rep) : 1;
        if (o + n >= cap)
            break;
        memcpy(out + o, rep ? rep : p, n);
        o += n;
    }
    out[o] = '\0';
    return o;
}

static size_t append(char *out, size_t o, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (o + n >= cap)
        return o;
    memcpy(out + o, s, n + 1);
    return o + n;
}

static cairo_status_t insert_meta(msr_svg_meta *m)
{
    static const char *const keys[] = {"Software", "Source", "Title", "Peak"};
    const msr_image_meta *im = m->meta;
    if (!im)
        return CAIRO_STATUS_SUCCESS;
    const char *values[] = {im->software, im->source, im->title, im->peak};
    size_t cap = 6 * TEXT_MAX + 512;
    char *out = malloc(cap);
    if (!out)
        return CAIRO_STATUS_NO_MEMORY;
    size_t o = 0;
    out[0] = '\0';
    if (im->title && *im->title) {
        o = append(out, o, cap, "\n<title>");
        o = xml_escaped(out, o, cap, im->title);
        o = append(out, o, cap, "</title>");
    }
    o = append(out, o, cap, "\n<metadata>\n<ms:image xmlns:ms=\"urn:memsnap\">\n");
    for (size_t i = 0; i < 4; i++) {
        if (!values[i] || !*values[i])
            continue;
        char tag[32];
        snprintf(tag, sizeof tag, "<ms:%s>", keys[i]);
        o = append(out, o, cap, tag);
        o = xml_escaped(out, o, cap, values[i]);
        snprintf(tag, sizeof tag, "</ms:%s>\n", keys[i]);
        o = append(out, o, cap, tag);
    }
    o = append(out, o, cap, "</ms:image>\n</metadata>");
    cairo_status_t st = m->write(m->closure, (const unsigned char *)out, (unsigned int)o);
    free(out);
    return st;
}

cairo_status_t msr_svg_meta_write(void *closure, const unsigned char *data, unsigned int len)
{
    static const char open[] = "<svg";
    msr_svg_meta *m = closure;
    unsigned int i = 0;
    while (m->state < 2 && i < len) {
        unsigned char c = data[i++];
        if (m->state == 0) {
            m->matched = c == (unsigned char)open[m->matched] ? m->matched + 1
                       : c == '<' ? 1 : 0;
            if (m->matched == sizeof open - 1)
                m->state = 1;
        } else if (c == '>') {
            cairo_status_t st = m->write(m->closure, data, i);
            if (st != CAIRO_STATUS_SUCCESS)
                return st;
            data += i;
            len -= i;
            i = 0;
            m->state = 2;
            if ((st = insert_meta(m)) != CAIRO_STATUS_SUCCESS)
                return st;
        }
    }
    return len ? m->write(m->closure, data, len) : CAIRO_STATUS_SUCCESS;
}
