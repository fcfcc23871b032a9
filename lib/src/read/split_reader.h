/* Reading one long trace with two threads.
 *
 * Nearly all of a large snapshot is one device's trace list, pickled as batches of
 * 1000 entries: MARK entry... APPENDS. Once the VM has learnt the entries' shape, a second
 * thread finds a batch boundary halfway through the rest of the input and reads the
 * batches from there, while the VM reads up to that boundary. The second thread cannot
 * know what the memo holds at its start (every MEMOIZE before it counts), so it keeps
 * its own ids and records memo references it cannot settle as raw indexes. When the VM
 * arrives at the boundary it checks everything the serial reading would have checked,
 * maps the ids into its own tables, appends the events and memo entries in order and
 * continues after them: the snapshot is the same, byte for byte, as a one-thread read.
 * Anything the second thread does not understand ends its part there, and anything the
 * hand-over cannot prove equal to the serial reading makes the VM read that part
 * itself. When the VM reaches the boundary while the thread still has a long way to go,
 * the VM reads the back half of what is left the same way (the thread stops there), and
 * the two parts are handed over in order. */
#ifndef MEMSNAP_SPLIT_READER_H
#define MEMSNAP_SPLIT_READER_H

#include <stdatomic.h>

#include "pickle_vm.h"

/* Starts the second thread if the input is whole in memory, protocol-4 style and long
 * enough; sets vm->split_at to where the VM must hand over. Never fails: without a
 * second thread the VM simply reads everything. */
void ms__split_start(ms_vm *vm);

/* The VM is at vm->split_at: waits for the second thread and takes its entries,
 * moving in->pos past them (or leaves it, when the VM must read them itself).
 * Returns 0 or an error (out of memory, a limit). */
int ms__split_join(ms_vm *vm);

/* Stops and frees a second thread the VM never reached. */
void ms__split_discard(ms_vm *vm);

/* Hand-overs that took the second thread's entries, process-wide (for tests: a read
 * that fails leaves no snapshot to ask). */
extern _Atomic uint64_t ms__split_handovers;
/* Tests: when set, a second thread waits for the VM to reach the hand-over point, so the
 * VM always reads the back half of the thread's part itself (the path a slower second
 * core takes). */
extern atomic_bool ms__split_test_hold;

#endif
