/* The libpng writer (render/png_write.c): a chart written through it decodes to exactly
 * the pixels cairo drew; the chunks are well-formed (CRCs) and carry Software, Source,
 * Title and Peak; text outside Latin-1 goes to iTXt, control bytes never reach a chunk;
 * translucent pixels come back un-premultiplied; a failing write is an error, not a
 * crash; and SVGs get the same texts as <metadata>, however cairo splits its writes. */
#include <cairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "draw.h"
#include "chart.h"
#include "memsnap/memsnap.h"
#include "memsnap/version.h"
#include "png_write.h"
#include "check_membuf.h"

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig\n"; /* fontconfig's caches live until exit on purpose */
}

typedef struct reader {
    const membuf *b;
    size_t at;
} reader;

static cairo_status_t from_mem(void *closure, unsigned char *data, unsigned int len)
{
    reader *r = closure;
    if (r->at + len > r->b->n)
        return CAIRO_STATUS_READ_ERROR;
    memcpy(data, r->b->p + r->at, len);
    r->at += len;
    return CAIRO_STATUS_SUCCESS;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Walks the chunks, checking each CRC; copies the text of chunk `type` with keyword `key`
 * (tEXt: after the NUL; iTXt: after its four header fields) into out. Returns how many
 * such chunks were found, -1 when the file is malformed. */
static int find_text(const membuf *b, const char *type, const char *key, char *out, size_t cap,
                     int *color_type)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (b->n < 8 || memcmp(b->p, sig, 8))
        return -1;
    int found = 0;
    size_t at = 8;
    bool end = false;
    while (at + 12 <= b->n && !end) {
        uint32_t len = be32(b->p + at);
        if (len > b->n - at - 12)
            return -1;
        const unsigned char *t = b->p + at + 4, *d = b->p + at + 8;
        uLong crc = crc32(0, t, 4 + len);
        if (crc != be32(d + len))
            return -1;
        if (!memcmp(t, "IHDR", 4) && color_type)
            *color_type = d[9];
        if (!memcmp(t, "IEND", 4))
            end = true;
        size_t klen = strlen(key);
        if (!memcmp(t, type, 4) && len > klen && !memcmp(d, key, klen) && d[klen] == 0) {
            size_t skip = klen + 1;
            if (!strcmp(type, "iTXt")) { /* compression flag, method, language, key */
                skip += 2;
                while (skip < len && d[skip])
                    skip++;
                skip++;
                while (skip < len && d[skip])
                    skip++;
                skip++;
            }
            size_t n = len - skip < cap - 1 ? len - skip : cap - 1;
            memcpy(out, d + skip, n);
            out[n] = '\0';
            found++;
        }
        at += 12 + len;
    }
    return end && at == b->n ? found : -1;
}

static cairo_surface_t *decode(const membuf *b)
{
    reader r = {b, 0};
    return cairo_image_surface_create_from_png_stream(from_mem, &r);
}

/* Number of bytes that differ in the colour channels of two same-size surfaces. */
static long pixel_diff(cairo_surface_t *a, cairo_surface_t *b, int tolerance)
{
    int w = cairo_image_surface_get_width(a), h = cairo_image_surface_get_height(a);
    if (w != cairo_image_surface_get_width(b) || h != cairo_image_surface_get_height(b))
        return -1;
    bool alpha = cairo_image_surface_get_format(a) == CAIRO_FORMAT_ARGB32;
    long diff = 0;
    for (int y = 0; y < h; y++) {
        const uint32_t *ra = (const uint32_t *)(const void *)(cairo_image_surface_get_data(a) +
                                                  (size_t)y * cairo_image_surface_get_stride(a));
        const uint32_t *rb = (const uint32_t *)(const void *)(cairo_image_surface_get_data(b) +
                                                  (size_t)y * cairo_image_surface_get_stride(b));
        for (int x = 0; x < w; x++)
            for (int s = 0; s < (alpha ? 32 : 24); s += 8) {
                int ca = (int)(ra[x] >> s & 0xFF), cb = (int)(rb[x] >> s & 0xFF);
                diff += abs(ca - cb) > tolerance;
            }
    }
    return diff;
}

/* A real chart, drawn once onto an image surface and once through msr_render_write_to. */
static void test_chart_roundtrip(void)
{
    const char *ctx = "gpt2_train chart";
    ms_snapshot *s = NULL;
    ms_timeline *t = NULL;
    int device;
    if (check_open_timeline("testdata/gpt2_train.pickle", &s, &device, &t))
        return;
    msr_chart_source src = {.snap = s, .trace = ms_snapshot_trace(s, device), .tl = t,
                           .label = "gpt2_train.pickle"};
    msr_chart_spec spec = {0};
    msr_chart *chart = NULL;
    ms_error err;
    CHECK_EQ_INT_IN(ctx, msr_chart_build(&chart, &src, &spec, (msr_chart_rect){0, 0, 1000, 500},
                                        &err), 0);
    if (!chart)
        goto out;
    membuf png = {0};
    msr_image_meta meta = {.source = "gpt2_train.pickle"};
    CHECK_EQ_INT_IN(ctx, msr_render_write_to(to_mem, &png, "mem", MSR_RENDER_PNG, 1000, 500,
                                            (const msr_chart *const *)&chart, 1, &meta, &err), 0);

    /* The reference: the same drawing kept as cairo drew it. */
    cairo_surface_t *ref = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1000, 500);
    cairo_t *cr = cairo_create(ref);
    cairo_set_source_rgb(cr, chart->theme.bg.r, chart->theme.bg.g, chart->theme.bg.b);
    cairo_paint(cr);
    CHECK_EQ_INT_IN(ctx, msr_chart_draw(cr, chart, &err), 0);
    cairo_destroy(cr);
    cairo_surface_flush(ref);

    cairo_surface_t *back = decode(&png);
    CHECK_EQ_INT_IN(ctx, cairo_surface_status(back), CAIRO_STATUS_SUCCESS);
    CHECK_EQ_INT_IN(ctx, cairo_image_surface_get_format(back), CAIRO_FORMAT_RGB24);
    CHECK_EQ_INT_IN(ctx, pixel_diff(ref, back, 0), 0);
    cairo_surface_destroy(back);
    cairo_surface_destroy(ref);

    char text[2048];
    int color = -1;
    CHECK_EQ_INT_IN(ctx, find_text(&png, "tEXt", "Software", text, sizeof text, &color), 1);
    CHECK_EQ_STR_IN(ctx, text, "memsnap " MS_VERSION_STRING);
    CHECK_EQ_INT_IN(ctx, color, 2); /* RGB, no alpha channel for an opaque chart */
    CHECK_EQ_INT_IN(ctx, find_text(&png, "tEXt", "Source", text, sizeof text, NULL), 1);
    CHECK_EQ_STR_IN(ctx, text, "gpt2_train.pickle");
    /* The title's "·" is Latin-1 0xB7 in a tEXt chunk. */
    CHECK_EQ_INT_IN(ctx, find_text(&png, "tEXt", "Title", text, sizeof text, NULL), 1);
    CHECK_EQ_STR_IN(ctx, text, "gpt2_train.pickle  \xb7  cuda:0  \xb7  peak 523.84 MiB  \xb7  "
                               "reserved peak 602.00 MiB");
    /* The exact peak: the allocator's requested_bytes.all.peak. */
    CHECK_EQ_INT_IN(ctx, find_text(&png, "tEXt", "Peak", text, sizeof text, NULL), 1);
    char want[64];
    snprintf(want, sizeof want, "%.0f bytes (",
             check_truth_file_counter("gpt2_train", "requested_bytes.all.peak"));
    CHECK_TRUE_IN(ctx, !strncmp(text, want, strlen(want)));

    /* A write that fails half-way is MS_ERR_IO with the name, and nothing leaks. */
    membuf broken = {.fail_after = png.n / 2};
    CHECK_EQ_INT_IN(ctx, msr_render_write_to(to_mem, &broken, "half.png", MSR_RENDER_PNG, 1000,
                                            500, (const msr_chart *const *)&chart, 1, NULL,
                                            &err), MS_ERR_IO);
    CHECK_TRUE_IN(ctx, strstr(err.message, "half.png") != NULL);
    free(broken.p);

    /* SVG: the same texts as <metadata>, right after the opening tag, XML-escaped. */
    membuf svg = {0};
    msr_image_meta odd = {.source = "a<b>&\"c\".pickle", .title = "t"};
    CHECK_EQ_INT_IN(ctx, msr_render_write_to(to_mem, &svg, "mem", MSR_RENDER_SVG, 1000, 500,
                                            (const msr_chart *const *)&chart, 1, &odd, &err), 0);
    const char *doc = (const char *)svg.p;
    const char *open = doc ? strstr(doc, "<svg") : NULL;
    const char *meta_at = doc ? strstr(doc, "\n<title>t</title>\n<metadata>") : NULL;
    CHECK_TRUE_IN(ctx, open && meta_at && meta_at == strchr(open, '>') + 1);
    CHECK_TRUE_IN(ctx, doc && strstr(doc, "<ms:Source>a&lt;b&gt;&amp;&quot;c&quot;.pickle"
                                          "</ms:Source>"));
    CHECK_TRUE_IN(ctx, doc && strstr(doc, "<ms:Software>memsnap " MS_VERSION_STRING
                                          "</ms:Software>"));
    CHECK_TRUE_IN(ctx, doc && strstr(doc, "<ms:Peak>549285896 bytes ("));
    free(svg.p);
    free(png.p);
out:
    msr_chart_free(chart);
    ms_timeline_free(t);
    ms_snapshot_free(s);
}

/* The SVG filter gives the same document whether cairo writes it whole or a byte at a
 * time (the "<svg" tag may be split anywhere). */
static void test_svg_split_writes(void)
{
    const char *ctx = "svg split";
    const char *doc = "<?xml version=\"1.0\"?>\n<sv<svg width=\"1\">\n<g/></svg>\n";
    msr_image_meta meta = {.software = "memsnap x", .peak = "1 bytes"};
    membuf whole = {0}, bytes = {0};
    msr_svg_meta a = {to_mem, &whole, &meta, 0, 0}, b = {to_mem, &bytes, &meta, 0, 0};
    CHECK_EQ_INT_IN(ctx, msr_svg_meta_write(&a, (const unsigned char *)doc,
                                           (unsigned int)strlen(doc)), CAIRO_STATUS_SUCCESS);
    for (size_t i = 0; doc[i]; i++)
        CHECK_EQ_INT_IN(ctx, msr_svg_meta_write(&b, (const unsigned char *)doc + i, 1),
                        CAIRO_STATUS_SUCCESS);
    CHECK_TRUE_IN(ctx, whole.n == bytes.n && !memcmp(whole.p, bytes.p, whole.n));
    CHECK_EQ_STR_IN(ctx, (const char *)whole.p,
                    "<?xml version=\"1.0\"?>\n<sv<svg width=\"1\">\n<metadata>\n"
                    "<ms:image xmlns:ms=\"urn:memsnap\">\n<ms:Software>memsnap x</ms:Software>\n"
                    "<ms:Peak>1 bytes</ms:Peak>\n</ms:image>\n</metadata>\n<g/></svg>\n");
    free(whole.p);
    free(bytes.p);
}

/* Text a PNG cannot carry as is: beyond Latin-1 (iTXt, UTF-8), control characters and
 * bytes that are not UTF-8 ('?'). */
static void test_texts(void)
{
    const char *ctx = "texts";
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 3, 2);
    msr_image_meta meta = {.source = "run\n\x01\xff.pickle", .title = "\xe6\x97\xa5 peak",
                          .peak = "caf\xc3\xa9"};
    membuf png = {0};
    ms_error err;
    CHECK_EQ_INT_IN(ctx, msr_png_write(img, to_mem, &png, &meta, -1, &err), 0);
    char text[256];
    CHECK_EQ_INT_IN(ctx, find_text(&png, "tEXt", "Source", text, sizeof text, NULL), 1);
    CHECK_EQ_STR_IN(ctx, text, "run???.pickle");
    CHECK_EQ_INT_IN(ctx, find_text(&png, "tEXt", "Title", text, sizeof text, NULL), 0);
    CHECK_EQ_INT_IN(ctx, find_text(&png, "iTXt", "Title", text, sizeof text, NULL), 1);
    CHECK_EQ_STR_IN(ctx, text, "\xe6\x97\xa5 peak");
    CHECK_EQ_INT_IN(ctx, find_text(&png, "tEXt", "Peak", text, sizeof text, NULL), 1);
    CHECK_EQ_STR_IN(ctx, text, "caf\xe9");
    CHECK_EQ_INT_IN(ctx, find_text(&png, "tEXt", "Software", text, sizeof text, NULL), 0);
    free(png.p);

    /* Not an image surface, or a format it does not write: refused. */
    cairo_surface_t *a8 = cairo_image_surface_create(CAIRO_FORMAT_A8, 4, 4);
    membuf none = {0};
    CHECK_EQ_INT_IN(ctx, msr_png_write(a8, to_mem, &none, NULL, -1, &err), MS_ERR_ARG);
    CHECK_EQ_INT_IN(ctx, (int)none.n, 0);
    cairo_surface_destroy(a8);
    cairo_surface_destroy(img);
}

/* Translucent ARGB32 comes back (premultiplied again by cairo's reader) within rounding;
 * an opaque ARGB32 surface is written without an alpha channel. */
static void test_alpha(void)
{
    const char *ctx = "alpha";
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 64, 32);
    cairo_t *cr = cairo_create(img);
    for (int i = 0; i < 8; i++) {
        cairo_set_source_rgba(cr, i / 7.0, 1 - i / 7.0, 0.3, (i + 1) / 8.0);
        cairo_rectangle(cr, i * 8, 0, 8, 32);
        cairo_fill(cr);
    }
    cairo_destroy(cr);
    membuf png = {0};
    ms_error err;
    CHECK_EQ_INT_IN(ctx, msr_png_write(img, to_mem, &png, NULL, 9, &err), 0);
    int color = -1;
    char text[8];
    CHECK_EQ_INT_IN(ctx, find_text(&png, "tEXt", "Title", text, sizeof text, &color), 0);
    CHECK_EQ_INT_IN(ctx, color, 6); /* RGBA */
    cairo_surface_t *back = decode(&png);
    CHECK_EQ_INT_IN(ctx, cairo_image_surface_get_format(back), CAIRO_FORMAT_ARGB32);
    CHECK_EQ_INT_IN(ctx, pixel_diff(img, back, 1), 0);
    cairo_surface_destroy(back);
    free(png.p);

    cairo_surface_t *solid = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 16, 16);
    cr = cairo_create(solid);
    cairo_set_source_rgb(cr, 0.2, 0.4, 0.6);
    cairo_paint(cr);
    cairo_destroy(cr);
    membuf opaque = {0};
    CHECK_EQ_INT_IN(ctx, msr_png_write(solid, to_mem, &opaque, NULL, 0, &err), 0);
    CHECK_EQ_INT_IN(ctx, find_text(&opaque, "tEXt", "Title", text, sizeof text, &color), 0);
    CHECK_EQ_INT_IN(ctx, color, 2);
    back = decode(&opaque);
    CHECK_EQ_INT_IN(ctx, pixel_diff(solid, back, 0), 0);
    cairo_surface_destroy(back);
    free(opaque.p);
    cairo_surface_destroy(solid);
    cairo_surface_destroy(img);
}

int main(void)
{
    test_chart_roundtrip();
    test_svg_split_writes();
    test_texts();
    test_alpha();
    return check_finish("png_write");
}
