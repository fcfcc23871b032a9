/* What each stack says about program structure. Frames are classified once (a trace of
 * millions of events holds only a few thousand distinct frames), stacks once each. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "iter_internal.h"

enum {
    F_PY = 1u << 0,
    F_TORCH = 1u << 1,
    F_OPTIM = 1u << 2,
    F_FORWARD = 1u << 3,
    F_BACKWARD = 1u << 4,
    F_ZERO_GRAD = 1u << 5,
    F_BWD_NODE = 1u << 6,
    F_WORKSPACE = 1u << 7
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && !memcmp(s + ls - lx, suffix, lx);
}

static uint8_t frame_flags(const ms_snapshot *s, const ms_frame *f)
{
    const char *file = ms_snapshot_string(s, f->filename);
    const char *name = ms_snapshot_string(s, f->name);
    unsigned flags = 0;
    if (ends_with(file, ".py")) {
        flags |= F_PY;
        /* Same rule as ms_stack_site: torch's own package is not user code. */
        if (strstr(file, "/torch/") || !strncmp(file, "torch/", 6))
            flags |= F_TORCH;
        const char *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        /* Optimizers live in torch/optim/ but also in apex/optimizers/, bitsandbytes/optim/,
         * transformers/optimization.py: match the package, not one library. */
        if (strstr(file, "/optim/") || strstr(file, "/optimizers/") || !strncmp(base, "optim", 5))
            flags |= F_OPTIM;
        if (!strcmp(name, "forward"))
            flags |= F_FORWARD;
        else if (!strcmp(name, "backward"))
            flags |= F_BACKWARD;
        else if (!strcmp(name, "zero_grad"))
            flags |= F_ZERO_GRAD;
    } else {
        /* Backward allocations run on autograd threads without Python frames; the
         * generated node ("AddmmBackward0_apply_functional") names the layer op. */
        if (strstr(name, "Backward") && strstr(name, "apply"))
            flags |= F_BWD_NODE;
        /* cuBLAS/cuDNN workspaces are allocated on first use and kept on purpose. */
        if (strstr(name, "Workspace") || strstr(name, "workspace"))
            flags |= F_WORKSPACE;
    }
    return (uint8_t)flags;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

int ms__stackinfo_build(ms__stackinfo **out, const ms_snapshot *s, ms_error *err)
{
    *out = NULL;
    size_t nframes = ms_snapshot_frame_count(s), nstacks = ms_snapshot_stack_count(s);
    uint8_t *ff = calloc(nframes ? nframes : 1, 1);
    ms__stackinfo *si = calloc(nstacks ? nstacks : 1, sizeof *si);
    if (!ff || !si) {
        free(ff);
        free(si);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for %zu stacks", nstacks);
    }
    for (size_t i = 0; i < nframes; i++)
        ff[i] = frame_flags(s, ms_snapshot_frame(s, (uint32_t)i));

    for (size_t sid = 0; sid < nstacks; sid++) {
        size_t n = 0;
        const uint32_t *fr = ms_snapshot_stack(s, (uint32_t)sid, &n);
        ms__stackinfo *x = &si[sid];
        x->layer = UINT32_MAX;
        x->call_key = UINT32_MAX;
        uint32_t node = UINT32_MAX, outer_fwd = UINT32_MAX;
        size_t layer_pos = n;
        bool seen_outer_fwd = false;
        unsigned flags = 0;
        /* With stacks="all" the C++ unwinder may append Python frames after the native
         * ones, but Python frames keep their innermost-first order among themselves, so
         * every structural question below looks at Python frames only. */
        for (size_t k = 0; k < n; k++) {
            uint32_t id = fr[k];
            if (id >= nframes)
                continue;
            uint8_t f = ff[id];
            if (f & F_WORKSPACE)
                flags |= MS__ST_WORKSPACE;
            if ((f & F_BWD_NODE) && node == UINT32_MAX)
                node = id;
            if (!(f & F_PY))
                continue;
            flags |= MS__ST_PYTHON;
            if (f & F_OPTIM) {
                flags |= MS__ST_OPTIM;
            }
            if (f & F_ZERO_GRAD)
                flags |= MS__ST_ZERO_GRAD;
            if ((f & (F_FORWARD | F_BACKWARD)) && x->layer == UINT32_MAX) {
                x->layer = id;
                layer_pos = k;
            }
            if (f & F_FORWARD) {
                if (x->fwd_depth < UINT8_MAX)
                    x->fwd_depth++;
                outer_fwd = id;
                seen_outer_fwd = true;
                x->call_key = UINT32_MAX;
            } else if (seen_outer_fwd && !(f & F_TORCH) && x->call_key == UINT32_MAX) {
                /* The user line that called the outermost forward (`out = model(x)`). */
                x->call_key = id;
            }
        }
        if (seen_outer_fwd && x->call_key == UINT32_MAX)
            x->call_key = outer_fwd;
        if (!(flags & MS__ST_OPTIM))
            flags &= ~(unsigned)MS__ST_ZERO_GRAD;
        if (x->layer == UINT32_MAX) {
            x->layer = node;
        } else {
            /* A call is the layer function plus the chain of Python frames that called
             * it; the layer frame's own line is left out because it moves within one call. */
            const ms_frame *lf = ms_snapshot_frame(s, x->layer);
            uint64_t h = mix(mix(1469598103934665603ull, lf->filename), lf->name);
            for (size_t k = layer_pos + 1; k < n; k++)
                if (fr[k] < nframes && (ff[fr[k]] & F_PY))
                    h = mix(h, fr[k]);
            x->layer_call = h ? h : 1;
        }
        x->flags = (uint8_t)flags;
    }
    free(ff);
    *out = si;
    return 0;
}
