/* The page's tables (export_state.h): what the tiles refer to by local id (allocations,
 * stacks, frames, site labels, colours), numbered as the tiles are written and written
 * out once after them. Split from chart_export.c, which chooses the windows and writes
 * the page. */
#include "export_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_util.h"

static uint32_t colour_hash(uint32_t k)
{
    k ^= k >> 15;
    k *= 0x2c1b3c6dU;
    k ^= k >> 12;
    return k;
}

int64_t msr__exp_colour_id(exporter *x, msr_chart_rgb c)
{
    int r = (int)lround(fmin(fmax(c.r, 0), 1) * 255);
    int g = (int)lround(fmin(fmax(c.g, 0), 1) * 255);
    int b = (int)lround(fmin(fmax(c.b, 0), 1) * 255);
    uint32_t key = ((uint32_t)r << 16 | (uint32_t)g << 8 | (uint32_t)b) + 1;
    size_t mask = x->colour_slots - 1;
    size_t i = x->colour_slots ? colour_hash(key) & mask : 0;
    for (; x->colour_slots && x->colour_key[i]; i = (i + 1) & mask)
        if (x->colour_key[i] == key)
            return x->colour_id[i];
    char hex[8];
    snprintf(hex, sizeof hex, "#%02x%02x%02x", r, g, b);
    int64_t id = msr__st_id(&x->st, hex);
    if (x->st.bad)
        return id;
    if (2 * (x->n_colours + 1) > x->colour_slots) {
        size_t n = x->colour_slots ? 2 * x->colour_slots : 1024;
        uint32_t *k2 = calloc(n, sizeof *k2);
        int64_t *v2 = calloc(n, sizeof *v2);
        if (!k2 || !v2) {
            free(k2);
            free(v2);
            return id; /* uncached: still right */
        }
        for (size_t j = 0; j < x->colour_slots; j++) {
            if (!x->colour_key[j])
                continue;
            size_t h = colour_hash(x->colour_key[j]) & (n - 1);
            while (k2[h])
                h = (h + 1) & (n - 1);
            k2[h] = x->colour_key[j];
            v2[h] = x->colour_id[j];
        }
        free(x->colour_key);
        free(x->colour_id);
        x->colour_key = k2;
        x->colour_id = v2;
        x->colour_slots = n;
        mask = n - 1;
    }
    i = colour_hash(key) & mask;
    while (x->colour_key[i])
        i = (i + 1) & mask;
    x->colour_key[i] = key;
    x->colour_id[i] = id;
    x->n_colours++;
    return id;
}

/* Forgets the cached colours (the strings they name were dropped). */
void msr__exp_colours_forget(exporter *x)
{
    if (x->colour_slots)
        memset(x->colour_key, 0, x->colour_slots * sizeof *x->colour_key);
    x->n_colours = 0;
}

static bool push_u32(uint32_t **arr, size_t *n, size_t *cap, uint32_t v)
{
    if (!msr__render_grow((void **)arr, cap, *n + 1, sizeof **arr, 256))
        return false;
    (*arr)[(*n)++] = v;
    return true;
}

/* Gives `id` its number in the page's table the first time it is referred to: its entry
 * in of[] and local[id] (the number + 1). 1 when numbered now, 0 when it had one, -1 on
 * no memory (x->bad). */
static int number(exporter *x, uint32_t *local, uint32_t **of, size_t *n, size_t *cap,
                  uint32_t id)
{
    if (local[id])
        return 0;
    if (!push_u32(of, n, cap, id)) {
        x->bad = true;
        return -1;
    }
    local[id] = (uint32_t)*n;
    return 1;
}

int64_t msr__exp_frame_ref(exporter *x, uint32_t frame)
{
    if (frame == UINT32_MAX || frame >= x->n_frame_ids)
        return -1;
    int fresh = number(x, x->frame_local, &x->frame_of, &x->n_frames, &x->cap_frames, frame);
    if (fresh < 0)
        return -1;
    if (fresh) {
        /* Its texts now, so the size estimate sees them. */
        const ms_frame *f = ms_snapshot_frame(x->src->snap, frame);
        if (f) {
            msr__st_id(&x->st, ms_snapshot_string(x->src->snap, f->filename));
            msr__st_id(&x->st, ms_snapshot_string(x->src->snap, f->name));
        }
    }
    return (int64_t)x->frame_local[frame] - 1;
}

int64_t msr__exp_stack_ref(exporter *x, uint32_t stack)
{
    if (!x->src->snap || stack == MS_NO_STACK || stack >= x->n_stack_ids)
        return -1;
    int fresh = number(x, x->stack_local, &x->stack_of, &x->n_stacks, &x->cap_stacks, stack);
    if (fresh < 0)
        return -1;
    if (fresh) {
        size_t n = 0;
        const uint32_t *f = ms_snapshot_stack(x->src->snap, stack, &n);
        x->stack_varints += n + 1;
        for (size_t i = 0; i < n; i++)
            msr__exp_frame_ref(x, f[i]);
    }
    return (int64_t)x->stack_local[stack] - 1;
}

/* "file:line function" of an allocation's site, as tooltips name it. */
int64_t msr__exp_site_label(exporter *x, uint32_t stack)
{
    const ms_snapshot *snap = x->src->snap;
    uint32_t site = snap && stack != MS_NO_STACK ? ms_stack_site(snap, stack) : UINT32_MAX;
    size_t slot = site < x->n_frame_ids ? site : x->n_frame_ids;
    if (x->site_text && x->site_text[slot])
        return x->site_text[slot] - 1;
    char label[MSR_CHART_TEXT];
    if (!snap || site == UINT32_MAX || ms_site_format(snap, site, label, sizeof label) == 0)
        snprintf(label, sizeof label, "(no stack recorded)");
    int64_t id = msr__st_id(&x->st, label);
    if (x->site_text && !x->st.bad)
        x->site_text[slot] = id + 1;
    return id;
}

int64_t msr__exp_alloc_ref(exporter *x, size_t global)
{
    if (!x->alloc_local[global]) {
        if (!msr__render_grow((void **)&x->alloc_of, &x->cap_alloc_local, x->n_alloc_local + 1,
                             sizeof *x->alloc_of, 1024)) {
            x->bad = true;
            return 0;
        }
        x->alloc_of[x->n_alloc_local++] = global;
        x->alloc_local[global] = (uint32_t)x->n_alloc_local;
        msr__exp_stack_ref(x, x->src->tl->allocs[global].stack);
        msr__exp_site_label(x, x->src->tl->allocs[global].stack);
    }
    return (int64_t)x->alloc_local[global] - 1;
}

/* The tables the bands refer to: allocations, stacks, frames, strings. */
void msr__exp_write_tables(exporter *x, msr__sbuf *b)
{
    const ms_timeline *tl = x->src->tl;
    const ms_trace *tr = x->src->trace;
    const ms_snapshot *snap = x->src->snap;
    msr__sb_printf(b, ",\"allocs\":{\"n\":%zu", x->n_alloc_local);
    /* Columns of the table, each its own stream: index, size, times, stack, site. */
    int64_t prev = 0;
    for (size_t i = 0; i < x->n_alloc_local; i++) {
        msr__vb_s(&x->v, (int64_t)x->alloc_of[i] - prev);
        prev = (int64_t)x->alloc_of[i];
    }
    msr__sb_puts(b, ",\"idx\":");
    msr__sb_b64(b, &x->v);
    for (size_t i = 0; i < x->n_alloc_local; i++)
        msr__vb_u(&x->v, tl->allocs[x->alloc_of[i]].size);
    msr__sb_puts(b, ",\"size\":");
    msr__sb_b64(b, &x->v);
    for (int which = 0; which < 2; which++) {
        for (size_t i = 0; i < x->n_alloc_local; i++) {
            const ms_alloc *a = &tl->allocs[x->alloc_of[i]];
            int64_t e = which ? a->free_event : a->alloc_event;
            msr__vb_s(&x->v, e >= 0 && (size_t)e < tr->n ? tr->time_us[e] - x->t0 : -1);
        }
        msr__sb_puts(b, which ? ",\"tfree\":" : ",\"talloc\":");
        msr__sb_b64(b, &x->v);
    }
    for (size_t i = 0; i < x->n_alloc_local; i++)
        msr__vb_s(&x->v, msr__exp_stack_ref(x, tl->allocs[x->alloc_of[i]].stack));
    msr__sb_puts(b, ",\"stack\":");
    msr__sb_b64(b, &x->v);
    for (size_t i = 0; i < x->n_alloc_local; i++)
        msr__vb_u(&x->v, (uint64_t)msr__exp_site_label(x, tl->allocs[x->alloc_of[i]].stack));
    msr__sb_puts(b, ",\"site\":");
    msr__sb_b64(b, &x->v);
    if (x->o->alloc_category) {
        /* Category names are few; they go in the string table like any text. */
        for (size_t i = 0; i < x->n_alloc_local; i++) {
            uint8_t c = x->o->alloc_category[x->alloc_of[i]];
            msr__vb_s(&x->v, c < x->o->n_category_names
                            ? msr__st_id(&x->st, x->o->category_names[c])
                            : -1);
        }
        msr__sb_puts(b, ",\"cat\":");
        msr__sb_b64(b, &x->v);
    }
    /* Each allocation's compile context and user metadata (string id, -1 for none);
     * only a trace that carries some (ms_trace.compile_context) writes the column. */
    for (int which = 0; which < 2; which++) {
        const uint32_t *col = which ? tr->user_metadata : tr->compile_context;
        if (!col)
            continue;
        for (size_t i = 0; i < x->n_alloc_local; i++) {
            int64_t e = tl->allocs[x->alloc_of[i]].alloc_event;
            uint32_t id = e >= 0 && (size_t)e < tr->n ? col[e] : MS_NO_STRING;
            msr__vb_s(&x->v, id == MS_NO_STRING ? -1 : msr__st_id(&x->st, ms_snapshot_string(snap, id)));
        }
        msr__sb_puts(b, which ? ",\"umeta\":" : ",\"cctx\":");
        msr__sb_b64(b, &x->v);
    }
    /* The user's line behind each allocation made in a library's or the standard
     * library's code (ms_stack_user_frame, string id, -1 where the site is the user's line
     * or there is none); written only when some allocation has one. */
    bool any_user = false;
    for (size_t i = 0; i < x->n_alloc_local && snap && !any_user; i++) {
        uint32_t st = tl->allocs[x->alloc_of[i]].stack;
        uint32_t uf = st != MS_NO_STACK ? ms_stack_user_frame(snap, st) : UINT32_MAX;
        any_user = uf != UINT32_MAX && uf != ms_stack_site(snap, st);
    }
    /* Each user frame's text once (string id + 1, -1 for none; 0: not yet). */
    int64_t *user_text = any_user ? calloc(x->n_frame_ids + 1, sizeof *user_text) : NULL;
    for (size_t i = 0; any_user && i < x->n_alloc_local; i++) {
        uint32_t st = tl->allocs[x->alloc_of[i]].stack;
        uint32_t uf = st != MS_NO_STACK ? ms_stack_user_frame(snap, st) : UINT32_MAX;
        if (uf == UINT32_MAX || uf == ms_stack_site(snap, st)) {
            msr__vb_s(&x->v, -1);
            continue;
        }
        int64_t *memo = user_text && uf < x->n_frame_ids ? &user_text[uf] : NULL;
        if (!memo || !*memo) {
            char label[MSR_CHART_TEXT];
            int64_t id = ms_site_format(snap, uf, label, sizeof label) == 0
                             ? -1
                             : msr__st_id(&x->st, label);
            if (memo && !x->st.bad)
                *memo = id < 0 ? -1 : id + 1;
            msr__vb_s(&x->v, id);
            continue;
        }
        msr__vb_s(&x->v, *memo < 0 ? -1 : *memo - 1);
    }
    free(user_text);
    if (any_user) {
        msr__sb_puts(b, ",\"user\":");
        msr__sb_b64(b, &x->v);
    }
    msr__sb_puts(b, "}");

    /* Stacks: frame count then local frame ids, innermost first. */
    for (size_t i = 0; i < x->n_stacks; i++) {
        size_t n = 0;
        const uint32_t *f = ms_snapshot_stack(snap, x->stack_of[i], &n);
        msr__vb_u(&x->v, n);
        for (size_t k = 0; k < n; k++)
            msr__vb_s(&x->v, msr__exp_frame_ref(x, f[k]));
    }
    msr__sb_printf(b, ",\"stacks\":{\"n\":%zu,\"f\":", x->n_stacks);
    msr__sb_b64(b, &x->v);
    msr__sb_puts(b, "}");
    for (size_t i = 0; i < x->n_frames; i++) {
        const ms_frame *f = ms_snapshot_frame(snap, x->frame_of[i]);
        msr__vb_u(&x->v, f ? (uint64_t)msr__st_id(&x->st, ms_snapshot_string(snap, f->filename)) : 0);
        msr__vb_s(&x->v, f ? f->line : 0);
        msr__vb_u(&x->v, f ? (uint64_t)msr__st_id(&x->st, ms_snapshot_string(snap, f->name)) : 0);
    }
    msr__sb_printf(b, ",\"frames\":{\"n\":%zu,\"f\":", x->n_frames);
    msr__sb_b64(b, &x->v);
    msr__sb_puts(b, "}");
    msr__sb_puts(b, ",\"iters\":");
    for (size_t i = 0; i < x->o->n_iterations; i++) {
        msr__vb_s(&x->v, x->o->iterations[i].start_us - x->t0);
        msr__vb_s(&x->v, x->o->iterations[i].end_us - x->o->iterations[i].start_us);
    }
    msr__sb_b64(b, &x->v);
    msr__sb_puts(b, ",\"strings\":[");
    for (size_t i = 0; i < x->st.n; i++) {
        if (i)
            msr__sb_puts(b, ",");
        msr__sb_str(b, x->st.s[i]);
    }
    msr__sb_puts(b, "]");
}

/* For a site band's stack panel: each site's largest allocation speaks for it. */
int msr__exp_site_stacks(exporter *x, ms_error *err)
{
    const ms_snapshot *snap = x->src->snap;
    const ms_timeline *tl = x->src->tl;
    if (!snap || !x->n_frame_ids)
        return 0;
    uint64_t *best = calloc(x->n_frame_ids, sizeof *best);
    x->site_stack = calloc(x->n_frame_ids, sizeof *x->site_stack);
    if (!best || !x->site_stack) {
        free(best);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory for site stacks");
    }
    for (size_t f = 0; f < x->n_frame_ids; f++)
        x->site_stack[f] = MS_NO_STACK;
    for (size_t i = 0; i < tl->n_allocs; i++) {
        const ms_alloc *a = &tl->allocs[i];
        if (a->stack == MS_NO_STACK)
            continue;
        uint32_t site = ms_stack_site(snap, a->stack);
        if (site < x->n_frame_ids && (x->site_stack[site] == MS_NO_STACK || a->size > best[site])) {
            best[site] = a->size;
            x->site_stack[site] = a->stack;
        }
    }
    free(best);
    return 0;
}
