/* Private declarations shared by the library's modules. */
#ifndef MEMSNAP_INTERNAL_H
#define MEMSNAP_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"
#include "order.h"

#if defined(__GNUC__)
#define MS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define MS_LIKELY(x) __builtin_expect(!!(x), 1)
#define MS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define MS_PRINTF(a, b)
#define MS_LIKELY(x) (x)
#define MS_UNLIKELY(x) (x)
/* Builds what sites need of the model as a whole (the generated-code frames' table).
 * 0, or -1 when out of memory. */
int ms__sites_prepare(ms_snapshot *s);

#endif

/* The two lookups of an enum listed by an X-macro LIST(X) whose entries are
 * X(name, key, text): key_fn gives the stable key JSON carries, text_fn the words for
 * people, both "unknown" out of range. Written once for every such enum of the analyses
 * (category reasons, iteration methods, leak patterns, shapes, OOM causes and bases). */
#define MS__X_KEY_(name, key, text) key,
#define MS__X_TEXT_(name, key, text) text,
#define MS__KEY_TEXT_LOOKUPS(LIST, type, count, key_fn, text_fn)                               \
    const char *key_fn(type v)                                                                \
    {                                                                                         \
        static const char *const keys[] = {LIST(MS__X_KEY_)};                                 \
        return (unsigned)v < (count) ? keys[v] : "unknown";                                   \
    }                                                                                         \
    const char *text_fn(type v)                                                               \
    {                                                                                         \
        static const char *const texts[] = {LIST(MS__X_TEXT_)};                               \
        return (unsigned)v < (count) ? texts[v] : "unknown";                                  \
    }

/* names[v] of a table of an enum's names (by value, with designated initialisers);
 * `other` for a value out of range or without a name. */
#define MS__NAME_IN(names, v, other)                                                          \
    ((size_t)(v) < sizeof(names) / sizeof *(names) && (names)[v] ? (names)[v] : (other))

/* The two arrays every per-stack classifier starts from: *frames one byte a frame, what
 * fn says of it, and *stacks one zeroed byte a stack for the caller to fill from them
 * (the caller frees both). MS_ERR_NOMEM, with nothing to free, when out of memory. */
int ms__frame_flag_arrays(uint8_t **frames, uint8_t **stacks, const ms_snapshot *s,
                          uint8_t (*fn)(const ms_snapshot *s, uint32_t frame), ms_error *err);

/* Test hook: how many times ms_annotation_ranges paired annotations in this process
 * (lib/src/analysis/annotations.c; read through ms__run_stats). */
size_t ms__annotation_pairings(void);

/* ms_error_set (memsnap/core.h) for the library's own use: callers write
 * `return ms__fail(...)`. */
#define ms__fail ms_error_set

/* The text writers' rule (memsnap/core.h): `n` is what snprintf returned for buf/cap;
 * a text cut by the buffer's end loses an incomplete UTF-8 character left at its end.
 * Returns the whole text's length. */
size_t ms__text_done(char *buf, size_t cap, int n);
/* Drops an incomplete UTF-8 sequence at the end of buf (a NUL-terminated string). */
void ms__utf8_trim(char *buf);
/* Length of the character at s when it is one a reader must see rather than obey: a C0 or
 * C1 control, DEL, a bidirectional control (U+061C, U+200E/F, U+202A..E, U+2066..9), or
 * an invisible or format character that hides or moves text (U+200B..D, U+2028/9,
 * U+2060..F, U+FEFF); its code point in *cp. 0 for any other character
 * (docs/security.md). The JSON writer escapes them; render/ and cli/ show them. */
size_t ms__text_special(const char *s, unsigned *cp);

/* Overflow-checked size arithmetic: false on overflow. */
static inline bool ms__mul(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool ms__add(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* Grows *ptr (holding *cap elements of `elem` bytes) to hold at least `need` elements,
 * doubling. Returns false on overflow or allocation failure, leaving *ptr intact. */
bool ms__grow(void **ptr, size_t *cap, size_t need, size_t elem);

/* free()s each of the n pointers (NULL ones too). MS__FREE_ALL(a, b, ...) is the
 * teardown of a struct that owns arrays: one list of what it owns, in one place. */
void ms__free_each(void *const *ptrs, size_t n);
#define MS__FREE_ALL(...)                                                                     \
    ms__free_each((void *const[]){__VA_ARGS__},                                               \
                  sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/* fn(there) on a second thread while fn(here) runs on this one; both on this one, here
 * first, when no thread can start. The two halves of a job split in two, whose results
 * the caller joins the same way either way. */
void ms__run_pair(void *(*fn)(void *), void *here, void *there);

/* ---------------------------------------------------------------- strings */

/* Interned strings: one copy of each distinct byte string, NUL-terminated, addressed
 * by a dense id. */
typedef struct ms_strtab {
    char *bytes;        /* all strings back to back, each followed by NUL */
    size_t bytes_len, bytes_cap;
    uint64_t *offsets;  /* id -> offset into bytes */
    uint32_t *lengths;  /* id -> length */
    size_t count, cap;
    uint32_t *slots;    /* open addressing: id + 1, 0 empty */
    size_t nslots;
} ms_strtab;

void ms__strtab_init(ms_strtab *t);
void ms__strtab_free(ms_strtab *t);
/* Returns the id of the string, adding it if new; UINT32_MAX on allocation failure. */
uint32_t ms__strtab_intern(ms_strtab *t, const char *data, size_t len);

/* Open-addressing tables of ids (id + 1 per slot, 0 empty), keyed by what each id names:
 * rebuilds *slots at twice its size (first_size when empty) from ids 0..count-1, placed
 * by hash(ctx, id). False when out of memory, the old table kept. */
bool ms__id_table_rehash(uint32_t **slots, size_t *nslots, size_t first_size, size_t count,
                         uint64_t (*hash)(const void *ctx, size_t id), const void *ctx);
static inline const char *ms__strtab_get(const ms_strtab *t, uint32_t id)
{
    return t->bytes + t->offsets[id];
}

/* ---------------------------------------------------------------- model */

typedef struct ms_trace_build {
    ms_trace view;       /* what the public accessor returns; points into the arrays below */
    uint8_t *action;
    uint64_t *addr;
    uint64_t *size;
    int64_t *time_us;
    uint32_t *stack;
    uint16_t *stream;
    /* NULL until an entry carries a value other than PyTorch's default; then as long as
     * the arrays above (cap), MS_NO_STRING where an entry has none. */
    uint32_t *compile_context;
    uint32_t *user_metadata;
    size_t cap;
} ms_trace_build;

struct ms_snapshot {
    int protocol;
    uint64_t input_bytes;
    uint64_t split_events; /* trace entries read by the second thread (split_reader.c) */
    uint32_t threads;      /* ms_limits.threads it was read with: what its analyses may use */
    ms_strtab strings;

    ms_frame *frames;
    size_t n_frames, cap_frames;

    /* Stacks: frame ids back to back; stack i is stack_frames[stack_start[i] ..
     * stack_start[i+1]). */
    uint32_t *stack_frames;
    size_t n_stack_frames;
    size_t *stack_start;
    size_t n_stacks;
    uint32_t *site_cache;  /* per stack: site frame id + 1, 0 = not computed */
    uint32_t *user_cache;  /* per stack: user frame id + 1 (UINT32_MAX: none), 0 = not computed */
    /* Pairs (frame id, the frame standing for its function) of the frames of generated
     * code, by frame id (ms__sites_prepare); NULL when there are none. */
    uint32_t *generated;
    size_t n_generated;

    uint64_t *streams;
    size_t n_streams, cap_streams;

    ms_trace_build *traces;
    int n_devices;

    ms_segment *segments;
    size_t n_segments;
    ms_block *blocks;
    size_t n_blocks;
    ms_annotation *annotations;
    size_t n_annotations;
    size_t n_annotations_unplaced; /* dropped: on a device whose trace has no times */
    ms_setting *settings;
    size_t n_settings;
};

/* Builds what sites need of the model as a whole (the generated-code frames' table).
 * 0, or -1 when out of memory. */
int ms__sites_prepare(ms_snapshot *s);

#endif
