/* The chart model as JSON for the HTML explorer (see chart_export.h, docs/view.md).
 * Every number written here is read from an msr_chart that msr_chart_build() made; this file
 * chooses windows, has the trace sliced for them (chart_slice.c) and encodes. No cairo,
 * no printing. */
#include "chart_slice.h"
#include "export_state.h"
#include "export_tiles.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_util.h"

/* ------------------------------------------------------------------ one window */

static int64_t quarter_px(const msr_chart *ch, int64_t bytes)
{
    return (int64_t)llround((double)bytes / ch->y_max * ch->plot.h * 4.0);
}

/* A curve per column in quarter pixels (what draw.c rounds to), as deltas; a run of
 * unchanged columns — a window where nothing happens — is a 0 and its length. */
/* Ticks as [[value, label], ...]. */
static void write_ticks(msr__sbuf *b, const msr_chart_tick *t, size_t n)
{
    msr__sb_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        msr__sb_puts(b, i ? ",[" : "[");
        msr__sb_num(b, t[i].value);
        msr__sb_puts(b, ",");
        msr__sb_str(b, t[i].label);
        msr__sb_puts(b, "]");
    }
    msr__sb_puts(b, "]");
}

static void curve(exporter *x, msr__sbuf *b, const char *key, const msr_chart *ch, const int64_t *v)
{
    int64_t prev = 0;
    for (size_t c = 0; c < ch->n_cols;) {
        int64_t q = ch->col_event[c] == MSR_CHART_NO_EVENT ? -1 : quarter_px(ch, v[c]);
        if (q != prev) {
            int64_t d = q - prev;
            msr__vb_u(&x->v, (d < 0 ? ((uint64_t)(-(d + 1)) << 1) | 1 : (uint64_t)d << 1) + 1);
            prev = q;
            c++;
            continue;
        }
        size_t run = 0;
        while (c < ch->n_cols &&
               (ch->col_event[c] == MSR_CHART_NO_EVENT ? -1 : quarter_px(ch, v[c])) == prev) {
            run++;
            c++;
        }
        msr__vb_u(&x->v, 0);
        msr__vb_u(&x->v, run);
    }
    msr__sb_printf(b, ",\"%s\":", key);
    msr__sb_b64(b, &x->v);
}

/* One window's chart: its x range, curves, bands, lanes and markers. `global` maps the
 * chart's allocation indices to the whole timeline's (NULL: they are the same). */
static void write_tile(exporter *x, msr__sbuf *b, const msr_chart *ch, const size_t *global,
                       const msr__band_runs *br, size_t n_events)
{
    msr__sb_puts(b, "{\"x0\":");
    msr__sb_num(b, ch->x_lo);
    msr__sb_puts(b, ",\"x1\":");
    msr__sb_num(b, ch->x_hi);
    msr__sb_printf(b, ",\"ev\":%zu,\"xt\":", n_events);
    write_ticks(b, ch->xticks, ch->n_xticks);
    curve(x, b, "a", ch, ch->col_active);
    if (ch->col_reserved)
        curve(x, b, "r", ch, ch->col_reserved);
    if (ch->show_low && ch->col_low)
        curve(x, b, "l", ch, ch->col_low);

    /* Bands: what each is (an allocation, or a site with the stack of its largest
     * allocation), its colour and legend line, then its heights as runs. */
    for (size_t g = 0; g < ch->n_groups; g++) {
        const msr_chart_group *gr = &ch->groups[g];
        if (gr->kind == MSR_CHART_GROUP_ALLOC && gr->alloc >= 0) {
            size_t gi = global ? global[gr->alloc] : (size_t)gr->alloc;
            msr__vb_s(&x->v, msr__exp_alloc_ref(x, gi));
        } else {
            msr__vb_s(&x->v, -1 - msr__st_id(&x->st, gr->label));
        }
    }
    msr__sb_puts(b, ",\"g\":");
    msr__sb_b64(b, &x->v);
    for (size_t g = 0; g < ch->n_groups; g++) {
        const msr_chart_group *gr = &ch->groups[g];
        int64_t stack = -1;
        if (gr->kind != MSR_CHART_GROUP_ALLOC && x->site_stack && gr->site != UINT32_MAX &&
            gr->site < x->n_frame_ids && x->site_stack[gr->site] != MS_NO_STACK)
            stack = msr__exp_stack_ref(x, x->site_stack[gr->site]);
        msr__vb_u(&x->v, (uint64_t)msr__exp_colour_id(x, gr->fill));
        msr__vb_s(&x->v, gr->legend);
        msr__vb_s(&x->v, stack);
    }
    msr__sb_puts(b, ",\"gf\":");
    msr__sb_b64(b, &x->v);
    /* A band's runs go to a scratch stream first: its count leads, and the heights are
     * read once. The sweep may have found them already (msr__band_runs). */
    bool swept = br && br->on;
    for (size_t g = 0; swept && g < ch->n_groups; g++) {
        size_t end = 0;
        size_t r0 = g ? br->end[g - 1] : 0;
        msr__vb_u(&x->v, br->end[g] - r0);
        for (size_t i = r0; i < br->end[g]; i++) {
            const msr__run *r = &br->run[i];
            msr__vb_u(&x->v, r->c0 - end);
            msr__vb_u(&x->v, r->len);
            msr__vb_u(&x->v, (uint64_t)r->h);
            end = (size_t)r->c0 + r->len;
        }
    }
    for (size_t g = 0; !swept && g < ch->n_groups; g++) {
        const int64_t *h = ch->heights + g * ch->n_cols;
        size_t runs = 0, end = 0;
        x->runs.n = 0;
        for (size_t c = 0; c < ch->n_cols;) {
            if (h[c] <= 0) {
                c++;
                continue;
            }
            size_t c1 = c;
            while (c1 + 1 < ch->n_cols && h[c1 + 1] == h[c])
                c1++;
            msr__vb_u(&x->runs, c - end);
            msr__vb_u(&x->runs, c1 - c + 1);
            msr__vb_u(&x->runs, (uint64_t)h[c]);
            runs++;
            end = c1 + 1;
            c = c1 + 1;
        }
        msr__vb_u(&x->v, runs);
        msr__vb_append(&x->v, &x->runs);
    }
    msr__sb_puts(b, ",\"h\":");
    msr__sb_b64(b, &x->v);
    msr__sb_puts(b, ",\"hl\":[");
    bool first = true;
    for (size_t g = 0; g < ch->n_groups; g++) {
        /* Outlined allocations, and the bands of leak findings (not suspects). */
        bool leak_band = ch->groups[g].kind == MSR_CHART_GROUP_LEAK && !ch->groups[g].suspect;
        if (!ch->groups[g].highlight && !leak_band)
            continue;
        msr__sb_printf(b, "%s[%zu,%lld]", first ? "" : ",", g,
                  ch->groups[g].mark[0] ? (long long)msr__st_id(&x->st, ch->groups[g].mark) : -1LL);
        first = false;
    }
    msr__sb_puts(b, "],\"leg\":[");
    for (size_t i = 0; i < ch->n_legend; i++)
        msr__sb_printf(b, "%s[%d,%lld,%lld]", i ? "," : "", (int)ch->legend[i].key,
                  (long long)msr__exp_colour_id(x, ch->legend[i].rgb),
                  (long long)msr__st_id(&x->st, ch->legend[i].text));
    msr__sb_puts(b, "],\"ln\":[");
    for (size_t lane = 0; lane < ch->n_lanes; lane++) {
        for (size_t i = 0; i < ch->n_lane_runs[lane]; i++) {
            const msr_chart_lane_run *r = &ch->lane_runs[lane][i];
            msr__vb_u(&x->v, (uint64_t)llround(r->x0 - ch->plot.x));
            msr__vb_u(&x->v, (uint64_t)llround(r->x1 - r->x0));
            msr__vb_u(&x->v, (uint64_t)msr__st_id(&x->st, ch->names[r->name]));
            msr__vb_u(&x->v, (uint64_t)msr__exp_colour_id(x, ch->name_rgb[r->name]));
        }
        if (lane)
            msr__sb_puts(b, ",");
        msr__sb_b64(b, &x->v);
    }
    msr__sb_puts(b, "]");
    if (ch->has_peak) {
        msr__sb_printf(b, ",\"pk\":[%lld,", (long long)ch->peak_bytes);
        msr__sb_num(b, ch->peak_x);
        msr__sb_puts(b, ",");
        msr__sb_str(b, ch->peak_label);
        msr__sb_puts(b, "]");
    }
    if (ch->n_oom_px) {
        msr__sb_puts(b, ",\"oom\":[");
        for (size_t i = 0; i < ch->n_oom_px; i++)
            msr__sb_printf(b, "%s%lld", i ? "," : "", (long long)floor(ch->oom_px[i] - ch->plot.x));
        msr__sb_printf(b, "],\"oomn\":%llu,\"ooml\":", (unsigned long long)ch->n_ooms);
        msr__sb_str(b, ch->oom_label);
        if (ch->oom_rug)
            msr__sb_puts(b, ",\"oomr\":1");
    }
    msr__sb_puts(b, "}");
}

/* ------------------------------------------------------------------ the pyramid */

static void rgb_json(exporter *x, msr__sbuf *b, const char *key, msr_chart_rgb c)
{
    msr__sb_printf(b, "\"%s\":", key);
    int64_t id = msr__exp_colour_id(x, c); /* may grow the table: index after */
    msr__sb_str(b, x->st.bad ? "#000000" : x->st.s[id]);
}

/* The static parts of the first chart: layout, y scale, theme, title. */
static void write_frame(exporter *x, msr__sbuf *b, const msr_chart *ch)
{
    msr__sb_printf(b, "\"area\":[%g,%g],\"plot\":[%g,%g,%g,%g],\"cols\":%zu,\"ymax\":", ch->area.w,
              ch->area.h, ch->plot.x, ch->plot.y, ch->plot.w, ch->plot.h, ch->n_cols);
    msr__sb_num(b, ch->y_max);
    msr__sb_puts(b, ",\"yt\":");
    write_ticks(b, ch->yticks, ch->n_yticks);
    msr__sb_puts(b, ",\"title\":");
    msr__sb_str(b, ch->title);
    msr__sb_puts(b, ",\"xtitle\":");
    msr__sb_str(b, ch->x_title);
    if (ch->x_mode == MSR_CHART_X_RUN) {
        /* The run axis's pieces over the whole trace (this is its level-0 chart): axis
         * units, seconds, whether a break, and the break's label as render draws it. */
        msr__sb_puts(b, ",\"segs\":[");
        for (size_t i = 0; i < ch->n_segments; i++) {
            const msr_chart_segment *g = &ch->segments[i];
            msr__sb_puts(b, i ? ",[" : "[");
            msr__sb_num(b, msr_chart_warp_u(&ch->warp, g->from));
            msr__sb_puts(b, ",");
            msr__sb_num(b, msr_chart_warp_u(&ch->warp, g->to));
            msr__sb_puts(b, ",");
            msr__sb_num(b, g->from);
            msr__sb_puts(b, ",");
            msr__sb_num(b, g->to);
            msr__sb_printf(b, ",%d,", g->gap ? 1 : 0);
            msr__sb_str(b, g->label);
            msr__sb_puts(b, "]");
        }
        msr__sb_puts(b, "]");
    }
    msr__sb_printf(b, ",\"lanes\":%zu,\"lanerect\":[", ch->n_lanes);
    for (size_t i = 0; i < ch->n_lanes; i++)
        msr__sb_printf(b, "%s[%g,%g]", i ? "," : "", ch->lane_rect[i].y, ch->lane_rect[i].h);
    msr__sb_printf(b, "],\"legrect\":[%g,%g,%g,%g],\"legrow\":%g,\"theme\":{", ch->legend_rect.x,
              ch->legend_rect.y, ch->legend_rect.w, ch->legend_rect.h, ch->legend_row);
    const msr_chart_theme *t = &ch->theme;
    const char *sep = "";
#define THEME_JSON(name)                                                                      \
    msr__sb_puts(b, sep);                                                                     \
    rgb_json(x, b, #name, t->name);                                                           \
    sep = ",";
    MSR_CHART_THEME_COLOURS(THEME_JSON)
#undef THEME_JSON
    msr__sb_puts(b, "}");
}

static const char *const MODE_KEY[N_MODES] = {"alloc", "site", "category", "group"};
static const msr_chart_by MODE_BY[N_MODES] = {MSR_CHART_BY_ALLOC, MSR_CHART_BY_SITE,
                                             MSR_CHART_BY_CATEGORY, MSR_CHART_BY_GROUP};

typedef struct mode_out {
    bool on;
    msr__sbuf b;
    int levels;
    char legend_title[64]; /* the charts' legend heading in this grouping */
} mode_out;

/* What the tables will cost once written: measured per entry on real traces (an
 * allocation is six varints, about 22 base64 characters). */
size_t msr__exp_tables_estimate(const exporter *x)
{
    return 22 * x->n_alloc_local + 8 * x->n_frames + 3 * x->stack_varints + x->st.bytes + 64;
}

typedef struct mark {
    size_t allocs, stacks, frames, strings, out;
} mark;

static size_t tables_estimate(const exporter *x)
{
    return msr__exp_tables_estimate(x);
}

static mark mark_now(const exporter *x, const msr__sbuf *b)
{
    return (mark){x->n_alloc_local, x->n_stacks, x->n_frames, x->st.n, b->n};
}

/* Undoes a level that went over the budget: its text and the table entries it added. */
static void roll_back(exporter *x, msr__sbuf *b, mark m)
{
    for (size_t i = m.allocs; i < x->n_alloc_local; i++)
        x->alloc_local[x->alloc_of[i]] = 0;
    for (size_t i = m.stacks; i < x->n_stacks; i++) {
        size_t n = 0;
        ms_snapshot_stack(x->src->snap, x->stack_of[i], &n);
        x->stack_varints -= n + 1;
        x->stack_local[x->stack_of[i]] = 0;
    }
    for (size_t i = m.frames; i < x->n_frames; i++)
        x->frame_local[x->frame_of[i]] = 0;
    x->n_alloc_local = m.allocs;
    x->n_stacks = m.stacks;
    x->n_frames = m.frames;
    msr__st_truncate(&x->st, m.strings);
    msr__exp_colours_forget(x);
    for (size_t i = 0; x->site_text && i <= x->n_frame_ids; i++)
        if (x->site_text[i] > (int64_t)m.strings)
            x->site_text[i] = 0; /* its string was dropped */
    b->n = m.out;
    if (b->p)
        b->p[b->n] = '\0';
}

/* ------------------------------------------------------------------ one grouping */

typedef struct level_ctx {
    exporter *x;
    mode_out *m;
    msr__sbuf *frame;
    int level;
    size_t crowded;
    msr_chart_export_stats *stats;
} level_ctx;

/* The writer: tile k of a level into the grouping's text, in order. */
static int take_tile(void *arg, size_t k, tile *t)
{
    level_ctx *c = arg;
    if (c->frame && c->level == 0)
        write_frame(c->x, c->frame, t->ch);
    if (c->level == 0)
        memcpy(c->m->legend_title, t->ch->legend_title, sizeof c->m->legend_title);
    if (k)
        msr__sb_puts(&c->m->b, ",");
    write_tile(c->x, &c->m->b, t->ch, NULL, &t->runs, t->n_events);
    c->stats->tiles++;
    c->crowded += t->crowded;
    msr_chart_free(t->ch);
    t->ch = NULL;
    msr__band_runs_free(&t->runs);
    return 0;
}

/* ------------------------------------------------------------------ groupings built along */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    for (; v >= 0x80; v >>= 7)
        n++;
    return n;
}

/* About the bytes write_tile gives a chart (its curves and bands, base64), without
 * writing it: the table ids it would take are not the caller's to hand out yet. */
static size_t text_estimate(const msr_chart *ch, const msr__band_runs *runs)
{
    size_t n = 0;
    for (int which = 0; which < 3; which++) {
        const int64_t *v = which == 0 ? ch->col_active : which == 1 ? ch->col_reserved
                           : ch->show_low ? ch->col_low : NULL;
        int64_t prev = 0;
        for (size_t c = 0; v && c < ch->n_cols; c++) {
            int64_t q = ch->col_event[c] == MSR_CHART_NO_EVENT ? -1 : quarter_px(ch, v[c]);
            n += q != prev ? varint_len((uint64_t)(q > prev ? q - prev : prev - q) << 1) : 0;
            prev = q;
        }
    }
    for (size_t i = 0; runs && runs->on && i < runs->n; i++)
        n += 2 + varint_len((uint64_t)runs->run[i].h);
    for (size_t g = 0; g < ch->n_groups; g++) {
        n += 6;
        if (runs && runs->on)
            continue;
        const int64_t *h = ch->heights + g * ch->n_cols;
        for (size_t c = 0; c < ch->n_cols; c++)
            if (h[c] > 0 && (c == 0 || h[c - 1] != h[c]))
                n += 2 + varint_len((uint64_t)h[c]);
    }
    for (size_t lane = 0; lane < ch->n_lanes; lane++)
        n += 6 * ch->n_lane_runs[lane];
    return n * 4 / 3 + 24 * ch->n_legend + 40 * ch->n_xticks + 200;
}

static size_t level_estimate(const tile *t, size_t n)
{
    size_t sum = 0;
    for (size_t k = 0; k < n; k++)
        sum += t[k].ch ? text_estimate(t[k].ch, &t[k].runs) : 0;
    return sum;
}

/* Which later groupings build `level` along with grouping `mode` (b->with, their tiles
 * in b->later): those whose budget, by the estimate of their levels built so far, will
 * let them reach it (build_mode's own test). A wrong guess costs time, not bytes: a
 * grouping whose level was not built along builds it itself, and tiles it never takes
 * are dropped. */
static void plan_along(builder *b, int mode, int level, size_t n_tiles, const tile *tiles)
{
    memset(b->with, 0, sizeof b->with);
    for (int k = mode + 1; k < N_MODES; k++) {
        if (!b->mode_on[k].on || b->at[k] < 0 || b->later[k][level])
            continue;
        size_t sum = level_estimate(&b->first[b->at[k]], 1), last = sum;
        bool known = true;
        for (int l = 1; l < level && known; l++) {
            known = b->later[k][l] != NULL;
            last = known ? level_estimate(b->later[k][l], (size_t)1 << l) : 0;
            sum += last;
        }
        if (!known || sum + 2 * last > b->share[k])
            continue;
        tile *u = calloc(n_tiles, sizeof *u);
        if (!u)
            continue; /* built in its turn */
        for (size_t i = 0; i < n_tiles; i++) {
            u[i].by = MODE_BY[k];
            u[i].lo = tiles[i].lo;
            u[i].hi = tiles[i].hi;
        }
        b->later[k][level] = u;
        b->with[k] = true;
    }
}

/* Whether grouping `mode`'s tiles of `level` were all built along (else any that were
 * are dropped, and the level is built in its turn). */
static bool built_along(builder *b, int mode, int level, size_t n_tiles)
{
    tile *kept = b->later[mode][level];
    size_t k = 0;
    while (kept && k < n_tiles && kept[k].done)
        k++;
    if (kept && k < n_tiles) {
        msr__free_tiles(kept, n_tiles);
        free(kept);
        b->later[mode][level] = NULL;
    }
    return b->later[mode][level] != NULL;
}

/* Builds the levels of one grouping into `m` until the budget or the trace's own detail
 * runs out. The first chart of the first mode also gives the page its frame. `first`
 * is its level 0, built already. */
/* `limit`: the whole output's size (other modes' text in `base`, the tables estimated)
 * may not pass it; level 0 is always kept. */
static int build_mode(exporter *x, builder *b, bool two, int mode, tile *first,
                      size_t limit, size_t base, mode_out *m, msr__sbuf *frame,
                      msr_chart_export_stats *stats, ms_error *err)
{
    const msr_chart_source *src = x->src;
    const msr_chart_export_opts *o = x->o;
    size_t n_ev = src->trace->n;
    double span = msr__export_span(src);
    int max_levels = o->max_levels > 0 ? o->max_levels : MSR_CHART_EXPORT_MAX_LEVELS;
    if (max_levels > MSR_CHART_EXPORT_MAX_LEVELS)
        max_levels = MSR_CHART_EXPORT_MAX_LEVELS;
    msr__sb_puts(&m->b, "[");
    size_t last_level = 0, last_tables = 0;
    int rc = 0;
    tile *tiles = calloc((size_t)1 << (max_levels - 1), sizeof *tiles);
    if (!tiles)
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory building charts");
    for (int level = 0; level < max_levels && !rc; level++) {
        size_t n_tiles = (size_t)1 << level;
        if (level >= b->work_levels)
            break;
        /* Each level costs about twice the one before; stop before the budget breaks. */
        size_t now = base + (frame ? frame->n : 0) + m->b.n + tables_estimate(x);
        if (level > 0 && now + 2 * last_level + last_tables > limit)
            break;
        mark before = mark_now(x, &m->b);
        size_t tables_before = tables_estimate(x);
        size_t start = m->b.n;
        msr__sb_puts(&m->b, level ? ",[" : "[");
        level_ctx c = {x, m, frame, level, 0, stats};
        if (level == 0) {
            /* The whole trace, built with the other groupings' (build_modes). */
            rc = first->rc ? first->rc : take_tile(&c, 0, first);
            if (first->rc)
                *err = first->err;
        } else if (built_along(b, mode, level, n_tiles)) {
            /* Built with the first grouping's level (build_tile). */
            tile *kept = b->later[mode][level];
            for (size_t k = 0; k < n_tiles && !rc; k++) {
                rc = kept[k].rc ? kept[k].rc : take_tile(&c, k, &kept[k]);
                if (kept[k].rc)
                    *err = kept[k].err;
            }
            msr__free_tiles(kept, n_tiles);
            free(kept);
            b->later[mode][level] = NULL;
        } else {
            memset(tiles, 0, n_tiles * sizeof *tiles);
            for (size_t k = 0; k < n_tiles; k++) {
                tiles[k].by = MODE_BY[mode];
                tiles[k].lo = span * (double)k / (double)n_tiles;
                tiles[k].hi = k + 1 == n_tiles ? span : span * (double)(k + 1) / (double)n_tiles;
            }
            b->t = tiles;
            b->n = n_tiles;
            b->count = b->deeper[level] < 0;
            atomic_store(&b->crowded_sum, 0);
            b->ahead = 4;
            b->level = level;
            plan_along(b, mode, level, n_tiles, tiles);
            msr__slicer_restart(b->sl[0]);
            if (b->sl[1])
                msr__slicer_restart(b->sl[1]);
            rc = msr__run_tiles(b, two && b->sl[1], take_tile, &c);
            memset(b->with, 0, sizeof b->with);
            for (size_t k = 0; rc && k < n_tiles; k++)
                if (tiles[k].done && tiles[k].rc) {
                    *err = tiles[k].err;
                    break;
                }
            msr__free_tiles(tiles, n_tiles);
        }
        msr__sb_puts(&m->b, "]");
        if (rc)
            break;
        size_t after = base + (frame ? frame->n : 0) + m->b.n + tables_estimate(x);
        if (level > 0 && after > limit) {
            roll_back(x, &m->b, before);
            break;
        }
        last_level = m->b.n - start;
        last_tables = tables_estimate(x) - tables_before;
        m->levels = level + 1;
        /* Nearly every event has a column of its own: deeper windows show nothing new. */
        if (b->deeper[level] < 0)
            b->deeper[level] = c.crowded * 100 > n_ev;
        if (!b->deeper[level])
            break;
    }
    msr__sb_puts(&m->b, "]");
    free(tiles);
    return rc;
}

/* Every grouping's levels within `limit` bytes in all. Sites get an eighth and categories
 * a sixteenth: twelve (or eight) bands whose heights change every column cost more per
 * window than four hundred allocations that each hold one size, and past a few levels
 * people look at allocations; they zoom less deep. */
static int build_modes(exporter *x, builder *b, bool two, size_t limit, mode_out *m,
                       msr__sbuf *frame, msr_chart_export_stats *stats, ms_error *err)
{
    /* Every grouping keeps its whole-trace chart: build the three at once. */
    tile first[N_MODES];
    memset(first, 0, sizeof first);
    size_t n_first = 0;
    int at[N_MODES];
    for (int k = 0; k < N_MODES; k++) {
        at[k] = -1;
        if (!m[k].on)
            continue;
        at[k] = (int)n_first;
        first[n_first].by = MODE_BY[k];
        first[n_first].lo = 0;
        first[n_first].hi = msr__export_span(x->src);
        n_first++;
    }
    b->t = first;
    b->n = n_first;
    b->ahead = n_first;
    b->count = true;
    msr__run_tiles(b, two, NULL, NULL); /* failures show when their grouping's turn comes */
    int rc = 0;
    size_t share[N_MODES] = {0};
    share[MODE_SITE] = m[MODE_SITE].on ? limit / 8 : 0;
    share[MODE_CATEGORY] = m[MODE_CATEGORY].on ? limit / 16 : 0;
    share[MODE_GROUP] = m[MODE_GROUP].on ? limit / 16 : 0;
    b->mode_on = m;
    b->share = share;
    b->first = first;
    b->at = at;
    rc = build_mode(x, b, two, MODE_ALLOC, &first[at[MODE_ALLOC]],
                    limit - share[MODE_SITE] - share[MODE_CATEGORY] - share[MODE_GROUP], 0,
                    &m[MODE_ALLOC], frame,
                    stats, err);
    stats->levels[MODE_ALLOC] = m[MODE_ALLOC].levels;
    size_t used = frame->n + m[MODE_ALLOC].b.n;
    for (int k = MODE_ALLOC + 1; k < N_MODES && !rc; k++) {
        if (!m[k].on)
            continue;
        size_t mode_limit = used + tables_estimate(x) + share[k];
        rc = build_mode(x, b, two, k, &first[at[k]],
                        mode_limit < limit ? mode_limit : limit, used, &m[k], NULL, stats,
                        err);
        stats->levels[k] = m[k].levels;
        used += m[k].b.n;
    }
    msr__free_tiles(first, n_first);
    for (int k = 0; k < N_MODES; k++)
        for (int level = 0; level < MSR_CHART_EXPORT_MAX_LEVELS; level++)
            if (b->later[k][level]) {
                msr__free_tiles(b->later[k][level], (size_t)1 << level);
                free(b->later[k][level]);
                b->later[k][level] = NULL;
            }
    return rc;
}

/* The document: the file's facts, the frame, the groupings' levels and the tables. */
static void write_doc(exporter *x, msr__sbuf *doc, const msr__sbuf *frame, const mode_out *m,
                      const msr__sbuf *states)
{
    const msr_chart_source *src = x->src;
    msr__sb_printf(doc, "{\"v\":%d,\"label\":", MSR_CHART_EXPORT_VERSION);
    msr__sb_str(doc, src->label ? src->label : "snapshot");
    msr__sb_printf(doc, ",\"device\":%d,\"t0\":%lld,\"span\":", src->tl->device, (long long)x->t0);
    size_t n_ev = src->trace->n;
    msr__sb_num(doc, n_ev > 1 ? msr__slice_x(src, n_ev - 1) : 0);
    msr__sb_printf(doc, ",\"events\":%zu,", n_ev);
    if (!src->trace->has_times)
        msr__sb_puts(doc, "\"times\":false,"); /* its times are event indexes */
    if (src->warp) {
        /* The run axis: windows, ticks and peaks are in its units (the frame's `segs`
         * map them to seconds). */
        msr__sb_puts(doc, "\"axis\":\"run\",\"uspan\":");
        msr__sb_num(doc, msr__export_span(src));
        msr__sb_puts(doc, ",");
    }
    msr__sb_put(doc, frame->p ? frame->p : "", frame->n);
    for (int pass = 0; pass < 2; pass++) {
        msr__sb_puts(doc, pass ? ",\"legtitle\":{" : ",\"modes\":{");
        bool first = true;
        for (int k = 0; k < N_MODES; k++) {
            if (!m[k].on)
                continue;
            msr__sb_printf(doc, "%s\"%s\":", first ? "" : ",", MODE_KEY[k]);
            if (pass)
                msr__sb_str(doc, m[k].legend_title);
            else
                msr__sb_put(doc, m[k].b.p ? m[k].b.p : "[]", m[k].b.p ? m[k].b.n : 2);
            first = false;
        }
        msr__sb_puts(doc, "}");
    }
    if (states->p)
        msr__sb_put(doc, states->p, states->n);
    msr__exp_write_tables(x, doc);
    msr__sb_puts(doc, "}");
}

/* What the pyramid's slices may hold together: opts->slice_memory, else the snapshot's
 * own size (its decompressed pickle), at least 4 MiB; no snapshot, no bound. */
static uint64_t slice_memory(const msr_chart_export_opts *o, const msr_chart_source *src)
{
    if (o->slice_memory)
        return o->slice_memory;
    if (!src->snap)
        return UINT64_MAX;
    uint64_t file = ms_snapshot_input_bytes(src->snap), floor = (uint64_t)4 << 20;
    return file > floor ? file : floor;
}

int msr_chart_export_json(char **out, msr_chart_export_stats *stats, const msr_chart_source *src,
                         const msr_chart_export_opts *opts, ms_error *err)
{
    if (!out)
        return msr__render_fail(err, MS_ERR_ARG, "no output pointer");
    *out = NULL;
    msr_chart_export_stats st0;
    if (!stats)
        stats = &st0;
    memset(stats, 0, sizeof *stats);
    msr_chart_export_opts defaults = {0};
    if (!opts)
        opts = &defaults;
    if (!src || !src->trace || !src->tl || (src->tl->n_allocs && !src->tl->allocs) ||
        (src->tl->n_events && (!src->tl->active || !src->tl->reserved)) ||
        src->tl->n_events != src->trace->n)
        return msr__render_fail(err, MS_ERR_ARG,
                               "exporting a chart needs the timeline's curves and allocations");
    for (size_t h = 0; h < opts->n_highlights; h++)
        if (!opts->highlights || opts->highlights[h].alloc >= src->tl->n_allocs)
            return msr__render_fail(err, MS_ERR_ARG, "highlighted allocation is not in the timeline");

    /* The run axis: one warp for the whole trace, which every window shares (a slice
     * starts at the trace's first time, so its knots need no shift). Nothing to compress
     * (or no times): the time axis's page, exactly. */
    msr_chart_warp warp;
    msr_chart_source run_src = *src;
    run_src.warp = NULL;
    msr_chart_x x_mode = opts->x_set ? opts->x_mode : MSR_CHART_X_RUN;
    if (x_mode == MSR_CHART_X_RUN && src->trace->has_times) {
        msr_chart_warp_from_idle(&warp, src->idle);
        if (warp.n_breaks)
            run_src.warp = &warp;
    }
    /* The --group rules' band of every stack, found once for all the windows' charts
     * (matching per chart cost a match per stack and window); a pattern that reaches a
     * limit fails here, before anything is built. */
    int8_t *group_of_stack = NULL;
    if (src->group_rules && src->group_rules->n && !src->group_of_stack && src->snap) {
        int grc = msr_chart_group_rules_classify(src->group_rules, src->snap, src->tl,
                                                &group_of_stack, err);
        if (grc)
            return grc;
        run_src.group_of_stack = group_of_stack;
    }
    src = &run_src;

    exporter x;
    memset(&x, 0, sizeof x);
    x.src = src;
    x.o = opts;
    x.t0 = src->trace->n ? src->trace->time_us[0] : src->tl->t_first_us;
    x.n_stack_ids = src->snap ? ms_snapshot_stack_count(src->snap) : 0;
    x.n_frame_ids = src->snap ? ms_snapshot_frame_count(src->snap) : 0;
    size_t na = src->tl->n_allocs;
    x.alloc_local = calloc(na ? na : 1, sizeof *x.alloc_local);
    x.stack_local = calloc(x.n_stack_ids ? x.n_stack_ids : 1, sizeof *x.stack_local);
    x.frame_local = calloc(x.n_frame_ids ? x.n_frame_ids : 1, sizeof *x.frame_local);
    x.site_text = calloc(x.n_frame_ids + 1, sizeof *x.site_text); /* NULL: uncached */
    msr__slicer sl[2];
    memset(sl, 0, sizeof sl);
    ms_limits lim = opts->limits ? *opts->limits : ms_limits_default();
    bool two = lim.threads >= 2, two_slicers = two;
    mode_out modes[N_MODES];
    memset(modes, 0, sizeof modes);
    modes[MODE_ALLOC].on = true;
    modes[MODE_SITE].on = !opts->no_site_mode;
    modes[MODE_CATEGORY].on = src->categories != NULL;
    modes[MODE_GROUP].on = src->group_rules && src->group_rules->n;
    msr__sbuf frame = {0}, doc = {0};
    int rc = 0;
    if (!x.alloc_local || !x.stack_local || !x.frame_local)
        rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory exporting a chart");
    if (!rc)
        rc = msr__exp_site_stacks(&x, err);

    /* One y scale for every window, so zooming keeps heights comparable. */
    int64_t y_fit = 0;
    if (!rc) {
        msr_chart_spec whole = {0};
        double xs;
        rc = msr_chart_extent(src, &whole, &xs, &y_fit, err);
    }
    size_t budget = opts->budget ? opts->budget : MSR_CHART_EXPORT_DEFAULT_BUDGET;
    /* A small trace gets a small page: detail costs about as much as the events it shows. */
    size_t need = 64 * src->trace->n + 16 * src->tl->n_allocs;
    if (need < 256 * 1024)
        need = 256 * 1024;
    if (budget > need)
        budget = need;
    /* A few hundred bytes of keys and brackets are left outside the estimate. */
    size_t limit = budget > 4096 ? budget - 1024 : budget;
    /* The allocator states take what the pyramid leaves of the budget, and at least a
     * floor that the pyramid is built without: a 32nd of the budget, a quarter of a page
     * under 2 MiB (a few states of a short trace are much of what its page can show). */
    msr__sbuf states = {0};
    size_t n_states = 0;
    size_t states_floor = opts->states_budget ? opts->states_budget
                          : budget < ((size_t)2 << 20) ? budget / 4
                                                       : budget / 32;
    if (opts->n_instants)
        limit -= states_floor < limit / 2 ? states_floor : limit / 2;
    /* The snapshot fills its site cache as sites are asked for: fill it now, before a
     * second thread asks too. */
    for (size_t i = 0; two && !rc && i < x.n_stack_ids; i++)
        ms_stack_site(src->snap, (uint32_t)i);
    /* On the time axis, every allocation's event times as x, once for all the windows'
     * charts (they rank bands by bytes x lifetime in the window). No table: each chart
     * looks them up itself. */
    double *life_x = NULL;
    if (!rc && !src->warp && src->trace->n) {
        const ms_timeline *tl = src->tl;
        life_x = malloc((na ? 2 * na : 1) * sizeof *life_x);
        for (size_t i = 0; life_x && i < na; i++) {
            int64_t e[2] = {tl->allocs[i].alloc_event, tl->allocs[i].free_event};
            for (int k = 0; k < 2; k++)
                life_x[2 * i + (size_t)k] =
                    e[k] >= 0 ? msr__event_x(src, MSR_CHART_X_TIME, e[k]) : 0.0;
        }
    }
    builder b;
    memset(&b, 0, sizeof b);
    b.life_x = life_x;
    b.src = src;
    b.o = opts;
    b.area = msr__export_area(opts);
    b.y_fit = y_fit;
    b.warp = src->warp;
    memset(b.deeper, -1, sizeof b.deeper);
    int max_levels = opts->max_levels > 0 ? opts->max_levels : MSR_CHART_EXPORT_MAX_LEVELS;
    b.work_levels = msr__export_work_levels(src, max_levels < MSR_CHART_EXPORT_MAX_LEVELS
                                                    ? max_levels
                                                    : MSR_CHART_EXPORT_MAX_LEVELS,
                                            opts->n_highlights, slice_memory(opts, src),
                                            &two_slicers);
    /* Level 0 is the whole trace: slicers only for the levels below it, and a second
     * thread slices only when its slicer fits too (level 0's charts take two threads). */
    if (!rc && b.work_levels > 1) {
        rc = msr__slicer_init(&sl[0], src, opts->n_highlights, err);
        if (!rc && two_slicers)
            rc = msr__slicer_init_shared(&sl[1], &sl[0], opts->n_highlights, err);
    }
    b.sl[0] = &sl[0];
    b.sl[1] = two_slicers ? &sl[1] : NULL;
    if (!rc)
        rc = build_modes(&x, &b, two, limit, modes, &frame, stats, err);
    /* The states' replay comes next: the slices and lives' x are done with (every path
     * passes here; the exits above return before either is made). */
    msr__slicer_free(&sl[0]);
    msr__slicer_free(&sl[1]);
    free(life_x);
    if (!rc && opts->n_instants) {
        /* The tables as they would be written now, measured (the pyramid's estimate of
         * them runs short on a small page). */
        msr__sbuf tables = {0};
        msr__exp_write_tables(&x, &tables);
        size_t used = frame.n + tables.n + 1024;
        free(tables.p);
        for (int k = 0; k < N_MODES; k++)
            used += modes[k].b.n;
        /* What the pyramid left: the floor it was built without, or less when its
         * whole-trace charts alone passed their limit (they are never left out). */
        size_t room = budget > used ? budget - used : 0;
        rc = msr__exp_states(&x, &states, opts->states_budget ? states_floor : room, &n_states,
                            err);
        stats->states = n_states;
        stats->state_bytes = states.n;
    }
    if (!rc) {
        write_doc(&x, &doc, &frame, modes, &states);
        bool bad = doc.bad || frame.bad || x.bad || x.st.bad || x.v.bad || x.runs.bad ||
                   states.bad;
        for (int k = 0; k < N_MODES; k++)
            bad = bad || modes[k].b.bad;
        if (bad)
            rc = msr__render_fail(err, MS_ERR_NOMEM, "out of memory writing the chart data");
    }
    stats->allocs = x.n_alloc_local;
    stats->stacks = x.n_stacks;
    stats->frames = x.n_frames;
    if (!rc) {
        stats->bytes = doc.n;
        *out = doc.p;
        doc.p = NULL;
    }
    free(doc.p);
    free(frame.p);
    free(states.p);
    for (int k = 0; k < N_MODES; k++)
        free(modes[k].b.p);
    msr__st_free(&x.st);
    free(x.alloc_local);
    free(x.alloc_of);
    free(x.stack_local);
    free(x.stack_of);
    free(x.frame_local);
    free(x.frame_of);
    free(x.site_stack);
    free(x.site_text);
    free(x.v.p);
    free(x.runs.p);
    free(x.colour_key);
    free(x.colour_id);
    free(group_of_stack);
    return rc;
}
