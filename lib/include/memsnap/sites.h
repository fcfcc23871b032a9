/* memsnap sites: where a stack allocated from, formatted for people, and allocations
 * grouped by site.
 * Part of the public API; include "memsnap/memsnap.h" for all of it. */
#ifndef MEMSNAP_SITES_H
#define MEMSNAP_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "memsnap/export.h"
#include "memsnap/model.h"
#include "memsnap/timeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ frames */

/* Whose code a frame is. This is the one frame classifier of the library: sites,
 * iterations, categories, leaks and OOM analyses all ask it, so no two views can
 * disagree about a frame. It reads the frame's file name the same whichever machine
 * recorded it: '/' and '\' both separate parts, and the markers below match in any
 * case (D:\proj\.venv\Lib\site-packages\torch\ is torch's as .venv/lib/python3.12/
 * site-packages/torch/ is). The first three values keep their old numbers. */
typedef enum ms_frame_kind {
    MS_FRAME_USER = 0, /* the user's own Python: what to read first */
    MS_FRAME_TORCH,    /* torch's own Python package: installed (site-/dist-packages/torch/,
                          an egg or wheel named torch), or a checkout (a torch/ directory
                          holding one of torch's own modules: nn/, _ops.py, ...) */
    MS_FRAME_NATIVE,   /* C++ frames (stacks="all") */
    MS_FRAME_LIBRARY,  /* Python of another installed package (site-/dist-packages, an
                          egg or wheel) */
    MS_FRAME_COMPILED, /* torch.compile: Dynamo (torch/_dynamo/), Inductor and its
                          generated code (torch/_inductor/, the torchinductor_USER cache),
                          FX graph code (<eval_with_key>.N) */
    MS_FRAME_KIND_COUNT
} ms_frame_kind;

/* What a frame does, as bits; a frame may have several. One rule each. */
enum {
    MS_FRAME_ROLE_FORWARD = 1u << 0,   /* a Python `forward` (a module call) */
    MS_FRAME_ROLE_BACKWARD = 1u << 1,  /* Python entering autograd: backward, _make_grads,
                                          _engine_run_backward */
    MS_FRAME_ROLE_AUTOGRAD = 1u << 2,  /* the C++ autograd engine running backward: Engine::,
                                          AccumulateGrad, a backward node (not destructors) */
    MS_FRAME_ROLE_NODE = 1u << 3,      /* a C++ backward node's code: MmBackward0::apply,
                                          MmBackward0_apply_functional */
    MS_FRAME_ROLE_OPTIMIZER = 1u << 4, /* Python of an optimizer package (torch/optim/,
                                          apex/optimizers/, optimization.py, ...) */
    MS_FRAME_ROLE_ZERO_GRAD = 1u << 5, /* a Python `zero_grad` */
    MS_FRAME_ROLE_COLLECTIVE = 1u << 6, /* NCCL (C++ frames naming nccl/NCCL) */
    MS_FRAME_ROLE_WORKSPACE = 1u << 7, /* cuBLAS/cuBLASLt/cuDNN workspace (C++) */
    MS_FRAME_ROLE_SETUP = 1u << 8,     /* building or loading a model: nn.Module.to/cuda/
                                          _apply/__init__/reset_parameters, load_state_dict,
                                          from_pretrained, serialization.py */
    MS_FRAME_ROLE_GENERATED = 1u << 9  /* code torch.compile wrote (kind compiled): an
                                          Inductor output module (torchinductor_USER/xx/
                                          c<hash>.py, or by that name anywhere) or FX graph
                                          code (<eval_with_key>.N) */
};

typedef struct ms_frame_class {
    ms_frame_kind kind;
    uint32_t roles; /* MS_FRAME_ROLE_* bits */
} ms_frame_class;

/* The class of a frame; an unknown id is native with no roles. Pure function of the
 * frame's file and function name (callers cache per frame id, see memsnap/run.h). */
MS_API ms_frame_class ms_frame_classify(const ms_snapshot *s, uint32_t frame_id);
MS_API ms_frame_kind ms_frame_kind_of(const ms_snapshot *s, uint32_t frame_id);
/* "user", "torch", "native", "library", "compiled" (JSON `kind` of stack frames). */
MS_API const char *ms_frame_kind_name(ms_frame_kind k);
/* Python code of any kind (what stacks='python' records). */
MS_API bool ms_frame_kind_is_python(ms_frame_kind k);
/* Code a user cannot act on when looking for their line: torch's and compiled code. */
MS_API bool ms_frame_kind_is_internal(ms_frame_kind k);

/* Text writers (the rule is in memsnap/core.h). */

/* A layer frame for people: "modules/linear.py:134 forward" for Python layers,
 * "MmBackward0" for the autograd node of a backward allocation; "" for an unknown id. */
MS_API size_t ms_layer_format(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap);

/* ------------------------------------------------------------------ sites */

/* The site of a stack: the innermost Python frame that is neither torch's own nor
 * compiled code (ms_frame_kind_is_internal) or is code torch.compile generated
 * (MS_FRAME_ROLE_GENERATED: all frames of one generated function are one site, the
 * first of them), else the innermost Python frame, else a backward node, else the
 * innermost frame past the capture machinery.
 * Returns a frame id, or UINT32_MAX for an empty/unknown stack. Cached per stack. */
MS_API uint32_t ms_stack_site(const ms_snapshot *s, uint32_t stack_id);
/* The user's own line of a stack: the innermost frame the classifier calls the user's
 * (MS_FRAME_USER) that is not the Python standard library (lib/pythonX.Y/, a Windows
 * interpreter's Lib\, outside site-/dist-packages). What led to an allocation made
 * inside torch or an installed library. When generated code is in the stack (a compiled
 * model made the allocation), the innermost such frame outside every compiled frame: the
 * line that called the compiled model, not a forward Dynamo rewrote. UINT32_MAX when the
 * stack has no such frame (empty, unknown, or only library, torch, compiled and native
 * code). */
MS_API uint32_t ms_stack_user_frame(const ms_snapshot *s, uint32_t stack_id);
/* Whether a frame is the Python standard library (the rule above). */
MS_API bool ms_frame_is_stdlib(const ms_snapshot *s, uint32_t frame_id);
/* Text writers (memsnap/core.h): "file:line function" (file shortened to its last two
 * path parts, joined by '/' whatever separated them; each part at most 511 bytes),
 * "compiled partition_0 (inductor cztfzrza)" for generated code, "(no stack)" for an
 * unknown id. */
MS_API size_t ms_site_format(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap);
/* As ms_site_format with the file's last `parts` path parts (0: the whole path): what
 * tells apart two sites whose short texts are the same. */
MS_API size_t ms_site_format_parts(const ms_snapshot *s, uint32_t frame_id, unsigned parts,
                                   char *buf, size_t cap);
/* "file:line" only (same shortening); C++ frames give the library's name; generated
 * code gives "compiled". */
MS_API size_t ms_site_format_location(const ms_snapshot *s, uint32_t frame_id, char *buf,
                                      size_t cap);
/* The function name: Python names as they are (<lambda>, <module>); C++ names lose
 * their return type, template arguments and parameter list; generated code's names
 * carry what made them, "partition_0 (inductor cztfzrza)" (the first eight characters
 * of Inductor's module hash) or "forward (<eval_with_key>.3)"; "" for an unknown id. */
MS_API size_t ms_site_format_function(const ms_snapshot *s, uint32_t frame_id, char *buf,
                                      size_t cap);
/* A path as sites show it: its last two parts joined by '/' ("cs336/model.py" for
 * D:\Dev\cs336\model.py), a path of fewer parts whole. */
MS_API size_t ms_path_format(const char *path, char *buf, size_t cap);

/* ------------------------------------------------------------------ site totals */

typedef struct ms_site_total {
    uint32_t site;   /* frame id, or UINT32_MAX for allocations without a stack */
    uint64_t bytes;
    uint64_t count;
    /* The user's line behind the site's allocations (ms_stack_user_frame): of the user
     * lines its allocations come from, the one behind the most bytes (ties: the lowest
     * frame id); UINT32_MAX when none has one. */
    uint32_t user_frame;
    /* The stack behind the most bytes of the site's allocations (ties: the lowest id);
     * MS_NO_STACK when none has one. */
    uint32_t stack;
} ms_site_total;

/* Groups allocations by ms_stack_site(), largest bytes first. */
MS_API int ms_site_totals(ms_site_total **out, size_t *n_out, const ms_snapshot *s,
                          const ms_alloc *allocs, size_t n_allocs, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
