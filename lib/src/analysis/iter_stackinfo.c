/* What each stack says about program structure. Frames are classified once (a trace of
 * millions of events holds only a few thousand distinct frames), stacks once each. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "compile_internal.h"
#include "iter_internal.h"

enum {
    F_PY = 1u << 0,
    F_INTERNAL = 1u << 1, /* torch's or compiled code: not the user's line */
    F_OPTIM = 1u << 2,
    F_LAYER = 1u << 3,    /* forward or backward: a layer frame */
    F_FORWARD = 1u << 4,
    F_ZERO_GRAD = 1u << 5,
    F_BWD_NODE = 1u << 6,
    F_WORKSPACE = 1u << 7,
    F_LIBRARY = 1u << 8,  /* an installed package's Python: not the user's line either */
    F_BACKWARD = 1u << 9  /* Python entering autograd, or the C++ engine running it */
};

/* The structural bits of one frame, from the library's one frame classifier. */
static uint16_t frame_flags(const ms_snapshot *s, uint32_t id)
{
    ms_frame_class c = ms_frame_classify(s, id);
    unsigned flags = 0;
    if (ms_frame_kind_is_python(c.kind)) {
        flags |= F_PY;
        if (ms_frame_kind_is_internal(c.kind))
            flags |= F_INTERNAL;
        if (c.kind == MS_FRAME_LIBRARY)
            flags |= F_LIBRARY;
        if (c.roles & MS_FRAME_ROLE_OPTIMIZER)
            flags |= F_OPTIM;
        if (c.roles & MS_FRAME_ROLE_FORWARD)
            flags |= F_FORWARD | F_LAYER;
        if (c.roles & MS_FRAME_ROLE_BACKWARD)
            flags |= F_LAYER | F_BACKWARD;
        if (c.roles & MS_FRAME_ROLE_ZERO_GRAD)
            flags |= F_ZERO_GRAD;
    } else {
        if (c.roles & MS_FRAME_ROLE_NODE)
            flags |= F_BWD_NODE;
        if (c.roles & (MS_FRAME_ROLE_AUTOGRAD | MS_FRAME_ROLE_NODE))
            flags |= F_BACKWARD;
        /* Library buffers kept on purpose: cuBLAS/cuDNN workspaces, NCCL's buffers. */
        if (c.roles & (MS_FRAME_ROLE_WORKSPACE | MS_FRAME_ROLE_COLLECTIVE))
            flags |= F_WORKSPACE;
    }
    return (uint16_t)flags;
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
    uint16_t *ff = calloc(nframes ? nframes : 1, sizeof *ff);
    ms__stackinfo *si = calloc(nstacks ? nstacks : 1, sizeof *si);
    uint8_t *compile = NULL;
    bool any_compile = false;
    if (!ff || !si || ms__compile_stacks(&compile, &any_compile, s, err)) {
        free(ff);
        free(si);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for %zu stacks", nstacks);
    }
    for (size_t i = 0; i < nframes; i++)
        ff[i] = frame_flags(s, (uint32_t)i);

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
            uint16_t f = ff[id];
            if (f & F_BACKWARD)
                flags |= MS__ST_BACKWARD;
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
            if ((f & F_LAYER) && x->layer == UINT32_MAX) {
                x->layer = id;
                layer_pos = k;
            }
            if (f & F_FORWARD) {
                if (x->fwd_depth < UINT8_MAX)
                    x->fwd_depth++;
                outer_fwd = id;
                seen_outer_fwd = true;
                x->call_key = UINT32_MAX;
            } else if (seen_outer_fwd && !(f & (F_INTERNAL | F_LIBRARY)) &&
                       x->call_key == UINT32_MAX) {
                /* The user line that called the outermost forward (`out = model(x)`):
                 * past torch's, compiled and installed libraries' frames. */
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
        if (compile[sid])
            flags |= MS__ST_COMPILE;
        x->flags = (uint8_t)flags;
    }
    free(compile);
    free(ff);
    *out = si;
    return 0;
}
