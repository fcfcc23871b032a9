/* Allocation sites: which line of the user's code an allocation belongs to. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* torch's own Python package: the frames a user cannot act on. Matched as an installed
 * package (site-/dist-packages) or a source checkout, so a virtualenv that merely lives
 * under a directory called torch does not hide the user's own code. */
static bool in_torch(const char *filename)
{
    return strstr(filename, "-packages/torch/") != NULL || strstr(filename, "/pytorch/torch/") != NULL ||
           strncmp(filename, "torch/", 6) == 0;
}

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
        const char *file = ms_snapshot_string(s, s->frames[frames[i]].filename);
        if (!ends_with(file, ".py"))
            continue;
        if (!in_torch(file))
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
        if (strncmp(name, "torch::autograd::generated::", 28) == 0 && strstr(name, "::apply("))
            return frames[i];
        if (first_real == UINT32_MAX && !is_machinery(name))
            first_real = frames[i];
    }
    return first_real != UINT32_MAX ? first_real : frames[0];
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

/* C++ frames name a shared library and an offset in it, and carry full signatures:
 * the library's name and the function without its parameter list read better. */
static size_t function_len(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || name[n - 1] != ')')
        return n;
    int depth = 0;
    for (size_t i = n; i-- > 0;) {
        if (name[i] == ')')
            depth++;
        else if (name[i] == '(' && --depth == 0)
            return i > 0 ? i : n;
    }
    return n;
}

int ms_site_format_location(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    int n;
    if (!f) {
        n = snprintf(buf, cap, "(no stack)");
    } else {
        const char *file = ms_snapshot_string(s, f->filename);
        if (ends_with(file, ".py"))
            n = snprintf(buf, cap, "%s:%lld", short_path(file), (long long)f->line);
        else
            n = snprintf(buf, cap, "%s", (strrchr(file, '/') ? strrchr(file, '/') + 1 : file));
    }
    return n < 0 ? MS_ERR_ARG : 0;
}

int ms_site_format_function(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    const char *name = f ? ms_snapshot_string(s, f->name) : "";
    return snprintf(buf, cap, "%.*s", (int)function_len(name), name) < 0 ? MS_ERR_ARG : 0;
}

int ms_site_format(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    if (!f)
        return snprintf(buf, cap, "(no stack)") < 0 ? MS_ERR_ARG : 0;
    char where[512];
    ms_site_format_location(s, frame_id, where, sizeof where);
    const char *name = ms_snapshot_string(s, f->name);
    int n = snprintf(buf, cap, "%s %.*s", where, (int)function_len(name), name);
    return n < 0 ? MS_ERR_ARG : 0;
}
