/* The pickle VM's interface to the split reader: everything the two share, and
 * nothing else. The VM (pickle_vm.c and the files beside it, private headers pickle_vm.h
 * and pickle_vm_impl.h) implements the ms__vm_* calls below; the split reader
 * (split_reader.c, split_handover.c, private header split_internal.h) implements the
 * ms__split_* calls. Neither includes the other's private headers: the split reader
 * sees the VM as an opaque ms_vm, and the VM sees a part read by the second thread as an
 * opaque ms_split.
 *
 * What is here:
 *  - the value encoding: a VM value is one 64-bit word, a 3-bit tag and a payload;
 *    the memo holds the same encoding cut to 32 bits (payloads below
 *    MS_VM_MEMO_PAYLOAD_LIMIT), which is what the second thread reads and writes;
 *  - the VM's fixed limits the hand-over must respect;
 *  - the known strings, interned first in every snapshot so their ids are constants;
 *  - the trace entry's shape as the VM learnt it, and the fields of one entry;
 *  - the hand-over calls, in both directions.
 *
 * Protocol: once the VM has learnt the entries' shape it calls ms__split_start, which
 * may start a second thread on the back of the input and says where the VM must hand
 * over. At every batch boundary before it, the VM asks ms__split_stop_here whether the
 * thread, done early, took the rest of the VM's part from there. When the VM's position
 * reaches either point it calls ms__split_join, which waits
 * for the thread, checks what a serial read would have checked (ms__vm_trace_on_top,
 * ms__vm_has_room), maps the thread's ids into the VM's tables (ms__vm_intern_*),
 * appends the thread's memo entries and events (ms__vm_memo_room, ms__vm_trace_for)
 * and finally moves the VM past them (ms__vm_took). A VM that stops before the point
 * calls ms__split_discard. Errors follow the library's rule: 0 or a negative ms_code,
 * with the VM's ms_error filled. */
#ifndef MEMSNAP_VM_IFACE_H
#define MEMSNAP_VM_IFACE_H

#include <stdatomic.h>

#include "input.h"
#include "checked_math.h"
#include "internal.h"
#include "pickle_bytes.h"

/* ------------------------------------------------------------------ values */

typedef uint64_t ms_val;

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
#define VTAG(v) ((unsigned)((v)&7u))
#define VPAY(v) ((v) >> 3)
#define VMAKE(tag, pay) ((((uint64_t)(pay)) << 3) | (uint64_t)(tag))
#define VINT_MIN (-((int64_t)1 << 60))
#define VINT_MAX (((int64_t)1 << 60) - 1)
static inline int64_t vint(ms_val v)
{
    return (int64_t)v >> 3; /* arithmetic shift restores the sign */
}

/* ------------------------------------------------------------------ limits */

/* Stack items the VM holds at most; memo payloads must stay below the second. */
#define MS_VM_MAX_STACK ((size_t)1 << 24)
#define MS_VM_MEMO_PAYLOAD_LIMIT ((uint64_t)1 << 29)

/* ------------------------------------------------------------------ known strings */

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
    X(S_ACT_SEGMENT_UNMAP, "segment_unmap") X(S_ACT_OOM, "oom") X(S_ACT_SNAPSHOT, "snapshot") \
    X(S_HISTORY, "history") X(S_REAL_SIZE, "real_size")                                     \
    X(S_COMPILE_CONTEXT, "compile_context") X(S_USER_METADATA, "user_metadata")               \
    X(S_NA, "N/A") X(S_EMPTY, "")

enum {
#define MS_X_KNOWN(id, text) id,
    MS_KNOWN_STRINGS(MS_X_KNOWN)
#undef MS_X_KNOWN
        S_KNOWN_COUNT
};

/* ------------------------------------------------------------------ trace entries */

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


/* The fields of one trace entry as they are read (the VM's readers, the split reader). */
typedef struct ev_fields {
    int action;   /* -1 until seen */
    uint64_t addr, size, stream_raw;
    int64_t time_us;
    uint32_t stack;
    /* String ids, MS_NO_STRING for PyTorch's defaults ('N/A', ""): most traces carry
     * only those, and then the two per-event arrays are never made. */
    uint32_t compile_context, user_metadata;
} ev_fields;

#define EV_FIELDS_EMPTY {-1, 0, 0, 0, 0, MS_NO_STACK, MS_NO_STRING, MS_NO_STRING}

/* The id an entry's compile_context or user_metadata value keeps: MS_NO_STRING for the
 * default ('N/A', "") and for anything but a string (ignored, as before they were read). */
static inline uint32_t ev_context_id(uint32_t key, unsigned tag, uint64_t id)
{
    if (tag != T_STR || id == (key == S_COMPILE_CONTEXT ? S_NA : S_EMPTY))
        return MS_NO_STRING;
    return (uint32_t)id;
}

/* Makes room for `need` entries in every array of the trace: the six event arrays, and
 * the compile-context and user-metadata arrays that exist (neither, until an entry
 * carries a non-default value), their new entries set to MS_NO_STRING, so they stay as
 * long as the others and an entry without a value needs no store. False when out of
 * memory. */
bool ms__trace_reserve(ms_trace_build *t, size_t need);
/* Creates what an entry at n with these ids needs (an array prefilled with
 * MS_NO_STRING) and stores them. False when out of memory. */
bool ms__trace_contexts_set(ms_trace_build *t, size_t n, uint32_t compile_context,
                            uint32_t user_metadata);

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

/* ------------------------------------------------------------------ hand-over */

typedef struct ms_vm ms_vm;       /* the VM, opaque to the split reader */
typedef struct ms_split ms_split; /* a part read by the second thread, opaque to the VM */

/* Split reader -> VM. What the VM is now, for a part starting here: */
ms_input *ms__vm_input(ms_vm *vm);              /* the VM's input; in->pos is where it is */
const entry_shape *ms__vm_shape(const ms_vm *vm); /* NULL until learnt */
const ms_limits *ms__vm_limits(const ms_vm *vm);
ms_error *ms__vm_error(ms_vm *vm);              /* may be NULL */
/* The dense memo (32-bit encodings) and its length; gen changes whenever an existing
 * entry is overwritten, so a copy taken earlier is still good while gen is the same.
 * sparse: entries the VM keeps outside the dense memo (a part needs none). */
const uint32_t *ms__vm_memo(const ms_vm *vm, size_t *len, uint64_t *gen, size_t *sparse);
/* True when the top of the VM's stack is a device's trace list with every entry read so
 * far appended: where a batch of entries read elsewhere can go. *device: which. */
bool ms__vm_trace_on_top(const ms_vm *vm, int *device);
/* True when a batch of `stack_items` entries, `memo_entries` new memo entries,
 * `events` events, `strings` new strings and `streams` new streams fit the VM's limits,
 * with string ids staying below string_limit. */
bool ms__vm_has_room(const ms_vm *vm, size_t stack_items, uint64_t memo_entries,
                     uint64_t events, size_t strings, uint32_t string_limit, size_t streams);
/* The VM's id of a string (interned if new); UINT32_MAX out of memory. */
uint32_t ms__vm_intern_string(ms_vm *vm, const char *data, size_t len);
int ms__vm_intern_stack(ms_vm *vm, const uint32_t *ids, size_t n, uint32_t *out, int64_t off);
int ms__vm_intern_stream(ms_vm *vm, uint64_t raw, uint16_t *out, int64_t off);
int ms__vm_trace_for(ms_vm *vm, int device, ms_trace_build **out, int64_t off);
int ms__vm_intern_frame(ms_vm *vm, const ms_frame *f, uint32_t *out, int64_t off);
/* Frame id of a converted frame or a frame dict (converting it). */
int ms__vm_frame_of(ms_vm *vm, ms_val v, uint32_t *out, int64_t off);
/* Stack id of a memo value that is a frames list object (converting it); -1 when it is
 * no list (the serial read fails there). */
int ms__vm_stack_of_list(ms_vm *vm, uint32_t enc, uint32_t *out, int64_t off);
/* Room for n more memo entries after the current ones: where to write them, or NULL
 * (out of memory). They count once ms__vm_took says so. */
uint32_t *ms__vm_memo_room(ms_vm *vm, size_t n);
/* A part of `events` entries and `memo_entries` memo entries (written at
 * ms__vm_memo_room) went onto the trace list on top of the stack; the VM goes on at pos.
 * The events themselves are already in the device's trace (ms__vm_trace_for). */
void ms__vm_took(ms_vm *vm, uint64_t events, size_t memo_entries, const uint8_t *pos);

/* VM -> split reader. Starts a second thread if the input is whole in memory and long
 * enough, and says where the VM must hand over (*at); NULL when there is none (the VM
 * simply reads everything). */
ms_split *ms__split_start(ms_vm *vm, const uint8_t **at);
/* The VM is at the hand-over point: waits for the second thread and takes its entries,
 * moving the VM past them (or leaves it, when the VM must read them itself). Frees s.
 * Returns 0 or an error (out of memory, a limit). */
int ms__split_join(ms_vm *vm, ms_split *s);
/* At a batch boundary (a MARK) before the hand-over point: tells the second thread how
 * far the VM has come, and whether the thread has read on from here (it takes the back
 * of the VM's part when it is done with its own first); if so, the VM calls
 * ms__split_join here. */
bool ms__split_stop_here(ms_split *s, const uint8_t *pos);
/* Stops and frees a second thread the VM never reached; accepts NULL. */
void ms__split_discard(ms_split *s);

/* Tests: hand-overs that took the second thread's entries, process-wide (a read that
 * fails leaves no snapshot to ask). */
extern _Atomic uint64_t ms__split_handovers;
/* Tests: when set, a second thread waits for the VM to reach the hand-over point, so the
 * VM always reads the back half of the thread's part itself (the path a slower second
 * core takes). */
extern atomic_bool ms__split_test_hold;
/* Tests: when set, the hand-over's page recycling takes its fallback, as if every
 * mremap had failed (the destination mapped afresh). */
extern atomic_bool ms__split_test_remap_fails;
/* Tests: when set, the VM waits at its first batch boundary until the second thread has
 * read its part, so the thread always reads the back half of the VM's part as well. */
extern atomic_bool ms__split_test_steal;

#endif
