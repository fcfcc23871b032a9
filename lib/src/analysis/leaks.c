/* Leaks: allocations that outlive the iteration that made them, grouped by site and
 * layer, told apart from memory that is made once and kept on purpose.
 *
 * The signal is survival across iteration ends. An allocation made in iteration i that is
 * still alive at the end of the last iteration has outlived at least one whole later
 * iteration. When such survivors come from one iteration only (parameters, optimizer
 * state made by the first step, buffers made lazily by the second) the memory is retained;
 * when they come from several iterations, the last of them in the second half of the run,
 * the site keeps adding memory every iteration: a leak. Allocations freed one iteration
 * later (the loop variable `x`, last step's loss) never survive that long. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "internal.h"
#include "iter_internal.h"
#include "leak_internal.h"
#include "run_internal.h"
#include "timeline_internal.h"

const char *ms_leak_kind_name(ms_leak_kind k)
{
    static const char *const names[] = {[MS_LEAK_LEAK] = "leak", [MS_LEAK_SUSPECT] = "suspect",
                                        [MS_LEAK_RETAINED] = "retained",
                                        [MS_LEAK_ALIVE_AT_END] = "alive_at_end"};
    return MS__NAME_IN(names, k, "unknown");
}

void ms_leak_report_free(ms_leak_report *r)
{
    if (!r)
        return;
    ms_iterations_free(r->iterations);
    MS__FREE_ALL(r->items, r->alloc_index, r->members, r);
}

void ms_leak_marks_free(ms_leak_mark *marks)
{
    free(marks);
}

/* One (site, layer) group. Per-iteration arrays exist only for groups with an
 * allocation that outlived its iteration, which keeps memory at groups x iterations for
 * the few groups that matter. */
typedef struct group {
    uint32_t site, layer;
    int64_t *live_diff;   /* difference array: live count at iteration ends, N + 1 */
    int64_t *live_bdiff;  /* the same in bytes */
    uint64_t *surv;       /* survivors at the reference point, by iteration made */
    uint64_t setup_alive; /* made before the first iteration, alive at the reference */
    uint64_t suspects;    /* single-iteration suspects */
    uint64_t alive_end;   /* no iterations: what the forward left alive at the end */
    int kind;             /* -1 not reported, else ms_leak_kind */
    double growth_count, growth_bytes;
} group;

typedef struct gmap {
    ms_addrmap index; /* gkey(site, layer) -> group */
    group *g;
    size_t n, cap;
    /* Per stack id, its group once found (UINT32_MAX not yet): a stack's site and layer
     * never change, and millions of allocations share thousands of stacks. nstacks 0:
     * no cache (no memory for one). */
    uint32_t *by_stack;
    size_t nstacks;
    uint32_t no_stack; /* the same for allocations without a stack */
} gmap;

/* The map key of (site, layer): the pair through fmix64, a bijection, so no two pairs
 * share a key, and mixed, so the sites of one layer (or the layers of one site) spread
 * over the map instead of crowding its slots. */
static uint64_t gkey(uint32_t site, uint32_t layer)
{
    uint64_t x = (uint64_t)site << 32 | layer;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Index of the group of (site, layer), created when new; UINT32_MAX on no memory. */
static uint32_t gmap_get(gmap *m, uint32_t site, uint32_t layer)
{
    uint64_t key = gkey(site, layer);
    uint32_t v = ms__addrmap_get(&m->index, key);
    if (v != MS_ADDRMAP_NONE)
        return v;
    if (m->n >= UINT32_MAX - 1 || !ms__grow((void **)&m->g, &m->cap, m->n + 1, sizeof *m->g) ||
        !ms__addrmap_put(&m->index, key, (uint32_t)m->n))
        return UINT32_MAX;
    group *g = &m->g[m->n];
    memset(g, 0, sizeof *g);
    g->site = site;
    g->layer = layer;
    g->kind = -1;
    return (uint32_t)m->n++;
}

/* The group of (site, layer) when it exists, else UINT32_MAX. */
static uint32_t gmap_find(const gmap *m, uint32_t site, uint32_t layer)
{
    return ms__addrmap_get(&m->index, gkey(site, layer)); /* MS_ADDRMAP_NONE is UINT32_MAX */
}

/* The group of a stack's allocations: gmap_get (create) or gmap_find of its site and
 * layer, looked up once per stack. */
static uint32_t group_of(gmap *m, const ms_snapshot *s, const ms__stackinfo *si, uint32_t stack,
                         bool create)
{
    uint32_t *slot = stack == MS_NO_STACK ? &m->no_stack
                     : stack < m->nstacks ? &m->by_stack[stack]
                                          : NULL;
    if (slot && *slot != UINT32_MAX)
        return *slot;
    uint32_t site = stack == MS_NO_STACK ? UINT32_MAX : ms_stack_site(s, stack);
    uint32_t layer = stack == MS_NO_STACK ? UINT32_MAX : si[stack].layer;
    uint32_t g = create ? gmap_get(m, site, layer) : gmap_find(m, site, layer);
    if (slot)
        *slot = g; /* UINT32_MAX (none or no memory) leaves it unknown */
    return g;
}

static void gmap_free(gmap *m)
{
    free(m->by_stack);
    for (size_t i = 0; i < m->n; i++) {
        free(m->g[i].live_diff);
        free(m->g[i].live_bdiff);
        free(m->g[i].surv);
    }
    free(m->g);
    ms__addrmap_free(&m->index);
}

/* The iteration that made an allocation (events in a gap between annotated ranges belong
 * to the range before), -1 before the first. */
static int64_t iter_of(const ms_iterations *it, int64_t ev)
{
    return ms__iter_of(it, ev);
}

/* When the program let go of an allocation: its free_requested when seen. A block freed
 * on one stream while another still used it (record_stream) stays busy until
 * free_completed, but that wait is the allocator's, not a leak in the program. */
static int64_t release_event(const ms_alloc *a)
{
    return a->free_requested_event >= 0 ? a->free_requested_event : a->free_event;
}

/* Where iteration k hands over to the next. Named ranges (--step) may leave gaps, e.g.
 * a "## forward ##" range without the backward pass; work in a gap belongs to the range
 * before it, so its end is the next range's start. */
static int64_t iter_end(const ms_iterations *it, size_t k)
{
    return k + 1 < it->n ? it->items[k + 1].start_event : it->items[k].end_event;
}

static bool alive_at(const ms_alloc *a, int64_t boundary)
{
    int64_t rel = release_event(a);
    return a->alloc_event < boundary && (rel < 0 || rel >= boundary);
}

/* Classification of one group over N iteration ends. */
static void classify(group *g, size_t N)
{
    if (N >= 2 && g->surv) {
        size_t nb = 0, bmin = N, bmax = 0;
        for (size_t i = 0; i + 1 < N; i++)
            if (g->surv[i]) {
                nb++;
                if (bmin == N)
                    bmin = i;
                bmax = i;
            }
        int64_t live[2] = {0, 0}, first[2] = {0, 0}, c = 0, b = 0, prev = 0;
        size_t up = 0, down = 0;
        for (size_t j = 0; j < N; j++) {
            c += g->live_diff[j];
            b += g->live_bdiff[j];
            if (j == bmin) {
                first[0] = c;
                first[1] = b;
            } else if (j > bmin) {
                up += c > prev;
                down += c < prev;
            }
            prev = c;
        }
        live[0] = c;
        live[1] = b;
        if (nb && live[0] > first[0]) {
            g->growth_count = (double)(live[0] - first[0]) / (double)(N - 1 - bmin);
            g->growth_bytes = (double)(live[1] - first[1]) / (double)(N - 1 - bmin);
        }
        /* With three or more ends: survivors from two iterations at least, the latest in
         * the second half, and a live count that rises at most iteration ends (at least
         * two, and a third of them for leaks that skip iterations) and rarely falls.
         * A cache made once plus a transient freed just after a boundary gives one rise,
         * not a trend. Two ends cannot separate a leak from state made lazily by the
         * second step, hence only a suspect. */
        size_t T = N - 1 - (bmin < N ? bmin : N - 1);
        size_t need = (T + 2) / 3 > 2 ? (T + 2) / 3 : 2;
        if (N >= 3 && nb >= 2 && 2 * (bmax + 1) > N && g->growth_count > 0 && up >= need &&
            2 * down <= up) {
            g->kind = MS_LEAK_LEAK;
            return;
        }
        if (N == 2 && nb && first[0] > 0 && live[0] > first[0]) {
            g->kind = MS_LEAK_SUSPECT;
            return;
        }
        g->growth_count = g->growth_bytes = 0;
        if (nb) {
            g->kind = MS_LEAK_RETAINED;
            return;
        }
    }
    if (g->alive_end) {
        g->kind = MS_LEAK_ALIVE_AT_END;
        return;
    }
    if (g->suspects) {
        g->kind = MS_LEAK_SUSPECT;
        return;
    }
    if (g->setup_alive)
        g->kind = MS_LEAK_RETAINED;
}

/* Single iteration: inside one top-level forward call, an allocation that is
 * still alive at the end while other allocations of the same call were freed. The call's
 * result (its last allocation) and what the top-level module allocates itself (the loss,
 * the output) are expected to stay; library workspaces are caches. */
static int mark_suspects(gmap *m, const ms_snapshot *s, const ms_timeline *t,
                         const ms__stackinfo *si, int64_t ref, ms_error *err)
{
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    size_t n = t->n_allocs, i = 0;
    while (i < n) {
        const ms_alloc *a = &t->allocs[i];
        uint32_t key = a->stack == MS_NO_STACK || a->alloc_event < 0
                           ? UINT32_MAX
                           : si[a->stack].call_key;
        if (key == UINT32_MAX) {
            i++;
            continue;
        }
        /* The call instance: consecutive allocations under the same call site with no
         * event outside it in between. */
        size_t j = i + 1;
        while (j < n) {
            const ms_alloc *b = &t->allocs[j];
            if (b->alloc_event < 0 || b->stack == MS_NO_STACK || si[b->stack].call_key != key)
                break;
            bool outside = false;
            for (int64_t e = t->allocs[j - 1].alloc_event + 1; e < b->alloc_event && !outside;
                 e++) {
                uint32_t st = tr->stack[e];
                outside = st == MS_NO_STACK || si[st].call_key != key;
            }
            if (outside)
                break;
            j++;
        }
        bool any_freed = false;
        for (size_t k = i; k < j; k++)
            if (!alive_at(&t->allocs[k], ref) && t->allocs[k].alloc_event < ref)
                any_freed = true;
        for (size_t k = i; any_freed && k + 1 < j; k++) {
            const ms_alloc *c = &t->allocs[k];
            if (c->alloc_event >= ref || !alive_at(c, ref))
                continue;
            const ms__stackinfo *x = &si[c->stack];
            if (x->fwd_depth < 2 || (x->flags & MS__ST_WORKSPACE) || x->layer_call == 0)
                continue;
            uint32_t g = gmap_get(m, ms_stack_site(s, c->stack), x->layer);
            if (g == UINT32_MAX)
                return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for suspects");
            m->g[g].suspects++;
        }
        i = j;
    }
    return 0;
}

/* Whether allocation `a` of group `g` is part of finding kind `kind`. */
static bool counts_for(const ms_snapshot *s, const ms__stackinfo *si, const ms_alloc *a,
                       const ms_iterations *it, const ms__alive_end *ae, int kind, int64_t ref,
                       bool single)
{
    if (a->alloc_event >= ref || !alive_at(a, ref))
        return false;
    if (kind == MS_LEAK_ALIVE_AT_END)
        return ms__alive_end_member(ae, s, si, a);
    if (kind == MS_LEAK_LEAK) {
        /* What the last iteration made proves nothing until the trace ends: its end is
         * known less well than the others' (the loop's `del tmp` can follow the boundary
         * found), so only what is never freed counts there. */
        int64_t k = iter_of(it, a->alloc_event);
        /* A wrapped trace lost when the oldest copies were made, not that they exist:
         * alive before the first kept event, of a leaking site, they are its own. */
        if (a->alloc_event < 0)
            return true;
        return k >= 0 && (k + 1 < (int64_t)it->n || release_event(a) < 0);
    }
    if (kind == MS_LEAK_SUSPECT && single)
        return a->stack != MS_NO_STACK && si[a->stack].fwd_depth >= 2 &&
               !(si[a->stack].flags & MS__ST_WORKSPACE);
    if (kind == MS_LEAK_SUSPECT)
        return iter_of(it, a->alloc_event) >= 0;
    /* Retained: made before the last iteration and still kept; what the last iteration
     * made may be gone one step later, so it proves nothing. */
    return single || iter_of(it, a->alloc_event) + 1 < (int64_t)it->n;
}

/* Leaks first, then what a recording without iterations left alive, suspects, retained. */
static int kind_rank(ms_leak_kind k)
{
    return k == MS_LEAK_LEAK ? 0 : k == MS_LEAK_ALIVE_AT_END ? 1 : k == MS_LEAK_SUSPECT ? 2 : 3;
}

void ms__leak_figures_clear(ms_leak *L)
{
    L->count = L->bytes = L->bytes_each_max = 0;
    L->bytes_each_min = UINT64_MAX;
    L->first_alloc_us = INT64_MAX;
    L->last_alloc_us = INT64_MIN;
}

void ms__leak_figures_add(ms_leak *L, const ms_alloc *a, const ms_trace *tr,
                          const ms_timeline *t)
{
    L->count++;
    L->bytes += a->size;
    if (a->size < L->bytes_each_min)
        L->bytes_each_min = a->size;
    if (a->size > L->bytes_each_max)
        L->bytes_each_max = a->size;
    int64_t at = a->alloc_event >= 0 ? tr->time_us[a->alloc_event] : t->t_first_us;
    if (at < L->first_alloc_us)
        L->first_alloc_us = at;
    if (at > L->last_alloc_us)
        L->last_alloc_us = at;
}

void ms__leak_figures_join(ms_leak *L, const ms_leak *x)
{
    L->count += x->count;
    L->bytes += x->bytes;
    if (x->bytes_each_min < L->bytes_each_min)
        L->bytes_each_min = x->bytes_each_min;
    if (x->bytes_each_max > L->bytes_each_max)
        L->bytes_each_max = x->bytes_each_max;
    if (x->first_alloc_us < L->first_alloc_us)
        L->first_alloc_us = x->first_alloc_us;
    if (x->last_alloc_us > L->last_alloc_us)
        L->last_alloc_us = x->last_alloc_us;
}

int ms__leak_cmp(const void *pa, const void *pb)
{
    const ms_leak *a = pa, *b = pb;
    if (a->kind != b->kind)
        return kind_rank(a->kind) - kind_rank(b->kind);
    if (a->bytes != b->bytes)
        return MS__CMP(b->bytes, a->bytes);
    if (a->site != b->site)
        return MS__CMP(a->site, b->site);
    return a->layer < b->layer ? -1 : a->layer > b->layer;
}

static int fail_findings(ms_error *err)
{
    return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for findings");
}

/* First pass: every allocation made before the reference point goes to its (site, layer)
 * group; those that outlived their own iteration are counted at each iteration end they
 * lived through. */
/* ... and notes, in *cand (ascending), the allocations a finding may hold: alive at the
 * reference point, or made after it and never released (collect_allocations reads only
 * these, not every allocation again). */
static int count_survivors(gmap *m, const ms_snapshot *s, const ms_timeline *t,
                           const ms__stackinfo *si, const ms_iterations *it,
                           const ms__alive_end *ae, int64_t ref, size_t **cand, size_t *ncand,
                           ms_error *err)
{
    size_t N = it->n, hint = 0, cap = 0;
    for (size_t i = 0; i < t->n_allocs; i++) {
        const ms_alloc *a = &t->allocs[i];
        if (alive_at(a, ref) || (a->alloc_event >= ref && release_event(a) < 0)) {
            if (!ms__grow((void **)cand, &cap, *ncand + 1, sizeof **cand))
                return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for leak groups");
            (*cand)[(*ncand)++] = i;
        }
        if (a->alloc_event >= ref)
            continue;
        uint32_t g = group_of(m, s, si, a->stack, true);
        if (g == UINT32_MAX)
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for leak groups");
        group *gr = &m->g[g];
        int64_t k = ms__iter_of_near(it, a->alloc_event, &hint);
        if (k < 0) {
            if (alive_at(a, ref) && N == 0 && ms__alive_end_member(ae, s, si, a))
                gr->alive_end++;
            else if (alive_at(a, ref))
                gr->setup_alive++;
            continue;
        }
        if (N < 2 || !alive_at(a, iter_end(it, (size_t)k)))
            continue; /* freed within its own iteration */
        if (!gr->live_diff) {
            gr->live_diff = calloc(N + 1, sizeof *gr->live_diff);
            gr->live_bdiff = calloc(N + 1, sizeof *gr->live_bdiff);
            gr->surv = calloc(N, sizeof *gr->surv);
            if (!gr->live_diff || !gr->live_bdiff || !gr->surv)
                return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for leak groups");
        }
        /* Alive at the ends of iterations k .. last, where last is the final end not
         * after the free (ends only grow with k, so a binary search finds it: a walk
         * down from the trace's last iteration cost thousands of steps per allocation
         * freed early in a long trace). */
        size_t last = N - 1;
        int64_t rel = release_event(a);
        if (rel >= 0 && iter_end(it, last) > rel) {
            size_t lo = (size_t)k, hi = last; /* iter_end(lo) <= rel or lo == k; iter_end(hi) > rel */
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (iter_end(it, mid) > rel)
                    hi = mid;
                else
                    lo = mid;
            }
            last = lo;
        }
        gr->live_diff[k]++;
        gr->live_diff[last + 1]--;
        gr->live_bdiff[k] += (int64_t)a->size;
        gr->live_bdiff[last + 1] -= (int64_t)a->size;
        if (alive_at(a, ref))
            gr->surv[k]++;
    }
    return 0;
}

/* A finding, still empty, for every group that classifies as one: (*gidx)[g] is group
 * g's finding (SIZE_MAX none); *counts has room for one count per group. */
static int open_findings(ms_leak_report *r, gmap *m, bool no_retained, size_t **gidx_out,
                         size_t **counts_out, ms_error *err)
{
    size_t nfound = 0;
    for (size_t g = 0; g < m->n; g++) {
        classify(&m->g[g], r->iterations->n);
        /* Leaks and suspects never take a retained group's allocations: marks can go
         * without them (a trace whose 500,000 sites each keep one allocation made
         * as many findings). */
        if (no_retained && m->g[g].kind == MS_LEAK_RETAINED)
            m->g[g].kind = -1;
        if (m->g[g].kind >= 0)
            nfound++;
    }
    r->items = calloc(nfound ? nfound : 1, sizeof *r->items);
    if (!r->items)
        return fail_findings(err);
    size_t *gidx = malloc((m->n ? m->n : 1) * sizeof *gidx);
    size_t *counts = calloc(m->n ? m->n : 1, sizeof *counts);
    if (!gidx || !counts) {
        free(gidx);
        free(counts);
        return fail_findings(err);
    }
    for (size_t g = 0; g < m->n; g++) {
        gidx[g] = SIZE_MAX;
        if (m->g[g].kind < 0)
            continue;
        ms_leak *L = &r->items[r->n];
        memset(L, 0, sizeof *L);
        L->kind = (ms_leak_kind)m->g[g].kind;
        L->site = m->g[g].site;
        L->layer = m->g[g].layer;
        L->growth_count = m->g[g].growth_count;
        L->growth_bytes = m->g[g].growth_bytes;
        ms__leak_figures_clear(L);
        gidx[g] = r->n++;
    }
    *gidx_out = gidx;
    *counts_out = counts;
    return 0;
}

/* Second pass: the allocations behind each finding, added to its totals; (*alloc_group)[j]
 * is allocation cand[j]'s finding (UINT32_MAX none), *total how many have one. */
static int collect_allocations(ms_leak_report *r, gmap *m, const ms_snapshot *s,
                               const ms_timeline *t, const ms__stackinfo *si,
                               const ms__alive_end *ae, const size_t *cand, size_t ncand,
                               const size_t *gidx,
                               size_t *counts, uint32_t **alloc_group_out, size_t *total_out,
                               ms_error *err)
{
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    const ms_iterations *it = r->iterations;
    int64_t ref = r->ref_event;
    bool single = it->n <= 1;
    size_t total = 0;
    uint32_t *alloc_group = malloc((ncand ? ncand : 1) * sizeof *alloc_group);
    if (!alloc_group)
        return fail_findings(err);
    for (size_t j = 0; j < ncand; j++) {
        const ms_alloc *a = &t->allocs[cand[j]];
        alloc_group[j] = UINT32_MAX;
        /* A leak's copy made after the last boundary (a loop that keeps something after
         * its optimizer step) is still one of its allocations when it is never freed. */
        bool tail = a->alloc_event >= ref && release_event(a) < 0;
        if (!tail && (a->alloc_event >= ref || !alive_at(a, ref)))
            continue;
        uint32_t g = group_of(m, s, si, a->stack, !tail);
        if (g == UINT32_MAX || g >= m->n || gidx[g] == SIZE_MAX)
            continue;
        if (tail ? m->g[g].kind != MS_LEAK_LEAK
                 : !counts_for(s, si, a, it, ae, m->g[g].kind, ref, single))
            continue;
        ms__leak_figures_add(&r->items[gidx[g]], a, tr, t);
        alloc_group[j] = (uint32_t)gidx[g];
        counts[gidx[g]]++;
        total++;
    }
    *alloc_group_out = alloc_group;
    *total_out = total;
    return 0;
}

/* Drops empty and small findings, lays out their allocation index ranges and sorts them
 * (whole findings move; their index ranges move with them). gidx and counts are reused:
 * per finding, its new place and its allocation count. */
static int lay_out_index(ms_leak_report *r, const ms_leak_options *opt, const size_t *cand,
                         size_t ncand, size_t *gidx, size_t *counts, const uint32_t *alloc_group,
                         size_t total, ms_error *err)
{
    size_t keep = 0;
    for (size_t f = 0; f < r->n; f++) {
        ms_leak *L = &r->items[f];
        gidx[f] = SIZE_MAX;
        if (!L->count || L->bytes < (opt ? opt->min_bytes : 0))
            continue;
        gidx[f] = keep;
        counts[keep] = counts[f];
        r->items[keep++] = *L;
    }
    r->n = keep;
    r->alloc_index = malloc((total ? total : 1) * sizeof *r->alloc_index);
    if (!r->alloc_index)
        return fail_findings(err);
    size_t pos = 0;
    for (size_t f = 0; f < r->n; f++) {
        r->items[f].first_index = pos;
        r->items[f].n_index = 0;
        pos += counts[f];
    }
    for (size_t j = 0; j < ncand; j++) {
        if (alloc_group[j] == UINT32_MAX || gidx[alloc_group[j]] == SIZE_MAX)
            continue;
        ms_leak *L = &r->items[gidx[alloc_group[j]]];
        r->alloc_index[L->first_index + L->n_index++] = cand[j];
    }
    r->n_alloc_index = pos;
    qsort(r->items, r->n, sizeof *r->items, ms__leak_cmp);
    return 0;
}

static int analyse(ms_leak_report *r, const ms_snapshot *s, const ms_timeline *t,
                   const ms__stackinfo *si, const ms_leak_options *opt, bool no_retained,
                   ms__alive_end *ae,
                   ms_error *err)
{
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    const ms_iterations *it = r->iterations;
    size_t N = it->n;
    int64_t ref = N ? it->items[N - 1].end_event : (int64_t)tr->n;
    r->ref_event = ref;

    gmap m;
    memset(&m, 0, sizeof m);
    m.no_stack = UINT32_MAX;
    size_t nst = ms_snapshot_stack_count(s);
    if (nst && (m.by_stack = malloc(nst * sizeof *m.by_stack)) != NULL) {
        memset(m.by_stack, 0xff, nst * sizeof *m.by_stack);
        m.nstacks = nst;
    }
    size_t *gidx = NULL, *counts = NULL, total = 0, *cand = NULL, ncand = 0;
    uint32_t *alloc_group = NULL;
    /* Without iterations nothing can be said to grow or to outlive its iteration: what
     * the forward left alive at the end is one finding of its own (alive_end.c). */
    memset(ae, 0, sizeof *ae);
    ae->call_key = UINT32_MAX;
    int rc = N == 0 ? ms__alive_end_find(ae, s, si, t->allocs, t->n_allocs, err) : 0;
    if (!rc)
        rc = ms__addrmap_init(&m.index, 64)
                 ? count_survivors(&m, s, t, si, it, ae, ref, &cand, &ncand, err)
                 : ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for leak groups");
    if (!rc && N == 1)
        rc = mark_suspects(&m, s, t, si, ref, err);
    if (!rc)
        rc = open_findings(r, &m, no_retained, &gidx, &counts, err);
    if (!rc)
        rc = collect_allocations(r, &m, s, t, si, ae, cand, ncand, gidx, counts, &alloc_group,
                                 &total, err);
    if (!rc)
        rc = lay_out_index(r, opt, cand, ncand, gidx, counts, alloc_group, total, err);
    free(alloc_group);
    free(cand);
    free(gidx);
    free(counts);
    gmap_free(&m);
    return rc;
}

/* The report on `t` with iterations `it` (NULL: found here). `borrowed`: the report
 * points at the caller's iterations, which its caller takes back before freeing it.
 * `no_retained`: without the retained findings of the first stage (for marks). */
static int find_on(ms_leak_report **out, const ms_snapshot *s, const ms_timeline *t,
                   ms_iterations *it, bool borrowed, bool no_retained,
                   const ms_leak_options *opt, ms_error *err)
{
    ms__stackinfo *si = NULL;
    int rc = ms__stackinfo_build(&si, s, err);
    if (rc)
        return rc;
    ms_leak_report *r = calloc(1, sizeof *r);
    if (!r) {
        free(si);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for the leak report");
    }
    r->device = t->device;
    r->iterations = it;
    if (!it) {
        ms_annotation_range *ar = NULL;
        size_t nar = 0;
        rc = ms_annotation_ranges(&ar, &nar, s, t->device, err);
        if (!rc)
            rc = ms__iterations_find(&r->iterations, s, t, si, &(ms__ann){ar, nar},
                                     opt ? &opt->iter : NULL, err);
        free(ar);
    }
    ms__alive_end ae;
    if (!rc)
        rc = analyse(r, s, t, si, opt, no_retained, &ae, err);
    if (!rc)
        rc = ms__leaks_refine(r, s, t, si, &ae, opt ? opt->min_bytes : 0, err);
    if (!rc) {
        const ms_trace *tr = ms_snapshot_trace(s, t->device);
        for (size_t i = 0; i < tr->n; i++)
            if (tr->action[i] == MS_ACT_OOM) {
                if (!r->oom_count++) {
                    r->first_oom_us = tr->time_us[i];
                    r->first_oom_bytes = tr->size[i];
                }
            }
    }
    free(si);
    if (rc) {
        if (borrowed)
            r->iterations = NULL;
        ms_leak_report_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

static int check_timeline(const ms_snapshot *s, int device, const ms_timeline *t, ms_error *err)
{
    if (!s || device < 0 || device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no device %d in this snapshot", device);
    if (t && t->device != device)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "timeline is for device %d, not %d",
                        t->device, device);
    if (t && (!t->active || (!t->allocs && t->n_allocs)))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET,
                        "leaks need a timeline built with MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS");
    return 0;
}

static int find_with(ms_leak_report **out, const ms_snapshot *s, const ms_timeline *t,
                     const ms_leak_options *opt, ms_error *err)
{
    return find_on(out, s, t, NULL, false, false, opt, err);
}

/* ------------------------------------------------------------------ totals alone */

/* The lives a leak can hold, kept from a replay: those alive at an iteration end or at
 * the reference point, and those made after it and never released. Every other life
 * only opens an empty (site, layer) group, so the findings of leaks (and their totals)
 * are those the whole list gives. Trace lives come by their ends; they go back into
 * alloc order after, the rebuilt ones after them in the order they come, as the
 * timeline keeps them. */
typedef struct lean_lives {
    const int64_t *ends; /* iteration ends and the reference point, ascending */
    size_t n_ends;
    int64_t ref;
    ms_alloc *trace, *pre;
    size_t n_trace, cap_trace, n_pre, cap_pre;
    bool nomem;
} lean_lives;

static void lean_keep(void *ctx, const ms_alloc *a)
{
    lean_lives *L = ctx;
    int64_t rel = release_event(a);
    size_t lo = 0, hi = L->n_ends; /* the first end after the allocation */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (L->ends[mid] <= a->alloc_event)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool keep = (lo < L->n_ends && (rel < 0 || rel >= L->ends[lo])) ||
                (a->alloc_event >= L->ref && rel < 0);
    if (!keep || L->nomem)
        return;
    bool pre = a->alloc_event < 0;
    ms_alloc **arr = pre ? &L->pre : &L->trace;
    size_t *n = pre ? &L->n_pre : &L->n_trace, *cap = pre ? &L->cap_pre : &L->cap_trace;
    if (!ms__grow((void **)arr, cap, *n + 1, sizeof **arr)) {
        L->nomem = true;
        return;
    }
    (*arr)[(*n)++] = *a;
}

static int by_alloc_event(const void *x, const void *y)
{
    return MS__CMP(((const ms_alloc *)x)->alloc_event, ((const ms_alloc *)y)->alloc_event);
}

int ms__leak_totals_lean(ms_leak_totals *out, const ms_snapshot *s, const ms_timeline *t,
                         const ms_iterations *it, const ms_leak_options *opt, ms_error *err)
{
    *out = (ms_leak_totals){0, 0, 0.0};
    if (!t->active)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "leak totals need the active curve");
    int rc = 0;
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    size_t N = it->n;
    lean_lives L;
    memset(&L, 0, sizeof L);
    L.ref = N ? it->items[N - 1].end_event : (int64_t)tr->n;
    int64_t *ends = malloc((N + 1) * sizeof *ends);
    if (!ends)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for leak totals");
    for (size_t k = 0; k < N; k++)
        ends[L.n_ends++] = iter_end(it, k);
    ends[L.n_ends++] = L.ref; /* ends only grow with k, and the last is ref itself */
    L.ends = ends;
    rc = ms__timeline_replay(s, t, lean_keep, &L, NULL, NULL, err);
    ms_alloc *all = NULL;
    if (!rc && !L.nomem)
        all = malloc((L.n_trace + L.n_pre + 1) * sizeof *all);
    if (!rc && !all)
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for leak totals");
    ms_leak_report *r = NULL;
    if (!rc) {
        if (L.n_trace)
            qsort(L.trace, L.n_trace, sizeof *L.trace, by_alloc_event);
        if (L.n_trace)
            memcpy(all, L.trace, L.n_trace * sizeof *all);
        if (L.n_pre)
            memcpy(all + L.n_trace, L.pre, L.n_pre * sizeof *all);
        free(L.trace);
        free(L.pre);
        L.trace = L.pre = NULL;
        ms_timeline lean = *t;
        lean.allocs = all;
        lean.n_allocs = L.n_trace + L.n_pre;
        lean.peak_alive = NULL;
        lean.n_peak_alive = 0;
        rc = find_on(&r, s, &lean, (ms_iterations *)it, true, false, opt, err);
    }
    if (!rc)
        *out = ms_leak_report_totals(r);
    if (r)
        r->iterations = NULL; /* the caller's */
    ms_leak_report_free(r);
    free(all);
    free(L.trace);
    free(L.pre);
    free(ends);
    return rc;
}

int ms_leak_report_build(ms_leak_report **out, const ms_snapshot *s, int device,
                         const ms_timeline *t, const ms_leak_options *opt, ms_error *err)
{
    *out = NULL;
    int rc = check_timeline(s, device, t, err);
    if (rc)
        return rc;
    ms_timeline *own = NULL;
    if (!t) {
        rc = ms_timeline_build(&own, s, device, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS, err);
        if (rc)
            return rc;
        t = own;
    }
    rc = find_with(out, s, t, opt, err);
    ms_timeline_free(own);
    return rc;
}

int ms__leak_report_on(ms_leak_report **out, const ms_snapshot *s, const ms_timeline *t,
                       ms_iterations *it, const ms_leak_options *opt, ms_error *err)
{
    *out = NULL;
    int rc = check_timeline(s, t->device, t, err);
    return rc ? rc : find_on(out, s, t, it, true, false, opt, err);
}

int ms_leak_marks_build(ms_leak_mark **out, size_t *n_out, const ms_snapshot *s,
                        const ms_timeline *t, const ms_leak_options *opt, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (!t)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "leak marks need the chart's timeline");
    int rc = check_timeline(s, t->device, t, err);
    if (rc)
        return rc;
    ms_leak_report *r = NULL;
    rc = find_on(&r, s, t, NULL, false, true, opt, err);
    if (rc)
        return rc;
    rc = ms_leak_marks_from_report(out, n_out, s, t, r, err);
    ms_leak_report_free(r);
    return rc;
}

int ms__leak_marks_with(ms_leak_mark **out, size_t *n_out, const ms_snapshot *s,
                        const ms_timeline *t, const ms_iterations *it,
                        const ms_leak_options *opt, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    int rc = check_timeline(s, t->device, t, err);
    if (rc)
        return rc;
    ms_leak_report *r = NULL;
    rc = find_on(&r, s, t, (ms_iterations *)it, true, true, opt, err);
    if (!rc)
        rc = ms_leak_marks_from_report(out, n_out, s, t, r, err);
    if (r)
        r->iterations = NULL; /* the caller's */
    ms_leak_report_free(r);
    return rc;
}

int ms_leak_marks_from_report(ms_leak_mark **out, size_t *n_out, const ms_snapshot *s,
                              const ms_timeline *t, const ms_leak_report *r, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    if (!s || !t || !r)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "leak marks need a report and its timeline");
    size_t n = 0;
    for (size_t f = 0; f < r->n; f++)
        if (r->items[f].kind != MS_LEAK_RETAINED)
            n += r->items[f].n_index;
    ms_leak_mark *mk = calloc(n ? n : 1, sizeof *mk);
    if (!mk)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for leak marks");
    size_t k = 0, finding = 0;
    for (size_t f = 0; f < r->n; f++) {
        const ms_leak *L = &r->items[f];
        if (L->kind == MS_LEAK_RETAINED)
            continue;
        char site[120] = "unknown site", grouped[160] = "";
        if (L->site != UINT32_MAX)
            ms_site_format(s, L->site, site, sizeof site);
        if (L->kind == MS_LEAK_ALIVE_AT_END) {
            char bytes[32], where[96] = "";
            ms_format_bytes((int64_t)L->bytes, bytes, sizeof bytes);
            if (L->call_site != UINT32_MAX)
                ms_site_format(s, L->call_site, where, sizeof where);
            snprintf(grouped, sizeof grouped, "alive at the end: %s of the forward%s%s, %s",
                     L->pattern == MS_LEAK_PATTERN_END_GRAPH ? "the graph" : "the output",
                     where[0] ? " called at " : "", where, bytes);
        } else if (L->n_members > 1) {
            /* Several sites, one cause: the label names the pattern, not one member, and
             * for a graph the line that called the model. */
            char bytes[32], where[96];
            ms_format_bytes((int64_t)L->bytes, bytes, sizeof bytes);
            if (L->pattern != MS_LEAK_PATTERN_GRAPH || L->call_site == UINT32_MAX ||
                ms_site_format(s, L->call_site, where, sizeof where) == 0)
                snprintf(where, sizeof where, "%s", site);
            snprintf(grouped, sizeof grouped, "%s %s, %zu sites, %s: %s",
                     ms_leak_pattern_name(L->pattern), ms_leak_kind_name(L->kind), L->n_members,
                     bytes, where);
        }
        /* The finding's whole size, with its count: a leak of four 8 KiB tensors is
         * 32 KiB, and one allocation's size alone would understate it four times. */
        char size[96], total[32], each[32];
        ms_format_bytes((int64_t)L->bytes, total, sizeof total);
        ms_format_bytes((int64_t)L->bytes_each_max, each, sizeof each);
        if (L->count <= 1)
            snprintf(size, sizeof size, "%s", total);
        else if (L->bytes_each_min == L->bytes_each_max)
            snprintf(size, sizeof size, "%llu × %s = %s", (unsigned long long)L->count, each,
                     total);
        else
            snprintf(size, sizeof size, "%llu allocations, %s", (unsigned long long)L->count,
                     total);
        for (size_t j = 0; j < L->n_index; j++) {
            size_t ai = r->alloc_index[L->first_index + j];
            mk[k].alloc_index = ai;
            mk[k].kind = L->kind;
            mk[k].finding = finding;
            if (grouped[0])
                snprintf(mk[k].label, sizeof mk[k].label, "%s", grouped);
            else
                /* Figures first, as a group's label has them: a label cut to fit loses the
                 * end of the function name, not the size. */
                snprintf(mk[k].label, sizeof mk[k].label, "%s: %s", size, site);
            k++;
        }
        finding++;
    }
    *out = mk;
    *n_out = k;
    return 0;
}
