/* Iteration boundaries of a training or inference loop, from the most trustworthy
 * evidence available: named annotations, then the optimizer step seen in the stacks, then
 * repeated top-level forward calls, then live memory returning to a baseline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "timeline_internal.h"
#include "iter_internal.h"

static const char *const METHOD_KEYS[] = {
#define MS_X_KEY(name, key, text) key,
    MS_ITER_METHOD_LIST(MS_X_KEY)
#undef MS_X_KEY
};
static const char *const METHOD_TEXTS[] = {
#define MS_X_TEXT(name, key, text) text,
    MS_ITER_METHOD_LIST(MS_X_TEXT)
#undef MS_X_TEXT
};

const char *ms_iter_method_key(ms_iter_method m)
{
    return (unsigned)m < MS_ITER_METHOD_COUNT ? METHOD_KEYS[m] : "unknown";
}

const char *ms_iter_method_text(ms_iter_method m)
{
    return (unsigned)m < MS_ITER_METHOD_COUNT ? METHOD_TEXTS[m] : "unknown";
}

void ms_iterations_free(ms_iterations *it)
{
    if (!it)
        return;
    free(it->items);
    free(it);
}

/* ------------------------------------------------------------------ boundaries */

/* A candidate: iterations as event ranges, with annotation times where known. */
typedef struct span {
    int64_t start, end;       /* [start, end) in event indices */
    int64_t start_us, end_us; /* annotation times, or INT64_MIN to take event times */
} span;

typedef struct cand {
    ms_iter_method method;
    span *it;
    size_t n, cap;
    bool first_partial;
    bool complete; /* the trace kept every event (no ring-buffer wrap) */
    char detail[128];
} cand;

static void cand_free(cand *c)
{
    free(c->it);
    memset(c, 0, sizeof *c);
}

static bool cand_push(cand *c, int64_t start, int64_t end, int64_t start_us, int64_t end_us)
{
    if (!ms__grow((void **)&c->it, &c->cap, c->n + 1, sizeof *c->it))
        return false;
    c->it[c->n++] = (span){start, end, start_us, end_us};
    return true;
}

/* First event whose time is at or after t (strictly after when `after`). */
static int64_t event_at_time(const ms_trace *tr, int64_t t, bool after)
{
    size_t lo = 0, hi = tr->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        bool before = after ? tr->time_us[mid] <= t : tr->time_us[mid] < t;
        if (before)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int64_t)lo;
}

/* An event's identity for aligning one iteration with the next: what it did and where. */
typedef struct evkey {
    int cls;
    uint32_t site;
} evkey;

static evkey key_of(const ms_snapshot *s, const ms_trace *tr, int64_t i)
{
    evkey k;
    uint8_t a = tr->action[i];
    k.cls = a == MS_ACT_ALLOC ? 0 : (a == MS_ACT_FREE_REQUESTED || a == MS_ACT_FREE_COMPLETED) ? 1 : 2;
    k.site = tr->stack[i] == MS_NO_STACK ? UINT32_MAX : ms_stack_site(s, tr->stack[i]);
    return k;
}

static bool key_eq(evkey a, evkey b)
{
    return a.cls == b.cls && a.site == b.site;
}

/* A cudaMalloc (segment_alloc, or segment_map with expandable segments) is made for the
 * allocation right after it, so it belongs to the iteration of that allocation. */
static bool seg_acquire(uint8_t a)
{
    return a == MS_ACT_SEGMENT_ALLOC || a == MS_ACT_SEGMENT_MAP;
}

static int64_t back_over_segments(const ms_trace *tr, int64_t e)
{
    while (e > 0 && e <= (int64_t)tr->n && seg_acquire(tr->action[e - 1]))
        e--;
    return e;
}

/* Where the iteration ending at `end` began, given the next one [end, next_end): the
 * first event of the next iteration recurs as often in this one, so walk back that many
 * occurrences. Sets *partial when the trace runs out first (a wrapped ring buffer). */
static int64_t align_start(const ms_snapshot *s, const ms_trace *tr, int64_t end, int64_t next_end,
                           bool *partial)
{
    *partial = false;
    if (end <= 0)
        return 0;
    if (next_end <= end) {
        *partial = true;
        return 0;
    }
    evkey k = key_of(s, tr, end);
    uint64_t need = 0;
    for (int64_t i = end; i < next_end; i++)
        if (key_eq(key_of(s, tr, i), k))
            need++;
    for (int64_t i = end - 1; i >= 0; i--)
        if (key_eq(key_of(s, tr, i), k) && --need == 0)
            return back_over_segments(tr, i);
    *partial = true;
    return 0;
}

/* Where the last iteration [start, ...) ends, given the previous one [pstart, pend): its
 * last event recurs as often. Returns the trace end when the pattern does not complete. */
static int64_t align_end(const ms_snapshot *s, const ms_trace *tr, int64_t pstart, int64_t pend,
                         int64_t start)
{
    int64_t n = (int64_t)tr->n;
    if (pend <= pstart || start >= n)
        return n;
    evkey k = key_of(s, tr, pend - 1);
    uint64_t need = 0;
    for (int64_t i = pstart; i < pend; i++)
        if (key_eq(key_of(s, tr, i), k))
            need++;
    for (int64_t i = start; i < n; i++)
        if (key_eq(key_of(s, tr, i), k) && --need == 0)
            return i + 1;
    return n;
}

/* Iterations from a list of iteration ends (event indices, ascending, each > 0): each
 * iteration runs from the previous end; the first start is found by alignment. */
static bool cand_from_ends(cand *c, const ms_snapshot *s, const ms_trace *tr, const int64_t *ends,
                           const int64_t *ends_us, size_t n)
{
    if (n == 0)
        return true;
    bool partial = false;
    int64_t first = n >= 2 ? align_start(s, tr, ends[0], ends[1], &partial) : 0;
    /* Only a wrapped trace can have lost the beginning of its first iteration. */
    c->first_partial = partial && !c->complete;
    for (size_t k = 0; k < n; k++) {
        int64_t st = k ? ends[k - 1] : first;
        int64_t st_us = k && ends_us ? ends_us[k - 1] : INT64_MIN;
        if (!cand_push(c, st, ends[k], st_us, ends_us ? ends_us[k] : INT64_MIN))
            return false;
    }
    return true;
}

/* Cuts found from memory alone can land early where the first iteration differs from
 * the rest (optimizer state created in step 1 keeps memory from returning to the old
 * floor). Steady-state iterations all begin with the same event (the batch being made),
 * so take the first event of the last iteration as the template and move every other
 * cut to the nearest such event inside its window [lo[k], hi[k]). */
static void refine_cuts(const ms_snapshot *s, const ms_trace *tr, int64_t *cuts, size_t m,
                        const int64_t *lo, const int64_t *hi)
{
    if (m < 2 || cuts[m - 1] >= (int64_t)tr->n)
        return;
    evkey k = key_of(s, tr, cuts[m - 1]);
    for (size_t i = 0; i + 1 < m; i++) {
        if (cuts[i] < (int64_t)tr->n && key_eq(key_of(s, tr, cuts[i]), k))
            continue;
        int64_t best = -1;
        for (int64_t e = lo[i]; e < hi[i] && e < (int64_t)tr->n; e++)
            if (key_eq(key_of(s, tr, e), k) &&
                (best < 0 || llabs(e - cuts[i]) < llabs(best - cuts[i])))
                best = e;
        if (best >= 0)
            cuts[i] = back_over_segments(tr, best);
    }
}

/* Iterations from cut points (the first event of iterations 2..n): first start and last
 * end by alignment with the neighbouring iteration. */
static bool cand_from_cuts(cand *c, const ms_snapshot *s, const ms_trace *tr, const int64_t *cuts,
                           size_t m)
{
    if (m == 0)
        return true;
    bool partial = false;
    int64_t first = m >= 2 ? align_start(s, tr, cuts[0], cuts[1], &partial) : 0;
    int64_t last_end = m >= 2 ? align_end(s, tr, cuts[m - 2], cuts[m - 1], cuts[m - 1])
                              : align_end(s, tr, first, cuts[0], cuts[0]);
    c->first_partial = partial && !c->complete;
    for (size_t k = 0; k <= m; k++) {
        int64_t st = k ? cuts[k - 1] : first;
        int64_t en = k < m ? cuts[k] : last_end;
        if (en <= st)
            continue;
        if (!cand_push(c, st, en, INT64_MIN, INT64_MIN))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ annotations */

typedef enum ann_kind { ANN_NAMED, ANN_PROFILER, ANN_OPT_STEP, ANN_OPT_ZERO } ann_kind;

static bool name_matches(const char *name, ann_kind kind, const char *want)
{
    switch (kind) {
    case ANN_NAMED: {
        /* "--step ProfilerStep" also takes the numbered "ProfilerStep#3". */
        size_t lw = strlen(want);
        return !strncmp(name, want, lw) && (name[lw] == 0 || name[lw] == '#');
    }
    case ANN_PROFILER:
        return !strncmp(name, "ProfilerStep#", 13);
    case ANN_OPT_STEP:
        return !strncmp(name, "Optimizer.step#", 15);
    case ANN_OPT_ZERO:
        return !strncmp(name, "Optimizer.zero_grad#", 20);
    }
    return false;
}

typedef struct range {
    int64_t start_us, end_us;
} range;

/* START/END pairs of matching annotations of a device, in start order. Unclosed STARTs
 * are dropped (the dump happened inside the range); an END without START (its START was
 * dropped from a wrapped buffer) opens at the earliest time. */
static int ranges_of(range **out, size_t *n_out, const ms_snapshot *s, int device, ann_kind kind,
                     const char *want, ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    size_t na = 0;
    const ms_annotation *a = ms_snapshot_annotations(s, &na);
    range *r = NULL;
    size_t n = 0, cap = 0;
    int64_t *open = NULL; /* stack of start times: ranges of one name may nest */
    size_t nopen = 0, capopen = 0;
    for (size_t i = 0; i < na; i++) {
        if (a[i].device != device && a[i].device >= 0)
            continue;
        if (!name_matches(ms_snapshot_string(s, a[i].name), kind, want))
            continue;
        if (a[i].is_start) {
            if (!ms__grow((void **)&open, &capopen, nopen + 1, sizeof *open))
                goto nomem;
            open[nopen++] = a[i].time_us;
        } else {
            if (!ms__grow((void **)&r, &cap, n + 1, sizeof *r))
                goto nomem;
            r[n].start_us = nopen ? open[--nopen] : INT64_MIN;
            r[n].end_us = a[i].time_us;
            n++;
        }
    }
    free(open);
    /* Nested ranges close inner-first; order by start for the caller. */
    for (size_t i = 1; i < n; i++) {
        range x = r[i];
        size_t j = i;
        while (j > 0 && r[j - 1].start_us > x.start_us) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = x;
    }
    *out = r;
    *n_out = n;
    return 0;
nomem:
    free(open);
    free(r);
    return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for annotations");
}

/* Whole ranges (ProfilerStep#N, --step NAME): each range with events is one iteration. */
static int cand_ranges(cand *c, const ms_snapshot *s, const ms_trace *tr, ann_kind kind,
                       const char *want, ms_error *err)
{
    range *r;
    size_t n;
    int rc = ranges_of(&r, &n, s, tr->device, kind, want, err);
    if (rc)
        return rc;
    int64_t prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t st = r[i].start_us == INT64_MIN ? 0 : event_at_time(tr, r[i].start_us, false);
        int64_t en = event_at_time(tr, r[i].end_us, true);
        if (st < prev_end) /* top-level ranges only: skip nested repeats */
            continue;
        if (en <= st)
            continue;
        bool partial = r[i].start_us == INT64_MIN || (tr->n && r[i].start_us < tr->time_us[0]);
        if (c->n == 0)
            c->first_partial = partial;
        if (!cand_push(c, st, en, r[i].start_us == INT64_MIN ? INT64_MIN : r[i].start_us,
                       r[i].end_us)) {
            free(r);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
        }
        prev_end = en;
    }
    free(r);
    return 0;
}

/* Optimizer.step ranges end iterations; a zero_grad range right after joins the step. */
static int cand_optimizer_annotations(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                      ms_error *err)
{
    range *st = NULL, *zg = NULL;
    size_t nst = 0, nzg = 0;
    int rc = ranges_of(&st, &nst, s, tr->device, ANN_OPT_STEP, NULL, err);
    if (!rc)
        rc = ranges_of(&zg, &nzg, s, tr->device, ANN_OPT_ZERO, NULL, err);
    int64_t *ends = NULL, *ends_us = NULL;
    size_t n = 0;
    if (!rc && nst) {
        ends = malloc(nst * sizeof *ends);
        ends_us = malloc(nst * sizeof *ends_us);
        if (!ends || !ends_us)
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    }
    for (size_t i = 0; !rc && i < nst; i++) {
        int64_t end_us = st[i].end_us;
        int64_t next_us = i + 1 < nst ? st[i + 1].start_us : INT64_MAX;
        for (size_t z = 0; z < nzg; z++)
            if (zg[z].start_us >= end_us && zg[z].end_us < next_us) {
                end_us = zg[z].end_us;
                break;
            }
        int64_t e = event_at_time(tr, end_us, true);
        /* Steps that ended before the first kept event leave no iteration here. */
        if (e <= 0 || (n && e <= ends[n - 1]))
            continue;
        ends[n] = e;
        ends_us[n] = end_us;
        n++;
    }
    if (!rc && !cand_from_ends(c, s, tr, ends, ends_us, n))
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    free(ends);
    free(ends_us);
    free(st);
    free(zg);
    return rc;
}

/* ------------------------------------------------------------------ from the trace */

static bool is_free(uint8_t a)
{
    return a == MS_ACT_FREE_REQUESTED || a == MS_ACT_FREE_COMPLETED;
}

static uint8_t st_flags(const ms__stackinfo *si, const ms_trace *tr, size_t i)
{
    return tr->stack[i] == MS_NO_STACK ? 0 : si[tr->stack[i]].flags;
}

/* Runs of optimizer events. Frees in between (Python garbage collection, record_stream
 * completions) do not break a run; an allocation outside the optimizer does. */
static int cand_optimizer_frames(cand *c, const ms_snapshot *s, const ms_trace *tr,
                                 const ms__stackinfo *si, ms_error *err)
{
    int64_t *ends = NULL;
    size_t n = 0, cap = 0;
    size_t i = 0;
    while (i < tr->n) {
        if (!(st_flags(si, tr, i) & MS__ST_OPTIM)) {
            i++;
            continue;
        }
        size_t last = i;
        bool step = false;
        size_t j = i;
        for (; j < tr->n; j++) {
            uint8_t f = st_flags(si, tr, j);
            if (f & MS__ST_OPTIM) {
                last = j;
                if (!(f & MS__ST_ZERO_GRAD))
                    step = true;
            } else if (!is_free(tr->action[j]) && tr->action[j] != MS_ACT_SEGMENT_FREE &&
                       tr->action[j] != MS_ACT_SEGMENT_UNMAP) {
                break;
            }
        }
        if (step) {
            if (!ms__grow((void **)&ends, &cap, n + 1, sizeof *ends)) {
                free(ends);
                return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
            }
            ends[n++] = (int64_t)last + 1;
        } else if (n && ends[n - 1] < (int64_t)last + 1) {
            /* zero_grad after the step (no layer work in between) belongs to the step's
             * iteration: grads are freed there, which is where memory returns to base. */
            bool layer_between = false;
            for (size_t k = (size_t)ends[n - 1]; k < i && !layer_between; k++)
                if (tr->stack[k] != MS_NO_STACK && si[tr->stack[k]].layer != UINT32_MAX)
                    layer_between = true;
            if (!layer_between)
                ends[n - 1] = (int64_t)last + 1;
        }
        i = last + 1;
    }
    bool ok = cand_from_ends(c, s, tr, ends, NULL, n);
    free(ends);
    return ok ? 0 : ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
}

/* Live bytes as the program sees them: an allocation ends at free_requested, not at the
 * allocator's free_completed, which record_stream can delay by many iterations and which
 * would hide the return to baseline. Frees of allocations made before the trace are
 * ignored: only the shape of the curve matters here. */
typedef struct curve {
    int64_t *v;    /* after event i */
    int64_t start; /* before the first event */
    size_t n;
} curve;

/* Addresses seen so far, each with the size alive there (0 once freed). The allocator
 * reuses a modest set of addresses, so the table grows with distinct addresses, not
 * with events; a freed address keeps its slot for the next alloc there. */
typedef struct addr_table {
    uint64_t *keys; /* addr + 1, 0 empty */
    uint64_t *sizes;
    size_t mask, used;
} addr_table;

static size_t addr_slot(const addr_table *t, uint64_t key)
{
    size_t j = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & t->mask;
    while (t->keys[j] && t->keys[j] != key)
        j = (j + 1) & t->mask;
    return j;
}

static bool addr_grow(addr_table *t)
{
    size_t n = t->mask ? (t->mask + 1) * 2 : 4096;
    addr_table g = {calloc(n, sizeof *g.keys), calloc(n, sizeof *g.sizes), n - 1, t->used};
    if (!g.keys || !g.sizes) {
        free(g.keys);
        free(g.sizes);
        return false;
    }
    for (size_t i = 0; t->keys && i <= t->mask; i++) {
        if (!t->keys[i])
            continue;
        size_t j = addr_slot(&g, t->keys[i]);
        g.keys[j] = t->keys[i];
        g.sizes[j] = t->sizes[i];
    }
    free(t->keys);
    free(t->sizes);
    *t = g;
    return true;
}

static int program_curve(curve *cv, const ms_trace *tr, ms_error *err)
{
    memset(cv, 0, sizeof *cv);
    size_t n = tr->n;
    addr_table tab = {NULL, NULL, 0, 0};
    cv->v = malloc((n ? n : 1) * sizeof *cv->v);
    if (!cv->v || !addr_grow(&tab)) {
        free(cv->v);
        cv->v = NULL;
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for the live curve");
    }
    int64_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t a = tr->action[i];
        if (a == MS_ACT_ALLOC || a == MS_ACT_FREE_REQUESTED || a == MS_ACT_FREE_COMPLETED) {
            uint64_t key = tr->addr[i] + 1;
            size_t j = addr_slot(&tab, key);
            if (a == MS_ACT_ALLOC) {
                if (!tab.keys[j]) {
                    if ((tab.used + 1) * 2 > tab.mask + 1) {
                        if (!addr_grow(&tab)) {
                            free(tab.keys);
                            free(tab.sizes);
                            free(cv->v);
                            cv->v = NULL;
                            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET,
                                            "no memory for the live curve");
                        }
                        j = addr_slot(&tab, key);
                    }
                    tab.keys[j] = key;
                    tab.used++;
                }
                cur += (int64_t)tr->size[i] - (int64_t)tab.sizes[j];
                tab.sizes[j] = tr->size[i];
            } else if (tab.keys[j] && tab.sizes[j]) {
                cur -= (int64_t)tab.sizes[j];
                tab.sizes[j] = 0;
            }
        }
        cv->v[i] = cur;
    }
    cv->n = n;
    free(tab.keys);
    free(tab.sizes);
    return 0;
}

/* The earliest lowest point of live memory in events [from, to): where the loop has
 * released the previous iteration's temporaries and not yet started the next. Returns
 * the index of the first event after that point. */
static int64_t lowest_cut(const curve *cv, const ms_trace *tr, int64_t from, int64_t to)
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

/* The optimizer step ends an iteration's work but not its loop body: what the loop does
 * after it (keeping a copy of the output, `del` of the batch and loss) comes before the
 * next batch is made. After the last step the loop body ends too, with nothing after it
 * but the script's epilogue, so the events that follow the last step and also follow
 * every earlier step, in the same order, are the end of the loop body: each boundary
 * moves past as many of them as follow its step (never into the next forward pass), and
 * the last iteration takes the most any step had (a `del model` epilogue is no part of
 * them). The first start is aligned again. */
static void settle_after_step(cand *c, const ms_snapshot *s, const ms_trace *tr,
                              const ms__stackinfo *si)
{
    if (c->n < 2)
        return;
    size_t last = c->n - 1;
    int64_t tail = c->it[last].end, n = (int64_t)tr->n, most = 0;
    for (size_t k = 0; k < last; k++) {
        int64_t from = c->it[k].end, limit = c->it[k + 1].end, m = 0;
        while (from + m < limit && tail + m < n &&
               !(tr->action[from + m] == MS_ACT_ALLOC && tr->stack[from + m] != MS_NO_STACK &&
                 si[tr->stack[from + m]].fwd_depth > 0) &&
               key_eq(key_of(s, tr, from + m), key_of(s, tr, tail + m)))
            m++;
        if (!m)
            continue;
        c->it[k].end = c->it[k + 1].start = from + m;
        c->it[k].end_us = c->it[k + 1].start_us = INT64_MIN;
        if (m > most)
            most = m;
    }
    if (!most)
        return;
    c->it[last].end = tail + most;
    c->it[last].end_us = INT64_MIN;
    bool partial = false;
    int64_t first = align_start(s, tr, c->it[0].end, c->it[1].end, &partial);
    if (c->it[0].start_us == INT64_MIN) {
        c->it[0].start = first;
        c->first_partial = partial && !c->complete;
    }
}

/* Repeated top-level forward calls: runs of events under the same user call site of the
 * outermost forward; the call site with the most runs is the loop body. */
static int cand_forward_calls(cand *c, const ms_snapshot *s, const ms_trace *tr,
                              const curve *cv, const ms__stackinfo *si, ms_error *err)
{
    size_t nframes = ms_snapshot_frame_count(s);
    if (!nframes || !tr->n)
        return 0;
    uint32_t *runs = calloc(nframes, sizeof *runs);
    if (!runs)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for forward calls");
    uint32_t prev = UINT32_MAX;
    for (size_t i = 0; i < tr->n; i++) {
        uint32_t k = tr->stack[i] == MS_NO_STACK ? UINT32_MAX : si[tr->stack[i]].call_key;
        if (k != prev && k != UINT32_MAX && k < nframes)
            runs[k]++;
        prev = k;
    }
    uint32_t best = UINT32_MAX, best_runs = 1;
    for (size_t k = 0; k < nframes; k++)
        if (runs[k] > best_runs) {
            best_runs = runs[k];
            best = (uint32_t)k;
        }
    free(runs);
    if (best == UINT32_MAX)
        return 0;

    int64_t *rs = malloc(best_runs * sizeof *rs), *re = malloc(best_runs * sizeof *re);
    int64_t *cuts = malloc(best_runs * sizeof *cuts);
    if (!rs || !re || !cuts) {
        free(rs);
        free(re);
        free(cuts);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for forward calls");
    }
    size_t nr = 0;
    prev = UINT32_MAX;
    for (size_t i = 0; i < tr->n; i++) {
        uint32_t k = tr->stack[i] == MS_NO_STACK ? UINT32_MAX : si[tr->stack[i]].call_key;
        if (k == best) {
            if (prev != best && nr < best_runs)
                rs[nr++] = (int64_t)i;
            if (nr)
                re[nr - 1] = (int64_t)i + 1;
        }
        prev = k;
    }
    size_t m = 0;
    for (size_t r = 1; r < nr; r++)
        cuts[m++] = lowest_cut(cv, tr, re[r - 1], rs[r]);
    /* A cut stays between the two calls it separates. */
    refine_cuts(s, tr, cuts, m, re, rs + 1);
    bool ok = cand_from_cuts(c, s, tr, cuts, m);
    free(rs);
    free(re);
    free(cuts);
    if (!ok)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    char site[96];
    if (ms_site_format(s, best, site, sizeof site) == 0)
        snprintf(c->detail, sizeof c->detail, "calls from %s", site);
    return 0;
}

/* Named ranges that cover only part of each iteration ("## forward ##", the optimizer
 * step) leave most events between them. Then they mark iterations rather than span them:
 * cut between consecutive ranges where memory is lowest, as for forward calls. */
static int ranges_as_markers(cand *c, const ms_snapshot *s, const ms_trace *tr, const curve *cv,
                             ms_error *err)
{
    if (c->n < 2)
        return 0;
    size_t n = c->n;
    int64_t gaps = 0, total = c->it[n - 1].end - c->it[0].start;
    for (size_t k = 1; k < n; k++)
        gaps += c->it[k].start - c->it[k - 1].end;
    if (gaps * 10 <= total)
        return 0;
    int64_t *cuts = malloc(n * sizeof *cuts), *lo = malloc(n * sizeof *lo);
    int64_t *hi = malloc(n * sizeof *hi);
    if (!cuts || !lo || !hi) {
        free(cuts);
        free(lo);
        free(hi);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    }
    for (size_t k = 0; k + 1 < n; k++) {
        lo[k] = c->it[k].end;
        hi[k] = c->it[k + 1].start + 1;
        cuts[k] = lowest_cut(cv, tr, lo[k], c->it[k + 1].start);
    }
    refine_cuts(s, tr, cuts, n - 1, lo, hi);
    c->n = 0;
    bool ok = cand_from_cuts(c, s, tr, cuts, n - 1);
    free(cuts);
    free(lo);
    free(hi);
    if (!ok)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    size_t len = strlen(c->detail);
    snprintf(c->detail + len, sizeof c->detail - len, "%sranges used as markers",
             len ? ", " : "");
    return 0;
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
    int64_t x = ((const valley *)a)->prominence, y = ((const valley *)b)->prominence;
    return (x < y) - (x > y);
}

static int cmp_cut(const void *a, const void *b)
{
    int64_t x = ((const valley *)a)->cut, y = ((const valley *)b)->cut;
    return (x > y) - (x < y);
}

/* Memory returning to a baseline. Without a stated count the valleys at least half as
 * prominent as the most prominent are cuts; with one, the `expected - 1` most prominent. */
static int cand_baseline(cand *c, const ms_snapshot *s, const ms_trace *tr, const curve *cv,
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
    /* As in lowest_cut: flat events after the lowest point close the iteration. */
    for (size_t k = 0; k < keep; k++) {
        int64_t base = cut[k] > 0 ? cv->v[cut[k] - 1] : cv->start;
        while (cut[k] < (int64_t)n && cv->v[cut[k]] == base && !seg_acquire(tr->action[cut[k]]))
            cut[k]++;
    }
    /* Windows halfway to the neighbouring cuts. */
    int64_t *wlo = malloc((keep ? keep : 1) * sizeof *wlo);
    int64_t *whi = malloc((keep ? keep : 1) * sizeof *whi);
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
    refine_cuts(s, tr, cut, keep, wlo, whi);
    free(wlo);
    free(whi);
    bool ok = cand_from_cuts(c, s, tr, cut, keep);
    free(v);
    free(cut);
    return ok ? 0 : ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
}

/* ------------------------------------------------------------------ assembly */

/* Micro-batches: when the user says N and a method found k*N, fold k into one. */
static bool fold(cand *c, uint32_t expected)
{
    if (!expected || c->n <= expected || c->n % expected)
        return false;
    size_t k = c->n / expected;
    for (size_t i = 0; i < expected; i++) {
        span first = c->it[i * k], last = c->it[i * k + k - 1];
        c->it[i] = (span){first.start, last.end, first.start_us, last.end_us};
    }
    c->n = expected;
    return true;
}

/* Per-iteration peak and end from a replay, for timelines built without curves. The
 * iterations are in event order and do not overlap, so one cursor follows the events. */
typedef struct iter_stats_ctx {
    ms_iterations *it;
    size_t k;
    int64_t prev; /* active bytes before the current event */
} iter_stats_ctx;

static void iter_stats_event(void *ctx, size_t i, int64_t active)
{
    iter_stats_ctx *c = ctx;
    int64_t before = c->prev;
    c->prev = active;
    while (c->k < c->it->n && (int64_t)i >= c->it->items[c->k].end_event)
        c->k++;
    if (c->k == c->it->n)
        return;
    ms_iteration *x = &c->it->items[c->k];
    if ((int64_t)i < x->start_event)
        return;
    if ((int64_t)i == x->start_event && before > x->peak_bytes)
        x->peak_bytes = before; /* the state it starts from counts, as with the curve */
    if (active > x->peak_bytes)
        x->peak_bytes = active;
    if ((int64_t)i == x->end_event - 1)
        x->live_end_bytes = active;
}

static int finish(ms_iterations **out, const ms_snapshot *s, const ms_trace *tr,
                  const ms_timeline *t, cand *c, ms_error *err)
{
    ms_iterations *it = calloc(1, sizeof *it);
    if (!it)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
    it->device = tr->device;
    it->method = c->n ? c->method : MS_ITER_NONE;
    memcpy(it->detail, c->detail, sizeof it->detail);
    if (c->n) {
        it->items = calloc(c->n, sizeof *it->items);
        if (!it->items) {
            free(it);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for iterations");
        }
    }
    for (size_t k = 0; k < c->n; k++) {
        ms_iteration *x = &it->items[it->n];
        int64_t st = c->it[k].start, en = c->it[k].end;
        if (st < 0)
            st = 0;
        if (en > (int64_t)tr->n)
            en = (int64_t)tr->n;
        if (en <= st)
            continue;
        x->start_event = st;
        x->end_event = en;
        x->start_us = c->it[k].start_us != INT64_MIN ? c->it[k].start_us : tr->time_us[st];
        x->end_us = c->it[k].end_us != INT64_MIN ? c->it[k].end_us : tr->time_us[en - 1];
        x->partial = it->n == 0 && c->first_partial;
        if (t->active) {
            int64_t peak = st > 0 ? t->active[st - 1] : t->active_start;
            for (int64_t i = st; i < en; i++)
                if (t->active[i] > peak)
                    peak = t->active[i];
            x->peak_bytes = peak;
            x->live_end_bytes = t->active[en - 1];
        }
        it->n++;
    }
    if (!t->active && it->n) {
        /* No stored curve: one replay fills every iteration's peak and end. */
        iter_stats_ctx sc = {it, 0, t->active_start};
        for (size_t k = 0; k < it->n; k++)
            it->items[k].peak_bytes = INT64_MIN;
        int rc = ms__timeline_replay(s, t, NULL, NULL, iter_stats_event, &sc, err);
        if (rc) {
            ms_iterations_free(it);
            return rc;
        }
    }
    if (!it->n)
        it->method = MS_ITER_NONE;
    *out = it;
    return 0;
}

int ms__iterations_find(ms_iterations **out, const ms_snapshot *s, const ms_timeline *t,
                        const ms__stackinfo *si, const ms_iter_options *opt, ms_error *err)
{
    *out = NULL;
    if (!t)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "iterations need the device's timeline");
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    const char *step = opt && opt->step_name && *opt->step_name ? opt->step_name : NULL;
    uint32_t expected = opt ? opt->expected : 0;

    /* The methods in order of trust; the first that finds iterations wins, except that a
     * count stated by the user prefers the first method that agrees with it. */
    enum { NM = 6 };
    cand cs[NM];
    memset(cs, 0, sizeof cs);
    /* The live curve costs 8 bytes per event; only the methods that read it build it. */
    curve cv;
    memset(&cv, 0, sizeof cv);
    int rc = 0;
#define NEED_CURVE() (cv.v || (rc = program_curve(&cv, tr, err)) == 0)
    size_t chosen = NM;
    for (size_t m = 0; m < NM && !rc; m++) {
        cand *c = &cs[m];
        c->complete = t->trace_complete;
        if (m <= 2 && opt && opt->trace_only)
            continue;
        switch (m) {
        case 0:
            c->method = MS_ITER_ANNOTATION_STEP;
            if (step) {
                rc = cand_ranges(c, s, tr, ANN_NAMED, step, err);
                snprintf(c->detail, sizeof c->detail, "'%s'", step);
                if (!rc && c->n && NEED_CURVE())
                    rc = ranges_as_markers(c, s, tr, &cv, err);
            }
            break;
        case 1:
            c->method = MS_ITER_ANNOTATION_PROFILER;
            rc = cand_ranges(c, s, tr, ANN_PROFILER, NULL, err);
            if (!rc && c->n && NEED_CURVE())
                rc = ranges_as_markers(c, s, tr, &cv, err);
            break;
        case 2:
            c->method = MS_ITER_ANNOTATION_OPTIMIZER;
            rc = cand_optimizer_annotations(c, s, tr, err);
            if (!rc)
                settle_after_step(c, s, tr, si);
            break;
        case 3:
            c->method = MS_ITER_OPTIMIZER_FRAMES;
            rc = cand_optimizer_frames(c, s, tr, si, err);
            if (!rc)
                settle_after_step(c, s, tr, si);
            break;
        case 4:
            c->method = MS_ITER_FORWARD_CALLS;
            if (NEED_CURVE())
                rc = cand_forward_calls(c, s, tr, &cv, si, err);
            if (c->n < 2)
                c->n = 0; /* one call is not a loop */
            break;
        case 5:
            c->method = MS_ITER_BASELINE;
            if (NEED_CURVE())
                rc = cand_baseline(c, s, tr, &cv, expected, err);
            break;
        }
        if (rc)
            break;
        if (step && m == 0 && c->n) {
            chosen = 0; /* the user named the marker: trust it over any count */
            break;
        }
        if (expected && (c->n == expected || fold(c, expected))) {
            chosen = m;
            break;
        }
        if (!expected && c->n && chosen == NM) {
            chosen = m;
            break;
        }
    }
    if (!rc && chosen == NM) {
        /* A stated count no method matched: fall back to the most trusted finding. */
        for (size_t m = 0; m < NM; m++)
            if (cs[m].n) {
                chosen = m;
                break;
            }
    }
    if (!rc) {
        cand none;
        memset(&none, 0, sizeof none);
        rc = finish(out, s, tr, t, chosen < NM ? &cs[chosen] : &none, err);
        if (!rc && step && !cs[0].n) {
            /* Say that the named marker was not used, before what was. */
            char note[128];
            snprintf(note, sizeof note, "no '%s' ranges with events", step);
            size_t len = strlen((*out)->detail);
            if (len)
                snprintf(note + strlen(note), sizeof note - strlen(note), "; %s", (*out)->detail);
            memcpy((*out)->detail, note, sizeof (*out)->detail);
        }
        if (!rc && chosen < NM && expected && (*out)->n != expected) {
            size_t len = strlen((*out)->detail);
            snprintf((*out)->detail + len, sizeof (*out)->detail - len, "%s%zu found, %u stated",
                     len ? "; " : "", (*out)->n, expected);
        }
    }
#undef NEED_CURVE
    for (size_t m = 0; m < NM; m++)
        cand_free(&cs[m]);
    free(cv.v);
    return rc;
}

int ms_iterations_find(ms_iterations **out, const ms_snapshot *s, int device,
                       const ms_timeline *t, const ms_iter_options *opt, ms_error *err)
{
    *out = NULL;
    if (!s || device < 0 || device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no device %d in this snapshot", device);
    if (t && t->device != device)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "timeline is for device %d, not %d",
                        t->device, device);
    ms_timeline *own = NULL;
    if (!t) {
        int rc = ms_timeline_build(&own, s, device, MS_TIMELINE_CURVES, err);
        if (rc)
            return rc;
        t = own;
    }
    ms__stackinfo *si = NULL;
    int rc = ms__stackinfo_build(&si, s, err);
    if (!rc)
        rc = ms__iterations_find(out, s, t, si, opt, err);
    free(si);
    ms_timeline_free(own);
    return rc;
}
