/* The allocator replay's starting state: what the trace cannot explain. Segments the
 * final state holds that the trace did not create come from replaying the final
 * `segments` backward over the trace's segment events (the address ranges below), and
 * allocations alive before the first kept event (freed in the trace without an alloc,
 * or active at the end without one) are carved into them. It runs once per replay and
 * is kept apart from allocator.c, which holds the per-event replay itself. */
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "alloc_internal.h"
#include "internal.h"
#include "memsnap/allocator.h"

typedef struct range {
    uint64_t start, end, stream_raw;
    bool exp;
    uint32_t l, r; /* children in the index (tidy ranges) */
} range;

/* The address ranges the backward pass keeps. While they are tidy (non-empty, pairwise
 * disjoint: what a consistent file gives) they sit in a treap by start, so undoing a
 * segment event costs O(log n) and a trace with tens of thousands of segment events
 * stays near-linear; the first empty or overlapping range (a file that contradicts
 * itself) turns them into the plain list they were, cut by a scan. `slots` holds the
 * tidy ones' free slots. */
typedef struct ranges {
    range *r;
    size_t n, cap;
    bool messy;
    uint32_t root;
    uint32_t *slots;
    size_t nslots, capslots;
} ranges;

static uint32_t r_floor(const ranges *rs, uint64_t a) /* last start <= a */
{
    uint32_t best = NIL;
    for (uint32_t t = rs->root; t != NIL;) {
        if (rs->r[t].start <= a) {
            best = t;
            t = rs->r[t].r;
        } else {
            t = rs->r[t].l;
        }
    }
    return best;
}

static uint32_t r_after(const ranges *rs, uint64_t a) /* first start > a */
{
    uint32_t best = NIL;
    for (uint32_t t = rs->root; t != NIL;) {
        if (rs->r[t].start > a) {
            best = t;
            t = rs->r[t].l;
        } else {
            t = rs->r[t].r;
        }
    }
    return best;
}

static void r_split(ranges *rs, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
    while (t != NIL) {
        if (rs->r[t].start < key) {
            *l = t;
            l = &rs->r[t].r;
            t = rs->r[t].r;
        } else {
            *r = t;
            r = &rs->r[t].l;
            t = rs->r[t].l;
        }
    }
    *l = *r = NIL;
}

static void r_insert(ranges *rs, uint32_t n)
{
    uint32_t *at = &rs->root, p = ms__heap_prio(n);
    while (*at != NIL && ms__heap_prio(*at) >= p)
        at = rs->r[n].start < rs->r[*at].start ? &rs->r[*at].l : &rs->r[*at].r;
    r_split(rs, *at, rs->r[n].start, &rs->r[n].l, &rs->r[n].r);
    *at = n;
}

static void r_erase(ranges *rs, uint32_t n)
{
    uint32_t *at = &rs->root;
    while (*at != NIL && *at != n)
        at = rs->r[n].start < rs->r[*at].start ? &rs->r[*at].l : &rs->r[*at].r;
    if (*at != n)
        return;
    uint32_t l = rs->r[n].l, r = rs->r[n].r;
    while (l != NIL && r != NIL) { /* merge */
        if (ms__heap_prio(l) > ms__heap_prio(r)) {
            *at = l;
            at = &rs->r[l].r;
            l = rs->r[l].r;
        } else {
            *at = r;
            at = &rs->r[r].l;
            r = rs->r[r].l;
        }
    }
    *at = l != NIL ? l : r;
}

/* The tidy ranges, by start, become the plain list. */
static bool ranges_go_messy(ranges *rs)
{
    size_t live = rs->n - rs->nslots, m = 0;
    range *list = malloc((live ? live : 1) * sizeof *list);
    if (!list)
        return false;
    uint32_t i = rs->root;
    while (i != NIL && rs->r[i].l != NIL)
        i = rs->r[i].l;
    for (; i != NIL && m < live; i = r_after(rs, rs->r[i].start))
        list[m++] = rs->r[i];
    free(rs->r);
    rs->r = list;
    rs->n = m;
    rs->cap = live ? live : 1;
    rs->nslots = 0;
    rs->messy = true;
    rs->root = NIL;
    return true;
}

static bool ranges_add(ranges *rs, range v)
{
    if (!rs->messy) {
        uint32_t f = r_floor(rs, v.start), k = r_after(rs, v.start);
        if ((v.end <= v.start || (f != NIL && rs->r[f].end > v.start) ||
             (k != NIL && rs->r[k].start < v.end)) &&
            !ranges_go_messy(rs))
            return false;
    }
    if (rs->messy) {
        if (!ms__grow((void **)&rs->r, &rs->cap, rs->n + 1, sizeof *rs->r))
            return false;
        rs->r[rs->n++] = v;
        return true;
    }
    uint32_t i;
    if (rs->nslots) {
        i = rs->slots[--rs->nslots];
    } else {
        if (rs->n >= NIL - 1 || !ms__grow((void **)&rs->r, &rs->cap, rs->n + 1, sizeof *rs->r))
            return false;
        i = (uint32_t)rs->n++;
    }
    v.l = v.r = NIL;
    rs->r[i] = v;
    r_insert(rs, i);
    return true;
}

/* Removes [a, e) from the ranges, splitting one that holds it. */
static bool ranges_cut(ranges *rs, uint64_t a, uint64_t e)
{
    if (!rs->messy && e <= a && !ranges_go_messy(rs))
        return false; /* an empty or wrapped cut: the list's rule */
    if (!rs->messy) {
        /* Tidy: the range holding a, then those starting inside (a, e). */
        uint32_t k = r_floor(rs, a);
        if (k == NIL || rs->r[k].end <= a)
            k = r_after(rs, a);
        while (k != NIL && rs->r[k].start < e) {
            range v = rs->r[k];
            uint32_t next = r_after(rs, v.start);
            r_erase(rs, k);
            if (!ms__grow((void **)&rs->slots, &rs->capslots, rs->nslots + 1, sizeof *rs->slots))
                return false;
            rs->slots[rs->nslots++] = k;
            if (v.start < a && !ranges_add(rs, (range){v.start, a, v.stream_raw, v.exp, NIL, NIL}))
                return false;
            if (v.end > e && !ranges_add(rs, (range){e, v.end, v.stream_raw, v.exp, NIL, NIL}))
                return false;
            k = next;
        }
        return true;
    }
    for (size_t k = 0; k < rs->n; k++) {
        range v = rs->r[k];
        if (v.end <= a || v.start >= e)
            continue;
        rs->r[k] = rs->r[--rs->n];
        k--;
        if (v.start < a && !ranges_add(rs, (range){v.start, a, v.stream_raw, v.exp, NIL, NIL}))
            return false;
        if (v.end > e && !ranges_add(rs, (range){e, v.end, v.stream_raw, v.exp, NIL, NIL}))
            return false;
    }
    return true;
}

static int by_start(const void *a, const void *b)
{
    const range *x = a, *y = b;
    return MS__CMP(x->start, y->start);
}

/* Per address: the first of its alloc / free events in the trace. */
enum { FIRST_ALLOC = 1, FIRST_FREE_REQ = 2, FIRST_FREE = 3 };

int ms__heap_build_start(hsim *x, const ms_trace *tr, int device, ms_addrmap *first, ms_error *err)
{
    const ms_snapshot *s = x->s;
    size_t nseg, nblk;
    const ms_segment *fs = ms_snapshot_segments(s, &nseg);
    const ms_block *fb = ms_snapshot_blocks(s, &nblk);
    ranges rs = {NULL, 0, 0, false, NIL, NULL, 0, 0};
    for (size_t k = 0; k < nseg; k++)
        if (fs[k].device == device &&
            !ranges_add(&rs, (range){fs[k].address, fs[k].address + fs[k].total_size,
                                     fs[k].stream_raw, fs[k].is_expandable, NIL, NIL}))
            goto nomem;
    /* Backward from the end: undo what each segment event did. */
    for (size_t i = tr->n; i-- > 0;) {
        uint64_t a = tr->addr[i], e = a + tr->size[i];
        uint64_t st = ms_snapshot_stream(s, tr->stream[i]);
        switch (tr->action[i]) {
        case MS_ACT_SEGMENT_ALLOC:
        case MS_ACT_SEGMENT_MAP:
            if (!ranges_cut(&rs, a, e))
                goto nomem;
            break;
        case MS_ACT_SEGMENT_FREE:
        case MS_ACT_SEGMENT_UNMAP:
            if (!ranges_cut(&rs, a, e) ||
                !ranges_add(&rs, (range){a, e, st, tr->action[i] == MS_ACT_SEGMENT_UNMAP, NIL,
                                         NIL}))
                goto nomem;
            break;
        default:
            break;
        }
    }
    if (!rs.messy && !ranges_go_messy(&rs)) /* by start: the order seg_add wants */
        goto nomem;
    free(rs.slots);
    rs.slots = NULL;
    if (rs.n > 1)
        qsort(rs.r, rs.n, sizeof *rs.r, by_start);
    for (size_t k = 0; k < rs.n && !x->nomem; k++)
        ms__heap_seg_add(x, rs.r[k].start, rs.r[k].end - rs.r[k].start, rs.r[k].stream_raw, rs.r[k].exp);
    free(rs.r);
    rs.r = NULL;
    if (x->nomem)
        goto nomem;

    /* Which addresses the trace first meets as an allocation, which as a free. */
    for (size_t i = 0; i < tr->n; i++) {
        unsigned act = tr->action[i];
        unsigned kind = act == MS_ACT_ALLOC            ? FIRST_ALLOC
                        : act == MS_ACT_FREE_REQUESTED ? FIRST_FREE_REQ
                        : act == MS_ACT_FREE_COMPLETED ? FIRST_FREE
                                                       : 0;
        if (!kind || ms__addrmap_get(first, tr->addr[i]) != NIL)
            continue;
        if (!ms__addrmap_put(first, tr->addr[i], kind))
            goto nomem;
        if (kind == FIRST_ALLOC)
            continue;
        /* Alive before the trace began and freed in it: the block's size is the
         * request's rounding, unless the allocator did not split the rest (unknowable). */
        uint64_t size = tr->size[i];
        uint32_t bi = ms__heap_carve(x, tr->addr[i], ms__heap_round_with(x->div, x->have_div, size));
        if (x->nomem)
            goto nomem;
        if (bi == NIL) {
            x->bad++;
            continue;
        }
        blk *b = &x->b[bi];
        b->state = kind == FIRST_FREE ? MS_BLOCK_ACTIVE_PENDING_FREE : MS_BLOCK_ACTIVE_ALLOCATED;
        b->estimated = true;
        if (x->keep_who)
            x->who[bi].req = size;
    }
    /* Active at the end and never allocated or freed in the trace: alive throughout,
     * with the size the final state gives. */
    for (size_t k = 0; k < nseg; k++) {
        if (fs[k].device != device)
            continue;
        for (size_t j = fs[k].first_block; j < fs[k].first_block + fs[k].n_blocks && j < nblk; j++) {
            const ms_block *fbk = &fb[j];
            if (fbk->state != MS_BLOCK_ACTIVE_ALLOCATED && fbk->state != MS_BLOCK_ACTIVE_PENDING_FREE)
                continue;
            if (ms__addrmap_get(first, fbk->address) != NIL)
                continue;
            uint32_t bi = ms__heap_carve(x, fbk->address, fbk->size);
            if (x->nomem)
                goto nomem;
            if (bi == NIL) {
                x->bad++;
                continue;
            }
            x->b[bi].state = (uint8_t)fbk->state;
            if (x->keep_who) {
                x->who[bi].req = fbk->requested_size;
                x->who[bi].stack = fbk->stack;
            }
        }
    }
    /* Estimated blocks take the rests the allocator would not have split off, once every
     * block of the start is placed (a later carve may have cut such a rest short). */
    for (uint32_t i = 0; i < x->nb; i++)
        if (x->b[i].state != BLK_DEAD)
            ms__heap_absorb_rest(x, i);
    return 0;
nomem:
    free(rs.r);
    free(rs.slots);
    return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory rebuilding the allocator state");
}
