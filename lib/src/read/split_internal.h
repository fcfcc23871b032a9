/* What the split reader's two files share: a part of the trace read away from the VM
 * (split_worker), as split_reader.c reads it and split_handover.c hands it over to the VM.
 * Like them, it sees the VM only through vm_iface.h. */
#ifndef MEMSNAP_SPLIT_INTERNAL_H
#define MEMSNAP_SPLIT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "vm_iface.h"

/* A reference to a stack (an event's), a frame (in one of this thread's stacks) or a
 * string (in one of its frames): below 2^28 an id in the VM's tables; REF_LOCAL | id one
 * of this thread's; REF_DEFER | index a memo index settled at hand-over. All ones
 * (MS_NO_STACK, MS_NO_STRING) is none. */
#define REF_LOCAL 0x40000000u
#define REF_DEFER 0x80000000u
#define REF_ID_MASK 0x3fffffffu
#define GLOBAL_ID_LIMIT ((uint32_t)1 << 28)

#define CHUNK_EVENTS 32768   /* 1 MiB of events per chunk */
#define CHUNK_DEFS 262144    /* 1 MiB of memo entries per chunk */
#define MAX_FRAMES 1024      /* as the VM's fast reader */

typedef struct ev_chunk {
    uint64_t addr[CHUNK_EVENTS];
    uint64_t size[CHUNK_EVENTS];
    int64_t time_us[CHUNK_EVENTS];
    uint32_t stack[CHUNK_EVENTS];
    uint16_t stream[CHUNK_EVENTS];
    uint8_t action[CHUNK_EVENTS];
} ev_chunk;

/* Actions given by memo references the thread could not settle (strings the VM met
 * after the thread started): an event's action is then ACTION_DEFERRED | slot, and the
 * slot's index is settled at hand-over. */
#define ACTION_DEFERRED 0x80u
#define MAX_DEFERRED_ACTIONS 64

/* The reader's cache of frames lists by their bytes (split_reader.c). */
typedef struct split_span split_span;

/* A frame dict met here: name and filename as string references (see REF_*). */
typedef struct local_frame {
    uint32_t name, filename;
    int64_t line;
} local_frame;

/* What a finished batch commits; a batch the thread gives up on goes back to this. */
typedef struct split_mark {
    const uint8_t *pos;
    uint64_t events, defs;
    size_t dact, strings, frames, stacks, streams, max_batch;
    int64_t max_ahead;
} split_mark;

typedef struct ms_split {
    pthread_t thread;
    atomic_bool cancel;
    /* Between the threads while the part is read: where the last complete batch ends,
     * where to stop (a batch boundary the VM has taken over from there, or NULL), and
     * whether reading is over. */
    _Atomic(const uint8_t *) progress;
    _Atomic(const uint8_t *) stop_at;
    atomic_bool finished;
    bool borrowed_pub; /* pub is the VM's own memo: not freed here */
    /* Tests: the thread starts reading only once the VM reaches the hand-over point, so
     * that the VM always helps (see ms__split_test_hold). */
    bool hold;
    atomic_bool go;

    const uint8_t *start, *end; /* start: a MARK opening a batch */
    bool release_pages;
    const uint8_t *released;
    size_t page;
    entry_shape shape;
    uint32_t *pub; /* the VM's memo when the thread started */
    size_t pub_len;
    uint64_t pub_gen;
    uint64_t max_string;

    ev_chunk **chunks;
    size_t nchunks, chunks_cap;
    uint64_t n_events;
    uint32_t **defs; /* memo entries made here, in this thread's ids */
    size_t ndefchunks, defchunks_cap;
    uint64_t n_defs;
    uint32_t dact[MAX_DEFERRED_ACTIONS]; /* memo index per slot */
    size_t n_dact;
    /* Largest (deferred index - memo entries made here before it was read): every
     * deferred index was valid where it was read if this is below the VM's memo size. */
    int64_t max_ahead;
    size_t max_batch;

    ms_strtab strings;
    uint32_t last_str; /* UINT32_MAX: none */
    /* The string last found to be compile_context's and user_metadata's default text
     * ('N/A', ''), so an entry's copy costs an id compare; UINT32_MAX: none yet. */
    uint32_t default_id[2];
    local_frame *frames;
    size_t n_frames, frames_cap;
    uint32_t *frame_slots; /* open addressing: id + 1, 0 empty */
    size_t frame_nslots;
    uint32_t *stack_refs;
    size_t n_stack_refs, stack_refs_cap;
    size_t *stack_start; /* n_stacks + 1 entries */
    size_t n_stacks, stack_start_cap;
    uint32_t *stack_slots; /* open addressing: id + 1, 0 empty */
    size_t stack_nslots;
    uint64_t *streams;
    size_t n_streams, streams_cap;
    uint16_t last_stream;
    split_span *spans;
    uint32_t span_prev; /* slot + 1 of the span the last frames list was; 0: none */

    split_mark done;
    /* Set at hand-over: the events and memo entries of the part taken right after this
     * one, room for which is made with this one's (the copy recycles pages under the
     * arrays, and a later growth of theirs could no longer remap them in place). */
    uint64_t then_events, then_defs;

    /* Stealing: once its own part is read, the thread reads the back half of what the
     * VM still has to read before `start`, when that is long (split_thread.c's steal).
     * vm_pos: the VM's last batch boundary, published by the VM; steal: that part, once
     * its start is fixed; steal_off: set by the VM when a steal can no longer help (it
     * reached `start`); decided: the thread has made its choice (tests wait for it). */
    _Atomic(const uint8_t *) vm_pos;
    _Atomic(struct ms_split *) steal;
    atomic_bool steal_off;
    atomic_bool decided;
    bool steal_test;
    struct ms_split *parent; /* a steal's: the part whose steal_off stops it */
} split_worker;

/* Chunks are mapped and unmapped directly: the hand-over frees each one as soon as it is
 * copied, and its pages must leave the resident set then, not linger in an allocator's
 * free lists while the VM's arrays grow by as much. */
static inline void *chunk_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static inline void chunk_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

#define DEFS_BYTES (CHUNK_DEFS * sizeof(uint32_t))

static inline uint32_t def_at(const split_worker *w, uint64_t i)
{
    return w->defs[i / CHUNK_DEFS][i % CHUNK_DEFS];
}

static inline int action_of_id(uint64_t id)
{
    return id >= S_ACT_ALLOC && id <= S_ACT_SNAPSHOT ? (int)(id - S_ACT_ALLOC) : MS_ACT_OTHER;
}

/* A part starting at `at` (a MARK opening a batch) with the VM's memo as it is now:
 * copied for a second thread, or borrowed when the VM itself reads the part while its
 * memo stands still. NULL when out of memory. */
split_worker *ms__split_part_new(ms_vm *vm, const uint8_t *at, bool borrow_memo);
/* Frees the part and its steal, if any. */
void ms__split_part_free(split_worker *w);
/* A part from `at` with a memo as given: copied, or borrowed from whoever outlives the
 * part and leaves the memo unchanged meanwhile. NULL when out of memory. */
split_worker *ms__split_part_with(const entry_shape *shape, const uint8_t *at,
                                  const uint8_t *end, uint64_t max_string, bool release_pages,
                                  const uint32_t *memo, size_t memo_len, uint64_t memo_gen,
                                  bool borrow_memo);
/* Reads whole batches from w->start until something it does not read, the end of the
 * list, or the batch boundary stop_at; then sets `finished`. */
void ms__split_read_part(split_worker *w);
/* A batch boundary at or after `from` (searched in a window of bounded size), or NULL. */
const uint8_t *ms__split_find_boundary(const uint8_t *lo, const uint8_t *from,
                                       const uint8_t *end, const entry_shape *sh);

#endif
