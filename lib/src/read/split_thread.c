/* The second thread's life: started once the VM knows the entries' shape, reading its
 * part (split_reader.c), then perhaps the back of the VM's (a steal), and stopped when the
 * VM hands over (split_handover.c) or gives up. */
#include "split_internal.h"

#include <sched.h>

atomic_bool ms__split_test_hold;
atomic_bool ms__split_test_steal;

/* The thread steals from the VM only when at least this much is left before its part. */
#define STEAL_MIN_BYTES ((size_t)4 << 20)

/* The two virtual cores often run at different speeds. When the thread is done first
 * and the VM still has a long way to the thread's part, the thread reads the back half
 * of that too, from a batch boundary on, with the memo it was given (what the VM adds
 * meanwhile is settled at hand-over, as for its own part). The VM hands both over when
 * it reaches that boundary; if it went past it before the steal was published, it
 * reads on to the thread's part and the steal is dropped. */
static void steal(split_worker *w)
{
    const uint8_t *vm_at = atomic_load_explicit(&w->vm_pos, memory_order_acquire);
    split_worker *s = NULL;
    if (!w->hold && !atomic_load(&w->cancel) && !atomic_load(&w->steal_off) && vm_at &&
        vm_at < w->start && (size_t)(w->start - vm_at) >= (w->steal_test ? 0 : STEAL_MIN_BYTES)) {
        const uint8_t *t =
            ms__split_find_boundary(vm_at, vm_at + (w->start - vm_at) / 2, w->start, &w->shape);
        if (t && (s = ms__split_part_with(&w->shape, t, w->end, w->max_string,
                                          w->release_pages, w->pub, w->pub_len, w->pub_gen,
                                          true)) != NULL) {
            s->parent = w;
            atomic_store_explicit(&s->stop_at, w->start, memory_order_relaxed);
            atomic_store_explicit(&w->steal, s, memory_order_release);
        }
    }
    atomic_store_explicit(&w->decided, true, memory_order_release);
    if (s)
        ms__split_read_part(s);
}

static void *worker_main(void *arg)
{
    split_worker *w = arg;
    while (w->hold && !atomic_load(&w->go))
        sched_yield();
    ms__split_read_part(w);
    steal(w);
    return NULL;
}

bool ms__split_stop_here(ms_split *w, const uint8_t *pos)
{
    atomic_store_explicit(&w->vm_pos, pos, memory_order_release);
    if (w->steal_test) /* tests: the thread steals from here, once its part is read */
        while (!atomic_load_explicit(&w->decided, memory_order_acquire))
            sched_yield();
    const split_worker *s = atomic_load_explicit(&w->steal, memory_order_acquire);
    return s && s->start == pos;
}

ms_split *ms__split_start(ms_vm *vm, const uint8_t **at_out)
{
    const ms_input *in = ms__vm_input(vm);
    const ms_limits *lim = ms__vm_limits(vm);
    const entry_shape *shape = ms__vm_shape(vm);
    size_t sparse;
    ms__vm_memo(vm, NULL, NULL, &sparse);
    *at_out = NULL;
    if (lim->threads < 2 || lim->parallel_min_bytes == 0 || in->window || !in->source_eof ||
        sparse || !shape || shape->n == 0 ||
        (uint64_t)(in->end - in->pos) < lim->parallel_min_bytes)
        return NULL;
    /* The VM reads the first half while this thread reads the second. */
    const uint8_t *at =
        ms__split_find_boundary(in->pos, in->pos + (in->end - in->pos) / 2, in->end, shape);
    split_worker *w = at ? ms__split_part_new(vm, at, false) : NULL;
    if (!w)
        return NULL;
    w->hold = atomic_load(&ms__split_test_hold);
    w->steal_test = atomic_load(&ms__split_test_steal);
    atomic_store(&w->vm_pos, in->pos);
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        ms__split_part_free(w);
        return NULL;
    }
    *at_out = at;
    return w;
}

void ms__split_discard(ms_split *w)
{
    if (!w)
        return;
    atomic_store(&w->cancel, true);
    atomic_store(&w->steal_off, true);
    atomic_store(&w->go, true);
    pthread_join(w->thread, NULL);
    ms__split_part_free(w);
}
