/* Reading pickle opcodes' little-endian arguments straight from a byte buffer, shared by
 * the VM's fast reader and the split reader (split_reader.c). */
#ifndef MEMSNAP_PICKLE_BYTES_H
#define MEMSNAP_PICKLE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Eight bytes as a little-endian word (one load on the machines that matter). */
static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--)
        w = w << 8 | p[i];
    return w;
}

/* An integer opcode at p (BININT1/BININT2/BININT/LONG1 up to 8 bytes, or a bool, which
 * Python treats as an int); returns the bytes it takes, 0 when it is something else.
 * The caller guarantees 10 readable bytes. */
static inline size_t fast_int(const uint8_t *p, int64_t *v)
{
    switch (p[0]) {
    case 'K':
        *v = p[1];
        return 2;
    case 'M':
        *v = (int64_t)(p[1] | (unsigned)p[2] << 8);
        return 3;
    case 'J':
        *v = (int32_t)rd_u32(p + 1);
        return 5;
    case 0x8a: {
        size_t n = p[1];
        if (n > 8)
            return 0;
        /* The caller guarantees 10 bytes: the 8 after the length are readable. */
        uint64_t u = n ? load_le64(p + 2) : 0;
        if (n && n < 8) {
            u &= ((uint64_t)1 << (8 * n)) - 1;
            if (p[1 + n] & 0x80)
                u |= ~(uint64_t)0 << (8 * n);
        }
        *v = (int64_t)u;
        return 2 + n;
    }
    case 0x88:
    case 0x89:
        *v = p[0] == 0x88;
        return 1;
    default:
        return 0;
    }
}

/* A 64-bit mixer (splitmix64's finaliser) and a hash of an id sequence built on it, for
 * the frame and stack tables of both readers. */
static inline uint64_t mix64(uint64_t h)
{
    h ^= h >> 31;
    h *= 0x7fb5d329728ea185ull;
    h ^= h >> 27;
    h *= 0x81dadef4bc2dd44dull;
    return h ^ (h >> 33);
}

static inline uint64_t ids_hash(const uint32_t *ids, size_t n)
{
    uint64_t h = n;
    for (size_t i = 0; i < n; i++)
        h = mix64(h ^ ids[i]) + i;
    return h;
}

/* Frames lists recur byte for byte (a few hundred distinct lists among millions), so
 * both readers remember them by their bytes. These two find and hash such a list. */

/* Length of a run of BINGET/LONG_BINGET starting at p and ending at APPENDS, at most max
 * bytes; 0 when the bytes are anything else. The caller guarantees max + 5 readable
 * bytes, so the loop needs no bounds checks of its own. */
static inline size_t ref_run_length(const uint8_t *p, size_t max)
{
    /* A branch per reference, well predicted more often than not, lets the processor
     * run ahead along the run; stepping by arithmetic instead was measured slower
     * (a longer chain of dependent loads). */
    const uint8_t *q = p, *stop = p + max;
    while (q <= stop) {
        if (q[0] == 'h')
            q += 2;
        else if (q[0] == 'j')
            q += 5;
        else
            return q[0] == 'e' && q != p ? (size_t)(q - p) : 0;
    }
    return 0;
}

/* A hash of n >= 2 bytes, eight at a time (the last word may overlap the one before). */
static inline uint64_t bytes_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            h = (h ^ p[i]) * 0xff51afd7ed558ccdull;
        return h ^ (h >> 32);
    }
    for (size_t i = 0; i + 8 < n; i += 8) {
        h = (h ^ load_le64(p + i)) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    h = (h ^ load_le64(p + n - 8)) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* True when n bytes at p are well-formed UTF-8 (no overlong forms, nothing past U+10FFFF). */
bool ms__utf8_valid(const uint8_t *p, size_t n);

#endif
