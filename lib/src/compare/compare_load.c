/* Loading many rank files at once. Each file is parsed, profiled and freed on one worker
 * thread, so at most ms_limits.threads snapshots are in memory together however many
 * ranks the job had; what stays is the small profile. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "compare_internal.h"

typedef struct load_job {
    ms_profile **out;
    ms_error *errs;
    const char *const *paths;
    size_t n;
    int device;
    const ms_limits *limits;
    ms_profile_hook hook;
    void *ctx;
    atomic_size_t next; /* the next file to take: workers share the list, no fixed split */
} load_job;

static void load_one(load_job *job, size_t i)
{
    ms_error *err = &job->errs[i];
    ms_error_clear(err);
    job->out[i] = NULL;
    ms_snapshot *s = NULL;
    if (ms_snapshot_read_file(&s, job->paths[i], job->limits, err) != 0)
        return;
    ms_profile *p = NULL;
    ms_run *run = NULL;
    if (cmp_run_open(&run, s, job->device, err) == 0 &&
        ms_profile_from_run(&p, run, job->paths[i], err) == 0) {
        if (job->hook && job->hook(job->ctx, i, job->paths[i], run, p, err) != 0) {
            if (err->code == 0) /* a hook that forgot to say why still fails the file */
                ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "%s: rejected by the caller",
                         job->paths[i]);
            ms_profile_free(p);
            p = NULL;
        }
    }
    ms_run_free(run);
    ms_snapshot_free(s);
    job->out[i] = p;
}

static void *worker(void *arg)
{
    load_job *job = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&job->next, 1);
        if (i >= job->n)
            break;
        load_one(job, i);
    }
    return NULL;
}

int ms_profiles_load(ms_profile **out, ms_error *errs, const char *const *paths, size_t n,
                     int device, const ms_limits *limits, ms_profile_hook hook, void *ctx)
{
    /* One budget of threads (ms_limits.threads): files at once, and what is left of it
     * to each file's read and analyses, so the whole call never runs more. */
    ms_limits each = limits ? *limits : ms_limits_default();
    unsigned threads = each.threads > 1 ? (each.threads > 256 ? 256 : each.threads) : 1;
    if (threads > n)
        threads = n ? (unsigned)n : 1;
    if (each.threads > 1)
        each.threads /= threads;
    load_job job = {out, errs, paths, n, device, &each, hook, ctx, 0};
    atomic_init(&job.next, 0);

    pthread_t *tids = threads > 1 ? cmp_calloc(threads, sizeof *tids) : NULL;
    unsigned started = 0;
    if (tids) {
        for (; started + 1 < threads; started++)
            if (pthread_create(&tids[started], NULL, worker, &job) != 0)
                break; /* the files still get done, by the threads that did start */
    }
    /* The calling thread is one of the `threads` workers, so the job finishes even if no
     * thread could start. */
    worker(&job);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    free(tids);

    for (size_t i = 0; i < n; i++)
        if (!out[i])
            return errs[i].code ? errs[i].code : MS_ERR_IO;
    return 0;
}
