/* From leaking sites to findings a user can act on.
 *
 * The first stage (leaks.c) classifies each (site, layer) group. Two things it cannot
 * see from one group's live count make its findings hard to act on:
 * - A line that leaks can also make allocations that are kept once and never repeat (the
 *   cuBLAS workspace made at the first matmul, a buffer created lazily). They outlive
 *   their iteration like the leak does, but a leak is what repeats iteration after
 *   iteration: allocations whose size was made in one iteration only are retained.
 * - One bug can leak at many sites: a graph kept alive by a loss summed as a tensor keeps
 *   the activations of every layer. Leaks made in the same pass (the same top-level
 *   forward call, or the backward) in exactly the same iterations grow in lockstep and
 *   are one finding, with the sites as its members. */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "internal.h"
#include "leak_internal.h"

MS__KEY_TEXT_LOOKUPS(MS_LEAK_PATTERN_LIST, ms_leak_pattern, MS_LEAK_PATTERN_COUNT,
                     ms_leak_pattern_name, ms_leak_pattern_text)

int64_t ms__iter_of(const ms_iterations *it, int64_t ev)
{
    if (ev < 0 || !it->n || ev < it->items[0].start_event)
        return -1;
    return (int64_t)MS__LAST_AT_OR_BELOW(it->items, it->n, start_event, ev);
}

int64_t ms__iter_of_near(const ms_iterations *it, int64_t ev, size_t *hint)
{
    size_t h = *hint;
    if (ev >= 0 && h < it->n && it->items[h].start_event <= ev) {
        for (size_t k = h; k < it->n && k <= h + 1; k++)
            if (k + 1 == it->n || ev < it->items[k + 1].start_event) {
                *hint = k;
                return (int64_t)k;
            }
    }
    int64_t k = ms__iter_of(it, ev);
    if (k >= 0)
        *hint = (size_t)k;
    return k;
}

/* A finding of the first stage, or the part of one that a split moved out. */
typedef struct part {
    ms_leak L;       /* L.first_index and L.n_index address r->alloc_index */
    uint64_t pass;   /* the pass that made every allocation, 0 when they differ or none */
    uint64_t sig;    /* hash of the iterations that made its allocations */
    size_t sig_n;    /* how many iterations that is */
    size_t out;      /* the finding it ends up in */
    size_t n_joined; /* leaders: how many parts joined it */
    bool graph;      /* leaders: its pass kept an autograd graph alive */
} part;

/* The iteration that made an allocation: -1 setup, N after the last iteration's end (the
 * copy a loop makes after its optimizer step, past the last boundary). */
static int64_t made_in(const ms_iterations *it, const ms_alloc *a, int64_t ref)
{
    if (a->alloc_event >= ref)
        return (int64_t)it->n;
    return ms__iter_of(it, a->alloc_event);
}

/* Which pass made an allocation: its top-level forward call (the user line that called
 * the outermost forward), or the backward pass; 0 for neither. */
static uint64_t pass_of(const ms_snapshot *s, const ms__stackinfo *si, uint32_t stack)
{
    if (stack == MS_NO_STACK)
        return 0;
    const ms__stackinfo *x = &si[stack];
    if (x->call_key != UINT32_MAX)
        return (uint64_t)1 << 32 | x->call_key;
    if (x->layer == UINT32_MAX)
        return 0;
    const ms_frame *f = ms_snapshot_frame(s, x->layer);
    const char *name = ms_snapshot_string(s, f->name);
    if (strstr(name, "Backward") || !strcmp(name, "backward"))
        return (uint64_t)2 << 32;
    return 0;
}

/* Library workspaces are made inside the library's own calls: a frame names them. */
static bool stack_is_workspace(const ms_snapshot *s, const ms__stackinfo *si, uint32_t stack)
{
    if (stack == MS_NO_STACK)
        return false;
    if (si[stack].flags & MS__ST_WORKSPACE)
        return true;
    size_t n = 0;
    const uint32_t *fr = ms_snapshot_stack(s, stack, &n);
    for (size_t k = 0; k < n; k++) {
        const char *name = ms_snapshot_string(s, ms_snapshot_frame(s, fr[k])->name);
        if (strstr(name, "cublas") || strstr(name, "CUDABlas") || strstr(name, "cudnn"))
            return true;
    }
    return false;
}

typedef struct sized {
    uint64_t size;
    int64_t iter;
    size_t ai; /* index into t->allocs */
} sized;

static int cmp_sized(const void *pa, const void *pb)
{
    const sized *a = pa, *b = pb;
    return MS__CMP3(a->size, b->size, a->iter, b->iter, a->ai, b->ai);
}

/* Moves the allocations of leak part `p` whose size was made in one iteration only to the
 * end of its index range; returns how many (0: no split). A leak whose sizes mostly never
 * repeat (variable shapes) is left whole: there the size says nothing. */
static size_t split_once(ms_leak_report *r, const ms_timeline *t, const ms__stackinfo *si,
                         const part *p, sized *tmp, bool *once)
{
    size_t n = p->L.n_index;
    size_t *idx = &r->alloc_index[p->L.first_index];
    const ms_iterations *it = r->iterations;
    for (size_t j = 0; j < n; j++) {
        tmp[j].size = t->allocs[idx[j]].size;
        tmp[j].iter = made_in(it, &t->allocs[idx[j]], r->ref_event);
        tmp[j].ai = j;
    }
    qsort(tmp, n, sizeof *tmp, cmp_sized);
    size_t n_once = 0;
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        bool repeats = false;
        while (b < n && tmp[b].size == tmp[a].size) {
            repeats = repeats || tmp[b].iter != tmp[a].iter;
            b++;
        }
        /* A library workspace is made once by design even when its size matches the
         * leak's: cuBLASLt's 1 MiB workspace, made by the first addmm of any layer at a
         * library's shared line (transformers' Conv1D), is no output a hook kept. */
        for (size_t j = a; j < b; j++) {
            uint32_t st = t->allocs[idx[tmp[j].ai]].stack;
            once[tmp[j].ai] = !repeats || (st != MS_NO_STACK && (si[st].flags & MS__ST_WORKSPACE));
            n_once += once[tmp[j].ai];
        }
        a = b;
    }
    if (!n_once || n_once * 2 >= n)
        return 0;
    /* Stable: both halves keep allocation order, so each starts with its oldest. */
    size_t *save = (size_t *)tmp; /* sized is larger than size_t: room for n indices */
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        if (!once[j])
            save[k++] = idx[j];
    for (size_t j = 0; j < n; j++)
        if (once[j])
            save[k++] = idx[j];
    memcpy(idx, save, n * sizeof *idx);
    return n_once;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

/* Blocks of the final state by address: what the allocator really holds for an
 * allocation still alive at the end (requests rounded, large blocks left unsplit); for
 * any other, the allocator's rounding of its request, with the snapshot's
 * roundup_power2_divisions (ms__heap_round_with, the replay's rule). */
typedef struct block_map {
    uint64_t *addr, *size;
    size_t n;
    uint64_t div[16];
    bool have_div;
} block_map;

static int cmp_u64_pair(const void *pa, const void *pb)
{
    return ms__cmp_u64(pa, pb); /* by the first of the pair */
}

static bool block_map_build(block_map *bm, const ms_snapshot *s, int device)
{
    memset(bm, 0, sizeof *bm);
    size_t nseg = 0, nb = 0, n = 0;
    const ms_segment *segs = ms_snapshot_segments(s, &nseg);
    const ms_block *blocks = ms_snapshot_blocks(s, &nb);
    for (size_t i = 0; i < nseg; i++)
        if (segs[i].device == device)
            n += segs[i].n_blocks;
    uint64_t *pairs = malloc((n ? n : 1) * 2 * sizeof *pairs);
    bm->addr = malloc((n ? n : 1) * sizeof *bm->addr);
    bm->size = malloc((n ? n : 1) * sizeof *bm->size);
    if (!pairs || !bm->addr || !bm->size) {
        free(pairs);
        free(bm->addr);
        free(bm->size);
        return false;
    }
    for (size_t i = 0; i < nseg; i++)
        for (size_t j = 0; segs[i].device == device && j < segs[i].n_blocks; j++) {
            const ms_block *b = &blocks[segs[i].first_block + j];
            if (segs[i].first_block + j >= nb || b->state != MS_BLOCK_ACTIVE_ALLOCATED)
                continue;
            pairs[2 * bm->n] = b->address;
            pairs[2 * bm->n + 1] = b->size;
            bm->n++;
        }
    qsort(pairs, bm->n, 2 * sizeof *pairs, cmp_u64_pair);
    for (size_t i = 0; i < bm->n; i++) {
        bm->addr[i] = pairs[2 * i];
        bm->size[i] = pairs[2 * i + 1];
    }
    free(pairs);
    bm->have_div = ms__heap_divisions(s, bm->div);
    return true;
}

static uint64_t block_bytes(const block_map *bm, const ms_alloc *a)
{
    bool alive_at_end = a->free_event < 0 && a->free_requested_event < 0;
    size_t lo = 0, hi = bm->n;
    while (alive_at_end && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (bm->addr[mid] < a->addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (alive_at_end && lo < bm->n && bm->addr[lo] == a->addr)
        return bm->size[lo];
    return ms__heap_round_with(bm->div, bm->have_div, a->size);
}

/* Counts, bytes and times of a part from its allocations; its growth per iteration in
 * block bytes, and with `regrow` in requested bytes too: what it made after the first
 * iteration that made any, per iteration. */
static void part_stats(part *p, const ms_leak_report *r, const ms_snapshot *s,
                       const ms_timeline *t, const ms__stackinfo *si, const block_map *bm,
                       bool regrow)
{
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    const ms_iterations *it = r->iterations;
    int64_t N = (int64_t)it->n;
    ms_leak *L = &p->L;
    ms__leak_figures_clear(L);
    L->stack = L->n_index ? t->allocs[r->alloc_index[L->first_index]].stack : MS_NO_STACK;
    L->user_frame = ms_stack_user_frame(s, L->stack);
    int64_t first_iter = INT64_MAX, prev_iter = INT64_MIN;
    uint64_t later_count = 0, later_bytes = 0, later_blocks = 0, pass = 0;
    bool same_pass = true, have_pass = false;
    p->sig = 1469598103934665603ull;
    p->sig_n = 0;
    for (size_t j = 0; j < L->n_index; j++) {
        const ms_alloc *a = &t->allocs[r->alloc_index[L->first_index + j]];
        ms__leak_figures_add(L, a, tr, t);
        int64_t k = made_in(it, a, r->ref_event);
        if (k < 0 || k >= N)
            continue; /* setup and the copy after the last boundary say nothing of passes */
        if (k < first_iter)
            first_iter = k;
        else if (k > first_iter) {
            later_count++;
            later_bytes += a->size;
            if (L->kind == MS_LEAK_LEAK)
                later_blocks += block_bytes(bm, a);
        }
        /* Allocations are in event order, so each iteration's run is contiguous. */
        if (k != prev_iter) {
            p->sig = mix(p->sig, (uint64_t)k);
            p->sig_n++;
            prev_iter = k;
        }
        uint64_t ps = pass_of(s, si, a->stack);
        if (!have_pass) {
            pass = ps;
            have_pass = true;
        } else if (ps != pass) {
            same_pass = false;
        }
    }
    p->pass = same_pass ? pass : 0;
    if (!L->count) {
        L->bytes_each_min = 0;
        L->first_alloc_us = L->last_alloc_us = 0;
    }
    L->growth_allocated_bytes = 0;
    if (L->kind == MS_LEAK_LEAK && first_iter < N - 1)
        L->growth_allocated_bytes = (double)later_blocks / (double)(N - 1 - first_iter);
    if (regrow) {
        L->growth_count = L->growth_bytes = 0;
        if (first_iter < N - 1) {
            L->growth_count = (double)later_count / (double)(N - 1 - first_iter);
            L->growth_bytes = (double)later_bytes / (double)(N - 1 - first_iter);
        }
    }
}

/* Several sites of one forward pass grow together: the autograd graph kept alive, or
 * one owner of several tensors. A graph keeps what the modules saved for backward, which
 * a backward pass would have freed (retain_graph aside): so no backward and no optimizer
 * step in those iterations, and some members made inside torch's own modules and
 * functions (activations), not only by the user's own lines. */
static bool is_graph(const ms_leak_report *r, const ms_snapshot *s, const ms_timeline *t,
                     const ms__stackinfo *si, const part *parts, size_t np, size_t lead)
{
    bool library = false;
    for (size_t i = 0; i < np && !library; i++) {
        if (parts[i].out != lead)
            continue;
        const ms_leak *L = &parts[i].L;
        for (size_t j = 0; j < L->n_index && !library; j++) {
            uint32_t st = t->allocs[r->alloc_index[L->first_index + j]].stack;
            size_t n = 0;
            const uint32_t *fr = ms_snapshot_stack(s, st, &n);
            for (size_t k = 0; k < n; k++) {
                ms_frame_kind fk = ms_frame_kind_of(s, fr[k]);
                if (fk == MS_FRAME_NATIVE)
                    continue;
                /* the innermost Python frame: torch's, compiled or a library's code */
                library = fk != MS_FRAME_USER;
                break;
            }
        }
    }
    if (!library)
        return false;
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    const ms_iterations *it = r->iterations;
    const ms_leak *L = &parts[lead].L;
    int64_t first = INT64_MAX, last = -1;
    for (size_t j = 0; j < L->n_index; j++) {
        int64_t k = made_in(it, &t->allocs[r->alloc_index[L->first_index + j]], r->ref_event);
        if (k < 0 || k >= (int64_t)it->n)
            continue;
        first = k < first ? k : first;
        last = k > last ? k : last;
    }
    if (last < 0)
        return false;
    /* Each stack is looked at once: a long run repeats a few hundred stacks. */
    size_t nst = ms_snapshot_stack_count(s);
    uint8_t *training = calloc(nst ? nst : 1, 1); /* 0 not seen, 1 no, 2 yes */
    bool graph = true;
    for (int64_t e = it->items[first].start_event; e < it->items[last].end_event && graph; e++) {
        if (tr->action[e] != MS_ACT_ALLOC)
            continue;
        uint32_t st = tr->stack[e];
        if (st == MS_NO_STACK || st >= nst) {
            graph = false; /* stacks="python" records backward allocations without frames */
            break;
        }
        if (training && training[st]) {
            graph = training[st] == 1;
            continue;
        }
        bool yes = (si[st].flags & MS__ST_OPTIM) || (pass_of(s, si, st) >> 32) == 2;
        if (training)
            training[st] = yes ? 2 : 1;
        graph = !yes;
    }
    free(training);
    return graph;
}

/* Members of one finding, largest first; findings have few members. */
static void sort_members(size_t *m, size_t n, const part *parts)
{
    for (size_t i = 1; i < n; i++) {
        size_t x = m[i], j = i;
        while (j > 0 && ms__leak_cmp(&parts[x].L, &parts[m[j - 1]].L) < 0) {
            m[j] = m[j - 1];
            j--;
        }
        m[j] = x;
    }
}

/* What refining works in, allocated once for the most parts there can be. */
typedef struct refine {
    part *parts;
    size_t np;
    sized *tmp;
    bool *once;
    size_t *fill;      /* the members, grouped by finding */
    size_t *new_index; /* the allocation index in its final order */
    ms_leak *items;
    ms_leak_member *members;
    size_t *slot;
    size_t *start;     /* finding o's members are fill[start[o] .. start[o + 1]) */
    size_t *cursor;
    block_map bm;
    bool bm_ok;
} refine;

static void refine_free(refine *w)
{
    if (w->bm_ok) {
        free(w->bm.addr);
        free(w->bm.size);
    }
    free(w->parts);
    free(w->tmp);
    free(w->once);
    free(w->fill);
    free(w->new_index);
    free(w->items);
    free(w->members);
    free(w->slot);
    free(w->start);
    free(w->cursor);
}

static bool refine_alloc(refine *w, const ms_leak_report *r, const ms_snapshot *s,
                         const ms_timeline *t)
{
    size_t n_leak = 0, max_n = 1;
    for (size_t f = 0; f < r->n; f++) {
        n_leak += r->items[f].kind == MS_LEAK_LEAK;
        if (r->items[f].n_index > max_n)
            max_n = r->items[f].n_index;
    }
    /* Each leak can give one retained part. */
    size_t cap = r->n + n_leak;
    memset(w, 0, sizeof *w);
    w->parts = calloc(cap ? cap : 1, sizeof *w->parts);
    w->tmp = malloc(max_n * sizeof *w->tmp);
    w->once = malloc(max_n * sizeof *w->once);
    w->fill = malloc((cap ? cap : 1) * sizeof *w->fill);
    w->new_index = malloc((r->n_alloc_index ? r->n_alloc_index : 1) * sizeof *w->new_index);
    w->items = calloc(cap ? cap : 1, sizeof *w->items);
    w->members = calloc(cap ? cap : 1, sizeof *w->members);
    w->slot = malloc((cap ? cap : 1) * sizeof *w->slot);
    w->start = calloc(cap + 1, sizeof *w->start);
    w->cursor = calloc(cap ? cap : 1, sizeof *w->cursor);
    w->bm_ok = block_map_build(&w->bm, s, t->device);
    return w->bm_ok && w->parts && w->tmp && w->once && w->fill && w->new_index && w->items &&
           w->members && w->slot && w->start && w->cursor;
}

/* The first stage's findings as parts, each leak's allocations that never repeat split
 * off as a retained part of their own. */
static void split_parts(refine *w, ms_leak_report *r, const ms_snapshot *s,
                        const ms_timeline *t, const ms__stackinfo *si)
{
    size_t np = 0;
    for (size_t f = 0; f < r->n; f++) {
        part *p = &w->parts[np++];
        p->L = r->items[f];
        bool regrow = false;
        if (p->L.kind == MS_LEAK_LEAK) {
            size_t n_once = split_once(r, t, si, p, w->tmp, w->once);
            if (n_once) {
                part *q = &w->parts[np++];
                q->L = p->L;
                q->L.kind = MS_LEAK_RETAINED;
                q->L.growth_count = q->L.growth_bytes = 0;
                q->L.first_index = p->L.first_index + p->L.n_index - n_once;
                q->L.n_index = n_once;
                p->L.n_index -= n_once;
                part_stats(q, r, s, t, si, &w->bm, false);
                regrow = true;
            }
        }
        part_stats(p, r, s, t, si, &w->bm, regrow);
    }
    w->np = np;
}

/* Findings: a leak joins the first earlier leak of the same pass and iterations (its
 * leader); the rest lead their own. Sets each part's `out` to its leader. */
static void join_parts(part *parts, size_t np, const ms_leak_report *r, const ms_snapshot *s,
                       const ms_timeline *t, const ms__stackinfo *si)
{
    /* What one forward left alive at the end is one finding, its sites the members. */
    size_t alive_lead = SIZE_MAX;
    for (size_t i = 0; i < np; i++) {
        part *p = &parts[i];
        p->out = i;
        if (p->L.kind == MS_LEAK_ALIVE_AT_END) {
            if (alive_lead == SIZE_MAX) {
                alive_lead = i;
            } else {
                p->out = alive_lead;
                parts[alive_lead].n_joined++;
            }
            continue;
        }
        if (p->L.kind != MS_LEAK_LEAK || !p->pass)
            continue;
        for (size_t j = 0; j < i; j++) {
            const part *q = &parts[j];
            if (q->out == j && q->L.kind == MS_LEAK_LEAK && q->pass == p->pass &&
                q->sig == p->sig && q->sig_n == p->sig_n) {
                p->out = j;
                parts[j].n_joined++;
                break;
            }
        }
    }
    for (size_t i = 0; i < np; i++)
        if (parts[i].out == i && parts[i].n_joined && (parts[i].pass >> 32) == 1)
            parts[i].graph = is_graph(r, s, t, si, parts, np, i);
    /* A graph keeps its pass's input too (the batch an embedding saved): a leak made in
     * the loop body that calls the forward, in the same iterations, is part of it. */
    for (size_t i = 0; i < np; i++) {
        part *p = &parts[i];
        if (p->out != i || p->n_joined || p->L.kind != MS_LEAK_LEAK || p->pass ||
            p->L.site == UINT32_MAX)
            continue;
        const ms_frame *site = ms_snapshot_frame(s, p->L.site);
        for (size_t j = 0; j < np; j++) {
            const part *q = &parts[j];
            if (!q->graph || q->sig != p->sig || q->sig_n != p->sig_n)
                continue;
            const ms_frame *call = ms_snapshot_frame(s, (uint32_t)(q->pass & 0xffffffffu));
            if (call->filename == site->filename && call->name == site->name) {
                p->out = j;
                break;
            }
        }
    }
}

/* Numbers the findings in part order of their leaders (parts' `out` become finding
 * numbers, SIZE_MAX for empty parts) and groups each finding's members, largest first;
 * returns how many findings. */
static size_t group_members(refine *w)
{
    part *parts = w->parts;
    size_t np = w->np, nout = 0;
    for (size_t i = 0; i < np; i++)
        w->slot[i] = parts[i].out == i && parts[i].L.count ? nout++ : SIZE_MAX;
    for (size_t i = 0; i < np; i++)
        parts[i].out = parts[i].L.count ? w->slot[parts[i].out] : SIZE_MAX;
    for (size_t i = 0; i < np; i++)
        if (parts[i].out != SIZE_MAX)
            w->start[parts[i].out + 1]++;
    for (size_t o = 0; o < nout; o++)
        w->start[o + 1] += w->start[o];
    for (size_t i = 0; i < np; i++)
        if (parts[i].out != SIZE_MAX)
            w->fill[w->start[parts[i].out] + w->cursor[parts[i].out]++] = i;
    for (size_t o = 0; o < nout; o++)
        sort_members(w->fill + w->start[o], w->start[o + 1] - w->start[o], parts);
    return nout;
}

/* Finding o: the sum of its members, named by its largest, with its pattern. Its
 * first_index holds o until the findings are laid out (lay_out). */
static void sum_finding(ms_leak *L, const refine *w, size_t o, const ms_leak_report *r,
                        const ms_snapshot *s, const ms_timeline *t, const ms__stackinfo *si,
                        const ms__alive_end *ae)
{
    const part *parts = w->parts;
    const size_t *mem = w->fill + w->start[o];
    size_t nm = w->start[o + 1] - w->start[o];
    const part *big = &parts[mem[0]];
    *L = big->L;
    L->first_member = w->start[o];
    L->n_members = nm;
    if (L->kind == MS_LEAK_RETAINED)
        L->pattern = MS_LEAK_PATTERN_ONCE;
    else
        L->pattern = MS_LEAK_PATTERN_SITE;
    for (size_t m = 1; m < nm; m++) {
        const ms_leak *x = &parts[mem[m]].L;
        ms__leak_figures_join(L, x);
        L->growth_count += x->growth_count;
        L->growth_bytes += x->growth_bytes;
        L->growth_allocated_bytes += x->growth_allocated_bytes;
    }
    L->call_site = UINT32_MAX;
    if (L->kind == MS_LEAK_ALIVE_AT_END) {
        L->pattern = ae && ae->graph ? MS_LEAK_PATTERN_END_GRAPH : MS_LEAK_PATTERN_END_OUTPUT;
        L->call_site = ae ? ae->call_key : UINT32_MAX;
    } else if (nm > 1) {
        const part *lead = NULL;
        for (size_t m = 0; m < nm && !lead; m++)
            if (parts[mem[m]].n_joined)
                lead = &parts[mem[m]];
        if (!lead)
            lead = big;
        if ((lead->pass >> 32) == 2) {
            L->pattern = MS_LEAK_PATTERN_BACKWARD;
        } else {
            L->pattern = lead->graph ? MS_LEAK_PATTERN_GRAPH : MS_LEAK_PATTERN_FORWARD;
            L->call_site = (uint32_t)(lead->pass & 0xffffffffu);
        }
    }
    if (L->kind == MS_LEAK_RETAINED) {
        bool ws = true;
        for (size_t j = 0; j < L->n_index && ws; j++)
            ws = stack_is_workspace(s, si, t->allocs[r->alloc_index[L->first_index + j]].stack);
        if (ws)
            L->pattern = MS_LEAK_PATTERN_WORKSPACE;
    }
    /* Temporarily: which finding this was, to find its members after sorting. */
    L->first_index = o;
}

/* Lays out members and allocation indices of the first `keep` findings in their final
 * order; *nmem and *ni: how many of each. */
static void lay_out(refine *w, size_t keep, const ms_leak_report *r, size_t *nmem_out,
                    size_t *ni_out)
{
    size_t nmem = 0, ni = 0;
    for (size_t f = 0; f < keep; f++) {
        ms_leak *L = &w->items[f];
        size_t o = L->first_index;
        L->first_member = nmem;
        L->first_index = ni;
        L->n_index = 0;
        for (size_t m = w->start[o]; m < w->start[o + 1]; m++) {
            const part *p = &w->parts[w->fill[m]];
            ms_leak_member *M = &w->members[nmem++];
            M->site = p->L.site;
            M->layer = p->L.layer;
            M->count = p->L.count;
            M->bytes = p->L.bytes;
            M->bytes_each_min = p->L.bytes_each_min;
            M->bytes_each_max = p->L.bytes_each_max;
            M->growth_count = p->L.growth_count;
            M->growth_bytes = p->L.growth_bytes;
            M->growth_allocated_bytes = p->L.growth_allocated_bytes;
            M->stack = p->L.stack;
            M->user_frame = p->L.user_frame;
            M->first_index = ni;
            M->n_index = p->L.n_index;
            memcpy(w->new_index + ni, r->alloc_index + p->L.first_index,
                   p->L.n_index * sizeof *w->new_index);
            ni += p->L.n_index;
            L->n_index += p->L.n_index;
        }
    }
    *nmem_out = nmem;
    *ni_out = ni;
}

int ms__leaks_refine(ms_leak_report *r, const ms_snapshot *s, const ms_timeline *t,
                     const ms__stackinfo *si, const ms__alive_end *ae, uint64_t min_bytes,
                     ms_error *err)
{
    refine w;
    if (!refine_alloc(&w, r, s, t)) {
        refine_free(&w);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for findings");
    }
    split_parts(&w, r, s, t, si);
    join_parts(w.parts, w.np, r, s, t, si);
    size_t nout = group_members(&w);
    for (size_t o = 0; o < nout; o++)
        sum_finding(&w.items[o], &w, o, r, s, t, si, ae);
    /* A split can leave a part below --min-bytes; drop such findings now. */
    size_t keep = 0;
    for (size_t o = 0; o < nout; o++)
        if (w.items[o].bytes >= min_bytes)
            w.items[keep++] = w.items[o];
    qsort(w.items, keep, sizeof *w.items, ms__leak_cmp);
    size_t nmem, ni;
    lay_out(&w, keep, r, &nmem, &ni);

    free(r->items);
    free(r->alloc_index);
    free(r->members);
    r->items = w.items;
    r->n = keep;
    r->alloc_index = w.new_index;
    r->n_alloc_index = ni;
    r->members = w.members;
    r->n_members = nmem;
    w.items = NULL;
    w.new_index = NULL;
    w.members = NULL;
    refine_free(&w);
    return 0;
}
