/* Allocation sites: which line of the user's code an allocation belongs to. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "paths.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* ------------------------------------------------------------------ the classifier */

/* The path rules (paths.c) read every machine's paths alike; the kinds fold them:
 * torch.compile's own frames and the code it writes are compiled code, and the standard
 * library is the user's by kind (ms_stack_user_frame passes over it). */
static ms_frame_kind kind_of(ms__file_kind f)
{
    switch (f) {
    case MS__FILE_GENERATED:
    case MS__FILE_COMPILER:
        return MS_FRAME_COMPILED;
    case MS__FILE_NATIVE:
        return MS_FRAME_NATIVE;
    case MS__FILE_TORCH:
        return MS_FRAME_TORCH;
    case MS__FILE_LIBRARY:
        return MS_FRAME_LIBRARY;
    case MS__FILE_USER:
    case MS__FILE_STDLIB:
        break;
    }
    return MS_FRAME_USER;
}

bool ms_frame_kind_is_python(ms_frame_kind k)
{
    return k != MS_FRAME_NATIVE;
}

bool ms_frame_kind_is_internal(ms_frame_kind k)
{
    return k == MS_FRAME_TORCH || k == MS_FRAME_COMPILED;
}

static uint32_t python_roles(const char *path, const char *name)
{
    uint32_t r = 0;
    /* The package rules below read '/'; a Windows path is read with its '\\' turned. */
    char turned[1024];
    const char *file = path;
    if (strchr(path, '\\')) {
        snprintf(turned, sizeof turned, "%s", path);
        for (char *c = turned; *c; c++)
            *c = *c == '\\' ? '/' : *c;
        file = turned;
    }
    const char *base = ms__path_base(file);
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
    ms__file_kind f = ms__file_classify(file);
    c.kind = kind_of(f);
    c.roles = ms_frame_kind_is_python(c.kind) ? python_roles(file, name) : native_roles(name);
    if (f == MS__FILE_GENERATED)
        c.roles |= MS_FRAME_ROLE_GENERATED;
    return c;
}

ms_frame_kind ms_frame_kind_of(const ms_snapshot *s, uint32_t frame_id)
{
    if (!s || frame_id >= s->n_frames)
        return MS_FRAME_NATIVE;
    return kind_of(ms__file_classify(ms_snapshot_string(s, s->frames[frame_id].filename)));
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

/* ------------------------------------------------------------------ compiled code's sites */

typedef struct gen_key {
    uint32_t file, name, frame;
} gen_key;

static int gen_key_cmp(const void *a, const void *b)
{
    const gen_key *x = a, *y = b;
    return MS__CMP3(x->file, y->file, x->name, y->name, x->frame, y->frame);
}

static int gen_pair_cmp(const void *a, const void *b)
{
    return ms__cmp_u32(a, b); /* by the first of the pair */
}

/* A generated module's lines mean nothing to its user (the file is a cache entry named
 * by a hash), so each of its functions is one site: every frame of one (file, function)
 * stands for the first of them. Only the frames of generated code are kept. */
int ms__sites_prepare(ms_snapshot *s)
{
    gen_key *k = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < s->n_frames; i++) {
        if (!ms__file_is_generated(ms_snapshot_string(s, s->frames[i].filename)))
            continue;
        if (n == cap && !ms__grow((void **)&k, &cap, n + 1, sizeof *k)) {
            free(k);
            return -1;
        }
        k[n++] = (gen_key){s->frames[i].filename, s->frames[i].name, (uint32_t)i};
    }
    if (!n)
        return 0;
    uint32_t *pairs = malloc(n * 2 * sizeof *pairs);
    if (!pairs) {
        free(k);
        return -1;
    }
    qsort(k, n, sizeof *k, gen_key_cmp);
    for (size_t i = 0, rep = 0; i < n; i++) {
        if (k[i].file != k[rep].file || k[i].name != k[rep].name)
            rep = i;
        pairs[2 * i] = k[i].frame;
        pairs[2 * i + 1] = k[rep].frame;
    }
    free(k);
    qsort(pairs, n, 2 * sizeof *pairs, gen_pair_cmp);
    s->generated = pairs;
    s->n_generated = n;
    return 0;
}

static uint32_t generated_site(const ms_snapshot *s, uint32_t frame)
{
    uint32_t want[2] = {frame, 0};
    const uint32_t *hit = s->generated ? bsearch(want, s->generated, s->n_generated,
                                                 2 * sizeof *want, gen_pair_cmp)
                                       : NULL;
    return hit ? hit[1] : frame;
}

static ms__file_kind file_of(const ms_snapshot *s, uint32_t frame)
{
    return ms__file_classify(ms_snapshot_string(s, s->frames[frame].filename));
}

/* ------------------------------------------------------------------ sites */

/* Whether the next Python frame outward of frames[i] is code a user can read (the
 * user's, a library's): generated code is called by torch's runtime, so such a frame
 * is the op's source line that the recording kept. */
static bool source_follows(const ms_snapshot *s, const uint32_t *frames, size_t n, size_t i)
{
    for (size_t j = i + 1; j < n; j++) {
        ms_frame_kind k = kind_of(file_of(s, frames[j]));
        if (ms_frame_kind_is_python(k))
            return !ms_frame_kind_is_internal(k);
    }
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
        ms__file_kind f = file_of(s, frames[i]);
        ms_frame_kind k = kind_of(f);
        if (!ms_frame_kind_is_python(k))
            continue;
        /* Code torch.compile wrote made the allocation: the compiled function is the
         * site, as the line of eager code would be (torch's frames inside it skipped),
         * unless the recording kept the source lines of the op it ran (PyTorch puts
         * them right outside the generated frame, before torch's runtime): then the
         * source line is, as in eager mode. */
        if (f == MS__FILE_GENERATED && !source_follows(s, frames, n, i))
            return generated_site(s, frames[i]);
        if (f == MS__FILE_GENERATED)
            continue;
        /* The standard library's wrappers (contextlib's decorator `inner`, functools)
         * pass a call on: the code they wrap, or the line that called them, is the
         * site, as for torch's own frames. */
        if (!ms_frame_kind_is_internal(k) && f != MS__FILE_STDLIB)
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

bool ms_frame_is_stdlib(const ms_snapshot *s, uint32_t frame_id)
{
    if (!s || frame_id >= s->n_frames)
        return false;
    return file_of(s, frame_id) == MS__FILE_STDLIB;
}

/* The innermost frame of the user's own code. When the site is a compiled function (no
 * source line kept), the user's frames inside the compiled model (a forward Dynamo
 * rewrote) are part of it: the user's line is then the one that called the model, the
 * innermost one outside every compiled frame. */
static uint32_t compute_user_frame(const ms_snapshot *s, uint32_t stack_id)
{
    size_t n;
    const uint32_t *frames = ms_snapshot_stack(s, stack_id, &n);
    uint32_t site = !n ? UINT32_MAX : s->site_cache ? ms_stack_site(s, stack_id) : compute_site(s, stack_id);
    bool generated = site != UINT32_MAX && file_of(s, site) == MS__FILE_GENERATED;
    uint32_t first = UINT32_MAX, outside = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        ms__file_kind f = file_of(s, frames[i]);
        if (f == MS__FILE_GENERATED || f == MS__FILE_COMPILER) {
            outside = UINT32_MAX;
        } else if (f == MS__FILE_USER) {
            if (first == UINT32_MAX)
                first = frames[i];
            if (outside == UINT32_MAX)
                outside = frames[i];
        }
    }
    return generated ? outside : first;
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

/* "dir/file.py:line" with the file's last `parts` parts; "compiled" for generated code
 * (its lines name nothing a person can open); a shared library's name for C++. */
static size_t format_location(const ms_snapshot *s, uint32_t frame_id, unsigned parts, char *buf,
                              size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    if (!f)
        return ms__text_done(buf, cap, snprintf(buf, cap, "(no stack)"));
    const char *file = ms_snapshot_string(s, f->filename);
    if (ms__file_is_generated(file))
        return ms__text_done(buf, cap, snprintf(buf, cap, "compiled"));
    if (!ends_with(file, ".py"))
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s", ms__path_base(file)));
    char line[32];
    if (f->line == MS_LINE_UNKNOWN)
        snprintf(line, sizeof line, ":?");
    else
        snprintf(line, sizeof line, ":%lld", (long long)f->line);
    size_t o = ms__path_short(file, parts, buf, cap);
    if (o + 1 < cap) /* the path fit: the line goes after it */
        return o + ms__text_done(buf + o, cap - o, snprintf(buf + o, cap - o, "%s", line));
    return o + strlen(line);
}

size_t ms_site_format_location(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    return format_location(s, frame_id, 2, buf, cap);
}

size_t ms_site_format_function(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    if (!f)
        return short_function("", buf, cap);
    const char *file = ms_snapshot_string(s, f->filename);
    const char *name = ms_snapshot_string(s, f->name);
    if (ms__file_is_generated(file)) {
        char tag[128];
        ms__path_generated_tag(file, tag, sizeof tag);
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s (%s)", name, tag));
    }
    /* Python names are shown as they are: <lambda>, <module> and <genexpr> are names, not
     * template arguments. */
    if (ms_frame_kind_is_python(kind_of(ms__file_classify(file))))
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s", name));
    return short_function(name, buf, cap);
}

size_t ms_site_format_parts(const ms_snapshot *s, uint32_t frame_id, unsigned parts, char *buf,
                            size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    if (!f)
        return ms__text_done(buf, cap, snprintf(buf, cap, "(no stack)"));
    char where[512], function[512];
    format_location(s, frame_id, parts, where, sizeof where);
    ms_site_format_function(s, frame_id, function, sizeof function);
    return ms__text_done(buf, cap, snprintf(buf, cap, "%s %s", where, function));
}

size_t ms_site_format(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    return ms_site_format_parts(s, frame_id, 2, buf, cap);
}

size_t ms_path_format(const char *path, char *buf, size_t cap)
{
    return ms__path_short(path ? path : "", 2, buf, cap);
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
