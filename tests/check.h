/* A small test harness: each failed check prints both sides and where, then the test
 * keeps going so one run shows every failure. main() returns check_finish(). */
#ifndef MEMSNAP_TEST_CHECK_H
#define MEMSNAP_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures = 0;
static int check_count = 0;

#define CHECK_TRUE(cond)                                                          \
    do {                                                                          \
        check_count++;                                                            \
        if (!(cond)) {                                                            \
            check_failures++;                                                     \
            fprintf(stderr, "%s:%d: CHECK_TRUE(%s) failed\n", __FILE__, __LINE__, #cond); \
        }                                                                         \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                \
    do {                                                                                  \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                   \
        check_count++;                                                                    \
        if (check_a_ != check_b_) {                                                       \
            check_failures++;                                                             \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, \
                    #b, check_a_, check_b_);                                              \
        }                                                                                 \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                 \
    do {                                                                                   \
        const char *check_a_ = (a), *check_b_ = (b);                                       \
        check_count++;                                                                     \
        if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) {                   \
            check_failures++;                                                              \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, \
                    #a, #b, check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)"); \
        }                                                                                  \
    } while (0)

static inline int check_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

/* Reads a whole file; NULL when it cannot. */
static inline unsigned char *check_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

#endif
