/* memsnap segments: the caching allocator's segments and blocks at chosen instants (by
 * default the peak and the end), rebuilt by one forward replay of the trace. The text is
 * printed from the same JSON objects that --json prints, one instant at a time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "options.h"
#include "safe_output.h"
#include "segments_chart.h"
#include "segments_json.h"

static const char *const CMD = "segments";

/* Instants the picture draws, one panel each. */
#define MAX_PANELS 8

static const char *USAGE =
    "usage: memsnap segments FILE... [--at SECONDS | --at-us US | --event N]... [--json]\n"
    "                        [--device N] [--top K] [--by category|site]\n"
    "                        [-o OUT.png|OUT.svg]\n"
    "\n"
    "The caching allocator's state at each instant asked for (by default the peak and the\n"
    "end): every segment (address, size, stream, pool, expandable) and its blocks in\n"
    "address order (size, requested size, state, site, category), the free memory inside\n"
    "reserved segments, the largest free block and the number of free blocks, in total\n"
    "and per pool and stream, and the segments holding the most free memory with the\n"
    "allocations that keep them. The state is what torch.cuda.memory_snapshot() would\n"
    "have shown right after that event.\n"
    "\n"
    "  --at SECONDS   the state at this many seconds after the first event; repeatable\n"
    "  --at-us US     the state at this time on the trace's clock (time_us); repeatable\n"
    "  --event N      the state right after event N (-1: before the first); repeatable\n"
    "  --json         print JSON (docs/json.md)\n"
    "  --device N     only device N (default: every device with events or segments)\n"
    "  --top K        segments with free memory the text lists per instant (default 5)\n"
    "  --by WHAT      the picture's block colours: category (default) or site, as the\n"
    "                 timeline's bands\n"
    "  -o, --output OUT\n"
    "                 draw the segments to scale at each instant (the first 8, of the\n"
    "                 first file's first device), PNG or SVG by the extension\n"
    "\n"
    "Exit status: 0 ok, 2 usage or input error.\n";

typedef struct instants {
    seg_instant *v;
    size_t n;
} instants;

static int add_instant(void *ctx, const char *cmd, const char *name, const char *value)
{
    instants *list = ctx;
    seg_instant *x = &list->v[list->n++];
    /* the option as the output names it */
    size_t cap = strlen(name) + strlen(value) + 2;
    char *text = malloc(cap);
    if (!text) {
        cli_error(cmd, "out of memory");
        return 2;
    }
    snprintf(text, cap, "%s %s", name, value);
    x->text = text;
    if (!strcmp(name, "--at")) {
        x->kind = SEG_AT_SECONDS;
        return cli_parse_double(cmd, name, value, &x->seconds);
    }
    char *end = NULL;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (!strcmp(name, "--at-us")) {
        x->kind = SEG_AT_US;
        if (errno || end == value || *end || v < 0) {
            cli_error(cmd, "--at-us: '%s' is not a time in microseconds (a non-negative "
                           "integer)",
                      cli_term(value));
            return 2;
        }
        x->time_us = v;
        return 0;
    }
    x->kind = SEG_AT_EVENT;
    if (errno || end == value || *end || v < -1) {
        cli_error(cmd, "--event: '%s' is not an event index (an integer, -1 or more)",
                  cli_term(value));
        return 2;
    }
    x->event = v;
    return 0;
}

static cJSON *segments_file(void *ctx, const char *path, const ms_snapshot *s, ms_error *err,
                            int *rc)
{
    seg_query *q = ctx;
    cJSON *file = segments_file_json(path, s, q, err);
    if (!file)
        return NULL;
    /* The picture is drawn while the file's snapshot is loaded (its sites' names). */
    if (q->kept && q->keep_done && q->n_kept && q->kept_path == path && !q->drawn) {
        q->drawn = true;
        seg_kept *k = q->kept;
        msr_segments_panel panels[MAX_PANELS];
        for (size_t i = 0; i < q->n_kept; i++)
            panels[i] = (msr_segments_panel){k[i].heap, k[i].block_category, k[i].title};
        char title[512];
        snprintf(title, sizeof title, "%s  ·  cuda:%d  ·  allocator segments",
                 cli_basename(path), q->kept_device);
        msr_segments_figure fig = {s, panels, q->n_kept, q->by_site ? MSR_SEG_BY_SITE
                                                                   : MSR_SEG_BY_CATEGORY,
                                  title};
        ms_error perr;
        if (safe_out_segments_chart(q->out, &fig,
                                    &(msr_image_meta){.source = cli_basename(path)}, &perr)) {
            cli_error(CMD, "%s", perr.message);
            *rc = 2;
        } else if (q->n_wanted > q->n_kept) {
            fprintf(stderr, "memsnap segments: the picture shows the first %zu of %zu instants\n",
                    q->n_kept, q->n_wanted);
        }
    }
    return file;
}

int cmd_segments(int argc, char **argv)
{
    bool json = false;
    long long device = -1, top = 5;
    int by = 0;
    const char *out = NULL;
    static const char *const BY[] = {"category", "site", NULL};
    seg_instant *at = calloc((size_t)argc + 1, sizeof *at);
    char **files = NULL;
    seg_kept kept[MAX_PANELS];
    memset(kept, 0, sizeof kept);
    if (!at)
        return 2;
    instants list = {at, 0};
    size_t nfiles = 0;
    const cli_option table[] = {
        {CLI_FLAG("--json", &json)},
        {CLI_DEVICE(&device)},
        {CLI_INT("--top", &top, 0, 100000)},
        {CLI_CHOICE("--by", &by, BY)},
        {CLI_OUTPUT(&out)},
        {CLI_CALLBACK("--at", add_instant, &list)},
        {CLI_CALLBACK("--at-us", add_instant, &list)},
        {CLI_CALLBACK("--event", add_instant, &list)},
    };
    int rc = CLI_PARSE_INPUTS(CMD, USAGE, argc, argv, table, &files, &nfiles);
    if (!rc && out)
        rc = safe_out_picture_path(CMD, out);
    if (rc) {
        rc = rc == CLI_HELP ? 0 : rc;
        goto done;
    }
    seg_query q;
    memset(&q, 0, sizeof q);
    q.device = (int)device;
    q.at = at;
    q.n_at = list.n;
    q.top = (int)top;
    q.text = json ? NULL : stdout;
    q.kept = out ? kept : NULL;
    q.max_keep = MAX_PANELS;
    q.out = out;
    q.by_site = by == 1;
    cJSON *doc = NULL;
    rc = cli_each_file(CMD, files, (int)nfiles, device, true, segments_file, &q, &doc);
    if (!rc && json)
        rc = cli_print_json(doc);
    else
        cJSON_Delete(doc);
    for (size_t i = 0; i < q.n_kept; i++) {
        ms_heap_free(kept[i].heap);
        free(kept[i].block_category);
    }
done:
    for (size_t i = 0; i < list.n; i++)
        free((char *)at[i].text);
    free(at);
    free(files);
    return rc;
}
