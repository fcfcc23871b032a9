/* The allocator's state at chosen instants as JSON (`memsnap segments --json`,
 * ms_run_json's "segments", docs/json.md), one instant at a time from one replay
 * (ms_heap_visit_each). A caller that wants more of each state than its JSON (the
 * tool's text, its picture) gets every state through a sink as it is built. */
#ifndef MEMSNAP_JSON_SEGMENTS_H
#define MEMSNAP_JSON_SEGMENTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "memsnap/allocator.h"
#include "memsnap/run.h"

/* An instant asked for. */
typedef enum seg_at_kind { SEG_AT_SECONDS, SEG_AT_US, SEG_AT_EVENT } seg_at_kind;

typedef struct seg_instant {
    seg_at_kind kind;
    double seconds;   /* seconds since the first event */
    int64_t time_us;  /* on the trace's clock */
    int64_t event;    /* the state right after this event (-1: before the first) */
    const char *text; /* how it was asked ("--at 1.5"): the instant's "asked" label */
} seg_instant;

/* What a device's object says before its instants. */
typedef struct seg_device_head {
    int device;
    size_t events;
    size_t instants;  /* states to come (asks that land on one event are one) */
    size_t unplaced;  /* asks by time left out: the trace has no times */
} seg_device_head;

/* Called as the builder goes; either may be NULL. A non-zero return (an ms_error code,
 * err filled) stops the build. `block_category` (per block of h, ms_category, MS_CAT_COUNT
 * for none) is NULL when the device's categories could not be found. */
typedef struct seg_sink {
    void *ctx;
    int (*device)(void *ctx, const seg_device_head *head, ms_error *err);
    int (*instant)(void *ctx, const cJSON *at, const ms_heap *h, const uint8_t *block_category,
                   ms_error *err);
} seg_sink;

typedef struct seg_request {
    int device;            /* -1: every device in use */
    const seg_instant *at; /* none: the peak and the end */
    size_t n_at;
    bool sink_only;        /* the instants go to the sink alone; at[] stays empty */
    seg_sink sink;
} seg_request;

/* {"device", "events", "has_times", "at_unplaced"?, "at": [...]}: the states of the run's
 * device (q->device is not read). `depth` is how deep the object's at[] elements stand in
 * the caller's document (2 for the object alone, 6 in `segments --json`): each state is
 * kept as formatted text of its own (the output's bytes, not a tree ten times their
 * size), indented for that place. NULL with err filled on failure (a bad event names the
 * trace's range). */
cJSON *segments_run_json(ms_run *run, const seg_request *q, int depth, ms_error *err);

/* {"path", "devices": [...]} for one file, a run of its own for each device. */
cJSON *segments_snapshot_json(const char *path, const ms_snapshot *s, const seg_request *q,
                          ms_error *err);

#endif
