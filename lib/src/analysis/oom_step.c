/* The unfinished step, measured: how far the failing step got (layer calls against the
 * previous step's), how large its activations are per call against the previous step's,
 * the whole step's need estimated from both, and advice that says whether each remedy
 * would fit under what the process was allowed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "oom_internal.h"

static const char *fmt(int64_t bytes, char *buf)
{
    ms_format_bytes(bytes, buf, 32);
    return buf;
}

static void first_calls(const ms__stackinfo *si, size_t n_stacks, ms_alloc *alive, size_t n,
                        int64_t since, uint64_t max_calls, uint64_t *calls, int64_t *bytes);

static int cmp_alloc_event(const void *x, const void *y)
{
    return MS__CMP(((const ms_alloc *)x)->alloc_event, ((const ms_alloc *)y)->alloc_event);
}

/* Activations of the failing iteration by layer call: allocations alive at the failure,
 * made since the last complete iteration ended under a layer's forward frame, in the
 * order they were made. A new call begins where the layer (its frame chain) changes, or
 * where a stack already seen in the current call comes again: one call allocates at each
 * of its lines once, so `for layer in layers: x = layer(x)` over one kind of layer still
 * counts every call. Sorts `alive`. */
void ms__oom_layer_stats(const ms__stackinfo *si, size_t n_stacks, ms_alloc *alive, size_t n,
                         int64_t since, uint64_t *calls, int64_t *bytes)
{
    first_calls(si, n_stacks, alive, n, since, UINT64_MAX, calls, bytes);
}

/* The same over the first max_calls calls only. */
static void first_calls(const ms__stackinfo *si, size_t n_stacks, ms_alloc *alive, size_t n,
                        int64_t since, uint64_t max_calls, uint64_t *calls, int64_t *bytes)
{
    *calls = 0;
    *bytes = 0;
    if (n == 0)
        return; /* nothing alive (alive may be NULL): qsort must not see a NULL base */
    qsort(alive, n, sizeof *alive, cmp_alloc_event);
    uint64_t cur = 0;
    uint32_t seen[32];
    size_t nseen = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t st = alive[i].stack;
        if (alive[i].alloc_event < since || st == MS_NO_STACK || st >= n_stacks ||
            (si[st].flags & MS__ST_WORKSPACE))
            continue;
        uint64_t key = si[st].layer_call;
        if (!key)
            continue;
        bool again = false;
        for (size_t k = 0; k < nseen && !again; k++)
            again = seen[k] == st;
        if (key != cur || again || nseen == sizeof seen / sizeof seen[0]) {
            if (*calls == max_calls)
                break;
            (*calls)++;
            cur = key;
            nseen = 0;
        }
        seen[nseen++] = st;
        *bytes += (int64_t)alive[i].size;
    }
}

/* A forward allocation of a layer: what ms__oom_layer_stats counts, made outside the
 * backward (whose autograd frames may carry a layer too). */
static bool forward_layer_alloc(const ms__stackinfo *si, size_t n_stacks, uint32_t st)
{
    return st != MS_NO_STACK && st < n_stacks && si[st].layer_call &&
           !(si[st].flags & (MS__ST_WORKSPACE | MS__ST_BACKWARD | MS__ST_OPTIM));
}

static int64_t live_before(const ms_timeline *t, int64_t i)
{
    return i > 0 ? t->active[i - 1] : t->active_start;
}

/* The previous step's activations are the ones its forward kept for the backward: layer
 * allocations of that iteration still alive when its forward made its last one. That is
 * what the failing step holds at the failure, counted the same way, so the two compare
 * call for call. */
int ms__oom_measure_step(ms_oom *o, const ms_snapshot *s, const ms_timeline *t,
                         const ms__stackinfo *si, const ms_iterations *it, int64_t event)
{
    if (!si || !it || !t->allocs || !t->active || o->act_layer_calls == 0)
        return 0;
    size_t last = 0;
    while (last < it->n && it->items[last].end_event <= event)
        last++;
    if (last == 0 || last >= it->n + it->n_unfinished || it->items[last].start_event > event)
        return 0; /* no previous step, or the failure is outside any step */
    const ms_iteration *p = &it->items[last - 1], *cur = &it->items[last];
    if (p->partial || p->start_event < 0 || p->end_event <= p->start_event)
        return 0;
    size_t n_stacks = ms_snapshot_stack_count(s);
    int64_t fwd_end = -1;
    size_t n = 0;
    for (size_t i = 0; i < t->n_allocs; i++) {
        const ms_alloc *a = &t->allocs[i];
        if (a->alloc_event >= p->start_event && a->alloc_event < p->end_event &&
            forward_layer_alloc(si, n_stacks, a->stack)) {
            n++;
            if (a->alloc_event > fwd_end)
                fwd_end = a->alloc_event;
        }
    }
    if (n == 0)
        return 0;
    ms_alloc *kept = malloc(n * sizeof *kept);
    if (!kept)
        return MS_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < t->n_allocs; i++) {
        const ms_alloc *a = &t->allocs[i];
        if (a->alloc_event >= p->start_event && a->alloc_event < p->end_event &&
            forward_layer_alloc(si, n_stacks, a->stack) &&
            (a->free_event == -1 || a->free_event > fwd_end))
            kept[k++] = *a;
    }
    ms__oom_layer_stats(si, n_stacks, kept, k, p->start_event, &o->prev_layer_calls,
                        &o->prev_layer_bytes);
    /* The ratio compares the same calls: the previous step's first ones, as many as the
     * failing step made (a head or a last layer of another size would skew an average). */
    uint64_t same_calls = 0;
    int64_t same_bytes = 0;
    first_calls(si, n_stacks, kept, k, p->start_event, o->act_layer_calls, &same_calls,
                &same_bytes);
    free(kept);
    if (o->prev_layer_calls == 0 || o->prev_layer_bytes <= 0 || same_bytes <= 0)
        return 0;
    double per_now = (double)o->act_layer_bytes / (double)o->act_layer_calls;
    o->act_ratio = (double)o->act_layer_bytes / (double)same_bytes *
                   ((double)same_calls / (double)o->act_layer_calls);
    o->step_done = (double)o->act_layer_calls / (double)o->prev_layer_calls;
    if (o->step_done > 1)
        o->step_done = 1;
    uint64_t calls = o->act_layer_calls > o->prev_layer_calls ? o->act_layer_calls
                                                              : o->prev_layer_calls;
    int64_t live = t->active[event];
    o->step_base_bytes = live_before(t, cur->start_event);
    /* The forward at its end: what is alive, with the calls still to come at this step's
     * size per call. */
    o->forward_need_bytes = live + (int64_t)(per_now * (double)(calls - o->act_layer_calls));
    /* The whole step: the previous step's growth from its start to its peak, with the
     * activations its forward kept at this step's size (gradients and the rest of the
     * model state do not grow with the input). */
    int64_t grew_prev = p->peak_bytes - live_before(t, p->start_event);
    double scale = o->act_ratio > 1 ? o->act_ratio - 1 : 0;
    int64_t step = o->step_base_bytes + (grew_prev > 0 ? grew_prev : 0) +
                   (int64_t)((double)o->prev_layer_bytes * scale);
    o->step_need_bytes = step > o->forward_need_bytes ? step : o->forward_need_bytes;
    o->step_need_reserved_bytes = (int64_t)((double)o->step_need_bytes * ms__oom_overhead(o));
    /* Checkpointing is weighed on the whole forward, not on the calls done. */
    uint64_t seg = 1;
    while (seg * seg < calls)
        seg++;
    uint64_t per_seg = (calls + seg - 1) / seg;
    int64_t full = (int64_t)(per_now * (double)calls);
    int64_t keep = (int64_t)(per_now * (double)(seg + per_seg));
    o->checkpoint_keep_bytes = keep < full ? keep : 0;
    o->checkpoint_save_bytes = keep < full ? full - keep : 0;
    return 0;
}

/* What the allocator reserves per requested byte at the failure (block rounding, split
 * tails a request cannot use): a step that grows the same way reserves the same share. */
double ms__oom_overhead(const ms_oom *o)
{
    if (o->allocated_bytes == 0 || o->reserved_bytes <= o->allocated_bytes)
        return 1;
    return (double)o->reserved_bytes / (double)o->allocated_bytes;
}

void ms__oom_fit_clause(const ms_oom *o, int64_t need, bool overhead, char *buf, size_t cap)
{
    char a[32];
    if (o->limit_bytes == 0) {
        snprintf(buf, cap, "%s", "");
        return;
    }
    if (overhead)
        need = (int64_t)((double)need * ms__oom_overhead(o));
    const char *what = o->limit_is_device ? "what the device allowed" : "limit";
    if (need <= (int64_t)o->limit_bytes)
        snprintf(buf, cap, "fits under the %s %s", fmt((int64_t)o->limit_bytes, a), what);
    else
        snprintf(buf, cap, "does not fit under the %s %s", fmt((int64_t)o->limit_bytes, a), what);
}

void ms__oom_fit_without(const ms_oom *o, int64_t freed, char *buf, size_t cap)
{
    char a[32], fit[96];
    int64_t rest = o->basis == MS_OOM_BASIS_SHARE_OF_LIVE ? 0 : (int64_t)o->still_to_allocate;
    if (rest < (int64_t)o->request_block_bytes)
        rest = (int64_t)o->request_block_bytes;
    int64_t need = o->step_need_bytes > 0 ? o->step_need_bytes
                                          : (int64_t)o->allocated_bytes + rest;
    need -= freed;
    ms__oom_fit_clause(o, need, true, fit, sizeof fit);
    if (!fit[0] || need <= 0) {
        snprintf(buf, cap, "%s", "");
        return;
    }
    snprintf(buf, cap, "about %s at the peak, %s", fmt(need, a), fit);
}

/* The smallest power-of-two share of the batch whose step fits (0: none up to 1/64):
 * the step's own memory scales with the batch, what was alive at its start does not. */
static unsigned batch_share_that_fits(const ms_oom *o, int64_t own)
{
    for (unsigned d = 2; d <= 64; d *= 2)
        if ((double)(o->step_base_bytes + own / (int64_t)d) * ms__oom_overhead(o) <=
            (double)o->limit_bytes)
            return d;
    return 0;
}

void ms__oom_activation_advice(const ms_oom *o, int64_t act, double share, char *buf, size_t cap)
{
    char a[32], b[32], c[32], d[32], e[32], fit[96];
    if (o->inference) {
        /* No backward: nothing is kept for one, so checkpointing saves nothing; what is
         * alive is the inputs, caches and the layer at work. */
        int64_t half = o->step_need_bytes > 0 ? o->step_base_bytes +
                                                    (o->step_need_bytes - o->step_base_bytes) / 2
                                              : (int64_t)o->allocated_bytes - act / 2;
        ms__oom_fit_clause(o, half, true, fit, sizeof fit);
        snprintf(buf, cap,
                 "activations, inputs and caches hold %s (%.0f%% of live memory; an inference "
                 "run keeps none for a backward): half the batch or sequence length, or a "
                 "smaller KV cache: about %s%s%s",
                 fmt(act, a), share, fmt(half, b), fit[0] ? ", " : "", fit);
        return;
    }
    if (o->step_need_bytes <= 0 || o->limit_bytes == 0 || o->checkpoint_keep_bytes <= 0) {
        /* Unmeasured: the activations as they stand at the failure. */
        if (o->checkpoint_save_bytes > 0) {
            uint64_t seg = 1;
            while (seg * seg < o->act_layer_calls)
                seg++;
            snprintf(buf, cap,
                     "activations hold %s (%.0f%% of live memory), %s per layer call over "
                     "%llu layer calls of this iteration: activation checkpointing "
                     "(torch.utils.checkpoint) in %llu segments would keep about %s of their "
                     "%s, saving about %s; or use a smaller micro-batch / sequence length",
                     fmt(act, a), share, fmt(o->act_layer_bytes / (int64_t)o->act_layer_calls, b),
                     (unsigned long long)o->act_layer_calls, (unsigned long long)seg,
                     fmt(o->checkpoint_keep_bytes, c), fmt(o->act_layer_bytes, d),
                     fmt(o->checkpoint_save_bytes, e));
        } else if (o->act_layer_calls > 0) {
            snprintf(buf, cap,
                     "activations hold %s (%.0f%% of live memory), %s per layer call over "
                     "%llu layer calls of this iteration: use a smaller micro-batch / sequence "
                     "length; with this few layer calls activation checkpointing saves little",
                     fmt(act, a), share, fmt(o->act_layer_bytes / (int64_t)o->act_layer_calls, b),
                     (unsigned long long)o->act_layer_calls);
        } else {
            snprintf(buf, cap,
                     "activations hold %s (%.0f%% of live memory): use activation "
                     "checkpointing (torch.utils.checkpoint) or a smaller micro-batch / "
                     "sequence length",
                     fmt(act, a), share);
        }
        return;
    }
    /* Measured: each remedy's peak for the whole step against the limit. */
    uint64_t calls = o->act_layer_calls > o->prev_layer_calls ? o->act_layer_calls
                                                              : o->prev_layer_calls;
    uint64_t seg = 1;
    while (seg * seg < calls)
        seg++;
    int64_t own = o->step_need_bytes - o->step_base_bytes;
    int64_t ck_own = own - o->checkpoint_save_bytes;
    int64_t ck = o->step_base_bytes + ck_own;
    size_t used = 0;
    const double over = ms__oom_overhead(o);
    ms__oom_fit_clause(o, ck, true, fit, sizeof fit);
    used += (size_t)snprintf(buf, cap,
                             "activations hold %s (%.0f%% of live memory), %s per layer call; "
                             "the whole forward makes %llu: activation checkpointing "
                             "(torch.utils.checkpoint) in %llu segments: about %s at the peak, %s",
                             fmt(act, a), share,
                             fmt(o->act_layer_bytes / (int64_t)o->act_layer_calls, b),
                             (unsigned long long)calls, (unsigned long long)seg, fmt(ck, c), fit);
    if ((double)ck * over > (double)o->limit_bytes && used < cap) {
        unsigned dck = 0;
        for (unsigned q = 2; q <= 64 && !dck; q *= 2)
            if ((double)(o->step_base_bytes + ck_own / (int64_t)q) * over <= (double)o->limit_bytes)
                dck = q;
        if (dck == 2)
            used += (size_t)snprintf(buf + used, cap - used, ": also halve the batch");
        else if (dck)
            used += (size_t)snprintf(buf + used, cap - used, ": also cut the batch to 1/%u", dck);
    }
    if (used >= cap)
        return;
    int64_t half = o->step_base_bytes + own / 2;
    ms__oom_fit_clause(o, half, true, fit, sizeof fit);
    used += (size_t)snprintf(buf + used, cap - used, "; or half the micro-batch / sequence length: about %s, %s",
                             fmt(half, d), fit);
    unsigned dfit = batch_share_that_fits(o, own);
    if ((double)half * over > (double)o->limit_bytes && dfit && used < cap)
        snprintf(buf + used, cap - used, "; 1/%u of it: about %s, fits", dfit,
                 fmt(o->step_base_bytes + own / (int64_t)dfit, e));
}
