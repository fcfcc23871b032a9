/* A safe pickle VM: data-only opcodes of protocols 0-5, memo by reference, every length
 * checked before use, and nothing ever executed. See pickle_vm.h for the value model.
 *
 * This file is the VM's hot path, and stays one translation unit over the house's
 * thousand lines on purpose: the opcode loop, the stack and memo, interning frames and
 * stacks, and the fast trace-entry readers call each other millions of times on a large
 * snapshot, and their static and inline helpers inline only within one unit. What is off
 * that path sits beside it (pickle_vm_impl.h lists the files). */
#include "pickle_vm_impl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Container items in all: like the stack's, a bound only against hostile input. */
#define MAX_ITEMS ((uint64_t)1 << 27)

/* ------------------------------------------------------------------ working memory */

/* The interned strings' tables: distinct short strings cost more than their bytes. */
static uint64_t strtab_bytes(const ms_strtab *t)
{
    return t->bytes_cap + t->cap * (sizeof *t->offsets + sizeof *t->lengths) +
           t->nslots * sizeof *t->slots;
}

int ms__vm_charge(ms_vm *vm, size_t old_bytes, size_t new_bytes, int64_t off)
{
    vm->mem += new_bytes - old_bytes;
    uint64_t bound = vm->lim.max_memory;
    if (bound == 0) {
        /* Three times the bytes read so far, plus 64 MiB. A snapshot's VM holds at most
         * about 1.5 times its bytes (its allocator state: lists of memo references, 8
         * bytes a value for 2 or 5 in the file; the trace becomes the model, not
         * objects), 3 in the smallest files; `]a` repeated makes 24 bytes of objects
         * per byte read. Counted from the bytes read, not the file's size, so a file
         * padded at its end buys nothing. */
        uint64_t seen = off > 0 ? (uint64_t)off : 0;
        bound = 3 * seen + ((uint64_t)64 << 20);
    }
    if (vm->mem + strtab_bytes(&vm->snap->strings) <= bound)
        return 0;
    char b[32];
    ms_format_bytes((int64_t)bound, b, sizeof b);
    if (vm->lim.max_memory)
        return FAIL(MS_ERR_LIMIT, off,
                    "the pickle builds more than %s of containers and values (the limit set)",
                    b);
    return FAIL(MS_ERR_LIMIT, off,
                "the pickle builds more than %s of containers and values (3 times the bytes "
                "read, plus 64 MiB; a snapshot needs less than half of that): raise the "
                "limit with memsnap --max-memory SIZE",
                b);
}

/* ------------------------------------------------------------------ objects */

static int new_obj(ms_vm *vm, int type, int role, uint32_t *id, int64_t off)
{
    if (vm->nobjs >= vm->lim.max_objects || vm->nobjs >= MEMO_PAYLOAD_LIMIT - 1)
        return FAIL(MS_ERR_LIMIT, off, "more than %llu containers",
                    (unsigned long long)vm->lim.max_objects);
    int rc = vm_grow(vm, (void **)&vm->objs, &vm->objs_cap, vm->nobjs + 1, sizeof *vm->objs,
                     off);
    if (rc)
        return rc;
    ms_obj *o = &vm->objs[vm->nobjs];
    memset(o, 0, sizeof *o);
    o->type = (uint8_t)type;
    o->role = (uint8_t)role;
    o->offset = off;
    *id = (uint32_t)vm->nobjs++;
    return 0;
}

static int obj_add(ms_vm *vm, ms_obj *o, const ms_val *vals, size_t n, int64_t off)
{
    if (n == 0)
        return 0;
    if (o->role == R_FROZEN)
        return FAIL(MS_ERR_FORMAT, off, "frames list changed after a trace entry used it");
    vm->items_total += n;
    if (vm->items_total > MAX_ITEMS || (uint64_t)o->len + n > UINT32_MAX - 1)
        return FAIL(MS_ERR_LIMIT, off, "more than %llu container items in all",
                    (unsigned long long)MAX_ITEMS);
    size_t cap = o->cap;
    int rc = vm_grow(vm, (void **)&o->items, &cap, (size_t)o->len + n, sizeof *o->items, off);
    if (rc)
        return rc;
    o->cap = (uint32_t)(cap > UINT32_MAX ? UINT32_MAX : cap);
    memcpy(o->items + o->len, vals, n * sizeof *vals);
    o->len += (uint32_t)n;
    return 0;
}

static int box_num(ms_vm *vm, int kind, int64_t i, double f, ms_val *out, int64_t off)
{
    if (vm->nnums >= MEMO_PAYLOAD_LIMIT - 1)
        return FAIL(MS_ERR_LIMIT, off, "too many boxed numbers");
    int rc = vm_grow(vm, (void **)&vm->nums, &vm->nums_cap, vm->nnums + 1, sizeof *vm->nums,
                     off);
    if (rc)
        return rc;
    vm->nums[vm->nnums] = (ms_num){kind, i, f};
    *out = VMAKE(T_NUM, vm->nnums);
    vm->nnums++;
    return 0;
}

static inline int make_int(ms_vm *vm, int64_t i, ms_val *out, int64_t off)
{
    if (MS_LIKELY(i >= VINT_MIN && i <= VINT_MAX)) {
        *out = (uint64_t)i << 3;
        return 0;
    }
    return box_num(vm, N_INT, i, 0, out, off);
}

/* ------------------------------------------------------------------ memo */

static ms_pending *pending_of(ms_vm *vm, ms_val v);

static int memo_encode(ms_vm *vm, ms_val v, uint64_t idx, uint32_t *out, int64_t off)
{
    switch (VTAG(v)) {
    case T_INT: {
        ms_val boxed = 0;
        int rc = box_num(vm, N_INT, vint(v), 0, &boxed, off);
        if (rc)
            return rc;
        v = boxed;
        break;
    }
    case T_PEND:
        if ((VPAY(v) & 3) != PEND_EVENT) {
            /* Remember where it went so the entry can be rewritten once it is complete;
             * until then a reference to it is refused (see memo_get). */
            ms_pending *p = pending_of(vm, v);
            if (!p || p->memo_idx != UINT64_MAX)
                return FAIL(MS_ERR_FORMAT, off, "a frames list or frame is memoized twice");
            p->memo_idx = idx;
            v = VMAKE(T_SPC, SPC_BUILDING);
            break;
        }
        /* fall through */
    case T_EVT:
        /* A trace entry lives in the event arrays, not as an object; a later reference
         * to it can only be opaque. */
        v = VMAKE(T_SPC, SPC_CONSUMED);
        break;
    default:
        break;
    }
    if (VPAY(v) >= MEMO_PAYLOAD_LIMIT)
        return FAIL(MS_ERR_LIMIT, off, "value id too large for the memo");
    *out = (uint32_t)v;
    return 0;
}

static int memo_put(ms_vm *vm, uint64_t idx, ms_val v, int64_t off)
{
    if (MS_LIKELY(idx == vm->memo_len && idx < vm->memo_cap && idx < vm->lim.max_memo &&
                  vm->sparse_len == 0 &&
                  (VTAG(v) == T_STR || VTAG(v) == T_CONV || v == VMAKE(T_SPC, SPC_CONSUMED) ||
                   v == VMAKE(T_SPC, SPC_NONE)) &&
                  VPAY(v) < MEMO_PAYLOAD_LIMIT)) {
        vm->memo[vm->memo_len++] = (uint32_t)v;
        return 0;
    }
    uint32_t enc = 0;
    int rc = memo_encode(vm, v, idx, &enc, off);
    if (rc)
        return rc;
    if (idx < vm->memo_len) {
        if (vm->memo[idx] != (uint32_t)VMAKE(T_SPC, SPC_BUILDING))
            vm->memo_gen++; /* a value changed: remembered frames spans are stale */
        vm->memo[idx] = enc;
        return 0;
    }
    if (idx == vm->memo_len) {
        if (MS_UNLIKELY(vm->sparse_len)) {
            /* This index may have been stored out of order before: the new value wins. */
            for (size_t i = 0; i < vm->sparse_len; i++) {
                if (vm->sparse_keys[i] == idx) {
                    vm->sparse_keys[i] = vm->sparse_keys[vm->sparse_len - 1];
                    vm->sparse_vals[i] = vm->sparse_vals[--vm->sparse_len];
                    break;
                }
            }
        }
        if (vm->memo_len >= vm->lim.max_memo)
            return FAIL(MS_ERR_LIMIT, off, "more than %llu memo entries",
                        (unsigned long long)vm->lim.max_memo);
        if (MS_UNLIKELY(vm->memo_len == vm->memo_cap) &&
            (rc = vm_grow(vm, (void **)&vm->memo, &vm->memo_cap, vm->memo_len + 1,
                          sizeof *vm->memo, off)))
            return rc;
        vm->memo[vm->memo_len++] = enc;
        return 0;
    }
    /* An index past the end: kept aside rather than growing the dense memo to it, so one
     * opcode cannot make us allocate gigabytes. */
    for (size_t i = 0; i < vm->sparse_len; i++) {
        if (vm->sparse_keys[i] == idx) {
            vm->sparse_vals[i] = enc;
            return 0;
        }
    }
    if (vm->sparse_len >= 65536)
        return FAIL(MS_ERR_LIMIT, off, "too many out-of-order memo indexes");
    size_t cap_k = vm->sparse_cap, cap_v = vm->sparse_cap;
    if (!ms__grow((void **)&vm->sparse_keys, &cap_k, vm->sparse_len + 1, sizeof *vm->sparse_keys) ||
        !ms__grow((void **)&vm->sparse_vals, &cap_v, vm->sparse_len + 1, sizeof *vm->sparse_vals))
        return FAIL(MS_ERR_NOMEM, off, "out of memory");
    vm->sparse_cap = cap_k < cap_v ? cap_k : cap_v;
    vm->sparse_keys[vm->sparse_len] = idx;
    vm->sparse_vals[vm->sparse_len] = enc;
    vm->sparse_len++;
    return 0;
}

/* Python's MEMOIZE stores at len(memo), which counts indexes stored out of order. */
static uint64_t memo_next_index(const ms_vm *vm)
{
    uint64_t ahead = 0;
    for (size_t i = 0; i < vm->sparse_len; i++)
        ahead += vm->sparse_keys[i] >= vm->memo_len;
    return vm->memo_len + ahead;
}

static inline int memo_get(ms_vm *vm, uint64_t idx, ms_val *out, int64_t off)
{
    if (MS_LIKELY(idx < vm->memo_len)) {
        *out = vm->memo[idx];
        if (MS_UNLIKELY(*out == VMAKE(T_SPC, SPC_BUILDING)))
            return FAIL(MS_ERR_FORMAT, off, "reference to a frames list or frame before it is complete");
        return 0;
    }
    for (size_t i = 0; i < vm->sparse_len; i++) {
        if (vm->sparse_keys[i] == idx) {
            *out = vm->sparse_vals[i];
            return 0;
        }
    }
    return FAIL(MS_ERR_CORRUPT, off, "memo index %llu was never stored", (unsigned long long)idx);
}

/* ------------------------------------------------------------------ pending pool */

static ms_pending *pending_of(ms_vm *vm, ms_val v)
{
    uint64_t x = VPAY(v) >> 2;
    size_t slot = (size_t)(x & 0xfffff);
    if (slot >= vm->npend)
        return NULL;
    ms_pending *p = &vm->pend[slot];
    return p->used && p->gen == (x >> 20) ? p : NULL;
}

static int new_pending(ms_vm *vm, int kind, ms_val *out, int64_t off)
{
    size_t slot;
    if (vm->npend_free) {
        slot = vm->pend_free[--vm->npend_free];
    } else {
        if (vm->npend >= 0xfffff)
            return FAIL(MS_ERR_LIMIT, off, "too many frames lists under construction");
        if (!ms__grow((void **)&vm->pend, &vm->pend_cap, vm->npend + 1, sizeof *vm->pend))
            return FAIL(MS_ERR_NOMEM, off, "out of memory");
        memset(&vm->pend[vm->npend], 0, sizeof *vm->pend);
        slot = vm->npend++;
    }
    ms_pending *p = &vm->pend[slot];
    p->used = true;
    p->gen = (p->gen + 1) & (((uint64_t)1 << 39) - 1);
    p->n = 0;
    p->memo_idx = UINT64_MAX;
    *out = VMAKE(T_PEND, (((uint64_t)slot | p->gen << 20) << 2) | (uint64_t)kind);
    return 0;
}

/* Marks a pending container converted: its memo entry now names the result. */
static int finish_pending(ms_vm *vm, ms_pending *p, ms_val result, int64_t off)
{
    uint64_t idx = p->memo_idx;
    p->used = false;
    if (!ms__grow((void **)&vm->pend_free, &vm->pend_free_cap, vm->npend_free + 1,
                  sizeof *vm->pend_free))
        return FAIL(MS_ERR_NOMEM, off, "out of memory");
    vm->pend_free[vm->npend_free++] = (uint32_t)(p - vm->pend);
    return idx == UINT64_MAX ? 0 : memo_put(vm, idx, result, off);
}

/* ------------------------------------------------------------------ frames, stacks */

static uint64_t frame_hash(const ms_frame *f)
{
    return mix64((uint64_t)f->name * 0x9e3779b97f4a7c15ull ^ (uint64_t)f->filename << 32 ^
                 (uint64_t)f->line * 0xbf58476d1ce4e5b9ull);
}

static uint64_t frame_hash_of(const void *ctx, size_t id)
{
    const ms_vm *vm = ctx;
    return frame_hash(&vm->snap->frames[id]);
}

static uint64_t stack_hash_of(const void *ctx, size_t id)
{
    const ms_vm *vm = ctx;
    const ms_snapshot *s = vm->snap;
    return ids_hash(s->stack_frames + s->stack_start[id], s->stack_start[id + 1] - s->stack_start[id]);
}

static int intern_frame(ms_vm *vm, const ms_frame *f, uint32_t *out, int64_t off)
{
    ms_snapshot *s = vm->snap;
    if ((s->n_frames + 1) * 2 > vm->frame_nslots &&
        !ms__id_table_rehash(&vm->frame_slots, &vm->frame_nslots, 4096, s->n_frames, frame_hash_of, vm))
        return FAIL(MS_ERR_NOMEM, off, "out of memory");
    size_t mask = vm->frame_nslots - 1, j = (size_t)frame_hash(f) & mask;
    for (; vm->frame_slots[j]; j = (j + 1) & mask) {
        const ms_frame *g = &s->frames[vm->frame_slots[j] - 1];
        if (g->name == f->name && g->filename == f->filename && g->line == f->line) {
            *out = vm->frame_slots[j] - 1;
            return 0;
        }
    }
    if (s->n_frames >= (size_t)1 << 28 ||
        !ms__grow((void **)&s->frames, &s->cap_frames, s->n_frames + 1, sizeof *s->frames))
        return FAIL(MS_ERR_NOMEM, off, "out of memory for frames");
    s->frames[s->n_frames] = *f;
    vm->frame_slots[j] = (uint32_t)s->n_frames + 1;
    *out = (uint32_t)s->n_frames++;
    return 0;
}

static int intern_stack(ms_vm *vm, const uint32_t *ids, size_t n, uint32_t *out, int64_t off)
{
    ms_snapshot *s = vm->snap;
    if (n == 0) {
        /* Empty stacks carry no information; one id for all keeps them comparable. */
        *out = MS_NO_STACK;
        return 0;
    }
    if (s->n_stacks == 0 && !s->stack_start) {
        if (!ms__grow((void **)&s->stack_start, &vm->stack_start_cap, 1, sizeof *s->stack_start))
            return FAIL(MS_ERR_NOMEM, off, "out of memory");
        s->stack_start[0] = 0;
    }
    if ((s->n_stacks + 1) * 2 > vm->stack_nslots &&
        !ms__id_table_rehash(&vm->stack_slots, &vm->stack_nslots, 4096, s->n_stacks, stack_hash_of, vm))
        return FAIL(MS_ERR_NOMEM, off, "out of memory");
    size_t mask = vm->stack_nslots - 1, j = (size_t)ids_hash(ids, n) & mask;
    for (; vm->stack_slots[j]; j = (j + 1) & mask) {
        size_t id = vm->stack_slots[j] - 1;
        size_t len = s->stack_start[id + 1] - s->stack_start[id];
        if (len == n && memcmp(s->stack_frames + s->stack_start[id], ids, n * sizeof *ids) == 0) {
            *out = (uint32_t)id;
            return 0;
        }
    }
    size_t need;
    if (s->n_stacks >= (size_t)1 << 28 || !ms__add(s->n_stack_frames, n, &need) ||
        !ms__grow((void **)&s->stack_frames, &vm->stack_frames_cap, need, sizeof *s->stack_frames) ||
        !ms__grow((void **)&s->stack_start, &vm->stack_start_cap, s->n_stacks + 2,
                  sizeof *s->stack_start))
        return FAIL(MS_ERR_NOMEM, off, "out of memory for stacks");
    memcpy(s->stack_frames + s->n_stack_frames, ids, n * sizeof *ids);
    s->n_stack_frames = need;
    s->stack_start[s->n_stacks + 1] = need;
    vm->stack_slots[j] = (uint32_t)s->n_stacks + 1;
    *out = (uint32_t)s->n_stacks++;
    return 0;
}

int ms__vm_stack_of(ms_vm *vm, ms_val frames, uint32_t *out, int64_t off)
{
    int rc;
    switch (VTAG(frames)) {
    case T_SPC:
        if (VPAY(frames) != SPC_NONE)
            break;
        *out = MS_NO_STACK;
        return 0;
    case T_CONV:
        if (!(VPAY(frames) & 1))
            break;
        *out = (uint32_t)(VPAY(frames) >> 1);
        return 0;
    case T_PEND: {
        ms_pending *p = (VPAY(frames) & 3) == PEND_FRAMES ? pending_of(vm, frames) : NULL;
        if (!p)
            break;
        if ((rc = intern_stack(vm, p->ids, p->n, out, off)))
            return rc;
        return finish_pending(vm, p, *out == MS_NO_STACK ? VMAKE(T_SPC, SPC_NONE)
                                                         : VMAKE(T_CONV, (uint64_t)*out << 1 | 1),
                              off);
    }
    case T_OBJ: {
        ms_obj *o = &vm->objs[VPAY(frames)];
        if (o->type != O_LIST && o->type != O_TUPLE)
            break;
        if (o->role == R_FROZEN) {
            *out = o->aux ? o->aux - 1 : MS_NO_STACK;
            return 0;
        }
        uint32_t small[64] = {0};
        uint32_t *ids = o->len <= 64 ? small : malloc(o->len * sizeof *ids);
        if (!ids)
            return FAIL(MS_ERR_NOMEM, off, "out of memory");
        rc = 0;
        for (uint32_t i = 0; i < o->len && !rc; i++)
            rc = ms__vm_frame_of(vm, o->items[i], &ids[i], off);
        if (!rc)
            rc = intern_stack(vm, ids, o->len, out, off);
        if (ids != small)
            free(ids);
        if (rc)
            return rc;
        o = &vm->objs[VPAY(frames)];
        o->role = R_FROZEN;
        o->aux = *out == MS_NO_STACK ? 0 : *out + 1;
        return 0;
    }
    default:
        break;
    }
    return FAIL(MS_ERR_FORMAT, off, "'frames' is a %s, expected a list", ms__vm_type_name(vm, frames));
}

/* ------------------------------------------------------------------ events
 * A trace entry's fields checked and its row written into the device's event arrays.
 * These stay in this unit on purpose: the fast reader and the trace lists' APPENDS pass
 * them their locals, and only within one unit can the compiler see that no pointer to
 * those is kept. Moved out, each cost an instruction per entry (4M on the benchmark). */

static int trace_for(ms_vm *vm, int device, ms_trace_build **out, int64_t off)
{
    ms_snapshot *s = vm->snap;
    if (device >= s->n_devices) {
        ms_trace_build *t = realloc(s->traces, (size_t)(device + 1) * sizeof *t);
        if (!t)
            return FAIL(MS_ERR_NOMEM, off, "out of memory");
        memset(t + s->n_devices, 0, (size_t)(device + 1 - s->n_devices) * sizeof *t);
        for (int d = s->n_devices; d <= device; d++)
            t[d].view.device = d;
        s->traces = t;
        s->n_devices = device + 1;
    }
    *out = &s->traces[device];
    return 0;
}

static int intern_stream(ms_vm *vm, uint64_t raw, uint16_t *out, int64_t off)
{
    ms_snapshot *s = vm->snap;
    /* Few distinct streams exist (one per CUDA stream used), and the last one found
     * is almost always the next one asked for. */
    static const size_t none = SIZE_MAX;
    size_t found = none;
    for (size_t i = s->n_streams; i-- > 0;) {
        if (s->streams[i] == raw) {
            found = i;
            break;
        }
    }
    if (found == none) {
        if (s->n_streams >= UINT16_MAX)
            return FAIL(MS_ERR_LIMIT, off, "more than %u distinct streams", UINT16_MAX);
        if (!ms__grow((void **)&s->streams, &s->cap_streams, s->n_streams + 1, sizeof *s->streams))
            return FAIL(MS_ERR_NOMEM, off, "out of memory");
        s->streams[s->n_streams] = raw;
        found = s->n_streams++;
    }
    *out = (uint16_t)found;
    return 0;
}

static int event_u64(ms_vm *vm, ms_val v, const char *key, uint64_t *out, int64_t off)
{
    int64_t i;
    if (!ms__vm_int(vm, v, &i))
        return FAIL(MS_ERR_FORMAT, off, "trace entry '%s' is a %s, expected an int of 64 bits", key,
                    ms__vm_type_name(vm, v));
    *out = (uint64_t)i; /* addresses and stream handles are unsigned in C++ */
    return 0;
}

static const ev_fields EV_EMPTY = EV_FIELDS_EMPTY;

static int event_field(ms_vm *vm, ev_fields *f, ms_val k, ms_val v, int64_t off)
{
    int rc;
    if (VTAG(k) != T_STR)
        return 0;
    switch (VPAY(k)) {
    case S_ACTION:
        if (VTAG(v) != T_STR)
            return FAIL(MS_ERR_FORMAT, off, "trace entry 'action' is a %s, expected a str",
                        ms__vm_type_name(vm, v));
        f->action = (VPAY(v) >= S_ACT_ALLOC && VPAY(v) <= S_ACT_SNAPSHOT)
                        ? (int)(VPAY(v) - S_ACT_ALLOC)
                        : MS_ACT_OTHER;
        return 0;
    case S_ADDR:
    case S_DEVICE_FREE:
        if (VTAG(v) == T_SPC && VPAY(v) == SPC_NONE)
            return 0;
        return event_u64(vm, v, VPAY(k) == S_ADDR ? "addr" : "device_free", &f->addr, off);
    case S_SIZE: {
        int64_t n;
        if (!ms__vm_int(vm, v, &n) || n < 0)
            return FAIL(MS_ERR_FORMAT, off, "trace entry 'size' is not a non-negative int");
        if (!ms__size_ok((uint64_t)n))
            return FAIL(MS_ERR_FORMAT, off,
                        "trace entry 'size' is %" PRId64 " bytes, beyond any GPU (limit 2^56 B)", n);
        f->size = (uint64_t)n;
        return 0;
    }
    case S_STREAM:
        return event_u64(vm, v, "stream", &f->stream_raw, off);
    case S_TIME_US:
        if (!ms__vm_int(vm, v, &f->time_us))
            return FAIL(MS_ERR_FORMAT, off, "trace entry 'time_us' is a %s, expected an int of 64 bits",
                        ms__vm_type_name(vm, v));
        if (!ms__time_ok(f->time_us))
            return FAIL(MS_ERR_FORMAT, off,
                        "trace entry 'time_us' is %" PRId64 ", out of range (limit +-2^62 us)",
                        f->time_us);
        return 0;
    case S_FRAMES:
        if ((rc = ms__vm_stack_of(vm, v, &f->stack, off)))
            return rc;
        return 0;
    case S_COMPILE_CONTEXT:
        f->compile_context = ev_context_id(S_COMPILE_CONTEXT, VTAG(v), VPAY(v));
        return 0;
    case S_USER_METADATA:
        f->user_metadata = ev_context_id(S_USER_METADATA, VTAG(v), VPAY(v));
        return 0;
    default:
        return 0; /* newer torch versions add keys: ignored */
    }
}

/* Appends one complete trace entry to the device's event arrays. */
static int append_event(ms_vm *vm, int device, const ev_fields *f, int64_t off)
{
    int rc;
    if (f->action < 0)
        return FAIL(MS_ERR_FORMAT, off, "device_traces[%d] entry has no 'action'", device);
    if (vm->events_total >= vm->lim.max_events)
        return FAIL(MS_ERR_LIMIT, off, "more than %llu trace entries",
                    (unsigned long long)vm->lim.max_events);
    ms_trace_build *t = NULL;
    if ((rc = trace_for(vm, device, &t, off)))
        return rc;
    uint16_t stream = 0;
    if ((rc = intern_stream(vm, f->stream_raw, &stream, off)))
        return rc;
    size_t n = t->view.n;
    if (MS_UNLIKELY(n == t->cap) && !ms__trace_reserve(t, n + 1))
        return FAIL(MS_ERR_NOMEM, off, "out of memory for %zu trace entries", n + 1);
    t->action[n] = (uint8_t)f->action;
    t->addr[n] = f->addr;
    t->size[n] = f->size;
    t->time_us[n] = f->time_us;
    t->stack[n] = f->stack;
    t->stream[n] = stream;
    if (MS_UNLIKELY((f->compile_context & f->user_metadata) != MS_NO_STRING) &&
        !ms__trace_contexts_set(t, n, f->compile_context, f->user_metadata))
        return FAIL(MS_ERR_NOMEM, off, "out of memory for %zu trace entries", n + 1);
    t->view.n = n + 1;
    vm->events_total++;
    return 0;
}

/* Appends one trace entry, given as key/value pairs, to the device's event arrays. */
static int convert_event(ms_vm *vm, int device, const ms_val *pairs, size_t npairs, int64_t off)
{
    ev_fields f = EV_EMPTY;
    for (size_t i = 0; i < npairs; i++) {
        int rc = event_field(vm, &f, pairs[2 * i], pairs[2 * i + 1], off);
        if (rc)
            return rc;
    }
    return append_event(vm, device, &f, off);
}

/* ------------------------------------------------------------------ where am I? */

static inline bool has_role(const ms_vm *vm, ms_val v, int role)
{
    return VTAG(v) == T_OBJ && vm->objs[VPAY(v)].role == role;
}

/* A container about to be created goes either into the container below the innermost
 * MARK (batched APPENDS/SETITEMS) or into the value on top of the stack (a single APPEND/
 * SETITEM). Python's pickler finishes each element before the next, so the two readings
 * only differ in ways the expected element type settles: device-trace lists hold lists
 * and traces hold dicts. A wrong guess on hostile input is caught when the entry is
 * appended (see ms__vm_append_trace) and when the model is checked. */
static int trace_list_device(const ms_vm *vm, int *device)
{
    size_t sp = vm->sp;
    if (vm->nmarks) {
        size_t m = vm->marks[vm->nmarks - 1];
        if (m >= 1 && has_role(vm, vm->stack[m - 1], R_TRACES)) {
            size_t d = vm->objs[VPAY(vm->stack[m - 1])].len + (sp - m);
            *device = d < 65535 ? (int)d : -1;
            return *device >= 0;
        }
    }
    if (sp >= 1 && has_role(vm, vm->stack[sp - 1], R_TRACES)) {
        size_t d = vm->objs[VPAY(vm->stack[sp - 1])].len;
        *device = d < 65535 ? (int)d : -1;
        return *device >= 0;
    }
    return false;
}

static bool is_device_traces_value(const ms_vm *vm)
{
    size_t sp = vm->sp;
    if (sp < 1 || vm->stack[sp - 1] != VMAKE(T_STR, S_DEVICE_TRACES))
        return false;
    if (vm->nmarks) {
        size_t m = vm->marks[vm->nmarks - 1];
        if (m >= 1 && (sp - m) % 2 == 1 && has_role(vm, vm->stack[m - 1], R_ROOT))
            return true;
    }
    return sp >= 2 && has_role(vm, vm->stack[sp - 2], R_ROOT);
}

static inline bool is_pend(ms_val v, int kind)
{
    return VTAG(v) == T_PEND && (int)(VPAY(v) & 3) == kind;
}

/* The 'frames' value of a trace entry being built. */
static bool is_event_frames_value(const ms_vm *vm)
{
    size_t sp = vm->sp;
    if (sp < 2 || vm->stack[sp - 1] != VMAKE(T_STR, S_FRAMES))
        return false;
    if (vm->nmarks) {
        size_t m = vm->marks[vm->nmarks - 1];
        if (m >= 1 && (sp - m) % 2 == 1 && is_pend(vm->stack[m - 1], PEND_EVENT))
            return true;
    }
    return is_pend(vm->stack[sp - 2], PEND_EVENT);
}

/* An element of a trace entry's frames list being built. */
static bool is_pending_frame(const ms_vm *vm)
{
    size_t sp = vm->sp;
    if (sp >= 1 && is_pend(vm->stack[sp - 1], PEND_FRAMES))
        return true;
    if (vm->nmarks) {
        size_t m = vm->marks[vm->nmarks - 1];
        return m >= 1 && is_pend(vm->stack[m - 1], PEND_FRAMES);
    }
    return false;
}

static int event_device(const ms_vm *vm)
{
    size_t sp = vm->sp;
    if (sp >= 1 && has_role(vm, vm->stack[sp - 1], R_TRACE))
        return vm->objs[VPAY(vm->stack[sp - 1])].device;
    if (vm->nmarks) {
        size_t m = vm->marks[vm->nmarks - 1];
        if (m >= 1 && has_role(vm, vm->stack[m - 1], R_TRACE))
            return vm->objs[VPAY(vm->stack[m - 1])].device;
    }
    return -1;
}

/* ------------------------------------------------------------------ containers */

int ms__vm_append_trace(ms_vm *vm, ms_obj *list, const ms_val *items, size_t n, int64_t off)
{
    int device = list->device;
    ms_trace_build *t = NULL;
    int rc = trace_for(vm, device, &t, off);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        ms_val v = items[i];
        if (VTAG(v) == T_EVT) {
            /* The common case: entries converted as read, each landing at its own index. */
            if (v != VMAKE(T_EVT, list->appended << 16 | (uint64_t)device))
                return FAIL(MS_ERR_FORMAT, off,
                            "trace entry appended out of place in device_traces[%d]", device);
        } else if (is_pend(v, PEND_EVENT)) {
            return FAIL(MS_ERR_FORMAT, off, "device_traces[%d] entry has no 'action'", device);
        } else if (ms__vm_obj(vm, v, O_DICT)) {
            /* A dict the VM did not see coming as a trace entry: convert it now. */
            if (t->view.n != list->appended)
                return FAIL(MS_ERR_FORMAT, off, "trace entries of device %d out of order", device);
            ms_obj *d = ms__vm_obj(vm, v, O_DICT);
            if ((rc = convert_event(vm, device, d->items, d->len / 2, off)))
                return rc;
            t = &vm->snap->traces[device]; /* converting may have moved the traces */
        } else {
            return FAIL(MS_ERR_FORMAT, off, "device_traces[%d] holds a %s, expected dicts",
                        device, ms__vm_type_name(vm, v));
        }
        list->appended++;
    }
    return 0;
}

static int append_frames(ms_vm *vm, ms_val target, const ms_val *items, size_t n, int64_t off)
{
    ms_pending *p = pending_of(vm, target);
    if (!p)
        return FAIL(MS_ERR_FORMAT, off, "reference to a frames list that was already used");
    if ((uint64_t)p->n + n > 1u << 20)
        return FAIL(MS_ERR_LIMIT, off, "a stack of more than %u frames", 1u << 20);
    size_t cap = p->cap;
    if (!ms__grow((void **)&p->ids, &cap, (size_t)p->n + n, sizeof *p->ids))
        return FAIL(MS_ERR_NOMEM, off, "out of memory");
    p->cap = (uint32_t)cap;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = 0;
        int rc = ms__vm_frame_of(vm, items[i], &id, off);
        if (rc)
            return rc;
        p->ids[p->n++] = id;
    }
    return 0;
}

static int do_append(ms_vm *vm, ms_val target, const ms_val *items, size_t n, int64_t off)
{
    if (is_pend(target, PEND_FRAMES))
        return append_frames(vm, target, items, n, off);
    ms_obj *o = ms__vm_obj(vm, target, 0);
    if (!o || (o->type != O_LIST && o->type != O_SET))
        return FAIL(MS_ERR_CORRUPT, off, "APPEND to a %s", ms__vm_type_name(vm, target));
    if (o->role == R_TRACE)
        return ms__vm_append_trace(vm, o, items, n, off);
    if (o->role == R_TRACES) {
        for (size_t i = 0; i < n; i++) {
            ms_obj *t = ms__vm_obj(vm, items[i], O_LIST);
            if (t && t->role == R_TRACE && t->device != o->len + i)
                return FAIL(MS_ERR_FORMAT, off, "device trace list placed at the wrong index");
        }
    }
    return obj_add(vm, o, items, n, off);
}

static int do_setitems(ms_vm *vm, ms_val *slot, const ms_val *pairs, size_t npairs, int64_t off)
{
    ms_val target = *slot;
    if (is_pend(target, PEND_EVENT)) {
        uint64_t device = VPAY(target) >> 2;
        int rc = convert_event(vm, (int)device, pairs, npairs, off);
        if (rc)
            return rc;
        ms_trace_build *t = &vm->snap->traces[device];
        *slot = VMAKE(T_EVT, ((uint64_t)(t->view.n - 1) << 16) | device);
        return 0;
    }
    if (is_pend(target, PEND_FRAME)) {
        ms_pending *p = pending_of(vm, target);
        uint32_t id = 0;
        int rc;
        if (!p)
            return FAIL(MS_ERR_FORMAT, off, "frame changed after it was complete");
        if ((rc = ms__vm_convert_frame(vm, pairs, npairs, &id, off)))
            return rc;
        *slot = VMAKE(T_CONV, (uint64_t)id << 1);
        return finish_pending(vm, p, *slot, off);
    }
    if (VTAG(target) == T_EVT)
        return FAIL(MS_ERR_FORMAT, off, "trace entry changed after it was complete");
    ms_obj *o = ms__vm_obj(vm, target, O_DICT);
    if (!o)
        return FAIL(MS_ERR_CORRUPT, off, "SETITEM on a %s", ms__vm_type_name(vm, target));
    return obj_add(vm, o, pairs, 2 * npairs, off);
}

static int build_from(ms_vm *vm, int type, size_t from, int64_t off)
{
    uint32_t id = 0;
    int rc = new_obj(vm, type, R_NONE, &id, off);
    if (rc)
        return rc;
    size_t n = vm->sp - from;
    if (type == O_DICT && n % 2)
        return FAIL(MS_ERR_CORRUPT, off, "DICT with an odd number of items");
    /* n == 0 before anything was pushed: no stack to point into yet. */
    if (n && (rc = obj_add(vm, &vm->objs[id], vm->stack + from, n, off)))
        return rc;
    vm->sp = from;
    return push(vm, VMAKE(T_OBJ, id), off);
}

/* ------------------------------------------------------------------ strings */

static int push_string(ms_vm *vm, const uint8_t *p, size_t n, int tag, int64_t off)
{
    if (tag == T_STR && !ms__utf8_valid(p, n))
        return FAIL(MS_ERR_CORRUPT, off, "string is not valid UTF-8");
    uint32_t id = ms__strtab_intern(&vm->snap->strings, (const char *)p, n);
    if (id == UINT32_MAX)
        return FAIL(MS_ERR_NOMEM, off, "out of memory for strings");
    if (id >= MEMO_PAYLOAD_LIMIT)
        return FAIL(MS_ERR_LIMIT, off, "too many distinct strings");
    int rc;
    /* Every 1024th new string, the tables against the bound too. */
    if (id + 1 == vm->snap->strings.count && (id & 1023) == 1023 &&
        (rc = ms__vm_charge(vm, 0, 0, off)))
        return rc;
    if (tag == T_STR)
        return push(vm, VMAKE(T_STR, id), off);
    ms_val v = 0;
    rc = box_num(vm, N_BYTES, id, 0, &v, off);
    return rc ? rc : push(vm, v, off);
}

/* Reads a length-prefixed string whose length field has `lenbytes` bytes. */
static int read_counted(ms_vm *vm, size_t lenbytes, bool is_signed, int tag, int64_t off)
{
    ms_input *in = &vm->in;
    int rc = ms__input_need(in, 1 + lenbytes, vm->err);
    if (rc)
        return rc;
    const uint8_t *p = in->pos + 1;
    uint64_t len = 0;
    for (size_t i = 0; i < lenbytes; i++)
        len |= (uint64_t)p[i] << (8 * i);
    if (is_signed && lenbytes == 4 && (len & 0x80000000u))
        return FAIL(MS_ERR_CORRUPT, off, "negative string length");
    if (len > vm->lim.max_string)
        return FAIL(MS_ERR_LIMIT, off, "string of %llu bytes exceeds the %llu-byte limit",
                    (unsigned long long)len, (unsigned long long)vm->lim.max_string);
    if ((rc = ms__input_need(in, 1 + lenbytes + (size_t)len, vm->err)))
        return rc;
    p = in->pos + 1 + lenbytes;
    in->pos = p + len;
    return push_string(vm, p, (size_t)len, tag, off);
}

/* ------------------------------------------------------------------ numbers */

static int read_long_bytes(ms_vm *vm, const uint8_t *p, size_t n, int64_t off)
{
    ms_val v = 0;
    int rc;
    if (n == 0)
        return push(vm, 0, off);
    /* Two's complement little endian; anything beyond 64 bits must be sign padding. */
    bool neg = (p[n - 1] & 0x80) != 0;
    uint8_t pad = neg ? 0xff : 0x00;
    bool fits = true;
    for (size_t i = 8; i < n; i++)
        if (p[i] != pad)
            fits = false;
    if (n > 8 && ((p[7] & 0x80) != 0) != neg)
        fits = false;
    if (!fits) {
        /* Non-negative and within 64 bits unsigned: 2^63 .. 2^64 - 1. */
        bool u64 = !neg && n >= 9 && (p[7] & 0x80);
        for (size_t i = 8; u64 && i < n; i++)
            u64 = p[i] == 0;
        uint64_t u = 0;
        for (size_t i = 0; u64 && i < 8; i++)
            u |= (uint64_t)p[i] << (8 * i);
        rc = box_num(vm, u64 ? N_U64 : N_HUGE, (int64_t)u, 0, &v, off);
        return rc ? rc : push(vm, v, off);
    }
    uint64_t u = 0;
    size_t k = n < 8 ? n : 8;
    for (size_t i = 0; i < k; i++)
        u |= (uint64_t)p[i] << (8 * i);
    if (neg && k < 8)
        u |= ~(uint64_t)0 << (8 * k);
    rc = make_int(vm, (int64_t)u, &v, off);
    return rc ? rc : push(vm, v, off);
}

/* ------------------------------------------------------------------ fast path */

/* Nearly every byte of a large snapshot is trace entries, all pickled the same way:
 *   EMPTY_DICT MEMOIZE MARK (key value)* SETITEMS
 * with keys and shared values fetched from the memo, and the frames list either fetched
 * or built inline from memoized frames. This reader takes whole entries of that shape
 * straight into the event arrays, skipping the general stack machine. It only commits
 * an entry once all of it has been read; anything unexpected (or an entry running past
 * the buffered window) leaves the input untouched for the general VM, which then reads
 * the same bytes the slow way, so both paths give the same result and the same errors. */

#define FAST_MEMO 64
#define FAST_FRAMES 1024

typedef struct fast_reader {
    const uint8_t *p, *end;
    ms_val memo[FAST_MEMO]; /* entries this entry adds to the memo, in order */
    bool building[FAST_MEMO];
    size_t nmemo;
    uint32_t last_str; /* UINT32_MAX: none yet */
    uint32_t ids[FAST_FRAMES];
} fast_reader;

enum { FAST_BAIL = 0, FAST_OK = 1 };

static int fast_memoize(fast_reader *r, ms_val v, bool building, size_t *index)
{
    if (r->nmemo == FAST_MEMO)
        return FAST_BAIL;
    r->memo[r->nmemo] = v;
    r->building[r->nmemo] = building;
    if (index)
        *index = r->nmemo;
    r->nmemo++;
    return FAST_OK;
}

/* One scalar, string or memo reference, with the MEMOIZE that may follow it. */
static int fast_value(ms_vm *vm, fast_reader *r, ms_val *out)
{
    const uint8_t *p = r->p;
    if (p + 10 > r->end)
        return FAST_BAIL;
    switch (p[0]) {
    case 'h':
    case 'j': {
        uint64_t idx = p[0] == 'h' ? p[1] : rd_u32(p + 1);
        p += p[0] == 'h' ? 2 : 5;
        if (idx < vm->memo_len) {
            *out = vm->memo[idx];
            if (*out == VMAKE(T_SPC, SPC_BUILDING))
                return FAST_BAIL;
        } else if (idx - vm->memo_len < r->nmemo && !r->building[idx - vm->memo_len]) {
            *out = r->memo[idx - vm->memo_len];
        } else {
            return FAST_BAIL;
        }
        break;
    }
    case 0x8c: {
        size_t n = p[1];
        if (p + 2 + n + 1 > r->end)
            return FAST_BAIL;
        /* Every entry repeats the same short strings ('N/A' for compile_context): one
         * remembered string saves hashing them millions of times. */
        const ms_strtab *st = &vm->snap->strings;
        uint32_t id = r->last_str;
        if (id == UINT32_MAX || st->lengths[id] != n ||
            memcmp(st->bytes + st->offsets[id], p + 2, n) != 0) {
            if (!ms__utf8_valid(p + 2, n))
                return FAST_BAIL;
            id = ms__strtab_intern(&vm->snap->strings, (const char *)p + 2, n);
            if (id == UINT32_MAX || id >= MEMO_PAYLOAD_LIMIT)
                return FAST_BAIL;
            /* A new string now and then: the general VM checks the tables' memory. */
            if (id + 1 == st->count && (id & 1023) == 1023)
                return FAST_BAIL;
            r->last_str = id;
        }
        *out = VMAKE(T_STR, id);
        p += 2 + n;
        break;
    }
    case 'K':
        *out = (uint64_t)p[1] << 3;
        p += 2;
        break;
    case 'M':
        *out = (uint64_t)(p[1] | (unsigned)p[2] << 8) << 3;
        p += 3;
        break;
    case 'J':
        *out = (uint64_t)(int64_t)(int32_t)rd_u32(p + 1) << 3;
        p += 5;
        break;
    case 0x8a: {
        size_t n = p[1];
        if (n == 0 || n > 8)
            return FAST_BAIL;
        uint64_t u = 0;
        for (size_t i = 0; i < n; i++)
            u |= (uint64_t)p[2 + i] << (8 * i);
        if ((p[1 + n] & 0x80) && n < 8)
            u |= ~(uint64_t)0 << (8 * n);
        int64_t i = (int64_t)u;
        if (i < VINT_MIN || i > VINT_MAX)
            return FAST_BAIL;
        *out = (uint64_t)i << 3;
        p += 2 + n;
        break;
    }
    case 'N':
        *out = VMAKE(T_SPC, SPC_NONE);
        p += 1;
        break;
    case 0x88:
    case 0x89:
        *out = VMAKE(T_SPC, p[0] == 0x88 ? SPC_TRUE : SPC_FALSE);
        p += 1;
        break;
    default:
        return FAST_BAIL;
    }
    if (p < r->end && p[0] == 0x94) {
        if (VTAG(*out) == T_INT || VTAG(*out) == T_SPC || fast_memoize(r, *out, false, NULL) != FAST_OK)
            return FAST_BAIL;
        p++;
    }
    r->p = p;
    return FAST_OK;
}

/* A frame dict: EMPTY_DICT MEMOIZE MARK (key value)* SETITEMS, or a memo reference. */
static int fast_frame(ms_vm *vm, fast_reader *r, uint32_t *id, int *err_rc)
{
    if (r->p < r->end && r->p[0] != '}') {
        ms_val v = 0;
        if (fast_value(vm, r, &v) != FAST_OK)
            return FAST_BAIL;
        if (!(VTAG(v) == T_CONV && !(VPAY(v) & 1)) && !ms__vm_obj(vm, v, O_DICT))
            return FAST_BAIL;
        if ((*err_rc = ms__vm_frame_of(vm, v, id, MS_NO_OFFSET)))
            return FAST_BAIL;
        return FAST_OK;
    }
    if (r->p + 3 > r->end || r->p[1] != 0x94 || r->p[2] != '(')
        return FAST_BAIL;
    size_t slot;
    if (fast_memoize(r, 0, true, &slot) != FAST_OK)
        return FAST_BAIL;
    r->p += 3;
    ms_val pairs[16];
    size_t n = 0;
    while (r->p < r->end && r->p[0] != 'u') {
        if (n == 16 || fast_value(vm, r, &pairs[n]) != FAST_OK)
            return FAST_BAIL;
        n++;
    }
    if (r->p >= r->end || n % 2)
        return FAST_BAIL;
    r->p++;
    if ((*err_rc = ms__vm_convert_frame(vm, pairs, n / 2, id, MS_NO_OFFSET)))
        return FAST_BAIL;
    r->memo[slot] = VMAKE(T_CONV, (uint64_t)*id << 1);
    r->building[slot] = false;
    return FAST_OK;
}

/* An inline frames list: EMPTY_LIST [MEMOIZE] then nothing, one frame + APPEND, or
 * MARK frames APPENDS. */
static int fast_frames(ms_vm *vm, fast_reader *r, ms_val *out, int *err_rc)
{
    r->p++;
    size_t slot = SIZE_MAX;
    if (r->p < r->end && r->p[0] == 0x94) {
        if (fast_memoize(r, 0, true, &slot) != FAST_OK)
            return FAST_BAIL;
        r->p++;
    }
    size_t n = 0;
    if (r->p < r->end && r->p[0] == '(') {
        r->p++;
        while (r->p < r->end && r->p[0] != 'e') {
            if (n == FAST_FRAMES || fast_frame(vm, r, &r->ids[n], err_rc) != FAST_OK)
                return FAST_BAIL;
            n++;
        }
        if (r->p >= r->end)
            return FAST_BAIL;
        r->p++;
    } else if (r->p < r->end && (r->p[0] == '}' || r->p[0] == 'h' || r->p[0] == 'j')) {
        if (fast_frame(vm, r, &r->ids[0], err_rc) != FAST_OK || r->p >= r->end || r->p[0] != 'a')
            return FAST_BAIL;
        r->p++;
        n = 1;
    }
    uint32_t stack;
    if ((*err_rc = intern_stack(vm, r->ids, n, &stack, MS_NO_OFFSET)))
        return FAST_BAIL;
    *out = stack == MS_NO_STACK ? VMAKE(T_SPC, SPC_NONE) : VMAKE(T_CONV, (uint64_t)stack << 1 | 1);
    if (slot != SIZE_MAX) {
        r->memo[slot] = *out;
        r->building[slot] = false;
    }
    return FAST_OK;
}

/* Frames lists made only of memo references to frames are, byte for byte, the same list
 * whenever the same stack recurs (a 4M-event trace has a few dozen stacks and a million
 * such lists). The bytes between MARK and APPENDS are remembered with the stack they
 * gave, so a repeat costs a hash and a compare. Memo entries never change once written,
 * except through an explicit PUT over an old index, which bumps memo_gen and so retires
 * every remembered span. */
#define SPAN_SLOTS 4096
#define SPAN_MAX 2048

typedef struct span_entry {
    uint64_t hash;
    uint64_t gen;
    uint32_t len, cap;
    uint32_t stack;
    uint32_t next; /* slot + 1 of the span that followed this one last time; 0: none */
    uint8_t *bytes; /* len bytes; NULL for an empty slot */
} span_entry;

/* A training loop allocates in the same order every step, so the span that follows a
 * span is, nearly always, the one that followed it last time. Trying that one first
 * costs one compare of the bytes, where finding a span by its hash costs a scan of the
 * run, a hash and the same compare. The compare alone decides: a wrong guess only
 * costs the compare. */
static span_entry *span_guess(ms_vm *vm, const fast_reader *r)
{
    if (!vm->span_prev)
        return NULL;
    uint32_t next = vm->spans[vm->span_prev - 1].next;
    if (!next)
        return NULL;
    span_entry *g = &vm->spans[next - 1];
    if (!g->bytes || g->gen != vm->memo_gen || r->end - r->p <= 3 + (ptrdiff_t)g->len + 8 ||
        r->p[1] != 0x94 || r->p[2] != '(' || r->p[3 + g->len] != 'e' ||
        memcmp(g->bytes, r->p + 3, g->len) != 0)
        return NULL;
    return g;
}

static void span_follow(ms_vm *vm, const span_entry *e)
{
    uint32_t slot = e ? (uint32_t)(e - vm->spans) + 1 : 0;
    if (vm->span_prev)
        vm->spans[vm->span_prev - 1].next = slot;
    vm->span_prev = slot;
}

/* True when every memo reference in the run at p (n bytes) names a committed entry: only
 * then may the run be remembered (a reference to the entry being read is not one). */
static bool span_committed(const ms_vm *vm, const uint8_t *p, size_t n)
{
    for (const uint8_t *q = p, *e = p + n; q < e;) {
        uint64_t idx = q[0] == 'h' ? q[1] : rd_u32(q + 1);
        if (idx >= vm->memo_len)
            return false;
        q += q[0] == 'h' ? 2 : 5;
    }
    return true;
}

/* An inline frames list (r->p at its EMPTY_LIST), through the span cache when it is
 * made only of memo references. */
static int fast_frames_cached(ms_vm *vm, fast_reader *r, ms_val *out, int *err_rc)
{
    size_t span = 0;
    uint64_t h = 0;
    span_entry *e = span_guess(vm, r);
    if (e)
        span = e->len;
    /* "]" MEMOIZE "(" frames "e": the common inline list. Only runs that fit the cache
     * are wanted, so with that many bytes ahead the scan needs no bounds checks. */
    else if (r->end - r->p > 3 + SPAN_MAX + 8 && r->p[1] == 0x94 && r->p[2] == '(' &&
             (span = ref_run_length(r->p + 3, SPAN_MAX)) >= 2) {
        h = bytes_hash(r->p + 3, span);
        e = &vm->spans[h & (SPAN_SLOTS - 1)];
        if (!(e->len == span && e->hash == h && e->gen == vm->memo_gen &&
              memcmp(e->bytes, r->p + 3, span) == 0))
            goto miss;
    }
    if (e) {
        *out = e->stack == MS_NO_STACK ? VMAKE(T_SPC, SPC_NONE)
                                       : VMAKE(T_CONV, (uint64_t)e->stack << 1 | 1);
        if (fast_memoize(r, *out, false, NULL) != FAST_OK)
            return FAST_BAIL;
        r->p += 3 + span + 1;
        span_follow(vm, e);
        return FAST_OK;
    }
miss:
    if (fast_frames(vm, r, out, err_rc) != FAST_OK)
        return FAST_BAIL;
    const uint8_t *bytes = r->p - span - 1;
    if (!e || !span_committed(vm, bytes, span)) {
        span_follow(vm, NULL);
    } else {
        if (e->cap < span) {
            uint8_t *b = realloc(e->bytes, span);
            if (!b) {
                span_follow(vm, NULL);
                return FAST_OK; /* not remembered: only slower */
            }
            e->bytes = b;
            e->cap = (uint32_t)span;
        }
        e->hash = h;
        e->gen = vm->memo_gen;
        e->len = (uint32_t)span;
        memcpy(e->bytes, bytes, span);
        e->stack = VTAG(*out) == T_CONV ? (uint32_t)(VPAY(*out) >> 1) : MS_NO_STACK;
        e->next = 0;
        span_follow(vm, e);
    }
    return FAST_OK;
}

/* A memo reference at p that the general reader would accept as a value; its entry. */
static inline size_t fast_ref(const ms_vm *vm, const uint8_t *p, uint32_t *enc)
{
    uint64_t idx;
    size_t used;
    if (p[0] == 'h') {
        idx = p[1];
        used = 2;
    } else if (p[0] == 'j') {
        idx = rd_u32(p + 1);
        used = 5;
    } else {
        return 0;
    }
    if (idx >= vm->memo_len || p[used] == 0x94)
        return 0;
    *enc = vm->memo[idx];
    return *enc == (uint32_t)VMAKE(T_SPC, SPC_BUILDING) ? 0 : used;
}

/* A trace entry read against the learnt shape (pickle_vm.h): compare a key's bytes, read
 * its value by what the key is. An entry that differs in any way is read by the general
 * fast reader instead, which accepts exactly the same entries, so both give the same
 * result. */
static int fast_shaped(ms_vm *vm, fast_reader *r, const entry_shape *sh, ev_fields *f,
                       int *err_rc)
{
    const uint8_t *p = r->p;
    for (size_t i = 0; i < sh->n; i++) {
        /* 16 bytes cover a key (5) and any value read here without a length (10). */
        if (r->end - p < 16 || (load_le64(p) & sh->mask[i]) != sh->want[i])
            return FAST_BAIL;
        p += sh->len[i];
        uint32_t enc;
        size_t used;
        switch (sh->key[i]) {
        case S_ACTION:
            if (!(used = fast_ref(vm, p, &enc)) || VTAG(enc) != T_STR)
                return FAST_BAIL;
            f->action = (VPAY(enc) >= S_ACT_ALLOC && VPAY(enc) <= S_ACT_SNAPSHOT)
                            ? (int)(VPAY(enc) - S_ACT_ALLOC)
                            : MS_ACT_OTHER;
            p += used;
            break;
        case S_ADDR:
        case S_DEVICE_FREE:
        case S_SIZE:
        case S_TIME_US:
        case S_STREAM:
            if (!(used = ev_int_field(f, sh->key[i], p)))
                return FAST_BAIL;
            p += used;
            break;
        case S_FRAMES:
            if ((used = fast_ref(vm, p, &enc)) != 0) {
                if (VTAG(enc) == T_CONV && (VPAY(enc) & 1))
                    f->stack = (uint32_t)(VPAY(enc) >> 1);
                else if (enc == (uint32_t)VMAKE(T_SPC, SPC_NONE))
                    f->stack = MS_NO_STACK;
                else
                    return FAST_BAIL;
                p += used;
            } else if (p[0] == ']') {
                /* An inline list: the general reader's frames code, with its cache. */
                r->p = p;
                ms_val v = 0;
                if (fast_frames_cached(vm, r, &v, err_rc) != FAST_OK)
                    return FAST_BAIL;
                p = r->p;
                f->stack = VTAG(v) == T_CONV ? (uint32_t)(VPAY(v) >> 1) : MS_NO_STACK;
            } else {
                return FAST_BAIL;
            }
            break;
        default: {
            /* A key memsnap does not read, or compile_context / user_metadata: the value
             * still has to be a valid one. The two kinds every entry has (a shared string
             * from the memo, 'N/A' written anew and memoized) are checked here; anything
             * else by fast_value. */
            ms_val v = 0;
            if ((used = fast_ref(vm, p, &enc)) != 0 && VTAG(enc) != T_OBJ) {
                p += used;
                v = enc;
            } else if (p[0] == 0x8c && r->last_str != UINT32_MAX && r->end - p > (ptrdiff_t)(p[1] + 3) &&
                       vm->snap->strings.lengths[r->last_str] == p[1] &&
                       memcmp(ms__strtab_get(&vm->snap->strings, r->last_str), p + 2, p[1]) == 0) {
                p += 2 + p[1];
                v = VMAKE(T_STR, r->last_str);
                if (p[0] == 0x94) {
                    if (fast_memoize(r, v, false, NULL) != FAST_OK)
                        return FAST_BAIL;
                    p++;
                }
            } else {
                r->p = p;
                if (fast_value(vm, r, &v) != FAST_OK || VTAG(v) == T_OBJ)
                    return FAST_BAIL;
                p = r->p;
            }
            if (sh->key[i] == S_COMPILE_CONTEXT)
                f->compile_context = ev_context_id(S_COMPILE_CONTEXT, VTAG(v), VPAY(v));
            else if (sh->key[i] == S_USER_METADATA)
                f->user_metadata = ev_context_id(S_USER_METADATA, VTAG(v), VPAY(v));
            break;
        }
        }
    }
    if (p >= r->end || p[0] != 'u' || !ev_fields_ok(f))
        return FAST_BAIL;
    r->p = p;
    return FAST_OK;
}

/* Reads trace entries for `device` while the input holds complete ones; returns how
 * many were taken (0: let the general VM read this one), or a negative error.
 * Longer than the house limit on purpose: it is the loop that reads millions of entries,
 * and learning the shape, committing an entry and starting the second thread all share
 * its one reader state and the device's arrays held in locals; split up, they would pass
 * that state around by pointer on every entry. */
static int fast_events(ms_vm *vm, int device, size_t *taken)
{
    ms_input *in = &vm->in;
    *taken = 0;
    if ((size_t)(in->end - in->pos) < 65536 && !in->source_eof) {
        ms_error scratch, *saved = vm->err;
        vm->err = &scratch;
        (void)ms__input_need(in, 65536, &scratch); /* near the end, fewer bytes is fine */
        vm->err = saved;
    }
    if (vm->sparse_len)
        return 0; /* out-of-order memo indexes: leave the memo arithmetic to the VM */
    ms__input_release(in);
    /* Room for a whole batch of entries (Python writes 1000 per APPENDS) up front, so
     * the loop below stores without checking. */
    if (vm->stack_cap - vm->sp < 1024) {
        if (vm->sp + 1024 > MAX_STACK)
            return 0;
        int grc = vm_grow(vm, (void **)&vm->stack, &vm->stack_cap, vm->sp + 1024,
                          sizeof *vm->stack, ms__input_offset(in, in->pos));
        if (grc)
            return grc;
    }
    if (!vm->spans && !(vm->spans = calloc(SPAN_SLOTS, sizeof *vm->spans)))
        return FAIL(MS_ERR_NOMEM, ms__input_offset(in, in->pos), "out of memory");
    ms_trace_build *t = NULL;
    int rc = trace_for(vm, device, &t, ms__input_offset(in, in->pos));
    if (rc)
        return rc;
    uint64_t last_stream_raw = 0;
    uint16_t last_stream = 0;
    bool have_stream = false;
    fast_reader r;
    r.last_str = UINT32_MAX;
    for (size_t k = 0; k < 1024; k++) {
        r.p = in->pos;
        r.end = in->end;
        r.nmemo = 0;
        int err_rc = 0;
        if (r.p + 3 > r.end || r.p[0] != '}' || r.p[1] != 0x94 || r.p[2] != '(')
            return 0;
        r.p += 3;
        r.memo[0] = VMAKE(T_SPC, SPC_CONSUMED);
        r.building[0] = false;
        r.nmemo = 1;
        ev_fields f = EV_EMPTY;
        bool ok = true;
        const uint8_t *body = r.p;
        if (vm->shape && vm->shape->n && fast_shaped(vm, &r, vm->shape, &f, &err_rc) == FAST_OK)
            goto commit;
        if (err_rc == MS_ERR_NOMEM)
            return MS_ERR_NOMEM;
        /* Not of the known shape: read it key by key, and learn its shape. */
        r.p = body;
        r.nmemo = 1;
        f = EV_EMPTY;
        entry_shape seen;
        seen.n = 0;
        bool learnable = true;
        while (ok && r.p < r.end && r.p[0] != 'u') {
            ms_val key = 0, v = 0;
            /* Keys are memo references to strings read long ago: take those directly. */
            if (r.end - r.p >= 16 && (r.p[0] == 'h' || r.p[0] == 'j')) {
                uint64_t idx = r.p[0] == 'h' ? r.p[1] : rd_u32(r.p + 1);
                if (idx < vm->memo_len && r.p[r.p[0] == 'h' ? 2 : 5] != 0x94) {
                    key = vm->memo[idx];
                    size_t klen = r.p[0] == 'h' ? 2 : 5;
                    if (seen.n < SHAPE_KEYS && VTAG(key) == T_STR) {
                        memcpy(seen.bytes[seen.n], r.p, klen);
                        seen.len[seen.n] = (uint8_t)klen;
                        seen.key[seen.n] = (uint32_t)VPAY(key);
                        seen.n++;
                    } else {
                        learnable = false;
                    }
                    r.p += klen;
                }
            }
            if (!key)
                learnable = false;
            if (!key && fast_value(vm, &r, &key) != FAST_OK) {
                ok = false;
                break;
            }
            if (VTAG(key) != T_STR || r.end - r.p < 11) { /* an integer and the byte after it */
                ok = false;
                break;
            }
            size_t used;
            switch (VPAY(key)) {
            case S_ADDR:
            case S_DEVICE_FREE:
            case S_SIZE:
            case S_TIME_US:
            case S_STREAM:
                /* Integers straight into their field; anything unusual (None, a memo
                 * reference, a negative size) takes the general route below. */
                if ((used = ev_int_field(&f, VPAY(key), r.p)) != 0) {
                    r.p += used;
                    continue;
                }
                break;
            case S_FRAMES:
                if (r.p[0] == ']') {
                    /* A list it cannot take leaves r.p inside it: the entry goes to the
                     * general VM (continue, not break: break leaves only the switch). */
                    if (fast_frames_cached(vm, &r, &v, &err_rc) != FAST_OK) {
                        ok = false;
                        continue;
                    }
                    if ((rc = event_field(vm, &f, key, v, MS_NO_OFFSET)) != 0)
                        ok = false;
                    continue;
                }
                break;
            default:
                break;
            }
            if (fast_value(vm, &r, &v) != FAST_OK || VTAG(v) == T_OBJ) {
                ok = false; /* objects may still change; the general path handles them */
                break;
            }
            if (event_field(vm, &f, key, v, MS_NO_OFFSET) != 0)
                ok = false;
        }
        if (err_rc == MS_ERR_NOMEM)
            return MS_ERR_NOMEM;
        if (!ok || r.p >= r.end || f.action < 0 || !ev_fields_ok(&f))
            return 0;
        if (learnable && (!vm->shape || !vm->shape->n)) {
            if (!vm->shape && !(vm->shape = malloc(sizeof *vm->shape)))
                return FAIL(MS_ERR_NOMEM, ms__input_offset(in, in->pos), "out of memory");
            *vm->shape = seen;
            for (size_t q = 0; q < seen.n; q++) {
                uint8_t w[8] = {0};
                memcpy(w, seen.bytes[q], seen.len[q]);
                vm->shape->want[q] = load_le64(w);
                vm->shape->mask[q] = ((uint64_t)1 << (8 * seen.len[q])) - 1; /* len is 2 or 5 */
            }
            /* With the shape known, a second thread can read the back of a long trace. */
            if (!vm->split)
                vm->split = ms__split_start(vm, &vm->split_at);
        }
    commit:
        r.p++; /* SETITEMS */
        /* Commit: the memo entries in order, the event, the value left on the stack. */
        int64_t off = ms__input_offset(in, in->pos);
        if (MS_LIKELY(vm->memo_len + r.nmemo <= vm->memo_cap &&
                      vm->memo_len + r.nmemo <= vm->lim.max_memo)) {
            /* Everything the reader memoizes is stored as is (strings, converted stacks
             * and frames, consumed entries; ids are bounded when made). */
            for (size_t i = 0; i < r.nmemo; i++)
                vm->memo[vm->memo_len++] = (uint32_t)r.memo[i];
        } else {
            for (size_t i = 0; i < r.nmemo; i++)
                if ((rc = memo_put(vm, vm->memo_len, r.memo[i], off)))
                    return rc;
        }
        if (!have_stream || f.stream_raw != last_stream_raw) {
            if ((rc = intern_stream(vm, f.stream_raw, &last_stream, off)))
                return rc;
            last_stream_raw = f.stream_raw;
            have_stream = true;
        }
        size_t n = t->view.n;
        if (MS_UNLIKELY(n == t->cap || vm->events_total >= vm->lim.max_events)) {
            if ((rc = append_event(vm, device, &f, off)))
                return rc;
        } else {
            t->action[n] = (uint8_t)f.action;
            t->addr[n] = f.addr;
            t->size[n] = f.size;
            t->time_us[n] = f.time_us;
            t->stack[n] = f.stack;
            t->stream[n] = last_stream;
            if (MS_UNLIKELY((f.compile_context & f.user_metadata) != MS_NO_STRING) &&
                !ms__trace_contexts_set(t, n, f.compile_context, f.user_metadata))
                return FAIL(MS_ERR_NOMEM, off, "out of memory");
            t->view.n = n + 1;
            vm->events_total++;
        }
        vm->stack[vm->sp++] = VMAKE(T_EVT, ((uint64_t)(t->view.n - 1) << 16) | (uint64_t)device);
        in->pos = r.p;
        ++*taken;
    }
    return 0;
}

/* ------------------------------------------------------------------ the loop */

/* ms__vm_run below is split by opcode family: the stack, memo, integer and string
 * opcodes stay in its loop, the families below are one function each (the hot ones,
 * containers and building, forced inline so the loop runs as before), and the text
 * and refused opcodes are in files of their own. */
#if defined(__GNUC__)
#define VM_HOT static inline __attribute__((always_inline))
#else
#define VM_HOT static inline
#endif

/* EMPTY_DICT, EMPTY_LIST: where the snapshot's shape is recognised (root, trace lists,
 * trace entries for the fast reader, frames lists and frames). */
VM_HOT int op_new_container(ms_vm *vm, unsigned op, int64_t off)
{
    ms_input *in = &vm->in;
    int rc;
    (void)in;
    (void)rc;
    switch (op) {
    case '}': /* EMPTY_DICT */
    case ']': /* EMPTY_LIST */ {
        in->pos++;
        int device;
        uint32_t id = 0;
        if (op == '}') {
            if (vm->sp == 0 && vm->nmarks == 0 && vm->root_obj == 0) {
                CHECK(new_obj(vm, O_DICT, R_ROOT, &id, off));
                vm->root_obj = id + 1;
            } else if ((device = event_device(vm)) >= 0) {
                size_t taken = 0;
                in->pos--; /* the fast reader starts at this EMPTY_DICT */
                CHECK(fast_events(vm, device, &taken));
                if (taken)
                    break;
                in->pos++;
                CHECK(push(vm, VMAKE(T_PEND, (uint64_t)device << 2 | PEND_EVENT), off));
                break;
            } else if (is_pending_frame(vm)) {
                ms_val v = 0;
                CHECK(new_pending(vm, PEND_FRAME, &v, off));
                CHECK(push(vm, v, off));
                break;
            } else {
                CHECK(new_obj(vm, O_DICT, R_NONE, &id, off));
            }
        } else if (is_event_frames_value(vm)) {
            ms_val v = 0;
            CHECK(new_pending(vm, PEND_FRAMES, &v, off));
            CHECK(push(vm, v, off));
            break;
        } else if (is_device_traces_value(vm)) {
            CHECK(new_obj(vm, O_LIST, R_TRACES, &id, off));
        } else if (trace_list_device(vm, &device)) {
            CHECK(new_obj(vm, O_LIST, R_TRACE, &id, off));
            vm->objs[id].device = (uint16_t)device;
            ms_trace_build *t = NULL;
            CHECK(trace_for(vm, device, &t, off));
        } else {
            CHECK(new_obj(vm, O_LIST, R_NONE, &id, off));
        }
        CHECK(push(vm, VMAKE(T_OBJ, id), off));
        break;
    }
    }
    return 0;
}

/* APPEND(S), ADDITEMS, SETITEM(S), TUPLE/LIST/DICT/FROZENSET, TUPLE1-3: filling and
 * building containers. */
VM_HOT int op_build(ms_vm *vm, unsigned op, int64_t off)
{
    ms_input *in = &vm->in;
    int rc;
    (void)in;
    (void)rc;
    switch (op) {
    case 'a': { /* APPEND */
        in->pos++;
        ms_val v = 0;
        CHECK(pop(vm, &v, off, "APPEND"));
        if (vm->sp <= frame_floor(vm))
            return FAIL(MS_ERR_CORRUPT, off, "APPEND without a list");
        CHECK(do_append(vm, vm->stack[vm->sp - 1], &v, 1, off));
        break;
    }
    case 'e': /* APPENDS */
    case 0x90: { /* ADDITEMS */
        in->pos++;
        size_t m = 0;
        CHECK(pop_mark(vm, &m, off, op == 'e' ? "APPENDS" : "ADDITEMS"));
        if (m == 0 || m <= frame_floor(vm))
            return FAIL(MS_ERR_CORRUPT, off, "APPENDS without a list");
        CHECK(do_append(vm, vm->stack[m - 1], vm->stack + m, vm->sp - m, off));
        vm->sp = m;
        break;
    }
    case 's': { /* SETITEM */
        in->pos++;
        if (vm->sp < frame_floor(vm) + 3)
            return FAIL(MS_ERR_CORRUPT, off, "SETITEM needs a dict, a key and a value");
        CHECK(do_setitems(vm, &vm->stack[vm->sp - 3], vm->stack + vm->sp - 2, 1, off));
        vm->sp -= 2;
        break;
    }
    case 'u': { /* SETITEMS */
        in->pos++;
        size_t m = 0;
        CHECK(pop_mark(vm, &m, off, "SETITEMS"));
        if (m == 0 || m <= frame_floor(vm))
            return FAIL(MS_ERR_CORRUPT, off, "SETITEMS without a dict");
        if ((vm->sp - m) % 2)
            return FAIL(MS_ERR_CORRUPT, off, "SETITEMS with an odd number of items");
        CHECK(do_setitems(vm, &vm->stack[m - 1], vm->stack + m, (vm->sp - m) / 2, off));
        vm->sp = m;
        break;
    }
    case 't': /* TUPLE */
    case 'l': /* LIST */
    case 'd': /* DICT */
    case 0x91: { /* FROZENSET */
        in->pos++;
        size_t m = 0;
        CHECK(pop_mark(vm, &m, off, "TUPLE/LIST/DICT"));
        int type = op == 't' ? O_TUPLE : op == 'l' ? O_LIST : op == 'd' ? O_DICT : O_FROZENSET;
        CHECK(build_from(vm, type, m, off));
        break;
    }
    case 0x85: /* TUPLE1 */
    case 0x86: /* TUPLE2 */
    case 0x87: { /* TUPLE3 */
        in->pos++;
        size_t n = op - 0x84u;
        if (vm->sp < frame_floor(vm) + n)
            return FAIL(MS_ERR_CORRUPT, off, "TUPLE%zu needs %zu values", n, n);
        CHECK(build_from(vm, O_TUPLE, vm->sp - n, off));
        break;
    }
    }
    return 0;
}

/* LONG1, LONG4, BINFLOAT: numbers that are no small integers. */
static int op_number(ms_vm *vm, unsigned op, int64_t off)
{
    ms_input *in = &vm->in;
    int rc;
    (void)in;
    (void)rc;
    switch (op) {
    case 0x8a: { /* LONG1 */
        NEED(2);
        size_t n = in->pos[1];
        NEED(2 + n);
        const uint8_t *p = in->pos + 2;
        in->pos += 2 + n;
        CHECK(read_long_bytes(vm, p, n, off));
        break;
    }
    case 0x8b: { /* LONG4 */
        NEED(5);
        uint32_t n = rd_u32(in->pos + 1);
        if (n & 0x80000000u)
            return FAIL(MS_ERR_CORRUPT, off, "LONG4 with a negative length");
        if (n > 4096)
            return FAIL(MS_ERR_LIMIT, off, "integer of %u bytes exceeds the limit", n);
        NEED(5 + (size_t)n);
        const uint8_t *p = in->pos + 5;
        in->pos += 5 + n;
        CHECK(read_long_bytes(vm, p, n, off));
        break;
    }
    case 'G': { /* BINFLOAT, big endian */
        NEED(9);
        uint64_t bits = 0;
        for (int i = 1; i <= 8; i++)
            bits = bits << 8 | in->pos[i];
        double d;
        memcpy(&d, &bits, sizeof d);
        in->pos += 9;
        ms_val v = 0;
        CHECK(box_num(vm, N_FLOAT, 0, d, &v, off));
        CHECK(push(vm, v, off));
        break;
    }
    }
    return 0;
}

/* MEMOIZE, BINPUT, LONG_BINPUT, BINGET, LONG_BINGET: the binary memo opcodes. */
VM_HOT int op_memo(ms_vm *vm, unsigned op, int64_t off)
{
    ms_input *in = &vm->in;
    int rc;
    switch (op) {
    case 0x94: /* MEMOIZE */
        in->pos++;
        if (vm->sp <= frame_floor(vm))
            return FAIL(MS_ERR_CORRUPT, off, "MEMOIZE on an empty stack");
        CHECK(memo_put(vm, memo_next_index(vm), vm->stack[vm->sp - 1], off));
        break;
    case 'q': /* BINPUT */
    case 'r': { /* LONG_BINPUT */
        size_t w = op == 'q' ? 1 : 4;
        NEED(1 + w);
        uint64_t idx = op == 'q' ? in->pos[1] : rd_u32(in->pos + 1);
        in->pos += 1 + w;
        if (vm->sp <= frame_floor(vm))
            return FAIL(MS_ERR_CORRUPT, off, "PUT on an empty stack");
        CHECK(memo_put(vm, idx, vm->stack[vm->sp - 1], off));
        break;
    }
    case 'h': /* BINGET */
    case 'j': { /* LONG_BINGET */
        size_t w = op == 'h' ? 1 : 4;
        NEED(1 + w);
        uint64_t idx = op == 'h' ? in->pos[1] : rd_u32(in->pos + 1);
        in->pos += 1 + w;
        ms_val v = 0;
        CHECK(memo_get(vm, idx, &v, off));
        CHECK(push(vm, v, off));
        break;
    }
    }
    return 0;
}

int ms__vm_run(ms_vm *vm)
{
    ms_input *in = &vm->in;
    int rc;
    for (;;) {
        /* At the second thread's part, or (at a batch's MARK) at a part it took from
         * the back of the VM's. */
        if (MS_UNLIKELY(in->pos == vm->split_at) ||
            (vm->split && in->pos < in->end && in->pos[0] == '(' &&
             ms__split_stop_here(vm->split, in->pos))) {
            ms_split *part = vm->split;
            vm->split = NULL;
            vm->split_at = NULL;
            CHECK(ms__split_join(vm, part)); /* take the entries the second thread read */
        }
        ms__input_release(in);
        NEED(1);
        const int64_t off = ms__input_offset(in, in->pos);
        const unsigned op = in->pos[0];
        switch (op) {
        case 0x80: /* PROTO */
            NEED(2);
            if (in->pos[1] > 5)
                return FAIL(MS_ERR_CORRUPT, off, "unsupported pickle protocol %u", in->pos[1]);
            if (vm->snap->protocol < 0)
                vm->snap->protocol = in->pos[1];
            in->pos += 2;
            break;
        case 0x95: /* FRAME: a length hint for buffered readers; we stream anyway */
            NEED(9);
            in->pos += 9;
            break;
        case '.': { /* STOP */
            in->pos++;
            CHECK(pop(vm, &vm->result, off, "STOP"));
            return 0;
        }
        case '}': /* EMPTY_DICT */
        case ']': /* EMPTY_LIST */
            CHECK(op_new_container(vm, op, off));
            break;
        case ')': /* EMPTY_TUPLE */
        case 0x8f: { /* EMPTY_SET */
            in->pos++;
            uint32_t id = 0;
            CHECK(new_obj(vm, op == ')' ? O_TUPLE : O_SET, R_NONE, &id, off));
            CHECK(push(vm, VMAKE(T_OBJ, id), off));
            break;
        }
        case '(': /* MARK */
            in->pos++;
            if (vm->nmarks >= vm->lim.max_depth)
                return FAIL(MS_ERR_LIMIT, off, "nesting deeper than %u", vm->lim.max_depth);
            if (!ms__grow((void **)&vm->marks, &vm->marks_cap, vm->nmarks + 1, sizeof *vm->marks))
                return FAIL(MS_ERR_NOMEM, off, "out of memory");
            vm->marks[vm->nmarks++] = vm->sp;
            break;
        case '0': { /* POP */
            in->pos++;
            if (vm->sp > frame_floor(vm)) {
                vm->sp--;
            } else {
                size_t m = 0;
                CHECK(pop_mark(vm, &m, off, "POP"));
            }
            break;
        }
        case '1': { /* POP_MARK */
            in->pos++;
            size_t m = 0;
            CHECK(pop_mark(vm, &m, off, "POP_MARK"));
            vm->sp = m;
            break;
        }
        case '2': { /* DUP */
            in->pos++;
            if (vm->sp <= frame_floor(vm))
                return FAIL(MS_ERR_CORRUPT, off, "DUP on an empty stack");
            CHECK(push(vm, vm->stack[vm->sp - 1], off));
            break;
        }
        case 'N':
            in->pos++;
            CHECK(push(vm, VMAKE(T_SPC, SPC_NONE), off));
            break;
        case 0x88:
        case 0x89:
            in->pos++;
            CHECK(push(vm, VMAKE(T_SPC, op == 0x88 ? SPC_TRUE : SPC_FALSE), off));
            break;
        case 'J': { /* BININT */
            NEED(5);
            int32_t v = (int32_t)rd_u32(in->pos + 1);
            in->pos += 5;
            CHECK(push(vm, (uint64_t)(int64_t)v << 3, off));
            break;
        }
        case 'K': /* BININT1 */
            NEED(2);
            CHECK(push(vm, (uint64_t)in->pos[1] << 3, off));
            in->pos += 2;
            break;
        case 'M': /* BININT2 */
            NEED(3);
            CHECK(push(vm, (uint64_t)(in->pos[1] | (unsigned)in->pos[2] << 8) << 3, off));
            in->pos += 3;
            break;
        case 0x8a: /* LONG1 */
        case 0x8b: /* LONG4 */
        case 'G': /* BINFLOAT */
            CHECK(op_number(vm, op, off));
            break;
        case 0x8c: { /* SHORT_BINUNICODE: inlined, it is a third of all strings */
            NEED(2);
            size_t n = in->pos[1];
            NEED(2 + n);
            const uint8_t *p = in->pos + 2;
            in->pos += 2 + n;
            CHECK(push_string(vm, p, n, T_STR, off));
            break;
        }
        case 'X': CHECK(read_counted(vm, 4, false, T_STR, off)); break;      /* BINUNICODE */
        case 0x8d: CHECK(read_counted(vm, 8, false, T_STR, off)); break;     /* BINUNICODE8 */
        case 'C': CHECK(read_counted(vm, 1, false, T_NUM, off)); break;    /* SHORT_BINBYTES */
        case 'B': CHECK(read_counted(vm, 4, false, T_NUM, off)); break;    /* BINBYTES */
        case 0x8e: CHECK(read_counted(vm, 8, false, T_NUM, off)); break;   /* BINBYTES8 */
        case 0x96: CHECK(read_counted(vm, 8, false, T_NUM, off)); break;   /* BYTEARRAY8 */
        case 'T': CHECK(read_counted(vm, 4, true, T_NUM, off)); break;     /* BINSTRING */
        case 'U': CHECK(read_counted(vm, 1, false, T_NUM, off)); break;    /* SHORT_BINSTRING */
        case 0x94: case 'q': case 'r': case 'h': case 'j': /* memo */
            CHECK(op_memo(vm, op, off));
            break;
        case 'a': case 'e': case 0x90: case 's': case 'u': case 't': case 'l': case 'd':
        case 0x91: case 0x85: case 0x86: case 0x87: /* containers filled or built */
            CHECK(op_build(vm, op, off));
            break;
        case 'I': case 'L': case 'F': case 'p': case 'g': case 'S': case 'V': /* text */
            CHECK(ms__vm_op_text(vm, op, off));
            break;
        default:
            return ms__vm_op_refused(vm, op, off);
        }
    }
}

void ms__vm_release(ms_vm *vm)
{
    ms__split_discard(vm->split); /* before anything it reads goes away */
    vm->split = NULL;
    vm->split_at = NULL;
    for (size_t i = 0; i < vm->nobjs; i++)
        free(vm->objs[i].items);
    free(vm->objs);
    free(vm->nums);
    free(vm->stack);
    free(vm->marks);
    free(vm->memo);
    free(vm->sparse_keys);
    free(vm->sparse_vals);
    for (size_t i = 0; i < vm->npend; i++)
        free(vm->pend[i].ids);
    free(vm->pend);
    free(vm->pend_free);
    if (vm->spans)
        for (size_t i = 0; i < SPAN_SLOTS; i++)
            free(vm->spans[i].bytes);
    free(vm->spans);
    vm->spans = NULL;
    free(vm->shape);
    vm->shape = NULL;
    free(vm->frame_slots);
    free(vm->stack_slots);
    ms__input_close(&vm->in);
    vm->objs = NULL;
    vm->nums = NULL;
    vm->stack = NULL;
    vm->marks = NULL;
    vm->memo = NULL;
    vm->sparse_keys = NULL;
    vm->sparse_vals = NULL;
    vm->pend = NULL;
    vm->pend_free = NULL;
    vm->frame_slots = NULL;
    vm->stack_slots = NULL;
    vm->nobjs = 0;
}

/* ------------------------------------------------------------------ for the other files
 * Static functions above that the VM's other files and the split reader call too
 * (pickle_vm_impl.h, vm_iface.h); this file calls them directly. */

int ms__vm_intern_stack(ms_vm *vm, const uint32_t *ids, size_t n, uint32_t *out, int64_t off)
{
    return intern_stack(vm, ids, n, out, off);
}

int ms__vm_intern_frame(ms_vm *vm, const ms_frame *f, uint32_t *out, int64_t off)
{
    return intern_frame(vm, f, out, off);
}

int ms__vm_intern_stream(ms_vm *vm, uint64_t raw, uint16_t *out, int64_t off)
{
    return intern_stream(vm, raw, out, off);
}

int ms__vm_trace_for(ms_vm *vm, int device, ms_trace_build **out, int64_t off)
{
    return trace_for(vm, device, out, off);
}

int ms__vm_box_num(ms_vm *vm, int kind, int64_t i, double f, ms_val *out, int64_t off)
{
    return box_num(vm, kind, i, f, out, off);
}

int ms__vm_make_int(ms_vm *vm, int64_t i, ms_val *out, int64_t off)
{
    return make_int(vm, i, out, off);
}

int ms__vm_memo_put(ms_vm *vm, uint64_t idx, ms_val v, int64_t off)
{
    return memo_put(vm, idx, v, off);
}

int ms__vm_memo_get(ms_vm *vm, uint64_t idx, ms_val *out, int64_t off)
{
    return memo_get(vm, idx, out, off);
}

int ms__vm_push_string(ms_vm *vm, const uint8_t *p, size_t n, int tag, int64_t off)
{
    return push_string(vm, p, n, tag, off);
}
