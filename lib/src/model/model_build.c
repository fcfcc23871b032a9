/* Turns the VM's generic objects into the typed snapshot model, checking the structure
 * FORMAT.md describes. Trace entries were already converted while parsing; here they are
 * checked to sit exactly where the file says they are. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_build.h"

#define FAIL(code, off, ...) ms__fail(vm->err, (code), (off), __VA_ARGS__)

static const char *str_of(ms_vm *vm, ms_val v)
{
    return ms__strtab_get(&vm->snap->strings, (uint32_t)VPAY(v));
}

/* Reads an optional integer field; a present field of the wrong type is an error. */
static int get_int(ms_vm *vm, const ms_obj *d, uint32_t key, const char *what, int64_t *out)
{
    ms_val v = 0;
    if (!ms__vm_dict_get(d, key, &v) || (VTAG(v) == T_SPC && VPAY(v) == SPC_NONE))
        return 0;
    if (!ms__vm_int(vm, v, out))
        return FAIL(MS_ERR_FORMAT, d->offset, "%s '%s' is a %s, expected an int of 64 bits", what,
                    ms__strtab_get(&vm->snap->strings, key), ms__vm_type_name(vm, v));
    return 0;
}

static int get_u64(ms_vm *vm, const ms_obj *d, uint32_t key, const char *what, uint64_t *out)
{
    int64_t i = 0;
    int rc = get_int(vm, d, key, what, &i);
    *out = (uint64_t)i;
    return rc;
}

/* A size field: below the ceiling of checked_math.h, or bad input at the dict's offset. */
static int get_size(ms_vm *vm, const ms_obj *d, uint32_t key, const char *what, uint64_t *out)
{
    int rc = get_u64(vm, d, key, what, out);
    if (!rc && !ms__size_ok(*out))
        return FAIL(MS_ERR_FORMAT, d->offset, "%s '%s' is %" PRId64 " bytes, beyond any GPU (limit 2^56 B)",
                    what, ms__strtab_get(&vm->snap->strings, key), (int64_t)*out);
    return rc;
}

static int get_str(ms_vm *vm, const ms_obj *d, uint32_t key, uint32_t *out)
{
    ms_val v = 0;
    *out = MS_NO_STRING;
    if (!ms__vm_dict_get(d, key, &v))
        return 0;
    if (VTAG(v) != T_STR)
        return FAIL(MS_ERR_FORMAT, d->offset, "'%s' is a %s, expected a str",
                    ms__strtab_get(&vm->snap->strings, key), ms__vm_type_name(vm, v));
    *out = (uint32_t)VPAY(v);
    return 0;
}

static int get_stack(ms_vm *vm, const ms_obj *d, uint32_t *out)
{
    ms_val v = 0;
    *out = MS_NO_STACK;
    if (!ms__vm_dict_get(d, S_FRAMES, &v))
        return 0;
    return ms__vm_stack_of(vm, v, out, d->offset);
}

/* A list (or tuple) under `key` of the root; absent is fine, another type is not. */
static int root_list(ms_vm *vm, const ms_obj *root, uint32_t key, ms_obj **out)
{
    ms_val v = 0;
    *out = NULL;
    if (!ms__vm_dict_get(root, key, &v) || (VTAG(v) == T_SPC && VPAY(v) == SPC_NONE))
        return 0;
    ms_obj *o = ms__vm_obj(vm, v, 0);
    if (!o || (o->type != O_LIST && o->type != O_TUPLE))
        return FAIL(MS_ERR_FORMAT, root->offset, "'%s' is a %s, expected a list",
                    ms__strtab_get(&vm->snap->strings, key), ms__vm_type_name(vm, v));
    *out = o;
    return 0;
}

/* ------------------------------------------------------------------ traces */

static int check_traces(ms_vm *vm, const ms_obj *root)
{
    ms_snapshot *s = vm->snap;
    ms_val v = 0;
    if (!ms__vm_dict_get(root, S_DEVICE_TRACES, &v))
        return FAIL(MS_ERR_FORMAT, root->offset,
                    "the snapshot dict has no 'device_traces' (is this a memory snapshot?)");
    ms_obj *outer = ms__vm_obj(vm, v, 0);
    if (!outer || (outer->type != O_LIST && outer->type != O_TUPLE))
        return FAIL(MS_ERR_FORMAT, root->offset, "'device_traces' is a %s, expected a list",
                    ms__vm_type_name(vm, v));
    if (outer->len > 65535)
        return FAIL(MS_ERR_LIMIT, outer->offset, "more than 65535 devices");
    uint64_t placed = 0;
    for (uint32_t d = 0; d < outer->len; d++) {
        ms_obj *list = ms__vm_obj(vm, outer->items[d], 0);
        if (!list || (list->type != O_LIST && list->type != O_TUPLE))
            return FAIL(MS_ERR_FORMAT, outer->offset, "device_traces[%u] is a %s, expected a list",
                        d, ms__vm_type_name(vm, outer->items[d]));
        if (d >= (uint32_t)s->n_devices) {
            /* Make room for every listed device, even with an empty trace. */
            ms_trace_build *t = realloc(s->traces, (size_t)(d + 1) * sizeof *t);
            if (!t)
                return FAIL(MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
            memset(t + s->n_devices, 0, (size_t)(d + 1 - (uint32_t)s->n_devices) * sizeof *t);
            for (uint32_t k = (uint32_t)s->n_devices; k <= d; k++)
                t[k].view.device = (int)k;
            s->traces = t;
            s->n_devices = (int)d + 1;
        }
        ms_trace_build *t = &s->traces[d];
        if (list->role == R_TRACE) {
            if (list->device != d || list->appended != t->view.n)
                return FAIL(MS_ERR_FORMAT, list->offset,
                            "device_traces[%u] does not match the entries read for it", d);
            placed += t->view.n;
            continue;
        }
        /* A list the VM did not recognise while parsing: its entries are still generic
         * dicts, converted here. */
        if (t->view.n != 0)
            return FAIL(MS_ERR_FORMAT, list->offset,
                        "device_traces[%u] does not match the entries read for it", d);
        for (uint32_t i = 0; i < list->len; i++) {
            ms_obj *e = ms__vm_obj(vm, list->items[i], O_DICT);
            if (!e)
                return FAIL(MS_ERR_FORMAT, list->offset, "device_traces[%u][%u] is a %s, expected a dict",
                            d, i, ms__vm_type_name(vm, list->items[i]));
            ms_obj fake;
            memset(&fake, 0, sizeof fake);
            fake.type = O_LIST;
            fake.role = R_TRACE;
            fake.device = (uint16_t)d;
            fake.appended = t->view.n;
            /* Reuse the append path so both ways of reading share one converter. */
            int rc = ms__vm_append_trace(vm, &fake, &list->items[i], 1, e->offset);
            if (rc)
                return rc;
            t = &s->traces[d];
        }
        placed += t->view.n;
    }
    if (placed != vm->events_total)
        return FAIL(MS_ERR_FORMAT, MS_NO_OFFSET,
                    "%" PRIu64 " trace entries are not reachable from 'device_traces'",
                    vm->events_total - placed);
    return 0;
}

/* ------------------------------------------------------------------ segments */

static int block_state(ms_val v)
{
    if (VTAG(v) != T_STR)
        return MS_BLOCK_OTHER;
    switch (VPAY(v)) {
    case S_INACTIVE: return MS_BLOCK_INACTIVE;
    case S_ACTIVE_ALLOCATED: return MS_BLOCK_ACTIVE_ALLOCATED;
    case S_ACTIVE_PENDING_FREE: return MS_BLOCK_ACTIVE_PENDING_FREE;
    }
    return MS_BLOCK_OTHER;
}

static int block_history(ms_vm *vm, const ms_obj *bd, ms_block *blk);

static int convert_segments(ms_vm *vm, const ms_obj *root)
{
    ms_snapshot *s = vm->snap;
    ms_obj *list;
    int rc = root_list(vm, root, S_SEGMENTS, &list);
    if (rc || !list)
        return rc;
    size_t nblocks = 0;
    for (uint32_t i = 0; i < list->len; i++) {
        ms_obj *seg = ms__vm_obj(vm, list->items[i], O_DICT);
        if (!seg)
            return FAIL(MS_ERR_FORMAT, list->offset, "segments[%u] is a %s, expected a dict", i,
                        ms__vm_type_name(vm, list->items[i]));
        ms_val b;
        if (ms__vm_dict_get(seg, S_BLOCKS, &b)) {
            ms_obj *bl = ms__vm_obj(vm, b, 0);
            if (!bl || (bl->type != O_LIST && bl->type != O_TUPLE))
                return FAIL(MS_ERR_FORMAT, seg->offset, "segments[%u]['blocks'] is a %s, expected a list",
                            i, ms__vm_type_name(vm, b));
            nblocks += bl->len;
        }
    }
    s->segments = calloc(list->len ? list->len : 1, sizeof *s->segments);
    s->blocks = calloc(nblocks ? nblocks : 1, sizeof *s->blocks);
    if (!s->segments || !s->blocks)
        return FAIL(MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    for (uint32_t i = 0; i < list->len; i++) {
        ms_obj *seg = ms__vm_obj(vm, list->items[i], O_DICT);
        ms_segment *g = &s->segments[s->n_segments++];
        int64_t dev = 0;
        if ((rc = get_int(vm, seg, S_DEVICE, "segment", &dev)))
            return rc;
        if (dev < 0 || dev > 65535)
            return FAIL(MS_ERR_FORMAT, seg->offset, "segments[%u] has device %" PRId64, i, dev);
        g->device = (int)dev;
        if ((rc = get_u64(vm, seg, S_ADDRESS, "segment", &g->address)) ||
            (rc = get_size(vm, seg, S_TOTAL_SIZE, "segment", &g->total_size)) ||
            (rc = get_size(vm, seg, S_ALLOCATED_SIZE, "segment", &g->allocated_size)) ||
            (rc = get_size(vm, seg, S_ACTIVE_SIZE, "segment", &g->active_size)) ||
            (rc = get_size(vm, seg, S_REQUESTED_SIZE, "segment", &g->requested_size)) ||
            (rc = get_u64(vm, seg, S_STREAM, "segment", &g->stream_raw)) ||
            (rc = get_str(vm, seg, S_SEGMENT_TYPE, &g->segment_type)) ||
            (rc = get_stack(vm, seg, &g->stack)))
            return rc;
        ms_val v = 0;
        if (ms__vm_dict_get(seg, S_IS_EXPANDABLE, &v))
            g->is_expandable = VTAG(v) == T_SPC && VPAY(v) == SPC_TRUE;
        if (ms__vm_dict_get(seg, S_SEGMENT_POOL_ID, &v)) {
            ms_obj *t = ms__vm_obj(vm, v, 0);
            if (t && (t->type == O_TUPLE || t->type == O_LIST) && t->len == 2) {
                if (!ms__vm_int(vm, t->items[0], &g->pool_id[0]) ||
                    !ms__vm_int(vm, t->items[1], &g->pool_id[1]))
                    return FAIL(MS_ERR_FORMAT, seg->offset, "segments[%u]['segment_pool_id'] is not two ints", i);
            }
        }
        g->first_block = s->n_blocks;
        ms_val b;
        if (ms__vm_dict_get(seg, S_BLOCKS, &b)) {
            ms_obj *bl = ms__vm_obj(vm, b, 0);
            for (uint32_t k = 0; k < bl->len; k++) {
                ms_obj *bd = ms__vm_obj(vm, bl->items[k], O_DICT);
                if (!bd)
                    return FAIL(MS_ERR_FORMAT, bl->offset, "segments[%u]['blocks'][%u] is a %s, expected a dict",
                                i, k, ms__vm_type_name(vm, bl->items[k]));
                ms_block *blk = &s->blocks[s->n_blocks++];
                if ((rc = get_u64(vm, bd, S_ADDRESS, "block", &blk->address)) ||
                    (rc = get_size(vm, bd, S_SIZE, "block", &blk->size)) ||
                    (rc = get_size(vm, bd, S_REQUESTED_SIZE, "block", &blk->requested_size)) ||
                    (rc = get_stack(vm, bd, &blk->stack)))
                    return rc;
                if ((rc = block_history(vm, bd, blk)))
                    return rc;
                ms_val st;
                blk->state = ms__vm_dict_get(bd, S_STATE, &st) ? (ms_block_state)block_state(st)
                                                               : MS_BLOCK_OTHER;
            }
        }
        g->n_blocks = s->n_blocks - g->first_block;
        if (g->device >= s->n_devices) {
            ms_trace_build *t = realloc(s->traces, (size_t)(g->device + 1) * sizeof *t);
            if (!t)
                return FAIL(MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
            memset(t + s->n_devices, 0, (size_t)(g->device + 1 - s->n_devices) * sizeof *t);
            for (int d = s->n_devices; d <= g->device; d++)
                t[d].view.device = d;
            s->traces = t;
            s->n_devices = g->device + 1;
        }
    }
    return 0;
}

/* PyTorch 2.0 gave a block no requested_size and no frames of its own, but a 'history'
 * list of its allocations, newest last, each {addr, real_size, frames}: the last one is
 * the allocation that holds the block now. */
static int block_history(ms_vm *vm, const ms_obj *bd, ms_block *blk)
{
    ms_val v = 0, h = 0;
    if (ms__vm_dict_get(bd, S_REQUESTED_SIZE, &v) || !ms__vm_dict_get(bd, S_HISTORY, &h))
        return 0;
    ms_obj *list = ms__vm_obj(vm, h, 0);
    if (!list || list->type != O_LIST || list->len == 0)
        return 0;
    ms_obj *last = ms__vm_obj(vm, list->items[list->len - 1], O_DICT);
    if (!last)
        return FAIL(MS_ERR_FORMAT, list->offset, "a block's 'history' entry is a %s, expected a dict",
                    ms__vm_type_name(vm, list->items[list->len - 1]));
    int rc = get_size(vm, last, S_REAL_SIZE, "block history", &blk->requested_size);
    if (!rc && blk->stack == MS_NO_STACK)
        rc = get_stack(vm, last, &blk->stack);
    return rc;
}

/* ------------------------------------------------------------------ annotations */

static int convert_annotations(ms_vm *vm, const ms_obj *root)
{
    ms_snapshot *s = vm->snap;
    ms_obj *list;
    int rc = root_list(vm, root, S_EXTERNAL_ANNOTATIONS, &list);
    if (rc || !list)
        return rc;
    s->annotations = calloc(list->len ? list->len : 1, sizeof *s->annotations);
    if (!s->annotations)
        return FAIL(MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    for (uint32_t i = 0; i < list->len; i++) {
        ms_obj *a = ms__vm_obj(vm, list->items[i], O_DICT);
        if (!a)
            return FAIL(MS_ERR_FORMAT, list->offset, "external_annotations[%u] is a %s, expected a dict",
                        i, ms__vm_type_name(vm, list->items[i]));
        ms_annotation *an = &s->annotations[s->n_annotations++];
        int64_t dev = 0;
        uint32_t stage;
        if ((rc = get_str(vm, a, S_NAME, &an->name)) || (rc = get_str(vm, a, S_STAGE, &stage)) ||
            (rc = get_int(vm, a, S_DEVICE, "annotation", &dev)) ||
            (rc = get_int(vm, a, S_TIME_US, "annotation", &an->time_us)))
            return rc;
        if (!ms__time_ok(an->time_us))
            return FAIL(MS_ERR_FORMAT, a->offset,
                        "annotation 'time_us' is %" PRId64 ", out of range (limit +-2^62 us)",
                        an->time_us);
        an->is_start = stage == S_START;
        an->device = dev >= 0 && dev <= 65535 ? (int)dev : -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ settings */

/* Writes a value as short text, the way Python's repr would, nested one level. */
static void value_text(ms_vm *vm, ms_val v, char *buf, size_t cap, int depth)
{
    int64_t i;
    switch (VTAG(v)) {
    case T_STR:
        snprintf(buf, cap, "%s", str_of(vm, v));
        return;
    case T_SPC:
        snprintf(buf, cap, "%s", VPAY(v) == SPC_TRUE ? "True" : VPAY(v) == SPC_FALSE ? "False" : "None");
        return;
    case T_NUM:
        if (vm->nums[VPAY(v)].kind == N_FLOAT) {
            snprintf(buf, cap, "%g", vm->nums[VPAY(v)].f);
            return;
        }
        break;
    case T_OBJ: {
        ms_obj *o = &vm->objs[VPAY(v)];
        if (depth > 0) {
            snprintf(buf, cap, "...");
            return;
        }
        size_t used = 0;
        bool dict = o->type == O_DICT;
        used += (size_t)snprintf(buf, cap, "%s", dict ? "{" : "[");
        size_t step = dict ? 2 : 1;
        for (uint32_t k = 0; k < o->len && used < cap; k += (uint32_t)step) {
            char a[64], b[64];
            value_text(vm, o->items[k], a, sizeof a, depth + 1);
            if (dict)
                value_text(vm, o->items[k + 1], b, sizeof b, depth + 1);
            used += (size_t)snprintf(buf + used, cap - used, "%s%s%s%s", k ? ", " : "", a,
                                     dict ? ": " : "", dict ? b : "");
        }
        if (used < cap)
            snprintf(buf + used, cap - used, "%s", dict ? "}" : "]");
        return;
    }
    default:
        break;
    }
    if (ms__vm_int(vm, v, &i))
        snprintf(buf, cap, "%" PRId64, i);
    else
        snprintf(buf, cap, "<%s>", ms__vm_type_name(vm, v));
}

static int convert_settings(ms_vm *vm, const ms_obj *root)
{
    ms_snapshot *s = vm->snap;
    ms_val v = 0;
    if (!ms__vm_dict_get(root, S_ALLOCATOR_SETTINGS, &v))
        return 0;
    ms_obj *d = ms__vm_obj(vm, v, O_DICT);
    if (!d)
        return 0; /* informational only: an odd value is not worth failing the file */
    s->settings = calloc(d->len / 2 + 1, sizeof *s->settings);
    if (!s->settings)
        return FAIL(MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    for (uint32_t k = 0; k + 1 < d->len; k += 2) {
        char key[256], val[1024];
        value_text(vm, d->items[k], key, sizeof key, 0);
        value_text(vm, d->items[k + 1], val, sizeof val, 0);
        ms_setting *st = &s->settings[s->n_settings++];
        st->key = ms__strtab_intern(&s->strings, key, strlen(key));
        st->value = ms__strtab_intern(&s->strings, val, strlen(val));
        if (st->key == UINT32_MAX || st->value == UINT32_MAX)
            return FAIL(MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    }
    return 0;
}

/* ------------------------------------------------------------------ stacks */

static int finish_stacks(ms_vm *vm)
{
    ms_snapshot *s = vm->snap;
    s->site_cache = calloc(s->n_stacks + 1, sizeof *s->site_cache);
    s->user_cache = calloc(s->n_stacks + 1, sizeof *s->user_cache);
    if (!s->site_cache || !s->user_cache)
        return FAIL(MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    return 0;
}

/* ------------------------------------------------------------------ entry */

/* Gives back the unused tail of each event array: realloc shrinks in place. */
static void trim_traces(ms_snapshot *s)
{
    for (int d = 0; d < s->n_devices; d++) {
        ms_trace_build *t = &s->traces[d];
        size_t n = t->view.n;
        if (n && n < t->cap) {
            void *p;
            if ((p = realloc(t->action, n * sizeof *t->action))) t->action = p;
            if ((p = realloc(t->addr, n * sizeof *t->addr))) t->addr = p;
            if ((p = realloc(t->size, n * sizeof *t->size))) t->size = p;
            if ((p = realloc(t->time_us, n * sizeof *t->time_us))) t->time_us = p;
            if ((p = realloc(t->stack, n * sizeof *t->stack))) t->stack = p;
            if ((p = realloc(t->stream, n * sizeof *t->stream))) t->stream = p;
            if (t->compile_context &&
                (p = realloc(t->compile_context, n * sizeof *t->compile_context)))
                t->compile_context = p;
            if (t->user_metadata && (p = realloc(t->user_metadata, n * sizeof *t->user_metadata)))
                t->user_metadata = p;
            t->cap = n;
        }
        t->view.action = t->action;
        t->view.addr = t->addr;
        t->view.size = t->size;
        t->view.time_us = t->time_us;
        t->view.stack = t->stack;
        t->view.stream = t->stream;
        t->view.compile_context = t->compile_context;
        t->view.user_metadata = t->user_metadata;
        /* A missing time_us reads as 0: a trace whose every time is 0 has no clock (no
         * epoch-microsecond time is 0). Nor has one whose times go backwards (a crafted
         * or damaged file: the allocator stamps its entries in order): a time axis would
         * run back, durations come out negative, and every analysis that orders or spans
         * events by time would disagree with the trace's order. The event index then
         * stands in for the time, so that every analysis orders and spans events as it
         * would by time, and times_backward_at says why for the views to tell. */
        t->view.has_times = false;
        t->view.times_backward_at = 0;
        for (size_t i = 0; i < n && !t->view.has_times; i++)
            t->view.has_times = t->time_us[i] != 0;
        for (size_t i = 1; i < n && t->view.has_times; i++) {
            if (t->time_us[i] < t->time_us[i - 1]) {
                t->view.times_backward_at = i;
                t->view.has_times = false;
            }
        }
        for (size_t i = 0; i < n && !t->view.has_times; i++)
            t->time_us[i] = (int64_t)i;
    }
}

/* An annotation's time_us cannot be placed among the events of a trace that has no
 * times: it is left out (and counted), rather than put at a made-up instant. */
static void drop_unplaced_annotations(ms_snapshot *s)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n_annotations; i++) {
        int d = s->annotations[i].device;
        bool timeless = d >= 0 && d < s->n_devices ? !s->traces[d].view.has_times
                                                   : s->n_devices > 0 && !s->traces[0].view.has_times;
        if (timeless)
            s->n_annotations_unplaced++;
        else
            s->annotations[kept++] = s->annotations[i];
    }
    s->n_annotations = kept;
}

int ms__model_build(ms_vm *vm)
{
    ms_obj *root = ms__vm_obj(vm, vm->result, O_DICT);
    if (!root)
        return FAIL(MS_ERR_FORMAT, 0, "the pickle holds a %s, expected the snapshot dict",
                    ms__vm_type_name(vm, vm->result));
    int rc;
    if ((rc = check_traces(vm, root)) || (rc = convert_segments(vm, root)) ||
        (rc = convert_annotations(vm, root)) || (rc = convert_settings(vm, root)) ||
        (rc = finish_stacks(vm)))
        return rc;
    if (vm->snap->n_devices == 0) {
        /* An empty 'device_traces' is a snapshot of one idle device: every command then
         * has a device 0 to show (an empty chart that says so), as for [[]]. */
        vm->snap->traces = calloc(1, sizeof *vm->snap->traces);
        if (!vm->snap->traces)
            return FAIL(MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
        vm->snap->n_devices = 1;
    }
    trim_traces(vm->snap);
    drop_unplaced_annotations(vm->snap);
    return 0;
}
