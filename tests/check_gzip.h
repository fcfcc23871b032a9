/* A gzip member of a buffer, made in memory the way `gzip -6` writes one, for the tests
 * of compressed input (test_bad_input, test_limits). */
#ifndef MEMSNAP_TESTS_CHECK_GZIP_H
#define MEMSNAP_TESTS_CHECK_GZIP_H

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"

/* The gzip form of data[0..len) (caller frees), its length in *zn; NULL on failure. */
static inline unsigned char *check_gzip(const unsigned char *data, size_t len, size_t *zn)
{
    uLongf cap = compressBound((uLong)len) + 64;
    unsigned char *z = malloc(cap);
    if (!z)
        return NULL;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    zs.next_in = (unsigned char *)data;
    zs.avail_in = (uInt)len;
    zs.next_out = z;
    zs.avail_out = (uInt)cap;
    CHECK_EQ_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
    *zn = zs.total_out;
    deflateEnd(&zs);
    return z;
}

#endif
