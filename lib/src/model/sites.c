/* Allocation sites: which line of the user's code an allocation belongs to. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* ------------------------------------------------------------------ the classifier */

/* torch's own Python package: the frames a user cannot act on. Matched as an installed
 * package (site-/dist-packages) or a source checkout, so a virtualenv that merely lives
 * under a directory called torch (/opt/torch/.venv/) does not hide the user's own code
 * nor make every installed library torch's. */
static bool in_torch(const char *filename)
{
    return strstr(filename, "-packages/torch/") != NULL || strstr(filename, "/pytorch/torch/") != NULL ||
           strncmp(filename, "torch/", 6) == 0;
}

/* torch.compile's own frames and the code it generates: Dynamo's frame evaluation,
 * Inductor (and the Triton/C++ wrappers it writes into its cache directory,
 * /tmp/torchinductor_USER/xx/cxyz.py), and FX graph modules (`<eval_with_key>.N`). The
 * user's line is the one that called the compiled model, as for torch's own frames. */
static bool is_compiled(const char *filename)
{
    return strstr(filename, "torch/_dynamo/") != NULL || strstr(filename, "torch/_inductor/") != NULL ||
           strstr(filename, "/torchinductor_") != NULL || strncmp(filename, "torchinductor_", 14) == 0 ||
           strncmp(filename, "<eval_with_key>", 15) == 0;
}

bool ms_frame_kind_is_python(ms_frame_kind k)
{
    return k != MS_FRAME_NATIVE;
}

bool ms_frame_kind_is_internal(ms_frame_kind k)
{
    return k == MS_FRAME_TORCH || k == MS_FRAME_COMPILED;
}

static ms_frame_kind kind_of_file(const char *file)
{
    if (is_compiled(file))
        return MS_FRAME_COMPILED;
    if (!ends_with(file, ".py"))
        return MS_FRAME_NATIVE;
    if (in_torch(file))
        return MS_FRAME_TORCH;
    if (strstr(file, "-packages/"))
        return MS_FRAME_LIBRARY;
    return MS_FRAME_USER;
}

static uint32_t python_roles(const char *file, const char *name)
{
    uint32_t r = 0;
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    /* Optimizers live in torch/optim/ but also in apex/optimizers/, bitsandbytes/optim/,
     * transformers/optimization.py: match the package, not one library. */
    if (strstr(file, "/optim/") || strstr(file, "/optimizers/") || !strncmp(base, "optim", 5))
        r |= MS_FRAME_ROLE_OPTIMIZER;
    if (!strcmp(name, "forward"))
        r |= MS_FRAME_ROLE_FORWARD;
    else if (!strcmp(name, "backward") || !strcmp(name, "_make_grads") ||
             !strcmp(name, "_engine_run_backward"))
        r |= MS_FRAME_ROLE_BACKWARD;
    else if (!strcmp(name, "zero_grad"))
        r |= MS_FRAME_ROLE_ZERO_GRAD;
    if ((strstr(file, "torch/nn/") &&
         (!strcmp(name, "_apply") || !strcmp(name, "to") || !strcmp(name, "cuda") ||
          !strcmp(name, "__init__") || !strcmp(name, "reset_parameters") ||
          !strcmp(name, "_load_from_state_dict") || !strcmp(name, "load_state_dict"))) ||
        !strcmp(base, "serialization.py") || !strcmp(name, "from_pretrained") ||
        !strcmp(name, "load_state_dict"))
        r |= MS_FRAME_ROLE_SETUP;
    return r;
}

static uint32_t native_roles(const char *name)
{
    uint32_t r = 0;
    /* A destructor (~AccumulateGrad when the model is deleted) is no backward. */
    bool dtor = strstr(name, "::~") != NULL;
    /* Backward allocations run on autograd threads without Python frames: the engine,
     * AccumulateGrad, and the generated node's code (AddmmBackward0::apply and the
     * AddmmBackward0_apply_functional it calls). */
    if (!dtor && (strstr(name, "torch::autograd::Engine::") || strstr(name, "AccumulateGrad") ||
                  (strstr(name, "Backward") && strstr(name, "apply"))))
        r |= MS_FRAME_ROLE_AUTOGRAD;
    /* The node's own code: its apply method or the functional it calls; each stack's
     * innermost one names the layer op (MmBackward0) a person knows from grad_fn. */
    if (!dtor && strstr(name, "Backward") && strstr(name, "apply"))
        r |= MS_FRAME_ROLE_NODE;
    /* cuBLAS/cuBLASLt/cuDNN workspaces are allocated on first use and kept on purpose. */
    if (strstr(name, "orkspace"))
        r |= MS_FRAME_ROLE_WORKSPACE;
    if (strstr(name, "nccl") || strstr(name, "NCCL"))
        r |= MS_FRAME_ROLE_COLLECTIVE;
    return r;
}

ms_frame_class ms_frame_classify(const ms_snapshot *s, uint32_t frame_id)
{
    ms_frame_class c = {MS_FRAME_NATIVE, 0};
    if (!s || frame_id >= s->n_frames)
        return c;
    const char *file = ms_snapshot_string(s, s->frames[frame_id].filename);
    const char *name = ms_snapshot_string(s, s->frames[frame_id].name);
    c.kind = kind_of_file(file);
    c.roles = ms_frame_kind_is_python(c.kind) ? python_roles(file, name) : native_roles(name);
    return c;
}

ms_frame_kind ms_frame_kind_of(const ms_snapshot *s, uint32_t frame_id)
{
    if (!s || frame_id >= s->n_frames)
        return MS_FRAME_NATIVE;
    return kind_of_file(ms_snapshot_string(s, s->frames[frame_id].filename));
}

const char *ms_frame_kind_name(ms_frame_kind k)
{
    static const char *const names[MS_FRAME_KIND_COUNT] = {"user", "torch", "native", "library",
                                                           "compiled"};
    return (unsigned)k < MS_FRAME_KIND_COUNT ? names[k] : "unknown";
}

/* ------------------------------------------------------------------ sites */

/* Frames that only record how the allocation was captured or carried out. */
static bool is_machinery(const char *name)
{
    static const char *const prefixes[] = {"torch::unwind", "torch::CapturedTraceback",
                                           "torch::cuda::", "c10::", "at::detail::empty",
                                           "at::empty", "?"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

static uint32_t compute_site(const ms_snapshot *s, uint32_t stack_id)
{
    size_t n;
    const uint32_t *frames = ms_snapshot_stack(s, stack_id, &n);
    if (n == 0)
        return UINT32_MAX;
    uint32_t first_python = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        ms_frame_kind k = ms_frame_kind_of(s, frames[i]);
        if (!ms_frame_kind_is_python(k))
            continue;
        if (!ms_frame_kind_is_internal(k))
            return frames[i];
        if (first_python == UINT32_MAX)
            first_python = frames[i];
    }
    if (first_python != UINT32_MAX)
        return first_python;
    /* No Python at all: the autograd engine's thread running a backward node. The node
     * (e.g. NllLossBackward0::apply) is what a person recognises; failing that, the first
     * frame past the capture and allocator machinery. */
    uint32_t first_real = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        const char *name = ms_snapshot_string(s, s->frames[frames[i]].name);
        /* Of the node's frames, its apply method reads best (the functional it calls
         * is an implementation detail). */
        if ((ms_frame_classify(s, frames[i]).roles & MS_FRAME_ROLE_NODE) && strstr(name, "::apply("))
            return frames[i];
        if (first_real == UINT32_MAX && !is_machinery(name))
            first_real = frames[i];
    }
    return first_real != UINT32_MAX ? first_real : frames[0];
}

/* The interpreter's own library: /usr/lib/python3.12/contextlib.py,
 * /opt/conda/lib/python3.11/multiprocessing/spawn.py. Its frames (a pool's worker, a
 * context manager) are the user's by the classifier, yet never the line a user edits. */
static bool is_stdlib_file(const char *file)
{
    if (!ends_with(file, ".py") || strstr(file, "-packages/"))
        return false;
    for (const char *p = strstr(file, "/lib"); p; p = strstr(p + 1, "/lib")) {
        const char *q = p + 4;
        if (!strncmp(q, "64", 2))
            q += 2;
        if (!strncmp(q, "/python", 7) && isdigit((unsigned char)q[7]))
            return true;
    }
    return false;
}

bool ms_frame_is_stdlib(const ms_snapshot *s, uint32_t frame_id)
{
    if (!s || frame_id >= s->n_frames)
        return false;
    return is_stdlib_file(ms_snapshot_string(s, s->frames[frame_id].filename));
}

static uint32_t compute_user_frame(const ms_snapshot *s, uint32_t stack_id)
{
    size_t n;
    const uint32_t *frames = ms_snapshot_stack(s, stack_id, &n);
    for (size_t i = 0; i < n; i++)
        if (ms_frame_kind_of(s, frames[i]) == MS_FRAME_USER && !ms_frame_is_stdlib(s, frames[i]))
            return frames[i];
    return UINT32_MAX;
}

uint32_t ms_stack_user_frame(const ms_snapshot *s, uint32_t stack_id)
{
    if (!s || stack_id >= s->n_stacks)
        return UINT32_MAX;
    if (!s->user_cache) /* a model built without the caches (tests) */
        return compute_user_frame(s, stack_id);
    /* Logically const, as the site cache: the view asks once per allocation, and a
     * stack's frames are classified by string matching. */
    uint32_t *cache = &((ms_snapshot *)s)->user_cache[stack_id];
    if (*cache == 0) {
        uint32_t f = compute_user_frame(s, stack_id);
        *cache = f == UINT32_MAX ? UINT32_MAX : f + 1; /* frame ids stay below 2^32 - 2 */
    }
    return *cache == UINT32_MAX ? UINT32_MAX : *cache - 1;
}

uint32_t ms_stack_site(const ms_snapshot *s, uint32_t stack_id)
{
    if (stack_id >= s->n_stacks)
        return UINT32_MAX;
    /* The cache is logically const: computing a site never changes the model. */
    uint32_t *cache = &((ms_snapshot *)s)->site_cache[stack_id];
    if (*cache == 0)
        *cache = compute_site(s, stack_id) + 1;
    return *cache - 1;
}

/* The last two components of a path: enough to recognise a file, short enough to read. */
static const char *short_path(const char *path)
{
    const char *last = strrchr(path, '/');
    if (!last)
        return path;
    const char *p = last;
    while (p > path && p[-1] != '/')
        p--;
    return p > path ? p : path;
}

/* C++ frames carry full signatures: return type, template arguments, parameter list,
 * "[clone .isra.0]". A person recognises the qualified name alone, so that is what is
 * shown: "void at::native::f<float, ...>(at::Tensor&) const" becomes "at::native::f".
 * Python function names pass through unchanged. */
/* Writes the short name into out/cap and returns its whole length (a text writer). */
static size_t short_function(const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    /* Drop trailing " [clone ...]" and " const" decorations. */
    for (;;) {
        while (n && name[n - 1] == ' ')
            n--;
        if (n && name[n - 1] == ']') {
            size_t i = n;
            while (i && name[i - 1] != '[')
                i--;
            if (i) {
                n = i - 1;
                continue;
            }
        }
        if (n >= 6 && memcmp(name + n - 6, " const", 6) == 0) {
            n -= 6;
            continue;
        }
        break;
    }
    /* Drop the parameter list. */
    if (n && name[n - 1] == ')') {
        int depth = 0;
        for (size_t i = n; i-- > 0;) {
            if (name[i] == ')')
                depth++;
            else if (name[i] == '(' && --depth == 0) {
                if (i > 0)
                    n = i;
                break;
            }
        }
    }
    /* Copy without template arguments; a space outside them ends a return type. */
    size_t o = 0; /* the whole text's length; what fits of it is written */
    int angle = 0, paren = 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (c == '(')
            paren++;
        else if (c == ')')
            paren--;
        if (paren == 0 && c == '<' && !(i >= 8 && memcmp(name + i - 8, "operator", 8) == 0)) {
            angle++;
            continue;
        }
        if (paren == 0 && c == '>' && angle > 0) {
            angle--;
            continue;
        }
        if (angle > 0)
            continue;
        if (c == ' ' && paren == 0) {
            o = 0; /* what came before was the return type */
            continue;
        }
        if (o + 1 < cap)
            out[o] = c;
        o++;
    }
    if (cap) {
        out[o < cap ? o : cap - 1] = '\0';
        if (o >= cap)
            ms__utf8_trim(out);
    }
    return o;
}

size_t ms_site_format_location(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    int n;
    if (!f) {
        n = snprintf(buf, cap, "(no stack)");
    } else {
        const char *file = ms_snapshot_string(s, f->filename);
        if (ends_with(file, ".py") && f->line == MS_LINE_UNKNOWN)
            n = snprintf(buf, cap, "%s:?", short_path(file));
        else if (ends_with(file, ".py"))
            n = snprintf(buf, cap, "%s:%lld", short_path(file), (long long)f->line);
        else
            n = snprintf(buf, cap, "%s", (strrchr(file, '/') ? strrchr(file, '/') + 1 : file));
    }
    return ms__text_done(buf, cap, n);
}

size_t ms_site_format_function(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    return short_function(f ? ms_snapshot_string(s, f->name) : "", buf, cap);
}

size_t ms_site_format(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    if (!f)
        return ms__text_done(buf, cap, snprintf(buf, cap, "(no stack)"));
    char where[512], function[512];
    ms_site_format_location(s, frame_id, where, sizeof where);
    ms_site_format_function(s, frame_id, function, sizeof function);
    return ms__text_done(buf, cap, snprintf(buf, cap, "%s %s", where, function));
}

size_t ms_layer_format(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    if (cap)
        buf[0] = 0;
    if (frame_id == UINT32_MAX || frame_id >= ms_snapshot_frame_count(s))
        return 0;
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    const char *name = ms_snapshot_string(s, f->name);
    const char *hit = strstr(name, "Backward");
    if (ends_with(ms_snapshot_string(s, f->filename), ".py") || !hit)
        return ms_site_format(s, frame_id, buf, cap);
    /* C++ node names are long templates; the node class ("MmBackward0") is what users
     * know from grad_fn. */
    const char *b = hit, *e = hit + 8;
    while (b > name && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
        b--;
    while (isdigit((unsigned char)*e))
        e++;
    return ms__text_done(buf, cap, snprintf(buf, cap, "%.*s", (int)(e - b), b));
}
