/* The VM's side of vm_iface.h beyond reading: what the split reader may see and change of
 * the VM, at the start of a part and at its hand-over (never while the VM runs). The
 * interning calls stay with the tables they fill (pickle_vm.c), ms__vm_frame_of with the
 * frame checks (pickle_values.c). */
#include <stdlib.h>

#include "pickle_vm.h"

ms_input *ms__vm_input(ms_vm *vm)
{
    return &vm->in;
}

const entry_shape *ms__vm_shape(const ms_vm *vm)
{
    return vm->shape;
}

const ms_limits *ms__vm_limits(const ms_vm *vm)
{
    return &vm->lim;
}

ms_error *ms__vm_error(ms_vm *vm)
{
    return vm->err;
}

const uint32_t *ms__vm_memo(const ms_vm *vm, size_t *len, uint64_t *gen, size_t *sparse)
{
    if (len)
        *len = vm->memo_len;
    if (gen)
        *gen = vm->memo_gen;
    if (sparse)
        *sparse = vm->sparse_len;
    return vm->memo;
}

bool ms__vm_trace_on_top(const ms_vm *vm, int *device)
{
    if (vm->sp < 1 || VTAG(vm->stack[vm->sp - 1]) != T_OBJ)
        return false;
    const ms_obj *list = &vm->objs[VPAY(vm->stack[vm->sp - 1])];
    if (list->type != O_LIST || list->role != R_TRACE || list->device >= vm->snap->n_devices ||
        vm->snap->traces[list->device].view.n != list->appended)
        return false;
    *device = list->device;
    return true;
}

bool ms__vm_has_room(const ms_vm *vm, size_t stack_items, uint64_t memo_entries,
                     uint64_t events, size_t strings, uint32_t string_limit, size_t streams)
{
    return vm->nmarks < vm->lim.max_depth && vm->sp + stack_items <= MS_VM_MAX_STACK &&
           vm->memo_len + memo_entries <= vm->lim.max_memo &&
           vm->events_total + events <= vm->lim.max_events &&
           vm->snap->strings.count + strings < string_limit &&
           vm->snap->n_streams + streams < UINT16_MAX;
}

uint32_t ms__vm_intern_string(ms_vm *vm, const char *data, size_t len)
{
    return ms__strtab_intern(&vm->snap->strings, data, len);
}

int ms__vm_stack_of_list(ms_vm *vm, uint32_t enc, uint32_t *out, int64_t off)
{
    if (!ms__vm_obj(vm, enc, O_LIST))
        return -1;
    return ms__vm_stack_of(vm, enc, out, off);
}

uint32_t *ms__vm_memo_room(ms_vm *vm, size_t n)
{
    size_t need;
    if (!ms__add(vm->memo_len, n, &need) ||
        !ms__grow((void **)&vm->memo, &vm->memo_cap, need, sizeof *vm->memo))
        return NULL;
    return vm->memo + vm->memo_len;
}

void ms__vm_took(ms_vm *vm, uint64_t events, size_t memo_entries, const uint8_t *pos)
{
    ms_obj *list = &vm->objs[VPAY(vm->stack[vm->sp - 1])];
    list->appended += events;
    vm->memo_len += memo_entries;
    vm->events_total += events;
    vm->snap->split_events += events;
    vm->in.pos = pos;
}

/* ------------------------------------------------------------------ compile context */

static bool contexts_grow(uint32_t **arr, size_t from, size_t cap)
{
    size_t bytes;
    if (!ms__mul(cap, sizeof **arr, &bytes))
        return false;
    uint32_t *p = realloc(*arr, bytes ? bytes : sizeof **arr);
    if (!p)
        return false;
    for (size_t i = from; i < cap; i++)
        p[i] = MS_NO_STRING;
    *arr = p;
    return true;
}

static bool contexts_reserve(ms_trace_build *t, size_t from, size_t cap)
{
    return (!t->compile_context || contexts_grow(&t->compile_context, from, cap)) &&
           (!t->user_metadata || contexts_grow(&t->user_metadata, from, cap));
}

bool ms__trace_reserve(ms_trace_build *t, size_t need)
{
    if (need <= t->cap)
        return true;
    size_t c1 = t->cap, c2 = t->cap, c3 = t->cap, c4 = t->cap, c5 = t->cap, c6 = t->cap;
    if (!ms__grow((void **)&t->action, &c1, need, sizeof *t->action) ||
        !ms__grow((void **)&t->addr, &c2, need, sizeof *t->addr) ||
        !ms__grow((void **)&t->size, &c3, need, sizeof *t->size) ||
        !ms__grow((void **)&t->time_us, &c4, need, sizeof *t->time_us) ||
        !ms__grow((void **)&t->stack, &c5, need, sizeof *t->stack) ||
        !ms__grow((void **)&t->stream, &c6, need, sizeof *t->stream))
        return false;
    t->cap = c1;
    return contexts_reserve(t, t->view.n, c1);
}

bool ms__trace_contexts_set(ms_trace_build *t, size_t n, uint32_t compile_context,
                            uint32_t user_metadata)
{
    /* The entry at n is already within cap (the other arrays hold it). */
    if (compile_context != MS_NO_STRING) {
        if (!t->compile_context && !contexts_grow(&t->compile_context, 0, t->cap))
            return false;
        t->compile_context[n] = compile_context;
    }
    if (user_metadata != MS_NO_STRING) {
        if (!t->user_metadata && !contexts_grow(&t->user_metadata, 0, t->cap))
            return false;
        t->user_metadata[n] = user_metadata;
    }
    return true;
}
