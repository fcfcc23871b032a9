/* Why an allocation failed. For every `oom` event: the allocator state right after it
 * (ms_heap: the segment_free events of the allocator's retry come before the event, so
 * this is the state the failure saw), what is alive and where it was made, how live
 * memory grew over the iterations before, a cause decided from those numbers, and
 * advice that quotes them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap_owner.h"
#include "internal.h"
#include "iter_internal.h"
#include "run_internal.h"
#include "cat_internal.h"
#include "oom_internal.h"
#include "timeline_internal.h"
#include "memsnap/categories.h"
#include "memsnap/oom.h"

_Static_assert(MS_CAT_COUNT == MS_OOM_CATEGORIES, "category order of memsnap/oom.h");
_Static_assert(MS_CAT_ACTIVATION == 3 && MS_CAT_OTHER == 7, "category order of memsnap/oom.h");

/* Category slots, in the order of ms_category (memsnap/categories.h). */
enum { C_PARAM, C_GRAD, C_OPTIM, C_ACT, C_TEMP, C_WORK, C_INPUT, C_OTHER };

static const char *fmt(int64_t bytes, char *buf)
{
    ms_format_bytes(bytes, buf, 32);
    return buf;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

/* ------------------------------------------------------------------ analysis */

/* The cudaMalloc size the allocator asks for when no cached block fits. */
static uint64_t segment_size_for(uint64_t block)
{
    const uint64_t mib = 1u << 20;
    if (block <= mib)
        return 2 * mib;
    if (block < 10 * mib)
        return 20 * mib;
    return (block + 2 * mib - 1) / (2 * mib) * (2 * mib);
}

static void add_advice(ms_oom *o, const char *fmtstr, ...) MS_PRINTF(2, 3);
static void add_advice(ms_oom *o, const char *fmtstr, ...)
{
    if (o->n_advice >= MS_OOM_MAX_ADVICE)
        return;
    va_list ap;
    va_start(ap, fmtstr);
    vsnprintf(o->advice[o->n_advice++], sizeof o->advice[0], fmtstr, ap);
    va_end(ap);
}

static void note(ms_oom *o, const char *text)
{
    size_t used = strlen(o->note);
    snprintf(o->note + used, sizeof o->note - used, "%s%s", used ? "; " : "", text);
    o->approximate = true;
}

/* Checkpointing L layer calls in about sqrt(L) segments keeps each segment's input
 * (about one call's bytes) and, while one segment is recomputed, that segment's
 * activations: roughly 2 sqrt(L) calls' worth instead of L (Chen et al., "Training Deep
 * Nets with Sublinear Memory Cost", 2016). Below four calls it saves nothing. */
static void checkpoint_estimate(ms_oom *o)
{
    uint64_t L = o->act_layer_calls;
    if (L < 4 || o->act_layer_bytes <= 0)
        return;
    uint64_t seg = 1;
    while (seg * seg < L)
        seg++;
    uint64_t per_seg = (L + seg - 1) / seg;
    double per_call = (double)o->act_layer_bytes / (double)L;
    int64_t keep = (int64_t)(per_call * (double)(seg + per_seg));
    if (keep < o->act_layer_bytes) {
        o->checkpoint_keep_bytes = keep;
        o->checkpoint_save_bytes = o->act_layer_bytes - keep;
    }
}

/* Live requested bytes right before event i. */
static int64_t live_before(const ms_timeline *t, size_t i)
{
    return i ? t->active[i - 1] : t->active_start;
}

/* What the failing iteration still had to allocate, from the iteration before it. The
 * matching point is the previous iteration's allocation with the failed request's
 * number (the request is the k+1-th allocation of the failing iteration): iterations run
 * the same program, so the k+1-th allocation of each is the same operation. When the
 * failing iteration had grown at most a quarter more than the previous one had at that
 * point, the previous one's growth from there to its peak is what this one still
 * needed. When it had grown more (larger inputs), that peak does not bound it, and
 * nothing the trace holds says by how much to scale it; then every byte the previous
 * one allocated after that point counts, more than its net growth, so free memory is
 * credited with finishing the iteration only when it surely would have. Without a
 * previous iteration that reaches the point, the basis stays share_of_live. */
static void estimate_rest(ms_oom *o, const ms_trace *tr, const ms_timeline *t,
                          const ms_iterations *it, size_t last, int64_t fail_start,
                          size_t event)
{
    o->basis = MS_OOM_BASIS_SHARE_OF_LIVE;
    o->basis_iteration = SIZE_MAX;
    o->still_to_allocate = 0;
    if (!t->active || last == 0 || fail_start < 0 || (size_t)fail_start > event)
        return;
    const ms_iteration *p = &it->items[last - 1];
    if (p->partial || p->start_event < 0 || p->start_event >= p->end_event ||
        p->end_event > fail_start)
        return;
    uint64_t k = 0;
    for (size_t i = (size_t)fail_start; i < event; i++)
        k += tr->action[i] == MS_ACT_ALLOC;
    size_t m = SIZE_MAX;
    uint64_t seen = 0;
    for (size_t i = (size_t)p->start_event; i < (size_t)p->end_event && m == SIZE_MAX; i++)
        if (tr->action[i] == MS_ACT_ALLOC && seen++ == k)
            m = i;
    if (m == SIZE_MAX)
        return; /* the failing iteration had gone past the previous one's end */
    int64_t at_match = live_before(t, m);
    int64_t grown_prev = at_match - live_before(t, (size_t)p->start_event);
    int64_t grown_fail = t->active[event] - live_before(t, (size_t)fail_start);
    bool same_size = grown_prev >= 0 ? grown_fail <= grown_prev + grown_prev / 4 : grown_fail <= 0;
    uint64_t need = 0;
    if (same_size) {
        int64_t peak = at_match;
        for (size_t i = m; i < (size_t)p->end_event; i++)
            if (t->active[i] > peak)
                peak = t->active[i];
        need = (uint64_t)(peak - at_match);
        o->basis = MS_OOM_BASIS_PREVIOUS_PEAK;
    } else {
        for (size_t i = m; i < (size_t)p->end_event; i++)
            if (tr->action[i] == MS_ACT_ALLOC)
                need += tr->size[i];
        o->basis = MS_OOM_BASIS_PREVIOUS_ALLOCATIONS;
    }
    /* Both count from the matching allocation itself, the failed request's counterpart;
     * the request is weighed on its own by the rule as well. */
    o->still_to_allocate = need;
    o->basis_iteration = last - 1;
}

/* Without a categorisation, a rough one from what each live allocation's stack says:
 * optimizer frames hold optimizer state, an autograd node (a backward layer) made a
 * gradient, a Python forward frame an activation, anything else is `other` (parameters
 * made at setup land there, which only makes model state look smaller). */
static int kind_of_stack(const ms_snapshot *s, const ms__stackinfo *si, uint32_t st)
{
    if (st == MS_NO_STACK || st >= ms_snapshot_stack_count(s))
        return C_OTHER;
    const ms__stackinfo *x = &si[st];
    if (x->flags & MS__ST_OPTIM)
        return C_OPTIM;
    if (x->flags & MS__ST_WORKSPACE)
        return C_WORK;
    if (x->layer == UINT32_MAX)
        return C_OTHER;
    const ms_frame *f = ms_snapshot_frame(s, x->layer);
    const char *file = f ? ms_snapshot_string(s, f->filename) : "";
    size_t len = strlen(file);
    return len >= 3 && !strcmp(file + len - 3, ".py") ? C_ACT : C_GRAD;
}

static void categories_from_stacks(const ms_snapshot *s, const ms__stackinfo *si,
                                   const ms_alloc *alive, size_t n, int64_t bytes[])
{
    for (size_t i = 0; i < n; i++)
        bytes[kind_of_stack(s, si, alive[i].stack)] += (int64_t)alive[i].size;
}

/* Each live block's category for pictures, by the same estimate. */
static int block_categories(ms_oom *o, const ms_heap *h, const ms_snapshot *s,
                            const ms__stackinfo *si)
{
    o->block_category = malloc(h->n_blocks ? h->n_blocks : 1);
    if (!o->block_category)
        return MS_ERR_NOMEM;
    for (size_t b = 0; b < h->n_blocks; b++)
        o->block_category[b] = (uint8_t)(h->blocks[b].state == MS_BLOCK_INACTIVE
                                             ? C_OTHER
                                             : kind_of_stack(s, si, h->blocks[b].stack));
    return 0;
}

/* Live memory as the causes weigh it: the categories' sum when known, else what is
 * allocated. */
static int64_t live_total(const ms_oom *o)
{
    if (o->have_categories || o->categories_estimated) {
        int64_t sum = 0;
        for (int i = 0; i < MS_OOM_CATEGORIES; i++)
            sum += o->category_bytes[i] > 0 ? o->category_bytes[i] : 0;
        if (sum > 0)
            return sum;
    }
    return (int64_t)o->allocated_bytes;
}

/* The bytes a contributor holds at the failure (0: not a contributor here). */
static int64_t held_by(const ms_oom *o, ms_oom_cause c)
{
    const int64_t *k = o->category_bytes;
    bool cats = o->have_categories || o->categories_estimated;
    const int64_t *l = o->leak_category_bytes;
    switch (c) {
    case MS_OOM_ACTIVATIONS:
        return cats ? k[C_ACT] + k[C_TEMP] + k[C_INPUT] - (l[C_ACT] + l[C_TEMP] + l[C_INPUT]) : 0;
    case MS_OOM_MODEL_STATE:
        return cats ? k[C_PARAM] + k[C_GRAD] + k[C_OPTIM] - (l[C_PARAM] + l[C_GRAD] + l[C_OPTIM])
                    : 0;
    case MS_OOM_LEAK:
        return o->leak_growth_bytes > 0 ? (int64_t)o->leak_bytes : 0;
    case MS_OOM_SINGLE_ALLOCATION:
        /* Only the request itself: a large allocation alive beside it is a bystander. */
        return o->request_block_bytes > o->allocated_bytes ? (int64_t)o->request_block_bytes : 0;
    default:
        return 0;
    }
}

/* The advice for one contributor, with its numbers. */
static void advise(ms_oom *o, const ms_snapshot *s, ms_oom_cause c)
{
    char a[32], b[32], d[32], site[256] = "";
    double share = pct((double)held_by(o, c), (double)live_total(o));
    switch (c) {
    case MS_OOM_FRAGMENTATION: {
        /* Joined, the pieces hold what the step still needed: what is allocated plus
         * that is the peak it would reach. */
        uint64_t rest = o->basis == MS_OOM_BASIS_SHARE_OF_LIVE ? 0 : o->still_to_allocate;
        if (rest < o->request_block_bytes)
            rest = o->request_block_bytes;
        ms__oom_fit_clause(o, (int64_t)(o->allocated_bytes + rest), false, site, sizeof site);
        add_advice(o,
                   "%s sits free inside reserved segments in %llu pieces, the largest %s: set "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so free memory can be "
                   "joined into one range (about %s allocated with the request%s%s)",
                   fmt((int64_t)o->usable_free_bytes, a), (unsigned long long)o->usable_free_blocks,
                   fmt((int64_t)o->largest_usable_block, b),
                   fmt((int64_t)(o->allocated_bytes + rest), d), site[0] ? ", " : "", site);
        break;
    }
    case MS_OOM_ACTIVATIONS: {
        char text[sizeof o->advice[0]];
        ms__oom_activation_advice(o, held_by(o, c), share, text, sizeof text);
        add_advice(o, "%s", text);
        break;
    }
    case MS_OOM_MODEL_STATE:
        if (o->inference) {
            add_advice(o,
                       "parameters hold %s (%.0f%% of live memory; an inference run keeps no "
                       "gradients or optimizer state): load the weights in lower precision "
                       "(bf16, 8-bit) or shard or offload them across devices",
                       fmt(o->category_bytes[C_PARAM], a), share);
            break;
        }
        ms__oom_fit_without(o, o->category_bytes[C_OPTIM], site, sizeof site);
        add_advice(o,
                   "parameters hold %s, gradients %s, optimizer state %s (%.0f%% of live "
                   "memory): shard them across ranks (FSDP, ZeRO) or use a lighter optimizer "
                   "(SGD, 8-bit Adam, Adafactor)%s%s",
                   fmt(o->category_bytes[C_PARAM], a), fmt(o->category_bytes[C_GRAD], b),
                   fmt(o->category_bytes[C_OPTIM], d), share,
                   site[0] ? "; with no optimizer state: " : "", site);
        break;
    case MS_OOM_LEAK: {
        char fit[160];
        ms__oom_fit_without(o, (int64_t)o->leak_bytes, fit, sizeof fit);
        if (o->leak_site != UINT32_MAX)
            ms_site_format(s, o->leak_site, site, sizeof site);
        add_advice(o,
                   "%s keeps %s more every iteration (%s alive at the failure): release what "
                   "it allocates (see memsnap leaks)%s%s",
                   site[0] ? site : "a leaking site", fmt((int64_t)o->leak_growth_bytes, a),
                   fmt((int64_t)o->leak_bytes, b), fit[0] ? "; without it: " : "", fit);
        break;
    }
    case MS_OOM_SINGLE_ALLOCATION:
        if (o->request_block_bytes > o->allocated_bytes)
            add_advice(o,
                       "the request alone (%s) is larger than all memory allocated (%s): "
                       "split the operation into chunks or reduce the tensor's size",
                       fmt((int64_t)o->request_block_bytes, a), fmt((int64_t)o->allocated_bytes, b));
        else
            add_advice(o,
                       "one allocation of %s holds %s: check the site that made it (below) "
                       "and split or shrink that tensor",
                       fmt((int64_t)o->largest_alive_bytes, a),
                       o->cause == MS_OOM_SINGLE_ALLOCATION ? "more than all others together"
                                                            : "a quarter or more of live memory");
        break;
    default:
        break;
    }
}

/* The cause's advice first, then every other contributor that holds at least a quarter
 * of live memory, each with its numbers; then what the numbers around it say. */
static void write_advice(ms_oom *o, const ms_snapshot *s)
{
    char a[32], b[32], c[32], site[256] = "";
    advise(o, s, o->cause);
    static const ms_oom_cause contributors[] = {MS_OOM_ACTIVATIONS, MS_OOM_MODEL_STATE,
                                                MS_OOM_LEAK, MS_OOM_SINGLE_ALLOCATION};
    int64_t live = live_total(o);
    /* A request larger than all live memory: nothing alive could have made room. */
    if (o->request_block_bytes > o->allocated_bytes)
        live = 0;
    for (size_t i = 0; i < sizeof contributors / sizeof contributors[0]; i++) {
        ms_oom_cause k = contributors[i];
        int64_t held = held_by(o, k);
        if (k != o->cause && held > 0 && live > 0 && held * 4 >= live)
            advise(o, s, k);
    }
    if (o->limit_refused)
        add_advice(o,
                   "the device still had %s free when the %s request failed: a per-process "
                   "limit (torch.cuda.set_per_process_memory_fraction) or another allocator "
                   "setting refused it, not the GPU",
                   fmt((int64_t)o->device_free_bytes, a), fmt((int64_t)o->request_block_bytes, b));
    if (o->cause != MS_OOM_FRAGMENTATION && o->usable_free_bytes >= o->request_block_bytes &&
        o->largest_usable_block < o->request_block_bytes) {
        /* Fragmentation was weighed and found too small to finish the iteration. */
        char how[96];
        if (o->basis == MS_OOM_BASIS_SHARE_OF_LIVE)
            snprintf(how, sizeof how, "less than half of the %s allocated",
                     fmt((int64_t)o->allocated_bytes, c));
        else
            snprintf(how, sizeof how, "the %s the iteration still had to allocate",
                     fmt((int64_t)o->still_to_allocate, c));
        add_advice(o,
                   "%s is free inside reserved segments in %llu pieces (largest %s): joined "
                   "(expandable_segments:True) they would serve this %s request, but %s %s",
                   fmt((int64_t)o->usable_free_bytes, a), (unsigned long long)o->usable_free_blocks,
                   fmt((int64_t)o->largest_usable_block, b),
                   fmt((int64_t)o->request_block_bytes, site),
                   o->basis == MS_OOM_BASIS_SHARE_OF_LIVE ? "they are" : "not", how);
    } else if (o->cause != MS_OOM_FRAGMENTATION &&
               o->free_in_reserved_bytes >= o->request_block_bytes && o->free_blocks > 1)
        add_advice(o,
                   "%s is free inside reserved segments in %llu blocks (largest %s); "
                   "expandable_segments:True would let them be used together",
                   fmt((int64_t)o->free_in_reserved_bytes, a), (unsigned long long)o->free_blocks,
                   fmt((int64_t)o->largest_free_block_bytes, b));
    if (o->n_top_sites > 0 && o->top_sites[0].site != UINT32_MAX && o->cause != MS_OOM_LEAK) {
        ms_site_format(s, o->top_sites[0].site, site, sizeof site);
        add_advice(o, "the largest site alive at the failure is %s with %s in %llu allocation%s",
                   site, fmt((int64_t)o->top_sites[0].bytes, a),
                   (unsigned long long)o->top_sites[0].count,
                   o->top_sites[0].count == 1 ? "" : "s");
    }
}

/* The curve from three iterations before the failure (the whole trace when fewer are
 * known), bucketed down to MS_OOM_WINDOW_POINTS. */
static int fill_window(ms_oom *o, const ms_timeline *t, const ms_trace *tr, size_t event)
{
    size_t first = 0, done = o->n_iters;
    if (done && o->iters[done - 1].unfinished)
        done--; /* three complete iterations */
    if (done >= 4)
        first = (size_t)o->iters[done - 4].end_event;
    if (first > event)
        first = 0;
    size_t n = event - first + 1;
    size_t pts = n < MS_OOM_WINDOW_POINTS ? n : MS_OOM_WINDOW_POINTS;
    o->window_first = (int64_t)first;
    o->window_time_us = malloc(pts * sizeof *o->window_time_us);
    o->window_active = malloc(pts * sizeof *o->window_active);
    o->window_reserved = malloc(pts * sizeof *o->window_reserved);
    if (!o->window_time_us || !o->window_active || !o->window_reserved)
        return MS_ERR_NOMEM;
    for (size_t p = 0; p < pts; p++) {
        size_t lo = first + n * p / pts, hi = first + n * (p + 1) / pts;
        int64_t a = 0, r = 0;
        for (size_t i = lo; i < hi; i++) {
            if (t->active[i] > a)
                a = t->active[i];
            if (t->reserved[i] > r)
                r = t->reserved[i];
        }
        o->window_time_us[p] = tr->time_us[hi - 1];
        o->window_active[p] = a;
        o->window_reserved[p] = r;
    }
    o->n_window = pts;
    return 0;
}

/* Each live block's category from the categorisation, its allocation found by the one
 * rule of heap_owner.h. */
static int block_categories_from(ms_oom *o, const ms_heap *h, const ms_timeline *t,
                                 const ms_categories *cats)
{
    o->block_category = malloc(h->n_blocks ? h->n_blocks : 1);
    if (!o->block_category)
        return MS_ERR_NOMEM;
    ms__heap_owner own;
    ms_error soft;
    if (ms__heap_owner_init(&own, t, &soft))
        return MS_ERR_NOMEM;
    for (size_t b = 0; b < h->n_blocks; b++) {
        size_t idx = ms__heap_owner_of(&own, &h->blocks[b], o->event);
        o->block_category[b] = (uint8_t)(idx != SIZE_MAX ? ms_categories_of(cats, idx) : MS_CAT_OTHER);
    }
    ms__heap_owner_free(&own);
    return 0;
}

/* The allocations alive at any of the OOM events (at[], in trace order), from one pass
 * over the timeline's lives: each OOM takes its own from here rather than replaying the
 * trace again (which made many OOMs quadratic). What is alive is summed, counted and
 * sorted by event, so the order of the lives does not matter. */
typedef struct oom_pool {
    const int64_t *at;
    size_t n_at;
    ms_alloc *a;
    size_t n;
} oom_pool;

static int pool_collect(oom_pool *p, const ms_timeline *t)
{
    size_t cap = 0;
    for (size_t i = 0; i < t->n_allocs; i++) {
        const ms_alloc *a = &t->allocs[i];
        size_t lo = 0, hi = p->n_at; /* the first OOM at or after the allocation */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (p->at[mid] < a->alloc_event)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == p->n_at || (a->free_event != -1 && a->free_event <= p->at[lo]))
            continue;
        if (!ms__grow((void **)&p->a, &cap, p->n + 1, sizeof *p->a))
            return MS_ERR_NOMEM;
        p->a[p->n++] = *a;
    }
    return 0;
}

/* What is alive right after `event`. */
static int alive_at(ms_alloc **out, size_t *n_out, const oom_pool *pool, int64_t event,
                    ms_error *err)
{
    *n_out = 0;
    *out = malloc((pool->n ? pool->n : 1) * sizeof **out);
    if (!*out)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    for (size_t i = 0; i < pool->n; i++) {
        const ms_alloc *a = &pool->a[i];
        if (a->alloc_event <= event && (a->free_event == -1 || a->free_event > event))
            (*out)[(*n_out)++] = *a;
    }
    return 0;
}

/* Leaking sites (MS_LEAK_LEAK findings) by site, to look one up in log time. */
static bool leaks_at(const uint32_t *sites, size_t n, uint32_t site)
{
    return site != UINT32_MAX && n && bsearch(&site, sites, n, sizeof *sites, ms__cmp_u32);
}

/* Site totals by site, for the leak findings' look-ups. */
static int cmp_total_site(const void *x, const void *y)
{
    return MS__CMP(((const ms_site_total *)x)->site, ((const ms_site_total *)y)->site);
}

/* What is shared by every OOM of one report. */
typedef struct oom_ctx {
    ms_oom_report *r;
    const ms_snapshot *s;
    const ms_timeline *t;
    const ms_leak_report *lr;
    const ms__stackinfo *si;
    const ms_oom_options *opt;
    const ms_categories *cats;
    const int64_t *at;
    const oom_pool *pool;
    const uint32_t *leak_sites; /* sorted */
    size_t n_leak_sites;
    ms_error *err;
} oom_ctx;

/* Explains the OOM at `event` from the allocator state `h` right after it. The first
 * OOM (`keep`) keeps the state and what pictures draw; the others keep only their
 * numbers, so memory per OOM does not grow with the live set. */
static int one_oom(ms_oom *o, const oom_ctx *c, size_t event, const ms_heap *h, bool keep)
{
    const ms_snapshot *s = c->s;
    const ms_timeline *t = c->t;
    const ms_leak_report *lr = c->lr;
    const ms__stackinfo *si = c->si;
    const ms_oom_options *opt = c->opt;
    const ms_categories *cats = c->cats;
    const oom_pool *pool = c->pool;
    ms_error *err = c->err;
    const ms_trace *tr = ms_snapshot_trace(s, t->device);
    o->device = t->device;
    o->event = (int64_t)event;
    o->time_us = tr->time_us[event];
    o->request_bytes = tr->size[event];
    o->request_block_bytes = ms_alloc_block_size(s, o->request_bytes);
    o->segment_request_bytes = segment_size_for(o->request_block_bytes);
    o->device_free_bytes = tr->addr[event];
    o->stream_raw = ms_snapshot_stream(s, tr->stream[event]);
    o->leak_site = UINT32_MAX;
    o->cause = MS_OOM_OTHER;
    int rc = 0;
    o->n_segments = h->n_segments;
    o->allocated_bytes = h->allocated_bytes;
    o->active_bytes = h->active_bytes;
    o->reserved_bytes = h->reserved_bytes;
    o->free_in_reserved_bytes = h->inactive_bytes;
    o->free_blocks = h->inactive_count;
    o->largest_free_block_bytes = h->largest_inactive;
    o->usable_free_blocks = ms_heap_usable_free(&o->usable_free_bytes, &o->largest_usable_block, h,
                                                o->request_block_bytes, o->stream_raw);
    for (size_t b = 0; b < h->n_blocks; b++)
        if (h->blocks[b].state == MS_BLOCK_ACTIVE_ALLOCATED &&
            h->blocks[b].size > o->largest_alive_bytes)
            o->largest_alive_bytes = h->blocks[b].size;
    if (h->approximate)
        note(o, h->note);
    if (h->n_segments == 0)
        note(o, "no segment is known at the failure");
    if (!t->trace_complete && t->preexisting_count > 0)
        note(o, t->wrap_evidence == MS_WRAP_ANNOTATIONS
                    ? "the ring buffer dropped the oldest events; what was alive before the first "
                      "recorded event is rebuilt"
                    : "memory was alive before the first recorded event (the recording started "
                      "after it, or the ring buffer dropped older events); it is rebuilt");
    o->live_requested_bytes = t->active ? (uint64_t)t->active[event] : 0;
    /* The driver could have given the request: something else refused it. */
    o->limit_refused = o->device_free_bytes >= 2 * o->segment_request_bytes;
    ms__oom_limit(o);

    ms_alloc *alive = NULL;
    size_t n_alive = 0;
    if ((rc = alive_at(&alive, &n_alive, pool, (int64_t)event, err)))
        return rc;
    ms_site_total *sites = NULL;
    size_t n_sites = 0;
    rc = ms_site_totals(&sites, &n_sites, s, alive, n_alive, err);
    if (rc) {
        free(alive);
        return rc;
    }
    size_t top = opt && opt->top_sites ? opt->top_sites : 10;
    o->top_sites = sites;
    o->n_top_sites = n_sites < top ? n_sites : top;

    /* Iterations that ended before the failure. */
    o->basis = MS_OOM_BASIS_SHARE_OF_LIVE;
    o->basis_iteration = SIZE_MAX;
    o->peak_iteration = SIZE_MAX;
    int64_t since = 0;
    if (lr && lr->iterations) {
        const ms_iterations *it = lr->iterations;
        o->iter_method = it->method;
        size_t last = 0;
        while (last < it->n && it->items[last].end_event <= (int64_t)event)
            last++;
        size_t from = last > MS_OOM_MAX_ITERS ? last - MS_OOM_MAX_ITERS : 0;
        /* The iteration the failure happened in ends the list, marked unfinished: the
         * same count every view gives (ms_iterations.n_unfinished). */
        bool failing = last == it->n && it->n_unfinished &&
                       it->items[last].start_event <= (int64_t)event;
        if (failing && last - from == MS_OOM_MAX_ITERS)
            from++;
        for (size_t k = from; k < last; k++) {
            o->iters[o->n_iters++] = (ms_oom_iter){k, it->items[k].end_event,
                                                   it->items[k].live_end_bytes,
                                                   it->items[k].peak_bytes, false};
        }
        if (failing)
            o->iters[o->n_iters++] = (ms_oom_iter){last, it->items[last].end_event,
                                                   it->items[last].live_end_bytes,
                                                   it->items[last].peak_bytes, true};
        for (size_t k = 0; k < last + (failing ? 1 : 0); k++)
            if (o->peak_iteration == SIZE_MAX ||
                it->items[k].peak_bytes > it->items[o->peak_iteration].peak_bytes)
                o->peak_iteration = k;
        if (last > 0)
            since = it->items[last - 1].end_event;
        /* The iteration the failure is in: the unfinished one, or, when the program caught
         * the error and went on, the complete one around it. */
        bool inside = last < it->n + it->n_unfinished &&
                      it->items[last].start_event <= (int64_t)event;
        estimate_rest(o, tr, t, it, last, inside ? it->items[last].start_event : since, event);
    }
    /* Leaks: findings whose allocations are alive at the failure. */
    if (lr && c->n_leak_sites) {
        ms_site_total *by_site = malloc(n_sites * sizeof *by_site + 1);
        if (!by_site) {
            free(alive);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        }
        if (n_sites) {
            memcpy(by_site, sites, n_sites * sizeof *by_site);
            qsort(by_site, n_sites, sizeof *by_site, cmp_total_site);
        }
        for (size_t k = 0; k < lr->n; k++) {
            const ms_leak *l = &lr->items[k];
            if (l->kind != MS_LEAK_LEAK)
                continue;
            /* What the site holds at the failure, not at the last iteration end. */
            ms_site_total key = {.site = l->site};
            const ms_site_total *q =
                n_sites ? bsearch(&key, by_site, n_sites, sizeof *by_site, cmp_total_site) : NULL;
            o->leak_bytes += q ? q->bytes : l->bytes;
            o->leak_growth_bytes += l->growth_bytes;
            if (o->leak_site == UINT32_MAX)
                o->leak_site = l->site;
        }
        free(by_site);
    }
    if (lr && o->leak_site != UINT32_MAX) {
        o->block_leak = calloc(h->n_blocks ? h->n_blocks : 1, sizeof *o->block_leak);
        if (!o->block_leak) {
            free(alive);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        }
        for (size_t b = 0; b < h->n_blocks; b++)
            o->block_leak[b] = h->blocks[b].state != MS_BLOCK_INACTIVE &&
                               leaks_at(c->leak_sites, c->n_leak_sites,
                                        ms_stack_site(s, h->blocks[b].stack));
    }
    o->inference = cats && ms__categories_form(cats) == MS_FORM_INFERENCE;
    if (opt && opt->categories_at &&
        opt->categories_at(opt->categories_ctx, (int64_t)event, o->category_bytes) == 0) {
        o->have_categories = true;
    }
    else if (cats && ms_categories_at_event(o->category_bytes, cats, (int64_t)event, NULL) == 0) {
        o->have_categories = true;
        if (block_categories_from(o, h, t, cats)) {
            free(alive);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        }
    }
    else if (si) {
        categories_from_stacks(s, si, alive, n_alive, o->category_bytes);
        o->categories_estimated = true;
        if (block_categories(o, h, s, si)) {
            free(alive);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        }
    }
    if (o->block_leak && o->block_category)
        for (size_t b = 0; b < h->n_blocks; b++)
            if (o->block_leak[b] && o->block_category[b] < MS_OOM_CATEGORIES)
                o->leak_category_bytes[o->block_category[b]] +=
                    (int64_t)h->blocks[b].requested_size;
    if (keep) {
        o->heap = (ms_heap *)h;
    } else {
        free(o->block_category);
        free(o->block_leak);
        o->block_category = NULL;
        o->block_leak = NULL;
    }
    if (si) {
        ms__oom_layer_stats(si, ms_snapshot_stack_count(s), alive, n_alive, since,
                            &o->act_layer_calls, &o->act_layer_bytes);
        checkpoint_estimate(o);
    }
    free(alive);
    if (si && lr && lr->iterations &&
        ms__oom_measure_step(o, s, t, si, lr->iterations, (int64_t)event))
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    if (keep && (rc = fill_window(o, t, tr, event)))
        return ms__fail(err, rc, MS_NO_OFFSET, "out of memory");

    ms_oom_facts f = {o->request_block_bytes, o->allocated_bytes, o->usable_free_bytes,
                      o->usable_free_blocks, o->largest_usable_block, o->largest_alive_bytes,
                      o->have_categories || o->categories_estimated ? o->category_bytes : NULL,
                      o->leak_bytes,
                      o->leak_growth_bytes,
                      o->still_to_allocate,
                      o->basis,
                      o->limit_bytes,
                      o->inference};
    o->cause = ms_oom_decide_evidence(&f, o->why, sizeof o->why, o->evidence, sizeof o->evidence);
    write_advice(o, s);
    return 0;
}

/* Each OOM as the forward replay reaches it (ms_heap_visit_each lends the state): the
 * first item keeps a copy of its state, the others only their numbers. */
static int at_oom(void *ctx, size_t k, const ms_heap *h, ms_error *err)
{
    oom_ctx *c = ctx;
    ms_oom *o = &c->r->items[k];
    c->r->n++; /* freed with the report from here on */
    if (k > 0)
        return one_oom(o, c, (size_t)c->at[k], h, false);
    ms_heap *own = NULL;
    int rc = ms_heap_copy(&own, h, err);
    if (rc)
        return rc;
    rc = one_oom(o, c, (size_t)c->at[k], own, true);
    if (!o->heap)
        ms_heap_free(own);
    return rc;
}

int ms_oom_report_build(ms_oom_report **out, const ms_snapshot *s, int device,
                        const ms_timeline *t, const ms_oom_options *opt, ms_error *err)
{
    return ms__oom_analyze_with(out, s, device, t, opt, NULL, NULL, err);
}

int ms__oom_analyze_with(ms_oom_report **out, const ms_snapshot *s, int device,
                         const ms_timeline *t, const ms_oom_options *opt,
                         const ms_leak_report *run_lr, const ms_categories *run_cats,
                         ms_error *err)
{
    ms_error_clear(err);
    *out = NULL;
    if (!s || device < 0 || device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no device %d in this snapshot", device);
    const ms_trace *tr = ms_snapshot_trace(s, device);
    ms_oom_report *r = calloc(1, sizeof *r);
    if (!r)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    r->device = device;
    r->last_event = -1;
    size_t n = 0;
    for (size_t i = 0; i < tr->n; i++)
        if (tr->action[i] == MS_ACT_OOM) {
            r->n_events++;
            r->last_event = (int64_t)i;
        }
    n = r->n_events < MS_OOM_MAX_EXPLAINED ? r->n_events : MS_OOM_MAX_EXPLAINED;
    if (n == 0) {
        *out = r;
        return 0;
    }
    r->items = calloc(n, sizeof *r->items);
    ms_timeline *own = NULL;
    ms_leak_report *lr = NULL;
    ms__stackinfo *si = NULL;
    ms_categories *cats = NULL;
    int64_t *at = NULL;
    uint32_t *leak_sites = NULL;
    oom_pool pool = {NULL, n, NULL, 0};
    int rc = 0;
    if (!r->items) {
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        goto done;
    }
    if (!t || !t->allocs || !t->active || !t->reserved) {
        if ((rc = ms_timeline_build(&own, s, device, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS, err)))
            goto done;
        t = own;
    }
    /* Iterations and leaks are context: a trace they cannot be found in still gets its
     * allocator state and cause. */
    ms_error soft;
    if (!run_lr && ms_leak_report_build(&lr, s, device, t, NULL, &soft))
        lr = NULL;
    if (ms__stackinfo_build(&si, s, &soft))
        si = NULL;
    if (!run_cats && !(opt && opt->categories_at) &&
        ms_categories_build(&cats, s, device, t, lr ? lr->iterations : NULL, &soft))
        cats = NULL;
    const ms_leak_report *use_lr = run_lr ? run_lr : lr;
    const ms_categories *use_cats = run_cats && !(opt && opt->categories_at) ? run_cats : cats;
    size_t n_leak_sites = 0;
    at = malloc(n * sizeof *at);
    leak_sites = malloc((use_lr ? use_lr->n : 0) * sizeof *leak_sites + 1);
    if (!at || !leak_sites) {
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        goto done;
    }
    for (size_t k = 0; use_lr && k < use_lr->n; k++)
        if (use_lr->items[k].kind == MS_LEAK_LEAK)
            leak_sites[n_leak_sites++] = use_lr->items[k].site;
    if (n_leak_sites)
        qsort(leak_sites, n_leak_sites, sizeof *leak_sites, ms__cmp_u32);
    for (size_t i = 0, k = 0; k < n; i++)
        if (tr->action[i] == MS_ACT_OOM)
            at[k++] = (int64_t)i;
    pool.at = at;
    if (pool_collect(&pool, t)) {
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        goto done;
    }
    /* Every OOM's allocator state from one forward replay (rebuilding it per OOM was
     * quadratic), each explained as it is reached: only the first keeps its state. */
    oom_ctx c = {.r = r,
                 .s = s,
                 .t = t,
                 .lr = use_lr,
                 .si = si,
                 .opt = opt,
                 .cats = use_cats,
                 .at = at,
                 .pool = &pool,
                 .leak_sites = leak_sites,
                 .n_leak_sites = n_leak_sites,
                 .err = err};
    if (!rc)
        rc = ms_heap_visit_each(s, device, at, n, at_oom, &c, err);
done:
    free(pool.a);
    free(at);
    free(leak_sites);
    ms_categories_free(cats);
    free(si);
    ms_leak_report_free(lr);
    ms_timeline_free(own);
    if (rc) {
        ms_oom_report_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void ms_oom_report_free(ms_oom_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        ms_heap_free(r->items[i].heap); /* the first item's only */
        free(r->items[i].top_sites);
        free(r->items[i].block_category);
        free(r->items[i].block_leak);
        free(r->items[i].window_time_us);
        free(r->items[i].window_active);
        free(r->items[i].window_reserved);
    }
    free(r->items);
    free(r);
}
