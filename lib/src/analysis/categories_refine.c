/* The categories' second look, once every allocation has a first category: what the
 * rule for one allocation alone cannot tell. Gradients written into buffers a compiled
 * forward saved (reused gradients), parameters made after training began (late
 * parameters) and the backward's workspace on python-only stacks each need the others'
 * categories or lives, so they are kept apart from the per-allocation rule in
 * categories.c, which stays about cutting the trace into phases. */
#include <stdlib.h>
#include <string.h>

#include "cat_internal.h"
#include "internal.h"

/* The sorted sizes of what is called a parameter; NULL with *np 0 when none (or out of
 * memory: *oom). */
uint64_t *ms__cat_param_sizes(const ms_alloc *allocs, size_t n, const uint8_t *cat, size_t *np,
                              bool *oom)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += cat[i] == MS_CAT_PARAMETER;
    *np = 0;
    if (!m)
        return NULL;
    uint64_t *sz = malloc(m * sizeof *sz);
    if (!sz) {
        *oom = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (cat[i] == MS_CAT_PARAMETER)
            sz[(*np)++] = allocs[i].size;
    qsort(sz, *np, sizeof *sz, ms__cmp_u64);
    return sz;
}

static size_t count_size(const uint64_t *sz, size_t n, uint64_t v)
{
    size_t lo = ms__lower_u64(sz, n, v), c = 0;
    while (lo + c < n && sz[lo + c] == v)
        c++;
    return c;
}

size_t ms__cat_first_made_at(const ms_alloc *allocs, size_t n, int64_t event)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (allocs[mid].alloc_event >= 0 && allocs[mid].alloc_event < event)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Compiled backward code (Inductor) writes a gradient into a buffer its forward saved
 * for it, once that buffer's last use is done: the .grad then lives in memory made in
 * the forward. The trace shows it as an allocation of the forward that outlives the
 * backward (flagged by the classification), has a parameter's size, and is freed among
 * that backward's gradients (by zero_grad), where activations saved for backward are
 * freed inside it. */
static size_t count_flagged(const uint8_t *origin, size_t n, uint8_t flag)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (origin[i] & flag) != 0;
    return c;
}

/* The sizes of the late-parameter candidates among `allocs` (MS__CAT_LATE_CAND),
 * ascending, in *out: how many (0 and *out NULL when none), SIZE_MAX when out of
 * memory. */
static size_t late_sizes(uint64_t **out, const ms_alloc *allocs, size_t n, const uint8_t *origin)
{
    *out = NULL;
    size_t nc = count_flagged(origin, n, MS__CAT_LATE_CAND);
    if (!nc)
        return 0;
    uint64_t *v = malloc(nc * sizeof *v);
    if (!v)
        return SIZE_MAX;
    nc = 0;
    for (size_t i = 0; i < n; i++)
        if (origin[i] & MS__CAT_LATE_CAND)
            v[nc++] = allocs[i].size;
    qsort(v, nc, sizeof *v, ms__cmp_u64);
    *out = v;
    return nc;
}

typedef struct reuse_cand {
    size_t alloc;
    size_t bwd; /* segment of the backward it was saved for */
} reuse_cand;

static int refine_reused_grads(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n,
                               uint8_t *cat, uint8_t *why, const uint8_t *origin)
{
    size_t any = count_flagged(origin, n, MS__CAT_REUSE_CAND);
    if (!any)
        return 0;
    bool oom = false;
    size_t np = 0;
    uint64_t *sz = ms__cat_param_sizes(allocs, n, cat, &np, &oom);
    reuse_cand *rc = malloc(any * sizeof *rc);
    if (oom || !rc) {
        free(sz);
        free(rc);
        return MS_ERR_NOMEM;
    }
    size_t nrc = 0;
    for (size_t i = 0; i < n && np; i++) {
        const ms_alloc *a = &allocs[i];
        if (!(origin[i] & MS__CAT_REUSE_CAND) || why[i] != MS_CATR_FORWARD_KEPT ||
            !bsearch(&a->size, sz, np, sizeof *sz, ms__cmp_u64))
            continue;
        rc[nrc++] = (reuse_cand){i, x->bwd_after[ms__cat_seg_of(x, a->alloc_event)]};
    }
    free(sz);
    /* Candidates come by alloc event, so their backwards in order: for each, the first
     * and last free of the gradients it made, from its own allocations only. */
    size_t last = SIZE_MAX;
    int64_t w0 = 0, w1 = -1;
    for (size_t k = 0; k < nrc; k++) {
        size_t j = rc[k].bwd;
        if (j != last) {
            last = j;
            w0 = INT64_MAX;
            w1 = -1;
            for (size_t i = ms__cat_first_made_at(allocs, n, x->segs[j].start);
                 i < n && allocs[i].alloc_event >= 0 && allocs[i].alloc_event < x->segs[j].end;
                 i++) {
                if (why[i] != MS_CATR_BACKWARD_KEPT || allocs[i].free_event < 0)
                    continue;
                w0 = allocs[i].free_event < w0 ? allocs[i].free_event : w0;
                w1 = allocs[i].free_event > w1 ? allocs[i].free_event : w1;
            }
        }
        const ms_alloc *a = &allocs[rc[k].alloc];
        if (a->free_event < w0 || a->free_event > w1)
            continue;
        cat[rc[k].alloc] = MS_CAT_GRADIENT;
        why[rc[k].alloc] = MS_CATR_BACKWARD_REUSED;
    }
    free(rc);
    return 0;
}

/* (size, ordinal of the phase that made it) of gradients or optimizer state. */
typedef struct size_ord {
    uint64_t size;
    uint32_t ord;
} size_ord;

static int cmp_size_ord(const void *a, const void *b)
{
    const size_ord *x = a, *y = b;
    return MS__CMP2(x->size, y->size, x->ord, y->ord);
}

/* The ordinal of the first segment of `kind` starting after `event`; UINT32_MAX none. */
static uint32_t next_ordinal(const ms__cat_ctx *x, int64_t event, uint8_t kind)
{
    for (size_t k = ms__cat_seg_of(x, event) + 1; k < x->nsegs; k++)
        if (x->segs[k].kind == kind)
            return x->segs[k].ordinal;
    return UINT32_MAX;
}

/* The ordinal of the backward a gradient belongs to. */
static uint32_t grad_backward(const ms__cat_ctx *x, const ms_alloc *a, uint8_t why)
{
    size_t k = ms__cat_seg_of(x, a->alloc_event);
    if (why == MS_CATR_BACKWARD_REUSED && x->bwd_after[k] != SIZE_MAX)
        k = x->bwd_after[k];
    return x->segs[k].ordinal;
}

/* Parameters made after training began (nn.LazyLinear's first forward, a model
 * materialised from the meta device in a pre-hook, a layer added mid-run) look like
 * activations or inputs that are never freed. What tells them apart is what training
 * does with a parameter: every backward after it makes a gradient of its size, and the
 * first optimizer step after that makes state of its size (when the optimizer keeps
 * any). Caches and buffers have no gradient and stay what they were. A size held by
 * more never-freed candidates and parameters than the last backward makes gradients of
 * is ambiguous and left alone. */
static int refine_late_params(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n,
                              uint8_t *cat, uint8_t *why, const uint8_t *origin)
{
    uint64_t *csz;
    size_t nc = late_sizes(&csz, allocs, n, origin);
    if (nc == SIZE_MAX)
        return MS_ERR_NOMEM;
    if (!nc)
        return 0;
    /* The last backward must make a gradient of a candidate's size: most candidates
     * (library workspaces, leaked tensors) fail here, on that backward's allocations
     * alone. */
    bool op = false;
    size_t np = 0;
    uint64_t *psz = ms__cat_param_sizes(allocs, n, cat, &np, &op);
    size_t *in_last = calloc(nc, sizeof *in_last);
    if (op || !in_last) {
        free(csz);
        free(psz);
        free(in_last);
        return MS_ERR_NOMEM;
    }
    const ms__cat_seg *lb = &x->segs[x->last_bwd];
    for (size_t i = ms__cat_first_made_at(allocs, n, lb->start);
         i < n && allocs[i].alloc_event >= 0 && allocs[i].alloc_event < lb->end; i++)
        if (cat[i] == MS_CAT_GRADIENT) {
            size_t lo = ms__lower_u64(csz, nc, allocs[i].size);
            if (lo < nc && csz[lo] == allocs[i].size)
                in_last[lo]++;
        }
    /* Sizes held by more candidates and parameters than the last backward made
     * gradients of are out; none left, nothing to do. */
    size_t live = 0;
    for (size_t k = 0; k < nc;) {
        size_t same = 1;
        while (k + same < nc && csz[k + same] == csz[k])
            same++;
        if (in_last[k] < same + count_size(psz, np, csz[k]))
            memset(csz + k, 0, same * sizeof *csz);
        else
            live += same;
        k += same;
    }
    free(in_last);
    if (!live) {
        free(csz);
        free(psz);
        return 0;
    }
    /* csz keeps the sizes that passed (0 for the others, first after sorting). */
    qsort(csz, nc, sizeof *csz, ms__cmp_u64);
    size_t off = nc - live;
    uint64_t *ok_sz = csz + off;
    size_t nok = live;
    uint64_t lo_sz = ok_sz[0], hi_sz = ok_sz[nok - 1];
    /* Gradients and optimizer state of the candidates' sizes only: few records. */
    size_ord *g = NULL, *o = NULL;
    size_t ng = 0, cg = 0, no = 0, co = 0;
    bool any_state = false, oom = false;
    for (size_t i = 0; i < n && !oom; i++) {
        bool grad = cat[i] == MS_CAT_GRADIENT;
        bool state = why[i] == MS_CATR_OPTIMIZER_KEPT;
        if (!grad && !state)
            continue;
        any_state |= state;
        const ms_alloc *a = &allocs[i];
        if (a->size < lo_sz || a->size > hi_sz || !count_size(ok_sz, nok, a->size))
            continue;
        if (grad && ms__grow((void **)&g, &cg, ng + 1, sizeof *g))
            g[ng++] = (size_ord){a->size, grad_backward(x, a, why[i])};
        else if (state && ms__grow((void **)&o, &co, no + 1, sizeof *o))
            o[no++] = (size_ord){a->size, x->segs[ms__cat_seg_of(x, a->alloc_event)].ordinal};
        else
            oom = true;
    }
    if (oom) {
        free(csz);
        free(g);
        free(o);
        free(psz);
        return MS_ERR_NOMEM;
    }
    if (ng)
        qsort(g, ng, sizeof *g, cmp_size_ord);
    if (no)
        qsort(o, no, sizeof *o, cmp_size_ord);
    uint32_t nbwd = (uint32_t)x->counts[MS__PH_BWD];
    for (size_t i = 0; i < n; i++) {
        if (!(origin[i] & MS__CAT_LATE_CAND))
            continue;
        const ms_alloc *a = &allocs[i];
        uint32_t b0 = next_ordinal(x, a->alloc_event, MS__PH_BWD);
        if (b0 == UINT32_MAX)
            continue;
        /* This size's gradients, by backward: one in each from b0 on. */
        size_ord key = {a->size, b0};
        size_t lo = ms__lower_bound(g, ng, sizeof *g, &key, cmp_size_ord);
        uint32_t want = b0;
        for (size_t k = lo; k < ng && g[k].size == a->size; k++)
            want += g[k].ord == want;
        if (want != nbwd || !count_size(ok_sz, nok, a->size))
            continue;
        if (any_state) {
            /* The first optimizer step after its first backward. */
            uint32_t o0 = UINT32_MAX;
            for (size_t k = 0; k < x->nsegs; k++)
                if (x->segs[k].kind == MS__PH_BWD && x->segs[k].ordinal == b0) {
                    o0 = next_ordinal(x, x->segs[k].start, MS__PH_OPT);
                    break;
                }
            size_ord okey = {a->size, o0};
            if (o0 == UINT32_MAX || !no || !bsearch(&okey, o, no, sizeof *o, cmp_size_ord))
                continue;
        }
        cat[i] = MS_CAT_PARAMETER;
        why[i] = MS_CATR_LATE_PARAMETER;
    }
    free(csz);
    free(g);
    free(o);
    free(psz);
    return 0;
}

/* Only stacks='python' needs this: with C++ frames the workspace names itself. The
 * autograd thread's cuBLAS handle gets its own workspace at the first backward matmul,
 * made in backward and never freed like a kept .grad; but every .grad has the size of
 * its parameter, and the workspace has none's. */
static int refine_backward_workspace(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n,
                                     uint8_t *cat, uint8_t *why)
{
    if (x->cpp_stacks || x->counts[MS__PH_BWD] < 2)
        return 0;
    bool oom = false;
    size_t np = 0;
    uint64_t *sz = ms__cat_param_sizes(allocs, n, cat, &np, &oom);
    if (oom)
        return MS_ERR_NOMEM;
    if (!np)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const ms_alloc *a = &allocs[i];
        if (why[i] != MS_CATR_BACKWARD_KEPT || a->free_event >= 0)
            continue;
        size_t k = ms__cat_seg_of(x, a->alloc_event);
        if (k >= x->nsegs || x->segs[k].ordinal != 0 ||
            bsearch(&a->size, sz, np, sizeof *sz, ms__cmp_u64))
            continue;
        cat[i] = MS_CAT_WORKSPACE;
        why[i] = MS_CATR_WORKSPACE_PATTERN;
    }
    free(sz);
    return 0;
}

int ms__cat_refine(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n, uint8_t *cat,
                   uint8_t *why, const uint8_t *origin)
{
    if (!x->have_phases)
        return 0;
    int rc = refine_reused_grads(x, allocs, n, cat, why, origin);
    if (!rc)
        rc = refine_late_params(x, allocs, n, cat, why, origin);
    /* Before the backward's workspace: a parameter the step finds gives its gradients a
     * parameter's size (a kept .grad of a lazy parameter is no workspace). */
    if (!rc)
        rc = ms__cat_refine_mirrored(x, allocs, n, cat, why);
    if (!rc)
        rc = refine_backward_workspace(x, allocs, n, cat, why);
    return rc;
}

bool ms__cat_refine_needs_all(const ms_alloc *a, uint8_t why, uint8_t origin,
                              const uint64_t *param_sz, size_t np)
{
    return (origin & MS__CAT_REUSE_CAND) && why == MS_CATR_FORWARD_KEPT && np &&
           bsearch(&a->size, param_sz, np, sizeof *param_sz, ms__cmp_u64);
}

typedef struct addr_ev {
    uint64_t addr;
    int64_t event;
    size_t size_index; /* into the candidates' sorted sizes */
    bool freed;
} addr_ev;

static int cmp_addr_ev(const void *a, const void *b)
{
    const addr_ev *x = a, *y = b;
    return MS__CMP2(x->addr, y->addr, x->event, y->event);
}

/* Whether any late-parameter candidate among `allocs` could pass: the last backward must
 * make at least as many gradients (allocations alive after it) of the candidate's size
 * as the candidates and parameters among `allocs` hold. A necessary condition of the
 * rule on the whole trace, read from the last backward's own events, so a caller with a
 * few allocations (the summary's peak) skips classifying all of them in the usual case:
 * a library workspace, or a leaked tensor. -1 when out of memory. */
int ms__cat_late_possible(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n,
                          const uint8_t *origin, const uint64_t *psz, size_t np)
{
    uint64_t *csz;
    size_t nc = late_sizes(&csz, allocs, n, origin);
    if (nc == SIZE_MAX)
        return -1;
    if (!nc)
        return 0;
    size_t *in_last = calloc(nc, sizeof *in_last);
    addr_ev *m = NULL;
    size_t nm = 0, cm = 0;
    int rc = 0;
    if (!in_last) {
        rc = -1;
        goto out;
    }
    const ms_trace *tr = x->tr;
    const ms__cat_seg *lb = &x->segs[x->last_bwd];
    for (int64_t e = lb->start; e < lb->end && (uint64_t)e < tr->n; e++) {
        if (tr->action[e] != MS_ACT_ALLOC)
            continue;
        size_t lo = ms__lower_u64(csz, nc, tr->size[e]);
        if (lo == nc || csz[lo] != tr->size[e])
            continue;
        if (!ms__grow((void **)&m, &cm, nm + 1, sizeof *m)) {
            rc = -1;
            goto out;
        }
        m[nm++] = (addr_ev){tr->addr[e], e, lo, false};
    }
    if (nm)
        qsort(m, nm, sizeof *m, cmp_addr_ev);
    /* A free before the backward closed ends the latest of its address made before it. */
    for (int64_t f = lb->start; nm && f < lb->close && (uint64_t)f < tr->n; f++) {
        if (tr->action[f] != MS_ACT_FREE_COMPLETED)
            continue;
        addr_ev key = {tr->addr[f], f, 0, false};
        size_t lo = ms__lower_bound(m, nm, sizeof *m, &key, cmp_addr_ev);
        if (lo > 0 && m[lo - 1].addr == key.addr && !m[lo - 1].freed)
            m[lo - 1].freed = true;
    }
    for (size_t k = 0; k < nm; k++)
        if (!m[k].freed)
            in_last[m[k].size_index]++;
    for (size_t k = 0; k < nc && !rc;) {
        size_t same = 1;
        while (k + same < nc && csz[k + same] == csz[k])
            same++;
        if (in_last[k] >= same + count_size(psz, np, csz[k]))
            rc = 1;
        k += same;
    }
out:
    free(csz);
    free(in_last);
    free(m);
    return rc;
}
