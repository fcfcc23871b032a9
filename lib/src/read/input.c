#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 MiB keeps the working set in cache and the resident size small, while making
 * read() calls rare enough not to matter. */
#define WINDOW_SIZE ((size_t)1 << 20)
#define ZBUF_SIZE ((size_t)1 << 18)

static int setup_gzip(ms_input *in, ms_error *err)
{
    memset(&in->z, 0, sizeof in->z);
    /* 16 + MAX_WBITS: expect a gzip header and trailer. */
    if (inflateInit2(&in->z, 16 + MAX_WBITS) != Z_OK)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "cannot start gzip decoder");
    in->gzip = true;
    in->known_size = -1;
    return 0;
}

/* Reads up to cap raw bytes from the underlying source. */
static int raw_read(ms_input *in, uint8_t *dst, size_t cap, size_t *got, ms_error *err)
{
    *got = 0;
    if (in->fd < 0) {
        size_t left = in->mem_len - in->mem_pos;
        size_t n = left < cap ? left : cap;
        memcpy(dst, in->mem + in->mem_pos, n);
        in->mem_pos += n;
        *got = n;
        return 0;
    }
    for (;;) {
        ssize_t r = read(in->fd, dst, cap);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ms__fail(err, MS_ERR_IO, MS_NO_OFFSET, "read failed: %s", strerror(errno));
        *got = (size_t)r;
        return 0;
    }
}

int ms__input_open_file(ms_input *in, const char *path, uint64_t max_item, ms_error *err)
{
    memset(in, 0, sizeof *in);
    in->fd = -1;
    in->known_size = -1;
    in->max_window = max_item + 64;
    if (strcmp(path, "-") == 0) {
        in->fd = 0;
    } else {
        in->fd = open(path, O_RDONLY);
        if (in->fd < 0)
            return ms__fail(err, MS_ERR_IO, MS_NO_OFFSET, "cannot open: %s", strerror(errno));
        in->close_fd = true;
        struct stat st;
        if (fstat(in->fd, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                return ms__fail(err, MS_ERR_IO, MS_NO_OFFSET, "is a directory");
            if (S_ISREG(st.st_mode))
                in->known_size = (int64_t)st.st_size;
        }
    }
    /* A plain file is mapped rather than read: the parser works on the page cache
     * directly, with no copy into a buffer. Pages behind the parser are handed back as it
     * goes (ms__input_release), so the mapping never holds more than a few MiB. */
    if (in->known_size >= 2 && (uint64_t)in->known_size <= SIZE_MAX) {
        void *map = mmap(NULL, (size_t)in->known_size, PROT_READ, MAP_PRIVATE, in->fd, 0);
        if (map != MAP_FAILED) {
            const uint8_t *m = map;
            if (!(m[0] == 0x1f && m[1] == 0x8b)) {
                (void)madvise(map, (size_t)in->known_size, MADV_SEQUENTIAL);
                in->map = m;
                in->map_len = (size_t)in->known_size;
                in->released = m;
                in->window_base = in->pos = m;
                in->end = m + in->map_len;
                in->source_eof = true;
                return 0;
            }
            munmap(map, (size_t)in->known_size); /* gzip: inflate through the window */
        }
    }
    in->window_cap = WINDOW_SIZE;
    in->window = malloc(in->window_cap);
    if (!in->window)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    in->window_base = in->pos = in->end = in->window;

    /* Peek at the first two bytes to recognise gzip. */
    size_t got = 0, n;
    while (got < 2) {
        int rc = raw_read(in, in->window + got, 2 - got, &n, err);
        if (rc)
            return rc;
        if (n == 0)
            break;
        got += n;
    }
    if (got == 2 && in->window[0] == 0x1f && in->window[1] == 0x8b) {
        int rc = setup_gzip(in, err);
        if (rc)
            return rc;
        in->zbuf_cap = ZBUF_SIZE;
        in->zbuf = malloc(in->zbuf_cap);
        if (!in->zbuf)
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        memcpy(in->zbuf, in->window, 2);
        in->z.next_in = in->zbuf;
        in->z.avail_in = 2;
    } else {
        in->end = in->window + got;
        if (got < 2)
            in->source_eof = true;
    }
    return 0;
}

int ms__input_open_memory(ms_input *in, const void *data, size_t len, uint64_t max_item,
                          ms_error *err)
{
    memset(in, 0, sizeof *in);
    in->fd = -1;
    in->mem = data;
    in->mem_len = len;
    in->max_window = max_item + 64;
    if (len >= 2 && in->mem[0] == 0x1f && in->mem[1] == 0x8b) {
        int rc = setup_gzip(in, err);
        if (rc)
            return rc;
        /* zlib reads the compressed bytes in place. */
        in->z.next_in = (Bytef *)(uintptr_t)in->mem;
        in->z.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
        in->mem_pos = in->z.avail_in;
        in->window_cap = WINDOW_SIZE;
        in->window = malloc(in->window_cap);
        if (!in->window)
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        in->window_base = in->pos = in->end = in->window;
        return 0;
    }
    /* Plain memory is parsed in place: the window is the whole buffer. */
    in->window_base = in->pos = in->mem;
    in->end = in->mem + len;
    in->source_eof = true;
    in->known_size = (int64_t)len;
    in->mem_pos = len;
    return 0;
}

void ms__input_release_slow(ms_input *in)
{
    /* Whole pages only, and a page of slack behind the parser. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (uintptr_t)in->released & ~(page - 1);
    uintptr_t to = ((uintptr_t)in->pos - page) & ~(page - 1);
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_DONTNEED);
    in->released = (const uint8_t *)to;
}

void ms__input_close(ms_input *in)
{
    if (in->map)
        munmap((void *)(uintptr_t)in->map, in->map_len);
    if (in->gzip)
        inflateEnd(&in->z);
    if (in->close_fd && in->fd >= 0)
        close(in->fd);
    free(in->window);
    free(in->zbuf);
    memset(in, 0, sizeof *in);
    in->fd = -1;
}

/* A decompression bomb, or more streamed input than anyone meant (docs/security.md). */
static int too_much(ms_input *in, ms_error *err)
{
    if (in->max_input_bytes && in->produced_out > in->max_input_bytes)
        return ms__fail(err, MS_ERR_LIMIT, ms__input_offset(in, in->end),
                        "input yields more than %llu bytes (the limit for compressed and "
                        "standard input; raise it with memsnap --max-input SIZE)",
                        (unsigned long long)in->max_input_bytes);
    return ms__fail(err, MS_ERR_LIMIT, ms__input_offset(in, in->end),
                    "gzip input expands more than %llux (%llu bytes from %llu compressed; "
                    "raise the limit with memsnap --max-input SIZE)",
                    (unsigned long long)in->max_expansion, (unsigned long long)in->produced_out,
                    (unsigned long long)in->compressed_in);
}

/* Appends decompressed or raw bytes after `end` in the window, up to its capacity. */
static int fill(ms_input *in, ms_error *err)
{
    uint8_t *w = in->window;
    uint8_t *dst = (uint8_t *)(uintptr_t)in->end;
    size_t room = in->window_cap - (size_t)(dst - w);
    if (room == 0)
        return 0;
    if (!in->gzip) {
        size_t got;
        int rc = raw_read(in, dst, room, &got, err);
        if (rc)
            return rc;
        if (got == 0)
            in->source_eof = true;
        in->end = dst + got;
        /* A pipe has no size to judge it by: only the absolute ceiling applies. */
        in->produced_out += got;
        if (in->known_size < 0 && in->max_input_bytes && in->produced_out > in->max_input_bytes)
            return too_much(in, err);
        return 0;
    }
    if (in->z_done) {
        in->source_eof = true;
        return 0;
    }
    in->z.next_out = dst;
    in->z.avail_out = (uInt)(room > UINT32_MAX ? UINT32_MAX : room);
    while (in->z.avail_out > 0) {
        if (in->z.avail_in == 0) {
            if (in->fd < 0) {
                size_t left = in->mem_len - in->mem_pos;
                if (left == 0)
                    break;
                size_t n = left > UINT32_MAX ? UINT32_MAX : left;
                in->z.next_in = (Bytef *)(uintptr_t)(in->mem + in->mem_pos);
                in->z.avail_in = (uInt)n;
                in->mem_pos += n;
                in->compressed_in += n;
            } else {
                size_t got;
                int rc = raw_read(in, in->zbuf, in->zbuf_cap, &got, err);
                if (rc)
                    return rc;
                if (got == 0)
                    break;
                in->z.next_in = in->zbuf;
                in->z.avail_in = (uInt)got;
                in->compressed_in += got;
            }
        }
        int zr = inflate(&in->z, Z_NO_FLUSH);
        if (zr == Z_STREAM_END) {
            /* Concatenated gzip members form one stream, as gzip(1) reads them. */
            if (in->z.avail_in > 0 || (in->fd < 0 && in->mem_pos < in->mem_len)) {
                if (inflateReset(&in->z) != Z_OK)
                    return ms__fail(err, MS_ERR_GZIP, ms__input_offset(in, in->end),
                                    "gzip: cannot continue after member");
                continue;
            }
            in->z_done = true;
            break;
        }
        if (zr == Z_BUF_ERROR)
            break;
        if (zr != Z_OK)
            return ms__fail(err, MS_ERR_GZIP, ms__input_offset(in, in->end),
                            "gzip: %s at compressed byte %lu (offset is in the decompressed data)",
                            in->z.msg ? in->z.msg : "corrupt data", (unsigned long)in->z.total_in);
    }
    size_t produced = room - in->z.avail_out;
    if (produced == 0 && !in->z_done) {
        /* No progress and no more input: the compressed stream was cut short. */
        return ms__fail(err, MS_ERR_GZIP, ms__input_offset(in, in->end),
                        "gzip: compressed stream ends early after %lu bytes (offset is in the "
                        "decompressed data)",
                        (unsigned long)in->z.total_in);
    }
    if (produced == 0)
        in->source_eof = true;
    in->end = dst + produced;
    in->produced_out += produced;
    if ((in->max_input_bytes && in->produced_out > in->max_input_bytes) ||
        (in->max_expansion &&
         in->produced_out > in->max_expansion * in->compressed_in + ((uint64_t)64 << 20)))
        return too_much(in, err);
    return 0;
}

int ms__input_need(ms_input *in, size_t n, ms_error *err)
{
    size_t have = (size_t)(in->end - in->pos);
    if (have >= n)
        return 0;
    int64_t here = ms__input_offset(in, in->pos);
    if (in->known_size >= 0 && (uint64_t)in->known_size - (uint64_t)here < n)
        return ms__fail(err, MS_ERR_TRUNCATED, here,
                        "input ends early: %zu bytes needed, %lld left", n,
                        (long long)(in->known_size - here));
    if (in->window == NULL || in->source_eof)
        return ms__fail(err, MS_ERR_TRUNCATED, here, "input ends early: %zu bytes needed, %zu left",
                        n, have);
    if (n > in->max_window)
        return ms__fail(err, MS_ERR_LIMIT, here, "item of %zu bytes exceeds the limit", n);
    /* Slide the unread bytes to the front, then read until n bytes are there. The
     * window only grows as data actually arrives, so a huge length field in a short
     * stream fails as truncated instead of allocating. */
    memmove(in->window, in->pos, have);
    in->window_offset = here;
    in->window_base = in->window;
    in->pos = in->window;
    in->end = in->window + have;
    while ((size_t)(in->end - in->pos) < n) {
        if ((size_t)(in->end - in->window) == in->window_cap) {
            size_t used = (size_t)(in->end - in->window);
            size_t cap = in->window_cap;
            if (!ms__grow((void **)&in->window, &cap, used + (used < n ? used : n), 1))
                return ms__fail(err, MS_ERR_NOMEM, here, "out of memory for a %zu-byte item", n);
            in->window_cap = cap;
            in->window_base = in->pos = in->window;
            in->end = in->window + used;
        }
        const uint8_t *before = in->end;
        int rc = fill(in, err);
        if (rc)
            return rc;
        if (in->end == before && in->source_eof)
            return ms__fail(err, MS_ERR_TRUNCATED, here,
                            "input ends early: %zu bytes needed, %zu left", n,
                            (size_t)(in->end - in->pos));
    }
    return 0;
}
