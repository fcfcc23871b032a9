/* The pickle VM's values and objects, shared by the VM (pickle_vm.c) and the model
 * builder (model_build.c).
 *
 * A value is one 64-bit word: a 3-bit tag and a payload. Small integers are stored
 * inline; strings are interned ids; containers are ids into the object table. Trace
 * entries never become objects: the VM recognises them from where they are created and
 * turns each into a row of the device's event arrays as soon as its items are set, which
 * is what keeps a 4M-event file within a fraction of its own size in memory. */
#ifndef MEMSNAP_PICKLE_VM_H
#define MEMSNAP_PICKLE_VM_H

#include "input.h"
#include "checked_math.h"
#include "internal.h"
#include "pickle_bytes.h"

typedef uint64_t ms_val;

typedef struct ms_pending {
    uint32_t *ids;        /* PEND_FRAMES: frame ids appended so far */
    uint32_t n, cap;
    uint64_t memo_idx;    /* where MEMOIZE put it, to rewrite once converted; UINT64_MAX none */
    uint64_t gen;         /* bumped on reuse, so a stale copy is recognised */
    bool used;
} ms_pending;

enum {
    T_INT = 0,   /* payload: signed 61-bit integer */
    T_STR = 1,   /* payload: string id */
    T_OBJ = 2,   /* payload: object id */
    T_NUM = 3,   /* payload: index into the boxed numbers */
    T_SPC = 4,   /* payload: one of SPC_* */
    T_PEND = 5,  /* a container still being filled, kept out of the object table;
                    payload: x << 2 | PEND_* kind */
    T_EVT = 6,   /* a converted trace entry; payload: index << 16 | device */
    T_CONV = 7   /* a converted frame or stack; payload: id << 1 | (1 for a stack) */
};
enum { SPC_NONE = 0, SPC_TRUE = 1, SPC_FALSE = 2, SPC_CONSUMED = 3, SPC_BUILDING = 4 };
/* Pending kinds: a trace entry (x = device), a trace entry's frames list and one of its
 * frames (x = slot | generation << 20 into the pending pool). */
enum { PEND_EVENT = 0, PEND_FRAMES = 1, PEND_FRAME = 2 };

#define VTAG(v) ((unsigned)((v)&7u))
#define VPAY(v) ((v) >> 3)
#define VMAKE(tag, pay) ((((uint64_t)(pay)) << 3) | (uint64_t)(tag))
#define VINT_MIN (-((int64_t)1 << 60))
#define VINT_MAX (((int64_t)1 << 60) - 1)
static inline int64_t vint(ms_val v)
{
    return (int64_t)v >> 3; /* arithmetic shift restores the sign */
}

enum { O_LIST = 1, O_DICT, O_TUPLE, O_SET, O_FROZENSET };
/* R_FROZEN: a frames list already turned into a stack; changing it afterwards would make
 * the stack disagree with the file, so it is refused. */
enum { R_NONE = 0, R_ROOT, R_TRACES, R_TRACE, R_FROZEN };

typedef struct ms_obj {
    uint8_t type;
    uint8_t role;
    uint16_t device;   /* R_TRACE: the device this list belongs to */
    uint32_t aux;      /* cache: stack id + 1 for frame lists, frame id + 1 for frame dicts */
    uint32_t len;      /* items (dicts: pairs, stored key, value, key, value, ...) */
    uint32_t cap;
    ms_val *items;
    uint64_t appended; /* R_TRACE: entries appended so far */
    int64_t offset;    /* where the object was created, for error messages */
} ms_obj;

enum { N_INT = 0, N_FLOAT, N_HUGE, N_BYTES /* i: string id of the raw bytes */ };
typedef struct ms_num {
    int kind;
    int64_t i;
    double f;
} ms_num;

/* Well-known strings are interned first, so their ids are these constants. */
#define MS_KNOWN_STRINGS(X)                                                                   \
    X(S_ACTION, "action") X(S_ADDR, "addr") X(S_SIZE, "size") X(S_STREAM, "stream")           \
    X(S_TIME_US, "time_us") X(S_FRAMES, "frames") X(S_DEVICE_FREE, "device_free")             \
    X(S_DEVICE_TRACES, "device_traces") X(S_SEGMENTS, "segments")                             \
    X(S_ALLOCATOR_SETTINGS, "allocator_settings")                                             \
    X(S_EXTERNAL_ANNOTATIONS, "external_annotations") X(S_NAME, "name")                       \
    X(S_FILENAME, "filename") X(S_LINE, "line") X(S_DEVICE, "device") X(S_ADDRESS, "address") \
    X(S_TOTAL_SIZE, "total_size") X(S_ALLOCATED_SIZE, "allocated_size")                       \
    X(S_ACTIVE_SIZE, "active_size") X(S_REQUESTED_SIZE, "requested_size")                     \
    X(S_SEGMENT_TYPE, "segment_type") X(S_SEGMENT_POOL_ID, "segment_pool_id")                 \
    X(S_IS_EXPANDABLE, "is_expandable") X(S_BLOCKS, "blocks") X(S_STATE, "state")             \
    X(S_STAGE, "stage") X(S_START, "START") X(S_END, "END")                                   \
    X(S_ACTIVE_ALLOCATED, "active_allocated") X(S_ACTIVE_PENDING_FREE, "active_pending_free") \
    X(S_INACTIVE, "inactive") X(S_ACT_ALLOC, "alloc") X(S_ACT_FREE_REQUESTED, "free_requested") \
    X(S_ACT_FREE_COMPLETED, "free_completed") X(S_ACT_SEGMENT_ALLOC, "segment_alloc")         \
    X(S_ACT_SEGMENT_FREE, "segment_free") X(S_ACT_SEGMENT_MAP, "segment_map")                 \
    X(S_ACT_SEGMENT_UNMAP, "segment_unmap") X(S_ACT_OOM, "oom") X(S_ACT_SNAPSHOT, "snapshot")

enum {
#define MS_X_KNOWN(id, text) id,
    MS_KNOWN_STRINGS(MS_X_KNOWN)
#undef MS_X_KNOWN
        S_KNOWN_COUNT
};

/* Every trace entry of a snapshot has the same keys in the same order, each fetched from
 * the memo with the same bytes ("h\x15", "j\xf0\x03\x00\x00"). The fast reader learns
 * them from one entry (see fast_events in pickle_vm.c); the split reader matches them. */
#define SHAPE_KEYS 16

typedef struct entry_shape {
    size_t n;
    uint8_t len[SHAPE_KEYS];
    uint8_t bytes[SHAPE_KEYS][5];
    uint32_t key[SHAPE_KEYS]; /* string id of the key */
    /* The key's bytes as the low bytes of a little-endian word, and which bytes count:
     * one load and one compare per key. */
    uint64_t want[SHAPE_KEYS], mask[SHAPE_KEYS];
} entry_shape;

typedef struct ms_vm {
    ms_input in;
    ms_limits lim;
    ms_error *err;
    ms_snapshot *snap;

    ms_val *stack;
    size_t sp, stack_cap;
    size_t *marks;
    size_t nmarks, marks_cap;

    /* The memo holds 32-bit encodings of values (tag and a payload under 2^29); integers
     * are boxed first. Indexes beyond the dense part go to a small sparse table. */
    uint32_t *memo;
    size_t memo_len, memo_cap;
    uint64_t *sparse_keys;
    uint32_t *sparse_vals;
    size_t sparse_len, sparse_cap;

    ms_obj *objs;
    size_t nobjs, objs_cap;
    uint64_t items_total;
    ms_num *nums;
    size_t nnums, nums_cap;

    uint32_t root_obj;         /* id + 1 of the dict created first at the bottom, 0 if none */

    /* Frames lists and frames of trace entries are built here rather than as objects:
     * a 4M-event file has a million of each, and they reduce to interned ids. */
    struct ms_pending *pend;
    size_t npend, pend_cap;
    uint32_t *pend_free;
    size_t npend_free, pend_free_cap;

    /* Frames lists seen as raw bytes, with their stacks (see fast_events). */
    struct span_entry *spans;
    uint64_t memo_gen;
    entry_shape *shape;        /* keys of a trace entry as last learnt (fast_events) */

    /* A second thread reading the back of a long trace (split_reader.c): when the VM
     * reaches split_at, it takes that thread's entries instead of reading them. */
    struct split_worker *split;
    const uint8_t *split_at;

    /* Content-interning tables for frames and stacks (ids + 1, 0 empty). */
    uint32_t *frame_slots;
    size_t frame_nslots;
    uint32_t *stack_slots;
    size_t stack_nslots;
    size_t stack_frames_cap, stack_start_cap;
    uint64_t events_total;
    ms_val result;
} ms_vm;

/* The fields of one trace entry as they are read (the VM's readers, the split reader). */
typedef struct ev_fields {
    int action;   /* -1 until seen */
    uint64_t addr, size, stream_raw;
    int64_t time_us;
    uint32_t stack;
} ev_fields;

/* An integer-valued field (addr, device_free, size, time_us, stream) at p, as the fast
 * readers take it: stores it and returns the bytes it takes, or 0 for anything else (a
 * memoized integer, a negative size) that the general VM must judge. The caller
 * guarantees 11 readable bytes. */
static inline size_t ev_int_field(ev_fields *f, uint64_t key, const uint8_t *p)
{
    int64_t iv;
    size_t used = fast_int(p, &iv);
    if (!used || p[used] == 0x94 || (key == S_SIZE && iv < 0))
        return 0;
    switch (key) {
    case S_SIZE: f->size = (uint64_t)iv; break;
    case S_TIME_US: f->time_us = iv; break;
    case S_STREAM: f->stream_raw = (uint64_t)iv; break;
    default: f->addr = (uint64_t)iv; break; /* addr, or device_free for an OOM */
    }
    return used;
}

/* A whole entry as the fast readers read it: an absurd size or a time out of range
 * (checked_math.h) is left to the general VM, which reports it, so every reader gives the
 * same error at the same byte. One branch per entry. */
static inline bool ev_fields_ok(const ev_fields *f)
{
    return ms__size_ok(f->size) & ms__time_ok(f->time_us);
}

/* Runs the VM over the whole input; on success vm->result holds the top object. */
int ms__vm_run(ms_vm *vm);
void ms__vm_release(ms_vm *vm);

/* Helpers for the model builder. */
static inline ms_obj *ms__vm_obj(ms_vm *vm, ms_val v, int type)
{
    if (VTAG(v) != T_OBJ)
        return NULL;
    ms_obj *o = &vm->objs[VPAY(v)];
    return (type == 0 || o->type == type) ? o : NULL;
}
/* Looks a string key up in a dict (the last binding wins, as in Python). */
bool ms__vm_dict_get(const ms_obj *dict, uint32_t key, ms_val *out);
/* Integer value of v (inline or boxed); false when v is no integer or too large. */
bool ms__vm_int(const ms_vm *vm, ms_val v, int64_t *out);
/* Stack id for a frames value: a list of frames (object or pending), an already converted
 * stack, or None (MS_NO_STACK). Interns by content. */
int ms__vm_stack_of(ms_vm *vm, ms_val frames, uint32_t *out, int64_t offset);
/* Appends trace entries (converted ones, or dicts still to convert) to a device's trace
 * list, checking that each lands exactly where it was read. */
int ms__vm_append_trace(ms_vm *vm, ms_obj *list, const ms_val *items, size_t n, int64_t off);
/* Short type name of a value, for messages. */
const char *ms__vm_type_name(const ms_vm *vm, ms_val v);

/* Interning and lookups the split reader's hand-over needs (pickle_vm.c). */
int ms__vm_intern_stack(ms_vm *vm, const uint32_t *ids, size_t n, uint32_t *out, int64_t off);
int ms__vm_intern_stream(ms_vm *vm, uint64_t raw, uint16_t *out, int64_t off);
int ms__vm_trace_for(ms_vm *vm, int device, ms_trace_build **out, int64_t off);
int ms__vm_intern_frame(ms_vm *vm, const ms_frame *f, uint32_t *out, int64_t off);
/* Frame id of a converted frame or a frame dict (converting it). */
int ms__vm_frame_of(ms_vm *vm, ms_val v, uint32_t *out, int64_t off);
#define MS_VM_MAX_STACK ((size_t)1 << 24)
#define MS_VM_MEMO_PAYLOAD_LIMIT ((uint64_t)1 << 29)

/* Builds the typed model from vm->result (model_build.c). */
int ms__model_build(ms_vm *vm);

#endif
