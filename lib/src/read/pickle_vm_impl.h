/* What the VM's own files offer each other, beyond pickle_vm.h (which the model builder
 * sees too). pickle_vm.c is the hot path: the opcode loop, the stack, the memo, interning
 * frames and stacks, trace entries' rows, the fast trace-entry readers. Beside it, off
 * that path: pickle_values.c (values read into the model, frame dicts), pickle_text.c
 * (protocol 0's text arguments), pickle_refused.c (opcodes never run) and vm_iface.c
 * (the VM as the split reader sees it). */
#ifndef MEMSNAP_PICKLE_VM_IMPL_H
#define MEMSNAP_PICKLE_VM_IMPL_H

#include <stdlib.h>

#include "pickle_vm.h"

/* Python's pickler never leaves more than a few thousand items on the stack (it batches
 * containers by 1000); this bound only stops hostile input from exhausting memory. */
#define MAX_STACK MS_VM_MAX_STACK
#define MEMO_PAYLOAD_LIMIT MS_VM_MEMO_PAYLOAD_LIMIT

#define FAIL(code, off, ...) ms__fail(vm->err, (code), (off), __VA_ARGS__)

/* Shorthands of the opcode handlers, which keep `in` (the VM's input) and `rc`. */
#define NEED(n)                                                  \
    do {                                                         \
        if (MS_UNLIKELY((size_t)(in->end - in->pos) < (n))) {    \
            rc = ms__input_need(in, (n), vm->err);               \
            if (rc)                                              \
                return rc;                                       \
        }                                                        \
    } while (0)
#define CHECK(expr)        \
    do {                   \
        if ((rc = (expr))) \
            return rc;     \
    } while (0)

/* ------------------------------------------------------------------ working memory */

/* Accounts an array of the VM's own growing from old_bytes to new_bytes, and refuses
 * the input when that takes the VM past its bound (ms_limits.max_memory). */
int ms__vm_charge(ms_vm *vm, size_t old_bytes, size_t new_bytes, int64_t off);

/* ms__grow for the VM's own arrays: the same doubling, charged first, so an input that
 * builds containers by the million is refused before the memory is taken. */
static inline int vm_grow(ms_vm *vm, void **p, size_t *cap, size_t need, size_t elem,
                          int64_t off)
{
    if (need <= *cap)
        return 0;
    /* A container's first items get exactly their room: most hold a handful (a frame's
     * three pairs), and sixteen slots each made a snapshot's blocks three times their
     * bytes in the file. */
    size_t n = *cap ? *cap : need < 4 ? 4 : need, bytes;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return FAIL(MS_ERR_NOMEM, off, "out of memory");
        n *= 2;
    }
    if (!ms__mul(n, elem, &bytes))
        return FAIL(MS_ERR_NOMEM, off, "out of memory");
    int rc = ms__vm_charge(vm, *cap * elem, bytes, off);
    if (rc)
        return rc;
    void *q = realloc(*p, bytes);
    if (!q) {
        vm->mem -= bytes - *cap * elem;
        return FAIL(MS_ERR_NOMEM, off, "out of memory");
    }
    *p = q;
    *cap = n;
    return 0;
}

/* ------------------------------------------------------------------ stack
 * Inline in every file that pushes and pops, the opcode loop first. */

static inline int push(ms_vm *vm, ms_val v, int64_t off)
{
    if (MS_UNLIKELY(vm->sp == vm->stack_cap)) {
        if (vm->sp >= MAX_STACK)
            return FAIL(MS_ERR_LIMIT, off, "more than %zu values on the pickle stack", MAX_STACK);
        int rc = vm_grow(vm, (void **)&vm->stack, &vm->stack_cap, vm->sp + 1,
                         sizeof *vm->stack, off);
        if (rc)
            return rc;
    }
    vm->stack[vm->sp++] = v;
    return 0;
}

/* Bottom of the current mark frame: values below it belong to an outer container. */
static inline size_t frame_floor(const ms_vm *vm)
{
    return vm->nmarks ? vm->marks[vm->nmarks - 1] : 0;
}

static inline int pop(ms_vm *vm, ms_val *out, int64_t off, const char *what)
{
    if (MS_UNLIKELY(vm->sp <= frame_floor(vm)))
        return FAIL(MS_ERR_CORRUPT, off, "%s needs a value but the stack is empty", what);
    *out = vm->stack[--vm->sp];
    return 0;
}

static inline int pop_mark(ms_vm *vm, size_t *mark, int64_t off, const char *what)
{
    if (MS_UNLIKELY(vm->nmarks == 0))
        return FAIL(MS_ERR_CORRUPT, off, "%s without a MARK", what);
    *mark = vm->marks[--vm->nmarks];
    return 0;
}

/* ------------------------------------------------------------------ pickle_vm.c */

/* For the opcodes handled outside the loop's file; the loop itself calls the static
 * versions these wrap. */
int ms__vm_box_num(ms_vm *vm, int kind, int64_t i, double f, ms_val *out, int64_t off);
/* An integer value: inline when it fits 61 bits, else boxed. */
int ms__vm_make_int(ms_vm *vm, int64_t i, ms_val *out, int64_t off);
int ms__vm_memo_put(ms_vm *vm, uint64_t idx, ms_val v, int64_t off);
int ms__vm_memo_get(ms_vm *vm, uint64_t idx, ms_val *out, int64_t off);
/* Interns a string (tag T_STR, checked as UTF-8) or bytes (T_NUM) and pushes it. */
int ms__vm_push_string(ms_vm *vm, const uint8_t *p, size_t n, int tag, int64_t off);

/* ------------------------------------------------------------------ pickle_values.c */

/* A frame from its key/value pairs: name, filename, line. */
int ms__vm_convert_frame(ms_vm *vm, const ms_val *pairs, size_t npairs, uint32_t *out,
                         int64_t off);

/* ------------------------------------------------------------------ pickle_text.c */

/* Protocol 0's text opcodes: INT, LONG, FLOAT, PUT, GET, STRING, UNICODE. */
int ms__vm_op_text(ms_vm *vm, unsigned op, int64_t off);

/* ------------------------------------------------------------------ pickle_refused.c */

/* Opcodes memsnap never runs, and unknown ones: always an error. */
int ms__vm_op_refused(ms_vm *vm, unsigned op, int64_t off);

#endif
