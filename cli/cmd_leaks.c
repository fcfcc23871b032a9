/* memsnap leaks: allocations that outlive the iteration that made them. The analysis is
 * each device's run (ms_run_leaks, and ms_run_leak_counts for the verdict); this file
 * parses options and prints the table, JSON and verdict. */
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "term_text.h"
#include "commands.h"
#include "iterations_json.h"
#include "options.h"
#include "shape_json.h"
#include "memsnap/leaks.h"
#include "memsnap/run.h"

static const char *const CMD = "leaks";

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsnap leaks FILE... [--json] [--min-bytes SIZE] [--all] [--fail[=SIZE]]\n"
            "                    [--stack] [--top K] [--step NAME] [--iterations N]\n"
            "                    [--device N]\n"
            "\n"
            "Finds allocations that outlive the iteration that made them and whose live\n"
            "count grows from one iteration end to the next (leaks). With too few\n"
            "iterations to tell, allocations kept while the rest of their layer call was\n"
            "freed are reported as suspects. Sites that leak together in the same pass (a\n"
            "graph kept alive by a loss summed as a tensor) are one finding, its sites listed\n"
            "under it.\n"
            "\n"
            "  --json            print JSON (docs/json.md)\n"
            "  --min-bytes SIZE  hide findings with less memory alive at the end (e.g. 1MiB)\n"
            "  --all             also list retained memory (parameters, optimizer state, caches)\n"
            "  --fail[=SIZE]     exit 1 when a leak is found (for CI); with SIZE only when a\n"
            "                    file's leaked bytes or its growth per iteration reach SIZE\n"
            "                    (--fail=1MiB)\n"
            "  --stack           print the stack of an allocation of each finding (your\n"
            "                    frames marked '>', torch's and native frames folded)\n"
            "  --top K           list at most K findings per device, largest first (the\n"
            "                    verdict still counts them all)\n"
            "  --step NAME       annotation (record_function) name that marks one iteration\n"
            "  --iterations N    the number of iterations the trace holds\n"
            "  --device N        only this device (default: every device in use)\n"
            "\n"
            "Exit status: 0 ok, 1 a leak was found with --fail (of SIZE or more with\n"
            "--fail=SIZE), 2 usage or input error.\n");
}

typedef struct opts {
    bool json, all, fail, stack;
    uint64_t fail_bytes; /* --fail=SIZE; 0: any leak */
    int device;
    size_t top; /* 0: every finding */
    ms_leak_options lo;
} opts;

/* A frame told by `format` (ms_site_format, ms_layer_format), safe for the terminal;
 * `none` where there is no frame or nothing to tell. */
static void frame_text(const ms_snapshot *s, uint32_t frame,
                       size_t (*format)(const ms_snapshot *, uint32_t, char *, size_t),
                       const char *none, char *buf, size_t cap)
{
    char raw[1024];
    if (frame == UINT32_MAX || format(s, frame, raw, sizeof raw) == 0)
        snprintf(buf, cap, "%s", none);
    else
        cli_term_into(raw, buf, cap);
}

static void site_text(const ms_snapshot *s, uint32_t frame, char *buf, size_t cap)
{
    frame_text(s, frame, ms_site_format, "(no stack)", buf, cap);
}

static void layer_text(const ms_snapshot *s, uint32_t frame, char *buf, size_t cap)
{
    frame_text(s, frame, ms_layer_format, "-", buf, cap);
}

static void each_text(uint64_t min, uint64_t max, char *buf, size_t cap)
{
    char a[32], b[32];
    ms_format_bytes((int64_t)min, a, sizeof a);
    if (min == max) {
        snprintf(buf, cap, "%s", a);
        return;
    }
    ms_format_bytes((int64_t)max, b, sizeof b);
    snprintf(buf, cap, "%s..%s", a, b);
}

static void growth_text(double count, double bytes, char *buf, size_t cap)
{
    char gb[32];
    ms_format_bytes((int64_t)(bytes + 0.5), gb, sizeof gb);
    snprintf(buf, cap, "+%.4g alloc%s, +%s", count, cli_plural(count), gb);
}

static bool shown(const opts *o, const ms_leak *L)
{
    return o->all || L->kind != MS_LEAK_RETAINED;
}

/* Counts of each kind among the shown findings, and the bytes they hold. */
/* A file's verdict adds up its devices' counts (the run's, ms_run_leak_counts). */
static void add_counts(ms_leak_counts *t, const ms_leak_counts *d)
{
    t->leaks.findings += d->leaks.findings;
    t->leaks.bytes += d->leaks.bytes;
    t->leaks.growth_bytes += d->leaks.growth_bytes;
    t->leak_sites += d->leak_sites;
    t->suspects += d->suspects;
    t->retained += d->retained;
    t->alive_at_end += d->alive_at_end;
}

static bool gate_trips(const opts *o, const ms_leak_counts *t)
{
    return cli_leak_gate_trips(t->leaks.findings, (double)t->leaks.bytes, t->leaks.growth_bytes,
                               o->fail_bytes);
}

/* A run of frames a user does not read first, as one line. */
static void print_folded(size_t torch, size_t native, int indent)
{
    if (!torch && !native)
        return;
    printf("%*s  ... ", indent, "");
    if (torch)
        printf("%zu torch frame%s", torch, torch == 1 ? "" : "s");
    if (torch && native)
        printf(" and ");
    if (native)
        printf("%zu native frame%s", native, native == 1 ? "" : "s");
    printf("\n");
}

/* The text view folds three kinds: an installed library's frames are read like the
 * user's (a site may be one), compiled code like torch's. */
static ms_frame_kind shown_kind(const ms_snapshot *s, uint32_t frame)
{
    ms_frame_kind fk = ms_frame_kind_of(s, frame);
    return fk == MS_FRAME_LIBRARY ? MS_FRAME_USER : fk == MS_FRAME_COMPILED ? MS_FRAME_TORCH : fk;
}

/* A stack innermost first: the user's frames marked '>', runs of torch's own and native
 * frames folded. A stack without user frames (a backward node on the autograd thread)
 * shows torch's Python frames, else the frame it is blamed on. */
static void print_stack(const ms_snapshot *s, uint32_t stack, int indent)
{
    size_t n = 0;
    const uint32_t *fr = ms_snapshot_stack(s, stack, &n);
    if (!n) {
        printf("%*sstack: not recorded\n", indent, "");
        return;
    }
    size_t users = 0, torches = 0;
    for (size_t k = 0; k < n; k++) {
        ms_frame_kind fk = shown_kind(s, fr[k]);
        users += fk == MS_FRAME_USER;
        torches += fk == MS_FRAME_TORCH;
    }
    uint32_t site = ms_stack_site(s, stack);
    printf("%*sstack (innermost first, %zu frame%s):\n", indent, "", n, cli_plural((double)n));
    size_t torch = 0, native = 0;
    for (size_t k = 0; k < n; k++) {
        ms_frame_kind fk = shown_kind(s, fr[k]);
        bool show = fk == MS_FRAME_USER || (!users && fk == MS_FRAME_TORCH) ||
                    (!users && !torches && fr[k] == site);
        if (!show) {
            torch += fk == MS_FRAME_TORCH;
            native += fk == MS_FRAME_NATIVE;
            continue;
        }
        print_folded(torch, native, indent);
        torch = native = 0;
        const ms_frame *f = ms_snapshot_frame(s, fr[k]);
        char line[24] = "?";
        if (f->line != MS_LINE_UNKNOWN)
            snprintf(line, sizeof line, "%lld", (long long)f->line);
        printf("%*s%s %s:%s %s\n", indent, "", fk == MS_FRAME_USER ? ">" : " ",
               cli_term(ms_snapshot_string(s, f->filename)), line,
               cli_term(ms_snapshot_string(s, f->name)));
    }
    print_folded(torch, native, indent);
}

/* With --iterations N, the iterations the trace's own marks give when they are not N
 * (NULL otherwise): a stated count moves the reference point, and with it the counts, so
 * the output says so. */
static ms_iterations *unforced_iterations(const opts *o, const ms_snapshot *s, int device,
                                          const ms_timeline *t, const ms_leak_report *r)
{
    if (!o->lo.iter.expected)
        return NULL;
    ms_iter_options io = o->lo.iter;
    io.expected = 0;
    ms_iterations *it = NULL;
    ms_error err;
    if (ms_iterations_find(&it, s, device, t, &io, &err))
        return NULL;
    if (it->n == r->iterations->n) {
        ms_iterations_free(it);
        return NULL;
    }
    return it;
}

static void print_unforced(const opts *o, const ms_iterations *found, const ms_leak_report *r,
                           const ms_timeline *t)
{
    const ms_iterations *it = r->iterations;
    printf("  --iterations %u: without it the trace gives %zu iteration%s (%s)", o->lo.iter.expected,
           found->n, cli_plural((double)found->n), ms_iter_method_name(found->method));
    char when[48];
    if (it->n)
        printf("; findings are counted at the end of iteration %zu (%s), so allocations made "
               "after it are not counted",
               it->n, cli_when(when, sizeof when, t->has_times, t->t_first_us,
                               it->items[it->n - 1].end_us));
    printf("\n");
}

/* "alive at the end: the graph of the forward called at model.py:88 forward (412
 * allocations, 3.67 GiB)" */
static void alive_text(const ms_snapshot *s, const ms_leak *L, char *buf, size_t cap)
{
    char where[176] = "", bytes[32];
    if (L->call_site != UINT32_MAX) {
        char cs[160];
        site_text(s, L->call_site, cs, sizeof cs);
        snprintf(where, sizeof where, " called at %s", cs);
    }
    ms_format_bytes((int64_t)L->bytes, bytes, sizeof bytes);
    snprintf(buf, cap, "alive at the end: %s of the forward%s (%llu allocation%s, %s)",
             L->pattern == MS_LEAK_PATTERN_END_GRAPH ? "the graph" : "the output", where,
             (unsigned long long)L->count, L->count == 1 ? "" : "s", bytes);
}

static void print_device(const opts *o, const ms_snapshot *s, const ms_timeline *t,
                         const ms_leak_report *r, const ms_idle *idle,
                         const ms_iterations *found, const cJSON *shape)
{
    int64_t t0 = t->t_first_us;
    printf("device %d\n", r->device);
    shape_print_json(stdout, shape, 2, 0);
    leaks_iterations_print(stdout, r->iterations, idle, t0, 2);
    if (found)
        print_unforced(o, found, r, t);
    if (r->oom_count) {
        char req[32];
        ms_format_bytes((int64_t)r->first_oom_bytes, req, sizeof req);
        char when[32];
        printf("  OOM: %llu allocation%s failed; the first asked for %s at %s\n",
               (unsigned long long)r->oom_count, r->oom_count == 1 ? "" : "s", req,
               cli_when(when, sizeof when, t->has_times, t0, r->first_oom_us));
    }
    size_t rows = 0, total = 0;
    int wsite = 4, wlayer = 5;
    for (size_t i = 0; i < r->n; i++) {
        const ms_leak *L = &r->items[i];
        if (!shown(o, L))
            continue;
        if (o->top && total++ >= o->top)
            continue;
        /* Members are rows too, indented under their finding. */
        for (size_t m = 0; m < (L->n_members > 1 ? L->n_members + 1 : 1); m++) {
            const ms_leak_member *M = m ? &r->members[L->first_member + m - 1] : NULL;
            char buf[160];
            site_text(s, M ? M->site : L->site, buf, sizeof buf);
            if ((int)strlen(buf) + (M ? 2 : 0) > wsite)
                wsite = (int)strlen(buf) + (M ? 2 : 0);
            layer_text(s, M ? M->layer : L->layer, buf, sizeof buf);
            if ((int)strlen(buf) > wlayer)
                wlayer = (int)strlen(buf);
        }
        rows++;
    }
    if (!rows) {
        printf("  no %s\n", o->all ? "findings" : "leaks or suspects");
        return;
    }
    /* Without iterations nothing grows per iteration: the column says growth only. */
    printf("  %-8s  %-*s  %-*s  %6s  %-21s  %10s  %-24s  %8s  %8s\n", "KIND", wsite, "SITE",
           wlayer, "LAYER", "COUNT", "BYTES EACH", "ALIVE",
           r->iterations->n ? "GROWTH/ITERATION" : "GROWTH", "FIRST", "LAST");
    size_t listed = 0;
    for (size_t i = 0; i < r->n; i++) {
        const ms_leak *L = &r->items[i];
        if (!shown(o, L))
            continue;
        if (o->top && listed++ >= o->top)
            break;
        char site[160], layer[160], each[72], alive[32], growth[64] = "-";
        site_text(s, L->site, site, sizeof site);
        layer_text(s, L->layer, layer, sizeof layer);
        if (L->n_members > 1) {
            /* The finding is its pattern; its sites follow. */
            snprintf(site, sizeof site, "%s: %zu sites", ms_leak_pattern_name(L->pattern),
                     L->n_members);
            snprintf(layer, sizeof layer, "-");
        }
        each_text(L->bytes_each_min, L->bytes_each_max, each, sizeof each);
        ms_format_bytes((int64_t)L->bytes, alive, sizeof alive);
        if (L->kind == MS_LEAK_LEAK)
            growth_text(L->growth_count, L->growth_bytes, growth, sizeof growth);
        char w0[32], w1[32];
        printf("  %-8s  %-*s  %-*s  %6llu  %-21s  %10s  %-24s  %8s  %8s\n",
               L->kind == MS_LEAK_ALIVE_AT_END ? "alive" : ms_leak_kind_name(L->kind), wsite,
               site, wlayer, layer,
               (unsigned long long)L->count, each, alive, growth,
               cli_when(w0, sizeof w0, t->has_times, t0, L->first_alloc_us),
               cli_when(w1, sizeof w1, t->has_times, t0, L->last_alloc_us));
        if (L->kind == MS_LEAK_ALIVE_AT_END) {
            char at[512];
            alive_text(s, L, at, sizeof at);
            printf("  %-8s  %s: %s\n", "", at, ms_leak_pattern_text(L->pattern));
        } else if (L->n_members > 1 || L->pattern == MS_LEAK_PATTERN_WORKSPACE) {
            char call[176] = "";
            if (L->call_site != UINT32_MAX) {
                char cs[128];
                site_text(s, L->call_site, cs, sizeof cs);
                snprintf(call, sizeof call, " (model called at %s)", cs);
            }
            printf("  %-8s  %s%s: %s\n", "", ms_leak_pattern_name(L->pattern), call,
                   ms_leak_pattern_text(L->pattern));
        }
        /* The user's own line, where the site is not it (a library's or the standard
         * library's code) nor the model call named above: what to open first. */
        if (L->user_frame != UINT32_MAX && L->user_frame != L->site &&
            L->user_frame != L->call_site) {
            char uf[160];
            site_text(s, L->user_frame, uf, sizeof uf);
            printf("  %-8s  from %s\n", "", uf);
        }
        for (size_t m = 0; L->n_members > 1 && m < L->n_members; m++) {
            const ms_leak_member *M = &r->members[L->first_member + m];
            char msite[150];
            site_text(s, M->site, msite, sizeof msite);
            snprintf(site, sizeof site, "  %s", msite);
            layer_text(s, M->layer, layer, sizeof layer);
            each_text(M->bytes_each_min, M->bytes_each_max, each, sizeof each);
            ms_format_bytes((int64_t)M->bytes, alive, sizeof alive);
            snprintf(growth, sizeof growth, "-");
            if (L->kind == MS_LEAK_LEAK)
                growth_text(M->growth_count, M->growth_bytes, growth, sizeof growth);
            printf("  %-8s  %-*s  %-*s  %6llu  %-21s  %10s  %s\n", "", wsite, site, wlayer,
                   layer, (unsigned long long)M->count, each, alive, growth);
        }
        if (o->stack) {
            print_stack(s, L->stack, 12);
            const char *cc, *um;
            leaks_finding_context(s, t, r, L, &cc, &um);
            if (cc)
                printf("%*scompile context: %s\n", 12, "", cc);
            if (um)
                printf("%*suser metadata: %s\n", 12, "", um);
        }
    }
    if (o->top && total > o->top)
        printf("  (%zu more finding%s: --top %zu lists the largest)\n", total - o->top,
               cli_plural((double)(total - o->top)), o->top);
}

static void print_verdict(const opts *o, const char *path, const ms_leak_counts *t, size_t iterations,
                          bool oom, const char *shape)
{
    char bytes[32], growth[32];
    printf("verdict: %s: ", cli_term(cli_basename(path)));
    if (t->leaks.findings) {
        ms_format_bytes((int64_t)t->leaks.bytes, bytes, sizeof bytes);
        ms_format_bytes((int64_t)(t->leaks.growth_bytes + 0.5), growth, sizeof growth);
        /* Sites first (what the table lists), then the causes when fewer. */
        size_t n = (size_t)t->leak_sites, f = (size_t)t->leaks.findings;
        printf("LEAK: %zu site%s", n, n == 1 ? "" : "s");
        if (f < n)
            printf(" (%zu finding%s)", f, f == 1 ? "" : "s");
        printf(" %s %s and grow%s by %s per iteration", n == 1 ? "holds" : "hold", bytes,
               n == 1 ? "s" : "", growth);
    } else {
        printf("no leak");
        if (iterations <= 1 && shape && *shape)
            printf(" (nothing repeats in %s)", shape);
        else if (iterations == 0)
            printf(" (no iterations found: growth cannot be measured)");
        else if (iterations < 3)
            printf(" (only %zu iteration%s: growth cannot be measured)", iterations,
                   iterations == 1 ? "" : "s");
    }
    if (t->alive_at_end)
        printf("; %zu finding%s alive at the end", (size_t)t->alive_at_end,
               t->alive_at_end == 1 ? "" : "s");
    if (t->suspects)
        printf("; %zu suspect%s", (size_t)t->suspects, t->suspects == 1 ? "" : "s");
    if (oom)
        printf("; out of memory");
    if (t->leaks.findings && o->fail && o->fail_bytes) {
        char lim[32];
        ms_format_bytes((int64_t)o->fail_bytes, lim, sizeof lim);
        printf("; %s --fail=%s", gate_trips(o, t) ? "reaches" : "below", lim);
    }
    printf("\n");
}

/* A device's failure, named as the file loop prints it: "PATH: device D: why". */
static void device_error(ms_error *err, int d)
{
    char pre[32];
    size_t n = (size_t)snprintf(pre, sizeof pre, "device %d: ", d), cap = sizeof err->message;
    memmove(err->message + n, err->message, cap - n - 1); /* the end of a long one goes */
    memcpy(err->message, pre, n);
    err->message[cap - 1] = '\0';
}

/* What the file loop carries from file to file. */
typedef struct leaks_ctx {
    const opts *o;
    size_t files;     /* files done, for the blank line between files */
    bool leak_found;  /* a file trips the --fail gate */
} leaks_ctx;

/* Analyses one file (cli_each_file): its `leaks --json` object, also in text mode, where
 * it is printed as it goes and the object stays empty. */
static cJSON *leaks_file(void *ctxp, const char *path, const ms_snapshot *s, ms_error *err,
                         int *rcp)
{
    (void)rcp;
    leaks_ctx *ctx = ctxp;
    const opts *o = ctx->o;
    int rc = 0;
    cJSON *fo = cJSON_CreateObject(), *devs = NULL, *leaks = NULL;
    if (o->json) {
        cJSON_AddStringToObject(fo, "path", path);
        devs = cJSON_AddArrayToObject(fo, "devices");
        leaks = cJSON_AddArrayToObject(fo, "leaks");
    } else {
        if (ctx->files)
            printf("\n");
        printf("%s\n", cli_term(path));
    }
    ctx->files++;
    ms_leak_counts tl;
    memset(&tl, 0, sizeof tl);
    size_t iterations = 0;
    bool oom = false;
    char shape_text[256] = "";
    for (int d = 0; d < ms_snapshot_device_count(s) && !rc; d++) {
        if (o->device >= 0 ? d != o->device : !cli_device_in_use(s, d))
            continue;
        ms_run *run = NULL;
        const ms_timeline *t = NULL;
        const ms_leak_report *r = NULL;
        ms_run_options ro = {o->lo.iter, o->lo.min_bytes, 0, 0};
        const ms_idle *idle = NULL;
        ms_leak_counts dt;
        if (ms_run_open(&run, s, d, &ro, err) || ms_run_timeline(&t, run, err) ||
            ms_run_leaks(&r, run, err) || ms_run_idle(&idle, run, err) ||
            ms_run_leak_counts(&dt, run, err)) {
            device_error(err, d);
            ms_run_free(run);
            rc = 2;
            break;
        }
        add_counts(&tl, &dt);
        if (r->iterations->n > iterations)
            iterations = r->iterations->n;
        oom = oom || r->oom_count;
        cJSON *shape = shape_json_of_run(run, err);
        if (!shape) {
            device_error(err, d);
            ms_run_free(run);
            rc = 2;
            break;
        }
        /* One forward or one step: the verdict says so instead of counting iterations. */
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(shape, "kind"));
        if (!shape_text[0] && kind &&
            (!strcmp(kind, "forward") || !strcmp(kind, "forward_graph_alive") ||
             !strcmp(kind, "one_step") || !strcmp(kind, "one_step_no_optimizer")))
            snprintf(shape_text, sizeof shape_text, "%s",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(shape, "text")));
        ms_iterations *found = unforced_iterations(o, s, d, t, r);
        if (o->json) {
            cJSON *dj = leaks_device_head_json(run, r->iterations, idle, t->t_first_us);
            cJSON_AddItemToArray(devs, dj);
            cJSON_AddItemToObject(dj, "shape", shape);
            shape = NULL;
            if (found) {
                cJSON *fj = cJSON_AddObjectToObject(dj, "iterations_without_option");
                ms__json_int(fj, "count", (int64_t)found->n);
                cJSON_AddStringToObject(fj, "method", ms_iter_method_name(found->method));
            }
            ms__json_int(dj, "oom_count", (int64_t)(r->oom_count));
            if (r->oom_count) {
                ms__json_int(dj, "first_oom_us", (int64_t)(r->first_oom_us));
                ms__json_int(dj, "first_oom_bytes", (int64_t)(r->first_oom_bytes));
            }
            ms__json_int(dj, "leaks", (int64_t)dt.leaks.findings);
            ms__json_int(dj, "leak_sites", (int64_t)dt.leak_sites);
            ms__json_int(dj, "suspects", (int64_t)dt.suspects);
            ms__json_int(dj, "retained", (int64_t)dt.retained);
            ms__json_int(dj, "alive_at_end", (int64_t)dt.alive_at_end);
            size_t listed = 0;
            for (size_t i = 0; i < r->n; i++)
                if (shown(o, &r->items[i]) && (!o->top || listed++ < o->top))
                    cJSON_AddItemToArray(leaks, leaks_finding_json(s, t, r, &r->items[i], d));
            if (o->top && listed > o->top)
                ms__json_int(dj, "left_out", (int64_t)(listed - o->top));
        } else {
            print_device(o, s, t, r, idle, found, shape);
        }
        cJSON_Delete(shape);
        ms_iterations_free(found);
        ms_run_free(run);
    }
    if (rc) {
        cJSON_Delete(fo);
        return NULL;
    }
    if (gate_trips(o, &tl))
        ctx->leak_found = true;
    if (o->json) {
        cJSON *v = cJSON_AddObjectToObject(fo, "verdict");
        cJSON_AddBoolToObject(v, "leak", tl.leaks.findings > 0);
        ms__json_int(v, "leaks", (int64_t)tl.leaks.findings);
        ms__json_int(v, "leak_sites", (int64_t)tl.leak_sites);
        ms__json_int(v, "suspects", (int64_t)tl.suspects);
        ms__json_int(v, "alive_at_end", (int64_t)tl.alive_at_end);
        ms__json_int(v, "leaked_bytes", (int64_t)tl.leaks.bytes);
        cJSON_AddNumberToObject(v, "growth_bytes_per_iteration", tl.leaks.growth_bytes);
        cJSON_AddBoolToObject(v, "oom", oom);
    } else {
        print_verdict(o, path, &tl, iterations, oom, shape_text);
    }
    return fo;
}

int cmd_leaks(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    o.device = -1;
    char **files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
    if (!files) {
        cli_error(CMD, "out of memory");
        return 2;
    }
    long long device = -1, iterations = 0, top = 0;
    size_t nfiles = 0;
    const cli_option table[] = {
        {CLI_FLAG("--json", &o.json)},
        {CLI_FLAG("--all", &o.all)},
        {CLI_FLAG("--stack", &o.stack)},
        {CLI_SIZE_OPTIONAL("--fail", &o.fail_bytes, &o.fail)},
        {CLI_SIZE("--min-bytes", &o.lo.min_bytes)},
        {CLI_STRING("--step", &o.lo.iter.step_name)},
        {CLI_INT("--top", &top, 1, 100000)},
        {CLI_ITERATIONS(&iterations)},
        {CLI_DEVICE(&device)},
    };
    int rc = CLI_PARSE(CMD, argc, argv, table, files, &nfiles);
    if (rc == CLI_HELP) {
        usage(stdout);
        free(files);
        return 0;
    }
    o.device = (int)device;
    o.top = (size_t)top;
    o.lo.iter.expected = (uint32_t)iterations;
    if (!rc && !nfiles) {
        cli_error(CMD, "no FILE given (see --help)");
        rc = 2;
    }
    leaks_ctx ctx = {&o, 0, false};
    cJSON *doc = NULL;
    if (!rc)
        rc = cli_each_file(CMD, files, (int)nfiles, device, true, leaks_file, &ctx, &doc);
    if (doc) {
        if (o.json)
            rc = cli_print_json(doc);
        else
            cJSON_Delete(doc);
    }
    bool leak = ctx.leak_found;
    free(files);
    if (!rc && o.fail && leak)
        return 1;
    return rc;
}
