/* The allocator's state at chosen instants as JSON (see json_segments.h). */
#include "json/json_segments.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json/json_devices.h"
#include "json/json_util.h"
#include "json/json_writer.h"
#include "memsnap/categories.h"

#define MAX_LABELS 4 /* labels an instant lists when several asks fall on one event */

/* One instant to visit: the event whose state it is, and what asked for it. */
typedef struct seg_point {
    int64_t event;
    int64_t time_us;  /* the time asked for, or the event's */
    bool by_time;     /* asked by a time (seconds or microseconds) */
    bool past_end;
    const char *labels[MAX_LABELS];
    size_t n_labels, n_more;
    size_t order;
} seg_point;

static int by_event(const void *a, const void *b)
{
    const seg_point *x = a, *y = b;
    return MS__CMP2(x->event, y->event, x->order, y->order);
}

typedef struct dev_ctx {
    const ms_snapshot *s;
    ms_run *run;
    const ms_timeline *t;
    const seg_point *pts;
    const seg_request *q;
    cJSON *at;               /* the device's at[] */
    uint8_t *cats;           /* per block of the current state */
    size_t cap_cats;
    bool have_cats;
    int depth;               /* of at[]'s elements in the document */
} dev_ctx;

/* The free memory of a state or of one of its pools: the fields both objects carry. */
static void usage_fields(cJSON *o, const ms_heap_pool_stats *p)
{
    ms__json_num(o, "reserved_bytes", (double)p->reserved_bytes);
    ms__json_num(o, "allocated_bytes", (double)p->allocated_bytes);
    ms__json_num(o, "active_bytes", (double)p->active_bytes);
    ms__json_num(o, "free_in_reserved_bytes", (double)p->free_bytes);
    ms__json_num(o, "largest_free_block_bytes", (double)p->largest_free);
    ms__json_num(o, "free_blocks", (double)p->free_blocks);
}

static cJSON *pool_json(const ms_heap_pool_stats *p)
{
    cJSON *o = cJSON_CreateObject();
    ms__json_num(o, "segments", (double)p->segments);
    usage_fields(o, p);
    return o;
}

/* pools: {"large": {totals, "streams": [{"stream", totals}]}, "small": {...}} */
static cJSON *pools_json(const ms_heap *h, ms_error *err)
{
    ms_heap_pool_stats *ps = NULL;
    size_t n = 0;
    if (ms_heap_pool_stats_of(&ps, &n, h, err))
        return NULL;
    cJSON *pools = cJSON_CreateObject();
    for (int small = 0; small < 2; small++) {
        ms_heap_pool_stats tot;
        memset(&tot, 0, sizeof tot);
        tot.is_small = small;
        cJSON *streams = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++) {
            if (ps[i].is_small != (bool)small)
                continue;
            cJSON *st = pool_json(&ps[i]);
            cJSON_AddItemToObject(st, "stream", cJSON_CreateNumber((double)ps[i].stream_raw));
            cJSON_AddItemToArray(streams, st);
            tot.segments += ps[i].segments;
            tot.reserved_bytes += ps[i].reserved_bytes;
            tot.allocated_bytes += ps[i].allocated_bytes;
            tot.active_bytes += ps[i].active_bytes;
            tot.free_bytes += ps[i].free_bytes;
            tot.free_blocks += ps[i].free_blocks;
            if (ps[i].largest_free > tot.largest_free)
                tot.largest_free = ps[i].largest_free;
        }
        cJSON *p = pool_json(&tot);
        cJSON_AddItemToObject(p, "streams", streams);
        cJSON_AddItemToObject(pools, small ? "small" : "large", p);
    }
    ms_free(ps);
    return pools;
}

/* A stretch of device memory (a segment or a block): {"address", size_key}. */
static cJSON *extent_json(uint64_t address, const char *size_key, uint64_t size)
{
    cJSON *o = cJSON_CreateObject();
    ms__json_num(o, "address", (double)address);
    ms__json_num(o, size_key, (double)size);
    return o;
}

static cJSON *block_json(const dev_ctx *d, const ms_heap *h, size_t k)
{
    const ms_heap_block *b = &h->blocks[k];
    cJSON *o = extent_json(b->address, "size", b->size);
    ms__json_num(o, "requested_size", (double)b->requested_size);
    cJSON_AddStringToObject(o, "state", ms_block_state_name(b->state));
    bool active = b->state != MS_BLOCK_INACTIVE;
    char site[1024];
    if (active && b->stack != MS_NO_STACK)
        ms_site_format(d->s, ms_stack_site(d->s, b->stack), site, sizeof site);
    ms__json_str_or_null(o, "site", active && b->stack != MS_NO_STACK ? site : NULL);
    uint8_t c = active && d->have_cats ? d->cats[k] : MS_CAT_COUNT;
    ms__json_str_or_null(o, "category",
                         c < MS_CAT_COUNT ? ms_category_name((ms_category)c) : NULL);
    /* Known only from the starting state rebuilt from the file's final segments. */
    cJSON_AddBoolToObject(o, "reconstructed", active && b->alloc_event < 0);
    cJSON_AddBoolToObject(o, "size_estimated", active && b->estimated);
    return o;
}

static cJSON *segment_json(const dev_ctx *d, const ms_heap *h, size_t k)
{
    const ms_heap_segment *g = &h->segments[k];
    cJSON *o = extent_json(g->address, "total_size", g->total_size);
    ms__json_num(o, "stream", (double)g->stream_raw);
    cJSON_AddStringToObject(o, "segment_type", g->is_small ? "small" : "large");
    cJSON *pool = cJSON_AddArrayToObject(o, "segment_pool_id");
    cJSON_AddItemToArray(pool, cJSON_CreateNumber((double)g->pool_id[0]));
    cJSON_AddItemToArray(pool, cJSON_CreateNumber((double)g->pool_id[1]));
    cJSON_AddBoolToObject(o, "is_expandable", g->is_expandable);
    uint64_t allocated = 0, active = 0, requested = 0, largest, count;
    for (size_t j = g->first_block; j < g->first_block + g->n_blocks; j++) {
        const ms_heap_block *b = &h->blocks[j];
        if (b->state == MS_BLOCK_ACTIVE_ALLOCATED)
            allocated += b->size;
        if (b->state != MS_BLOCK_INACTIVE) {
            active += b->size;
            requested += b->requested_size;
        }
    }
    ms__json_num(o, "allocated_size", (double)allocated);
    ms__json_num(o, "active_size", (double)active);
    ms__json_num(o, "requested_size", (double)requested);
    ms__json_num(o, "free_in_segment_bytes", (double)ms_heap_segment_free(&largest, &count, h, k));
    ms__json_num(o, "largest_free_block_bytes", (double)largest);
    ms__json_num(o, "free_blocks", (double)count);
    cJSON *blocks = cJSON_AddArrayToObject(o, "blocks");
    for (size_t j = g->first_block; j < g->first_block + g->n_blocks; j++)
        cJSON_AddItemToArray(blocks, block_json(d, h, j));
    return o;
}

/* The at[] object of one state. */
static cJSON *instant_json(const dev_ctx *d, const seg_point *p, const ms_heap *h,
                           ms_error *err)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *asked = cJSON_AddArrayToObject(o, "asked");
    for (size_t i = 0; i < p->n_labels; i++)
        cJSON_AddItemToArray(asked, cJSON_CreateString(p->labels[i]));
    if (p->n_more)
        ms__json_num(o, "asked_more", (double)p->n_more);
    ms__json_num(o, "event", (double)p->event);
    ms__json_time(o, "time_us", d->t->has_times, p->time_us);
    ms__json_seconds(o, "seconds", d->t->has_times, d->t->t_first_us, p->time_us);
    if (p->past_end)
        cJSON_AddBoolToObject(o, "past_end", true);
    ms_heap_pool_stats all = {
        .reserved_bytes = h->reserved_bytes,
        .allocated_bytes = h->allocated_bytes,
        .active_bytes = h->active_bytes,
        .free_bytes = h->inactive_bytes,
        .largest_free = h->largest_inactive,
        .free_blocks = h->inactive_count,
    };
    usage_fields(o, &all);
    size_t reconstructed = 0;
    for (size_t k = 0; k < h->n_blocks; k++)
        reconstructed += h->blocks[k].state != MS_BLOCK_INACTIVE && h->blocks[k].alloc_event < 0;
    ms__json_num(o, "reconstructed_blocks", (double)reconstructed);
    cJSON_AddBoolToObject(o, "approximate", h->approximate);
    cJSON_AddStringToObject(o, "note", h->note);
    cJSON_AddBoolToObject(o, "categories", d->have_cats);
    cJSON *pools = pools_json(h, err);
    if (!pools) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddItemToObject(o, "pools", pools);
    cJSON *segs = cJSON_AddArrayToObject(o, "segments");
    for (size_t k = 0; k < h->n_segments; k++)
        cJSON_AddItemToArray(segs, segment_json(d, h, k));
    return o;
}

/* A state formatted at its depth in the document (cJSON indents an element of an array
 * one tab deeper than the array's key), kept as raw text: the document then holds the
 * output's bytes, not a tree ten times their size. tests/cli/segments.sh compares it
 * with cJSON's own. */
static cJSON *as_raw(const cJSON *o, int depth)
{
    size_t len = 0;
    char *text = ms__json_format(o, true, &len);
    if (!text)
        return NULL;
    size_t lines = 0, tabs = (size_t)depth;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    char *raw = malloc(len + tabs * lines + 1);
    if (!raw) {
        free(text);
        return NULL;
    }
    size_t w = 0;
    for (size_t i = 0; i < len; i++) {
        raw[w++] = text[i];
        if (text[i] == '\n') {
            memset(raw + w, '\t', tabs);
            w += tabs;
        }
    }
    raw[w] = '\0';
    free(text);
    cJSON *r = cJSON_CreateRaw(raw);
    free(raw);
    return r;
}

static int visit(void *ctx, size_t k, const ms_heap *h, ms_error *err)
{
    dev_ctx *d = ctx;
    if (h->n_blocks > d->cap_cats) {
        free(d->cats);
        d->cap_cats = h->n_blocks;
        d->cats = malloc(d->cap_cats);
        if (!d->cats)
            return MS_ERR_NOMEM;
    }
    if (d->have_cats && ms_run_block_categories(d->cats, d->run, h, err))
        return err->code ? err->code : MS_ERR_NOMEM;
    cJSON *o = instant_json(d, &d->pts[k], h, err);
    if (!o)
        return err->code ? err->code : MS_ERR_NOMEM;
    const seg_request *q = d->q;
    int rc = q->sink.instant ? q->sink.instant(q->sink.ctx, o, h,
                                               d->have_cats ? d->cats : NULL, err)
                             : 0;
    cJSON *raw = rc || q->sink_only ? NULL : as_raw(o, d->depth);
    cJSON_Delete(o);
    if (rc || q->sink_only)
        return rc;
    if (!raw)
        return MS_ERR_NOMEM;
    cJSON_AddItemToArray(d->at, raw);
    return 0;
}

static void add_label(seg_point *p, const char *label)
{
    if (p->n_labels < MAX_LABELS)
        p->labels[p->n_labels++] = label;
    else
        p->n_more++;
}

/* The instants of one device in trace order, asks that land on one event merged. */
static int points_of(seg_point **out, size_t *n_out, size_t *unplaced, const ms_trace *tr,
                     const ms_timeline *t, int device, const seg_request *q, ms_error *err)
{
    size_t n = q->n_at ? q->n_at : 2;
    seg_point *p = calloc(n, sizeof *p);
    if (!p) {
        return ms_error_set(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory");
    }
    size_t m = 0;
    *unplaced = 0;
    int64_t last = (int64_t)tr->n - 1;
    if (!q->n_at) {
        p[m].event = t->peak_event;
        add_label(&p[m++], "peak");
        p[m].event = last;
        add_label(&p[m++], "end");
    }
    for (size_t i = 0; i < q->n_at; i++) {
        const seg_instant *a = &q->at[i];
        seg_point *x = &p[m];
        if (a->kind == SEG_AT_EVENT) {
            if (a->event < -1 || a->event > last) {
                free(p);
                return ms_error_set(err, MS_ERR_ARG, MS_NO_OFFSET,
                                    "%s: device %d has events 0 to %lld (-1: before the first)",
                                    a->text, device, (long long)last);
            }
            x->event = a->event;
        } else {
            if (!t->has_times) {
                (*unplaced)++; /* no clock to place a time on */
                continue;
            }
            x->by_time = true;
            x->time_us = a->kind == SEG_AT_US ? a->time_us
                                              : t->t_first_us + (int64_t)(a->seconds * 1e6 + 0.5);
            x->event = ms_heap_event_at_time(tr, x->time_us);
            x->past_end = x->time_us > t->t_last_us;
        }
        add_label(x, a->text);
        m++;
    }
    for (size_t i = 0; i < m; i++)
        if (!p[i].by_time)
            p[i].time_us = p[i].event >= 0 ? tr->time_us[p[i].event] : t->t_first_us;
    for (size_t i = 0; i < m; i++)
        p[i].order = i; /* ties keep the asks' order */
    qsort(p, m, sizeof *p, by_event);
    size_t w = 0;
    for (size_t i = 0; i < m; i++) {
        if (w && p[w - 1].event == p[i].event && p[w - 1].by_time == p[i].by_time &&
            p[w - 1].time_us == p[i].time_us) {
            for (size_t k = 0; k < p[i].n_labels; k++)
                add_label(&p[w - 1], p[i].labels[k]);
            p[w - 1].n_more += p[i].n_more;
        } else {
            p[w++] = p[i];
        }
    }
    *out = p;
    *n_out = w;
    return 0;
}

cJSON *segments_run_json(ms_run *run, const seg_request *q, int depth, ms_error *err)
{
    dev_ctx d;
    memset(&d, 0, sizeof d);
    d.s = ms_run_snapshot(run);
    d.run = run;
    d.q = q;
    d.depth = depth;
    int device = ms_run_device(run);
    const ms_trace *tr = ms_snapshot_trace(d.s, device);
    if (ms_run_timeline(&d.t, run, err))
        return NULL;
    seg_point *pts = NULL;
    size_t n = 0, unplaced = 0;
    if (points_of(&pts, &n, &unplaced, tr, d.t, device, q, err))
        return NULL;
    d.pts = pts;
    /* A trace the categories cannot read still has its segments: blocks then carry no
     * category, and the instant says so ("categories": false). */
    const ms_categories *cats;
    ms_error soft;
    d.have_cats = ms_run_categories(&cats, run, &soft) == 0;
    cJSON *dev = cJSON_CreateObject();
    ms__json_num(dev, "device", device);
    ms__json_num(dev, "events", (double)tr->n);
    cJSON_AddBoolToObject(dev, "has_times", d.t->has_times);
    if (unplaced)
        ms__json_num(dev, "at_unplaced", (double)unplaced);
    d.at = cJSON_AddArrayToObject(dev, "at");
    seg_device_head head = {device, tr->n, n, unplaced};
    int rc = q->sink.device ? q->sink.device(q->sink.ctx, &head, err) : 0;
    int64_t *events = rc ? NULL : malloc((n ? n : 1) * sizeof *events);
    if (!rc && !events)
        rc = MS_ERR_NOMEM;
    for (size_t i = 0; i < n && events; i++)
        events[i] = pts[i].event;
    if (!rc)
        rc = ms_heap_visit_each(d.s, device, events, n, visit, &d, err);
    free(events);
    free(d.cats);
    free(pts);
    if (rc) {
        if (!err->message[0])
            ms_error_set(err, rc, MS_NO_OFFSET, "out of memory");
        cJSON_Delete(dev);
        return NULL;
    }
    return dev;
}

/* The runs of `segments --json` hold what categories need (the allocations) and what the
 * iterations need (the active curve), and no more. */
static cJSON *file_device(void *ctx, const ms_snapshot *s, int device, ms_error *err)
{
    ms_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.timeline_flags = MS_TIMELINE_ALLOCS | MS_TIMELINE_ACTIVE;
    ms_run *run = NULL;
    if (ms_run_open(&run, s, device, &ro, err))
        return NULL;
    /* files[].devices[].at[]: six tabs deep. */
    cJSON *dev = segments_run_json(run, ctx, 6, err);
    ms_run_free(run);
    return dev;
}

cJSON *segments_snapshot_json(const char *path, const ms_snapshot *s, const seg_request *q,
                          ms_error *err)
{
    return ms__json_file_devices(path, s, q->device, file_device, (void *)q, err);
}
