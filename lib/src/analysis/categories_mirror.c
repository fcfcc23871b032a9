/* What an optimizer step says about the categories. An optimizer keeps k tensors of
 * state for each trainable parameter, each the parameter's size, and every trainable
 * parameter has a gradient when the step begins: parameters, gradients and state mirror
 * one another size for size. Two uses of that one count, kept together so they cannot
 * drift apart:
 * - a refinement: what is alive from before the first step to the end, is not called a
 *   parameter, and has a size that the gradients and the state mirror more often than
 *   the parameters do, is a parameter born outside the setup (a lazy module's first
 *   forward under no_grad, a materialisation from the meta device);
 * - the identity, state = k x trainable parameters = k x gradients, checked on every
 *   training run so that a breakdown the step contradicts is said to be one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "cat_internal.h"
#include "internal.h"
#include "memsnap/phases.h"

static bool alive_at(const ms_alloc *a, int64_t boundary)
{
    return a->alloc_event < boundary && (a->free_event < 0 || a->free_event >= boundary);
}

/* ------------------------------------------------------------------ the count */

/* R_PRE: a parameter alive before the trace began (also counted in R_PARAM). */
enum { R_PARAM, R_GRAD, R_STATE, R_CAND, R_PRE, R_COUNT };

typedef struct role_rec {
    uint64_t size;
    uint8_t role;
} role_rec;

typedef struct mirror_size {
    uint64_t size;
    uint32_t n[R_COUNT]; /* by role */
} mirror_size;

typedef struct mirror {
    size_t first, last; /* step segments */
    int64_t at;         /* the last step's first event: parameters, gradients alive before */
    int64_t after;      /* its close: state alive there */
    mirror_size *sz;    /* by size, ascending */
    size_t nsz;
    int k;              /* measured states per gradient; -1 when no size tells */
    uint32_t *cand;     /* the candidates, ascending (the refinement's count only) */
    size_t ncand;
} mirror;

/* Alive from before the first step to the last one's close and called something a
 * parameter could be taken for: an activation or input never freed, 'other', the
 * never-freed pattern of a workspace. Gradients and state are what mirror it, and
 * workspaces named by their frames are not parameters. */
static bool candidate(const mirror *m, const ms__cat_ctx *x, const ms_alloc *a, uint8_t cat,
                      uint8_t why)
{
    if (a->alloc_event < 0 || a->alloc_event >= x->segs[m->first].start ||
        !alive_at(a, m->after))
        return false;
    return cat == MS_CAT_ACTIVATION || cat == MS_CAT_INPUT || cat == MS_CAT_OTHER ||
           why == MS_CATR_WORKSPACE_PATTERN;
}

static int cmp_rec(const void *pa, const void *pb)
{
    const role_rec *a = pa, *b = pb;
    return MS__CMP(a->size, b->size);
}

/* States per gradient, from every size that has gradients: the ratio most bytes agree on
 * (a size whose state is not a whole multiple of its gradients votes for nothing). */
static int measure_k(const mirror_size *sz, size_t nsz)
{
    enum { KMAX = 8 };
    double vote[KMAX + 1] = {0};
    bool any = false;
    for (size_t i = 0; i < nsz; i++) {
        const mirror_size *z = &sz[i];
        if (!z->n[R_GRAD] || z->n[R_STATE] % z->n[R_GRAD])
            continue;
        uint32_t r = z->n[R_STATE] / z->n[R_GRAD];
        if (r > KMAX)
            continue;
        vote[r] += (double)z->n[R_GRAD] * (double)z->size;
        any = true;
    }
    if (!any)
        return -1;
    int best = 0;
    for (int r = 1; r <= KMAX; r++)
        if (vote[r] > vote[best])
            best = r;
    return best;
}

/* How many of `allocs` from the first can hold a candidate: all of a part, and of the
 * timeline's own list (by alloc event, those made before the trace last) those made
 * before the first step. */
static size_t cand_end(const mirror *m, const ms__cat_ctx *x, const ms_alloc *allocs, size_t n)
{
    if (allocs != x->t->allocs || n != x->t->n_allocs)
        return n;
    return ms__cat_first_made_at(allocs, n, x->segs[m->first].start);
}

/* The lives of the device's whole list alive at `boundary` (made before it, freed at or
 * after it or never), ascending, from the categorisation's index (x->lives): those never
 * freed, and those the events from `boundary` on end. A step is near the trace's end, so
 * this reads a few events rather than every allocation. NULL when out of memory. */
static uint32_t *alive_list(const ms__cat_ctx *x, const ms_alloc *allocs, int64_t boundary,
                            size_t *n_out)
{
    const ms__cat_lives *L = x->lives;
    uint32_t *v = NULL;
    size_t nv = 0, cap = 0;
    bool ok = ms__grow((void **)&v, &cap, 64, sizeof *v);
    for (size_t k = 0; ok && k < L->n_kept; k++)
        if (allocs[L->kept[k]].alloc_event < boundary &&
            (ok = ms__grow((void **)&v, &cap, nv + 1, sizeof *v)))
            v[nv++] = L->kept[k];
    for (int64_t f = boundary < 0 ? 0 : boundary; ok && (uint64_t)f < x->t->n_events; f++) {
        uint32_t u = L->ev_alloc[f];
        if (!u || allocs[u - 1].free_event != f || allocs[u - 1].alloc_event >= boundary)
            continue;
        if ((ok = ms__grow((void **)&v, &cap, nv + 1, sizeof *v)))
            v[nv++] = u - 1;
    }
    for (size_t k = 0; ok && k < L->n_ends; k++)
        if (L->ends[k].event >= boundary && allocs[L->ends[k].alloc].alloc_event < boundary &&
            (ok = ms__grow((void **)&v, &cap, nv + 1, sizeof *v)))
            v[nv++] = L->ends[k].alloc;
    if (!ok) {
        free(v);
        return NULL;
    }
    if (nv > 1)
        qsort(v, nv, sizeof *v, ms__cmp_u32);
    *n_out = nv;
    return v;
}

static bool add_rec(role_rec **rec, size_t *nrec, size_t *cap, uint64_t size, int role)
{
    if (!ms__grow((void **)rec, cap, *nrec + 1, sizeof **rec))
        return false;
    (*rec)[(*nrec)++] = (role_rec){size, (uint8_t)role};
    return true;
}

/* The role of allocation i: parameters and gradients alive at the last step's start
 * (`at`), state alive after it (`after`), and with `why` the candidates. The refinement
 * counts only the gradients a backward made, not a compiled backward's reused buffers:
 * only the whole trace's classification tells those from activations, and the summary's
 * necessary condition (ms__cat_mirror_possible) is read from the trace. -1: none. */
static int role_of(const mirror *m, const ms__cat_ctx *x, const ms_alloc *a, uint8_t c,
                   const uint8_t *why, size_t i, bool at, bool after)
{
    if (at && c == MS_CAT_PARAMETER && alive_at(a, m->at))
        return a->alloc_event < 0 ? R_PRE : R_PARAM;
    if (at && c == MS_CAT_GRADIENT && (!why || why[i] == MS_CATR_BACKWARD_KEPT) &&
        alive_at(a, m->at))
        return R_GRAD;
    if (after && c == MS_CAT_OPTIMIZER_STATE && alive_at(a, m->after))
        return R_STATE;
    if (after && why && candidate(m, x, a, c, why[i]))
        return R_CAND;
    return -1;
}

/* Counts the roles by size (and, with `why`, lists the candidates in m->cand,
 * ascending). With the categorisation's index the lives alive at the two boundaries are
 * read from it; otherwise every allocation is looked at (a byte each first). 0, 1 when
 * the run has no step to read (m untouched but for first/last), MS_ERR_NOMEM. */
static int mirror_count(mirror *m, const ms__cat_ctx *x, const ms_alloc *allocs, size_t n,
                        const uint8_t *cat, const uint8_t *why)
{
    memset(m, 0, sizeof *m);
    m->k = -1;
    if (!x->have_phases || !ms__cat_steps(x, &m->first, &m->last))
        return 1;
    m->at = x->segs[m->last].start;
    m->after = x->segs[m->last].close;
    role_rec *rec = NULL;
    size_t nrec = 0, cap = 0, cap_cand = 0;
    bool ok = true;
    if (x->lives && allocs == x->t->allocs && n == x->t->n_allocs) {
        for (int pass = 0; pass < 2 && ok; pass++) {
            size_t nv = 0;
            uint32_t *v = alive_list(x, allocs, pass ? m->after : m->at, &nv);
            ok = v != NULL;
            for (size_t k = 0; k < nv && ok; k++) {
                size_t i = v[k];
                int r = role_of(m, x, &allocs[i], cat[i], why, i, pass == 0, pass == 1);
                if (r >= 0)
                    ok = add_rec(&rec, &nrec, &cap, allocs[i].size, r);
                if (ok && r == R_CAND &&
                    (ok = ms__grow((void **)&m->cand, &cap_cand, m->ncand + 1, sizeof *m->cand)))
                    m->cand[m->ncand++] = (uint32_t)i;
            }
            free(v);
        }
    } else {
        /* The categories first: a byte an allocation, and most are none of these. */
        for (size_t i = 0; i < n && ok; i++) {
            uint8_t c = cat[i];
            if (c != MS_CAT_PARAMETER && c != MS_CAT_GRADIENT && c != MS_CAT_OPTIMIZER_STATE)
                continue;
            int r = role_of(m, x, &allocs[i], c, why, i, true, true);
            if (r >= 0)
                ok = add_rec(&rec, &nrec, &cap, allocs[i].size, r);
        }
        for (size_t i = 0, end = why ? cand_end(m, x, allocs, n) : 0; i < end && ok; i++) {
            if (!candidate(m, x, &allocs[i], cat[i], why[i]))
                continue;
            ok = add_rec(&rec, &nrec, &cap, allocs[i].size, R_CAND) &&
                 ms__grow((void **)&m->cand, &cap_cand, m->ncand + 1, sizeof *m->cand);
            if (ok)
                m->cand[m->ncand++] = (uint32_t)i;
        }
    }
    if (ok && nrec > 1)
        qsort(rec, nrec, sizeof *rec, cmp_rec);
    if (ok)
        ok = (m->sz = calloc(nrec ? nrec : 1, sizeof *m->sz)) != NULL;
    if (!ok) {
        free(rec);
        free(m->cand);
        m->cand = NULL;
        return MS_ERR_NOMEM;
    }
    for (size_t i = 0; i < nrec; i++) {
        if (!m->nsz || m->sz[m->nsz - 1].size != rec[i].size)
            m->sz[m->nsz++].size = rec[i].size;
        m->sz[m->nsz - 1].n[rec[i].role]++;
        if (rec[i].role == R_PRE)
            m->sz[m->nsz - 1].n[R_PARAM]++;
    }
    free(rec);
    m->k = measure_k(m->sz, m->nsz);
    return 0;
}

static mirror_size *size_of(const mirror *m, uint64_t size)
{
    size_t lo = 0, hi = m->nsz;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->sz[mid].size < size)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->nsz && m->sz[lo].size == size ? &m->sz[lo] : NULL;
}

/* ------------------------------------------------------------------ the refinement */

/* For each size, the parameters the step says exist: as many as it has gradients and
 * k-tuples of state, whichever is fewer. Those the parameters lack are taken from the
 * candidates of that size, earliest made first (a model's tensors are made before what
 * it computes). Without state (k = 0, or no size tells) gradients alone are not taken
 * for evidence: the autograd thread's workspace looks like a kept gradient. */
int ms__cat_refine_mirrored(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n, uint8_t *cat,
                            uint8_t *why)
{
    mirror m;
    int rc = mirror_count(&m, x, allocs, n, cat, why);
    if (rc)
        return rc < 0 ? rc : 0;
    size_t want = 0;
    for (size_t i = 0; m.k >= 1 && m.ncand && i < m.nsz; i++) {
        mirror_size *z = &m.sz[i];
        uint32_t mirrored = z->n[R_STATE] / (uint32_t)m.k;
        if (mirrored > z->n[R_GRAD])
            mirrored = z->n[R_GRAD];
        uint32_t lack = mirrored > z->n[R_PARAM] ? mirrored - z->n[R_PARAM] : 0;
        /* n[R_CAND] becomes how many of the candidates to take. */
        z->n[R_CAND] = lack < z->n[R_CAND] ? lack : z->n[R_CAND];
        want += z->n[R_CAND];
    }
    for (size_t k = 0; want && k < m.ncand; k++) {
        size_t i = m.cand[k];
        mirror_size *z = size_of(&m, allocs[i].size);
        if (!z || !z->n[R_CAND])
            continue;
        z->n[R_CAND]--;
        want--;
        cat[i] = MS_CAT_PARAMETER;
        why[i] = MS_CATR_MIRRORED_PARAMETER;
    }
    free(m.sz);
    free(m.cand);
    return 0;
}

static size_t find_u64(const uint64_t *v, size_t n, uint64_t key)
{
    size_t lo = ms__lower_u64(v, n, key);
    return lo < n && v[lo] == key ? lo : SIZE_MAX;
}

/* The candidates' sizes (sorted, once each) in *out; how many, or SIZE_MAX when out of
 * memory. */
static size_t candidate_sizes(uint64_t **out, const mirror *m, const ms__cat_ctx *x,
                              const ms_alloc *allocs, size_t n, const uint8_t *cat,
                              const uint8_t *why)
{
    uint64_t *v = NULL;
    size_t nv = 0, cap = 0;
    for (size_t i = 0; i < n; i++) {
        if (!candidate(m, x, &allocs[i], cat[i], why[i]))
            continue;
        if (!ms__grow((void **)&v, &cap, nv + 1, sizeof *v)) {
            free(v);
            return SIZE_MAX;
        }
        v[nv++] = allocs[i].size;
    }
    if (nv > 1)
        qsort(v, nv, sizeof *v, ms__cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < nv; i++)
        if (!u || v[u - 1] != v[i])
            v[u++] = v[i];
    *out = v;
    return u;
}

/* One life of a candidate's size, made at a0 and ended at `end` (-1: never), into the
 * bounds of ms__cat_mirror_possible: a gradient made in a backward and alive when the last
 * step began, state made in an optimizer step and alive after it. */
static void count_life(uint32_t *cnt, const mirror *m, const ms__cat_ctx *x, const uint64_t *csz,
                       size_t nc, int64_t a0, int64_t end)
{
    ms_alloc a = {0, x->tr->size[a0], a0, end, -1, MS_NO_STACK, 0};
    bool at = alive_at(&a, m->at), after = alive_at(&a, m->after);
    if (!at && !after)
        return;
    uint8_t kind = x->segs[ms__cat_seg_of(x, a0)].kind;
    uint32_t *c = &cnt[3 * find_u64(csz, nc, a.size)];
    if (kind == MS__PH_BWD && at)
        c[1]++;
    if (kind == MS__PH_OPT && after)
        c[2]++;
}

/* Whether the refinement could take any of `allocs` (a part of the device's lives, as the
 * summary classifies only what is alive at the peak). It takes a candidate of a size only
 * where that size has more gradients alive at the last step and more state after it than
 * parameters. Both are bounded from the trace's own events of the candidates' sizes
 * (their lives: gradients made in a backward, state in an optimizer step), the parameters from
 * below by those among `allocs`. A necessary condition: 1 may, 0 cannot, -1 out of
 * memory. */
int ms__cat_mirror_possible(const ms__cat_ctx *x, const ms_alloc *allocs, size_t n,
                            const uint8_t *cat, const uint8_t *why)
{
    mirror m;
    memset(&m, 0, sizeof m);
    if (!x->have_phases || !ms__cat_steps(x, &m.first, &m.last))
        return 0;
    m.at = x->segs[m.last].start;
    m.after = x->segs[m.last].close;
    uint64_t *csz = NULL;
    size_t nc = candidate_sizes(&csz, &m, x, allocs, n, cat, why);
    if (nc == SIZE_MAX)
        return -1;
    if (!nc)
        return 0;
    uint32_t *cnt = calloc(3 * nc, sizeof *cnt); /* parameters, gradients, state */
    int rc = cnt ? 0 : -1;
    for (size_t i = 0; i < n && !rc; i++) {
        size_t j;
        if (cat[i] == MS_CAT_PARAMETER && alive_at(&allocs[i], m.at) &&
            (j = find_u64(csz, nc, allocs[i].size)) != SIZE_MAX)
            cnt[3 * j]++;
    }
    /* Lives by address, as the timeline reads them: a free ends the latest allocation of
     * its address, and so does the next allocation there. Only those alive across the
     * last step count. */
    const ms_trace *tr = x->tr;
    uint64_t lo = csz[0], hi = csz[nc - 1];
    ms_addrmap live;
    memset(&live, 0, sizeof live);
    if (!rc && !ms__addrmap_init(&live, 512))
        rc = -1;
    for (size_t e = 0; e < tr->n && !rc; e++) {
        uint8_t act = tr->action[e];
        uint64_t size = tr->size[e];
        if ((act != MS_ACT_ALLOC && act != MS_ACT_FREE_COMPLETED) || size < lo || size > hi ||
            find_u64(csz, nc, size) == SIZE_MAX)
            continue;
        if (e >= MS_ADDRMAP_NONE) {
            rc = 1; /* past what the map's values hold: say it may */
            break;
        }
        size_t j = ms__addrmap_find(&live, tr->addr[e]);
        if (j != SIZE_MAX) {
            count_life(cnt, &m, x, csz, nc, live.vals[j], (int64_t)e);
            ms__addrmap_remove_at(&live, j);
        }
        if (act == MS_ACT_ALLOC && !ms__addrmap_put(&live, tr->addr[e], (uint32_t)e))
            rc = -1;
    }
    /* What is still alive at the end was never freed. */
    for (size_t j = 0; !rc && j <= live.mask; j++)
        if (live.vals[j] != MS_ADDRMAP_NONE)
            count_life(cnt, &m, x, csz, nc, live.vals[j], -1);
    ms__addrmap_free(&live);
    for (size_t j = 0; j < nc && !rc; j++)
        rc = cnt[3 * j + 1] > cnt[3 * j] && cnt[3 * j + 2] > cnt[3 * j];
    free(csz);
    free(cnt);
    return rc;
}

/* ------------------------------------------------------------------ the identity */

/* What each optimizer of torch.optim keeps per parameter, made in its first step: its
 * state tensors by how many it keeps (NULL: a number it never keeps) and the usual
 * number. Scalars (Adam's `step` with capturable or fused) mirror no parameter. */
typedef struct optim_info {
    const char *name, *file;
    const char *states[4];
    int usual;
} optim_info;

static const optim_info OPTIMS[] = {
    {"Adam", "adam", {NULL, NULL, "exp_avg, exp_avg_sq", "exp_avg, exp_avg_sq, max_exp_avg_sq"}, 2},
    {"AdamW", "adamw", {NULL, NULL, "exp_avg, exp_avg_sq", "exp_avg, exp_avg_sq, max_exp_avg_sq"},
     2},
    {"SGD", "sgd", {"none without momentum", "momentum_buffer", NULL, NULL}, 1},
    {"NAdam", "nadam", {NULL, NULL, "exp_avg, exp_avg_sq", NULL}, 2},
    {"RAdam", "radam", {NULL, NULL, "exp_avg, exp_avg_sq", NULL}, 2},
    {"Adamax", "adamax", {NULL, NULL, "exp_avg, exp_inf", NULL}, 2},
    {"Adadelta", "adadelta", {NULL, NULL, "square_avg, acc_delta", NULL}, 2},
    {"RMSprop", "rmsprop",
     {NULL, "square_avg", "square_avg and momentum_buffer or grad_avg",
      "square_avg, momentum_buffer, grad_avg"},
     1},
    {"Rprop", "rprop", {NULL, NULL, "prev, step_size", NULL}, 2},
    {"ASGD", "asgd", {NULL, "ax", NULL, NULL}, 1},
    /* state_sum is made when the optimizer is built, not in its step. */
    {"Adagrad", "adagrad", {"none made in step (state_sum comes with the optimizer)", NULL, NULL, NULL},
     0},
};

static const optim_info *optim_by_name(const char *name, bool by_file)
{
    for (size_t i = 0; i < sizeof OPTIMS / sizeof OPTIMS[0]; i++)
        if (!strcmp(by_file ? OPTIMS[i].file : OPTIMS[i].name, name))
            return &OPTIMS[i];
    return NULL;
}

/* The optimizer's class from its step's annotation, "Optimizer.step#AdamW.step": the
 * last one of the device. */
static void name_from_annotations(const ms__cat_ctx *x, char *out, size_t cap)
{
    const ms_annotation_range *ar = x->ann.r;
    size_t nar = x->ann.n;
    static const char pre[] = "Optimizer.step#";
    for (size_t i = nar; i-- > 0;) {
        const char *s = ms_snapshot_string(x->s, ar[i].name);
        if (!s || strncmp(s, pre, sizeof pre - 1))
            continue;
        s += sizeof pre - 1;
        size_t len = strcspn(s, ".");
        if (len && len < cap) {
            memcpy(out, s, len);
            out[len] = '\0';
            break;
        }
    }
}

/* The file of torch/optim/ that an optimizer step's allocations were made in ("adam" for
 * torch/optim/adam.py, which AdamW's step runs too); "" when none. */
static void name_from_frames(const ms__cat_ctx *x, size_t step, char *out, size_t cap)
{
    const ms_trace *tr = x->tr;
    const ms__cat_seg *g = &x->segs[step];
    size_t nst = ms_snapshot_stack_count(x->s);
    for (int64_t e = g->start; e < g->end && (uint64_t)e < tr->n; e++) {
        if (tr->action[e] != MS_ACT_ALLOC || tr->stack[e] >= nst)
            continue;
        size_t nf = 0;
        const uint32_t *fr = ms_snapshot_stack(x->s, tr->stack[e], &nf);
        for (size_t f = 0; f < nf; f++) {
            const ms_frame *fm = ms_snapshot_frame(x->s, fr[f]);
            const char *file = fm ? ms_snapshot_string(x->s, fm->filename) : NULL;
            const char *at = file ? strstr(file, "torch/optim/") : NULL;
            if (!at)
                continue;
            at += strlen("torch/optim/");
            size_t len = strcspn(at, ".");
            char base[32];
            if (len == 0 || len >= sizeof base || strcmp(at + len, ".py"))
                continue;
            memcpy(base, at, len);
            base[len] = '\0';
            if (optim_by_name(base, true) && len < cap) {
                memcpy(out, base, len + 1);
                return;
            }
        }
    }
}

/* Two byte counts agree within 1% of the larger, or 64 KiB (a step's scalar state). */
static bool agree(int64_t a, int64_t b)
{
    int64_t d = a > b ? a - b : b - a, big = a > b ? a : b;
    return d <= big / 100 || d <= 65536;
}

int ms__cat_identity(ms_category_identity *out, const ms__cat_ctx *x, const ms_alloc *allocs,
                     size_t n, const uint8_t *cat)
{
    memset(out, 0, sizeof *out);
    out->off = MS_CAT_COUNT;
    out->event = -1;
    out->measured_states_per_parameter = -1;
    mirror m;
    int rc = mirror_count(&m, x, allocs, n, cat, NULL);
    if (rc)
        return rc < 0 ? rc : 0;
    out->event = m.at;
    int64_t s_all = 0;
    for (size_t i = 0; i < m.nsz; i++) {
        const mirror_size *z = &m.sz[i];
        uint32_t t = z->n[R_PARAM] < z->n[R_GRAD] ? z->n[R_PARAM] : z->n[R_GRAD];
        out->parameter += (int64_t)(z->n[R_PARAM] * z->size);
        out->trainable_parameter += (int64_t)(t * z->size);
        out->gradient += (int64_t)(z->n[R_GRAD] * z->size);
        s_all += (int64_t)(z->n[R_STATE] * z->size);
    }
    out->optimizer_state = s_all;
    out->measured_states_per_parameter = m.k;
    if (!out->gradient) {
        free(m.sz);
        return 0;
    }
    out->checked = true;
    name_from_annotations(x, out->optimizer, sizeof out->optimizer);
    const optim_info *oi = out->optimizer[0] ? optim_by_name(out->optimizer, false) : NULL;
    if (!out->optimizer[0]) {
        name_from_frames(x, m.last, out->optimizer, sizeof out->optimizer);
        out->optimizer_from_frames = out->optimizer[0] != '\0';
        oi = out->optimizer[0] ? optim_by_name(out->optimizer, true) : NULL;
        if (oi)
            snprintf(out->optimizer, sizeof out->optimizer, "%s", oi->name);
    }
    int k = m.k < 0 ? 0 : m.k;
    if (oi) {
        if (m.k < 0 || m.k > 3 || !oi->states[m.k])
            k = oi->usual;
        out->state_names = oi->states[k];
    }
    out->states_per_parameter = k;
    /* State made before the trace began is among the parameters alive before it (which
     * the trace cannot tell apart): what those hold of the trainable sizes beyond one
     * tensor a gradient, up to k more. */
    for (size_t i = 0; i < m.nsz; i++) {
        const mirror_size *z = &m.sz[i];
        uint32_t extra = z->n[R_PARAM] > z->n[R_GRAD] ? z->n[R_PARAM] - z->n[R_GRAD] : 0;
        uint32_t pre = extra < z->n[R_PRE] ? extra : z->n[R_PRE];
        uint64_t cap = (uint64_t)k * z->n[R_GRAD];
        out->state_before_trace += (int64_t)((pre < cap ? pre : cap) * z->size);
    }
    free(m.sz);
    int64_t p = out->trainable_parameter, g = out->gradient, s = out->optimizer_state;
    out->expected_optimizer_state = k * p;
    bool state_ok = agree(s, k * p), grads_ok = agree(p, g);
    out->holds = state_ok && grads_ok;
    if (out->holds)
        return 0;
    if (agree(s, k * g) && !grads_ok) {
        /* Gradients and state agree: trainable parameters are counted elsewhere. */
        out->off = MS_CAT_PARAMETER;
        out->off_by = p - g;
    } else if (grads_ok) {
        out->off = MS_CAT_OPTIMIZER_STATE;
        out->off_by = s - k * p;
    } else if (k >= 1 && state_ok) {
        out->off = MS_CAT_GRADIENT;
        out->off_by = g - p;
    } else {
        out->off_by = s - k * p;
    }
    return 0;
}
