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
    return first_python != UINT32_MAX ? first_python : frames[0];
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

int ms_site_format_location(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    int n;
    if (!f)
        n = snprintf(buf, cap, "(no stack)");
    else
        n = snprintf(buf, cap, "%s:%lld", short_path(ms_snapshot_string(s, f->filename)),
                     (long long)f->line);
    return n < 0 ? MS_ERR_ARG : 0;
}

int ms_site_format(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap)
{
    const ms_frame *f = ms_snapshot_frame(s, frame_id);
    int n;
    if (!f)
        n = snprintf(buf, cap, "(no stack)");
    else
        n = snprintf(buf, cap, "%s:%lld %s", short_path(ms_snapshot_string(s, f->filename)),
                     (long long)f->line, ms_snapshot_string(s, f->name));
    return n < 0 ? MS_ERR_ARG : 0;
}
