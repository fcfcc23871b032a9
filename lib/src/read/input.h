/* A forward-only byte source over a file, standard input or memory, inflating gzip
 * transparently. The pickle VM reads straight from `buf` and asks for more with
 * ms__input_need(), so a file of any size is parsed in a fixed-size window. */
#ifndef MEMSNAP_INPUT_H
#define MEMSNAP_INPUT_H

#include <stdio.h>
#include <zlib.h>

#include "internal.h"

typedef struct ms_input {
    const uint8_t *pos, *end;  /* unread bytes of the current window */
    uint8_t *window;           /* owned window (NULL when reading memory directly) */
    size_t window_cap;
    int64_t window_offset;     /* input offset of window[0] (or of the memory start) */
    const uint8_t *window_base;

    int fd;                    /* -1 for memory input */
    bool close_fd;
    bool source_eof;
    int64_t known_size;        /* total size when known in advance (plain files), else -1 */

    bool gzip;
    z_stream z;
    uint8_t *zbuf;             /* compressed bytes read from fd */
    size_t zbuf_cap;
    const uint8_t *mem;        /* memory input */
    size_t mem_len, mem_pos;
    bool z_done;
    uint64_t max_window;       /* largest single item the window may grow to hold */
    const uint8_t *map;        /* a mapped plain file (then window is NULL) */
    size_t map_len;
    const uint8_t *released;   /* mapped pages before this are handed back */
    /* Ceilings on what a gzip or streamed input may yield (ms_limits; 0: none), and the
     * bytes counted against them. */
    uint64_t max_expansion, max_input_bytes;
    uint64_t compressed_in, produced_out;
} ms_input;

int ms__input_open_file(ms_input *in, const char *path, uint64_t max_item, ms_error *err);
int ms__input_open_memory(ms_input *in, const void *data, size_t len, uint64_t max_item,
                          ms_error *err);
void ms__input_close(ms_input *in);

/* Offset of *pos in the (decompressed) input. */
static inline int64_t ms__input_offset(const ms_input *in, const uint8_t *p)
{
    return in->window_offset + (int64_t)(p - in->window_base);
}

/* Makes at least n bytes available at in->pos (moving the window; pointers into the
 * old window become invalid). Returns 0, or MS_ERR_TRUNCATED/IO/GZIP/LIMIT. */
int ms__input_need(ms_input *in, size_t n, ms_error *err);

/* Hands mapped pages the parser has passed back to the kernel, so a mapped file adds
 * only a few MiB to the resident size. Cheap to call often. */
void ms__input_release_slow(ms_input *in);
#define MS_INPUT_RELEASE_STEP ((size_t)2 << 20)
static inline void ms__input_release(ms_input *in)
{
    if (in->map && (size_t)(in->pos - in->released) > MS_INPUT_RELEASE_STEP)
        ms__input_release_slow(in);
}

#endif
