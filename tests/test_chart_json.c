/* The chart model as data (memsnap render --format json, docs/json.md), checked on the
 * bundled snapshots: the PNG is drawn from the same model (its pixels at the bands' probe
 * points have the bands' colours), a site keeps its colour in two panels and after a
 * zoom, no band but a leak finding is red, labels never collide with each other, the
 * reserved line, the peak line or the plot's edge, the leak band of --by category sits
 * under the activations, and --by group bands carry the rules' names. The run axis (the
 * default x axis): the iterations get the width on runs with a long idle start and with
 * a slow first iteration, its breaks are narrow and say how long they lasted, its
 * segments tile the plot, and `--x time` still shows the problem. */
#include <cairo.h>
#include <dirent.h>

#include "check.h"

static const char *bin;
static char dir[] = "/tmp/memsnap_chart_json_XXXXXX";

/* Runs `memsnap render ARGS -o DIR/NAME` and returns the JSON model (NULL on failure). */
static cJSON *model(const char *args, const char *name)
{
    char cmd[2048], path[512];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    snprintf(cmd, sizeof cmd, "'%s' render %s --format json -o '%s' 2>&1", bin, args, path);
    int st;
    char *out = check_run(cmd, &st);
    CHECK_EQ_INT_IN(name, st, 0);
    if (st != 0)
        fprintf(stderr, "%s\n", out ? out : "");
    free(out);
    size_t len;
    char *text = check_read_text(path, &len);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECK_TRUE_IN(name, j != NULL);
    return j;
}

static double num_at(const cJSON *a, int i)
{
    const cJSON *v = cJSON_GetArrayItem(a, i);
    return v ? v->valuedouble : NAN;
}

static void hex_rgb(const char *hex, int *r, int *g, int *b)
{
    unsigned x = 0;
    if (hex && sscanf(hex, "#%6x", &x) != 1)
        x = 0;
    *r = (int)(x >> 16 & 255);
    *g = (int)(x >> 8 & 255);
    *b = (int)(x & 255);
}

/* ------------------------------------------------------------------ the PNG is the model */

static void png_matches(const char *args, const char *name, int min_probes)
{
    cJSON *j = model(args, name);
    char cmd[2048], png[512];
    snprintf(png, sizeof png, "%s/%s.png", dir, name);
    snprintf(cmd, sizeof cmd, "'%s' render %s -o '%s' 2>&1", bin, args, png);
    int st;
    free(check_run(cmd, &st));
    CHECK_EQ_INT_IN(name, st, 0);
    cairo_surface_t *s = cairo_image_surface_create_from_png(png);
    CHECK_TRUE_IN(name, cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
    if (!j || cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(s);
        cJSON_Delete(j);
        return;
    }
    cairo_surface_flush(s);
    const unsigned char *px = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s), w = cairo_image_surface_get_width(s),
        h = cairo_image_surface_get_height(s);
    CHECK_EQ_INT_IN(name, w, cJSON_GetObjectItem(j, "width")->valueint);
    CHECK_EQ_INT_IN(name, h, cJSON_GetObjectItem(j, "height")->valueint);
    int probes = 0;
    const cJSON *panel;
    cJSON_ArrayForEach(panel, cJSON_GetObjectItem(j, "panels")) {
        const cJSON *band;
        cJSON_ArrayForEach(band, cJSON_GetObjectItem(panel, "bands")) {
            const cJSON *probe = cJSON_GetObjectItem(band, "probe");
            if (!cJSON_IsArray(probe))
                continue;
            int x = (int)floor(num_at(probe, 0)), y = (int)floor(num_at(probe, 1));
            if (x < 0 || y < 0 || x >= w || y >= h)
                continue;
            uint32_t p = *(const uint32_t *)(px + (size_t)y * (size_t)stride + (size_t)x * 4);
            int r, g, b;
            hex_rgb(cJSON_GetObjectItem(band, "colour")->valuestring, &r, &g, &b);
            char ctx[256];
            snprintf(ctx, sizeof ctx, "%s: band '%.120s' at %d,%d", name,
                     cJSON_GetObjectItem(band, "label")->valuestring, x, y);
            CHECK_NEAR_IN(ctx, (double)(p >> 16 & 255), (double)r, 2);
            CHECK_NEAR_IN(ctx, (double)(p >> 8 & 255), (double)g, 2);
            CHECK_NEAR_IN(ctx, (double)(p & 255), (double)b, 2);
            probes++;
        }
    }
    CHECK_TRUE_IN(name, probes >= min_probes);
    cairo_surface_destroy(s);
    cJSON_Delete(j);
}

/* ------------------------------------------------------------------ colours */

/* Hue (degrees) and saturation of "#rrggbb". */
static double hue_of(const char *hex, double *sat)
{
    int ri, gi, bi;
    hex_rgb(hex, &ri, &gi, &bi);
    double r = ri / 255.0, g = gi / 255.0, b = bi / 255.0;
    double mx = fmax(r, fmax(g, b)), mn = fmin(r, fmin(g, b)), d = mx - mn, l = (mx + mn) / 2;
    *sat = d <= 0 ? 0 : d / (1 - fabs(2 * l - 1));
    if (d <= 0)
        return 0;
    double hue = mx == r ? fmod((g - b) / d, 6.0) : mx == g ? (b - r) / d + 2 : (r - g) / d + 4;
    hue *= 60;
    return hue < 0 ? hue + 360 : hue;
}

static void no_red_but_leaks(const cJSON *j, const char *name)
{
    int bands = 0;
    const cJSON *panel, *band;
    cJSON_ArrayForEach(panel, cJSON_GetObjectItem(j, "panels"))
    cJSON_ArrayForEach(band, cJSON_GetObjectItem(panel, "bands")) {
        bands++;
        if (cJSON_IsTrue(cJSON_GetObjectItem(band, "leak")))
            continue;
        double sat, hue = hue_of(cJSON_GetObjectItem(band, "colour")->valuestring, &sat);
        bool red = sat > 0.25 && (hue >= 335 || hue <= 25);
        char ctx[256];
        snprintf(ctx, sizeof ctx, "%s: band '%.100s' %s is red", name,
                 cJSON_GetObjectItem(band, "label")->valuestring,
                 cJSON_GetObjectItem(band, "colour")->valuestring);
        CHECK_TRUE_IN(ctx, !red);
    }
    CHECK_TRUE_IN(name, bands > 3);
}

/* Bands of the same name have the same colour wherever they appear; returns how many
 * names two panels (or two models) share. */
static int same_colours(const cJSON *pa, const cJSON *pb, const char *name)
{
    int shared = 0;
    const cJSON *a, *b;
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(pa, "bands")) {
        const char *la = cJSON_GetObjectItem(a, "label")->valuestring;
        if (!strcmp(la, "other"))
            continue;
        cJSON_ArrayForEach(b, cJSON_GetObjectItem(pb, "bands")) {
            if (strcmp(la, cJSON_GetObjectItem(b, "label")->valuestring))
                continue;
            char ctx[256];
            snprintf(ctx, sizeof ctx, "%s: '%.120s'", name, la);
            CHECK_EQ_STR_IN(ctx, cJSON_GetObjectItem(a, "colour")->valuestring,
                            cJSON_GetObjectItem(b, "colour")->valuestring);
            shared++;
        }
    }
    return shared;
}

/* ------------------------------------------------------------------ labels */

static bool boxes_meet(const double *a, const double *b)
{
    return a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
}

/* Whether the segment (x0,y0)-(x1,y1), horizontal or vertical, meets the box. */
static bool segment_meets(const double *box, double x0, double y0, double x1, double y1)
{
    double lx = fmin(x0, x1), hx = fmax(x0, x1), ly = fmin(y0, y1), hy = fmax(y0, y1);
    return lx <= box[0] + box[2] && hx >= box[0] && ly <= box[1] + box[3] && hy >= box[1];
}

static int labels_clear(const cJSON *j, const char *name)
{
    int n_labels = 0;
    const cJSON *panel;
    cJSON_ArrayForEach(panel, cJSON_GetObjectItem(j, "panels")) {
        const cJSON *plot = cJSON_GetObjectItem(panel, "plot");
        double pr[4] = {num_at(plot, 0), num_at(plot, 1), num_at(plot, 2), num_at(plot, 3)};
        const cJSON *labels = cJSON_GetObjectItem(panel, "labels");
        int n = cJSON_GetArraySize(labels);
        for (int i = 0; i < n; i++) {
            const cJSON *li = cJSON_GetArrayItem(labels, i);
            const cJSON *bi = cJSON_GetObjectItem(li, "box");
            double a[4] = {num_at(bi, 0), num_at(bi, 1), num_at(bi, 2), num_at(bi, 3)};
            char ctx[300];
            snprintf(ctx, sizeof ctx, "%s: label '%.100s'", name,
                     cJSON_GetObjectItem(li, "text")->valuestring);
            n_labels++;
            CHECK_TRUE_IN(ctx, a[0] >= pr[0] && a[1] >= pr[1] && a[0] + a[2] <= pr[0] + pr[2] &&
                                   a[1] + a[3] <= pr[1] + pr[3]);
            for (int k = i + 1; k < n; k++) {
                const cJSON *bk = cJSON_GetObjectItem(cJSON_GetArrayItem(labels, k), "box");
                double b[4] = {num_at(bk, 0), num_at(bk, 1), num_at(bk, 2), num_at(bk, 3)};
                CHECK_TRUE_IN(ctx, !boxes_meet(a, b));
            }
            const cJSON *line;
            cJSON_ArrayForEach(line, cJSON_GetObjectItem(panel, "lines")) {
                const char *kind = cJSON_GetObjectItem(line, "kind")->valuestring;
                if (strcmp(kind, "reserved") && strcmp(kind, "peak"))
                    continue;
                const cJSON *pts = cJSON_GetObjectItem(line, "points");
                int np = cJSON_GetArraySize(pts);
                bool meets = false;
                for (int p = 0; p + 1 < np && !meets; p++) {
                    const cJSON *u = cJSON_GetArrayItem(pts, p), *v = cJSON_GetArrayItem(pts, p + 1);
                    meets = segment_meets(a, num_at(u, 0), num_at(u, 1), num_at(v, 0), num_at(v, 1));
                }
                char lctx[340];
                snprintf(lctx, sizeof lctx, "%s crosses the %s line", ctx, kind);
                CHECK_TRUE_IN(lctx, !meets);
            }
        }
    }
    return n_labels;
}

/* ------------------------------------------------------------------ the run axis */

static const cJSON *panel0(const cJSON *j)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(j, "panels"), 0);
}

static double item_num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Share of the plot's width that iterations first .. last (0-based, -1: to the end) take. */
static double iter_share(const cJSON *panel, int first, int last)
{
    const cJSON *plot = cJSON_GetObjectItem(panel, "plot");
    const cJSON *its = cJSON_GetObjectItem(panel, "iterations");
    int n = cJSON_GetArraySize(its);
    double w = 0;
    for (int i = first; i < n && (last < 0 || i <= last); i++) {
        const cJSON *it = cJSON_GetArrayItem(its, i);
        w += item_num(it, "px1") - item_num(it, "px0");
    }
    return w / num_at(plot, 2);
}

/* The segments tile the plot left to right, in pixels and in seconds; breaks are narrow
 * and labelled with their duration; outside them one pixel is the same time everywhere.
 * Returns the number of breaks. */
static int segments_ok(const cJSON *panel, const char *name)
{
    const cJSON *plot = cJSON_GetObjectItem(panel, "plot");
    const cJSON *segs = cJSON_GetObjectItem(cJSON_GetObjectItem(panel, "x"), "segments");
    int n = cJSON_GetArraySize(segs), gaps = 0;
    CHECK_TRUE_IN(name, n >= 1);
    double x = num_at(plot, 0), right = num_at(plot, 0) + num_at(plot, 2), t = NAN, scale = NAN;
    for (int i = 0; i < n; i++) {
        const cJSON *sg = cJSON_GetArrayItem(segs, i);
        char ctx[160];
        snprintf(ctx, sizeof ctx, "%s: segment %d", name, i);
        double p0 = item_num(sg, "px0"), p1 = item_num(sg, "px1"), f = item_num(sg, "from_s"),
               to = item_num(sg, "to_s");
        CHECK_NEAR_IN(ctx, p0, x, 0.011);
        CHECK_TRUE_IN(ctx, p1 > p0 && to > f);
        if (i)
            CHECK_NEAR_IN(ctx, f, t, 1e-9 + fabs(t) * 1e-9);
        x = p1;
        t = to;
        if (cJSON_IsTrue(cJSON_GetObjectItem(sg, "gap"))) {
            gaps++;
            CHECK_TRUE_IN(ctx, p1 - p0 <= 0.03 * num_at(plot, 2)); /* narrow */
            /* "⋯ 4.6 s" / "⋯ 254 ms": the duration, as long as from_s .. to_s */
            const cJSON *label = cJSON_GetObjectItem(sg, "label");
            double v = NAN;
            char unit[8] = "";
            if (cJSON_IsString(label) && label->valuestring[0] &&
                sscanf(label->valuestring, "\xe2\x8b\xaf %lf %7s", &v, unit) == 2) {
                double secs = strcmp(unit, "ms") ? v : v / 1e3;
                CHECK_NEAR_IN(ctx, secs, to - f, 0.051 * (to - f) + 6e-5);
            }
            continue;
        }
        double s = (to - f) / (p1 - p0);
        if (!isnan(scale) && p1 - p0 > 20) /* a sliver's px are rounded to 0.01 */
            CHECK_NEAR_IN(ctx, s, scale, scale * 0.02);
        if (isnan(scale) && p1 - p0 > 20)
            scale = s;
    }
    CHECK_NEAR_IN(name, x, right, 0.011);
    return gaps;
}

static void run_axis_checks(void)
{
    /* A long idle start: leak_layers waits 4.3 s before its first step (4.65 s in all). */
    cJSON *run = model("testdata/leak_layers.pickle", "idle_run");
    cJSON *lin = model("testdata/leak_layers.pickle --x time", "idle_time");
    if (run && lin) {
        const cJSON *pr = panel0(run), *pl = panel0(lin);
        CHECK_EQ_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(pr, "x"), "kind")->valuestring, "run");
        CHECK_EQ_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(pl, "x"), "kind")->valuestring, "time");
        CHECK_TRUE_IN("idle start: iterations take the width", iter_share(pr, 0, -1) >= 0.75);
        CHECK_TRUE_IN("idle start: --x time shows the problem", iter_share(pl, 0, -1) < 0.10);
        CHECK_EQ_INT(segments_ok(pr, "idle_run"), 1);
        CHECK_EQ_INT(segments_ok(pl, "idle_time"), 0);
        labels_clear(run, "idle_run");
    }
    cJSON_Delete(run);
    cJSON_Delete(lin);
    /* Recorded for this: 3.6 s of waiting (truth: idle_from_us .. idle_to_us) after the
     * model is loaded, then 4 steps, the first one slow (warm-up). */
    run = model("testdata/idle_start.pickle", "rec_idle_run");
    lin = model("testdata/idle_start.pickle --x time", "rec_idle_time");
    cJSON *truth = NULL;
    {
        size_t len;
        char *text = check_read_text("testdata/idle_start.truth.json", &len);
        truth = text ? cJSON_Parse(text) : NULL;
        free(text);
    }
    CHECK_TRUE(truth != NULL);
    if (run && lin && truth) {
        const cJSON *pr = panel0(run);
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(pr, "iterations")),
                     cJSON_GetObjectItem(truth, "iterations")->valueint);
        CHECK_TRUE_IN("recorded idle start: iterations", iter_share(pr, 0, -1) >= 0.75);
        CHECK_TRUE_IN("recorded idle start: --x time", iter_share(panel0(lin), 0, -1) < 0.25);
        CHECK_TRUE_IN("recorded idle start: --x time, later steps",
                      iter_share(panel0(lin), 1, -1) < 0.05);
        CHECK_EQ_INT(segments_ok(pr, "rec_idle_run"), 1);
        /* The break holds the whole wait. */
        double wait = (item_num(truth, "idle_to_us") - item_num(truth, "idle_from_us")) / 1e6,
               hidden = 0;
        const cJSON *sg;
        cJSON_ArrayForEach(sg, cJSON_GetObjectItem(cJSON_GetObjectItem(pr, "x"), "segments"))
            if (cJSON_IsTrue(cJSON_GetObjectItem(sg, "gap")))
                hidden = item_num(sg, "to_s") - item_num(sg, "from_s");
        CHECK_TRUE(wait > 3.5);
        CHECK_TRUE(hidden >= wait);
    }
    cJSON_Delete(truth);
    cJSON_Delete(run);
    cJSON_Delete(lin);
    /* Recorded for this: a fresh GPT-2 whose first step (0.49 s) is 30 times the other
     * four, each of which keeps its logits (the leak the later steps should show). */
    run = model("testdata/slow_first_leak.pickle --leaks", "rec_slow_run");
    lin = model("testdata/slow_first_leak.pickle --leaks --x time", "rec_slow_time");
    if (run && lin) {
        const cJSON *pr = panel0(run);
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(pr, "iterations")), 5);
        CHECK_TRUE_IN("recorded slow first: iterations", iter_share(pr, 0, -1) >= 0.75);
        CHECK_TRUE_IN("recorded slow first: the four later steps", iter_share(pr, 1, -1) >= 0.6);
        CHECK_TRUE_IN("recorded slow first: --x time", iter_share(panel0(lin), 1, -1) < 0.15);
        CHECK_TRUE(segments_ok(pr, "rec_slow_run") >= 1);
        labels_clear(run, "rec_slow_run");
    }
    cJSON_Delete(run);
    cJSON_Delete(lin);
    /* The same on DDP rank 0, whose first step starts 0.65 s after 7 ms of set-up. */
    run = model("testdata/ddp_rank0.pickle", "ddp_run");
    lin = model("testdata/ddp_rank0.pickle --x time", "ddp_time");
    if (run && lin) {
        CHECK_TRUE_IN("ddp: iterations take the width", iter_share(panel0(run), 0, -1) >= 0.75);
        CHECK_TRUE_IN("ddp: --x time", iter_share(panel0(lin), 0, -1) < 0.55);
        CHECK_TRUE(segments_ok(panel0(run), "ddp_run") >= 1);
    }
    cJSON_Delete(run);
    cJSON_Delete(lin);
    /* A slow first iteration: GPT-2's first step (1.1 s of CUDA and cuBLAS set-up) is 50
     * times the others; on the time axis it takes 95% of the width. */
    run = model("testdata/gpt2_train.pickle", "slow_run");
    lin = model("testdata/gpt2_train.pickle --x time", "slow_time");
    if (run && lin) {
        const cJSON *pr = panel0(run), *pl = panel0(lin);
        CHECK_TRUE_IN("slow first: iterations", iter_share(pr, 0, -1) >= 0.75);
        CHECK_TRUE_IN("slow first: the later iterations get the width", iter_share(pr, 1, -1) >= 0.6);
        CHECK_TRUE_IN("slow first: the first is squeezed", iter_share(pr, 0, 0) <= 0.2);
        CHECK_TRUE_IN("slow first: --x time", iter_share(pl, 1, -1) < 0.05);
        CHECK_TRUE(segments_ok(pr, "slow_run") >= 1);
    }
    cJSON_Delete(run);
    cJSON_Delete(lin);
    /* Nothing to compress (memory churn at an even pace): the run axis is the time axis,
     * one segment without a break, and the same model but for its kind. */
    run = model("testdata/noleak_grad_accum.pickle", "even_run");
    lin = model("testdata/noleak_grad_accum.pickle --x time", "even_time");
    if (run && lin) {
        CHECK_EQ_INT(segments_ok(panel0(run), "even_run"), 0);
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(panel0(run), "x"),
                                                            "segments")), 1);
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(panel0(run), "x"), "kind",
                                  cJSON_CreateString("time"));
        char *a = cJSON_PrintUnformatted(run), *b = cJSON_PrintUnformatted(lin);
        CHECK_EQ_STR_IN("even pace: run axis == time axis", a, b);
        free(a);
        free(b);
    }
    cJSON_Delete(run);
    cJSON_Delete(lin);
    /* A trace without times: the run axis falls back to events, as the time axis does. */
    run = model("testdata/old20_gpt2_train.pickle", "old_run");
    if (run)
        CHECK_EQ_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(panel0(run), "x"), "kind")->valuestring,
                     "events");
    cJSON_Delete(run);
    /* Two files: a run axis each, both tiling their plot. */
    run = model("testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle", "two_run");
    if (run) {
        const cJSON *p = cJSON_GetObjectItem(run, "panels");
        CHECK_TRUE(segments_ok(cJSON_GetArrayItem(p, 0), "two_run 0") >= 1);
        CHECK_TRUE(segments_ok(cJSON_GetArrayItem(p, 1), "two_run 1") >= 1);
        CHECK_TRUE(iter_share(cJSON_GetArrayItem(p, 1), 0, -1) >= 0.6);
    }
    cJSON_Delete(run);
}

/* The label checks on the default (run) axis over every bundled snapshot, with and
 * without the leak callouts. */
static void labels_everywhere(void)
{
    DIR *d = opendir("testdata");
    CHECK_TRUE(d != NULL);
    if (!d)
        return;
    int files = 0, labels = 0, breaks = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 7, ".pickle"))
            continue;
        for (int leaks = 0; leaks < 2; leaks++) {
            /* Where nothing leaks the callouts add nothing: one run with --leaks says
             * all (half of CI's second-slowest test). */
            if (!leaks && !strstr(e->d_name, "leak"))
                continue;
            char args[512];
            snprintf(args, sizeof args, "testdata/%s%s", e->d_name, leaks ? " --leaks" : "");
            cJSON *j = model(args, "every");
            if (j) {
                labels += labels_clear(j, args);
                const cJSON *panel;
                cJSON_ArrayForEach(panel, cJSON_GetObjectItem(j, "panels"))
                    breaks += segments_ok(panel, args);
            }
            cJSON_Delete(j);
        }
        files++;
    }
    closedir(d);
    CHECK_TRUE(files >= 50);
    CHECK_TRUE(labels >= 100);
    CHECK_TRUE(breaks >= 50);
}

/* ------------------------------------------------------------------ bands */

static int band_index(const cJSON *panel, const char *prefix)
{
    int i = 0;
    const cJSON *band;
    cJSON_ArrayForEach(band, cJSON_GetObjectItem(panel, "bands")) {
        if (!strncmp(cJSON_GetObjectItem(band, "label")->valuestring, prefix, strlen(prefix)))
            return i;
        i++;
    }
    return -1;
}

int main(void)
{
    if (check_cli_setup(&bin, dir))
        return 1;

    /* The PNG is drawn from the model: every band's probe point has its colour. */
    png_matches("testdata/leak_layers.pickle --leaks --by category", "png_category", 5);
    png_matches("testdata/gpt2_train.pickle", "png_alloc", 5);
    png_matches("testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle --by site", "png_panels", 8);

    /* A site has one colour in two panels, and after a zoom. */
    cJSON *ranks = model("testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle --by site", "ranks");
    if (ranks) {
        const cJSON *p = cJSON_GetObjectItem(ranks, "panels");
        CHECK_EQ_INT(cJSON_GetArraySize(p), 2);
        CHECK_TRUE_IN("panels share sites",
                      same_colours(cJSON_GetArrayItem(p, 0), cJSON_GetArrayItem(p, 1), "panels") >= 3);
        no_red_but_leaks(ranks, "ranks");
        labels_clear(ranks, "ranks");
    }
    cJSON *whole = model("testdata/gpt2_train.pickle --by site", "whole");
    cJSON *zoom = model("testdata/gpt2_train.pickle --by site --from 0.5 --to 1.5", "zoom");
    if (whole && zoom)
        CHECK_TRUE_IN("zoom keeps colours",
                      same_colours(cJSON_GetArrayItem(cJSON_GetObjectItem(whole, "panels"), 0),
                                   cJSON_GetArrayItem(cJSON_GetObjectItem(zoom, "panels"), 0),
                                   "zoom") >= 3);
    cJSON *walloc = model("testdata/gpt2_train.pickle", "whole_alloc");
    if (walloc)
        no_red_but_leaks(walloc, "by alloc");
    if (whole)
        no_red_but_leaks(whole, "by site");

    /* Labels: the peak and the leaks' callouts on runs where they used to collide. */
    static const char *const LABELLED[] = {
        "testdata/ddp_rank0.pickle --leaks",
        "testdata/ddp_rank0.pickle --by category",
        "testdata/leak_eval_graph.pickle --leaks",
        "testdata/leak_layers.pickle --leaks",
        "testdata/leak_layers.pickle --leaks --by category",
        "testdata/oom.pickle --by category",
        "testdata/oom_leak.pickle --leaks",
        "testdata/leak_shared_line.pickle --leaks --width 700 --height 400",
    };
    int n_labels = 0;
    for (size_t i = 0; i < sizeof LABELLED / sizeof LABELLED[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "labels%zu", i);
        cJSON *j = model(LABELLED[i], name);
        if (j) {
            n_labels += labels_clear(j, LABELLED[i]);
            no_red_but_leaks(j, LABELLED[i]);
        }
        cJSON_Delete(j);
    }
    CHECK_TRUE(n_labels >= 10);

    /* --by category --leaks: the leak band sits on the run-long categories, under the
     * gradients and activations. */
    cJSON *cat = model("testdata/leak_layers.pickle --leaks --by category", "cat");
    if (cat) {
        const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(cat, "panels"), 0);
        int leak = band_index(p, "leak finding"), act = band_index(p, "activation"),
            grad = band_index(p, "gradient"), ws = band_index(p, "workspace");
        CHECK_TRUE(leak >= 0);
        CHECK_TRUE(leak > ws && leak < grad && leak < act);
        const cJSON *lb = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "bands"), leak);
        CHECK_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(lb, "leak")));
        const cJSON *legend = cJSON_GetObjectItem(p, "legend"), *e;
        bool named = false;
        cJSON_ArrayForEach(e, legend)
            named |= !strcmp(cJSON_GetObjectItem(e, "label")->valuestring,
                             "leak finding (outlined)");
        CHECK_TRUE(named);
    }
    /* One outlined region for the graph leak of 15 sites, with its label. */
    cJSON *graph = model("testdata/leak_eval_graph.pickle --leaks", "graph");
    if (graph) {
        const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(graph, "panels"), 0), *b;
        int leaks = 0, leak_labels = 0;
        cJSON_ArrayForEach(b, cJSON_GetObjectItem(p, "bands"))
            leaks += cJSON_IsTrue(cJSON_GetObjectItem(b, "leak"));
        cJSON_ArrayForEach(b, cJSON_GetObjectItem(p, "labels"))
            leak_labels += !strcmp(cJSON_GetObjectItem(b, "kind")->valuestring, "leak");
        CHECK_EQ_INT(leaks, 1);
        CHECK_EQ_INT(leak_labels, 1);
    }

    /* --by group: the rules' names are the bands, in the rules' order. */
    cJSON *grp = model("testdata/gpt2_train.pickle --by group --group 'attention=modeling_gpt2.py:[0-9]+ forward' "
                       "--group 'hf=transformers/'",
                       "group");
    if (grp) {
        const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(grp, "panels"), 0);
        const cJSON *bands = cJSON_GetObjectItem(p, "bands");
        CHECK_EQ_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(bands, 0), "label")->valuestring,
                     "attention");
        CHECK_EQ_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(bands, 1), "label")->valuestring, "hf");
        CHECK_TRUE(cJSON_GetObjectItem(cJSON_GetArrayItem(bands, 0), "max_bytes")->valuedouble > 0);
        CHECK_TRUE(cJSON_GetObjectItem(cJSON_GetArrayItem(bands, 1), "max_bytes")->valuedouble > 0);
    }

    run_axis_checks();
    labels_everywhere();

    cJSON_Delete(ranks);
    cJSON_Delete(whole);
    cJSON_Delete(zoom);
    cJSON_Delete(walloc);
    cJSON_Delete(cat);
    cJSON_Delete(graph);
    cJSON_Delete(grp);
    check_remove_dir(dir);
    return check_finish("test_chart_json");
}
