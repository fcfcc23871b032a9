/* memsnap oom: for every `oom` event, the allocator's state at the failure, a cause and
 * what to change. The text is printed from the same JSON that --json prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "oom_chart.h"
#include "options.h"
#include "safe_output.h"
#include "oom_json.h"

static const char *CMD = "oom";

static const char *USAGE =
    "usage: memsnap oom FILE... [--json] [--device N] [--top K] [-o OUT.png|OUT.svg]\n"
    "\n"
    "Explains every out-of-memory event: the request and its block size, the free memory\n"
    "the device reported, allocated and reserved memory, the free memory inside reserved\n"
    "segments (how many blocks, the largest), the categories of memory at the failure, the\n"
    "top sites alive, the iterations before it with their peaks (and the failing one,\n"
    "unfinished), a cause (fragmentation, activations, model_state, leak,\n"
    "single_allocation, other: what would have let the iteration finish) and advice.\n"
    "\n"
    "  --json       print JSON (keys documented in docs/json.md)\n"
    "  --device N   only device N (default: every device with events or segments)\n"
    "  --top K      number of sites to list (default 10)\n"
    "  -o OUT       draw the allocator at the first OOM: segments to scale, blocks by\n"
    "               category, the failed request, and the memory of the iterations before\n"
    "               (PNG or SVG by the extension; with several files, the first OOM found)\n"
    "\n"
    "Exit status: 0 (also when a file has no OOM event), 2 usage or input error.\n";

typedef struct draw_ctx {
    const char *out;
    const char *path;
    const ms_snapshot *s;
    bool done;
    int rc;
} draw_ctx;


static void draw_first(void *ctx, const ms_oom_report *r)
{
    draw_ctx *d = ctx;
    if (d->done || !d->out || r->n == 0)
        return;
    d->done = true;
    ms_error err;
    if (safe_out_oom_chart(d->out, d->s, &r->items[0], d->path,
                           &(msr_image_meta){.source = cli_basename(d->path)}, &err)) {
        cli_error(CMD, "%s", err.message); /* names the file itself, as for render */
        d->rc = 2;
    }
}

typedef struct oom_ctx {
    int device, top;
    draw_ctx draw;
} oom_ctx;

static cJSON *oom_file(void *ctx, const char *path, const ms_snapshot *s, ms_error *err, int *rc)
{
    oom_ctx *q = ctx;
    q->draw.path = path;
    q->draw.s = s;
    cJSON *file = oom_file_json(path, s, q->device, q->top, draw_first, &q->draw, err);
    if (file)
        *rc = q->draw.rc; /* the picture could not be written */
    return file;
}

static void print_file(const cJSON *file)
{
    printf("%s\n", cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(file, "path"))));
    const cJSON *ooms = cJSON_GetObjectItemCaseSensitive(file, "ooms");
    if (cJSON_GetArraySize(ooms) == 0)
        printf("  no OOM events\n");
    const cJSON *o;
    cJSON_ArrayForEach(o, ooms) oom_print_json(stdout, o, 2);
    int more = oom_count_json(file) - cJSON_GetArraySize(ooms);
    if (more > 0)
        printf("  and %d more OOM event%s, not explained (memsnap explains the first %d of a "
               "file)\n",
               more, more == 1 ? "" : "s", MS_OOM_MAX_EXPLAINED);
}

int cmd_oom(int argc, char **argv)
{
    bool json = false;
    long long device = -1, top = 10;
    const char *out = NULL;
    size_t nfiles = 0;
    char **files = NULL;
    const cli_option table[] = {
        {CLI_FLAG("--json", &json)},
        {CLI_DEVICE(&device)},
        {CLI_INT("--top", &top, 1, 100000)},
        {CLI_STRING("-o", &out)},
    };
    int rc = CLI_PARSE_INPUTS(CMD, USAGE, argc, argv, table, &files, &nfiles);
    if (rc == CLI_HELP) {
        free(files);
        return 0;
    }
    if (!rc && out)
        rc = safe_out_picture_path(CMD, out);
    oom_ctx q = {(int)device, (int)top, {out, NULL, NULL, false, 0}};
    cJSON *doc = NULL;
    if (!rc)
        rc = cli_each_file(CMD, files, (int)nfiles, device, true, oom_file, &q, &doc);
    if (!rc && out && !q.draw.done)
        fprintf(stderr, "memsnap oom: no OOM event, so no picture was written to %s\n",
                cli_term(out));
    if (!rc)
        rc = cli_emit_files(doc, json, print_file);
    free(files);
    return rc;
}
