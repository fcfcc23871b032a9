/* Reading a snapshot (input -> VM -> model) and the model's accessors. */
#include <stdlib.h>
#include <string.h>

#include "model_build.h"

/* Reads the snapshot from the VM's input once it is open (`opened`: 0, or the error of
 * opening it); the VM is released, and a snapshot that failed freed, either way. */
static int read_with(ms_snapshot **out, ms_vm *vm, int opened, ms_error *err)
{
    ms_snapshot *s = vm->snap;
    /* Known strings first, so their ids are the S_* constants the VM switches on. */
    static const char *const known[] = {
#define MS_X_KNOWN_TEXT(id, text) text,
        MS_KNOWN_STRINGS(MS_X_KNOWN_TEXT)
#undef MS_X_KNOWN_TEXT
    };
    int rc = opened;
    if (!rc) {
        vm->in.max_expansion = vm->lim.max_expansion;
        vm->in.max_input_bytes = vm->lim.max_input_bytes;
    }
    for (size_t i = 0; !rc && i < sizeof known / sizeof known[0]; i++)
        if (ms__strtab_intern(&s->strings, known[i], strlen(known[i])) != i)
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    if (!rc)
        rc = ms__vm_run(vm);
    if (!rc)
        rc = ms__model_build(vm);
    if (!opened)
        s->input_bytes = (uint64_t)ms__input_offset(&vm->in, vm->in.pos);
    ms__vm_release(vm);
    if (rc) {
        ms_snapshot_free(s);
        return rc;
    }
    if (s->protocol < 0)
        s->protocol = 0; /* protocol 0/1 pickles carry no PROTO opcode */
    *out = s;
    return 0;
}

static int start(ms_vm *vm, const ms_limits *limits, ms_error *err)
{
    memset(vm, 0, sizeof *vm);
    vm->lim = limits ? *limits : ms_limits_default();
    vm->err = err;
    vm->snap = calloc(1, sizeof *vm->snap);
    if (!vm->snap)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    vm->snap->protocol = -1;
    vm->snap->threads = vm->lim.threads;
    ms__strtab_init(&vm->snap->strings);
    return 0;
}

int ms_snapshot_read_file(ms_snapshot **out, const char *path, const ms_limits *limits,
                          ms_error *err)
{
    ms_error_clear(err);
    *out = NULL;
    if (!path)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no path given");
    ms_vm vm;
    int rc = start(&vm, limits, err);
    if (rc)
        return rc;
    rc = ms__input_open_file(&vm.in, path, vm.lim.max_string, err);
    return read_with(out, &vm, rc, err);
}

int ms_snapshot_read_memory(ms_snapshot **out, const void *data, size_t len,
                            const ms_limits *limits, ms_error *err)
{
    ms_error_clear(err);
    *out = NULL;
    if (!data && len)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no data given");
    ms_vm vm;
    int rc = start(&vm, limits, err);
    if (rc)
        return rc;
    rc = ms__input_open_memory(&vm.in, data ? data : "", len, vm.lim.max_string, err);
    return read_with(out, &vm, rc, err);
}

void ms_snapshot_free(ms_snapshot *s)
{
    if (!s)
        return;
    ms__strtab_free(&s->strings);
    MS__FREE_ALL(s->frames, s->stack_frames, s->stack_start, s->site_cache, s->user_cache,
                 s->generated, s->streams);
    for (int d = 0; d < s->n_devices; d++) {
        ms_trace_build *t = &s->traces[d];
        MS__FREE_ALL(t->action, t->addr, t->size, t->time_us, t->stack, t->stream,
                     t->compile_context, t->user_metadata);
    }
    MS__FREE_ALL(s->traces, s->segments, s->blocks, s->annotations, s->settings, s);
}

int ms_snapshot_pickle_protocol(const ms_snapshot *s)
{
    return s->protocol;
}

uint64_t ms_snapshot_input_bytes(const ms_snapshot *s)
{
    return s->input_bytes;
}

int ms_snapshot_device_count(const ms_snapshot *s)
{
    return s->n_devices;
}

int ms_snapshot_busiest_device(const ms_snapshot *s)
{
    int best = 0;
    size_t best_n = 0;
    for (int d = 0; d < s->n_devices; d++) {
        if (s->traces[d].view.n > best_n) {
            best = d;
            best_n = s->traces[d].view.n;
        }
    }
    return best;
}

const ms_trace *ms_snapshot_trace(const ms_snapshot *s, int device)
{
    static const ms_trace empty = {0, 0, NULL, NULL, NULL, NULL, NULL, NULL, true, NULL, NULL,
                                   false, 0};
    if (device < 0 || device >= s->n_devices)
        return &empty;
    return &s->traces[device].view;
}

const char *ms_snapshot_string(const ms_snapshot *s, uint32_t id)
{
    if (id >= s->strings.count)
        return "";
    return ms__strtab_get(&s->strings, id);
}

size_t ms_snapshot_string_count(const ms_snapshot *s)
{
    return s->strings.count;
}

const ms_frame *ms_snapshot_frame(const ms_snapshot *s, uint32_t frame_id)
{
    return frame_id < s->n_frames ? &s->frames[frame_id] : NULL;
}

size_t ms_snapshot_frame_count(const ms_snapshot *s)
{
    return s->n_frames;
}

const uint32_t *ms_snapshot_stack(const ms_snapshot *s, uint32_t stack_id, size_t *n)
{
    if (stack_id >= s->n_stacks) {
        *n = 0;
        return NULL;
    }
    *n = s->stack_start[stack_id + 1] - s->stack_start[stack_id];
    return s->stack_frames + s->stack_start[stack_id];
}

size_t ms_snapshot_stack_count(const ms_snapshot *s)
{
    return s->n_stacks;
}

uint64_t ms_snapshot_stream(const ms_snapshot *s, uint16_t stream_id)
{
    return stream_id < s->n_streams ? s->streams[stream_id] : 0;
}

size_t ms_snapshot_stream_count(const ms_snapshot *s)
{
    return s->n_streams;
}

const ms_segment *ms_snapshot_segments(const ms_snapshot *s, size_t *n)
{
    *n = s->n_segments;
    return s->segments;
}

const ms_block *ms_snapshot_blocks(const ms_snapshot *s, size_t *n)
{
    *n = s->n_blocks;
    return s->blocks;
}

const ms_annotation *ms_snapshot_annotations(const ms_snapshot *s, size_t *n)
{
    *n = s->n_annotations;
    return s->annotations;
}

const ms_setting *ms_snapshot_settings(const ms_snapshot *s, size_t *n)
{
    *n = s->n_settings;
    return s->settings;
}

const char *ms_action_name(ms_action a)
{
    static const char *const names[MS_ACT_COUNT] = {
        "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
        "segment_map", "segment_unmap", "oom", "snapshot", "other"};
    return (unsigned)a < MS_ACT_COUNT ? names[a] : "other";
}

size_t ms_snapshot_annotations_unplaced(const ms_snapshot *s)
{
    return s->n_annotations_unplaced;
}

int ms__frame_flag_arrays(uint8_t **frames, uint8_t **stacks, const ms_snapshot *s,
                          uint8_t (*fn)(const ms_snapshot *s, uint32_t frame), ms_error *err)
{
    size_t nframes = ms_snapshot_frame_count(s), nstacks = ms_snapshot_stack_count(s);
    uint8_t *ff = malloc(nframes ? nframes : 1);
    uint8_t *sf = calloc(nstacks ? nstacks : 1, 1);
    if (!ff || !sf) {
        free(ff);
        free(sf);
        *frames = *stacks = NULL;
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "no memory for %zu stacks", nstacks);
    }
    for (size_t i = 0; i < nframes; i++)
        ff[i] = fn(s, (uint32_t)i);
    *frames = ff;
    *stacks = sf;
    return 0;
}
