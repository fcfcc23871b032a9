/* Huge pages for the big per-event and per-allocation arrays of the analyses: where the
 * system gives them on request only (transparent_hugepage "madvise"), an array of
 * hundreds of megabytes otherwise costs one page fault per 4 KiB when first written. */
#ifndef MEMSNAP_BIGMEM_H
#define MEMSNAP_BIGMEM_H

#include <stddef.h>
#include <stdint.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Asks for huge pages under [p, p + bytes) (the whole 2 MiB pages inside it); a hint,
 * without effect where unsupported or below a few huge pages. */
static inline void ms__advise_huge(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (!p || bytes < 4 * huge)
        return;
    uintptr_t from = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t to = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

#endif
