/* memsnap core: error codes and the caller-owned error struct, input limits, and the
 * small helpers (ms_free, size formatting and parsing) every other part uses.
 * Part of the public API; include "memsnap/memsnap.h" for all of it. */
#ifndef MEMSNAP_CORE_H
#define MEMSNAP_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "memsnap/export.h"

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

/* The analyses' enums are each listed once by an X-macro LIST(X) of entries
 * X(NAME, "key", "words"): MS_KEYED_ENUM(type, LIST, COUNT) declares the enum of the NAMEs
 * with COUNT after the last. Each has a ms_*_name (the stable key JSON carries) and a
 * ms_*_text (the words for people) made from the same list. */
#define MS_X_KEYED_NAME_(name, key, text) name,
#define MS_KEYED_ENUM(type, LIST, count)                                                    \
    typedef enum type { LIST(MS_X_KEYED_NAME_) count } type

#define MS_NO_OFFSET (-1)

typedef struct ms_error {
    int code;           /* an ms_code */
    int64_t offset;     /* byte offset in the (decompressed) input, or MS_NO_OFFSET */
    char message[320];  /* one line, no trailing newline */
} ms_error;

MS_API const char *ms_code_name(int code); /* "MS_ERR_TRUNCATED" */
MS_API const char *ms_code_text(int code); /* "input ends early" */
MS_API void ms_error_clear(ms_error *err);
/* Fills err (NULL: nothing) with code, offset (MS_NO_OFFSET where none applies) and a
 * printf-style one-line message, and returns code, so a caller writes
 * `return ms_error_set(err, MS_ERR_NOMEM, MS_NO_OFFSET, "...")`: the one way an
 * ms_error is filled, in the library and in programs built on it. */
MS_API int ms_error_set(ms_error *err, int code, int64_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ------------------------------------------------------------------ limits */

/* The highest device id a snapshot can hold (the model refuses more devices): what
 * every `--device N` of the command line accepts. */
#define MS_DEVICE_MAX 65535

/* Bounds applied to untrusted input; ms_limits_default() gives generous values that
 * every real snapshot fits (a 4M-event trace uses a fraction of each). The library reads
 * no environment: these are the only settings, and a program that wants a setting from
 * its environment reads it and fills them in (memsnap does, for MEMSNAP_MAX_INPUT and
 * MEMSNAP_THREADS), so a host program's environment never loosens a bound. */
typedef struct ms_limits {
    uint32_t max_depth;        /* nesting of marks and containers */
    uint64_t max_memo;         /* memo entries */
    uint64_t max_objects;      /* containers created */
    uint64_t max_string;       /* bytes in one string or bytes object */
    uint64_t max_events;       /* trace entries over all devices */
    /* Not a bound but a choice: an input held whole in memory (a plain file or a buffer)
     * with at least this many bytes of trace left is read by two threads, the second
     * taking the back half (the result is identical). 0: one thread. Default 8 MiB. */
    uint64_t parallel_min_bytes;
    /* The work a compressed or streamed input can cause (docs/security.md): a gzip input
     * may expand to at most max_expansion times the compressed bytes read (plus 64 MiB),
     * and a gzip or standard input to at most max_input_bytes in all; 0: no bound.
     * Defaults 64 and 64 GiB (memsnap --max-input SIZE sets max_input_bytes and lifts
     * the ratio). */
    uint64_t max_expansion;
    uint64_t max_input_bytes;
    /* The most threads the library runs at once for a snapshot read with these limits:
     * the read (see parallel_min_bytes) and the analyses of that snapshot (the phase
     * tagging of categories); for ms_profiles_load, the budget of the whole load (files
     * at once, and each file's share). The library's one thread setting. Below 2: none
     * besides the caller's. Default 2, the most one snapshot's steps use; the results
     * are the same either way. */
    uint32_t threads;
    /* The reader's own working memory (the pickle's stack and memo, the containers it
     * builds and their items, boxed numbers): an input that needs more is refused with
     * MS_ERR_LIMIT before it gets it. 0 (the default): 3 times the bytes read so far
     * (of a gzip input: expanded) plus 64 MiB, twice what a real snapshot needs
     * (docs/security.md, "Memory"); otherwise this many bytes (memsnap --max-memory
     * SIZE). */
    uint64_t max_memory;
} ms_limits;

MS_API ms_limits ms_limits_default(void);

/* ------------------------------------------------------------------ helpers */

/* Releases a plain array handed out by the library (ms_alloc[], ms_site_total[]). */
MS_API void ms_free(void *p);

/* Text writers. Every function that writes text into a caller's buffer (buf, cap) is
 * one of these, named ms_*_format or saying what it writes (ms_categories_explain,
 * ms_pair_verdict, ms_profile_label), and they all keep one rule, as snprintf does:
 *  - they return the length of the whole text (without the NUL), also when it did not
 *    fit: a result >= cap means the text was cut, and a buffer of result + 1 bytes
 *    holds it all; buf may be NULL when cap is 0, to ask for the length;
 *  - with cap > 0 the buffer always ends with a NUL, and a cut text is cut before a
 *    whole UTF-8 character, never inside one (it may then be up to 3 bytes shorter
 *    than cap - 1);
 *  - they cannot fail: what they cannot describe (an unknown frame id, an allocation
 *    index out of range) gives a fixed text such as "(no stack)", or "" (length 0). */

/* "1.50 GiB", "512 B" */
MS_API size_t ms_format_bytes(int64_t bytes, char *buf, size_t cap);
/* Parses "20GiB", "512MB", "1.5G", "4096" into *out; returns 0 or MS_ERR_ARG. */
MS_API int ms_parse_size(uint64_t *out, const char *text, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
