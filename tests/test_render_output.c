/* Rendered files: every testdata snapshot drawn to PNG and SVG. PNGs decode at the size
 * asked for and show the chart (not a blank page), SVGs are well-formed XML and small,
 * panels and overlays draw, bands too thin to draw leave no gap in the stack, and errors
 * come back as codes instead of broken files. */
#include <cairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "draw.h"
#include "chart.h"
#include "chart_impl.h" /* msr__colours_together: what a figure does to its panels */
#include "memsnap/memsnap.h"

/* cairo's text goes through fontconfig, which keeps its caches until exit on purpose;
 * LeakSanitizer (in -DMEMSNAP_SANITIZE builds) must not count them as memsnap's leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig\n";
}

const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}

static char tmpdir[] = "/tmp/memsnap-render-XXXXXX";

/* ------------------------------------------------------------------ XML */

/* Well-formedness in the sense that matters here: declarations, comments and CDATA
 * closed, quotes closed inside tags, every element closed in order, one root. Returns
 * NULL or what is wrong. */
static const char *xml_problem(const char *s)
{
    enum { DEPTH = 256 };
    const char *stack[DEPTH];
    size_t stack_len[DEPTH];
    size_t depth = 0, roots = 0;
    const char *p = s;
    while ((p = strchr(p, '<'))) {
        if (!strncmp(p, "<?", 2)) {
            p = strstr(p, "?>");
            if (!p)
                return "unclosed <?";
            p += 2;
        } else if (!strncmp(p, "<!--", 4)) {
            p = strstr(p + 4, "-->");
            if (!p)
                return "unclosed comment";
            p += 3;
        } else if (!strncmp(p, "<![CDATA[", 9)) {
            p = strstr(p, "]]>");
            if (!p)
                return "unclosed CDATA";
            p += 3;
        } else if (!strncmp(p, "<!", 2)) {
            p = strchr(p, '>');
            if (!p)
                return "unclosed declaration";
            p++;
        } else if (p[1] == '/') {
            const char *name = p + 2;
            size_t len = strcspn(name, " \t\r\n>");
            if (depth == 0)
                return "closing tag without an open element";
            depth--;
            if (len != stack_len[depth] || strncmp(name, stack[depth], len))
                return "closing tag does not match";
            p = strchr(name, '>');
            if (!p)
                return "unclosed closing tag";
            p++;
        } else {
            const char *name = p + 1;
            size_t len = strcspn(name, " \t\r\n/>");
            if (len == 0)
                return "tag without a name";
            const char *q = name + len;
            char quote = 0;
            for (; *q && (quote || *q != '>'); q++) {
                if (quote && *q == quote)
                    quote = 0;
                else if (!quote && (*q == '"' || *q == '\''))
                    quote = *q;
            }
            if (!*q)
                return "unclosed tag";
            bool empty = q[-1] == '/';
            if (depth == 0)
                roots++;
            if (!empty) {
                if (depth == DEPTH)
                    return "nesting too deep";
                stack[depth] = name;
                stack_len[depth++] = len;
            }
            p = q + 1;
        }
    }
    if (depth)
        return "elements left open at the end";
    if (roots != 1)
        return "not exactly one root element";
    return NULL;
}

static bool have_xmllint(void)
{
    return system("command -v xmllint >/dev/null 2>&1") == 0;
}

/* ------------------------------------------------------------------ files */

typedef struct loaded {
    ms_snapshot *s;
    ms_timeline *tl;
    msr_chart_source src;
} loaded;

static int load(const char *path, loaded *out)
{
    int dev;
    memset(out, 0, sizeof *out);
    if (check_open_timeline(path, &out->s, &dev, &out->tl))
        return -1;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    out->src = (msr_chart_source){.snap = out->s, .trace = ms_snapshot_trace(out->s, dev),
                                 .tl = out->tl, .label = base};
    return 0;
}

static void unload(loaded *l)
{
    ms_timeline_free(l->tl);
    ms_snapshot_free(l->s);
}

static void check_png(const char *ctx, const char *path, int w, int h, const msr_chart *ch)
{
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    CHECK_EQ_INT_IN(ctx, cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    if (cairo_surface_status(img) == CAIRO_STATUS_SUCCESS) {
        CHECK_EQ_INT_IN(ctx, cairo_image_surface_get_width(img), w);
        CHECK_EQ_INT_IN(ctx, cairo_image_surface_get_height(img), h);
        cairo_surface_flush(img);
        const unsigned char *data = cairo_image_surface_get_data(img);
        int stride = cairo_image_surface_get_stride(img);
        /* Below the peak there must be ink, not the background. */
        if (ch && ch->has_peak && data) {
            int x = (int)ch->peak_px;
            int y = (int)((ch->peak_py + ch->plot.y + ch->plot.h) / 2);
            uint32_t px;
            memcpy(&px, data + (size_t)y * (size_t)stride + (size_t)x * 4, 4);
            CHECK_TRUE_IN(ctx, (px & 0xffffffu) != 0xffffffu);
            /* Bands in colour: distinct pixels on a grid over the plot. */
            size_t distinct = 0;
            uint32_t seen[64];
            for (int yy = (int)ch->plot.y + 3; yy < (int)(ch->plot.y + ch->plot.h); yy += 5)
                for (int xx = (int)ch->plot.x + 2; xx < (int)(ch->plot.x + ch->plot.w) &&
                                                   distinct < 64;
                     xx += 5) {
                    uint32_t v;
                    memcpy(&v, data + (size_t)yy * (size_t)stride + (size_t)xx * 4, 4);
                    v &= 0xffffffu;
                    bool dup = false;
                    for (size_t k = 0; k < distinct && !dup; k++)
                        dup = seen[k] == v;
                    if (!dup)
                        seen[distinct++] = v;
                }
            CHECK_TRUE_IN(ctx, distinct >= 6);
        }
    }
    cairo_surface_destroy(img);
}

static void check_svg(const char *ctx, const char *path)
{
    size_t len = 0;
    char *text = check_read_text(path, &len);
    CHECK_TRUE_IN(ctx, text != NULL);
    if (!text)
        return;
    CHECK_TRUE_IN(ctx, !strncmp(text, "<?xml", 5));
    CHECK_TRUE_IN(ctx, strstr(text, "<svg") != NULL);
    const char *why = xml_problem(text);
    if (why)
        fprintf(stderr, "%s: %s: %s\n", ctx, path, why);
    CHECK_TRUE_IN(ctx, why == NULL);
    CHECK_TRUE_IN(ctx, len < 5u * 1000 * 1000);
    free(text);
    if (have_xmllint()) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "xmllint --noout --nonet '%s'", path);
        CHECK_EQ_INT_IN(ctx, system(cmd), 0);
    }
}

static void render_one(const char *path, const char *name, void *arg)
{
    (void)name;
    (void)arg;
    const char *ctx = path;
    loaded l;
    if (load(path, &l))
        return;
    const char *base = l.src.label;
    ms_error err;
    struct {
        int w, h;
        bool dark;
        msr_render_format fmt;
        const char *ext;
    } runs[] = {{1600, 800, false, MSR_RENDER_PNG, "png"},
                {1600, 800, false, MSR_RENDER_SVG, "svg"},
                {900, 420, true, MSR_RENDER_PNG, "dark.png"}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        msr_chart_spec spec;
        memset(&spec, 0, sizeof spec);
        spec.dark = runs[r].dark;
        msr_chart *ch = NULL;
        msr_chart_rect area = {0, 0, runs[r].w, runs[r].h};
        int rc = msr_chart_build(&ch, &l.src, &spec, area, &err);
        CHECK_EQ_INT_IN(ctx, rc, 0);
        if (rc) {
            fprintf(stderr, "%s: %s\n", path, err.message);
            continue;
        }
        char out[600];
        snprintf(out, sizeof out, "%s/%s.%s", tmpdir, base, runs[r].ext);
        const msr_chart *one[] = {ch};
        rc = msr_render_write(out, runs[r].fmt, runs[r].w, runs[r].h, one, 1, &err);
        CHECK_EQ_INT_IN(ctx, rc, 0);
        if (rc)
            fprintf(stderr, "%s: %s\n", out, err.message);
        else if (runs[r].fmt == MSR_RENDER_PNG)
            check_png(ctx, out, runs[r].w, runs[r].h, runs[r].dark ? NULL : ch);
        else
            check_svg(ctx, out);
        msr_chart_free(ch);
    }
    unload(&l);
}

static bool same_bytes(const char *p1, const char *p2)
{
    FILE *f1 = fopen(p1, "rb"), *f2 = fopen(p2, "rb");
    bool same = f1 && f2;
    while (same) {
        int c1 = fgetc(f1), c2 = fgetc(f2);
        same = c1 == c2;
        if (c1 == EOF)
            break;
    }
    if (f1)
        fclose(f1);
    if (f2)
        fclose(f2);
    return same;
}

/* Two files as panels on shared scales, and the same two overlaid. */
static void render_multi(void)
{
    const char *ctx = "panels";
    loaded a, b;
    if (load("testdata/ddp_rank0.pickle", &a))
        return;
    if (load("testdata/ddp_rank1.pickle", &b)) {
        unload(&a);
        return;
    }
    ms_error err;
    msr_chart_spec spec;
    memset(&spec, 0, sizeof spec);
    double span_a, span_b;
    int64_t y_a, y_b;
    CHECK_EQ_INT_IN(ctx, msr_chart_extent(&a.src, &spec, &span_a, &y_a, &err), 0);
    CHECK_EQ_INT_IN(ctx, msr_chart_extent(&b.src, &spec, &span_b, &y_b, &err), 0);
    spec.y_fit = y_a > y_b ? y_a : y_b;
    spec.has_to = true;
    spec.to = span_a > span_b ? span_a : span_b;
    msr_chart *ch[2] = {NULL, NULL};
    CHECK_EQ_INT_IN(
        ctx, msr_chart_build(&ch[0], &a.src, &spec, msr_render_panel_rect(1200, 1000, 2, 0), &err),
        0);
    CHECK_EQ_INT_IN(
        ctx, msr_chart_build(&ch[1], &b.src, &spec, msr_render_panel_rect(1200, 1000, 2, 1), &err),
        0);
    /* The panels of one image are coloured as one set, as the figure colours them. */
    if (ch[0] && ch[1])
        CHECK_EQ_INT_IN(ctx, msr__colours_together(ch, 2), 0);
    if (ch[0] && ch[1]) {
        /* Shared scales: same top, same x window, second panel below the first. */
        CHECK_TRUE_IN(ctx, ch[0]->y_max == ch[1]->y_max);
        CHECK_TRUE_IN(ctx, ch[0]->x_hi == ch[1]->x_hi);
        CHECK_TRUE_IN(ctx, ch[1]->plot.y >= 500);
        char out[600];
        snprintf(out, sizeof out, "%s/panels.png", tmpdir);
        const msr_chart *both[] = {ch[0], ch[1]};
        CHECK_EQ_INT_IN(ctx, msr_render_write(out, MSR_RENDER_PNG, 1200, 1000, both, 2, &err), 0);
        check_png(ctx, out, 1200, 1000, NULL);
        snprintf(out, sizeof out, "%s/panels.svg", tmpdir);
        CHECK_EQ_INT_IN(ctx, msr_render_write(out, MSR_RENDER_SVG, 1200, 1000, both, 2, &err), 0);
        check_svg(ctx, out);
    }
    msr_chart_free(ch[0]);
    msr_chart_free(ch[1]);

    msr_chart_source srcs[] = {a.src, b.src};
    msr_chart *ov = NULL;
    memset(&spec, 0, sizeof spec);
    CHECK_EQ_INT_IN(
        ctx, msr_chart_build_overlay(&ov, srcs, 2, &spec, (msr_chart_rect){0, 0, 1400, 700}, &err),
        0);
    if (ov) {
        CHECK_EQ_INT_IN(ctx, ov->n_series, 2);
        CHECK_TRUE_IN(ctx, ov->has_peak);
        CHECK_TRUE_IN(ctx, !strcmp(ov->legend_title, "files"));
        CHECK_TRUE_IN(ctx, !strcmp(ov->y_title, "active memory"));
        int64_t top = a.tl->peak_bytes > b.tl->peak_bytes ? a.tl->peak_bytes : b.tl->peak_bytes;
        CHECK_EQ_INT_IN(ctx, ov->peak_bytes, top);
        for (size_t i = 0; i < 2; i++)
            CHECK_EQ_INT_IN(ctx, ov->series[i].peak_bytes, srcs[i].tl->peak_bytes);
        char out[600];
        snprintf(out, sizeof out, "%s/overlay.svg", tmpdir);
        const msr_chart *one[] = {ov};
        CHECK_EQ_INT_IN(ctx, msr_render_write(out, MSR_RENDER_SVG, 1400, 700, one, 1, &err), 0);
        check_svg(ctx, out);
        snprintf(out, sizeof out, "%s/overlay.png", tmpdir);
        CHECK_EQ_INT_IN(ctx, msr_render_write(out, MSR_RENDER_PNG, 1400, 700, one, 1, &err), 0);
        check_png(ctx, out, 1400, 700, NULL);
    }
    msr_chart_free(ov);

    /* The figure entry gives the same images as building the charts one by one above. */
    static const struct {
        bool overlay;
        int w, h;
        const char *same_as;
    } FIGS[] = {{false, 1200, 1000, "panels.png"}, {true, 1400, 700, "overlay.png"}};
    for (size_t f = 0; f < sizeof FIGS / sizeof FIGS[0]; f++) {
        msr_chart_figure_spec fs;
        memset(&fs, 0, sizeof fs);
        fs.overlay = FIGS[f].overlay;
        fs.width = FIGS[f].w;
        fs.height = FIGS[f].h;
        msr_chart_figure *fig = NULL;
        CHECK_EQ_INT_IN(ctx, msr_chart_build_figure(&fig, srcs, 2, &fs, &err), 0);
        if (!fig)
            continue;
        CHECK_EQ_INT_IN(ctx, fig->n_charts, FIGS[f].overlay ? 1 : 2);
        char out[600], want[600];
        snprintf(out, sizeof out, "%s/figure-%zu.png", tmpdir, f);
        snprintf(want, sizeof want, "%s/%s", tmpdir, FIGS[f].same_as);
        CHECK_EQ_INT_IN(ctx,
                        msr_render_write(out, MSR_RENDER_PNG, fig->width, fig->height,
                                        (const msr_chart *const *)fig->charts, fig->n_charts,
                                        &err),
                        0);
        CHECK_TRUE_IN(ctx, same_bytes(out, want));
        msr_chart_figure_free(fig);
    }
    msr_chart_figure_free(NULL);
    unload(&a);
    unload(&b);
}

/* Highlighted allocations (what the leaks command will pass): outlined bands, arrows and
 * labels drawn without disturbing the rest. */
static void render_highlights(void)
{
    const char *ctx = "highlights";
    loaded l;
    if (load("testdata/leak_layers.pickle", &l))
        return;
    msr_chart_highlight hl[4];
    size_t n = 0;
    for (size_t i = 0; i < l.tl->n_allocs && n < 4; i++)
        if (l.tl->allocs[i].free_event < 0 && l.tl->allocs[i].alloc_event > 0) {
            hl[n] = (msr_chart_highlight){i, n < 2 ? "leaked here" : NULL, false, false};
            n++;
        }
    CHECK_TRUE_IN(ctx, n == 4);
    msr_chart_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.highlights = hl;
    spec.n_highlights = n;
    spec.x_mode = MSR_CHART_X_EVENTS;
    msr_chart *ch = NULL;
    ms_error err;
    CHECK_EQ_INT_IN(ctx, msr_chart_build(&ch, &l.src, &spec, (msr_chart_rect){0, 0, 1200, 600}, &err),
                    0);
    if (ch) {
        char out[600];
        const msr_chart *one[] = {ch};
        snprintf(out, sizeof out, "%s/highlights.png", tmpdir);
        CHECK_EQ_INT_IN(ctx, msr_render_write(out, MSR_RENDER_PNG, 1200, 600, one, 1, &err), 0);
        check_png(ctx, out, 1200, 600, ch);
        snprintf(out, sizeof out, "%s/highlights.svg", tmpdir);
        CHECK_EQ_INT_IN(ctx, msr_render_write(out, MSR_RENDER_SVG, 1200, 600, one, 1, &err), 0);
        check_svg(ctx, out);
    }
    msr_chart_free(ch);
    unload(&l);
}

/* Bands too thin to draw (ten allocations of a fifth of a pixel each) between two thick
 * ones, all made in the first microseconds and alive to the end (one more small one ends
 * the trace ten seconds later): the band above reaches down over the thin ones, so no
 * background shows through inside the stack, in any column. */
static void render_no_gaps(void)
{
    const char *ctx = "thin bands leave no gap";
    enum { N = 13 };
    uint8_t action[N];
    uint64_t addr[N], size[N];
    int64_t time_us[N], active[N], reserved[N];
    uint32_t stack[N];
    uint16_t stream[N];
    ms_alloc allocs[N];
    int64_t sum = 0;
    for (size_t i = 0; i < N; i++) {
        action[i] = MS_ACT_ALLOC;
        addr[i] = 0x1000 * (i + 1);
        size[i] = i == 0 || i == N - 2 ? 1000 : 2; /* 2 bytes: about 0.17 px here */
        time_us[i] = i == N - 1 ? 10000000 : (int64_t)i + 1;
        sum += (int64_t)size[i];
        active[i] = reserved[i] = sum;
        stack[i] = MS_NO_STACK;
        stream[i] = 0;
        allocs[i] = (ms_alloc){addr[i], size[i], (int64_t)i, -1, -1, MS_NO_STACK, 0};
    }
    ms_trace tr = {0, N, action, addr, size, time_us, stack, stream, true, NULL, NULL, false, 0};
    ms_timeline tl;
    memset(&tl, 0, sizeof tl);
    tl.n_events = N;
    tl.t_first_us = time_us[0];
    tl.t_last_us = time_us[N - 1];
    tl.active = active;
    tl.reserved = reserved;
    tl.peak_bytes = sum;
    tl.peak_event = N - 1;
    tl.reserved_peak_bytes = sum;
    tl.trace_complete = true;
    tl.allocs = allocs;
    tl.n_allocs = N;
    msr_chart_source src = {.trace = &tr, .tl = &tl, .label = "thin"};
    msr_chart_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.no_legend = true;
    msr_chart *ch = NULL;
    ms_error err;
    int W = 498, H = 300;
    CHECK_EQ_INT_IN(ctx, msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, W, H}, &err), 0);
    if (!ch)
        return;
    double px_per_byte = ch->plot.h / ch->y_max;
    CHECK_TRUE_IN(ctx, 2 * px_per_byte < 0.2 && 20 * px_per_byte > 1.0);
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_t *cr = cairo_create(img);
    CHECK_EQ_INT_IN(ctx, msr_chart_draw(cr, ch, &err), 0);
    cairo_surface_flush(img);
    const unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    size_t holes = 0;
    /* From the plot's bottom to a pixel under the top, right of the first column. */
    for (size_t c = 1; c < ch->n_cols; c++) {
        int x = (int)ch->plot.x + (int)c;
        int top = (int)msr_chart_py(ch, (double)ch->col_active[c]) + 2;
        for (int y = top; y < (int)(ch->plot.y + ch->plot.h) - 1; y++) {
            uint32_t px = *(const uint32_t *)(data + (size_t)y * (size_t)stride + 4 * (size_t)x);
            holes += (px & 0xffffff) == 0xffffff;
        }
    }
    CHECK_EQ_INT_IN(ctx, holes, 0);
    cairo_destroy(cr);
    cairo_surface_destroy(img);
    msr_chart_free(ch);
}

static void check_errors(void)
{
    const char *ctx = "errors";
    ms_error err;
    msr_render_format f;
    CHECK_EQ_INT_IN(ctx, msr_render_format_from_path("a/b/out.PNG", &f, &err), 0);
    CHECK_EQ_INT_IN(ctx, f, MSR_RENDER_PNG);
    CHECK_EQ_INT_IN(ctx, msr_render_format_from_path("out.svg", &f, &err), 0);
    CHECK_EQ_INT_IN(ctx, f, MSR_RENDER_SVG);
    CHECK_EQ_INT_IN(ctx, msr_render_format_from_path("out.jpg", &f, &err), MS_ERR_ARG);
    CHECK_EQ_INT_IN(ctx, msr_render_format_from_path("dir.v2/out", &f, &err), MS_ERR_ARG);
    CHECK_EQ_INT_IN(ctx, msr_render_format_from_name("svg", &f, &err), 0);
    CHECK_EQ_INT_IN(ctx, msr_render_format_from_name("gif", &f, &err), MS_ERR_ARG);

    loaded l;
    if (load("testdata/oom.pickle", &l))
        return;
    msr_chart_spec spec;
    memset(&spec, 0, sizeof spec);
    msr_chart *ch = NULL;
    CHECK_EQ_INT_IN(ctx, msr_chart_build(&ch, &l.src, &spec, (msr_chart_rect){0, 0, 800, 400}, &err),
                    0);
    if (ch) {
        CHECK_TRUE_IN(ctx, ch->n_oom_px >= 1);
        const msr_chart *one[] = {ch};
        CHECK_EQ_INT_IN(ctx,
                        msr_render_write("/nonexistent-dir/x.png", MSR_RENDER_PNG, 800, 400, one,
                                        1, &err),
                        MS_ERR_IO);
        CHECK_EQ_INT_IN(ctx,
                        msr_render_write("/nonexistent-dir/x.svg", MSR_RENDER_SVG, 800, 400, one,
                                        1, &err),
                        MS_ERR_IO);
        CHECK_EQ_INT_IN(ctx, msr_render_write("x.png", MSR_RENDER_PNG, 0, 400, one, 1, &err),
                        MS_ERR_ARG);
        /* A context already in error is reported, not drawn on. */
        cairo_surface_t *bad = cairo_image_surface_create(CAIRO_FORMAT_RGB24, -1, -1);
        cairo_t *cr = cairo_create(bad);
        CHECK_EQ_INT_IN(ctx, msr_chart_draw(cr, ch, &err), MS_ERR_ARG);
        cairo_destroy(cr);
        cairo_surface_destroy(bad);
    }
    msr_chart_free(ch);
    unload(&l);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    check_errors();
    size_t files = check_each_snapshot(render_one, NULL);
    render_multi();
    render_highlights();
    render_no_gaps();
    if (files < 10)
        check_fail("expected the testdata snapshots (10 or more), found %zu", files);
    printf("render output: %zu snapshots drawn to PNG and SVG\n", files);
    /* Clean up only on success so a failure leaves the images to look at. */
    if (check_failures)
        fprintf(stderr, "images kept in %s\n", tmpdir);
    else
        check_remove_dir(tmpdir);
    return check_finish("test_render_output");
}
