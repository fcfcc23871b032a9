/* What the analyses share of the timeline (timeline.c) beyond the public API. */
#ifndef MEMSNAP_TIMELINE_INTERNAL_H
#define MEMSNAP_TIMELINE_INTERNAL_H

#include "internal.h"

/* Replays a built timeline's trace once more, for what would cost too much memory to
 * keep: emit gets each allocation's life as it becomes known (alive at the end last),
 * on_event the active bytes after every event. Either may be NULL; `t` may have any flags. */
int ms__timeline_replay(const ms_snapshot *s, const ms_timeline *t,
                        void (*emit)(void *ctx, const ms_alloc *a), void *ctx,
                        void (*on_event)(void *ctx, size_t event, int64_t active),
                        void *event_ctx, ms_error *err);

/* An emit callback collecting the allocations alive right after event `at`. */
typedef struct ms__alive_ctx {
    int64_t at;
    ms_alloc *out;
    size_t n, cap;
    bool failed;
} ms__alive_ctx;
void ms__alive_collect(void *ctx, const ms_alloc *a);

/* Traces of at least this many events have their per-event curves written by a second
 * thread while the replay runs (timeline.c); tests lower it to compare the two ways on
 * small traces. */
extern size_t ms__timeline_parallel_min;

/* The allocations alive right after `event`, for callers that only add them up (site
 * totals, categories): read from t->allocs when the timeline kept every life, in that
 * order, which costs one pass over the lives instead of a replay of the whole trace;
 * otherwise ms_timeline_alive_at's list and order. */
int ms__timeline_alive_summed(ms_alloc **out, size_t *n_out, const ms_snapshot *s,
                              const ms_timeline *t, int64_t event, ms_error *err);
/* ms_site_totals of the lives of t->allocs alive right after `event`, read in place: the
 * peak's sites without a copy of the set alive then. */
int ms__site_totals_at(ms_site_total **out, size_t *n_out, const ms_snapshot *s,
                       const ms_timeline *t, int64_t event, ms_error *err);

/* First event whose time is at or after t (strictly after when `after`), found by binary
 * search; with *hint from an earlier call for an earlier time it gallops forward from
 * there (start *hint at 0). */
int64_t ms__event_at_time(const ms_trace *tr, int64_t t, bool after, size_t *hint);

#endif
