/* The VM's fast reader of trace entries (lib/src/read/pickle_vm.c) gives up on an entry
 * it cannot take and leaves it to the general VM, which must then give the same result
 * as if the fast reader had never looked: same events, same stacks, and no error left
 * behind in the caller's ms_error by a successful read. */
#include "check.h"

/* pickle.dumps(protocol=4) of
 *   {'device_traces': [[
 *       {'action': 'alloc', 'addr': 512, 'size': 1024, 'stream': 0, 'time_us': 1,
 *        'frames': [{'filename': 'a.py', 'line': 7, 'name': 'f',
 *                    'k4': 'x4', 'k5': 'x5', 'k6': 'x6', 'k7': 'x7', 'k8': 'x8', 'k9': 'x9'}]},
 *       {'action': 'alloc', 'addr': 1024, 'size': 2048, 'stream': 0, 'time_us': 2,
 *        'frames': [{'filename': 'b.py', 'line': 9, 'name': 'g'}]}]],
 *    'segments': []}
 * The first frame has nine keys, more than the fast reader takes (eight pairs): it stops
 * inside the frames list, at the key 'k9'. Before the fix, a `break` meant to leave the
 * key loop only left the switch, so the reader went on to read 'k9' as the value of
 * 'frames' and recorded "'frames' is a str, expected a list" in the caller's error,
 * though the general VM then read the entry correctly and the read succeeded. */
static const char NINE_KEYS[] =
    "\x80\x04\x95\x11\x01\x00\x00\x00\x00\x00\x00}\x94(\x8c\x0d" "device_traces\x94]\x94"
    "]\x94(}\x94(\x8c\x06" "action\x94\x8c\x05" "alloc\x94\x8c\x04" "addr\x94M\x00\x02"
    "\x8c\x04size\x94M\x00\x04\x8c\x06stream\x94K\x00\x8c\x07time_us\x94K\x01\x8c\x06"
    "frames\x94]\x94}\x94(\x8c\x08" "filename\x94\x8c\x04" "a.py\x94\x8c\x04line\x94K"
    "\x07\x8c\x04name\x94\x8c\x01" "f\x94\x8c\x02k4\x94\x8c\x02x4\x94\x8c\x02k5\x94\x8c"
    "\x02x5\x94\x8c\x02k6\x94\x8c\x02x6\x94\x8c\x02k7\x94\x8c\x02x7\x94\x8c\x02k8\x94"
    "\x8c\x02x8\x94\x8c\x02k9\x94\x8c\x02x9\x94uau}\x94(h\x05h\x06h\x07M\x00\x04h\x08"
    "M\x00\x08h\x09K\x00h\x0aK\x02h\x0b]\x94}\x94(h\x0e\x8c\x04" "b.py\x94h\x10K\x09h"
    "\x11\x8c\x01g\x94uauea\x8c\x08segments\x94]\x94u.";

/* The one frame of event i's stack: its file, line and function. */
static void check_frame(const ms_snapshot *s, size_t i, const char *file, int64_t line,
                        const char *name)
{
    const ms_trace *tr = ms_snapshot_trace(s, 0);
    size_t n = 0;
    const uint32_t *ids = tr->stack[i] == MS_NO_STACK ? NULL : ms_snapshot_stack(s, tr->stack[i], &n);
    CHECK_EQ_INT_IN(file, n, 1);
    if (!ids || n != 1)
        return;
    const ms_frame *f = ms_snapshot_frame(s, ids[0]);
    CHECK_EQ_STR_IN(file, ms_snapshot_string(s, f->filename), file);
    CHECK_EQ_INT_IN(file, f->line, line);
    CHECK_EQ_STR_IN(file, ms_snapshot_string(s, f->name), name);
}

static void test_frame_beyond_fast_reader(void)
{
    ms_snapshot *s = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_snapshot_read_memory(&s, NINE_KEYS, sizeof NINE_KEYS - 1, NULL, &err), 0);
    /* A successful read leaves the error as ms_snapshot_read_memory cleared it. */
    CHECK_EQ_INT(err.code, MS_OK);
    CHECK_EQ_STR(err.message, "");
    if (!s)
        return;
    const ms_trace *tr = ms_snapshot_trace(s, 0);
    CHECK_EQ_INT(tr->n, 2);
    if (tr->n == 2) {
        CHECK_EQ_INT(tr->addr[0], 512);
        CHECK_EQ_INT(tr->size[0], 1024);
        CHECK_EQ_INT(tr->addr[1], 1024);
        CHECK_EQ_INT(tr->size[1], 2048);
        check_frame(s, 0, "a.py", 7, "f");
        check_frame(s, 1, "b.py", 9, "g");
    }
    CHECK_EQ_INT(ms_snapshot_stack_count(s), 2);
    ms_snapshot_free(s);
}

int main(void)
{
    test_frame_beyond_fast_reader();
    return check_finish("test_fast_reader");
}
