/* memsnap — read PyTorch CUDA memory snapshots and analyse where GPU memory went.
 *
 * Ownership, in one sentence: every object handed out through an `**out` parameter
 * belongs to the caller and is released with its own ms_*_free(), which accepts NULL,
 * and every pointer obtained from an object (strings, arrays, views) lives exactly as
 * long as that object.
 *
 * Conventions: functions return 0 on success and a negative ms_code on failure, with
 * the details (code, byte offset where it applies, message) in a caller-owned ms_error.
 * The library never prints and never exits.
 */
#ifndef MEMSNAP_H
#define MEMSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

/* One list generates the codes, their names and their default messages. */
#define MS_ERROR_LIST(X)                                                         \
    X(MS_OK, 0, "ok")                                                            \
    X(MS_ERR_IO, -1, "cannot read input")                                        \
    X(MS_ERR_TRUNCATED, -2, "input ends early")                                  \
    X(MS_ERR_REFUSED_OPCODE, -3, "opcode would run code; refused")               \
    X(MS_ERR_UNKNOWN_OPCODE, -4, "unknown pickle opcode")                        \
    X(MS_ERR_LIMIT, -5, "input exceeds a safety limit")                          \
    X(MS_ERR_CORRUPT, -6, "malformed pickle")                                    \
    X(MS_ERR_FORMAT, -7, "not a PyTorch memory snapshot")                        \
    X(MS_ERR_NOMEM, -8, "out of memory")                                         \
    X(MS_ERR_GZIP, -9, "corrupt gzip stream")                                    \
    X(MS_ERR_ARG, -10, "invalid argument")

typedef enum ms_code {
#define MS_X_ENUM(name, value, text) name = value,
    MS_ERROR_LIST(MS_X_ENUM)
#undef MS_X_ENUM
} ms_code;

#define MS_NO_OFFSET (-1)

typedef struct ms_error {
    int code;           /* an ms_code */
    int64_t offset;     /* byte offset in the (decompressed) input, or MS_NO_OFFSET */
    char message[320];  /* one line, no trailing newline */
} ms_error;

const char *ms_code_name(int code);     /* "MS_ERR_TRUNCATED" */
const char *ms_code_message(int code);  /* "input ends early" */
void ms_error_clear(ms_error *err);

/* ------------------------------------------------------------------ limits */

/* Bounds applied to untrusted input; ms_limits_default() gives generous values that
 * every real snapshot fits (a 4M-event trace uses a fraction of each). */
typedef struct ms_limits {
    uint32_t max_depth;        /* nesting of marks and containers */
    uint64_t max_memo;         /* memo entries */
    uint64_t max_objects;      /* containers created */
    uint64_t max_string;       /* bytes in one string or bytes object */
    uint64_t max_events;       /* trace entries over all devices */
    /* Not a bound but a choice: an input held whole in memory (a plain file or a buffer)
     * with at least this many bytes of trace left is read by two threads, the second
     * taking the back half (the result is identical). 0: one thread. The default is
     * 8 MiB, or 0 when the environment sets MEMSNAP_THREADS=1. */
    uint64_t parallel_min_bytes;
    /* The work a compressed or streamed input can cause (docs/security.md): a gzip input
     * may expand to at most max_expansion times the compressed bytes read (plus 64 MiB),
     * and a gzip or standard input to at most max_input_bytes in all; 0: no bound.
     * Defaults 64 and 64 GiB; MEMSNAP_MAX_INPUT=SIZE in the environment (memsnap
     * --max-input SIZE) sets max_input_bytes and lifts the ratio. */
    uint64_t max_expansion;
    uint64_t max_input_bytes;
} ms_limits;

ms_limits ms_limits_default(void);

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

const char *ms_action_name(ms_action a); /* "alloc", "free_completed", ... */

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
} ms_trace;

typedef struct ms_frame {
    uint32_t name;      /* string ids */
    uint32_t filename;
    int64_t line;
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
int ms_snapshot_read_file(ms_snapshot **out, const char *path, const ms_limits *limits,
                          ms_error *err);
int ms_snapshot_read_memory(ms_snapshot **out, const void *data, size_t len,
                            const ms_limits *limits, ms_error *err);
void ms_snapshot_free(ms_snapshot *s);

int ms_snapshot_pickle_protocol(const ms_snapshot *s);
uint64_t ms_snapshot_input_bytes(const ms_snapshot *s); /* decompressed pickle size */

/* Devices with a trace list entry (possibly empty) or segments: 0 .. count-1. */
int ms_snapshot_device_count(const ms_snapshot *s);
/* The device with the most trace events (the lowest id on a tie), 0 when none has any:
 * the one a single-device view shows by default. */
int ms_snapshot_busiest_device(const ms_snapshot *s);
/* Never NULL for 0 <= device < device_count; an empty trace has n == 0. */
const ms_trace *ms_snapshot_trace(const ms_snapshot *s, int device);

const char *ms_snapshot_string(const ms_snapshot *s, uint32_t id); /* "" for MS_NO_STRING */
size_t ms_snapshot_string_count(const ms_snapshot *s);

const ms_frame *ms_snapshot_frame(const ms_snapshot *s, uint32_t frame_id);
size_t ms_snapshot_frame_count(const ms_snapshot *s);
/* Frame ids of a stack, innermost first. MS_NO_STACK gives n == 0. */
const uint32_t *ms_snapshot_stack(const ms_snapshot *s, uint32_t stack_id, size_t *n);
size_t ms_snapshot_stack_count(const ms_snapshot *s);

uint64_t ms_snapshot_stream(const ms_snapshot *s, uint16_t stream_id);
size_t ms_snapshot_stream_count(const ms_snapshot *s);

const ms_segment *ms_snapshot_segments(const ms_snapshot *s, size_t *n);
const ms_block *ms_snapshot_blocks(const ms_snapshot *s, size_t *n);
const ms_annotation *ms_snapshot_annotations(const ms_snapshot *s, size_t *n);
const ms_setting *ms_snapshot_settings(const ms_snapshot *s, size_t *n);

/* ------------------------------------------------------------------ sites */

/* The site of a stack: the innermost Python frame (filename ending ".py") outside
 * torch's own package, else the innermost Python frame, else the innermost frame.
 * Returns a frame id, or UINT32_MAX for an empty/unknown stack. Cached per stack. */
uint32_t ms_stack_site(const ms_snapshot *s, uint32_t stack_id);
/* Writes "file:line function" (file shortened to its last two path parts). */
int ms_site_format(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap);
/* Writes "file:line" only (same shortening); C++ frames give the library's name. */
int ms_site_format_location(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap);
/* Writes the function name; C++ names lose their parameter list. */
int ms_site_format_function(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap);

/* ------------------------------------------------------------------ timeline */

/* One allocation's life. Event indexes refer to the device's ms_trace. */
typedef struct ms_alloc {
    uint64_t addr;
    uint64_t size;             /* requested bytes */
    int64_t alloc_event;       /* -1: alive before the first kept event (reconstructed) */
    int64_t free_event;        /* free_completed event, -1: still alive at the end */
    int64_t free_requested_event; /* -1 when none was seen */
    uint32_t stack;            /* MS_NO_STACK when unknown */
    uint16_t stream;
} ms_alloc;

enum {
    MS_TIMELINE_CURVES = 1u << 0,     /* fill active[] and reserved[] per event */
    MS_TIMELINE_ALLOCS = 1u << 1,     /* fill allocs[] */
    MS_TIMELINE_ACTIVE = 1u << 2,     /* fill active[] only (half the memory of CURVES) */
    MS_TIMELINE_PEAK_ALIVE = 1u << 3  /* fill peak_alive[] in the same pass */
};

typedef struct ms_timeline {
    int device;
    size_t n_events;
    int64_t t_first_us, t_last_us; /* times of the first and last event (0 if none) */

    /* Before the first kept event (reconstructed from the final state). */
    int64_t active_start;
    int64_t reserved_start;

    /* After event i; NULL unless MS_TIMELINE_CURVES (active also with MS_TIMELINE_ACTIVE). */
    int64_t *active;
    int64_t *reserved;

    int64_t peak_bytes;        /* max active, including active_start */
    int64_t peak_event;        /* event after which the peak is first reached; -1 = at start */
    int64_t peak_time_us;
    int64_t reserved_peak_bytes;
    int64_t reserved_end_bytes;
    int64_t live_end_bytes;
    uint64_t live_end_count;
    int64_t preexisting_bytes; /* allocations alive before the trace began */
    uint64_t preexisting_count;
    int64_t preexisting_segment_bytes;
    bool trace_complete;       /* nothing had to be reconstructed */

    uint64_t action_counts[MS_ACT_COUNT];
    uint64_t oom_count;

    /* NULL unless MS_TIMELINE_PEAK_ALIVE: the allocations alive right after peak_event,
     * in no fixed order (what ms_timeline_alive_at gives for that event). */
    ms_alloc *peak_alive;
    size_t n_peak_alive;

    /* NULL unless MS_TIMELINE_ALLOCS: trace allocations in the order of their alloc
     * events, then the reconstructed ones alive before the trace began. */
    ms_alloc *allocs;
    size_t n_allocs;
} ms_timeline;

int ms_timeline_build(ms_timeline **out, const ms_snapshot *s, int device, unsigned flags,
                      ms_error *err);
void ms_timeline_free(ms_timeline *t);

/* Allocations alive right after event `event` (-1: at the start), in no fixed order;
 * replays the trace without materialising every allocation. */
int ms_timeline_alive_at(ms_alloc **out, size_t *n_out, const ms_snapshot *s,
                         const ms_timeline *t, int64_t event, ms_error *err);

/* ------------------------------------------------------------------ site totals */

typedef struct ms_site_total {
    uint32_t site;   /* frame id, or UINT32_MAX for allocations without a stack */
    uint64_t bytes;
    uint64_t count;
} ms_site_total;

/* Groups allocations by ms_stack_site(), largest bytes first. */
int ms_site_totals(ms_site_total **out, size_t *n_out, const ms_snapshot *s,
                   const ms_alloc *allocs, size_t n_allocs, ms_error *err);

/* ------------------------------------------------------------------ helpers */

/* Releases a plain array handed out by the library (ms_alloc[], ms_site_total[]). */
void ms_free(void *p);

/* "1.50 GiB", "512 B" */
void ms_format_bytes(int64_t bytes, char *buf, size_t cap);
/* Parses "20GiB", "512MB", "1.5G", "4096"; returns 0 or MS_ERR_ARG. */
int ms_parse_size(const char *text, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
