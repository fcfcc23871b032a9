/* memsnap — leaks (iterations: memsnap/iterations.h, included).
 *
 * Ownership follows memsnap.h: every object handed out through `**out` belongs to the
 * caller and is released with its own ms_*_free() (NULL accepted); pointers inside it
 * live as long as it does. Frame ids and alloc indices refer to the snapshot and to the
 * timeline given to the call, which must outlive every use of them.
 */
#ifndef MEMSNAP_LEAKS_H
#define MEMSNAP_LEAKS_H

#include "memsnap/export.h"
#include "memsnap/iterations.h"
#include "memsnap/memsnap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ leaks */

typedef enum ms_leak_kind {
    MS_LEAK_LEAK = 0,   /* live allocations of the site grow across iteration ends */
    MS_LEAK_SUSPECT,    /* too few iterations to tell; kept while its siblings were freed */
    MS_LEAK_RETAINED,   /* made once and kept: parameters, optimizer state, caches */
    /* A recording without iterations (one forward): what the forward made and left alive
     * at the end, its saved graph and its output, as one finding whose members are the
     * sites (patterns end_graph, end_output); no growth, nothing repeated. */
    MS_LEAK_ALIVE_AT_END
} ms_leak_kind;

/* "leak", "suspect", "retained", "alive_at_end" */
MS_API const char *ms_leak_kind_name(ms_leak_kind k);

/* What a finding's allocations have in common: the pattern a user looks for in the code.
 * One list gives the enum, the key (JSON `pattern`) and one line for people. */
#define MS_LEAK_PATTERN_LIST(X)                                                        \
    X(MS_LEAK_PATTERN_SITE, "site",                                                    \
      "each iteration adds allocations at this site that are never freed: something "  \
      "keeps a reference to them (a list, a dict, a hook, a global)")                  \
    X(MS_LEAK_PATTERN_GRAPH, "graph",                                                  \
      "the activations saved by each iteration's forward stay alive: something keeps " \
      "a reference to an output that requires grad - a loss summed without .item(), "  \
      "outputs stored without .detach()")                                              \
    X(MS_LEAK_PATTERN_FORWARD, "forward",                                              \
      "allocations of several sites made in each iteration's forward pass stay alive " \
      "together: one owner keeps them (a module attribute, a hook, a list)")           \
    X(MS_LEAK_PATTERN_BACKWARD, "backward",                                            \
      "allocations made in each iteration's backward pass stay alive together: a "     \
      "gradient hook or a list keeps gradients")                                       \
    X(MS_LEAK_PATTERN_ONCE, "once",                                                    \
      "made once and never again: a buffer created lazily on first use")               \
    X(MS_LEAK_PATTERN_WORKSPACE, "workspace",                                          \
      "a library workspace (cuBLAS, cuBLASLt, cuDNN) made on first use and kept by "   \
      "design")                                                                        \
    X(MS_LEAK_PATTERN_END_GRAPH, "end_graph",                                          \
      "the forward's autograd graph (what its layers saved for a backward that did "   \
      "not run in the recording) and its output are alive at the end: expected when "  \
      "a script dumps right after `out = model(x)`; a backward, `del out`, or "        \
      "torch.no_grad() frees it")                                                      \
    X(MS_LEAK_PATTERN_END_OUTPUT, "end_output",                                        \
      "the forward's output is alive at the end of the recording")

MS_KEYED_ENUM(ms_leak_pattern, MS_LEAK_PATTERN_LIST, MS_LEAK_PATTERN_COUNT);

MS_API const char *ms_leak_pattern_name(ms_leak_pattern p); /* "graph" */
MS_API const char *ms_leak_pattern_text(ms_leak_pattern p); /* one line for people */

typedef struct ms_leak_options {
    ms_iter_options iter;
    uint64_t min_bytes;  /* drop findings whose bytes alive at the end are below this */
} ms_leak_options;

typedef struct ms_leak {
    ms_leak_kind kind;
    uint32_t site;           /* frame id (ms_stack_site) or UINT32_MAX */
    uint32_t layer;          /* innermost forward/backward frame id, or UINT32_MAX */
    uint64_t count;          /* its allocations alive at the reference point */
    uint64_t bytes;          /* their requested bytes */
    uint64_t bytes_each_min; /* smallest and largest of them */
    uint64_t bytes_each_max;
    double growth_count;     /* per iteration, 0 for retained and suspects */
    double growth_bytes;
    int64_t first_alloc_us;  /* first and last allocation among those alive */
    int64_t last_alloc_us;
    /* Indices into the timeline's allocs[] of those alive: alloc_index[first .. first+n). */
    size_t first_index;
    size_t n_index;
    /* Added with root-cause grouping; every field above keeps its meaning, summed over
     * the members for a finding of several sites (site and layer are the largest
     * member's). */
    ms_leak_pattern pattern;
    uint32_t stack;          /* full stack of a representative allocation, MS_NO_STACK */
    /* The sites behind the finding: members[first_member .. first_member + n_members),
     * largest first; one member when one site is to blame. */
    size_t first_member;
    size_t n_members;
    /* For sites of one forward pass (patterns graph and forward): the user's line that
     * called that forward, e.g. `total = total + model(x).loss`; else UINT32_MAX. */
    uint32_t call_site;
    /* growth_bytes as the allocator counts it (memory_allocated()): block sizes, from the
     * final state for allocations alive at the end, else the request rounded to 512 B.
     * Counted over the finding's own allocations made after its first iteration. */
    double growth_allocated_bytes;
    /* The user's own line behind `stack` (ms_stack_user_frame): what led to an allocation
     * made inside torch or a library; UINT32_MAX when the stack has none. */
    uint32_t user_frame;
} ms_leak;

/* One site (and layer) of a finding. Its allocations are the finding's
 * alloc_index[first_index .. first_index + n_index), a part of the finding's range. */
typedef struct ms_leak_member {
    uint32_t site;
    uint32_t layer;
    uint64_t count;
    uint64_t bytes;
    uint64_t bytes_each_min;
    uint64_t bytes_each_max;
    double growth_count;
    double growth_bytes;
    uint32_t stack;          /* a representative allocation's stack */
    size_t first_index;
    size_t n_index;
    double growth_allocated_bytes;
    uint32_t user_frame;     /* as ms_leak.user_frame, for this member's stack */
} ms_leak_member;

typedef struct ms_leak_report {
    int device;
    ms_iterations *iterations;    /* owned by the report */
    /* The reference point: the end of the last complete iteration, else the trace end. */
    int64_t ref_event;            /* one past the last event considered */
    ms_leak *items;               /* leaks, alive at the end, suspects, retained; bytes desc */
    size_t n;
    size_t *alloc_index;
    size_t n_alloc_index;
    uint64_t oom_count;
    int64_t first_oom_us;         /* 0 when no OOM */
    uint64_t first_oom_bytes;     /* the request that failed */
    ms_leak_member *members;      /* see ms_leak.first_member */
    size_t n_members;
} ms_leak_report;

/* Analyses one device. `t` must be that device's timeline built with
 * MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS (alloc indices refer to it); NULL builds one
 * internally, and then alloc indices refer to a fresh build of the same timeline
 * (builds are deterministic). Retained findings are always computed; callers filter. */
MS_API int ms_leak_report_build(ms_leak_report **out, const ms_snapshot *s, int device,
                                const ms_timeline *t, const ms_leak_options *opt, ms_error *err);
MS_API void ms_leak_report_free(ms_leak_report *r);

/* For charts: the allocations of leak (and suspect) findings, each with a short label
 * giving the finding's count and whole size, then its site: "4 × 8.00 KiB = 32.00 KiB:
 * file:line function" ("5 allocations, 1.20 MiB: ..." when their sizes differ, "768.00
 * KiB: ..." for one allocation; a finding of several sites names its pattern: "forward
 * leak, 2 sites, 90.09 MiB: file:line function"). `t` as for ms_leak_report_build but
 * required. */
typedef struct ms_leak_mark {
    size_t alloc_index;      /* into t->allocs[] */
    ms_leak_kind kind;
    char label[160];
    /* Which finding the allocation belongs to (0, 1, ... in the report's order, counting
     * leaks and suspects only), so a chart labels each finding once; every mark of a
     * finding has the same label, which names the pattern when several sites share it. */
    size_t finding;
} ms_leak_mark;

MS_API int ms_leak_marks_build(ms_leak_mark **out, size_t *n_out, const ms_snapshot *s,
                               const ms_timeline *t, const ms_leak_options *opt, ms_error *err);
/* The same marks from a report already found (`t` the timeline it was found on). */
MS_API int ms_leak_marks_from_report(ms_leak_mark **out, size_t *n_out, const ms_snapshot *s,
                                     const ms_timeline *t, const ms_leak_report *r, ms_error *err);
MS_API void ms_leak_marks_free(ms_leak_mark *marks);

#ifdef __cplusplus
}
#endif
#endif
