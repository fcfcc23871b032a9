/* The library reads no environment: MEMSNAP_MAX_INPUT and MEMSNAP_THREADS are the memsnap
 * tool's (cli/options.c reads them into ms_limits), so a host program's environment can
 * neither loosen a bound nor change how the library works. Each check sets the variables
 * to values that would show, then looks at the limits the library used. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_gzip.h"
#include "internal.h"
#include "memsnap/memsnap.h"

/* testdata/linear_infer.pickle gzip-compressed in memory (*zn bytes; caller frees). */
static unsigned char *gzip_snapshot(size_t *plain_len, size_t *zn)
{
    size_t len;
    unsigned char *data = check_read_file("testdata/linear_infer.pickle", &len);
    CHECK_TRUE(data != NULL);
    if (!data)
        return NULL;
    unsigned char *z = check_gzip(data, len, zn);
    *plain_len = len;
    free(data);
    return z;
}

static void test_defaults_ignore_environment(void)
{
    ms_limits l = ms_limits_default();
    CHECK_EQ_INT(l.max_input_bytes, (uint64_t)64 << 30);
    CHECK_EQ_INT(l.max_expansion, 64);
    CHECK_EQ_INT(l.parallel_min_bytes, (uint64_t)8 << 20);
    CHECK_EQ_INT(l.threads, 2);
}

/* MEMSNAP_MAX_INPUT=1KiB would refuse this gzip input; the library must read it with its
 * own default bound, and refuse it only when the caller passes that bound. */
static void test_max_input_not_from_environment(void)
{
    size_t plain_len = 0, zn = 0;
    unsigned char *z = gzip_snapshot(&plain_len, &zn);
    if (!z)
        return;
    CHECK_TRUE(plain_len > 1024);
    ms_snapshot *s = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_snapshot_read_memory(&s, z, zn, NULL, &err), 0);
    CHECK_TRUE(s != NULL && s->input_bytes == plain_len);
    ms_snapshot_free(s);
    s = NULL;

    /* The same bound passed in is applied: the check above could fail. */
    ms_limits tight = ms_limits_default();
    tight.max_input_bytes = 1024;
    tight.max_expansion = 0;
    CHECK_EQ_INT(ms_snapshot_read_memory(&s, z, zn, &tight, &err), MS_ERR_LIMIT);
    CHECK_TRUE(s == NULL);
    ms_snapshot_free(s);
    free(z);
}

/* MEMSNAP_THREADS=1 would keep the second reading thread out; with the split forced on
 * (parallel_min_bytes = 1, as test_split does) it must still take part, and the snapshot
 * must carry threads = 2 to its analyses. Only limits.threads = 1 turns it off. */
static void test_threads_not_from_environment(void)
{
    ms_limits two = ms_limits_default();
    two.parallel_min_bytes = 1;
    ms_limits one = two;
    one.threads = 1;
    ms_snapshot *a = NULL, *b = NULL, *c = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_snapshot_read_file(&a, "testdata/gpt2_train.pickle", &two, &err), 0);
    CHECK_EQ_INT(ms_snapshot_read_file(&b, "testdata/gpt2_train.pickle", &one, &err), 0);
    CHECK_EQ_INT(ms_snapshot_read_file(&c, "testdata/gpt2_train.pickle", NULL, &err), 0);
    if (a && b && c) {
        CHECK_TRUE(a->split_events > 0);
        CHECK_EQ_INT(a->threads, 2);
        CHECK_EQ_INT(b->split_events, 0);
        CHECK_EQ_INT(b->threads, 1);
        CHECK_EQ_INT(c->threads, 2);
        CHECK_EQ_INT(ms_snapshot_trace(a, 0)->n, ms_snapshot_trace(b, 0)->n);
    }
    ms_snapshot_free(a);
    ms_snapshot_free(b);
    ms_snapshot_free(c);
}

int main(void)
{
    /* Values that would show if the library read them. */
    setenv("MEMSNAP_MAX_INPUT", "1KiB", 1);
    setenv("MEMSNAP_THREADS", "1", 1);
    test_defaults_ignore_environment();
    test_max_input_not_from_environment();
    test_threads_not_from_environment();
    return check_finish("test_limits");
}
