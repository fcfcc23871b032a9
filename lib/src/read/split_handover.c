/* The hand-over of a part read away from the VM (split_reader.c): when the VM reaches the
 * part's start it checks what the serial reading would have checked, settles what the
 * part could not know (memo references past its copy of the memo, its own ids of strings,
 * frames, stacks and streams) in the order the VM would have met them, and appends the
 * part's memo entries and events; or it leaves the part for the VM to read itself. */
#define _GNU_SOURCE /* mremap's MREMAP_FIXED */
#include "split_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FAIL(code, off, ...) ms__fail(ms__vm_error(vm), (code), (off), __VA_ARGS__)

_Atomic uint64_t ms__split_handovers;
atomic_bool ms__split_test_remap_fails;

/* The VM helps the second thread only when at least this much of its part is left. */
#define HELP_MIN_BYTES ((size_t)4 << 20)

/* What a memo index held where the thread read it: the VM's entry below base, the
 * thread's own (in its ids) from base on. */
static inline uint32_t memo_at(const ms_vm *vm, const split_worker *w, uint64_t base, uint64_t idx)
{
    return idx < base ? ms__vm_memo(vm, NULL, NULL, NULL)[idx] : def_at(w, idx - base);
}

static size_t chunk_len(const split_worker *w, size_t c)
{
    uint64_t left = w->n_events - (uint64_t)c * CHUNK_EVENTS;
    return left < CHUNK_EVENTS ? (size_t)left : CHUNK_EVENTS;
}

/* What the serial reading would have checked that needs no change to check. Deferred
 * frames and stacks are checked as they are settled (settle_stacks). */
static bool can_take(const ms_vm *vm, const split_worker *w, int *device)
{
    if (!ms__vm_trace_on_top(vm, device))
        return false;
    size_t base, sparse;
    uint64_t gen;
    ms__vm_memo(vm, &base, &gen, &sparse);
    if (sparse || gen != w->pub_gen ||
        (w->max_ahead != INT64_MIN && w->max_ahead >= (int64_t)base))
        return false;
    /* Table limits the part might reach too: the VM reports those where it reaches them. */
    if (!ms__vm_has_room(vm, w->max_batch + 1024, w->n_defs, w->n_events, w->done.strings,
                         GLOBAL_ID_LIMIT, w->done.streams))
        return false;
    for (size_t i = 0; i < w->n_dact; i++)
        if (VTAG(memo_at(vm, w, base, w->dact[i])) != T_STR)
            return false;
    return true;
}

/* take()'s answer when the VM must read the part itself after all. */
#define TAKE_REFUSED (-1)
#define MAP_UNSET 0xfffffffeu

typedef struct handover {
    ms_vm *vm;
    split_worker *w;
    uint64_t base;
    int64_t off;
    uint32_t *smap; /* the thread's string id -> the VM's */
    uint32_t *fmap; /* frame ids, MAP_UNSET until met */
    uint32_t *kmap; /* stack ids, MAP_UNSET until met */
    uint32_t *memo_room; /* where the thread's memo entries go in the VM's memo */
    uint32_t ids[MAX_FRAMES];
} handover;

/* A frame name or filename as the VM's string id; -1 when it is no string (the VM's
 * reading fails there). */
static int settle_string(handover *h, uint32_t r, uint32_t *out)
{
    if (r == MS_NO_STRING || !(r & (REF_LOCAL | REF_DEFER))) {
        *out = r;
        return 0;
    }
    if (r & REF_LOCAL) {
        *out = h->smap[r & REF_ID_MASK];
        return 0;
    }
    uint64_t idx = r & REF_ID_MASK;
    uint32_t enc = memo_at(h->vm, h->w, h->base, idx);
    if (enc == (uint32_t)VMAKE(T_SPC, SPC_NONE))
        *out = MS_NO_STRING;
    else if (VTAG(enc) == T_STR)
        *out = idx < h->base ? (uint32_t)VPAY(enc) : h->smap[VPAY(enc)];
    else
        return -1;
    return 0;
}

static int local_frame_id(handover *h, uint32_t local, uint32_t *out)
{
    if (h->fmap[local] == MAP_UNSET) {
        const local_frame *lf = &h->w->frames[local];
        ms_frame f = {0, 0, lf->line};
        if (settle_string(h, lf->name, &f.name) || settle_string(h, lf->filename, &f.filename))
            return -1;
        int rc = ms__vm_intern_frame(h->vm, &f, &h->fmap[local], h->off);
        if (rc)
            return rc;
    }
    *out = h->fmap[local];
    return 0;
}

/* A frame reference of one of the thread's stacks as the VM's frame id. */
static int settle_frame(handover *h, uint32_t r, uint32_t *out)
{
    if (!(r & (REF_LOCAL | REF_DEFER))) {
        *out = r;
        return 0;
    }
    if (r & REF_DEFER) {
        uint64_t idx = r & REF_ID_MASK;
        if (idx < h->base) /* converted, or a dict the VM converts now */
            return ms__vm_frame_of(h->vm, ms__vm_memo(h->vm, NULL, NULL, NULL)[idx], out, h->off);
        uint32_t enc = def_at(h->w, idx - h->base);
        if (VTAG(enc) != T_CONV || (VPAY(enc) & 1))
            return -1;
        r = REF_LOCAL | (uint32_t)(VPAY(enc) >> 1);
    }
    return local_frame_id(h, r & REF_ID_MASK, out);
}

/* The VM's id of one of the thread's stacks: its frames converted and the stack interned
 * the first time an event uses it, which is when the VM would have done both. */
static int local_stack_id(handover *h, uint32_t local, uint32_t *out)
{
    const split_worker *w = h->w;
    if (h->kmap[local] == MAP_UNSET) {
        size_t from = w->stack_start[local], n = w->stack_start[local + 1] - from;
        for (size_t k = 0; k < n; k++) {
            int rc = settle_frame(h, w->stack_refs[from + k], &h->ids[k]);
            if (rc)
                return rc;
        }
        int rc = ms__vm_intern_stack(h->vm, h->ids, n, &h->kmap[local], h->off);
        if (rc)
            return rc;
    }
    *out = h->kmap[local];
    return 0;
}

/* Every event's stack as the VM's id, settled in event order so that frames and stacks
 * new to the VM get the ids the serial reading gives them. A reference to something that
 * is no frames list or frame is an error the VM must report where it meets it; the ids
 * handed out until then are the ones it hands out first anyway, so it can simply read
 * the part itself. */
static int settle_stacks(handover *h)
{
    split_worker *w = h->w;
    for (size_t c = 0; c * CHUNK_EVENTS < w->n_events; c++) {
        uint32_t *st = w->chunks[c]->stack;
        for (size_t i = 0, n = chunk_len(w, c); i < n; i++) {
            uint32_t s = st[i];
            if (s == MS_NO_STACK || !(s & (REF_DEFER | REF_LOCAL)))
                continue;
            int rc = 0;
            if (s & REF_DEFER) {
                uint64_t idx = s & REF_ID_MASK;
                uint32_t enc = memo_at(h->vm, w, h->base, idx);
                if (enc == (uint32_t)VMAKE(T_SPC, SPC_NONE))
                    s = MS_NO_STACK;
                else if (idx >= h->base)
                    rc = VTAG(enc) == T_CONV && (VPAY(enc) & 1) ? (s = REF_LOCAL | (uint32_t)(VPAY(enc) >> 1), 0) : -1;
                else if (VTAG(enc) == T_CONV && (VPAY(enc) & 1))
                    s = (uint32_t)(VPAY(enc) >> 1);
                else
                    rc = ms__vm_stack_of_list(h->vm, enc, &s, h->off);
            }
            if (!rc && s != MS_NO_STACK && (s & REF_LOCAL))
                rc = local_stack_id(h, s & REF_ID_MASK, &s);
            if (rc)
                return rc;
            st[i] = s;
        }
    }
    /* Every stack and frame the thread made belongs to some event (an entry read in vain
     * and again from its scratch copy makes the same ones, by content); this only keeps
     * the maps total. */
    for (size_t i = 0; i < w->done.stacks; i++) {
        uint32_t unused;
        int rc = local_stack_id(h, (uint32_t)i, &unused);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < w->done.frames; i++) {
        uint32_t unused;
        int rc = local_frame_id(h, (uint32_t)i, &unused);
        if (rc)
            return rc;
    }
    return 0;
}

/* One part of the copy: memo entries of defs chunks [def_from, def_to) and events of
 * event chunks [ev_from, ev_to), translated into the VM's ids; each chunk is freed once
 * copied, so the two readings never both hold the whole. */
typedef struct copy_job {
    const handover *h;
    ms_trace_build *t;
    size_t first; /* index of the thread's first event */
    const uint16_t *rmap;
    uint8_t amap[MAX_DEFERRED_ACTIONS];
    size_t def_from, def_to, ev_from, ev_to;
    bool ok;
} copy_job;

/* Memory the kernel hands out fresh costs more than the copy into it (a page fault and
 * a zeroed page each, several microseconds on a virtual machine: most of the hand-over's
 * time). So before a chunk is copied, the pages of the one copied just before it, now
 * garbage, are moved under the whole pages of its destination that nothing has written
 * yet, and the copy writes into pages already there. `donor` holds `bytes` (a multiple
 * of the page) at a page boundary. False only when the destination was left unmapped. */
static bool recycle(uint8_t *donor, size_t bytes, uint8_t *dst, size_t dst_bytes, size_t page)
{
#ifdef MREMAP_FIXED
    uintptr_t lo = ((uintptr_t)dst + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)dst + dst_bytes) & ~(uintptr_t)(page - 1);
    if (!donor || hi <= lo || hi - lo > bytes)
        return true;
    if (!atomic_load_explicit(&ms__split_test_remap_fails, memory_order_relaxed) &&
        mremap(donor, hi - lo, hi - lo, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)lo) != MAP_FAILED)
        return true;
    /* The kernel may have unmapped the destination before failing: map it again (its
     * bytes were not written yet). */
    return mmap((void *)lo, hi - lo, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
#else
    (void)donor, (void)bytes, (void)dst, (void)dst_bytes, (void)page;
    return true;
#endif
}

static bool copy_part(copy_job *j)
{
    split_worker *w = j->h->w;
    const handover *h = j->h;
    uint32_t *memo = h->memo_room;
    uint32_t *donor_defs = NULL;
    bool ok = true;
    for (size_t c = j->def_from; c < j->def_to; c++) {
        uint32_t *defs = w->defs[c];
        uint64_t from = (uint64_t)c * CHUNK_DEFS;
        size_t n = w->n_defs - from < CHUNK_DEFS ? (size_t)(w->n_defs - from) : CHUNK_DEFS;
        ok = ok && recycle((uint8_t *)donor_defs, DEFS_BYTES, (uint8_t *)(memo + from),
                           n * sizeof *memo, w->page);
        if (!ok)
            break;
        for (size_t i = 0; i < n; i++) {
            uint32_t d = defs[i];
            if (VTAG(d) == T_STR)
                d = (uint32_t)VMAKE(T_STR, h->smap[VPAY(d)]);
            else if (VTAG(d) == T_CONV && (VPAY(d) & 1))
                d = (uint32_t)VMAKE(T_CONV, (uint64_t)h->kmap[VPAY(d) >> 1] << 1 | 1);
            else if (VTAG(d) == T_CONV)
                d = (uint32_t)VMAKE(T_CONV, (uint64_t)h->fmap[VPAY(d) >> 1] << 1);
            memo[from + i] = d;
        }
        if (donor_defs)
            chunk_free(donor_defs, DEFS_BYTES);
        donor_defs = defs;
        w->defs[c] = NULL;
    }
    if (donor_defs)
        chunk_free(donor_defs, DEFS_BYTES);
    ms_trace_build *t = j->t;
    ev_chunk *donor = NULL;
    for (size_t c = j->ev_from; c < j->ev_to && ok; c++) {
        size_t n = chunk_len(w, c), at = j->first + c * CHUNK_EVENTS;
        ev_chunk *ch = w->chunks[c];
#define RECYCLE(field)                                                                       \
    (recycle(donor ? (uint8_t *)donor->field : NULL, sizeof donor->field,                    \
             (uint8_t *)(t->field + at), n * sizeof *t->field, w->page))
        ok = RECYCLE(action) && RECYCLE(addr) && RECYCLE(size) && RECYCLE(time_us) &&
             RECYCLE(stack) && RECYCLE(stream);
#undef RECYCLE
        if (!ok)
            break;
        if (w->n_dact) {
            for (size_t i = 0; i < n; i++)
                t->action[at + i] = ch->action[i] & ACTION_DEFERRED
                                        ? j->amap[ch->action[i] & ~ACTION_DEFERRED]
                                        : ch->action[i];
        } else {
            memcpy(t->action + at, ch->action, n * sizeof *t->action);
        }
        memcpy(t->addr + at, ch->addr, n * sizeof *t->addr);
        memcpy(t->size + at, ch->size, n * sizeof *t->size);
        memcpy(t->time_us + at, ch->time_us, n * sizeof *t->time_us);
        memcpy(t->stack + at, ch->stack, n * sizeof *t->stack);
        for (size_t i = 0; i < n; i++)
            t->stream[at + i] = j->rmap[ch->stream[i]];
        if (donor)
            chunk_free(donor, sizeof *donor);
        donor = ch;
        w->chunks[c] = NULL;
    }
    if (donor)
        chunk_free(donor, sizeof *donor);
    return ok;
}

static void *copy_thread(void *arg)
{
    copy_job *j = arg;
    j->ok = copy_part(j);
    return NULL;
}

static int take(ms_vm *vm, split_worker *w, int device)
{
    const ms_input *in = ms__vm_input(vm);
    handover *h = calloc(1, sizeof *h);
    uint16_t *rmap = malloc((w->done.streams + 1) * sizeof *rmap);
    int rc = 0;
    const int64_t off = ms__input_offset(in, w->start);
    if (!h || !rmap || !(h->smap = malloc((w->done.strings + 1) * sizeof *h->smap)) ||
        !(h->fmap = malloc((w->done.frames + 1) * sizeof *h->fmap)) ||
        !(h->kmap = malloc((w->done.stacks + 1) * sizeof *h->kmap))) {
        rc = FAIL(MS_ERR_NOMEM, off, "out of memory");
        goto out;
    }
    h->vm = vm;
    h->w = w;
    size_t memo_len;
    ms__vm_memo(vm, &memo_len, NULL, NULL);
    h->base = memo_len;
    h->off = off;
    for (size_t i = 0; i < w->done.frames; i++)
        h->fmap[i] = MAP_UNSET;
    for (size_t i = 0; i < w->done.stacks; i++)
        h->kmap[i] = MAP_UNSET;

    /* Strings in first-met order: the ids the VM would have given them (nothing else
     * adds strings in this part). */
    for (size_t i = 0; i < w->done.strings; i++) {
        uint32_t id = ms__vm_intern_string(vm, ms__strtab_get(&w->strings, (uint32_t)i),
                                           w->strings.lengths[i]);
        if (id == UINT32_MAX) {
            rc = FAIL(MS_ERR_NOMEM, off, "out of memory for strings");
            goto out;
        }
        if (id >= GLOBAL_ID_LIMIT) {
            rc = FAIL(MS_ERR_LIMIT, off, "too many distinct strings");
            goto out;
        }
        h->smap[i] = id;
    }
    ms_error saved, *err = ms__vm_error(vm);
    if (err)
        saved = *err;
    if ((rc = settle_stacks(h)) != 0) {
        if (err)
            *err = saved;
        rc = TAKE_REFUSED;
        goto out;
    }
    for (size_t i = 0; i < w->done.streams; i++)
        if ((rc = ms__vm_intern_stream(vm, w->streams[i], &rmap[i], off)))
            goto out;

    /* Room for the memo entries and the events, then the copy. */
    const uint64_t base = h->base;
    if (!(h->memo_room = ms__vm_memo_room(vm, (size_t)(w->n_defs + w->then_defs)))) {
        rc = FAIL(MS_ERR_NOMEM, off, "out of memory");
        goto out;
    }
    ms_trace_build *t = NULL;
    if ((rc = ms__vm_trace_for(vm, device, &t, off)))
        goto out;
    size_t first = t->view.n, total, room;
    if (!ms__add(first, (size_t)w->n_events, &total) ||
        !ms__add(total, (size_t)w->then_events, &room)) {
        rc = FAIL(MS_ERR_NOMEM, off, "out of memory");
        goto out;
    }
    /* The thread reads only entries without a compile context or user metadata: the
     * reserved context entries stay MS_NO_STRING. */
    if (!ms__trace_reserve(t, room)) {
        rc = FAIL(MS_ERR_NOMEM, off, "out of memory for %zu trace entries", room);
        goto out;
    }
    copy_job job[2];
    job[0] = (copy_job){h, t, first, rmap, {0}, 0, 0, 0, 0, true};
    for (size_t i = 0; i < w->n_dact; i++) {
        uint32_t enc = memo_at(vm, w, base, w->dact[i]);
        job[0].amap[i] = (uint8_t)action_of_id(w->dact[i] < base ? VPAY(enc) : h->smap[VPAY(enc)]);
    }
    /* Two halves, chunk-aligned, one of them on a helper thread: the copy is a fifth of
     * the hand-over's cost otherwise spent by the VM alone. */
    size_t nd = (size_t)((w->n_defs + CHUNK_DEFS - 1) / CHUNK_DEFS);
    size_t ne = (size_t)((w->n_events + CHUNK_EVENTS - 1) / CHUNK_EVENTS);
    job[1] = job[0];
    job[0].def_to = job[1].def_from = (nd + 1) / 2;
    job[1].def_to = nd;
    job[0].ev_to = job[1].ev_from = (ne + 1) / 2;
    job[1].ev_to = ne;
    ms__run_pair(copy_thread, &job[0], &job[1]);
    if (!job[0].ok || !job[1].ok) {
        rc = FAIL(MS_ERR_NOMEM, off, "out of memory for %zu trace entries", total);
        goto out;
    }
    t->view.n = total;
    ms__vm_took(vm, w->n_events, (size_t)w->n_defs, w->done.pos);
    atomic_fetch_add(&ms__split_handovers, 1);
out:
    if (h) {
        free(h->smap);
        free(h->fmap);
        free(h->kmap);
    }
    free(h);
    free(rmap);
    return rc;
}

/* Takes a finished part if the VM is at its start and everything checks; 0 or an error. */
static int take_part(ms_vm *vm, split_worker *w)
{
    int device = 0;
    int rc = 0;
    if (ms__vm_input(vm)->pos == w->start && w->n_events > 0 && can_take(vm, w, &device) &&
        (rc = take(vm, w, device)) == TAKE_REFUSED)
        rc = 0;
    return rc;
}

/* Two parts back to back, `then` (or NULL) taken only if `first` ended exactly where it
 * begins; room for both is made at once. */
static int take_in_order(ms_vm *vm, split_worker *first, split_worker *then)
{
    if (then) {
        first->then_events = then->n_events;
        first->then_defs = then->n_defs;
    }
    int rc = take_part(vm, first);
    if (!rc && then)
        rc = take_part(vm, then);
    return rc;
}

int ms__split_join(ms_vm *vm, ms_split *w)
{
    split_worker *stolen = atomic_load_explicit(&w->steal, memory_order_acquire);
    if (stolen && ms__vm_input(vm)->pos == stolen->start) {
        /* The thread read the back of the VM's part too: both parts, in order. */
        pthread_join(w->thread, NULL);
        int rc = take_in_order(vm, stolen, w);
        ms__split_part_free(w);
        return rc;
    }
    /* At the thread's part: a steal from the VM's can no longer help (one the VM went
     * past before it was published stops at its next batch). */
    atomic_store(&w->steal_off, true);
    /* The two virtual cores often run at different speeds. When the VM gets here while
     * the second thread still has a long way to go, the VM reads the back half of what
     * is left itself (the thread stops at that boundary) instead of waiting. */
    split_worker *help = NULL;
    const uint8_t *prog = atomic_load_explicit(&w->progress, memory_order_acquire);
    if (!atomic_load_explicit(&w->finished, memory_order_acquire) &&
        (size_t)(w->end - prog) >= (w->hold ? 0 : HELP_MIN_BYTES)) {
        const uint8_t *t =
            ms__split_find_boundary(prog, prog + (w->end - prog) / 2, w->end, &w->shape);
        if (t && (help = ms__split_part_new(vm, t, true)) != NULL) {
            atomic_store_explicit(&w->stop_at, t, memory_order_release);
            ms_input *in = ms__vm_input(vm);
            if (in->map)
                ms__input_release_slow(in); /* the VM's own window, before a third */
            atomic_store(&w->go, true);
            ms__split_read_part(help);
        }
    }
    atomic_store(&w->go, true);
    pthread_join(w->thread, NULL);
    int rc = take_in_order(vm, w, help);
    ms__split_part_free(w);
    if (help)
        ms__split_part_free(help);
    return rc;
}
