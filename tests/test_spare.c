/* The snapshot's spare (internal.h): the reader's memo kept for the first big array an
 * analysis allocates. What is kept and what is refused, that one caller only takes it
 * when several threads ask at once, and that reading keeps the memo only when it is big
 * enough. test_timeline_split.c checks that a timeline built in a spare full of garbage
 * equals one built in fresh memory. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "memsnap/memsnap.h"

static void *spare_of(const ms_snapshot *s)
{
    return atomic_load(&((ms_snapshot *)s)->spare);
}

/* A snapshot to hang spares on: the smallest testdata file. */
static ms_snapshot *small_snapshot(void)
{
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, "testdata/leak_layers.pickle", NULL, &err) != 0) {
        check_fail("leak_layers: %s", err.message);
        return NULL;
    }
    return s;
}

static void check_keep_and_take(void)
{
    ms_snapshot *s = small_snapshot();
    if (!s)
        return;
    /* A testdata file's memo is far below the threshold: reading kept nothing. */
    CHECK_TRUE(spare_of(s) == NULL);

    const size_t min = ms__spare_min;
    void *small = malloc(min - 1);
    ms__snapshot_keep_spare(s, &small, min - 1);
    CHECK_TRUE(small != NULL); /* refused: the caller still owns it */
    CHECK_TRUE(spare_of(s) == NULL);
    free(small);

    void *first = malloc(2 * min), *second = malloc(min);
    void *first_was = first;
    ms__snapshot_keep_spare(s, &first, 2 * min);
    CHECK_TRUE(first == NULL);
    CHECK_TRUE(spare_of(s) == first_was);
    CHECK_EQ_INT(s->spare_bytes, 2 * min);
    ms__snapshot_keep_spare(s, &second, min); /* one spare at a time */
    CHECK_TRUE(second != NULL);
    CHECK_TRUE(spare_of(s) == first_was);
    free(second);

    /* A small request, or none, leaves the spare where it is. */
    void *little = ms__snapshot_alloc(s, min - 1);
    CHECK_TRUE(little != NULL);
    CHECK_TRUE(spare_of(s) == first_was);
    free(little);
    void *nothing = ms__snapshot_alloc(s, 0);
    CHECK_TRUE(spare_of(s) == first_was);
    free(nothing);

    /* One bigger than the spare gets fresh memory (growing the spare could copy it) and
     * leaves it. */
    unsigned char *bigger = ms__snapshot_alloc(s, 2 * min + 1);
    CHECK_TRUE(bigger != NULL);
    CHECK_TRUE(spare_of(s) == first_was);
    CHECK_EQ_INT(ms__snapshot_spare_bytes(s), 2 * min);
    free(bigger);

    /* A big one that fits takes it: every byte writable (ASan would see otherwise). Then
     * the next big request gets fresh memory. */
    unsigned char *big = ms__snapshot_alloc(s, min + 4096);
    CHECK_TRUE(big != NULL);
    CHECK_TRUE(spare_of(s) == NULL);
    CHECK_EQ_INT(ms__snapshot_spare_bytes(s), 0);
    if (big) {
        memset(big, 1, min + 4096);
        CHECK_EQ_INT(big[min + 4095], 1);
    }
    free(big);
    unsigned char *fresh = ms__snapshot_alloc(s, min);
    CHECK_TRUE(fresh != NULL);
    CHECK_TRUE(spare_of(s) == NULL);
    free(fresh);

    /* A spare left untaken goes with the snapshot (ASan's leak check). */
    void *left = malloc(min);
    ms__snapshot_keep_spare(s, &left, min);
    CHECK_TRUE(left == NULL);
    ms_snapshot_free(s);
}

typedef struct taker {
    const ms_snapshot *s;
    pthread_barrier_t *go;
    unsigned char *got;
} taker;

static void *take(void *arg)
{
    taker *t = arg;
    pthread_barrier_wait(t->go);
    t->got = ms__snapshot_alloc(t->s, ms__spare_min);
    if (t->got)
        memset(t->got, 2, ms__spare_min);
    return NULL;
}

/* Two threads ask at once, 100 times: both get memory, and the spare is gone (taken once:
 * a double hand-out would be a double free, which ASan reports). */
static void check_two_takers(void)
{
    ms_snapshot *s = small_snapshot();
    if (!s)
        return;
    for (int round = 0; round < 100; round++) {
        void *block = malloc(ms__spare_min);
        ms__snapshot_keep_spare(s, &block, ms__spare_min);
        CHECK_TRUE(block == NULL);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        taker a = {s, &go, NULL}, b = {s, &go, NULL};
        pthread_t th;
        if (pthread_create(&th, NULL, take, &b) != 0) {
            check_fail("no thread");
            pthread_barrier_destroy(&go);
            break;
        }
        take(&a);
        pthread_join(th, NULL);
        pthread_barrier_destroy(&go);
        CHECK_TRUE(a.got != NULL && b.got != NULL && a.got != b.got);
        CHECK_TRUE(spare_of(s) == NULL);
        free(a.got);
        free(b.got);
    }
    ms_snapshot_free(s);
}

/* With the threshold lowered, reading keeps its memo; a timeline takes a spare. */
static void check_reading_keeps(void)
{
    const size_t saved = ms__spare_min;
    ms__spare_min = 1;
    ms_snapshot *s = small_snapshot();
    ms__spare_min = saved;
    if (!s)
        return;
    CHECK_TRUE(spare_of(s) != NULL);
    CHECK_TRUE(s->spare_bytes > 0);
    /* Trimmed to fit whatever the timeline asks for first. */
    void *block = malloc(1 << 20);
    free(atomic_exchange(&s->spare, block));
    s->spare_bytes = 1 << 20;
    ms__spare_min = 1;
    ms_timeline *t = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_timeline_build(&t, s, 0, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS, &err), 0);
    ms__spare_min = saved;
    CHECK_TRUE(spare_of(s) == NULL);
    ms_timeline_free(t);
    ms_snapshot_free(s);
}

int main(void)
{
    check_keep_and_take();
    check_two_takers();
    check_reading_keeps();
    return check_finish("test_spare");
}
