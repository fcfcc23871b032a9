#include "segments_json.h"

#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "json_print.h"
#include "memsnap/categories.h"
#include "memsnap/run.h"

#define MAX_LABELS 4 /* labels an instant lists when several asks fall on one event */

static void num(cJSON *o, const char *key, double v)
{
    cJSON_AddNumberToObject(o, key, v);
}

/* One instant to visit: the event whose state it is, and what asked for it. */
typedef struct seg_point {
    int64_t event;
    int64_t time_us;  /* the time asked for, or the event's */
    bool by_time;     /* asked by a time (--at, --at-us) */
    bool past_end;
    const char *labels[MAX_LABELS];
    size_t n_labels, n_more;
    size_t order;
} seg_point;

static int by_event(const void *a, const void *b)
{
    const seg_point *x = a, *y = b;
    if (x->event != y->event)
        return x->event < y->event ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

typedef struct dev_ctx {
    const ms_snapshot *s;
    ms_run *run;
    const ms_timeline *t;
    const ms_trace *tr;
    const seg_point *pts;
    seg_query *q;
    cJSON *at;               /* the device's at[] (kept instants, or counts only) */
    uint8_t *cats;           /* per block of the current state */
    size_t cap_cats;
    bool have_cats;
    int device;
    bool draw;               /* keep this device's states for the picture */
} dev_ctx;

static const char *category_key(uint8_t c)
{
    return c < MS_CAT_COUNT ? ms_category_name((ms_category)c) : NULL;
}

static cJSON *pool_json(const ms_heap_pool_stats *p)
{
    cJSON *o = cJSON_CreateObject();
    num(o, "segments", (double)p->segments);
    num(o, "reserved_bytes", (double)p->reserved_bytes);
    num(o, "allocated_bytes", (double)p->allocated_bytes);
    num(o, "active_bytes", (double)p->active_bytes);
    num(o, "free_in_reserved_bytes", (double)p->free_bytes);
    num(o, "largest_free_block_bytes", (double)p->largest_free);
    num(o, "free_blocks", (double)p->free_blocks);
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

static cJSON *block_json(const dev_ctx *d, const ms_heap *h, size_t k)
{
    const ms_heap_block *b = &h->blocks[k];
    cJSON *o = cJSON_CreateObject();
    num(o, "address", (double)b->address);
    num(o, "size", (double)b->size);
    num(o, "requested_size", (double)b->requested_size);
    cJSON_AddStringToObject(o, "state", ms_block_state_name(b->state));
    bool active = b->state != MS_BLOCK_INACTIVE;
    if (active && b->stack != MS_NO_STACK) {
        char site[1024];
        ms_site_format(d->s, ms_stack_site(d->s, b->stack), site, sizeof site);
        cJSON_AddStringToObject(o, "site", site);
    } else {
        cJSON_AddNullToObject(o, "site");
    }
    const char *cat = active && d->have_cats ? category_key(d->cats[k]) : NULL;
    if (cat)
        cJSON_AddStringToObject(o, "category", cat);
    else
        cJSON_AddNullToObject(o, "category");
    /* Known only from the starting state rebuilt from the file's final segments. */
    cJSON_AddBoolToObject(o, "reconstructed", active && b->alloc_event < 0);
    cJSON_AddBoolToObject(o, "size_estimated", active && b->estimated);
    return o;
}

static cJSON *segment_json(const dev_ctx *d, const ms_heap *h, size_t k)
{
    const ms_heap_segment *g = &h->segments[k];
    cJSON *o = cJSON_CreateObject();
    num(o, "address", (double)g->address);
    num(o, "total_size", (double)g->total_size);
    num(o, "stream", (double)g->stream_raw);
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
    num(o, "allocated_size", (double)allocated);
    num(o, "active_size", (double)active);
    num(o, "requested_size", (double)requested);
    num(o, "free_in_segment_bytes", (double)ms_heap_segment_free(&largest, &count, h, k));
    num(o, "largest_free_block_bytes", (double)largest);
    num(o, "free_blocks", (double)count);
    cJSON *blocks = cJSON_AddArrayToObject(o, "blocks");
    for (size_t j = g->first_block; j < g->first_block + g->n_blocks; j++)
        cJSON_AddItemToArray(blocks, block_json(d, h, j));
    return o;
}

static void time_fields(cJSON *o, const dev_ctx *d, const seg_point *p)
{
    num(o, "event", (double)p->event);
    if (!d->t->has_times) {
        cJSON_AddNullToObject(o, "time_us");
        cJSON_AddNullToObject(o, "seconds");
        return;
    }
    num(o, "time_us", (double)p->time_us);
    num(o, "seconds", cli_seconds(d->t->t_first_us, p->time_us));
}

/* The at[] object of one state. */
static cJSON *instant_json(dev_ctx *d, const seg_point *p, const ms_heap *h, ms_error *err)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *asked = cJSON_AddArrayToObject(o, "asked");
    for (size_t i = 0; i < p->n_labels; i++)
        cJSON_AddItemToArray(asked, cJSON_CreateString(p->labels[i]));
    if (p->n_more)
        num(o, "asked_more", (double)p->n_more);
    time_fields(o, d, p);
    if (p->past_end)
        cJSON_AddBoolToObject(o, "past_end", true);
    num(o, "reserved_bytes", (double)h->reserved_bytes);
    num(o, "allocated_bytes", (double)h->allocated_bytes);
    num(o, "active_bytes", (double)h->active_bytes);
    num(o, "free_in_reserved_bytes", (double)h->inactive_bytes);
    num(o, "largest_free_block_bytes", (double)h->largest_inactive);
    num(o, "free_blocks", (double)h->inactive_count);
    size_t reconstructed = 0;
    for (size_t k = 0; k < h->n_blocks; k++)
        reconstructed += h->blocks[k].state != MS_BLOCK_INACTIVE && h->blocks[k].alloc_event < 0;
    num(o, "reconstructed_blocks", (double)reconstructed);
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

/* A state formatted at its depth in the document (files[].devices[].at[]: cJSON indents
 * an object inside an array two tabs deeper than the array's owner, so its lines go six
 * tabs deeper than alone), kept as raw text: the document then holds the output's bytes,
 * not a tree ten times their size. tests/cli/segments.sh compares it with cJSON's own. */
static cJSON *as_raw(cJSON *o)
{
    size_t len = 0;
    char *text = cli_json_format(o, true, &len);
    if (!text)
        return NULL;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    char *raw = malloc(len + 6 * lines + 1);
    if (!raw) {
        free(text);
        return NULL;
    }
    size_t w = 0;
    for (size_t i = 0; i < len; i++) {
        raw[w++] = text[i];
        if (text[i] == '\n') {
            memcpy(raw + w, "\t\t\t\t\t\t", 6);
            w += 6;
        }
    }
    raw[w] = '\0';
    free(text);
    cJSON *r = cJSON_CreateRaw(raw);
    free(raw);
    return r;
}

static void point_title(char *buf, size_t cap, const dev_ctx *d, const seg_point *p)
{
    char when[64], labels[160] = "";
    size_t len = 0;
    for (size_t i = 0; i < p->n_labels && len < sizeof labels; i++)
        len += (size_t)snprintf(labels + len, sizeof labels - len, "%s%s", i ? ", " : "",
                                p->labels[i]);
    if (p->event < 0)
        snprintf(when, sizeof when, "before the first event");
    else if (d->t->has_times)
        snprintf(when, sizeof when, "%.3f s (event %lld)",
                 cli_seconds(d->t->t_first_us, p->time_us), (long long)p->event);
    else
        snprintf(when, sizeof when, "event %lld", (long long)p->event);
    snprintf(buf, cap, "%s: %s", labels, when);
}

static int visit(void *ctx, size_t k, const ms_heap *h, ms_error *err)
{
    dev_ctx *d = ctx;
    const seg_point *p = &d->pts[k];
    if (h->n_blocks > d->cap_cats) {
        free(d->cats);
        d->cap_cats = h->n_blocks;
        d->cats = malloc(d->cap_cats);
        if (!d->cats)
            return MS_ERR_NOMEM;
    }
    if (d->have_cats && ms_run_block_categories(d->cats, d->run, h, err))
        return err->code ? err->code : MS_ERR_NOMEM;
    cJSON *o = instant_json(d, p, h, err);
    if (!o)
        return err->code ? err->code : MS_ERR_NOMEM;
    seg_query *q = d->q;
    if (q->kept && d->draw) {
        q->n_wanted++;
        if (q->n_kept < q->max_keep) {
            seg_kept *kp = &q->kept[q->n_kept];
            memset(kp, 0, sizeof *kp);
            if (ms_heap_copy(&kp->heap, h, err)) {
                cJSON_Delete(o);
                return err->code;
            }
            if (d->have_cats) {
                kp->block_category = malloc(h->n_blocks ? h->n_blocks : 1);
                if (kp->block_category && h->n_blocks)
                    memcpy(kp->block_category, d->cats, h->n_blocks);
            }
            point_title(kp->title, sizeof kp->title, d, p);
            q->n_kept++;
        }
    }
    if (q->text) {
        segments_print_instant(q->text, o, q->top);
        cJSON_Delete(o);
        return 0;
    }
    cJSON *raw = as_raw(o);
    cJSON_Delete(o);
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
static int points_of(seg_point **out, size_t *n_out, size_t *unplaced, const dev_ctx *d,
                     const seg_query *q, ms_error *err)
{
    const ms_trace *tr = d->tr;
    const ms_timeline *t = d->t;
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
                                    a->text, d->device, (long long)last);
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

static cJSON *device_json(const char *path, const ms_snapshot *s, int device, seg_query *q,
                          ms_error *err)
{
    /* Categories need the allocations; the iterations the active curve. */
    ms_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.timeline_flags = MS_TIMELINE_ALLOCS | MS_TIMELINE_ACTIVE;
    dev_ctx d;
    memset(&d, 0, sizeof d);
    d.s = s;
    d.q = q;
    d.device = device;
    d.tr = ms_snapshot_trace(s, device);
    if (ms_run_open(&d.run, s, device, &ro, err) || ms_run_timeline(&d.t, d.run, err)) {
        ms_run_free(d.run);
        return NULL;
    }
    seg_point *pts = NULL;
    size_t n = 0, unplaced = 0;
    if (points_of(&pts, &n, &unplaced, &d, q, err)) {
        ms_run_free(d.run);
        return NULL;
    }
    d.pts = pts;
    /* A trace the categories cannot read still has its segments: blocks then carry no
     * category, and the instant says so ("categories": false). */
    const ms_categories *cats;
    ms_error soft;
    d.have_cats = ms_run_categories(&cats, d.run, &soft) == 0;
    cJSON *dev = cJSON_CreateObject();
    num(dev, "device", device);
    num(dev, "events", (double)d.tr->n);
    cJSON_AddBoolToObject(dev, "has_times", d.t->has_times);
    if (unplaced)
        num(dev, "at_unplaced", (double)unplaced);
    d.at = cJSON_AddArrayToObject(dev, "at");
    if (q->kept && !q->keep_done) {
        d.draw = true;
        q->kept_path = path;
        q->kept_device = device;
    }
    if (q->text) {
        fprintf(q->text, "device %d: %zu event%s, %zu instant%s\n", device, d.tr->n,
                cli_plural((double)d.tr->n), n, cli_plural((double)n));
        if (unplaced)
            fprintf(q->text, "  %zu instant%s asked by time left out: this trace has no times "
                             "(use --event)\n",
                    unplaced, cli_plural((double)unplaced));
    }
    int64_t *events = malloc((n ? n : 1) * sizeof *events);
    int rc = events ? 0 : MS_ERR_NOMEM;
    for (size_t i = 0; i < n && events; i++)
        events[i] = pts[i].event;
    if (!rc)
        rc = ms_heap_visit_each(s, device, events, n, visit, &d, err);
    if (d.draw)
        q->keep_done = true;
    free(events);
    free(d.cats);
    free(pts);
    ms_run_free(d.run);
    if (rc) {
        if (!err->message[0])
            ms_error_set(err, rc, MS_NO_OFFSET, "out of memory");
        cJSON_Delete(dev);
        return NULL;
    }
    return dev;
}

cJSON *segments_file_json(const char *path, const ms_snapshot *s, seg_query *q, ms_error *err)
{
    cJSON *file = cJSON_CreateObject();
    cJSON_AddStringToObject(file, "path", path);
    cJSON *devices = cJSON_AddArrayToObject(file, "devices");
    if (q->text)
        fprintf(q->text, "%s\n", cli_term(path));
    bool any = false;
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        if (q->device >= 0 ? d != q->device : !cli_device_in_use(s, d))
            continue;
        cJSON *dev = device_json(path, s, d, q, err);
        if (!dev) {
            cJSON_Delete(file);
            return NULL;
        }
        cJSON_AddItemToArray(devices, dev);
        any = true;
    }
    if (q->text && !any)
        fprintf(q->text, "no device has events or segments\n");
    return file;
}

/* ------------------------------------------------------------------ text */

static double get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *bytes(double v, char *buf)
{
    ms_format_bytes((int64_t)v, buf, 32);
    return buf;
}

static void print_pool(FILE *out, const char *type, const cJSON *p, bool stream, double id)
{
    char a[32], b[32], c[32], e[32];
    char sid[32] = "all";
    if (stream)
        snprintf(sid, sizeof sid, "%.0f", id);
    fprintf(out, "    %-6s %-16s %8.0f %11s %11s %11s %7.0f %12s\n", type, sid, get(p, "segments"),
            bytes(get(p, "reserved_bytes"), a), bytes(get(p, "allocated_bytes"), b),
            bytes(get(p, "free_in_reserved_bytes"), c), get(p, "free_blocks"),
            bytes(get(p, "largest_free_block_bytes"), e));
}

typedef struct seg_ref {
    const cJSON *seg;
    double free;
    double size;
} seg_ref;

static int by_free_desc(const void *a, const void *b)
{
    const seg_ref *x = a, *y = b;
    if (x->free != y->free)
        return x->free > y->free ? -1 : 1;
    return x->size > y->size ? -1 : x->size < y->size;
}

typedef struct blk_ref {
    const cJSON *blk;
    double size;
} blk_ref;

static int by_size_desc(const void *a, const void *b)
{
    const blk_ref *x = a, *y = b;
    return x->size > y->size ? -1 : x->size < y->size;
}

/* The segments holding the most free memory, each with the allocations that keep it
 * from being released (its active blocks, largest first). */
static void print_holders(FILE *out, const cJSON *segs, int top)
{
    int n = cJSON_GetArraySize(segs);
    seg_ref *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    if (!r)
        return;
    int m = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, segs)
    {
        double f = get(g, "free_in_segment_bytes");
        if (f > 0)
            r[m++] = (seg_ref){g, f, get(g, "total_size")};
    }
    qsort(r, (size_t)m, sizeof *r, by_free_desc);
    if (m)
        fprintf(out, "    segments holding the most free memory:\n");
    char a[32], b[32], c[32];
    for (int i = 0; i < m && i < top; i++) {
        g = r[i].seg;
        const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(g, "blocks");
        int nb = cJSON_GetArraySize(blocks);
        blk_ref *br = malloc((size_t)(nb ? nb : 1) * sizeof *br);
        int na = 0;
        double pinned = 0;
        const cJSON *bl;
        cJSON_ArrayForEach(bl, blocks)
        {
            const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(bl, "state"));
            if (st && strcmp(st, "inactive")) {
                if (br)
                    br[na] = (blk_ref){bl, get(bl, "size")};
                na++;
                pinned += get(bl, "size");
            }
        }
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "segment_type"));
        fprintf(out, "      0x%llx %s %s%s: %s free in %.0f block%s, largest %s; ",
                (unsigned long long)get(g, "address"), bytes(get(g, "total_size"), a),
                type ? type : "?",
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "is_expandable")) ? " expandable"
                                                                                  : "",
                bytes(r[i].free, b), get(g, "free_blocks"), cli_plural(get(g, "free_blocks")),
                bytes(get(g, "largest_free_block_bytes"), c));
        if (na == 0) {
            fprintf(out, "nothing allocated in it\n");
        } else {
            fprintf(out, "held by %d allocation%s (%s):\n", na, cli_plural(na), bytes(pinned, a));
            if (br)
                qsort(br, (size_t)na, sizeof *br, by_size_desc);
            for (int k = 0; br && k < na && k < 4; k++) {
                const cJSON *x = br[k].blk;
                const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "state"));
                const char *cat = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "category"));
                const char *site = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "site"));
                fprintf(out, "        %11s  %-16s %s%s%s\n", bytes(br[k].size, a),
                        cat ? cat : "-", site ? cli_term(site) : "(no stack recorded)",
                        st && !strcmp(st, "active_pending_free") ? "  [pending free]" : "",
                        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "reconstructed"))
                            ? "  [from before the trace]"
                            : "");
            }
            if (na > 4) {
                double rest = 0;
                for (int k = 4; br && k < na; k++)
                    rest += br[k].size;
                fprintf(out, "        ... %d more (%s)\n", na - 4, bytes(rest, a));
            }
        }
        free(br);
    }
    if (m > top)
        fprintf(out, "      ... %d more segment%s with free memory\n", m - top, cli_plural(m - top));
    free(r);
}

void segments_print_instant(FILE *out, const cJSON *at, int top)
{
    char labels[256] = "", a[32], b[32], c[32], e[32];
    size_t len = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(at, "asked"))
    {
        if (len < sizeof labels)
            len += (size_t)snprintf(labels + len, sizeof labels - len, "%s%s", len ? ", " : "",
                                    cli_term(cJSON_GetStringValue(l)));
    }
    if (get(at, "asked_more") > 0 && len < sizeof labels)
        snprintf(labels + len, sizeof labels - len, " and %.0f more", get(at, "asked_more"));
    double ev = get(at, "event");
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(at, "seconds");
    if (ev < 0)
        fprintf(out, "  %s: before the first event\n", labels);
    else if (cJSON_IsNumber(sec))
        fprintf(out, "  %s: %.3f s (event %.0f)%s\n", labels, sec->valuedouble, ev,
                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(at, "past_end"))
                    ? ", after the last event: the state at the end"
                    : "");
    else
        fprintf(out, "  %s: event %.0f\n", labels, ev);
    const cJSON *segs = cJSON_GetObjectItemCaseSensitive(at, "segments");
    int nseg = cJSON_GetArraySize(segs);
    fprintf(out, "    reserved %s in %d segment%s, allocated %s; free inside them %s in %.0f "
                 "block%s, largest %s\n",
            bytes(get(at, "reserved_bytes"), a), nseg, cli_plural(nseg),
            bytes(get(at, "allocated_bytes"), b), bytes(get(at, "free_in_reserved_bytes"), c),
            get(at, "free_blocks"), cli_plural(get(at, "free_blocks")),
            bytes(get(at, "largest_free_block_bytes"), e));
    if (get(at, "reconstructed_blocks") > 0)
        fprintf(out, "    %.0f block%s alive before the trace began, known from the file's final "
                     "segments\n",
                get(at, "reconstructed_blocks"), cli_plural(get(at, "reconstructed_blocks")));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(at, "approximate")))
        fprintf(out, "    approximate: %s\n",
                cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(at, "note"))));
    if (nseg == 0)
        return;
    fprintf(out, "    %-6s %-16s %8s %11s %11s %11s %7s %12s\n", "pool", "stream", "segments",
            "reserved", "allocated", "free", "blocks", "largest free");
    const cJSON *pools = cJSON_GetObjectItemCaseSensitive(at, "pools");
    for (int small = 0; small < 2; small++) {
        const char *type = small ? "small" : "large";
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(pools, type);
        const cJSON *streams = cJSON_GetObjectItemCaseSensitive(p, "streams");
        if (get(p, "segments") == 0)
            continue;
        const cJSON *st;
        int ns = cJSON_GetArraySize(streams);
        cJSON_ArrayForEach(st, streams) print_pool(out, type, st, true, get(st, "stream"));
        if (ns > 1)
            print_pool(out, type, p, false, 0);
    }
    print_holders(out, segs, top);
}
