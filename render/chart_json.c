/* The chart model written as JSON (see chart_json.h). Reads the model only: nothing here
 * groups, scales or places anything of its own. */
#include "chart_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_text.h"
#include "render_util.h"

/* Pixels to two decimals: finer than any back-end draws. */
static void num(msr__sbuf *b, double v)
{
    msr__sb_num(b, round(v * 100.0) / 100.0);
}

static void rect(msr__sbuf *b, msr_chart_rect r)
{
    msr__sb_puts(b, "[");
    num(b, r.x);
    msr__sb_puts(b, ",");
    num(b, r.y);
    msr__sb_puts(b, ",");
    num(b, r.w);
    msr__sb_puts(b, ",");
    num(b, r.h);
    msr__sb_puts(b, "]");
}

static void colour(msr__sbuf *b, msr_chart_rgb c)
{
    int r = (int)lround(fmin(fmax(c.r, 0), 1) * 255), g = (int)lround(fmin(fmax(c.g, 0), 1) * 255),
        bl = (int)lround(fmin(fmax(c.b, 0), 1) * 255);
    msr__sb_printf(b, "\"#%02x%02x%02x\"", r, g, bl);
}

/* [x,y] in pixels. */
static void pair(msr__sbuf *b, double x, double y)
{
    msr__sb_puts(b, "[");
    num(b, x);
    msr__sb_puts(b, ",");
    num(b, y);
    msr__sb_puts(b, "]");
}

static void point(msr__sbuf *b, bool *first, double x, double y)
{
    if (!*first)
        msr__sb_puts(b, ",");
    pair(b, x, y);
    *first = false;
}

/* The start of a line of `kind`, up to its first point. */
static void line_start(msr__sbuf *b, bool *first_line, const char *kind)
{
    msr__sb_printf(b, "%s{\"kind\":", *first_line ? "" : ",");
    *first_line = false;
    msr__sb_str(b, kind);
    msr__sb_puts(b, ",\"points\":[");
}

/* The start of an entry that names something and its colour (a band, a series, a legend
 * entry), left open for what follows. */
static void named_start(msr__sbuf *b, bool first, const char *label, msr_chart_rgb rgb)
{
    msr__sb_puts(b, first ? "{\"label\":" : ",{\"label\":");
    msr__sb_str(b, label);
    msr__sb_puts(b, ",\"colour\":");
    colour(b, rgb);
}

/* A per-column step curve as draw.c strokes it: one line per run of columns with data,
 * a vertex only where the value changes. */
static void curve_lines(msr__sbuf *b, bool *first_line, const msr_chart *ch, const char *kind,
                        const int64_t *v, const int64_t *ev)
{
    if (!v)
        return;
    size_t W = ch->n_cols;
    for (size_t c = 0; c < W;) {
        bool has = ev ? ev[c] != MSR_CHART_NO_EVENT : v[c] >= 0;
        if (!has) {
            c++;
            continue;
        }
        line_start(b, first_line, kind);
        bool first = true;
        double prev = msr_chart_py(ch, (double)v[c]);
        point(b, &first, ch->plot.x + (double)c, prev);
        size_t k = c + 1;
        for (; k < W && (ev ? ev[k] != MSR_CHART_NO_EVENT : v[k] >= 0); k++) {
            double y = msr_chart_py(ch, (double)v[k]);
            if (y != prev) {
                point(b, &first, ch->plot.x + (double)k, prev);
                point(b, &first, ch->plot.x + (double)k, y);
                prev = y;
            }
        }
        point(b, &first, ch->plot.x + (double)k, prev);
        msr__sb_puts(b, "]}");
        c = k;
    }
}

static void straight(msr__sbuf *b, bool *first_line, const char *kind, double x0, double y0,
                     double x1, double y1)
{
    line_start(b, first_line, kind);
    bool first = true;
    point(b, &first, x0, y0);
    point(b, &first, x1, y1);
    msr__sb_puts(b, "]}");
}

static const char *label_kind(msr_chart_label_kind k)
{
    switch (k) {
    case MSR_CHART_LABEL_PEAK:
        return "peak";
    case MSR_CHART_LABEL_LEAK:
        return "leak";
    case MSR_CHART_LABEL_OOM:
        return "oom";
    case MSR_CHART_LABEL_ANNOTATION:
        return "annotation";
    default:
        return "other";
    }
}

/* Whether pixel column px lies in (or next to) a break of the run axis. */
static bool in_break(const msr_chart *ch, double px)
{
    for (size_t i = 0; i < ch->n_segments; i++)
        if (ch->segments[i].gap && px >= ch->segments[i].px0 - 2 && px <= ch->segments[i].px1 + 2)
            return true;
    return false;
}

/* A point inside band g's fill that no line, outline or label covers (its tallest steady
 * column), for checking a raster against the model; false when the band has none.
 * `below` is the bottom of band g in every column (the bands under it, summed). */
static bool band_probe(const msr_chart *ch, size_t g, const int64_t *below_of, double *x,
                       double *y)
{
    size_t W = ch->n_cols;
    if (ch->overlay || g >= ch->n_groups || W < 5)
        return false;
    const int64_t *h = ch->heights + g * W;
    double best = 0;
    for (size_t c = 2; c + 2 < W; c++) {
        if (ch->col_event[c] == MSR_CHART_NO_EVENT || h[c] <= 0)
            continue;
        int64_t below = below_of[c];
        /* Steady around it: no vertical edge of a line or outline passes this column. */
        bool steady = true;
        for (size_t d = c - 1; d <= c + 1 && steady; d++) {
            int64_t bd = below_of[d];
            steady = ch->col_event[d] != MSR_CHART_NO_EVENT && h[d] == h[c] && bd == below &&
                     ch->col_active[d] == ch->col_active[c] &&
                     (!ch->col_reserved || ch->col_reserved[d] == ch->col_reserved[c]);
        }
        if (!steady)
            continue;
        double top = msr_chart_py(ch, (double)(below + h[c])), bot = msr_chart_py(ch, (double)below);
        double mid = (top + bot) / 2, px = ch->plot.x + (double)c + 0.5;
        if (bot - top < 8 || bot - top <= best)
            continue;
        /* Above the per-pixel minimum draw.c pales the bands; keep below it. */
        if (ch->show_low && ch->col_low && mid < msr_chart_py(ch, (double)ch->col_low[c]) + 3)
            continue;
        if (ch->has_peak && fabs(mid - ch->peak_py) < 4)
            continue;
        if (in_break(ch, px))
            continue; /* draw.c hatches the breaks over the bands */
        bool clear = true;
        for (size_t i = 0; !ch->oom_rug && i < ch->n_oom_px && clear; i++)
            clear = fabs(ch->oom_px[i] - px) > 4;
        for (size_t i = 0; i < ch->n_labels && clear; i++) {
            const msr_chart_label *L = &ch->labels[i];
            clear = !(px >= L->box.x - 4 && px <= L->box.x + L->box.w + 4 &&
                      mid >= L->box.y - 4 && mid <= L->box.y + L->box.h + 4);
            /* Leaders run diagonally: keep off their bounding box too. */
            if (clear && L->leader)
                clear = !(px >= fmin(L->lx, L->ax) - 10 && px <= fmax(L->lx, L->ax) + 10 &&
                          mid >= fmin(L->ly, L->ay) - 10 && mid <= fmax(L->ly, L->ay) + 10);
        }
        if (!clear)
            continue;
        best = bot - top;
        *x = px;
        *y = mid;
    }
    return best > 0;
}

static void band(msr__sbuf *b, const msr_chart *ch, size_t g, const int64_t *below, bool first)
{
    const msr_chart_group *gp = &ch->groups[g];
    named_start(b, first, gp->label, gp->fill);
    msr__sb_printf(b, ",\"leak\":%s,\"suspect\":%s", gp->leak ? "true" : "false",
                  gp->suspect ? "true" : "false");
    double x = 0, y = 0;
    if (band_probe(ch, g, below, &x, &y)) {
        msr__sb_puts(b, ",\"probe\":");
        pair(b, x, y);
    } else {
        msr__sb_puts(b, ",\"probe\":null");
    }
    int64_t most = 0;
    for (size_t c = 0; c < ch->n_cols; c++)
        if (ch->heights[g * ch->n_cols + c] > most)
            most = ch->heights[g * ch->n_cols + c];
    msr__sb_printf(b, ",\"max_bytes\":%lld}", (long long)most);
}

static void panel(msr__sbuf *b, const msr_chart *ch, int64_t *below)
{
    msr__sb_puts(b, "{\"label\":");
    msr__sb_str(b, ch->overlay ? "" : ch->source_label);
    msr__sb_printf(b, ",\"device\":%d,\"title\":", ch->device);
    msr__sb_str(b, ch->title);
    msr__sb_puts(b, ",\"area\":");
    rect(b, ch->area);
    msr__sb_puts(b, ",\"plot\":");
    rect(b, ch->plot);
    msr__sb_puts(b, ",\"y\":{\"max_bytes\":");
    msr__sb_num(b, ch->y_max);
    msr__sb_puts(b, "},\"x\":{\"kind\":");
    msr__sb_str(b, ch->x_mode == MSR_CHART_X_EVENTS ? "events" : ch->run_axis ? "run" : "time");
    msr__sb_puts(b, ",\"segments\":[");
    for (size_t i = 0; i < ch->n_segments; i++) {
        const msr_chart_segment *sg = &ch->segments[i];
        msr__sb_puts(b, i ? ",{\"px0\":" : "{\"px0\":");
        num(b, sg->px0);
        msr__sb_puts(b, ",\"px1\":");
        num(b, sg->px1);
        msr__sb_puts(b, ",\"from_s\":");
        msr__sb_num(b, sg->from);
        msr__sb_puts(b, ",\"to_s\":");
        msr__sb_num(b, sg->to);
        msr__sb_printf(b, ",\"gap\":%s", sg->gap ? "true" : "false");
        if (sg->gap) {
            msr__sb_puts(b, ",\"label\":");
            msr__sb_str(b, sg->label);
        }
        msr__sb_puts(b, "}");
    }
    msr__sb_puts(b, "]},\"iterations\":[");
    for (size_t i = 0; i < ch->n_iters; i++) {
        msr__sb_printf(b, "%s{\"index\":%zu,\"px0\":", i ? "," : "", ch->iters[i].index + 1);
        num(b, ch->iters[i].px0);
        msr__sb_puts(b, ",\"px1\":");
        num(b, ch->iters[i].px1);
        msr__sb_puts(b, "}");
    }
    msr__sb_puts(b, "],\"bands\":[");
    bool first = true;
    if (!ch->overlay) {
        memset(below, 0, ch->n_cols * sizeof *below);
        for (size_t g = 0; g < ch->n_groups; g++, first = false) {
            band(b, ch, g, below, first);
            for (size_t c = 0; c < ch->n_cols; c++)
                below[c] += ch->heights[g * ch->n_cols + c];
        }
        /* "other" on top of them all, named as the legend names it. */
        named_start(b, first, ch->other_label, ch->theme.other);
        msr__sb_puts(b, ",\"leak\":false,\"suspect\":false,\"probe\":null}");
    }
    msr__sb_puts(b, "],\"series\":[");
    for (size_t i = 0; i < ch->n_series; i++) {
        named_start(b, i == 0, ch->series[i].label, ch->series[i].rgb);
        msr__sb_puts(b, "}");
    }
    msr__sb_puts(b, "],\"labels\":[");
    for (size_t i = 0; i < ch->n_labels; i++) {
        const msr_chart_label *L = &ch->labels[i];
        msr__sb_puts(b, i ? ",{\"kind\":" : "{\"kind\":");
        msr__sb_str(b, label_kind(L->kind));
        msr__sb_puts(b, ",\"text\":");
        msr__sb_str(b, L->text);
        msr__sb_puts(b, ",\"box\":");
        rect(b, L->box);
        if (L->leader) {
            msr__sb_puts(b, ",\"leader\":[");
            pair(b, L->lx, L->ly);
            msr__sb_puts(b, ",");
            pair(b, L->ax, L->ay);
            msr__sb_puts(b, "]");
        }
        msr__sb_puts(b, "}");
    }
    msr__sb_printf(b, "],\"hidden_labels\":%zu,\"lines\":[", ch->n_hidden_labels);
    bool fl = true;
    if (ch->overlay) {
        for (size_t i = 0; i < ch->n_series; i++) {
            curve_lines(b, &fl, ch, "reserved", ch->series[i].reserved, NULL);
            curve_lines(b, &fl, ch, "active", ch->series[i].active, NULL);
        }
    } else {
        curve_lines(b, &fl, ch, "reserved", ch->col_reserved, ch->col_event);
        curve_lines(b, &fl, ch, "active", ch->col_active, ch->col_event);
    }
    if (ch->has_peak)
        straight(b, &fl, "peak", ch->plot.x, ch->peak_py, ch->plot.x + ch->plot.w, ch->peak_py);
    for (size_t i = 0; i < ch->n_oom_px; i++)
        straight(b, &fl, "oom", ch->oom_px[i], ch->plot.y, ch->oom_px[i],
                 ch->plot.y + (ch->oom_rug ? MSR_CHART_OOM_MARK_H : ch->plot.h));
    /* Each entry with what it shows: its colour and its key's form, so a reader can tell
     * which band or line it names. */
    static const char *const KEY[] = {"swatch", "line", "dash", "dot"};
    msr__sb_puts(b, "],\"legend\":[");
    for (size_t i = 0; i < ch->n_legend; i++) {
        const msr_chart_legend_entry *e = &ch->legend[i];
        named_start(b, i == 0, e->text, e->rgb);
        msr__sb_puts(b, ",\"kind\":");
        msr__sb_str(b, (unsigned)e->key < sizeof KEY / sizeof KEY[0] ? KEY[e->key] : "swatch");
        msr__sb_puts(b, "}");
    }
    msr__sb_puts(b, "],\"fragmentation\":");
    if (!ch->has_frag) {
        msr__sb_puts(b, "null}");
        return;
    }
    /* The lower panel: its plot, scales and per-column values (-1: nothing shown). */
    msr__sb_puts(b, "{\"plot\":");
    rect(b, ch->frag_rect);
    msr__sb_puts(b, ",\"max_bytes\":");
    msr__sb_num(b, ch->frag_ymax);
    msr__sb_puts(b, ",\"max_blocks\":");
    msr__sb_num(b, ch->frag_cmax);
    const int64_t *cols[4] = {ch->frag_free, ch->frag_free_low, ch->frag_largest,
                              ch->frag_blocks};
    static const char *const KEYS[4] = {"free_in_reserved_bytes", "free_in_reserved_low_bytes",
                                        "largest_free_block_bytes", "free_blocks"};
    for (int k = 0; k < 4; k++) {
        msr__sb_printf(b, ",\"%s\":[", KEYS[k]);
        for (size_t c = 0; c < ch->n_cols; c++)
            msr__sb_printf(b, "%s%lld", c ? "," : "", (long long)cols[k][c]);
        msr__sb_puts(b, "]");
    }
    msr__sb_puts(b, "}}");
}

int msr_chart_model_json(const msr_chart *const *charts, size_t n_charts, int width, int height,
                        char **out, ms_error *err)
{
    *out = NULL;
    msr__sbuf b = {NULL, 0, 0, false};
    msr__sb_printf(&b, "{\"version\":%d,\"width\":%d,\"height\":%d,\"panels\":[",
                  MSR_CHART_JSON_VERSION, width, height);
    for (size_t i = 0; i < n_charts; i++) {
        int64_t *below = calloc(charts[i]->n_cols ? charts[i]->n_cols : 1, sizeof *below);
        if (!below) {
            b.bad = true;
            break;
        }
        if (i)
            msr__sb_puts(&b, ",");
        panel(&b, charts[i], below);
        free(below);
    }
    msr__sb_puts(&b, "]}\n");
    if (b.bad) {
        free(b.p);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory writing the chart model");
    }
    *out = b.p;
    return 0;
}
