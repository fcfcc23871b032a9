/* From the VM's values to the model: integers, dict lookups and type names as the model
 * builder and the VM's messages read them, and frame dicts, each value checked, with the
 * message a bad one gets. (A trace entry's fields are checked in pickle_vm.c, which
 * writes its row.) */
#include "pickle_vm_impl.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ values */

bool ms__vm_int(const ms_vm *vm, ms_val v, int64_t *out)
{
    if (VTAG(v) == T_INT) {
        *out = vint(v);
        return true;
    }
    if (VTAG(v) == T_NUM && vm->nums[VPAY(v)].kind == N_INT) {
        *out = vm->nums[VPAY(v)].i;
        return true;
    }
    if (VTAG(v) == T_SPC && (VPAY(v) == SPC_TRUE || VPAY(v) == SPC_FALSE)) {
        *out = VPAY(v) == SPC_TRUE; /* bool is an int in Python */
        return true;
    }
    return false;
}

bool ms__vm_beyond_int64(const ms_vm *vm, ms_val v)
{
    return VTAG(v) == T_NUM && (vm->nums[VPAY(v)].kind == N_U64 || vm->nums[VPAY(v)].kind == N_HUGE);
}

bool ms__vm_dict_get(const ms_obj *dict, uint32_t key, ms_val *out)
{
    ms_val k = VMAKE(T_STR, key);
    for (size_t i = dict->len; i >= 2; i -= 2) {
        if (dict->items[i - 2] == k) {
            *out = dict->items[i - 1];
            return true;
        }
    }
    return false;
}

const char *ms__vm_type_name(const ms_vm *vm, ms_val v)
{
    switch (VTAG(v)) {
    case T_INT: return "int";
    case T_STR: return "str";
    case T_CONV: return (VPAY(v) & 1) ? "stack" : "frame";
    case T_NUM:
        switch (vm->nums[VPAY(v)].kind) {
        case N_FLOAT: return "float";
        case N_BYTES: return "bytes";
        case N_U64: return "int beyond int64 (2^63 or more)";
        default: return "int beyond 64 bits";
        }
    case T_SPC:
        switch (VPAY(v)) {
        case SPC_NONE: return "None";
        case SPC_CONSUMED: return "trace entry";
        case SPC_BUILDING: return "object under construction";
        default: return "bool";
        }
    case T_PEND:
        switch (VPAY(v) & 3) {
        case PEND_FRAMES: return "list";
        case PEND_FRAME: return "dict";
        default: return "trace entry";
        }
    case T_EVT: return "trace entry";
    case T_OBJ:
        switch (vm->objs[VPAY(v)].type) {
        case O_LIST: return "list";
        case O_DICT: return "dict";
        case O_TUPLE: return "tuple";
        case O_SET: return "set";
        default: return "frozenset";
        }
    }
    return "?";
}

/* ------------------------------------------------------------------ frames */

static int frame_str(ms_vm *vm, ms_val v, const char *key, uint32_t *out, int64_t off)
{
    if (VTAG(v) == T_STR) {
        *out = (uint32_t)VPAY(v);
        return 0;
    }
    if (VTAG(v) == T_SPC && VPAY(v) == SPC_NONE)
        return 0;
    return FAIL(MS_ERR_FORMAT, off, "frame '%s' is a %s, expected a str", key, ms__vm_type_name(vm, v));
}

/* A frame from its key/value pairs: name, filename, line. */
int ms__vm_convert_frame(ms_vm *vm, const ms_val *pairs, size_t npairs, uint32_t *out, int64_t off)
{
    ms_frame f = {MS_NO_STRING, MS_NO_STRING, MS_LINE_UNKNOWN};
    int rc;
    for (size_t i = 0; i < npairs; i++) {
        ms_val k = pairs[2 * i], v = pairs[2 * i + 1];
        if (k == VMAKE(T_STR, S_NAME)) {
            if ((rc = frame_str(vm, v, "name", &f.name, off)))
                return rc;
        } else if (k == VMAKE(T_STR, S_FILENAME)) {
            if ((rc = frame_str(vm, v, "filename", &f.filename, off)))
                return rc;
        } else if (k == VMAKE(T_STR, S_LINE)) {
            /* None, a negative line, or C++'s size_t(-1) (torch.compile's fake-tensor
             * frames write 2^64 - 1) and anything beyond int64: no line known. */
            if (ms__vm_int(vm, v, &f.line)) {
                if (f.line < 0)
                    f.line = MS_LINE_UNKNOWN;
            } else if ((VTAG(v) == T_SPC && VPAY(v) == SPC_NONE) || ms__vm_beyond_int64(vm, v)) {
                f.line = MS_LINE_UNKNOWN;
            } else {
                return FAIL(MS_ERR_FORMAT, off, "frame 'line' is a %s, expected an int",
                            ms__vm_type_name(vm, v));
            }
        }
    }
    return ms__vm_intern_frame(vm, &f, out, off);
}

/* Frame id of one element of a frames list. */
int ms__vm_frame_of(ms_vm *vm, ms_val v, uint32_t *out, int64_t off)
{
    if (VTAG(v) == T_CONV && !(VPAY(v) & 1)) {
        *out = (uint32_t)(VPAY(v) >> 1);
        return 0;
    }
    ms_obj *d = ms__vm_obj(vm, v, O_DICT);
    if (!d) {
        if (strcmp(ms__vm_type_name(vm, v), "dict") == 0) /* not "a dict, expected a dict" */
            return FAIL(MS_ERR_FORMAT, off,
                        "stack frame is a dict without 'name', 'filename' and 'line'");
        return FAIL(MS_ERR_FORMAT, off, "stack frame is a %s, expected a dict", ms__vm_type_name(vm, v));
    }
    if (d->aux == 0) {
        uint32_t id = 0;
        int rc = ms__vm_convert_frame(vm, d->items, d->len / 2, &id, off);
        if (rc)
            return rc;
        d->aux = id + 1;
    }
    *out = d->aux - 1;
    return 0;
}
