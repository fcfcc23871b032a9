/* Not a test: a floor for tests/bench/bench.sh. What any reader of a snapshot pays on
 * this machine before it parses anything, done the way memsnap reads: the file mapped,
 * split in two halves, one thread a half, every byte looked at once, the mapped pages
 * behind each thread handed back every 2 MiB (MADV_DONTNEED), and, given an event
 * count, 31 bytes an event written into fresh memory, what memsnap's trace arrays take.
 *
 * `cat` copies the file through a small buffer on one core and keeps nothing; this adds
 * what a reader cannot avoid (a second thread, the page-table work of the mapping and of
 * the release, and the model's first-touch page faults), and no more: the bytes are only
 * summed, four independent 64-bit lanes at a time, so the loop runs at the memory's
 * speed rather than at a dependency chain's. memsnap's `summary` minus this is the cost
 * of its parsing and its analyses.
 *
 *   cc -O2 -pthread -o floor tests/bench/floor.c && ./floor FILE [EVENTS]
 *
 * Prints the sum. Exit 2 on a file it cannot map, or bad arguments. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RELEASE_STEP ((size_t)2 << 20)
#define EVENT_BYTES 31

typedef struct half {
    const uint8_t *p;
    size_t n;
    size_t events; /* model records to write over this half; 0: none */
    uint64_t sum;
    int failed;
} half;

static uint64_t word(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void *read_half(void *arg)
{
    half *h = arg;
    const uint8_t *p = h->p, *end = h->p + h->n, *released = h->p;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uint8_t *model = NULL;
    if (h->events && !(model = malloc(h->events * EVENT_BYTES))) {
        h->failed = ENOMEM;
        return NULL;
    }
    /* One record every `stride` bytes, so the model's pages are first touched as the
     * reading goes, as a parser's would be. */
    const size_t stride = h->events ? (h->n / h->events) & ~(size_t)31 : 0;
    size_t next_rec = stride, k = 0;
    uint64_t a = 0, b = 0, c = 0, d = 0;
    while (end - p >= 32) {
        a += word(p);
        b ^= word(p + 8);
        c += word(p + 16);
        d ^= word(p + 24);
        p += 32;
        if (stride && (size_t)(p - h->p) >= next_rec && k < h->events) {
            uint8_t *r = model + k * EVENT_BYTES;
            memcpy(r, &a, 8);
            memcpy(r + 8, &b, 8);
            memcpy(r + 16, &c, 8);
            memcpy(r + 24, &d, EVENT_BYTES - 24);
            k++;
            next_rec += stride;
        }
        if ((size_t)(p - released) >= RELEASE_STEP) {
            const uintptr_t to = ((uintptr_t)p - page) & ~(page - 1);
            if (to > (uintptr_t)released) {
                (void)madvise((void *)(uintptr_t)released, to - (uintptr_t)released, MADV_DONTNEED);
                released = (const uint8_t *)to;
            }
        }
    }
    while (p < end)
        a += *p++;
    h->sum = a ^ b ^ c ^ d;
    for (size_t i = 0; i < k; i += 4096 / EVENT_BYTES)
        h->sum += model[i * EVENT_BYTES];
    free(model);
    return NULL;
}

int main(int argc, char **argv)
{
    char *tail = NULL;
    const unsigned long long events = argc == 3 ? strtoull(argv[2], &tail, 10) : 0;
    /* strtoull takes "-1" for 2^64 - 1; a count past what memory can hold would
     * overflow the model's size. */
    if ((argc != 2 && argc != 3) ||
        (argc == 3 && (!*argv[2] || *tail || *argv[2] == '-' || events > SIZE_MAX / EVENT_BYTES))) {
        fprintf(stderr, "usage: floor FILE [EVENTS]\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 64) {
        fprintf(stderr, "%s: cannot read (or under 64 bytes)\n", argv[1]);
        return 2;
    }
    const size_t n = (size_t)st.st_size;
    const uint8_t *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    (void)madvise((void *)(uintptr_t)m, n, MADV_SEQUENTIAL);
    const size_t cut = n / 2 & ~(size_t)4095;
    half first = {m, cut, (size_t)(events / 2), 0, 0};
    half second = {m + cut, n - cut, (size_t)(events - events / 2), 0, 0};
    pthread_t t;
    const int threaded = pthread_create(&t, NULL, read_half, &second) == 0;
    read_half(&first);
    if (threaded)
        pthread_join(t, NULL);
    else
        read_half(&second);
    if (first.failed || second.failed) {
        fprintf(stderr, "floor: out of memory for %llu events\n", events);
        return 2;
    }
    munmap((void *)(uintptr_t)m, n);
    close(fd);
    printf("%llu\n", (unsigned long long)(first.sum ^ second.sum));
    return 0;
}
