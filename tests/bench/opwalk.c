/* Not a test: a reference point for tests/bench/bench.sh. Decodes every opcode of a pickle
 * (its argument's length, one switch per opcode), on one core, and builds nothing: what a
 * reader that looks at the file one opcode at a time pays before it keeps anything.
 * memsnap's readers do not: they match whole trace entries and frames lists against
 * bytes they have seen (docs/architecture.md), so this is not a floor for them, but it
 * shows what the file holds (the opcode count) and what decoding it one by one costs.
 *
 *   cc -O2 -o opwalk tests/bench/opwalk.c && ./opwalk FILE
 *
 * Prints the opcode count and the memo references among them. Exit 2, with the offset,
 * on an opcode it does not know or an argument past the end. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    memcpy(&v, p, (size_t)n); /* little-endian hosts only, as bench.sh's machines */
    return v;
}

/* Past an argument of `k` bytes; NULL when it runs past `end`. */
static const uint8_t *fixed(const uint8_t *p, const uint8_t *end, int k)
{
    return end - p < k ? NULL : p + k;
}

/* Past a length of `k` bytes and the bytes it counts; NULL when they run past `end`. */
static const uint8_t *counted(const uint8_t *p, const uint8_t *end, int k)
{
    if (end - p < k)
        return NULL;
    uint64_t len = le(p, k);
    p += k;
    return len > (uint64_t)(end - p) ? NULL : p + len;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: opwalk FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        perror(argv[1]);
        return 2;
    }
    size_t n = (size_t)st.st_size;
    const uint8_t *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    (void)madvise((void *)m, n, MADV_SEQUENTIAL);
    const uint8_t *p = m, *end = m + n;
    uint64_t ops = 0, gets = 0;
    const uint8_t *at = m; /* the opcode being decoded */
    while (p < end) {
        at = p;
        const uint8_t op = *p++;
        ops++;
        switch (op) {
        case '(': case ')': case '0': case '1': case '2': case 'N': case 'Q': case 'R':
        case 'a': case 'b': case 'd': case 'e': case 'l': case ']': case 'o': case 's':
        case 't': case 'u': case '}': case 0x81: case 0x85: case 0x86: case 0x87:
        case 0x88: case 0x89: case 0x8f: case 0x90: case 0x91: case 0x92: case 0x93:
        case 0x94: case 0x97: case 0x98:
            continue;
        case '.':
            printf("%llu opcodes, %llu memo references, %zu bytes\n", (unsigned long long)ops,
                   (unsigned long long)gets, n);
            return 0;
        case 'h':
            gets++;
            p = fixed(p, end, 1);
            break;
        case 'j':
            gets++;
            p = fixed(p, end, 4);
            break;
        case 'K': case 'q': case 0x80: case 0x82:
            p = fixed(p, end, 1);
            break;
        case 'M': case 0x83:
            p = fixed(p, end, 2);
            break;
        case 'J': case 'r': case 0x84:
            p = fixed(p, end, 4);
            break;
        case 'G': case 0x95:
            p = fixed(p, end, 8);
            break;
        case 'U': case 'C': case 0x8a: case 0x8c:
            p = counted(p, end, 1);
            break;
        case 'T': case 'X': case 'B': case 0x8b:
            p = counted(p, end, 4);
            break;
        case 0x8d: case 0x8e: case 0x96:
            p = counted(p, end, 8);
            break;
        case 'c': case 'i': /* two lines */
        case 'I': case 'L': case 'F': case 'S': case 'V': case 'P': case 'p': case 'g':
            for (int lines = op == 'c' || op == 'i' ? 2 : 1; lines > 0; lines--) {
                const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
                if (!nl)
                    goto short_arg;
                p = nl + 1;
            }
            continue;
        default:
            fprintf(stderr, "opwalk: unknown opcode 0x%02x at byte %zu\n", op, (size_t)(at - m));
            return 2;
        }
        if (!p) /* an argument past the end */
            goto short_arg;
    }
    fprintf(stderr, "opwalk: no STOP opcode before the end (byte %zu)\n", n);
    return 2;
short_arg:
    fprintf(stderr, "opwalk: the file ends inside the opcode at byte %zu\n", (size_t)(at - m));
    return 2;
}
