/* The comparators of plain values every module's qsort shares (order.h). */
#include <stdint.h>

#include "order.h"

int ms__cmp_u32(const void *a, const void *b)
{
    return MS__CMP(*(const uint32_t *)a, *(const uint32_t *)b);
}

int ms__cmp_u64(const void *a, const void *b)
{
    return MS__CMP(*(const uint64_t *)a, *(const uint64_t *)b);
}

int ms__cmp_i64(const void *a, const void *b)
{
    return MS__CMP(*(const int64_t *)a, *(const int64_t *)b);
}

int ms__cmp_double(const void *a, const void *b)
{
    return MS__CMP(*(const double *)a, *(const double *)b);
}

size_t ms__lower_u64(const uint64_t *v, size_t n, uint64_t key)
{
    size_t at;
    MS__PARTITION(at, n, mid, v[mid] < key);
    return at;
}

size_t ms__lower_bound(const void *base, size_t n, size_t size, const void *key,
                       int (*cmp)(const void *, const void *))
{
    size_t at;
    MS__PARTITION(at, n, mid, cmp((const char *)base + mid * size, key) < 0);
    return at;
}
