/* The library's one hash map from a 64-bit key to a 32-bit value: block addresses to
 * records while replaying millions of events (timeline, allocator, the live curve), and
 * two ids packed into one key (the leak groups). Open addressing with linear probing and
 * backward-shift deletion, so lookups stay short without tombstones piling up over
 * millions of frees. The probe loops are inline: they run once or twice per event.
 *
 * Any key may be stored (0 included); MS_ADDRMAP_NONE is the one value that may not,
 * it marks an empty slot. Walking the slots (0..mask, vals[j] != MS_ADDRMAP_NONE) gives
 * the entries in an order fixed by the keys and the order of inserts and removals. */
#ifndef MEMSNAP_ADDRMAP_H
#define MEMSNAP_ADDRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_ADDRMAP_NONE UINT32_MAX

typedef struct ms_addrmap {
    uint64_t *keys;
    uint32_t *vals; /* MS_ADDRMAP_NONE: an empty slot */
    size_t mask;    /* slots - 1; the slot count is a power of two */
    size_t count;
    /* Fill slots to three quarters before growing, not half: for a map only looked up
     * (the allocator replay's blocks), whose slot order no output reads. Half the
     * memory at the size where the replay peaks (an OOM after each of 300,000
     * never-freed allocations: 6.3 MB of slots, not 12.6 MB, and 9.4 MB while
     * growing, not 18.9 MB), for probes that stay short at that load. Set after init. */
    bool dense;
} ms_addrmap;

/* Room for `want` entries before the first growth (at least 8). False when out of
 * memory, with nothing to free. */
bool ms__addrmap_init(ms_addrmap *m, size_t want);
void ms__addrmap_free(ms_addrmap *m);
/* Doubles the slots; false when out of memory, the map unchanged. */
bool ms__addrmap_grow(ms_addrmap *m);

/* Multiplicative hashing: block addresses are multiples of 512, so the low bits carry
 * nothing and the middle bits of the product spread them best. */
static inline size_t ms__addrmap_home(const ms_addrmap *m, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & m->mask;
}

/* The slot holding key, or SIZE_MAX. */
static inline size_t ms__addrmap_find(const ms_addrmap *m, uint64_t key)
{
    for (size_t j = ms__addrmap_home(m, key); m->vals[j] != MS_ADDRMAP_NONE; j = (j + 1) & m->mask)
        if (m->keys[j] == key)
            return j;
    return SIZE_MAX;
}

/* The value of key, or MS_ADDRMAP_NONE. */
static inline uint32_t ms__addrmap_get(const ms_addrmap *m, uint64_t key)
{
    size_t j = ms__addrmap_find(m, key);
    return j == SIZE_MAX ? MS_ADDRMAP_NONE : m->vals[j];
}

/* Sets key to val (val != MS_ADDRMAP_NONE), adding it when new. False when out of
 * memory, the map unchanged. */
static inline bool ms__addrmap_put(ms_addrmap *m, uint64_t key, uint32_t val)
{
    size_t room = m->dense ? (m->mask + 1) / 4 * 3 : (m->mask + 1) / 2;
    if (m->count + 1 > room && !ms__addrmap_grow(m))
        return false;
    size_t j = ms__addrmap_home(m, key);
    for (; m->vals[j] != MS_ADDRMAP_NONE; j = (j + 1) & m->mask) {
        if (m->keys[j] == key) {
            m->vals[j] = val;
            return true;
        }
    }
    m->keys[j] = key;
    m->vals[j] = val;
    m->count++;
    return true;
}

/* Empties slot j (one that holds an entry), moving later entries of its probe run back
 * so that every entry stays reachable from its home slot. */
static inline void ms__addrmap_remove_at(ms_addrmap *m, size_t j)
{
    size_t hole = j;
    for (size_t k = (j + 1) & m->mask; m->vals[k] != MS_ADDRMAP_NONE; k = (k + 1) & m->mask) {
        size_t home = ms__addrmap_home(m, m->keys[k]);
        /* Move k into the hole unless its home lies cyclically in (hole, k]. */
        bool stays = hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
        if (!stays) {
            m->keys[hole] = m->keys[k];
            m->vals[hole] = m->vals[k];
            hole = k;
        }
    }
    m->vals[hole] = MS_ADDRMAP_NONE;
    m->count--;
}

#endif
