/* Opcodes memsnap never runs: those that would run code (import a global, call it, build
 * an object), those that need buffers from outside the pickle, and unknown ones. Each
 * is refused by name at its byte offset. */
#include "pickle_vm_impl.h"

static const char *opcode_name(unsigned op)
{
    switch (op) {
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    }
    return "?";
}

int ms__vm_op_refused(ms_vm *vm, unsigned op, int64_t off)
{
    switch (op) {
    case 'c': case 0x93: case 'R': case 'b': case 'i': case 'o': case 0x81: case 0x92:
    case 0x82: case 0x83: case 0x84: case 'P': case 'Q':
        return FAIL(MS_ERR_REFUSED_OPCODE, off,
                    "opcode %s (0x%02x) would run code; memsnap never executes pickles",
                    opcode_name(op), op);
    case 0x97:
    case 0x98:
        return FAIL(MS_ERR_CORRUPT, off,
                    "opcode %s (0x%02x) needs out-of-band buffers, which snapshots never use",
                    opcode_name(op), op);
    default:
        if (off == 0 && (op == '{' || op == '[')) /* a JSON export, a common mix-up */
            return FAIL(MS_ERR_UNKNOWN_OPCODE, MS_NO_OFFSET,
                        "looks like JSON, not a pickle: memsnap reads the pickles written by "
                        "torch.cuda.memory._dump_snapshot");
        return FAIL(MS_ERR_UNKNOWN_OPCODE, off, "unknown pickle opcode 0x%02x", op);
    }
}
