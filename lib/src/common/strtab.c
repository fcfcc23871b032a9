#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* FNV-1a: strings here are short (keys, names, paths), so a simple byte hash wins. */
static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

void ms__strtab_init(ms_strtab *t)
{
    memset(t, 0, sizeof *t);
}

void ms__strtab_free(ms_strtab *t)
{
    free(t->bytes);
    free(t->offsets);
    free(t->lengths);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static bool rehash(ms_strtab *t, size_t nslots)
{
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return false;
    for (size_t id = 0; id < t->count; id++) {
        uint64_t h = hash_bytes(t->bytes + t->offsets[id], t->lengths[id]);
        size_t i = (size_t)h & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = (uint32_t)id + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return true;
}

uint32_t ms__strtab_intern(ms_strtab *t, const char *data, size_t len)
{
    if (len > UINT32_MAX - 1)
        return UINT32_MAX;
    if (t->nslots == 0 && !rehash(t, 1024))
        return UINT32_MAX;
    uint64_t h = hash_bytes(data, len);
    size_t i = (size_t)h & (t->nslots - 1);
    for (;;) {
        uint32_t s = t->slots[i];
        if (!s)
            break;
        uint32_t id = s - 1;
        if (t->lengths[id] == len && memcmp(t->bytes + t->offsets[id], data, len) == 0)
            return id;
        i = (i + 1) & (t->nslots - 1);
    }
    if (t->count >= UINT32_MAX - 2)
        return UINT32_MAX;
    size_t need;
    if (!ms__add(t->bytes_len, len + 1, &need) ||
        !ms__grow((void **)&t->bytes, &t->bytes_cap, need, 1))
        return UINT32_MAX;
    size_t cap_o = t->cap, cap_l = t->cap;
    if (!ms__grow((void **)&t->offsets, &cap_o, t->count + 1, sizeof *t->offsets) ||
        !ms__grow((void **)&t->lengths, &cap_l, t->count + 1, sizeof *t->lengths))
        return UINT32_MAX;
    t->cap = cap_o < cap_l ? cap_o : cap_l;
    uint32_t id = (uint32_t)t->count;
    if (len)
        memcpy(t->bytes + t->bytes_len, data, len);
    t->bytes[t->bytes_len + len] = '\0';
    t->offsets[id] = t->bytes_len;
    t->lengths[id] = (uint32_t)len;
    t->bytes_len += len + 1;
    t->count++;
    t->slots[i] = id + 1;
    /* Keep the load factor under one half so probes stay short. */
    if (t->count * 2 > t->nslots && !rehash(t, t->nslots * 2))
        return UINT32_MAX;
    return id;
}

bool ms__id_table_rehash(uint32_t **slots, size_t *nslots, size_t first_size, size_t count,
                         uint64_t (*hash)(const void *ctx, size_t id), const void *ctx)
{
    size_t n = *nslots ? *nslots * 2 : first_size;
    uint32_t *t = calloc(n, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < count; i++) {
        size_t j = (size_t)hash(ctx, i) & (n - 1);
        while (t[j])
            j = (j + 1) & (n - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(*slots);
    *slots = t;
    *nslots = n;
    return true;
}
