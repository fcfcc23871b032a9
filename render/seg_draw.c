/* Segments drawn to scale (seg_draw.h): one look for a block wherever a state is drawn. */
#include "seg_draw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart_impl.h"
#include "memsnap/categories.h"

/* Without categories or a site, one colour for allocated blocks; pending frees in a pink
 * no category uses. */
static const msr_chart_rgb ALLOCATED = {0.35, 0.55, 0.80};
static const msr_chart_rgb PENDING = {0.93, 0.62, 0.80};
static const msr_chart_rgb HATCH = {0.72, 0.72, 0.76};
static const msr_chart_rgb LEAK = {0.84, 0.15, 0.16};
static const msr_chart_rgb FG = {0.12, 0.12, 0.14};

msr_chart_rgb msr__seg_allocated_rgb(void)
{
    return ALLOCATED;
}

static void set(cairo_t *cr, msr_chart_rgb c)
{
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

void msr__seg_text(cairo_t *cr, double x, double y, double size, msr_chart_rgb c, const char *s)
{
    cairo_select_font_face(cr, MSR_SEG_FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    set(cr, c);
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, s);
}

double msr__seg_text_width(cairo_t *cr, double size, const char *s)
{
    cairo_text_extents_t ext;
    cairo_select_font_face(cr, MSR_SEG_FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_text_extents(cr, s, &ext);
    return ext.x_advance;
}

msr_chart_rgb msr__seg_block_rgb(const msr_seg_style *st, size_t block)
{
    const ms_heap_block *b = &st->heap->blocks[block];
    if (st->by == MSR_SEG_BY_SITE) {
        uint32_t site = st->snap && b->stack != MS_NO_STACK ? ms_stack_site(st->snap, b->stack)
                                                            : UINT32_MAX;
        return msr__site_rgb(st->snap, site);
    }
    if (st->block_category && st->block_category[block] < MS_CAT_COUNT)
        return msr__category_rgb((ms_category)st->block_category[block]);
    return st->block_category ? msr__category_rgb(MS_CAT_OTHER) : ALLOCATED;
}

/* Diagonal lines across [x, x+w) x [y, y+h): a free block reads as empty at a glance,
 * and as "free" rather than "white category" when printed. */
static void hatch(cairo_t *cr, double x, double y, double w, double h)
{
    if (w < 2)
        return;
    cairo_save(cr);
    cairo_rectangle(cr, x, y, w, h);
    cairo_clip(cr);
    set(cr, HATCH);
    cairo_set_line_width(cr, 0.8);
    for (double s = x - h; s < x + w; s += 6) {
        cairo_move_to(cr, s, y + h);
        cairo_line_to(cr, s + h, y);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

void msr__seg_draw(cairo_t *cr, const msr_seg_style *st, size_t seg, double x, double y,
                  double px_per_byte, double row_h)
{
    const ms_heap *hp = st->heap;
    const ms_heap_segment *g = &hp->segments[seg];
    char a[32];
    cairo_set_line_width(cr, 1);
    for (size_t q = g->first_block; q < g->first_block + g->n_blocks; q++) {
        const ms_heap_block *bl = &hp->blocks[q];
        double bx = x + (double)(bl->address - g->address) * px_per_byte;
        double bw = (double)bl->size * px_per_byte;
        if (bw < 0.5)
            bw = 0.5;
        if (bl->state == MS_BLOCK_INACTIVE)
            cairo_set_source_rgb(cr, 1, 1, 1);
        else if (bl->state == MS_BLOCK_ACTIVE_PENDING_FREE)
            set(cr, PENDING);
        else
            set(cr, msr__seg_block_rgb(st, q));
        cairo_rectangle(cr, bx, y, bw, row_h);
        cairo_fill(cr);
        if (bl->state == MS_BLOCK_INACTIVE) {
            hatch(cr, bx, y, bw, row_h);
            ms_format_bytes((int64_t)bl->size, a, sizeof a);
            double tw = msr__seg_text_width(cr, 9, a);
            if (tw + 6 < bw) {
                /* the size on a white patch, so the hatching does not cross it */
                cairo_set_source_rgb(cr, 1, 1, 1);
                cairo_rectangle(cr, bx + 2, y + row_h / 2 - 6, tw + 2, 11);
                cairo_fill(cr);
                msr__seg_text(cr, bx + 3, y + row_h / 2 + 3.5, 9, FG, a);
            }
        } else if (bl->state == MS_BLOCK_ACTIVE_PENDING_FREE && bw >= 4) {
            set(cr, FG);
            cairo_set_line_width(cr, 1);
            double dash[] = {2.0, 2.0};
            cairo_set_dash(cr, dash, 2, 0);
            cairo_rectangle(cr, bx + 1, y + 1.5, bw - 2, row_h - 3);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
        }
        /* a hairline where a block begins, so neighbours of one colour stay apart */
        if (q > g->first_block && bw >= 3) {
            cairo_set_source_rgb(cr, 1, 1, 1);
            cairo_rectangle(cr, bx, y + 1, 0.8, row_h - 2);
            cairo_fill(cr);
        }
    }
    /* outline of the whole segment */
    set(cr, FG);
    cairo_set_line_width(cr, 1);
    double gw = (double)g->total_size * px_per_byte;
    cairo_rectangle(cr, x + 0.5, y + 0.5, gw > 1 ? gw - 1 : 0.5, row_h - 1);
    cairo_stroke(cr);
    /* blocks a leaking site made: outlined in red */
    for (size_t q = g->first_block; st->block_leak && q < g->first_block + g->n_blocks; q++) {
        if (!st->block_leak[q])
            continue;
        const ms_heap_block *bl = &hp->blocks[q];
        double bx = x + (double)(bl->address - g->address) * px_per_byte;
        double bw = (double)bl->size * px_per_byte;
        set(cr, LEAK);
        cairo_set_line_width(cr, 2.5);
        cairo_rectangle(cr, bx + 1, y + 1, bw > 2 ? bw - 2 : 0.5, row_h - 2);
        cairo_stroke(cr);
        cairo_set_line_width(cr, 1);
    }
}

/* ------------------------------------------------------------------ which segments */

size_t msr__seg_pick(const ms_heap *h, size_t *idx, size_t max)
{
    size_t total = h ? h->n_segments : 0;
    if (total <= max) {
        for (size_t i = 0; i < total; i++)
            idx[i] = i;
        return total;
    }
    msr__keyed *r = malloc(total * sizeof *r);
    if (!r) {
        for (size_t i = 0; i < max; i++)
            idx[i] = i;
        return max;
    }
    for (size_t i = 0; i < total; i++) {
        /* free bytes count twice as much as size: where the memory went unused first */
        uint64_t free = ms_heap_segment_free(NULL, NULL, h, i);
        r[i] = (msr__keyed){(int64_t)(h->segments[i].total_size + 2 * free), i};
    }
    qsort(r, total, sizeof *r, msr__keyed_down);
    for (size_t i = 0; i < max; i++)
        idx[i] = r[i].index;
    free(r);
    qsort(idx, max, sizeof *idx, msr__size_up);
    return max;
}

size_t msr__seg_pack(const ms_heap *h, const size_t *idx, size_t n, double px_per_byte,
                    double plot_w, double sep, size_t *row_of, double *x_of)
{
    size_t rows = n ? 1 : 0;
    double x = 0;
    for (size_t k = 0; k < n; k++) {
        size_t g = idx ? idx[k] : k;
        double w = fmax(2.0, (double)h->segments[g].total_size * px_per_byte);
        if (x > 0 && x + w > plot_w + 0.5) {
            rows++;
            x = 0;
        }
        if (row_of)
            row_of[k] = rows - 1;
        if (x_of)
            x_of[k] = x;
        x += w + sep;
    }
    return rows;
}

/* ------------------------------------------------------------------ legend */

typedef struct site_bytes {
    uint32_t site;
    uint64_t bytes;
} site_bytes;

static int site_cmp(const void *a, const void *b)
{
    return MSR__CMP(((const site_bytes *)a)->site, ((const site_bytes *)b)->site);
}

/* The most bytes first; ties by site. */
static int bytes_desc(const void *a, const void *b)
{
    const site_bytes *x = a, *y = b;
    int c = MSR__CMP(y->bytes, x->bytes);
    return c ? c : MSR__CMP(x->site, y->site);
}

/* One legend entry at (*lx, *ly), wrapping at x + w; `kind` 0 swatch, 1 hatched, 2 red
 * outline, 3 pending. */
static void entry(cairo_t *cr, double x, double w, double *lx, double *ly, int kind,
                  msr_chart_rgb col, const char *name)
{
    double tw = msr__seg_text_width(cr, 10, name);
    if (*lx > x && *lx + 16 + tw > x + w) {
        *lx = x;
        *ly += 18;
    }
    if (kind == 2) {
        set(cr, LEAK);
        cairo_set_line_width(cr, 2);
        cairo_rectangle(cr, *lx + 1, *ly + 1, 10, 10);
        cairo_stroke(cr);
        cairo_set_line_width(cr, 1);
    } else {
        set(cr, kind == 1 ? (msr_chart_rgb){1, 1, 1} : col);
        cairo_rectangle(cr, *lx, *ly, 12, 12);
        cairo_fill(cr);
        if (kind == 1)
            hatch(cr, *lx, *ly, 12, 12);
        set(cr, FG);
        cairo_set_line_width(cr, 1);
        cairo_rectangle(cr, *lx + 0.5, *ly + 0.5, 11, 11);
        cairo_stroke(cr);
    }
    msr__seg_text(cr, *lx + 16, *ly + 10, 10, FG, name);
    *lx += 16 + tw + 14;
}

double msr__seg_legend(cairo_t *cr, const msr_seg_style *st, double x, double y, double w)
{
    double lx = x, ly = y;
    const ms_heap *hp = st->heap;
    if (st->by == MSR_SEG_BY_SITE && st->snap && hp) {
        /* The sites holding the most block bytes in this state, largest first. */
        site_bytes *sb = malloc((hp->n_blocks ? hp->n_blocks : 1) * sizeof *sb);
        size_t n = 0;
        for (size_t q = 0; sb && q < hp->n_blocks; q++) {
            const ms_heap_block *b = &hp->blocks[q];
            if (b->state == MS_BLOCK_INACTIVE)
                continue;
            sb[n++] = (site_bytes){b->stack != MS_NO_STACK ? ms_stack_site(st->snap, b->stack)
                                                           : UINT32_MAX,
                                   b->size};
        }
        if (sb && n > 1)
            qsort(sb, n, sizeof *sb, site_cmp);
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (m && sb[m - 1].site == sb[i].site)
                sb[m - 1].bytes += sb[i].bytes;
            else
                sb[m++] = sb[i];
        }
        if (sb && m > 1)
            qsort(sb, m, sizeof *sb, bytes_desc);
        for (size_t i = 0; i < m && i < 8; i++) {
            char name[MSR_CHART_TEXT + 40], bytes[32], label[MSR_CHART_TEXT];
            msr__site_label(st->snap, sb[i].site, label, sizeof label);
            ms_format_bytes((int64_t)sb[i].bytes, bytes, sizeof bytes);
            snprintf(name, sizeof name, "%s (%s)", label, bytes);
            entry(cr, x, w, &lx, &ly, 0, msr__site_rgb(st->snap, sb[i].site), name);
        }
        if (m > 8) {
            char more[64];
            snprintf(more, sizeof more, "%zu more sites, each its own colour", m - 8);
            msr__seg_text(cr, lx, ly + 10, 10, (msr_chart_rgb){0.45, 0.45, 0.5}, more);
            lx += msr__seg_text_width(cr, 10, more) + 14;
        }
        free(sb);
    } else if (st->block_category) {
        for (int c = 0; c < MS_CAT_COUNT; c++) {
            char name[32];
            msr__category_label((ms_category)c, name, sizeof name);
            entry(cr, x, w, &lx, &ly, 0, msr__category_rgb((ms_category)c), name);
        }
    } else {
        entry(cr, x, w, &lx, &ly, 0, ALLOCATED, "allocated");
    }
    entry(cr, x, w, &lx, &ly, 3, PENDING, "pending free (dashed)");
    entry(cr, x, w, &lx, &ly, 1, ALLOCATED, "free");
    if (st->block_leak)
        entry(cr, x, w, &lx, &ly, 2, LEAK, "made by a leaking site");
    return ly + 18 - y;
}
