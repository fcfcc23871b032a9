#include "addrmap.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

bool ms__addrmap_init(ms_addrmap *m, size_t want)
{
    size_t cap = 16, bytes;
    while (cap / 2 < want) {
        if (cap > SIZE_MAX / 4)
            return false;
        cap *= 2;
    }
    memset(m, 0, sizeof *m);
    if (!ms__mul(cap, sizeof *m->keys, &bytes))
        return false;
    m->keys = malloc(bytes);
    m->vals = malloc(cap * sizeof *m->vals);
    if (!m->keys || !m->vals) {
        ms__addrmap_free(m);
        return false;
    }
    memset(m->vals, 0xff, cap * sizeof *m->vals); /* every slot MS_ADDRMAP_NONE */
    m->mask = cap - 1;
    return true;
}

void ms__addrmap_free(ms_addrmap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->mask = m->count = 0;
}

bool ms__addrmap_grow(ms_addrmap *m)
{
    ms_addrmap n;
    if (!ms__addrmap_init(&n, m->mask + 1))
        return false;
    /* In slot order, so the new layout depends only on the old one. */
    for (size_t i = 0; i <= m->mask; i++) {
        if (m->vals[i] == MS_ADDRMAP_NONE)
            continue;
        size_t j = ms__addrmap_home(&n, m->keys[i]);
        while (n.vals[j] != MS_ADDRMAP_NONE)
            j = (j + 1) & n.mask;
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
    }
    n.count = m->count;
    n.dense = m->dense;
    ms__addrmap_free(m);
    *m = n;
    return true;
}
