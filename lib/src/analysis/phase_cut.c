/* The trace cut into phases (setup, forward, backward, optimizer step, gaps between
 * them) from what each allocation's stack says and from the annotations: one linear pass
 * over the events once every distinct stack is classified (a 4M-event trace has a few
 * thousand). The stage below iterations, phases and categories: iterations read it to
 * find a lone step, phases list it, categories classify allocations by it; it reads
 * only the timeline, the annotation ranges and (when given) the iterations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "memsnap/phases.h"
#include "phase_cut.h"
#include "timeline_internal.h"

/* ------------------------------------------------------------------ stacks */

enum {
    FR_PY = 1u << 0,
    FR_FWD = 1u << 1,
    FR_BWD = 1u << 2,    /* Python backward frames: the call into autograd */
    FR_ENGINE = 1u << 3, /* C++ autograd engine frames: the backward itself */
    FR_OPT = 1u << 4,
    FR_WS = 1u << 5,
    FR_MODULE = 1u << 6
};

/* The category bits of one frame, from the library's one frame classifier. */
static uint8_t frame_flags(const ms_snapshot *s, uint32_t id)
{
    ms_frame_class c = ms_frame_classify(s, id);
    unsigned fl = 0;
    if (ms_frame_kind_is_python(c.kind)) {
        fl |= FR_PY;
        if (c.roles & MS_FRAME_ROLE_OPTIMIZER)
            fl |= FR_OPT;
        if (c.roles & MS_FRAME_ROLE_FORWARD)
            fl |= FR_FWD;
        if (c.roles & MS_FRAME_ROLE_BACKWARD)
            fl |= FR_BWD;
        if (c.roles & MS_FRAME_ROLE_SETUP)
            fl |= FR_MODULE;
    } else {
        if (c.roles & MS_FRAME_ROLE_AUTOGRAD)
            fl |= FR_ENGINE;
        /* cuBLAS/cuBLASLt/cuDNN workspaces and NCCL's buffers, named by the C++ frames. */
        if (c.roles & (MS_FRAME_ROLE_WORKSPACE | MS_FRAME_ROLE_COLLECTIVE))
            fl |= FR_WS;
    }
    return (uint8_t)fl;
}

/* What a stack says (CS_*) of any of its frames saying FR_*. */
static const struct {
    unsigned frame, stack;
} STACK_OF_FRAMES[] = {{FR_PY, CS_PY},   {FR_OPT, CS_OPT}, {FR_ENGINE, CS_BWD | CS_ENGINE},
                       {FR_BWD, CS_BWD}, {FR_FWD, CS_FWD}, {FR_WS, CS_WS},
                       {FR_MODULE, CS_MODULE}};

int ms__cat_stacks_build(uint8_t **out, bool *any_cpp, const ms_snapshot *s, ms_error *err)
{
    *out = NULL;
    *any_cpp = false;
    uint8_t *ff, *sf;
    int rc = ms__frame_flag_arrays(&ff, &sf, s, frame_flags, err);
    if (rc)
        return rc;
    size_t nframes = ms_snapshot_frame_count(s), nstacks = ms_snapshot_stack_count(s);
    for (size_t sid = 0; sid < nstacks; sid++) {
        size_t n = 0;
        const uint32_t *fr = ms_snapshot_stack(s, (uint32_t)sid, &n);
        unsigned acc = 0, st = 0;
        for (size_t k = 0; k < n; k++)
            if (fr[k] < nframes) {
                acc |= ff[fr[k]];
                if (!(ff[fr[k]] & FR_PY))
                    st |= CS_CPP;
            }
        for (size_t m = 0; m < sizeof STACK_OF_FRAMES / sizeof *STACK_OF_FRAMES; m++)
            if (acc & STACK_OF_FRAMES[m].frame)
                st |= STACK_OF_FRAMES[m].stack;
        if (st & CS_CPP)
            *any_cpp = true;
        sf[sid] = (uint8_t)st;
    }
    free(ff);
    *out = sf;
    return 0;
}

/* ------------------------------------------------------------------ phases */

enum { TAG_NONE = 0, TAG_FWD, TAG_BWD, TAG_OPT, TAG_EMPTY };

static uint8_t kind_of_tag(uint8_t tag)
{
    return tag == TAG_FWD ? MS__PH_FWD : tag == TAG_BWD ? MS__PH_BWD
                                     : tag == TAG_OPT   ? MS__PH_OPT
                                                        : MS__PH_GAP;
}

/* The phase an annotation's name announces; 0 when none or ambiguous. Names are the
 * user's (record_function("## forward ##")) or torch's own ("Optimizer.step#AdamW.step",
 * "DistributedDataParallel.forward"); collectives ("nccl:all_reduce") say nothing. */
static uint8_t annotation_kind(const char *name)
{
    char low[96];
    size_t n = strlen(name);
    if (n >= sizeof low)
        n = sizeof low - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    low[n] = 0;
    if (strstr(low, "nccl") || strstr(low, "profilerstep"))
        return 0;
    int hits = 0;
    uint8_t k = 0;
    if (strstr(low, "backward")) {
        hits++;
        k = TAG_BWD;
    }
    if (strstr(low, "optimizer") || strstr(low, "zero_grad")) {
        hits++;
        k = TAG_OPT;
    }
    if (strstr(low, "forward")) {
        hits++;
        k = TAG_FWD;
    }
    return hits == 1 ? k : 0;
}

typedef struct ann_range {
    int64_t first, end; /* events [first, end) */
    uint8_t tag;
} ann_range;

/* The phase annotations of the device as event ranges, from the context's pairing
 * (ms__ann). A range never closed (the snapshot was taken inside it) says
 * where a phase began but not where it ended: the stacks decide that one. */
static int annotation_ranges(ann_range **out, size_t *n_out, const ms__cat_ctx *x,
                             ms_error *err)
{
    *out = NULL;
    *n_out = 0;
    const ms_snapshot *s = x->s;
    const ms_trace *tr = x->tr;
    const ms_annotation_range *ar = x->ann.r;
    size_t nar = x->ann.n;
    ann_range *r = malloc((nar ? nar : 1) * sizeof *r);
    if (!r)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for annotations");
    size_t n = 0, hint = 0;
    for (size_t i = 0; i < nar; i++) {
        uint8_t tag = annotation_kind(ms_snapshot_string(s, ar[i].name));
        if (!tag || ar[i].open_end)
            continue;
        size_t h0 = hint;
        r[n].first = ar[i].lost_start ? 0 : ms__event_at_time(tr, ar[i].start_us, false, &h0);
        if (!ar[i].lost_start)
            hint = h0;
        size_t h1 = hint;
        r[n].end = ms__event_at_time(tr, ar[i].end_us, true, &h1);
        r[n].tag = tag;
        if (r[n].end > r[n].first)
            n++;
    }
    *out = r;
    *n_out = n;
    return 0;
}

typedef struct run {
    uint8_t kind;
    uint8_t src;
    int64_t first, last; /* its first and last event (allocations and completed frees) */
} run;

void ms__cat_ctx_free(ms__cat_ctx *x)
{
    free(x->segs);
    free(x->bwd_after);
    free(x->stack_flags);
    memset(x, 0, sizeof *x);
}

/* Whether the trace's own allocations have stacks with C++ frames. */
static bool trace_has_cpp(const ms__cat_ctx *x)
{
    const ms_trace *tr = x->tr;
    for (size_t i = 0; i < tr->n; i++)
        if (tr->action[i] == MS_ACT_ALLOC && tr->stack[i] != MS_NO_STACK &&
            tr->stack[i] < ms_snapshot_stack_count(x->s) &&
            (x->stack_flags[tr->stack[i]] & CS_CPP))
            return true;
    return false;
}

/* Ranges by first event (insertion sort: they come nearly in order). */
static void sort_ranges(ann_range *ar, size_t nar)
{
    for (size_t i = 1; i < nar; i++) {
        ann_range v = ar[i];
        size_t j = i;
        while (j > 0 && ar[j - 1].first > v.first) {
            ar[j] = ar[j - 1];
            j--;
        }
        ar[j] = v;
    }
}

/* Each stack's tag and source, one byte (tag | src << 4), looked up per event; entry
 * `nst` is for events without a stack. NULL when out of memory. */
static uint8_t *stack_tags(const ms__cat_ctx *x, size_t nst)
{
    uint8_t *stag = malloc(nst + 1);
    if (!stag)
        return NULL;
    for (size_t k = 0; k < nst; k++) {
        uint8_t f = x->stack_flags[k];
        uint8_t tag = TAG_NONE, src = 0;
        if (f & CS_OPT) {
            tag = TAG_OPT;
            src = MS__SRC_PY;
        } else if (f & CS_BWD) {
            tag = TAG_BWD;
            src = (f & CS_ENGINE) ? MS__SRC_ENGINE : MS__SRC_PY;
        } else if (f & CS_FWD) {
            tag = TAG_FWD;
            src = MS__SRC_PY;
        }
        stag[k] = (uint8_t)(tag | src << 4);
    }
    stag[nst] = TAG_EMPTY;
    return stag;
}

/* The tagging of events [from, to): its runs and counts. */
typedef struct tag_job {
    const ms_trace *tr;
    const uint8_t *stag;
    size_t nst;
    const ann_range *ar;
    size_t nar;
    size_t from, to;
    run *runs;
    size_t nruns;
    uint64_t with_stack, allocs;
    int rc; /* -1 when out of memory (no runs then) */
} tag_job;

/* One pass: each allocation's tag from its stack, grouped into runs of one tag. The
 * annotations are consulted through a cursor over the ranges sorted by start; few
 * ranges overlap, so the active set stays tiny. Also counts the allocations, and those
 * with a stack. What it finds depends only on the events of the job and the ranges, so
 * two jobs over the halves of a trace give the runs of one job over all of it, once the
 * run that crosses the middle is joined (tag_runs). */
static void *tag_range(void *arg)
{
    tag_job *job = arg;
    const ms_trace *tr = job->tr;
    const uint8_t *stag = job->stag;
    size_t nst = job->nst;
    const ann_range *ar = job->ar;
    size_t nar = job->nar;
    run *runs = NULL;
    size_t nruns = 0, capruns = 0;
    uint64_t with_stack = 0, allocs = 0;
    int rc = 0;
    size_t next_ar = 0;
    size_t *active = NULL, nactive = 0, capactive = 0;
    int64_t next_first = nar ? ar[0].first : INT64_MAX;
    uint8_t cur = 0xff, cur_src = 0;
    int64_t cur_last = 0;
    const uint8_t *action = tr->action;
    const uint32_t *stack = tr->stack;
    /* The hot loop of `summary`'s categories: written so that the only branches taken
     * are rare ones (a new run, an annotation to consult). */
    for (size_t i = job->from; i < job->to; i++) {
        /* Frees carry the stack of the code that released the tensor, so they say where
         * a phase ends: the model's forward returning is the last event under a
         * `forward` frame, before the caller drops or keeps what it returned. Only the
         * completed free counts (its request comes right before it, with the same
         * stack). */
        uint8_t act = action[i];
        uint32_t sid = stack[i];
        bool keep = (act == MS_ACT_ALLOC) | (act == MS_ACT_FREE_COMPLETED);
        bool has = sid < nst;
        uint8_t ts = stag[has ? sid : nst];
        allocs += act == MS_ACT_ALLOC;
        with_stack += (act == MS_ACT_ALLOC) & has;
        uint8_t tag = ts & 15, src = (uint8_t)(ts >> 4);
        bool untagged = (tag == TAG_NONE) | (tag == TAG_EMPTY);
        if (MS_UNLIKELY(keep & untagged & ((nactive != 0) | (next_first <= (int64_t)i)))) {
            while (next_ar < nar && ar[next_ar].first <= (int64_t)i) {
                if (!ms__grow((void **)&active, &capactive, nactive + 1, sizeof *active)) {
                    rc = -1;
                    break;
                }
                active[nactive++] = next_ar++;
            }
            next_first = next_ar < nar ? ar[next_ar].first : INT64_MAX;
            /* Of nested ranges the innermost (the one that began last) names the phase;
             * a rule of the ranges alone, so a reader starting mid-trace agrees. */
            size_t inner = SIZE_MAX;
            for (size_t k = 0; k < nactive;) {
                if (ar[active[k]].end <= (int64_t)i) {
                    active[k] = active[--nactive];
                    continue;
                }
                if (inner == SIZE_MAX || active[k] > inner)
                    inner = active[k];
                k++;
            }
            if (inner != SIZE_MAX) {
                tag = ar[inner].tag;
                src = MS__SRC_ANN;
            }
            if (rc)
                break;
        }
        if (MS_UNLIKELY(keep & (tag != cur))) {
            if (nruns) {
                runs[nruns - 1].last = cur_last;
                runs[nruns - 1].src = cur_src;
            }
            if (!ms__grow((void **)&runs, &capruns, nruns + 1, sizeof *runs)) {
                rc = -1;
                break;
            }
            runs[nruns++] = (run){tag, src, (int64_t)i, (int64_t)i};
            cur = tag;
            cur_src = 0;
        }
        cur_last = keep ? (int64_t)i : cur_last;
        cur_src |= keep ? src : 0;
    }
    free(active);
    if (rc) {
        free(runs);
        job->rc = rc;
        return NULL;
    }
    if (nruns) {
        runs[nruns - 1].last = cur_last;
        runs[nruns - 1].src = cur_src;
    }
    job->runs = runs;
    job->nruns = nruns;
    job->with_stack = with_stack;
    job->allocs = allocs;
    job->rc = 0;
    return NULL;
}

/* Below this many events one thread tags the trace: starting a second costs more than
 * it saves. */
size_t ms__cat_parallel_min = (size_t)1 << 20;

/* The runs of the whole trace (*runs_out, caller frees) and its counts. A long trace is
 * tagged by two threads, one per half (the second core sits idle after the reading),
 * and the run that crosses the middle joined: the result is the one-thread result, run
 * for run; one thread when `may_split` is false (the snapshot's ms_limits.threads).
 * 0, or -1 when out of memory. */
static int tag_runs(run **runs_out, size_t *nruns_out, uint64_t *with_stack_out,
                    uint64_t *allocs_out, const ms_trace *tr, const uint8_t *stag, size_t nst,
                    const ann_range *ar, size_t nar, bool may_split)
{
    tag_job job[2];
    for (int k = 0; k < 2; k++)
        job[k] = (tag_job){tr, stag, nst, ar, nar, 0, tr->n, NULL, 0, 0, 0, 0};
    bool two = tr->n >= ms__cat_parallel_min && tr->n >= 2 && may_split;
    if (two) {
        job[0].to = job[1].from = tr->n / 2;
        ms__run_pair(tag_range, &job[0], &job[1]);
    } else {
        tag_range(&job[0]);
    }
    run *runs = job[0].runs;
    size_t nruns = job[0].nruns;
    int rc = job[0].rc;
    if (two) {
        rc |= job[1].rc;
        size_t skip = 0;
        if (!rc && nruns && job[1].nruns && runs[nruns - 1].kind == job[1].runs[0].kind) {
            runs[nruns - 1].last = job[1].runs[0].last;
            runs[nruns - 1].src |= job[1].runs[0].src;
            skip = 1;
        }
        size_t n = nruns + job[1].nruns - skip;
        if (!rc && job[1].nruns > skip) {
            run *all = realloc(runs, n * sizeof *runs);
            if (!all) {
                rc = -1;
            } else {
                memcpy(all + nruns, job[1].runs + skip, (job[1].nruns - skip) * sizeof *runs);
                runs = all;
                nruns = n;
            }
        }
        free(job[1].runs);
    }
    if (rc) {
        free(runs);
        return -1;
    }
    *runs_out = runs;
    *nruns_out = nruns;
    *with_stack_out = job[0].with_stack + job[1].with_stack;
    *allocs_out = job[0].allocs + job[1].allocs;
    return 0;
}

/* Runs of tags into runs of phase kinds, gaps between runs of one phase joined; returns
 * how many are left. */
static size_t merge_runs(run *runs, size_t nruns, bool empty_is_backward, bool no_stacks)
{
    for (size_t k = 0; k < nruns; k++) {
        if (runs[k].kind == TAG_EMPTY) {
            runs[k].kind = empty_is_backward ? TAG_BWD : TAG_NONE;
            runs[k].src = empty_is_backward ? MS__SRC_EMPTY : 0;
        }
        runs[k].kind = kind_of_tag(runs[k].kind);
    }
    /* Untagged allocations between a forward and a backward are the loss computed outside
     * the model's forward; between two backward (or optimizer) runs they belong to it
     * (hooks, Python-side bookkeeping). Between two forwards they stay a gap: that is
     * where inference loops move the next batch to the GPU. Without stacks nothing is
     * tagged but by annotations, and what lies between two optimizer steps is the next
     * iteration's forward and backward, not the step's bookkeeping. */
    size_t m = 0;
    for (size_t k = 0; k < nruns; k++) {
        run r = runs[k];
        if (r.kind == MS__PH_GAP && m > 0 && k + 1 < nruns) {
            uint8_t prev = runs[m - 1].kind, next = runs[k + 1].kind;
            if ((prev == MS__PH_FWD && next == MS__PH_BWD) ||
                (prev == next && (prev == MS__PH_BWD || (prev == MS__PH_OPT && !no_stacks))))
                r.kind = prev;
        }
        if (m && runs[m - 1].kind == r.kind) {
            runs[m - 1].last = r.last;
            runs[m - 1].src |= r.src;
        } else {
            runs[m++] = r;
        }
    }
    return m;
}

/* Segments cover the whole trace: each runs from its first event to the next
 * segment's first event, so the untagged frees after a phase's last tagged event
 * still belong to it. A leading gap is the setup. False when out of memory. */
static bool segments_from_runs(ms__cat_ctx *x, const run *runs, size_t nruns)
{
    x->segs = calloc(nruns ? nruns : 1, sizeof *x->segs);
    if (!x->segs)
        return false;
    size_t counts[MS__PH_COUNT] = {0};
    for (size_t k = 0; k < nruns; k++) {
        ms__cat_seg *g = &x->segs[k];
        g->kind = (k == 0 && runs[k].kind == MS__PH_GAP) ? MS__PH_SETUP : runs[k].kind;
        g->src = runs[k].src;
        g->start = k == 0 ? 0 : runs[k].first;
        g->last_alloc = runs[k].last;
        g->end = k + 1 < nruns ? runs[k + 1].first : (int64_t)x->tr->n;
        g->close = g->end;
        g->ordinal = (uint32_t)counts[g->kind]++;
        if (g->kind == MS__PH_FWD || g->kind == MS__PH_BWD || g->kind == MS__PH_OPT) {
            x->have_phases = true;
            x->last_phase_start = g->start;
        }
        if (g->kind == MS__PH_BWD) {
            x->prev_bwd = x->last_bwd;
            x->last_bwd = k;
        }
        x->src_all |= g->src;
    }
    x->nsegs = nruns;
    memcpy(x->counts, counts, sizeof counts);
    return true;
}

/* A phase ends no later than its iteration: what is freed after the loop body
 * (`del model, outputs` at the end of a script) was not freed by the phase. */
static void close_at_iterations(ms__cat_ctx *x)
{
    for (size_t k = 0; k < x->nsegs; k++) {
        ms__cat_seg *g = &x->segs[k];
        if (g->kind != MS__PH_FWD && g->kind != MS__PH_BWD && g->kind != MS__PH_OPT)
            continue;
        size_t ik = ms__cat_iter_of(x, g->last_alloc);
        if (ik != SIZE_MAX && x->it->items[ik].end_event < g->close)
            g->close = x->it->items[ik].end_event;
    }
}

/* An annotation that ends a phase early (the frees after it are the next step's)
 * moves the boundary back to where the range ended. */
static void close_at_annotations(ms__cat_ctx *x, const ann_range *ar, size_t nar)
{
    for (size_t r = 0; r < nar; r++) {
        uint8_t kind = kind_of_tag(ar[r].tag);
        int64_t e = ar[r].end;
        size_t k = ms__cat_seg_of(x, e - 1);
        if (k >= x->nsegs || x->segs[k].kind != kind)
            continue;
        ms__cat_seg *g = &x->segs[k];
        g->src |= MS__SRC_ANN;
        x->src_all |= MS__SRC_ANN;
        if (e > g->last_alloc && e < g->end && k + 1 < x->nsegs) {
            g->end = e;
            x->segs[k + 1].start = e;
        }
        if (e > g->last_alloc && e < g->close)
            g->close = e;
    }
}

int ms__cat_ctx_build(ms__cat_ctx *x, const ms_snapshot *s, const ms_timeline *t,
                      const ms_iterations *it, const ms__ann *ann, ms_error *err)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    x->t = t;
    x->tr = ms_snapshot_trace(s, t->device);
    const ms_trace *tr = x->tr;
    x->iter_start = it && it->n ? it->items[0].start_event : -1;
    x->it = it;
    bool snapshot_cpp = false;
    int rc = ms__cat_stacks_build(&x->stack_flags, &snapshot_cpp, s, err);
    if (rc)
        return rc;
    /* C++ frames in the final segments' blocks say nothing about how the trace was
     * recorded; only the trace's own allocations do. */
    bool any_cpp = snapshot_cpp && trace_has_cpp(x);
    x->cpp_stacks = any_cpp;

    ann_range *ar = NULL;
    size_t nar = 0;
    x->ann = *ann;
    rc = annotation_ranges(&ar, &nar, x, err);
    if (rc) {
        ms__cat_ctx_free(x);
        return rc;
    }
    sort_ranges(ar, nar);
    size_t nst = ms_snapshot_stack_count(s);
    uint8_t *stag = stack_tags(x, nst);
    run *runs = NULL;
    size_t nruns = 0;
    uint64_t with_stack = 0, allocs = 0;
    bool ok = stag && tag_runs(&runs, &nruns, &with_stack, &allocs, tr, stag, nst, ar, nar,
                                  s->threads >= 2) == 0;
    free(stag);
    if (ok) {
        /* With stacks='python' the autograd thread has no Python frames: its allocations
         * come with empty stacks while everything else has one. With C++ frames recorded
         * (or no stacks at all) an empty stack says nothing. */
        bool empty_is_backward = !any_cpp && with_stack * 10 >= allocs && with_stack < allocs;
        x->no_stacks = allocs > 0 && with_stack == 0;
        /* Without stacks the iteration finder can start the first iteration late; the
         * first free of the trace says that the loop has begun (building and moving a
         * model only allocates). */
        x->loop_start = x->iter_start;
        for (size_t i = 0; x->no_stacks && i < tr->n; i++)
            if (tr->action[i] == MS_ACT_FREE_COMPLETED) {
                if (x->loop_start < 0 || (int64_t)i < x->loop_start)
                    x->loop_start = (int64_t)i;
                break;
            }
        nruns = merge_runs(runs, nruns, empty_is_backward, x->no_stacks);
        ok = segments_from_runs(x, runs, nruns);
    }
    free(runs);
    if (!ok) {
        free(ar);
        ms__cat_ctx_free(x);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for phases");
    }
    close_at_iterations(x);
    close_at_annotations(x, ar, nar);
    free(ar);
    /* For each segment, the backward its forward's saved tensors are for: the next
     * backward, with no other forward before it. */
    x->bwd_after = malloc((x->nsegs ? x->nsegs : 1) * sizeof *x->bwd_after);
    if (!x->bwd_after) {
        ms__cat_ctx_free(x);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for phases");
    }
    ms__cat_find_steps(x);
    size_t after = SIZE_MAX;
    for (size_t k = x->nsegs; k-- > 0;) {
        x->bwd_after[k] = after;
        if (x->segs[k].kind == MS__PH_BWD)
            after = k;
        else if (x->segs[k].kind == MS__PH_FWD)
            after = SIZE_MAX;
    }
    return 0;
}

size_t ms__cat_iter_of(const ms__cat_ctx *x, int64_t event)
{
    const ms_iterations *it = x->it;
    if (!it || !it->n || event < it->items[0].start_event)
        return SIZE_MAX;
    size_t lo = MS__LAST_AT_OR_BELOW(it->items, it->n, start_event, event);
    return event < it->items[lo].end_event ? lo : SIZE_MAX;
}

size_t ms__cat_seg_of(const ms__cat_ctx *x, int64_t event)
{
    if (!x->nsegs || event < 0)
        return x->nsegs ? 0 : SIZE_MAX;
    return MS__LAST_AT_OR_BELOW(x->segs, x->nsegs, start, event);
}

size_t ms__cat_seg_near(const ms__cat_ctx *x, int64_t event, size_t *hint)
{
    size_t k = *hint;
    /* Allocations come in event order: the segment is the last one's or one of the
     * next few; anything else (the lives made before the trace, at the end) searches. */
    if (k < x->nsegs && event >= 0 && x->segs[k].start <= event) {
        for (int step = 0; step < 4; step++) {
            if (k + 1 == x->nsegs || event < x->segs[k + 1].start)
                return *hint = k;
            k++;
        }
    }
    return *hint = ms__cat_seg_of(x, event);
}

const char *ms__cat_phase_name(uint8_t kind)
{
    static const char *const names[] = {[MS__PH_SETUP] = "setup", [MS__PH_FWD] = "forward",
                                        [MS__PH_BWD] = "backward",
                                        [MS__PH_OPT] = "optimizer step"};
    return MS__NAME_IN(names, kind, "gap");
}

/* ------------------------------------------------------------------ the steps */

/* Whether the trace ends at an out-of-memory inside segment k: a step cut short there made
 * only part of its state. */
static bool ends_in_oom(const ms__cat_ctx *x, size_t k)
{
    if (k + 1 != x->nsegs)
        return false;
    for (int64_t e = x->segs[k].start; (uint64_t)e < x->tr->n; e++)
        if (x->tr->action[e] == MS_ACT_OOM)
            return true;
    return false;
}

/* The first and last optimizer segments that follow a backward (the nearest phase before
 * them), leaving out a step the trace ends in at an out-of-memory; a zero_grad alone
 * between a forward and its backward, or a step without a backward before it, is not a
 * step that state and gradients can be read at. */
void ms__cat_find_steps(ms__cat_ctx *x)
{
    x->first_step = x->last_step = SIZE_MAX;
    uint8_t prev = MS__PH_GAP;
    for (size_t k = 0; k < x->nsegs; k++) {
        uint8_t kind = x->segs[k].kind;
        if (kind == MS__PH_OPT && prev == MS__PH_BWD && !ends_in_oom(x, k)) {
            if (x->first_step == SIZE_MAX)
                x->first_step = k;
            x->last_step = k;
        }
        if (kind == MS__PH_FWD || kind == MS__PH_BWD || kind == MS__PH_OPT)
            prev = kind;
    }
}

bool ms__cat_steps(const ms__cat_ctx *x, size_t *first, size_t *last)
{
    *first = x->first_step;
    *last = x->last_step;
    return x->last_step < x->nsegs;
}
