#include "segments_json.h"

#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

static double get(const cJSON *o, const char *key);

/* The picture's title of a state: what asked for it and when. */
static void instant_title(char *buf, size_t cap, const cJSON *at)
{
    char when[64], labels[160] = "";
    size_t len = 0, i = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(at, "asked"))
    {
        if (len < sizeof labels)
            len += (size_t)snprintf(labels + len, sizeof labels - len, "%s%s", i ? ", " : "",
                                    cJSON_GetStringValue(l));
        i++;
    }
    double ev = get(at, "event");
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(at, "seconds");
    if (ev < 0)
        snprintf(when, sizeof when, "before the first event");
    else if (cJSON_IsNumber(sec))
        snprintf(when, sizeof when, "%.3f s (event %.0f)", sec->valuedouble, ev);
    else
        snprintf(when, sizeof when, "event %.0f", ev);
    snprintf(buf, cap, "%s: %s", labels, when);
}

static int on_device(void *ctx, const seg_device_head *h, ms_error *err)
{
    (void)err;
    seg_query *q = ctx;
    q->draw = q->kept && !q->keep_done;
    if (q->draw) {
        q->keep_done = true;
        q->kept_path = q->path;
        q->kept_device = h->device;
    }
    if (q->text) {
        fprintf(q->text, "device %d: %zu event%s, %zu instant%s\n", h->device, h->events,
                cli_plural((double)h->events), h->instants, cli_plural((double)h->instants));
        if (h->unplaced)
            fprintf(q->text, "  %zu instant%s asked by time left out: this trace has no times "
                             "(use --event)\n",
                    h->unplaced, cli_plural((double)h->unplaced));
    }
    return 0;
}

static int on_instant(void *ctx, const cJSON *at, const ms_heap *h, const uint8_t *cats,
                      ms_error *err)
{
    seg_query *q = ctx;
    if (q->draw) {
        q->n_wanted++;
        if (q->n_kept < q->max_keep) {
            seg_kept *kp = &q->kept[q->n_kept];
            memset(kp, 0, sizeof *kp);
            if (ms_heap_copy(&kp->heap, h, err))
                return err->code;
            if (cats) {
                kp->block_category = malloc(h->n_blocks ? h->n_blocks : 1);
                if (kp->block_category && h->n_blocks)
                    memcpy(kp->block_category, cats, h->n_blocks);
            }
            instant_title(kp->title, sizeof kp->title, at);
            q->n_kept++;
        }
    }
    if (q->text)
        segments_print_instant(q->text, at, q->top);
    return 0;
}

cJSON *segments_file_json(const char *path, const ms_snapshot *s, seg_query *q, ms_error *err)
{
    if (q->text)
        fprintf(q->text, "%s\n", cli_term(path));
    q->path = path;
    seg_request r = {q->device, q->at, q->n_at, q->text != NULL, {q, on_device, on_instant}};
    cJSON *file = segments_snapshot_json(path, s, &r, err);
    if (file && q->text && !cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(file, "devices")))
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
    int c = CLI_CMP(y->free, x->free);
    return c ? c : CLI_CMP(y->size, x->size);
}

typedef struct blk_ref {
    const cJSON *blk;
    double size;
} blk_ref;

static int by_size_desc(const void *a, const void *b)
{
    const blk_ref *x = a, *y = b;
    return CLI_CMP(y->size, x->size);
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
