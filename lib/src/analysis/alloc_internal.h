/* Private pieces of the allocator replay shared by its files: the simulated allocator's
 * blocks and segments, and the steps the starting state (allocator_start.c) takes with
 * the replay's own rules (allocator.c). */
#ifndef MEMSNAP_ALLOC_INTERNAL_H
#define MEMSNAP_ALLOC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addrmap.h"
#include "internal.h"
#include "memsnap/allocator.h"

#define NIL UINT32_MAX

/* A block's place and state: what every replay reads on every event. What the block
 * holds (blk_who) and its links in the address index (blk_kids) live in arrays beside
 * it, kept only by the replays that read them: a state of 300,000 live blocks held as
 * one 64-byte record each made the peak's totals cost 4.6 times the file. */
typedef struct blk {
    uint64_t addr, size;
    uint32_t prev, next, seg;
    uint8_t state; /* ms_block_state */
    bool estimated;
} blk;

/* What an active block holds, for the replays that hand blocks out (HEAP_WHO). */
typedef struct blk_who {
    uint64_t req;
    int64_t alloc_event;
    uint32_t stack;
} blk_who;

/* Children in the address index, while the index is kept (`indexed`). */
typedef struct blk_kids {
    uint32_t l, r;
} blk_kids;

/* What ms__heap_begin keeps beyond the blocks and the totals. */
enum {
    HEAP_TRACK = 1u << 0, /* the largest free block, current after every event */
    HEAP_WHO = 1u << 1    /* each block's request, alloc event and stack (x->who) */
};

typedef struct seg {
    uint64_t start, end, stream_raw;
    uint32_t first, last;
    bool expandable;
    int8_t pool; /* 0 unknown, 1 small, 2 large: from the first block handed out */
    uint32_t tl, tr; /* children in the live segments' index */
} seg;

typedef struct hsim {
    const ms_snapshot *s;
    blk *b;
    size_t nb, capb;
    blk_who *who;   /* beside b with HEAP_WHO (`keep_who`) */
    size_t capwho;
    bool keep_who;
    blk_kids *kid;  /* beside b while `indexed` */
    size_t capkid;
    uint32_t *freeb;
    size_t nfreeb, capfreeb;
    seg *g;
    size_t ng, capg;
    uint32_t *ord; /* live segment ids by start address, filled from the index by emit */
    size_t nord, capord; /* nord: live segments */
    uint32_t groot;      /* the live segments in a treap by start */
    ms_addrmap map; /* block start address -> block */
    uint32_t root;  /* the address index: a treap of the live blocks, while `indexed` */
    bool indexed;
    uint64_t changes; /* events that touched the state, to share unchanged states */
    uint64_t div[16];
    bool have_div, div_used;
    uint64_t max_split;
    uint64_t bad;  /* inconsistencies */
    bool nomem;
    /* Running totals, kept by every change (the fragmentation series reads them after
     * each event): reserved bytes, and the bytes and count of active blocks. */
    uint64_t reserved, active_bytes, active_count;
    /* The largest free block: with `track`, every block that becomes free or changes
     * size while free is pushed on a max-heap of (size, id), and stale entries are
     * dropped when they reach the top (ms__heap_largest_free). */
    bool track;
    struct lh_entry {
        uint64_t size;
        uint32_t id;
    } *lh;
    size_t nlh, caplh;
    /* The final segments of the device by address (index into the snapshot's), for the
     * pool each emitted segment belongs to. */
    struct fseg_entry {
        uint64_t address;
        size_t index;
    } *fseg;
    size_t nfseg;
} hsim;

/* A deleted block's state: no live block has it. */
#define BLK_DEAD 0xff

/* A treap node's priority: a hash of its id, deterministic and not steerable by the file.
 * Inline: the block index calls it on every insert and erase. */
static inline uint32_t ms__heap_prio(uint32_t i)
{
    uint32_t h = i * 0x9e3779b1u;
    h ^= h >> 15;
    h *= 0x85ebca77u;
    return h ^ (h >> 13);
}

/* qsort order of hsim.fseg: by address, then the file's order (the first wins). */
int ms__heap_by_final_address(const void *a, const void *b);
/* The block a request of `size` gets: its rounding (roundup_power2_divisions in div). */
uint64_t ms__heap_round_with(const uint64_t div[16], bool have_div, uint64_t size);
/* The snapshot's roundup_power2_divisions into div (all 0 and false when it has none):
 * read once by whoever rounds many requests (the replay, leak growth). */
bool ms__heap_divisions(const ms_snapshot *s, uint64_t div[16]);
/* cudaMalloc'd segment, or pages mapped into an expandable segment. */
void ms__heap_seg_add(hsim *x, uint64_t addr, uint64_t size, uint64_t stream_raw, bool exp);
/* Makes [addr, addr+size) a block of its own inside the free block that holds it;
 * returns it, or NIL when no free block holds it. */
uint32_t ms__heap_carve(hsim *x, uint64_t addr, uint64_t size);
/* The replay's state before the trace's first event: settings, starting segments and
 * allocations, running totals; `keep`: HEAP_TRACK and HEAP_WHO. */
int ms__heap_begin(hsim *x, const ms_snapshot *s, int device, unsigned keep, ms_error *err);
void ms__heap_release(hsim *x);
/* Applies trace event i. */
void ms__heap_step(hsim *x, const ms_trace *tr, size_t i);
/* x->ord: the live segments by start; false when out of memory. */
bool ms__heap_ord_fill(hsim *x);
/* The totals and the free blocks' heap from the blocks as they are. */
bool ms__heap_recount(hsim *x);
/* The largest free block now (needs `track`). */
uint64_t ms__heap_largest_free(hsim *x);
/* An estimated block of a large pool's fixed segment takes the free rest of 1 MiB or less
 * that follows it (the allocator would not have split it off). */
void ms__heap_absorb_rest(hsim *x, uint32_t i);
/* The state before the trace's first event (allocator_start.c); 0 or MS_ERR_NOMEM.
 * `first`: per address, the first of its alloc / free events in the trace. */
int ms__heap_build_start(hsim *x, const ms_trace *tr, int device, ms_addrmap *first,
                         ms_error *err);
/* The state right after `event` as ms_heap_build gives it, but with its totals, note
 * and approximate flag only: no segments or blocks (NULL), n_blocks still counted. */
int ms__heap_build_totals(ms_heap *out, const ms_snapshot *s, int device, int64_t event,
                          ms_error *err);

#endif
