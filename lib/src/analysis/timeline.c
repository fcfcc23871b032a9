/* The active-memory timeline: allocations live from `alloc` to `free_completed`, reserved
 * memory follows the segment events, and whatever was alive before the first kept event
 * is reconstructed from the final allocator state so every curve ends exactly there. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "bigmem.h"
#include "checked_math.h"
#include "internal.h"
#include "timeline_internal.h"

/* ------------------------------------------------------------------ simulation */

typedef void (*emit_fn)(void *ctx, const ms_alloc *a);

typedef struct sim {
    const ms_snapshot *s;
    const ms_trace *tr;
    int device;
    bool keep_all;          /* records stay in recs[] in alloc order (MS_TIMELINE_ALLOCS) */
    emit_fn emit;           /* else: called as each life is known completely */
    void *ctx;
    /* Called after every event with the active bytes relative to the start (the start's
     * own value is only known at the end); NULL when not wanted. */
    void (*on_event)(void *ctx, size_t i, int64_t rel_active);
    void *event_ctx;

    ms_alloc *recs;
    size_t nrecs, cap_recs;
    uint32_t *free_slots;
    size_t nfree, cap_free;
    ms_alloc *pre;          /* reconstructed: alive before the trace began */
    size_t npre, cap_pre;
    /* MS_TIMELINE_PEAK_ALIVE: lives that ended after the highest point so far but were
     * alive at it. Whenever a new highest point is reached the list starts over, so at
     * the end it holds exactly the ended lives alive at the peak, and together with
     * what is still alive (allocated by then) it is the set alive at the peak, without
     * a second pass over the trace. */
    bool track_peak;
    ms_alloc *since;
    size_t nsince, cap_since;
    ms_addrmap live;        /* address -> its record in recs[] */
} sim;

static int add_pre(sim *x, const ms_alloc *a)
{
    if (x->keep_all) {
        if (!ms__grow((void **)&x->pre, &x->cap_pre, x->npre + 1, sizeof *x->pre))
            return MS_ERR_NOMEM;
        x->pre[x->npre++] = *a;
    } else if (x->emit) {
        x->emit(x->ctx, a);
    }
    return 0;
}

/* The growth checks below test the capacity inline: they run once or twice per event,
 * and ms__grow is a call. */
static int new_rec(sim *x, uint32_t *slot)
{
    if (!x->keep_all && x->nfree) {
        *slot = x->free_slots[--x->nfree];
        return 0;
    }
    if (x->nrecs >= UINT32_MAX - 1 ||
        (x->nrecs >= x->cap_recs &&
         !ms__grow((void **)&x->recs, &x->cap_recs, x->nrecs + 1, sizeof *x->recs)))
        return MS_ERR_NOMEM;
    *slot = (uint32_t)x->nrecs++;
    return 0;
}

static int end_rec(sim *x, size_t map_slot)
{
    uint32_t slot = x->live.vals[map_slot];
    ms__addrmap_remove_at(&x->live, map_slot);
    if (x->keep_all)
        return 0;
    if (x->emit)
        x->emit(x->ctx, &x->recs[slot]);
    if (x->nfree >= x->cap_free &&
        !ms__grow((void **)&x->free_slots, &x->cap_free, x->nfree + 1, sizeof *x->free_slots))
        return MS_ERR_NOMEM;
    x->free_slots[x->nfree++] = slot;
    return 0;
}

/* A life ends (or, rebuilt, began before the trace): keep it if it spans the peak. */
static int note_end(sim *x, const ms_alloc *a, int64_t peak_event)
{
    if (!x->track_peak || a->alloc_event > peak_event)
        return 0;
    if (x->nsince >= x->cap_since &&
        !ms__grow((void **)&x->since, &x->cap_since, x->nsince + 1, sizeof *x->since))
        return MS_ERR_NOMEM;
    x->since[x->nsince++] = *a;
    return 0;
}

static void sim_release(sim *x)
{
    free(x->since);
    free(x->recs);
    free(x->free_slots);
    free(x->pre);
    ms__addrmap_free(&x->live);
}

/* Where the replay of the events ended, relative to the start (whose own values only the
 * final state tells). */
typedef struct sim_end {
    int64_t rel, rel_max, rel_max_event; /* active bytes: at the end, highest, where */
    int64_t res, res_max;                /* reserved bytes: at the end, highest */
} sim_end;

static int fail_nomem(ms_error *err)
{
    return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory while replaying the trace");
}

static int fail_state_too_big(const sim *x, ms_error *err)
{
    return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET,
                    "device %d: the final state in 'segments' and the memory alive before the "
                    "trace add up to more than 2^56 bytes (64 PiB, beyond any GPU)", x->device);
}

/* Blocks active at the end that no kept alloc explains were alive all along: each is a
 * life from the start, counted as memory that existed before the trace. Also gives the
 * final segments' total (*final_reserved) and how many blocks that was. */
static int explain_final_blocks(sim *x, ms_timeline *t, const sim_end *e,
                                int64_t *final_reserved, uint64_t *unexplained_count,
                                ms_error *err)
{
    size_t nseg, nblk;
    const ms_segment *segs = ms_snapshot_segments(x->s, &nseg);
    const ms_block *blocks = ms_snapshot_blocks(x->s, &nblk);
    int64_t reserved = 0, unexplained = 0;
    uint64_t count = 0;
    for (size_t g = 0; g < nseg; g++) {
        if (segs[g].device != x->device)
            continue;
        reserved += (int64_t)segs[g].total_size;
        if (!ms__size_ok((uint64_t)reserved))
            return fail_state_too_big(x, err);
        for (size_t b = segs[g].first_block; b < segs[g].first_block + segs[g].n_blocks; b++) {
            const ms_block *blk = &blocks[b];
            if (blk->state != MS_BLOCK_ACTIVE_ALLOCATED && blk->state != MS_BLOCK_ACTIVE_PENDING_FREE)
                continue;
            if (ms__addrmap_find(&x->live, blk->address) != SIZE_MAX)
                continue;
            ms_alloc a = {blk->address, blk->requested_size, -1, -1, -1, blk->stack, 0};
            unexplained += (int64_t)blk->requested_size;
            if (!ms__size_ok((uint64_t)unexplained))
                return fail_state_too_big(x, err);
            count++;
            if (note_end(x, &a, e->rel_max_event) || add_pre(x, &a))
                return fail_nomem(err);
        }
    }
    t->preexisting_bytes += unexplained;
    t->preexisting_count += count;
    if (!ms__size_ok((uint64_t)t->preexisting_bytes) ||
        !ms__size_ok((uint64_t)(t->preexisting_bytes + e->rel_max)))
        return fail_state_too_big(x, err);
    *final_reserved = reserved;
    *unexplained_count = count;
    return 0;
}

/* MS_TIMELINE_PEAK_ALIVE: the lives that ended after the peak but were alive at it, and
 * those still alive at the end that were allocated by then, handed to t. */
static bool collect_peak_alive(sim *x, ms_timeline *t, int64_t rel_max_event)
{
    /* Still alive at the end and allocated by the peak: alive at the peak too. */
    for (size_t j = 0; j <= x->live.mask; j++) {
        if (x->live.vals[j] == MS_ADDRMAP_NONE)
            continue;
        const ms_alloc *r = &x->recs[x->live.vals[j]];
        if (r->alloc_event <= rel_max_event) {
            if (!ms__grow((void **)&x->since, &x->cap_since, x->nsince + 1, sizeof *x->since))
                return false;
            x->since[x->nsince++] = *r;
        }
    }
    /* The list grew by doubling: what it did not fill goes back (the peak of a trace
     * that frees nothing holds every life, and the run may keep two timelines). */
    if (x->nsince && x->nsince < x->cap_since) {
        ms_alloc *fit = realloc(x->since, x->nsince * sizeof *fit);
        if (fit)
            x->since = fit;
    }
    t->peak_alive = x->since;
    t->n_peak_alive = x->nsince;
    x->since = NULL;
    x->nsince = x->cap_since = 0;
    return true;
}

/* After the last event: the start's values from the final state, then every statistic
 * and curve made absolute, and the lives still open handed out. */
static int settle_end(sim *x, ms_timeline *t, const sim_end *e, int64_t *active,
                      int64_t *reserved, ms_error *err)
{
    const size_t n = x->tr->n;
    int64_t final_reserved = 0;
    uint64_t unexplained_count = 0;
    int rc = explain_final_blocks(x, t, e, &final_reserved, &unexplained_count, err);
    if (rc)
        return rc;

    t->active_start = t->preexisting_bytes;
    t->peak_bytes = t->active_start + e->rel_max;
    t->peak_event = e->rel_max_event;
    t->live_end_bytes = t->active_start + e->rel;
    t->live_end_count = x->live.count + unexplained_count;

    /* Reserved memory before the first event is whatever the final segments hold beyond
     * the trace's own net change. */
    int64_t res_start = final_reserved - e->res;
    if (res_start < 0)
        res_start = 0; /* the trace freed more than it had: the file contradicts itself */
    t->reserved_start = res_start;
    t->reserved_peak_bytes = res_start + e->res_max;
    t->reserved_end_bytes = res_start + e->res;
    t->preexisting_segment_bytes = res_start;
    t->trace_complete = t->preexisting_count == 0 && res_start == 0;

    for (size_t i = 0; active && i < n; i++)
        active[i] += t->active_start;
    for (size_t i = 0; reserved && i < n; i++)
        reserved[i] += res_start;
    if (x->track_peak && !collect_peak_alive(x, t, e->rel_max_event))
        return fail_nomem(err);
    /* Allocations still alive at the end have no free event. */
    if (!x->keep_all && x->emit) {
        for (size_t j = 0; j <= x->live.mask; j++)
            if (x->live.vals[j] != MS_ADDRMAP_NONE)
                x->emit(x->ctx, &x->recs[x->live.vals[j]]);
    }
    return 0;
}

/* ------------------------------------------------------------------ the curves' thread */

/* On a long trace the replay's one pass splits in two, each thread reading the events:
 * the main thread keeps the address map, the lives, the highest point and the set alive
 * there; a second thread counts the actions, follows reserved memory and writes the
 * per-event curves (active[] and reserved[], 8 bytes an event each: their page faults
 * alone were a third of the replay). The curve thread takes an allocation's bytes from
 * its alloc event and a free's from its free_completed event, which is what the replay
 * finds unless a free's size differs from its allocation's or an address is handed out
 * twice: the main thread notes those events (a valid trace has none) and the curve is
 * corrected from them on afterwards. Sums run in unsigned arithmetic, so every value
 * comes out as the serial replay's int64 one. */
size_t ms__timeline_parallel_min = (size_t)1 << 20;

typedef struct curve_fix {
    size_t event;
    uint64_t delta; /* what the replay's change there differs from the curve thread's */
} curve_fix;

typedef struct curve_job {
    const ms_trace *tr;
    int64_t *active, *reserved;
    uint64_t action_counts[MS_ACT_COUNT];
    uint64_t oom_count;
    int64_t res, res_max;
    size_t bad_event; /* where reserved memory went past 2^56; SIZE_MAX: nowhere */
} curve_job;

static void *curve_main(void *arg)
{
    curve_job *c = arg;
    const ms_trace *tr = c->tr;
    int64_t *active = c->active, *reserved = c->reserved;
    uint64_t rel = 0;
    int64_t res = 0, res_max = 0;
    c->bad_event = SIZE_MAX;
    for (size_t i = 0, n = tr->n; i < n; i++) {
        const unsigned act = tr->action[i];
        const uint64_t size = tr->size[i];
        c->action_counts[act < MS_ACT_COUNT ? act : MS_ACT_OTHER]++;
        switch (act) {
        case MS_ACT_ALLOC: rel += size; break;
        case MS_ACT_FREE_COMPLETED: rel -= size; break;
        case MS_ACT_SEGMENT_ALLOC:
        case MS_ACT_SEGMENT_MAP: res += (int64_t)size; break;
        case MS_ACT_SEGMENT_FREE:
        case MS_ACT_SEGMENT_UNMAP:
            res -= (int64_t)size;
            if (!ms__sum_ok(res)) {
                c->bad_event = i;
                return NULL;
            }
            break;
        case MS_ACT_OOM: c->oom_count++; break;
        default: break;
        }
        if (res > res_max) {
            if (!ms__sum_ok(res)) {
                c->bad_event = i;
                return NULL;
            }
            res_max = res;
        }
        active[i] = (int64_t)rel;
        if (reserved)
            reserved[i] = res;
    }
    c->res = res;
    c->res_max = res_max;
    return NULL;
}

static bool add_fix(curve_fix **fix, size_t *n, size_t *cap, size_t event, uint64_t delta)
{
    if (*n >= *cap && !ms__grow((void **)fix, cap, *n + 1, sizeof **fix))
        return false;
    (*fix)[(*n)++] = (curve_fix){event, delta};
    return true;
}

/* The replay's changes where the curve thread's differ, applied from each on. */
static void curve_correct(int64_t *active, size_t n, const curve_fix *fix, size_t n_fix)
{
    uint64_t c = 0;
    size_t k = n_fix ? fix[0].event : n;
    for (size_t m = 0; m < n_fix; m++) {
        for (; k < fix[m].event; k++)
            active[k] = (int64_t)((uint64_t)active[k] + c);
        c += fix[m].delta;
    }
    for (; k < n; k++)
        active[k] = (int64_t)((uint64_t)active[k] + c);
}

/* ------------------------------------------------------------------ the replay */

/* The slot holding key, or SIZE_MAX and in *empty the empty slot that ended the probe:
 * where ms__addrmap_put stores a new key when the map need not grow first. */
static inline size_t find_or_empty(const ms_addrmap *m, uint64_t key, size_t *empty)
{
    size_t j = ms__addrmap_home(m, key);
    for (; m->vals[j] != MS_ADDRMAP_NONE; j = (j + 1) & m->mask)
        if (m->keys[j] == key)
            return j;
    *empty = j;
    return SIZE_MAX;
}

/* Runs the whole trace, filling t's statistics (and curves when given). The loop is the
 * one pass over millions of events: only what follows it (settle_end) is apart. Each
 * allocation's life costs one probe of the address map per event: a new address is
 * stored where its lookup ended, and a free_completed right after the free_requested of
 * the same address (the usual order) takes the slot that lookup found, the map
 * unchanged in between. */
static int simulate(sim *x, ms_timeline *t, int64_t *active, int64_t *reserved, ms_error *err)
{
    const ms_trace *tr = x->tr;
    const size_t n = tr->n;
    int64_t rel = 0, rel_max = 0, rel_max_event = -1;
    int64_t res = 0, res_max = 0;
    size_t bad_event = 0;
    uint64_t req_addr = 0; /* the last free_requested's address and slot, while valid */
    size_t req_slot = SIZE_MAX;
    bool req_valid = false;
    /* A short trace gets a small map: a file of 65,536 one-event devices makes a
     * timeline per device, and each cleared 8,192 slots. */
    if (!ms__addrmap_init(&x->live, n < 4096 ? n : 4096))
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    /* The curves on a second thread (see curve_main); `lean`: this loop leaves them. */
    curve_job cj;
    memset(&cj, 0, sizeof cj);
    curve_fix *fix = NULL;
    size_t n_fix = 0, cap_fix = 0;
    pthread_t curve_thread;
    const bool lean = active && !x->on_event && x->s->threads >= 2 &&
                      n >= ms__timeline_parallel_min &&
                      (cj.tr = tr, cj.active = active, cj.reserved = reserved,
                       pthread_create(&curve_thread, NULL, curve_main, &cj) == 0);
    int rc = 0;
    if (x->keep_all) {
        /* Every allocation event makes one record: room for all of them at once, in
         * huge pages where the system gives them on request (a 5.8M-event trace keeps
         * 140 MB of records, 34,000 page faults in 4 KiB pages). */
        size_t nalloc = 0;
        for (size_t i = 0; i < n; i++)
            nalloc += tr->action[i] == MS_ACT_ALLOC;
        size_t bytes;
        if (nalloc && ms__mul(nalloc, sizeof *x->recs, &bytes) &&
            (x->recs = malloc(bytes)) != NULL) {
            x->cap_recs = nalloc;
            ms__advise_huge(x->recs, bytes);
        }
    }

    size_t i = 0;
    for (; i < n; i++) {
        const unsigned act = tr->action[i];
        const uint64_t addr = tr->addr[i];
        const int64_t size = (int64_t)tr->size[i];
        if (!lean)
            t->action_counts[act < MS_ACT_COUNT ? act : MS_ACT_OTHER]++;
        switch (act) {
        case MS_ACT_ALLOC: {
            size_t empty = SIZE_MAX;
            size_t j = find_or_empty(&x->live, addr, &empty);
            req_valid = false;
            if (j != SIZE_MAX) {
                /* A block handed out twice without a free in between: the first life
                 * must have ended unseen, so end it here to keep the sums honest. */
                ms_alloc *old = &x->recs[x->live.vals[j]];
                old->free_event = (int64_t)i;
                rel -= (int64_t)old->size;
                if (lean && !add_fix(&fix, &n_fix, &cap_fix, i, 0 - old->size))
                    goto nomem;
                if (note_end(x, old, rel_max_event) || end_rec(x, j))
                    goto nomem;
            }
            uint32_t slot;
            if (new_rec(x, &slot))
                goto nomem;
            if (j == SIZE_MAX && (x->live.count + 1) * 2 <= x->live.mask + 1) {
                x->live.keys[empty] = addr;
                x->live.vals[empty] = slot;
                x->live.count++;
            } else if (!ms__addrmap_put(&x->live, addr, slot)) {
                goto nomem;
            }
            x->recs[slot] = (ms_alloc){addr, (uint64_t)size, (int64_t)i, -1, -1, tr->stack[i],
                                       tr->stream[i]};
            rel += size;
            break;
        }
        case MS_ACT_FREE_REQUESTED: {
            size_t j = ms__addrmap_find(&x->live, addr);
            if (j != SIZE_MAX)
                x->recs[x->live.vals[j]].free_requested_event = (int64_t)i;
            req_addr = addr;
            req_slot = j;
            req_valid = true;
            break;
        }
        case MS_ACT_FREE_COMPLETED: {
            size_t j = req_valid && req_addr == addr ? req_slot : ms__addrmap_find(&x->live, addr);
            req_valid = false;
            if (j != SIZE_MAX) {
                ms_alloc *r = &x->recs[x->live.vals[j]];
                r->free_event = (int64_t)i;
                rel -= (int64_t)r->size;
                if (lean && r->size != (uint64_t)size &&
                    !add_fix(&fix, &n_fix, &cap_fix, i, (uint64_t)size - r->size))
                    goto nomem;
                if (note_end(x, r, rel_max_event) || end_rec(x, j))
                    goto nomem;
            } else {
                /* Allocated before the first kept event: alive from the start. */
                ms_alloc a = {addr, (uint64_t)size, -1, (int64_t)i, -1, MS_NO_STACK, tr->stream[i]};
                t->preexisting_bytes += size;
                if (!ms__size_ok((uint64_t)t->preexisting_bytes)) {
                    bad_event = i;
                    goto too_big;
                }
                t->preexisting_count++;
                rel -= size;
                if (note_end(x, &a, rel_max_event) || add_pre(x, &a))
                    goto nomem;
            }
            break;
        }
        case MS_ACT_SEGMENT_ALLOC:
        case MS_ACT_SEGMENT_MAP:
            res += size;
            break;
        case MS_ACT_SEGMENT_FREE:
        case MS_ACT_SEGMENT_UNMAP:
            res -= size;
            if (!lean && !ms__sum_ok(res)) {
                bad_event = i;
                goto too_big;
            }
            break;
        case MS_ACT_OOM:
            if (!lean)
                t->oom_count++;
            break;
        default:
            break;
        }
        if (rel > rel_max) {
            /* Sums stay within 2^56 (checked_math.h); a new high is where one grows. */
            if (!ms__sum_ok(rel)) {
                bad_event = i;
                goto too_big;
            }
            rel_max = rel;
            rel_max_event = (int64_t)i;
            x->nsince = 0;
        }
        if (lean)
            continue;
        if (res > res_max) {
            if (!ms__sum_ok(res)) {
                bad_event = i;
                goto too_big;
            }
            res_max = res;
        }
        if (active)
            active[i] = rel;
        if (reserved)
            reserved[i] = res;
        if (x->on_event)
            x->on_event(x->event_ctx, i, rel);
    }
    if (lean) {
        /* The curve thread's counts, reserved memory and error: the serial replay would
         * have stopped at that event, before anything of this loop after it. */
        pthread_join(curve_thread, NULL);
        if (cj.bad_event != SIZE_MAX) {
            bad_event = cj.bad_event;
            free(fix);
            goto too_big_out;
        }
        memcpy(t->action_counts, cj.action_counts, sizeof t->action_counts);
        t->oom_count = cj.oom_count;
        res = cj.res;
        res_max = cj.res_max;
        curve_correct(active, n, fix, n_fix);
        free(fix);
    }
    {
        sim_end e = {rel, rel_max, rel_max_event, res, res_max};
        return settle_end(x, t, &e, active, reserved, err);
    }
nomem:
    rc = 1;
    bad_event = i;
too_big:
    if (lean) {
        /* The first error in event order, as the serial replay meets them: a reserved
         * sum past the limit before this one, or this. */
        pthread_join(curve_thread, NULL);
        free(fix);
        if (cj.bad_event != SIZE_MAX && (cj.bad_event < bad_event || (!rc && cj.bad_event == bad_event))) {
            bad_event = cj.bad_event;
            goto too_big_out;
        }
    }
    if (rc)
        return fail_nomem(err);
too_big_out:
    return ms__fail(err, MS_ERR_FORMAT, MS_NO_OFFSET,
                    "device %d: the sizes up to trace entry %zu add up to more than 2^56 bytes "
                    "(64 PiB, beyond any GPU)", x->device, bad_event);
}

/* Only for a trace that needed reconstructing: the evidence that events were dropped
 * rather than never recorded (see ms_wrap_evidence). */
static ms_wrap_evidence wrap_evidence(const ms_snapshot *s, const ms_timeline *t, const ms_trace *tr)
{
    if (t->trace_complete || tr->n == 0)
        return MS_WRAP_NONE;
    size_t n_ann = 0;
    const ms_annotation *ann = ms_snapshot_annotations(s, &n_ann);
    for (size_t i = 0; i < n_ann; i++)
        if (!ann[i].is_start && ann[i].device == tr->device && ann[i].time_us < tr->time_us[0])
            return MS_WRAP_ANNOTATIONS;
    return tr->n % 1000 == 0 ? MS_WRAP_ROUND_COUNT : MS_WRAP_NONE;
}

int ms_timeline_build(ms_timeline **out, const ms_snapshot *s, int device, unsigned flags,
                      ms_error *err)
{
    ms_error_clear(err);
    *out = NULL;
    if (!s || device < 0 || device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no device %d in this snapshot", device);
    ms_timeline *t = calloc(1, sizeof *t);
    if (!t)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    const ms_trace *tr = ms_snapshot_trace(s, device);
    t->device = device;
    t->n_events = tr->n;
    t->has_times = tr->has_times;
    if (tr->n) {
        t->t_first_us = tr->time_us[0];
        t->t_last_us = tr->time_us[tr->n - 1];
    }
    if (flags & (MS_TIMELINE_CURVES | MS_TIMELINE_ACTIVE)) {
        size_t bytes;
        if (!ms__mul(tr->n ? tr->n : 1, sizeof(int64_t), &bytes) ||
            !(t->active = malloc(bytes)) ||
            ((flags & MS_TIMELINE_CURVES) && !(t->reserved = malloc(bytes)))) {
            ms_timeline_free(t);
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory for the curves");
        }
        ms__advise_huge(t->active, bytes);
        ms__advise_huge(t->reserved, bytes);
    }
    sim x;
    memset(&x, 0, sizeof x);
    x.s = s;
    x.tr = tr;
    x.device = device;
    x.keep_all = (flags & MS_TIMELINE_ALLOCS) != 0;
    x.track_peak = (flags & MS_TIMELINE_PEAK_ALIVE) != 0;
    int rc = simulate(&x, t, t->active, t->reserved, err);
    if (!rc && x.keep_all) {
        /* Trace allocations in alloc order, then the reconstructed ones. */
        /* The records become the array, grown by the few reconstructed ones: a copy into
         * fresh memory faulted in every page of it again (48 bytes a life, 140 MB on a
         * 5.8M-event trace), where realloc of a block this big moves no bytes. */
        size_t total = x.nrecs + x.npre;
        t->allocs = realloc(x.recs, (total ? total : 1) * sizeof *t->allocs);
        if (!t->allocs) {
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        } else {
            x.recs = NULL;
            if (x.npre)
                memcpy(t->allocs + x.nrecs, x.pre, x.npre * sizeof *x.pre);
            t->n_allocs = total;
        }
    }
    sim_release(&x);
    if (rc) {
        ms_timeline_free(t);
        return rc;
    }
    t->peak_time_us = t->peak_event >= 0 ? tr->time_us[t->peak_event] : t->t_first_us;
    t->wrap_evidence = wrap_evidence(s, t, tr);
    *out = t;
    return 0;
}

const char *ms_wrap_evidence_name(ms_wrap_evidence e)
{
    switch (e) {
    case MS_WRAP_ANNOTATIONS: return "annotations_before_first_event";
    case MS_WRAP_ROUND_COUNT: return "entry_count_round";
    default: return NULL;
    }
}

void ms_timeline_free(ms_timeline *t)
{
    if (!t)
        return;
    MS__FREE_ALL(t->active, t->reserved, t->peak_alive, t->allocs, t);
}

void ms__alive_collect(void *ctx, const ms_alloc *a)
{
    ms__alive_ctx *c = ctx;
    if (c->failed || a->alloc_event > c->at || (a->free_event != -1 && a->free_event <= c->at))
        return;
    if (!ms__grow((void **)&c->out, &c->cap, c->n + 1, sizeof *c->out)) {
        c->failed = true;
        return;
    }
    c->out[c->n++] = *a;
}

int ms_timeline_alive_at(ms_alloc **out, size_t *n_out, const ms_snapshot *s,
                         const ms_timeline *t, int64_t event, ms_error *err)
{
    ms_error_clear(err);
    *out = NULL;
    *n_out = 0;
    if (!s || !t || event < -1 || (event >= 0 && (uint64_t)event >= t->n_events))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "event %lld is outside the trace",
                        (long long)event);
    if (t->peak_alive && event == t->peak_event) {
        /* Found while the timeline was built: no replay needed. */
        ms_alloc *copy = malloc((t->n_peak_alive ? t->n_peak_alive : 1) * sizeof *copy);
        if (!copy)
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        if (t->n_peak_alive)
            memcpy(copy, t->peak_alive, t->n_peak_alive * sizeof *copy);
        *out = copy;
        *n_out = t->n_peak_alive;
        return 0;
    }
    ms__alive_ctx c = {event, NULL, 0, 0, false};
    int rc = ms__timeline_replay(s, t, ms__alive_collect, &c, NULL, NULL, err);
    if (!rc && c.failed)
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    if (rc) {
        free(c.out);
        return rc;
    }
    *out = c.out;
    *n_out = c.n;
    return 0;
}

/* Alive right after event `at`: the one rule of the set alive at an instant (INT64_MIN:
 * any life). */
static bool alive_at(const ms_alloc *a, int64_t at)
{
    return at == INT64_MIN || (a->alloc_event <= at && (a->free_event == -1 || a->free_event > at));
}

/* alive_at over ascending instants: a life counts from the first instant at or after
 * its alloc event to the last before its free, so each is placed by two searches. */
int ms_timeline_alive_counts(const ms_timeline *t, const int64_t *events, size_t n,
                             size_t *counts, ms_error *err)
{
    ms_error_clear(err);
    int64_t *diff = calloc(n + 1, sizeof *diff);
    if (!diff)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    for (size_t i = 0; i < t->n_allocs; i++) {
        const ms_alloc *a = &t->allocs[i];
        size_t from = ms__first_above_i64(events, n, a->alloc_event - 1);
        size_t to = a->free_event == -1 ? n : ms__first_above_i64(events, n, a->free_event - 1);
        if (from < to) {
            diff[from]++;
            diff[to]--;
        }
    }
    int64_t run = 0;
    for (size_t k = 0; k < n; k++) {
        run += diff[k];
        counts[k] = (size_t)run;
    }
    free(diff);
    return 0;
}

int ms__timeline_alive_summed(ms_alloc **out, size_t *n_out, const ms_snapshot *s,
                              const ms_timeline *t, int64_t event, ms_error *err)
{
    if (!t || !t->allocs || (t->peak_alive && event == t->peak_event) || event < -1 ||
        (event >= 0 && (uint64_t)event >= t->n_events))
        return ms_timeline_alive_at(out, n_out, s, t, event, err);
    ms_error_clear(err);
    /* Two passes: the count sizes one exact array, so no list grows over a million lives. */
    size_t n = 0;
    for (size_t i = 0; i < t->n_allocs; i++) {
        const ms_alloc *a = &t->allocs[i];
        n += alive_at(a, event);
    }
    ms_alloc *o = malloc((n ? n : 1) * sizeof *o);
    if (!o)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < t->n_allocs; i++) {
        const ms_alloc *a = &t->allocs[i];
        if (alive_at(a, event))
            o[k++] = *a;
    }
    *out = o;
    *n_out = k;
    return 0;
}

/* ------------------------------------------------------------------ site totals */

static int by_bytes_desc(const void *a, const void *b)
{
    const ms_site_total *x = a, *y = b;
    return MS__CMP3(y->bytes, x->bytes, y->count, x->count, x->site, y->site);
}

typedef struct site_user {
    uint32_t site_slot, user;
    uint64_t bytes;
} site_user;

static int by_site_user(const void *a, const void *b)
{
    const site_user *x = a, *y = b;
    return MS__CMP2(x->site_slot, y->site_slot, x->user, y->user);
}

/* Each site's user line: stacks of one site can come from several lines of the user's
 * code; the one behind the most bytes is the site's. Summed per stack first (a run has a
 * few thousand stacks), then per (site, user line). The stack behind the most bytes is
 * the site's too (what a comparison matches a moved site by). Returns nonzero on no
 * memory. */
static int site_user_frames(ms_site_total *acc, size_t nf, const ms_snapshot *s,
                            const ms_alloc *allocs, size_t n_allocs, int64_t at)
{
    for (size_t k = 0; k <= nf; k++) {
        acc[k].user_frame = UINT32_MAX;
        acc[k].stack = MS_NO_STACK;
    }
    size_t nst = ms_snapshot_stack_count(s);
    uint64_t *per_stack = calloc(nst ? nst : 1, sizeof *per_stack);
    site_user *su = malloc((nst ? nst : 1) * sizeof *su);
    uint64_t *best = calloc(nf + 1, sizeof *best);
    if (!per_stack || !su || !best) {
        free(per_stack);
        free(su);
        free(best);
        return -1;
    }
    for (size_t i = 0; i < n_allocs; i++)
        if (allocs[i].stack < nst && alive_at(&allocs[i], at))
            per_stack[allocs[i].stack] += allocs[i].size;
    size_t n = 0;
    for (uint32_t st = 0; st < nst; st++) {
        if (!per_stack[st])
            continue;
        uint32_t user = ms_stack_user_frame(s, st);
        uint32_t site = ms_stack_site(s, st);
        size_t slot = site == UINT32_MAX ? nf : site;
        /* Ascending stack ids: a tie keeps the lowest. */
        if (per_stack[st] > best[slot]) {
            best[slot] = per_stack[st];
            acc[slot].stack = st;
        }
        if (user == UINT32_MAX)
            continue;
        su[n].site_slot = site == UINT32_MAX ? (uint32_t)nf : site;
        su[n].user = user;
        su[n].bytes = per_stack[st];
        n++;
    }
    qsort(su, n, sizeof *su, by_site_user);
    memset(best, 0, (nf + 1) * sizeof *best);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t bytes = 0;
        while (j < n && su[j].site_slot == su[i].site_slot && su[j].user == su[i].user)
            bytes += su[j++].bytes;
        /* Ascending user ids: a tie keeps the lowest. */
        if (bytes > best[su[i].site_slot]) {
            best[su[i].site_slot] = bytes;
            acc[su[i].site_slot].user_frame = su[i].user;
        }
        i = j;
    }
    free(per_stack);
    free(su);
    free(best);
    return 0;
}

/* The sums of ms_site_totals over the lives alive right after event `at` (INT64_MIN:
 * every one given). */
static int site_totals(ms_site_total **out, size_t *n_out, const ms_snapshot *s,
                       const ms_alloc *allocs, size_t n_allocs, int64_t at, ms_error *err)
{
    ms_error_clear(err);
    *out = NULL;
    *n_out = 0;
    /* Index by frame id (dense, a few thousand), plus one slot for "no stack". */
    size_t nf = ms_snapshot_frame_count(s);
    ms_site_total *acc = calloc(nf + 1, sizeof *acc);
    if (!acc)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    for (size_t i = 0; i < n_allocs; i++) {
        if (!alive_at(&allocs[i], at))
            continue;
        uint32_t site = ms_stack_site(s, allocs[i].stack);
        size_t k = site == UINT32_MAX ? nf : site;
        acc[k].site = site;
        acc[k].bytes += allocs[i].size;
        acc[k].count++;
    }
    if (site_user_frames(acc, nf, s, allocs, n_allocs, at)) {
        free(acc);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    }
    size_t m = 0;
    for (size_t k = 0; k <= nf; k++)
        if (acc[k].count)
            acc[m++] = acc[k];
    qsort(acc, m, sizeof *acc, by_bytes_desc);
    *out = acc;
    *n_out = m;
    return 0;
}

int ms_site_totals(ms_site_total **out, size_t *n_out, const ms_snapshot *s,
                   const ms_alloc *allocs, size_t n_allocs, ms_error *err)
{
    return site_totals(out, n_out, s, allocs, n_allocs, INT64_MIN, err);
}

int ms__site_totals_at(ms_site_total **out, size_t *n_out, const ms_snapshot *s,
                       const ms_timeline *t, int64_t event, ms_error *err)
{
    return site_totals(out, n_out, s, t->allocs, t->n_allocs, event, err);
}

/* ------------------------------------------------------------------ replay */

typedef struct scan_ctx {
    int64_t offset;
    void (*fn)(void *ctx, size_t event, int64_t active);
    void *ctx;
} scan_ctx;

static void scan_event(void *ctx, size_t i, int64_t rel)
{
    scan_ctx *c = ctx;
    c->fn(c->ctx, i, c->offset + rel);
}

int ms__timeline_replay(const ms_snapshot *s, const ms_timeline *t,
                        void (*emit)(void *ctx, const ms_alloc *a), void *ctx,
                        void (*on_event)(void *ctx, size_t event, int64_t active),
                        void *event_ctx, ms_error *err)
{
    scan_ctx c = {t->active_start, on_event, event_ctx};
    ms_timeline scratch;
    memset(&scratch, 0, sizeof scratch);
    sim x;
    memset(&x, 0, sizeof x);
    x.s = s;
    x.tr = ms_snapshot_trace(s, t->device);
    x.device = t->device;
    x.emit = emit;
    x.ctx = ctx;
    x.on_event = on_event ? scan_event : NULL;
    x.event_ctx = &c;
    int rc = simulate(&x, &scratch, NULL, NULL, err);
    sim_release(&x);
    return rc;
}

/* First event whose time is at or after t (strictly after when `after`). Annotations
 * come in time order, so the search gallops forward from the previous answer (*hint):
 * thousands of binary searches over a 4M-event time array would each miss the cache
 * some twenty times. */
int64_t ms__event_at_time(const ms_trace *tr, int64_t t, bool after, size_t *hint)
{
    size_t lo = 0, hi = tr->n;
    size_t h = *hint < tr->n ? *hint : tr->n;
    if (h > 0 && (after ? tr->time_us[h - 1] <= t : tr->time_us[h - 1] < t)) {
        /* The answer is at or after h: double a step until it overshoots. */
        lo = h;
        size_t step = 1;
        while (lo + step < tr->n &&
               (after ? tr->time_us[lo + step - 1] <= t : tr->time_us[lo + step - 1] < t)) {
            lo += step;
            step *= 2;
        }
        hi = lo + step < tr->n ? lo + step : tr->n;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        bool before = after ? tr->time_us[mid] <= t : tr->time_us[mid] < t;
        if (before)
            lo = mid + 1;
        else
            hi = mid;
    }
    *hint = lo;
    return (int64_t)lo;
}
