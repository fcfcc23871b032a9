/* Iterations from live memory alone: the program's live curve, its lowest points between
 * markers found elsewhere, and its valleys where memory returns to a baseline. */
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "compile_internal.h"
#include "internal.h"
#include "iter_cand.h"

int ms__iter_program_curve(curve *cv, const ms_trace *tr, ms_error *err)
{
    memset(cv, 0, sizeof *cv);
    size_t n = tr->n;
    /* Addresses alive, each with the event that allocated it (its size is that event's);
     * events are counted in 32 bits, as the timeline counts its records. */
    ms_addrmap live;
    cv->v = n < UINT32_MAX ? malloc((n ? n : 1) * sizeof *cv->v) : NULL;
    if (!cv->v || !ms__addrmap_init(&live, n < 4096 ? n : 4096)) {
        free(cv->v);
        cv->v = NULL;
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for the live curve");
    }
    int64_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t a = tr->action[i];
        if (a == MS_ACT_ALLOC || a == MS_ACT_FREE_REQUESTED || a == MS_ACT_FREE_COMPLETED) {
            size_t j = ms__addrmap_find(&live, tr->addr[i]);
            if (j != SIZE_MAX) {
                cur -= (int64_t)tr->size[live.vals[j]];
                ms__addrmap_remove_at(&live, j);
            }
            if (a == MS_ACT_ALLOC) {
                if (!ms__addrmap_put(&live, tr->addr[i], (uint32_t)i)) {
                    ms__addrmap_free(&live);
                    free(cv->v);
                    cv->v = NULL;
                    return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for the live curve");
                }
                cur += (int64_t)tr->size[i];
            }
        }
        cv->v[i] = cur;
    }
    cv->n = n;
    ms__addrmap_free(&live);
    return 0;
}

/* The earliest lowest point of live memory in events [from, to): where the loop has
 * released the previous iteration's temporaries and not yet started the next. Returns
 * the index of the first event after that point. */
int64_t ms__iter_lowest_cut(const curve *cv, const ms_trace *tr, int64_t from, int64_t to)
{
    int64_t best = from;
    int64_t best_v = from > 0 ? cv->v[from - 1] : cv->start;
    for (int64_t i = from; i < to; i++)
        if (cv->v[i] < best_v) {
            best_v = cv->v[i];
            best = i + 1;
        }
    /* Events that leave the curve flat (the free_completed after its free_requested,
     * segment bookkeeping) still close the iteration; the next one starts at the rise. */
    while (best < to && cv->v[best] == best_v && !seg_acquire(tr->action[best]))
        best++;
    return best;
}

/* Valleys of the live-memory curve by hysteresis: a valley is kept when memory fell at
 * least `p` to reach it and rises at least `p` after it. For each: the index after its
 * (earliest) lowest point, its value, and the highest point between it and the previous
 * valley; *tail gets the highest point after the last valley. */
typedef struct valley {
    int64_t cut, value, peak_before, prominence;
} valley;

static size_t zigzag(const curve *cv, int64_t p, valley *out, size_t cap, int64_t *tail)
{
    size_t n = cv->n, m = 0;
    int trend = 0;
    int64_t hi = cv->start, lo = cv->start, last_peak = cv->start;
    size_t lo_i = 0;
    bool have_peak = false;
    for (size_t i = 0; i < n; i++) {
        int64_t v = cv->v[i];
        if (trend >= 0) {
            if (v > hi)
                hi = v;
            if (hi - v >= p) {
                last_peak = hi;
                have_peak = true;
                trend = -1;
                lo = v;
                lo_i = i;
                continue;
            }
            if (trend == 0 && v < lo) {
                lo = v;
                lo_i = i;
            }
            if (trend == 0 && v - lo >= p)
                trend = 1;
        } else {
            if (v < lo) {
                lo = v;
                lo_i = i;
            }
            if (v - lo >= p) {
                if (have_peak && m < cap)
                    out[m++] = (valley){(int64_t)lo_i + 1, lo, last_peak, 0};
                trend = 1;
                hi = v;
            }
        }
    }
    *tail = trend >= 0 ? hi : last_peak;
    return m;
}

/* Topographic prominence of each valley: how far memory must rise, on the lower of its
 * two sides, before reaching a deeper valley (or the trace edge). Dips inside an
 * iteration (between layers of the backward pass, before the optimizer's temporaries)
 * are bounded by a small local peak; iteration boundaries by the iteration's peak. A
 * monotonic stack keeps this linear in the number of valleys. */
static bool prominence(valley *v, size_t m, int64_t tail)
{
    size_t *stack = malloc((m ? m : 1) * sizeof *stack);
    int64_t *smax = malloc((m ? m : 1) * sizeof *smax);
    int64_t *left = malloc((m ? m : 1) * sizeof *left);
    if (!stack || !smax || !left) {
        free(stack);
        free(smax);
        free(left);
        return false;
    }
    /* Left to right: the highest peak since the previous strictly deeper valley. */
    size_t top = 0;
    int64_t gmax = INT64_MIN;
    for (size_t k = 0; k < m; k++) {
        int64_t cur = v[k].peak_before;
        if (cur > gmax)
            gmax = cur;
        while (top && v[stack[top - 1]].value >= v[k].value) {
            if (smax[top - 1] > cur)
                cur = smax[top - 1];
            top--;
        }
        if (top) {
            left[k] = smax[top - 1] > cur ? smax[top - 1] : cur;
            if (cur > smax[top - 1])
                smax[top - 1] = cur;
        } else {
            left[k] = gmax;
        }
        stack[top] = k;
        smax[top] = INT64_MIN;
        top++;
    }
    /* Right to left, the same with the peak after each valley. */
    top = 0;
    gmax = INT64_MIN;
    for (size_t kk = m; kk-- > 0;) {
        int64_t cur = kk + 1 < m ? v[kk + 1].peak_before : tail;
        if (cur > gmax)
            gmax = cur;
        while (top && v[stack[top - 1]].value >= v[kk].value) {
            if (smax[top - 1] > cur)
                cur = smax[top - 1];
            top--;
        }
        int64_t right;
        if (top) {
            right = smax[top - 1] > cur ? smax[top - 1] : cur;
            if (cur > smax[top - 1])
                smax[top - 1] = cur;
        } else {
            right = gmax;
        }
        stack[top] = kk;
        smax[top] = INT64_MIN;
        top++;
        int64_t side = left[kk] < right ? left[kk] : right;
        v[kk].prominence = side - v[kk].value;
    }
    free(stack);
    free(smax);
    free(left);
    return true;
}

static int cmp_prominence_desc(const void *a, const void *b)
{
    return MS__CMP(((const valley *)b)->prominence, ((const valley *)a)->prominence);
}

static int cmp_cut(const void *a, const void *b)
{
    return MS__CMP(((const valley *)a)->cut, ((const valley *)b)->cut);
}

/* ------------------------------------------------------------------ repetition */

static bool is_forward_alloc(const ms_trace *tr, const ms__stackinfo *si, size_t i)
{
    uint32_t st = tr->stack[i];
    return tr->action[i] == MS_ACT_ALLOC && st != MS_NO_STACK && si[st].fwd_depth > 0 &&
           !(si[st].flags & MS__ST_COMPILE);
}

/* Backward work: the autograd engine's frames, or (stacks='python') an allocation
 * without a Python frame in a trace whose forwards have them. */
static bool is_backward_alloc(const ms_trace *tr, const ms__stackinfo *si, size_t i)
{
    uint32_t st = tr->stack[i];
    if (tr->action[i] != MS_ACT_ALLOC)
        return false;
    return st == MS_NO_STACK || (si[st].flags & MS__ST_BACKWARD) ||
           !(si[st].flags & MS__ST_PYTHON);
}

/* What allocations of events [from, to) made, as sorted keys: their sites, or their
 * sizes where they have no stack; compile work is left out. Sizes alone would tell
 * iterations of varying shapes (a seeded churn, padded batches) apart. */
static size_t signature(uint64_t *out, const ms_snapshot *s, const ms_trace *tr,
                        const ms__stackinfo *si, int64_t from, int64_t to)
{
    size_t n = 0;
    for (int64_t i = from; i < to; i++) {
        if (tr->action[i] != MS_ACT_ALLOC)
            continue;
        uint32_t st = tr->stack[i];
        if (st != MS_NO_STACK && (si[st].flags & MS__ST_COMPILE))
            continue;
        out[n++] = st == MS_NO_STACK ? tr->size[i] << 1 : (uint64_t)ms_stack_site(s, st) << 1 | 1;
    }
    qsort(out, n, sizeof *out, ms__cmp_u64);
    return n;
}

/* The share of two sorted multisets they have in common, of the larger. */
static double overlap(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    size_t i = 0, j = 0, common = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j]) {
            common++;
            i++;
            j++;
        } else if (a[i] < b[j]) {
            i++;
        } else {
            j++;
        }
    }
    size_t big = na > nb ? na : nb;
    return big ? (double)common / (double)big : 1.0;
}

/* Whether the stretches between the cuts repeat, as iterations do; a return to a
 * baseline alone is not enough. One backward pass frees its activations layer by layer,
 * and every layer's share looks like a valley: none of those stretches starts a forward
 * pass, so where the trace has forward frames, a cut followed by backward work and no
 * forward allocation before the next one is dropped (its stretch joins the one before;
 * a loop that runs no model, a churn of buffers, keeps its cuts). The
 * stretches left must then make the same allocations (sites, or sizes without stacks) as
 * their neighbours, at least half of the pairs sharing half of them, and the baseline must
 * not fall at every cut (a staircase of releases). Sets *keep to the cuts kept; false
 * when they are not iterations. *ok false: out of memory. */
static bool repeats(const ms_snapshot *s, const ms_trace *tr, const curve *cv,
                    const ms__stackinfo *si, const ms__ann *ann, int64_t *cut, size_t *keep,
                    bool *ok)
{
    int64_t n = (int64_t)tr->n;
    size_t m = *keep;
    bool has_fwd = false;
    for (int64_t i = 0; i < n && !has_fwd; i++)
        has_fwd = is_forward_alloc(tr, si, (size_t)i);
    if (has_fwd) {
        size_t k = 0;
        for (size_t j = 0; j < m; j++) {
            int64_t to = j + 1 < m ? cut[j + 1] : n;
            bool fwd = false, bwd = false;
            for (int64_t i = cut[j]; i < to && !fwd; i++) {
                fwd = is_forward_alloc(tr, si, (size_t)i);
                bwd = bwd || is_backward_alloc(tr, si, (size_t)i);
            }
            if (fwd || !bwd)
                cut[k++] = cut[j];
        }
        m = k;
    }
    /* A valley between two of torch.compile's benchmark runs is no iteration: a cut whose
     * first allocation is compile-time work (its stack, or a range such as
     * `pad_mm_benchmark (dynamo_timed)` where the stacks say nothing) is dropped. */
    ms__compile_range *cr = NULL;
    size_t ncr = 0;
    ms_error cerr;
    if (m && ms__compile_ranges(&cr, &ncr, s, tr, ann, &cerr)) {
        *ok = false;
        return false;
    }
    size_t k = 0, ri = 0;
    for (size_t j = 0; j < m; j++) {
        int64_t to = j + 1 < m ? cut[j + 1] : n, e = cut[j];
        while (e < to && tr->action[e] != MS_ACT_ALLOC)
            e++;
        bool comp = false;
        if (e < to) {
            uint32_t st = tr->stack[e];
            comp = st != MS_NO_STACK && (si[st].flags & MS__ST_COMPILE);
            while (ri < ncr && cr[ri].end <= e)
                ri++;
            comp = comp || (ri < ncr && cr[ri].first <= e);
        }
        if (!comp)
            cut[k++] = cut[j];
    }
    free(cr);
    m = k;
    *keep = m;
    if (m < 2)
        return false;
    bool falls = m >= 3;
    for (size_t j = 1; j < m && falls; j++)
        falls = (cut[j] > 0 ? cv->v[cut[j] - 1] : cv->start) <
                (cut[j - 1] > 0 ? cv->v[cut[j - 1] - 1] : cv->start);
    if (falls)
        return false;
    uint64_t *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        *ok = false;
        return false;
    }
    size_t alike = 0, pairs = 0;
    size_t na = signature(a, s, tr, si, 0, cut[0]);
    for (size_t j = 0; j < m; j++) {
        size_t nb = signature(b, s, tr, si, cut[j], j + 1 < m ? cut[j + 1] : n);
        pairs++;
        alike += overlap(a, na, b, nb) >= 0.5;
        uint64_t *t = a;
        a = b;
        b = t;
        na = nb;
    }
    free(a);
    free(b);
    return alike * 2 >= pairs;
}

/* Memory returning to a baseline. Without a stated count the valleys at least half as
 * prominent as the most prominent are cuts; with one, the `expected - 1` most prominent. */
int ms__iter_cand_baseline(cand *c, const ms_snapshot *s, const ms_trace *tr,
                           const curve *cv, const ms__stackinfo *si, const ms__ann *ann,
                           uint32_t expected, ms_error *err)
{
    size_t n = cv->n;
    if (n < 4)
        return 0;
    int64_t lo = cv->start, hi = cv->start;
    for (size_t i = 0; i < n; i++) {
        if (cv->v[i] < lo)
            lo = cv->v[i];
        if (cv->v[i] > hi)
            hi = cv->v[i];
    }
    if (hi - lo <= 0)
        return 0;
    size_t cap = n / 2 + 1;
    valley *v = malloc(cap * sizeof *v);
    int64_t *cut = malloc(cap * sizeof *cut);
    if (!v || !cut) {
        free(v);
        free(cut);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for valleys");
    }
    int64_t tail = 0;
    int64_t p0 = (hi - lo) / 50 > 0 ? (hi - lo) / 50 : 1;
    size_t m = zigzag(cv, p0, v, cap, &tail);
    size_t keep = 0;
    if (!prominence(v, m, tail)) {
        free(v);
        free(cut);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for valleys");
    }
    if (expected >= 2 && m >= expected - 1) {
        qsort(v, m, sizeof *v, cmp_prominence_desc);
        keep = expected - 1;
        qsort(v, keep, sizeof *v, cmp_cut);
        for (size_t k = 0; k < keep; k++)
            cut[k] = v[k].cut;
    } else {
        int64_t pmax = 0;
        for (size_t k = 0; k < m; k++)
            if (v[k].prominence > pmax)
                pmax = v[k].prominence;
        for (size_t k = 0; k < m; k++)
            if (pmax > 0 && v[k].prominence * 2 >= pmax)
                cut[keep++] = v[k].cut;
        /* One valley is a single drop, not a loop; demand a repeat. */
        if (keep < 2)
            keep = 0;
    }
    /* As in ms__iter_lowest_cut: flat events after the lowest point close the iteration. */
    for (size_t k = 0; k < keep; k++) {
        int64_t base = cut[k] > 0 ? cv->v[cut[k] - 1] : cv->start;
        while (cut[k] < (int64_t)n && cv->v[cut[k]] == base && !seg_acquire(tr->action[cut[k]]))
            cut[k]++;
    }
    /* Windows halfway to the neighbouring cuts. */
    int64_t *wlo = calloc(keep ? keep : 1, sizeof *wlo);
    int64_t *whi = calloc(keep ? keep : 1, sizeof *whi);
    if (!wlo || !whi) {
        free(wlo);
        free(whi);
        free(v);
        free(cut);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for valleys");
    }
    for (size_t k = 0; k < keep; k++) {
        int64_t prev = k ? cut[k - 1] : 0, next = k + 1 < keep ? cut[k + 1] : (int64_t)n;
        wlo[k] = cut[k] - (cut[k] - prev) / 2;
        whi[k] = cut[k] + (next - cut[k]) / 2;
    }
    ms__iter_refine_cuts(s, tr, cut, keep, wlo, whi);
    free(wlo);
    free(whi);
    bool ok = true;
    if (keep && !repeats(s, tr, cv, si, ann, cut, &keep, &ok))
        keep = 0;
    if (ok)
        ok = ms__iter_cand_from_cuts(c, s, tr, cut, keep);
    free(v);
    free(cut);
    return ok ? 0 : ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
}
