/* memsnap model: reading a snapshot and the typed, read-only view of it (traces as
 * arrays, frames, stacks, streams, segments, blocks, annotations, settings).
 * Part of the public API; include "memsnap/memsnap.h" for all of it. */
#ifndef MEMSNAP_MODEL_H
#define MEMSNAP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "memsnap/core.h"
#include "memsnap/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ model */

typedef enum ms_action {
    MS_ACT_ALLOC = 0,
    MS_ACT_FREE_REQUESTED,
    MS_ACT_FREE_COMPLETED,
    MS_ACT_SEGMENT_ALLOC,
    MS_ACT_SEGMENT_FREE,
    MS_ACT_SEGMENT_MAP,
    MS_ACT_SEGMENT_UNMAP,
    MS_ACT_OOM,
    MS_ACT_SNAPSHOT,
    MS_ACT_OTHER, /* an action name this version does not know */
    MS_ACT_COUNT
} ms_action;

MS_API const char *ms_action_name(ms_action a); /* "alloc", "free_completed", ... */

#define MS_NO_STACK UINT32_MAX
#define MS_NO_STRING UINT32_MAX

typedef struct ms_snapshot ms_snapshot;

/* One device's trace, oldest event first, as parallel arrays of n entries.
 * For MS_ACT_OOM events `addr` holds the event's `device_free` and `size` the request. */
typedef struct ms_trace {
    int device;
    size_t n;
    const uint8_t *action;   /* ms_action */
    const uint64_t *addr;
    const uint64_t *size;
    const int64_t *time_us;  /* microseconds since the epoch */
    const uint32_t *stack;   /* stack id or MS_NO_STACK */
    const uint16_t *stream;  /* stream id: ms_snapshot_stream() gives the raw value */
    /* false when the entries carry no time_us (PyTorch before about 2.1 recorded none),
     * or when their times go backwards (times_backward_at): time_us[i] is then the event
     * index i, so durations count events, and a view shows event indexes wherever it
     * would show a time. */
    bool has_times;
    /* String ids of each entry's `compile_context` ("Torch-Compiled Region: 1/0", recorded
     * with _record_memory_history(compile_context=True)) and `user_metadata` (set by
     * torch.cuda.memory._set_memory_metadata), MS_NO_STRING where the entry carries
     * PyTorch's default ('N/A', ""). Each array is NULL when no entry of the trace
     * carries a value: the usual case, which costs nothing. */
    const uint32_t *compile_context;
    const uint32_t *user_metadata;
    /* The first event whose time_us is below the one before it, 0 when none (event 0
     * has none before it). When set, has_times is false: the events are ordered by their
     * position in the trace, and the times given are not used. */
    size_t times_backward_at;
} ms_trace;

/* A frame's line is MS_LINE_UNKNOWN when the file gave none: no 'line' key, None, or the
 * unsigned -1 (2^64 - 1) that C++ writes for "no line" (torch.compile runs). */
#define MS_LINE_UNKNOWN (-1)

typedef struct ms_frame {
    uint32_t name;      /* string ids */
    uint32_t filename;
    int64_t line;       /* >= 0, or MS_LINE_UNKNOWN */
} ms_frame;

typedef enum ms_block_state {
    MS_BLOCK_INACTIVE = 0,
    MS_BLOCK_ACTIVE_ALLOCATED,
    MS_BLOCK_ACTIVE_PENDING_FREE,
    MS_BLOCK_OTHER
} ms_block_state;

typedef struct ms_block {
    uint64_t address;
    uint64_t size;            /* rounded */
    uint64_t requested_size;
    ms_block_state state;
    uint32_t stack;
} ms_block;

typedef struct ms_segment {
    int device;
    uint64_t address;
    uint64_t total_size;
    uint64_t allocated_size;
    uint64_t active_size;
    uint64_t requested_size;
    uint64_t stream_raw;
    uint32_t segment_type;    /* string id ("small"/"large") or MS_NO_STRING */
    int64_t pool_id[2];       /* (0,0) default pool; others are CUDA-graph pools */
    bool is_expandable;
    uint32_t stack;
    size_t first_block;       /* index into ms_snapshot_blocks() */
    size_t n_blocks;
} ms_segment;

typedef struct ms_annotation {
    uint32_t name;            /* string id */
    bool is_start;            /* stage "START" (else "END") */
    int device;
    int64_t time_us;
} ms_annotation;

typedef struct ms_setting {
    uint32_t key;             /* string id */
    uint32_t value;           /* string id of the value written as text */
} ms_setting;

/* Reading. `path` "-" reads standard input; gzip input is recognised by its magic bytes.
 * `limits` may be NULL for the defaults. */
MS_API int ms_snapshot_read_file(ms_snapshot **out, const char *path, const ms_limits *limits,
                                 ms_error *err);
MS_API int ms_snapshot_read_memory(ms_snapshot **out, const void *data, size_t len,
                                   const ms_limits *limits, ms_error *err);
MS_API void ms_snapshot_free(ms_snapshot *s);

MS_API int ms_snapshot_pickle_protocol(const ms_snapshot *s);
MS_API uint64_t ms_snapshot_input_bytes(const ms_snapshot *s); /* decompressed pickle size */

/* Devices with a trace list entry (possibly empty) or segments: 0 .. count-1. */
MS_API int ms_snapshot_device_count(const ms_snapshot *s);
/* The device with the most trace events (the lowest id on a tie), 0 when none has any:
 * the one a single-device view shows by default. */
MS_API int ms_snapshot_busiest_device(const ms_snapshot *s);
/* Never NULL for 0 <= device < device_count; an empty trace has n == 0. */
MS_API const ms_trace *ms_snapshot_trace(const ms_snapshot *s, int device);

/* "" for MS_NO_STRING. */
MS_API const char *ms_snapshot_string(const ms_snapshot *s, uint32_t id);
MS_API size_t ms_snapshot_string_count(const ms_snapshot *s);

MS_API const ms_frame *ms_snapshot_frame(const ms_snapshot *s, uint32_t frame_id);
MS_API size_t ms_snapshot_frame_count(const ms_snapshot *s);
/* Frame ids of a stack, innermost first. MS_NO_STACK gives n == 0. */
MS_API const uint32_t *ms_snapshot_stack(const ms_snapshot *s, uint32_t stack_id, size_t *n);
MS_API size_t ms_snapshot_stack_count(const ms_snapshot *s);

MS_API uint64_t ms_snapshot_stream(const ms_snapshot *s, uint16_t stream_id);
MS_API size_t ms_snapshot_stream_count(const ms_snapshot *s);

MS_API const ms_segment *ms_snapshot_segments(const ms_snapshot *s, size_t *n);
MS_API const ms_block *ms_snapshot_blocks(const ms_snapshot *s, size_t *n);
MS_API const ms_annotation *ms_snapshot_annotations(const ms_snapshot *s, size_t *n);
/* Annotations left out of ms_snapshot_annotations: their device's trace has no times, so
 * nothing places them among its events. */
MS_API size_t ms_snapshot_annotations_unplaced(const ms_snapshot *s);
MS_API const ms_setting *ms_snapshot_settings(const ms_snapshot *s, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
