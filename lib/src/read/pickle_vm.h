/* The pickle VM's values and objects, shared by the VM (pickle_vm.c and the files beside
 * it, see pickle_vm_impl.h) and the model builder (model_build.c).
 *
 * A value is one 64-bit word: a 3-bit tag and a payload. Small integers are stored
 * inline; strings are interned ids; containers are ids into the object table. Trace
 * entries never become objects: the VM recognises them from where they are created and
 * turns each into a row of the device's event arrays as soon as its items are set, which
 * is what keeps a 4M-event file within a fraction of its own size in memory. */
#ifndef MEMSNAP_PICKLE_VM_H
#define MEMSNAP_PICKLE_VM_H

#include "vm_iface.h"


typedef struct ms_pending {
    uint32_t *ids;        /* PEND_FRAMES: frame ids appended so far */
    uint32_t n, cap;
    uint64_t memo_idx;    /* where MEMOIZE put it, to rewrite once converted; UINT64_MAX none */
    uint64_t gen;         /* bumped on reuse, so a stale copy is recognised */
    bool used;
} ms_pending;

/* Pending kinds: a trace entry (x = device), a trace entry's frames list and one of its
 * frames (x = slot | generation << 20 into the pending pool). */
enum { PEND_EVENT = 0, PEND_FRAMES = 1, PEND_FRAME = 2 };


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

/* N_U64: an int in [2^63, 2^64), kept as its 64-bit pattern in i. C++ writes size_t(-1)
 * (2^64 - 1) for "unknown" in some fields; each field decides what such a value means
 * (docs/architecture.md, "Unsigned -1"). N_HUGE: beyond 64 bits, no value kept. */
enum { N_INT = 0, N_FLOAT, N_HUGE, N_BYTES /* i: string id of the raw bytes */, N_U64 };
typedef struct ms_num {
    int kind;
    int64_t i;
    double f;
} ms_num;



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
    uint32_t span_prev; /* slot + 1 of the span the last frames list was; 0: none */
    uint64_t memo_gen;
    entry_shape *shape;        /* keys of a trace entry as last learnt (fast_events) */

    /* A second thread reading the back of a long trace (split_reader.c): when the VM
     * reaches split_at, it takes that thread's entries instead of reading them. */
    ms_split *split;
    const uint8_t *split_at;

    /* Content-interning tables for frames and stacks (ids + 1, 0 empty). */
    uint32_t *frame_slots;
    size_t frame_nslots;
    uint32_t *stack_slots;
    size_t stack_nslots;
    size_t stack_frames_cap, stack_start_cap;
    uint64_t events_total;
    /* Bytes the VM's own arrays hold (stack, memo, containers and their items, boxed
     * numbers), against ms_limits.max_memory. */
    uint64_t mem;
    ms_val result;
} ms_vm;


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
/* An int that ms__vm_int cannot give: 2^63 or more, or beyond 64 bits. */
bool ms__vm_beyond_int64(const ms_vm *vm, ms_val v);
/* Stack id for a frames value: a list of frames (object or pending), an already converted
 * stack, or None (MS_NO_STACK). Interns by content. */
int ms__vm_stack_of(ms_vm *vm, ms_val frames, uint32_t *out, int64_t offset);
/* Appends trace entries (converted ones, or dicts still to convert) to a device's trace
 * list, checking that each lands exactly where it was read. */
int ms__vm_append_trace(ms_vm *vm, ms_obj *list, const ms_val *items, size_t n, int64_t off);
/* Short type name of a value, for messages. */
const char *ms__vm_type_name(const ms_vm *vm, ms_val v);

#endif
