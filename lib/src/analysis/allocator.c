/* The caching allocator's segments and blocks at any event, rebuilt by replaying the
 * trace forward with the allocator's own rules (c10/cuda/CUDACachingAllocator.cpp):
 *
 *   - a request's block is its size rounded (ms_alloc_block_size);
 *   - an allocation takes the start of a free block, and the rest of that block becomes
 *     a free block of its own only when the allocator would split it (small pool or
 *     expandable segment: 512 B or more left; large pool: more than 1 MiB left and the
 *     request below max_split_size) — otherwise the block handed out is the whole free
 *     block, larger than the rounding;
 *   - a freed block merges with free neighbours in its segment;
 *   - segments come and go with segment_alloc/segment_free; an expandable segment grows
 *     and shrinks by segment_map/segment_unmap, and each contiguous mapped run is one
 *     segment in torch.cuda.memory_snapshot(), so it is one here.
 *
 * The trace gives the address of every block, so no placement policy has to be guessed:
 * replaying forward from the right starting state is exact. The starting state is what
 * the trace cannot explain: segments the final state holds that the trace did not create
 * (replayed backward from the final `segments`), and allocations alive before the first
 * kept event (freed in the trace without an alloc, or active at the end without one),
 * built in allocator_start.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "alloc_internal.h"
#include "internal.h"
#include "memsnap/allocator.h"

#define MIN_BLOCK ((uint64_t)512)
#define LARGE_SPLIT_MIN ((uint64_t)1 << 20) /* kSmallSize: large remainders above it split */

/* ------------------------------------------------------------------ rounding */

/* roundup_power2_divisions as the settings text gives it: "{1: 0, 2: 4, ...}", one entry
 * per power-of-two interval starting at 1 MiB. Returns false when it is not that shape. */
static bool parse_divisions(const char *text, uint64_t div[16])
{
    memset(div, 0, 16 * sizeof *div);
    const char *p = text;
    int k = 0;
    while (*p && k < 16) {
        const char *colon = strchr(p, ':');
        if (!colon)
            break;
        char *end;
        unsigned long long v = strtoull(colon + 1, &end, 10);
        if (end == colon + 1)
            return false;
        div[k++] = v;
        p = end;
    }
    return k > 0;
}

static const char *setting(const ms_snapshot *s, const char *key)
{
    size_t n;
    const ms_setting *st = s ? ms_snapshot_settings(s, &n) : NULL;
    for (size_t i = 0; st && i < n; i++)
        if (!strcmp(ms_snapshot_string(s, st[i].key), key))
            return ms_snapshot_string(s, st[i].value);
    return NULL;
}

static unsigned log2_floor(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

uint64_t ms__heap_round_with(const uint64_t div[16], bool have_div, uint64_t size)
{
    if (size < MIN_BLOCK)
        return MIN_BLOCK;
    uint64_t d = 0;
    if (have_div) {
        unsigned log_size = log2_floor(size), start = 20; /* intervals start at 1 MiB */
        unsigned idx = log_size > start ? log_size - start : 0;
        d = div[idx < 16 ? idx : 15];
    }
    if (d > 1 && size > MIN_BLOCK * d) {
        /* roundup_power2_next_division() */
        if ((size & (size - 1)) == 0)
            return size;
        uint64_t floor2 = (uint64_t)1 << log2_floor(size);
        uint64_t step = floor2 >> log2_floor(d);
        if (step == 0)
            return floor2 << 1;
        uint64_t lo = size & ~(step - 1);
        return lo == size ? size : lo + step;
    }
    return (size + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
}

bool ms__heap_divisions(const ms_snapshot *s, uint64_t div[16])
{
    const char *t = setting(s, "roundup_power2_divisions");
    if (t && parse_divisions(t, div))
        return true;
    memset(div, 0, 16 * sizeof *div);
    return false;
}

uint64_t ms_alloc_block_size(const ms_snapshot *s, uint64_t size)
{
    uint64_t div[16];
    bool have = ms__heap_divisions(s, div);
    return ms__heap_round_with(div, have, size);
}

/* ------------------------------------------------------------------ state */

static bool is_free(const blk *b)
{
    return b->state == MS_BLOCK_INACTIVE;
}

/* The address index: every live block in a treap ordered by (address, id), so that the
 * block holding an address is found in O(log n) (carve) instead of walking the segment's
 * block list, which made a trace of allocations placed inside free blocks quadratic.
 * Priorities are a hash of the id (ms__heap_prio): deterministic, and not steerable by
 * the file. Only carve reads it, which a consistent trace needs only while the starting
 * state is built: it is kept then, and again from the first carve after that on. */
static bool idx_less(const hsim *x, uint32_t a, uint32_t b)
{
    return x->b[a].addr < x->b[b].addr || (x->b[a].addr == x->b[b].addr && a < b);
}

/* Splits t into the nodes before n (*l) and after it (*r). */
static void idx_split(hsim *x, uint32_t t, uint32_t n, uint32_t *l, uint32_t *r)
{
    while (t != NIL) {
        if (idx_less(x, t, n)) {
            *l = t;
            l = &x->kid[t].r;
            t = x->kid[t].r;
        } else {
            *r = t;
            r = &x->kid[t].l;
            t = x->kid[t].l;
        }
    }
    *l = *r = NIL;
}

static uint32_t idx_merge(hsim *x, uint32_t l, uint32_t r)
{
    uint32_t root = NIL, *at = &root;
    while (l != NIL && r != NIL) {
        if (ms__heap_prio(l) > ms__heap_prio(r)) {
            *at = l;
            at = &x->kid[l].r;
            l = x->kid[l].r;
        } else {
            *at = r;
            at = &x->kid[r].l;
            r = x->kid[r].l;
        }
    }
    *at = l != NIL ? l : r;
    return root;
}

static uint32_t idx_insert(hsim *x, uint32_t root, uint32_t n)
{
    uint32_t *at = &root, p = ms__heap_prio(n);
    while (*at != NIL && ms__heap_prio(*at) >= p)
        at = idx_less(x, n, *at) ? &x->kid[*at].l : &x->kid[*at].r;
    idx_split(x, *at, n, &x->kid[n].l, &x->kid[n].r);
    *at = n;
    return root;
}

static uint32_t idx_erase(hsim *x, uint32_t root, uint32_t n)
{
    uint32_t *at = &root;
    while (*at != NIL && *at != n)
        at = idx_less(x, n, *at) ? &x->kid[*at].l : &x->kid[*at].r;
    if (*at == n)
        *at = idx_merge(x, x->kid[n].l, x->kid[n].r);
    return root;
}

/* The live block with the largest start at or below addr, or NIL. */
static uint32_t idx_floor(const hsim *x, uint64_t addr)
{
    uint32_t best = NIL;
    for (uint32_t t = x->root; t != NIL;) {
        if (x->b[t].addr <= addr) {
            best = t;
            t = x->kid[t].r;
        } else {
            t = x->kid[t].l;
        }
    }
    return best;
}

/* Starts the address index over every live block; false when out of memory. */
static bool idx_start(hsim *x)
{
    if (!ms__grow((void **)&x->kid, &x->capkid, x->nb ? x->nb : 1, sizeof *x->kid))
        return false;
    x->root = NIL;
    x->indexed = true;
    for (uint32_t k = 0; k < x->nb; k++)
        if (x->b[k].state != BLK_DEAD)
            x->root = idx_insert(x, x->root, k);
    return true;
}

static void idx_stop(hsim *x)
{
    free(x->kid);
    x->kid = NULL;
    x->capkid = 0;
    x->root = NIL;
    x->indexed = false;
}

/* ------------------------------------------------------------------ largest free block */

static void lh_sift_up(struct lh_entry *h, size_t k)
{
    while (k > 0) {
        size_t p = (k - 1) / 2;
        if (h[p].size >= h[k].size)
            break;
        struct lh_entry t = h[p];
        h[p] = h[k];
        h[k] = t;
        k = p;
    }
}

static void lh_sift_down(struct lh_entry *h, size_t n, size_t k)
{
    for (;;) {
        size_t l = 2 * k + 1, r = l + 1, m = k;
        if (l < n && h[l].size > h[m].size)
            m = l;
        if (r < n && h[r].size > h[m].size)
            m = r;
        if (m == k)
            return;
        struct lh_entry t = h[m];
        h[m] = h[k];
        h[k] = t;
        k = m;
    }
}

/* An entry stands for a free block of its size while block `id` is live, free and that
 * large; a reused id that happens to match is a free block of that size all the same. */
static bool lh_valid(const hsim *x, struct lh_entry e)
{
    return e.id < x->nb && x->b[e.id].state == MS_BLOCK_INACTIVE && x->b[e.id].size == e.size;
}

/* Drops the stale entries, so the heap holds at most about twice the free blocks. */
static void lh_compact(hsim *x)
{
    size_t m = 0;
    for (size_t k = 0; k < x->nlh; k++)
        if (lh_valid(x, x->lh[k]))
            x->lh[m++] = x->lh[k];
    x->nlh = m;
    for (size_t k = m / 2; k-- > 0;)
        lh_sift_down(x->lh, m, k);
}

/* Block i became free or changed size while free. */
static void lh_push(hsim *x, uint32_t i)
{
    if (!x->track || x->b[i].state != MS_BLOCK_INACTIVE)
        return;
    size_t live_free = x->nb - x->nfreeb - x->active_count;
    if (x->nlh >= 2 * live_free + 1024)
        lh_compact(x);
    if (!ms__grow((void **)&x->lh, &x->caplh, x->nlh + 1, sizeof *x->lh)) {
        x->nomem = true;
        return;
    }
    x->lh[x->nlh] = (struct lh_entry){x->b[i].size, i};
    lh_sift_up(x->lh, x->nlh++);
}

uint64_t ms__heap_largest_free(hsim *x)
{
    while (x->nlh && !lh_valid(x, x->lh[0])) {
        x->lh[0] = x->lh[--x->nlh];
        lh_sift_down(x->lh, x->nlh, 0);
    }
    return x->nlh ? x->lh[0].size : 0;
}

/* The totals and the free blocks' heap from the blocks as they are (after the starting
 * state, which sets states directly). */
bool ms__heap_recount(hsim *x)
{
    x->reserved = x->active_bytes = x->active_count = 0;
    x->nlh = 0;
    for (uint32_t i = 0; i < x->nb; i++) {
        if (x->b[i].state == BLK_DEAD)
            continue;
        x->reserved += x->b[i].size; /* the blocks tile the live segments */
        if (x->b[i].state != MS_BLOCK_INACTIVE) {
            x->active_bytes += x->b[i].size;
            x->active_count++;
        }
    }
    for (uint32_t i = 0; i < x->nb; i++)
        if (x->b[i].state == MS_BLOCK_INACTIVE)
            lh_push(x, i);
    return !x->nomem;
}

/* ------------------------------------------------------------------ blocks */

/* Room for `need` blocks in b and in the arrays kept beside it. */
static bool blk_reserve(hsim *x, size_t need)
{
    return need < NIL && ms__grow((void **)&x->b, &x->capb, need, sizeof *x->b) &&
           (!x->keep_who || ms__grow((void **)&x->who, &x->capwho, need, sizeof *x->who)) &&
           (!x->indexed || ms__grow((void **)&x->kid, &x->capkid, need, sizeof *x->kid));
}

/* Room for block nb in b and in the arrays kept beside it. */
static bool blk_room(hsim *x)
{
    return blk_reserve(x, x->nb + 1);
}

static void who_clear(hsim *x, uint32_t i)
{
    if (x->keep_who)
        x->who[i] = (blk_who){0, -1, MS_NO_STACK};
}

static uint32_t new_blk(hsim *x, uint64_t addr, uint64_t size, uint32_t sid)
{
    uint32_t i;
    if (x->nfreeb) {
        i = x->freeb[--x->nfreeb];
    } else {
        if (!blk_room(x)) {
            x->nomem = true;
            return NIL;
        }
        i = (uint32_t)x->nb++;
    }
    x->b[i] = (blk){addr, size, NIL, NIL, sid, MS_BLOCK_INACTIVE, false};
    who_clear(x, i);
    if (!ms__addrmap_put(&x->map, addr, i)) {
        x->nomem = true;
        return NIL;
    }
    if (x->indexed)
        x->root = idx_insert(x, x->root, i);
    lh_push(x, i);
    return i;
}

static void del_blk(hsim *x, uint32_t i)
{
    if (x->b[i].state != MS_BLOCK_INACTIVE) {
        x->active_bytes -= x->b[i].size;
        x->active_count--;
    }
    x->b[i].state = BLK_DEAD;
    if (x->indexed)
        x->root = idx_erase(x, x->root, i);
    size_t j = ms__addrmap_find(&x->map, x->b[i].addr);
    if (j != SIZE_MAX && x->map.vals[j] == i)
        ms__addrmap_remove_at(&x->map, j);
    if (!ms__grow((void **)&x->freeb, &x->capfreeb, x->nfreeb + 1, sizeof *x->freeb)) {
        x->nomem = true;
        return;
    }
    x->freeb[x->nfreeb++] = i;
}

/* Links block n right after block i in i's segment. */
static void link_after(hsim *x, uint32_t i, uint32_t n)
{
    blk *b = x->b;
    b[n].prev = i;
    b[n].next = b[i].next;
    b[n].seg = b[i].seg;
    if (b[i].next != NIL)
        b[b[i].next].prev = n;
    else
        x->g[b[i].seg].last = n;
    b[i].next = n;
}

static void unlink_blk(hsim *x, uint32_t i)
{
    blk *b = x->b;
    seg *g = &x->g[b[i].seg];
    if (b[i].prev != NIL)
        b[b[i].prev].next = b[i].next;
    else
        g->first = b[i].next;
    if (b[i].next != NIL)
        b[b[i].next].prev = b[i].prev;
    else
        g->last = b[i].prev;
}

/* Frees block i and merges it with free neighbours; returns the merged block. */
static uint32_t free_and_merge(hsim *x, uint32_t i)
{
    blk *b = x->b;
    if (b[i].state != MS_BLOCK_INACTIVE) {
        x->active_bytes -= b[i].size;
        x->active_count--;
    }
    b[i].state = MS_BLOCK_INACTIVE;
    b[i].estimated = false;
    who_clear(x, i);
    uint32_t n = b[i].next;
    if (n != NIL && is_free(&b[n])) {
        b[i].size += b[n].size;
        unlink_blk(x, n);
        del_blk(x, n);
    }
    uint32_t p = b[i].prev;
    if (p != NIL && is_free(&b[p])) {
        b[p].size += b[i].size;
        unlink_blk(x, i);
        del_blk(x, i);
        lh_push(x, p);
        return p;
    }
    lh_push(x, i);
    return i;
}

/* The live segments, in a treap by (start, id) like the blocks: a trace that makes
 * tens of thousands of segments finds, adds and drops each in O(log n). */
static bool seg_less(const hsim *x, uint32_t a, uint32_t b)
{
    return x->g[a].start < x->g[b].start || (x->g[a].start == x->g[b].start && a < b);
}

/* The live segment with the largest start at or below addr, or NIL. */
static uint32_t seg_floor(const hsim *x, uint64_t addr)
{
    uint32_t best = NIL;
    for (uint32_t t = x->groot; t != NIL;) {
        if (x->g[t].start <= addr) {
            best = t;
            t = x->g[t].tr;
        } else {
            t = x->g[t].tl;
        }
    }
    return best;
}

/* Live segment containing addr, or NIL. */
static uint32_t seg_find(const hsim *x, uint64_t addr)
{
    uint32_t id = seg_floor(x, addr);
    return id != NIL && addr < x->g[id].end ? id : NIL;
}

/* Whether [a, e) overlaps a live segment. Live segments are disjoint, so if any does,
 * the last one starting before e does. */
static bool seg_overlaps(const hsim *x, uint64_t a, uint64_t e)
{
    if (e <= a)
        return false;
    uint32_t id = seg_floor(x, e - 1);
    return id != NIL && x->g[id].end > a;
}

static void ord_insert(hsim *x, uint32_t n)
{
    uint32_t *at = &x->groot, p = ms__heap_prio(n);
    while (*at != NIL && ms__heap_prio(*at) >= p)
        at = seg_less(x, n, *at) ? &x->g[*at].tl : &x->g[*at].tr;
    uint32_t t = *at, *l = &x->g[n].tl, *r = &x->g[n].tr;
    while (t != NIL) { /* split the subtree at n */
        if (seg_less(x, t, n)) {
            *l = t;
            l = &x->g[t].tr;
            t = x->g[t].tr;
        } else {
            *r = t;
            r = &x->g[t].tl;
            t = x->g[t].tl;
        }
    }
    *l = *r = NIL;
    *at = n;
    x->nord++;
}

static void ord_remove(hsim *x, uint32_t n)
{
    uint32_t *at = &x->groot;
    while (*at != NIL && *at != n)
        at = seg_less(x, n, *at) ? &x->g[*at].tl : &x->g[*at].tr;
    if (*at != n)
        return;
    uint32_t l = x->g[n].tl, r = x->g[n].tr;
    while (l != NIL && r != NIL) { /* merge its subtrees */
        if (ms__heap_prio(l) > ms__heap_prio(r)) {
            *at = l;
            at = &x->g[l].tr;
            l = x->g[l].tr;
        } else {
            *at = r;
            at = &x->g[r].tl;
            r = x->g[r].tl;
        }
    }
    *at = l != NIL ? l : r;
    x->nord--;
}

/* x->ord: the live segments by start. */
bool ms__heap_ord_fill(hsim *x)
{
    if (!ms__grow((void **)&x->ord, &x->capord, x->nord + 1, sizeof *x->ord))
        return false;
    size_t k = 0, depth = 0;
    uint32_t *stack = malloc((x->nord + 1) * sizeof *stack);
    if (!stack)
        return false;
    for (uint32_t t = x->groot; (t != NIL || depth) && k < x->nord;) {
        if (t != NIL) {
            stack[depth++] = t;
            t = x->g[t].tl;
        } else {
            t = stack[--depth];
            x->ord[k++] = t;
            t = x->g[t].tr;
        }
    }
    free(stack);
    return true;
}

static uint32_t new_seg(hsim *x, uint64_t start, uint64_t end, uint64_t stream_raw, bool exp)
{
    if (x->ng >= NIL - 1 || !ms__grow((void **)&x->g, &x->capg, x->ng + 1, sizeof *x->g)) {
        x->nomem = true;
        return NIL;
    }
    uint32_t id = (uint32_t)x->ng++;
    x->g[id] = (seg){start, end, stream_raw, NIL, NIL, exp, 0, NIL, NIL};
    uint32_t bi = new_blk(x, start, end - start, id);
    if (bi == NIL)
        return NIL;
    x->g[id].first = x->g[id].last = bi;
    ord_insert(x, id);
    return id;
}

/* Appends segment `r`'s blocks to segment `l` (r starts where l ends) and drops r. */
static void seg_join(hsim *x, uint32_t l, uint32_t r)
{
    seg *L = &x->g[l], *R = &x->g[r];
    for (uint32_t i = R->first; i != NIL; i = x->b[i].next)
        x->b[i].seg = l;
    uint32_t tail = L->last, head = R->first;
    x->b[tail].next = head;
    x->b[head].prev = tail;
    L->last = R->last;
    L->end = R->end;
    if (!L->pool)
        L->pool = R->pool;
    ord_remove(x, r);
    if (is_free(&x->b[tail]) && is_free(&x->b[head])) {
        x->b[tail].size += x->b[head].size;
        unlink_blk(x, head);
        del_blk(x, head);
        lh_push(x, tail);
    }
}

/* cudaMalloc'd segment, or pages mapped into an expandable segment. */
void ms__heap_seg_add(hsim *x, uint64_t addr, uint64_t size, uint64_t stream_raw, bool exp)
{
    if (size == 0 || addr + size < addr || seg_overlaps(x, addr, addr + size)) {
        x->bad++;
        return;
    }
    uint32_t id = new_seg(x, addr, addr + size, stream_raw, exp);
    if (id == NIL)
        return;
    x->reserved += size;
    if (!exp)
        return;
    /* A mapped run continues the run before it and joins the one after it. */
    uint32_t before = addr ? seg_find(x, addr - 1) : NIL;
    if (before != NIL && x->g[before].expandable && x->g[before].stream_raw == stream_raw) {
        seg_join(x, before, id);
        id = before;
    }
    uint32_t after = seg_find(x, addr + size);
    if (after != NIL && after != id && x->g[after].start == addr + size &&
        x->g[after].expandable && x->g[after].stream_raw == stream_raw)
        seg_join(x, id, after);
}

static void drop_seg(hsim *x, uint32_t id)
{
    for (uint32_t i = x->g[id].first, n; i != NIL; i = n) {
        n = x->b[i].next;
        del_blk(x, i);
    }
    ord_remove(x, id);
}

/* cudaFree of a whole segment. */
static void seg_free(hsim *x, uint64_t addr, uint64_t size)
{
    uint32_t id = seg_find(x, addr);
    if (id == NIL || x->g[id].start != addr) {
        x->bad++;
        return;
    }
    if (x->g[id].end != addr + size || x->g[id].first != x->g[id].last ||
        !is_free(&x->b[x->g[id].first]))
        x->bad++; /* a segment is only released when all of it is one free block */
    x->reserved -= x->g[id].end - x->g[id].start;
    drop_seg(x, id);
}

/* Pages [addr, addr+size) unmapped from an expandable segment: the run splits in two. */
static void seg_unmap(hsim *x, uint64_t addr, uint64_t size)
{
    uint32_t id = seg_find(x, addr);
    if (id == NIL) {
        x->bad++;
        return;
    }
    seg *g = &x->g[id];
    uint64_t a = addr, e = addr + size;
    if (e > g->end || e < a) {
        x->bad++;
        e = g->end;
    }
    x->reserved -= e - a;
    uint32_t lf = NIL, ll = NIL, rf = NIL, rl = NIL;
#define APPEND(first, last, i)                                                          \
    do {                                                                                \
        x->b[i].prev = last;                                                            \
        x->b[i].next = NIL;                                                             \
        if (last != NIL)                                                                \
            x->b[last].next = i;                                                        \
        else                                                                            \
            first = i;                                                                  \
        last = i;                                                                       \
    } while (0)
    for (uint32_t i = g->first, n; i != NIL; i = n) {
        n = x->b[i].next;
        uint64_t bs = x->b[i].addr, be = bs + x->b[i].size;
        if (be <= a) {
            APPEND(lf, ll, i);
        } else if (bs >= e) {
            APPEND(rf, rl, i);
        } else {
            if (!is_free(&x->b[i]))
                x->bad++;
            uint32_t right = NIL;
            if (be > e) {
                right = new_blk(x, e, be - e, id);
                if (right == NIL)
                    return;
            }
            if (bs < a) {
                if (!is_free(&x->b[i])) {
                    x->active_bytes -= x->b[i].size;
                    x->active_count--;
                }
                x->b[i].size = a - bs;
                x->b[i].state = MS_BLOCK_INACTIVE;
                lh_push(x, i);
                APPEND(lf, ll, i);
            } else {
                del_blk(x, i);
            }
            if (right != NIL)
                APPEND(rf, rl, right);
        }
    }
#undef APPEND
    uint64_t old_end = g->end;
    uint64_t stream_raw = g->stream_raw;
    int8_t pool = g->pool;
    if (lf != NIL) {
        g->first = lf;
        g->last = ll;
        g->end = a;
    } else {
        ord_remove(x, id);
    }
    if (rf != NIL) {
        if (x->ng >= NIL - 1 || !ms__grow((void **)&x->g, &x->capg, x->ng + 1, sizeof *x->g)) {
            x->nomem = true;
            return;
        }
        uint32_t r = (uint32_t)x->ng++;
        x->g[r] = (seg){e, old_end, stream_raw, rf, rl, true, pool, NIL, NIL};
        for (uint32_t i = rf; i != NIL; i = x->b[i].next)
            x->b[i].seg = r;
        ord_insert(x, r);
    }
}

/* A block alive before the trace began, whose size was estimated as its request rounded:
 * in a large pool's fixed segment the allocator splits a free rest off only when it is
 * larger than 1 MiB (do_alloc), so no free block of 1 MiB or less follows a block there
 * unless the block took it. Such a rest after an estimated block was part of it. */
void ms__heap_absorb_rest(hsim *x, uint32_t i)
{
    blk *b = x->b;
    if (!b[i].estimated || is_free(&b[i]) || b[i].size <= MS_SMALL_REQUEST_MAX ||
        x->g[b[i].seg].expandable)
        return;
    uint32_t n = b[i].next;
    if (n == NIL || !is_free(&b[n]) || b[n].size > LARGE_SPLIT_MIN)
        return;
    b[i].size += b[n].size;
    unlink_blk(x, n);
    del_blk(x, n);
}

/* Makes [addr, addr+size) a block of its own inside the free block that holds it;
 * returns it, or NIL when no free block holds it. */
uint32_t ms__heap_carve(hsim *x, uint64_t addr, uint64_t size)
{
    uint32_t sid = seg_find(x, addr);
    if (sid == NIL)
        return NIL;
    /* The first block of the segment that ends after addr: the blocks tile the segment
     * in address order, so it is the one starting at or below addr (past any empty block
     * a zero-size request left there). */
    /* The first carve since the starting state (an event that contradicts the rebuilt
     * addresses): index the live blocks, and keep them indexed from now on. */
    if (!x->indexed && !idx_start(x)) {
        x->nomem = true;
        return NIL;
    }
    uint32_t i = idx_floor(x, addr);
    if (i == NIL || x->b[i].seg != sid)
        i = x->g[sid].first;
    while (i != NIL && x->b[i].addr + x->b[i].size <= addr)
        i = x->b[i].next;
    if (i == NIL || !is_free(&x->b[i]) || addr + size > x->b[i].addr + x->b[i].size)
        return NIL;
    if (x->b[i].addr < addr) {
        uint64_t end = x->b[i].addr + x->b[i].size;
        x->b[i].size = addr - x->b[i].addr;
        lh_push(x, i);
        uint32_t n = new_blk(x, addr, end - addr, sid);
        if (n == NIL)
            return NIL;
        link_after(x, i, n);
        i = n;
    }
    if (x->b[i].size > size) {
        uint32_t n = new_blk(x, addr + size, x->b[i].size - size, sid);
        if (n == NIL)
            return NIL;
        x->b[i].size = size;
        link_after(x, i, n);
        lh_push(x, i);
    }
    return i;
}

static void do_alloc(hsim *x, uint64_t addr, uint64_t req, int64_t event, uint32_t stack)
{
    uint64_t want = ms__heap_round_with(x->div, x->have_div, req);
    if (x->have_div && want != (req + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK)
        x->div_used = true;
    uint32_t i = ms__addrmap_get(&x->map, addr);
    if (i == NIL || !is_free(&x->b[i])) {
        /* Not the start of a free block: the addresses contradict what came before (or
         * the block's earlier life ended unseen). Take what holds the address. */
        x->bad++;
        if (i != NIL)
            i = free_and_merge(x, i);
        i = ms__heap_carve(x, addr, want);
        if (i == NIL)
            return;
    }
    blk *b = &x->b[i];
    seg *g = &x->g[b->seg];
    bool small = want <= MS_SMALL_REQUEST_MAX;
    if (!g->pool)
        g->pool = small ? 1 : 2;
    if (b->size < want) {
        x->bad++;
    } else {
        uint64_t rest = b->size - want;
        bool split = (small || g->expandable) ? rest >= MIN_BLOCK
                                              : (want < x->max_split && rest > LARGE_SPLIT_MIN);
        if (split) {
            uint32_t n = new_blk(x, addr + want, rest, b->seg);
            if (n == NIL)
                return;
            b = &x->b[i];
            b->size = want;
            link_after(x, i, n);
        }
    }
    if (is_free(b)) {
        x->active_bytes += b->size;
        x->active_count++;
    }
    b->state = MS_BLOCK_ACTIVE_ALLOCATED;
    b->estimated = false;
    if (x->keep_who)
        x->who[i] = (blk_who){req, event, stack};
}

void ms__heap_release(hsim *x)
{
    free(x->b);
    free(x->who);
    free(x->kid);
    free(x->freeb);
    free(x->g);
    free(x->ord);
    free(x->lh);
    free(x->fseg);
    ms__addrmap_free(&x->map);
}

/* ------------------------------------------------------------------ replay */

void ms__heap_step(hsim *x, const ms_trace *tr, size_t i)
{
    uint64_t addr = tr->addr[i], size = tr->size[i];
    switch (tr->action[i]) {
    case MS_ACT_ALLOC:
    case MS_ACT_FREE_REQUESTED:
    case MS_ACT_FREE_COMPLETED:
    case MS_ACT_SEGMENT_ALLOC:
    case MS_ACT_SEGMENT_MAP:
    case MS_ACT_SEGMENT_FREE:
    case MS_ACT_SEGMENT_UNMAP:
        x->changes++;
        break;
    default:
        return;
    }
    switch (tr->action[i]) {
    case MS_ACT_ALLOC:
        do_alloc(x, addr, size, (int64_t)i, tr->stack[i]);
        break;
    case MS_ACT_FREE_REQUESTED: {
        uint32_t b = ms__addrmap_get(&x->map, addr);
        if (b != NIL && x->b[b].state == MS_BLOCK_ACTIVE_ALLOCATED)
            x->b[b].state = MS_BLOCK_ACTIVE_PENDING_FREE;
        else
            x->bad++;
        break;
    }
    case MS_ACT_FREE_COMPLETED: {
        uint32_t b = ms__addrmap_get(&x->map, addr);
        if (b == NIL || is_free(&x->b[b]))
            x->bad++;
        else
            free_and_merge(x, b);
        break;
    }
    case MS_ACT_SEGMENT_ALLOC:
        ms__heap_seg_add(x, addr, size, ms_snapshot_stream(x->s, tr->stream[i]), false);
        break;
    case MS_ACT_SEGMENT_MAP:
        ms__heap_seg_add(x, addr, size, ms_snapshot_stream(x->s, tr->stream[i]), true);
        break;
    case MS_ACT_SEGMENT_FREE:
        seg_free(x, addr, size);
        break;
    case MS_ACT_SEGMENT_UNMAP:
        seg_unmap(x, addr, size);
        break;
    default:
        break;
    }
}

int ms__heap_by_final_address(const void *a, const void *b)
{
    const struct fseg_entry *x = a, *y = b;
    return MS__CMP2(x->address, y->address, x->index, y->index); /* the file's first wins */
}

/* The replay's state before the trace's first event: the settings, the starting
 * segments and allocations (allocator_start.c), the running totals; `keep` says what
 * else (HEAP_TRACK, HEAP_WHO). */
int ms__heap_begin(hsim *x, const ms_snapshot *s, int device, unsigned keep, ms_error *err)
{
    const ms_trace *tr = ms_snapshot_trace(s, device);
    memset(x, 0, sizeof *x);
    x->s = s;
    x->root = NIL;
    x->groot = NIL;
    x->track = (keep & HEAP_TRACK) != 0;
    x->keep_who = (keep & HEAP_WHO) != 0;
    x->have_div = ms__heap_divisions(s, x->div);
    x->max_split = UINT64_MAX;
    const char *t = setting(s, "max_split_size");
    if (t) {
        char *end;
        long long v = strtoll(t, &end, 10);
        if (end != t && v > 0)
            x->max_split = (uint64_t)v;
    }
    size_t nseg_f;
    const ms_segment *fs = ms_snapshot_segments(s, &nseg_f);
    x->fseg = malloc((nseg_f ? nseg_f : 1) * sizeof *x->fseg);
    if (!x->fseg)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    for (size_t f = 0; f < nseg_f; f++)
        if (fs[f].device == device)
            x->fseg[x->nfseg++] = (struct fseg_entry){fs[f].address, f};
    if (x->nfseg > 1)
        qsort(x->fseg, x->nfseg, sizeof *x->fseg, ms__heap_by_final_address);
    /* `first` grows with the addresses the trace uses: sizing it by the event count
     * cleared tens of megabytes for a trace that reuses a few thousand addresses. */
    ms_addrmap first;
    memset(&first, 0, sizeof first);
    int rc = 0;
    /* A short trace gets small maps: a file of 65,536 one-event devices replays each. */
    size_t want = tr->n < 1024 ? tr->n : 1024;
    if (!ms__addrmap_init(&x->map, want) || !ms__addrmap_init(&first, want) || !idx_start(x))
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    /* Both are looked up only: their slot order reaches no output. */
    x->map.dense = first.dense = true;
    if (!rc)
        rc = ms__heap_build_start(x, tr, device, &first, err);
    ms__addrmap_free(&first);
    /* A consistent trace never carves after the start: the index is rebuilt on demand
     * (ms__heap_carve) rather than kept through millions of splits and merges. */
    idx_stop(x);
    /* Room for a block per event of the trace, reserved at once (an event of a
     * consistent trace makes at most one: a split's rest, or a segment): grown by
     * doubling from the start, each step copied the blocks into new pages beside the
     * old (the chunk is on the heap once the allocator's mmap threshold has risen),
     * which held 300,000 never-freed blocks' 9.6 MB twice over. Pages no block reaches
     * are never touched, so a trace whose allocations die young pays nothing for the
     * room; past it, the blocks grow as before. */
    size_t room = tr->n < NIL - 1 - x->nb ? x->nb + tr->n + 1 : NIL - 1;
    if (!rc && !blk_reserve(x, room))
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory rebuilding the allocator state");
    if (!rc && !ms__heap_recount(x))
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory rebuilding the allocator state");
    return rc;
}

