/* memsnap summary: the numbers a person asks first about a snapshot. The text form is
 * printed from the same JSON object that --json prints, so the two never disagree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "categories_json.h"
#include "cli_util.h"
#include "term_text.h"
#include "commands.h"
#include "iterations_json.h"
#include "oom_json.h"
#include "options.h"
#include "shape_json.h"
#include "summary_json.h"

static const char *USAGE =
    "usage: memsnap summary FILE... [--json] [--device N] [--top K]\n"
    "\n"
    "Per file and device: events by action, time span, peak active memory (bytes, time,\n"
    "event), live memory at the end, reserved memory, allocations reconstructed from\n"
    "before the trace began, OOM events, annotations, allocator settings and the top K\n"
    "allocation sites alive at the peak.\n"
    "\n"
    "  --json       print JSON (keys documented in docs/json.md)\n"
    "  --device N   only device N (default: every device with events or segments)\n"
    "  --top K      number of sites to list (default 10)\n"
    "\n"
    "FILE may be gzip-compressed, or - for standard input.\n";

static const char *size_text(double bytes, char *buf)
{
    ms_format_bytes((int64_t)bytes, buf, 32);
    return buf;
}

/* " from train/ddp.py:30 worker" after a top site made outside the user's code. */
static void print_user_frame(const cJSON *site)
{
    char uf[512];
    const cJSON *line = cJSON_GetObjectItemCaseSensitive(site, "line");
    if (leaks_user_frame_text(cJSON_GetObjectItemCaseSensitive(site, "user_frame"),
                              cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(site, "filename")),
                              cJSON_IsNumber(line) ? line->valuedouble : -1, uf, sizeof uf))
        printf(" from %s", cli_term(uf));
}

static void print_device(const cJSON *dev)
{
    char a[128], b[32];
    bool times = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(dev, "has_times"));
    bool instant = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "one_instant"));
    const cJSON *backward = cJSON_GetObjectItemCaseSensitive(dev, "times_backward_at");
    if (cli_json_num(dev, "events") == 0)
        printf("device %d: no events recorded\n", (int)cli_json_num(dev, "device"));
    else if (cJSON_IsNumber(backward))
        printf("device %d: %.0f event%s (warning: %s)\n", (int)cli_json_num(dev, "device"),
               cli_json_num(dev, "events"), cli_plural(cli_json_num(dev, "events")),
               cli_times_backward_text(a, sizeof a, backward->valuedouble));
    else if (instant && cli_json_num(dev, "events") == 1)
        printf("device %d: 1 event, one instant: no span of time to show (event indexes stand "
               "for times)\n", (int)cli_json_num(dev, "device"));
    else if (instant)
        printf("device %d: %.0f events, all at one instant: no span of time to show (event "
               "indexes stand for times)\n", (int)cli_json_num(dev, "device"), cli_json_num(dev, "events"));
    else if (!times)
        printf("device %d: %.0f event%s (this PyTorch recorded no times: event indexes stand "
               "for them)\n", (int)cli_json_num(dev, "device"), cli_json_num(dev, "events"),
               cli_plural(cli_json_num(dev, "events")));
    else
        printf("device %d: %.0f event%s over %s\n", (int)cli_json_num(dev, "device"), cli_json_num(dev, "events"),
               cli_plural(cli_json_num(dev, "events")),
               cli_seconds_text(a, sizeof a, cli_json_num(dev, "time.seconds"), cli_json_num(dev, "time.seconds")));
    const cJSON *act;
    printf("  actions         ");
    int first = 1;
    cJSON_ArrayForEach(act, cJSON_GetObjectItemCaseSensitive(dev, "actions"))
    {
        printf("%s%s %.0f", first ? "" : ", ", cli_term(act->string), act->valuedouble);
        first = 0;
    }
    printf("%s\n", first ? "none" : "");
    if (cli_json_num(dev, "peak.event") < 0)
        printf("  peak            %s before the first recorded event\n",
               size_text(cli_json_num(dev, "peak.bytes"), a));
    else if (!times)
        printf("  peak            %s at event %.0f\n", size_text(cli_json_num(dev, "peak.bytes"), a),
               cli_json_num(dev, "peak.event"));
    else
        printf("  peak            %s at %s (event %.0f)\n", size_text(cli_json_num(dev, "peak.bytes"), a),
               cli_seconds_text(b, sizeof b, cli_json_num(dev, "peak.seconds"), cli_json_num(dev, "time.seconds")),
               cli_json_num(dev, "peak.event"));
    const cJSON *cats = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(dev, "peak"), "categories");
    if (cats) {
        printf("  peak is         ");
        categories_print_line(stdout, cats, cli_json_num(dev, "peak.bytes"));
        printf("\n");
    }
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(dev, "peak");
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(pk, "free_in_reserved_bytes"))) {
        char c[32];
        double pieces = cli_json_num(dev, "peak.free_blocks");
        printf("  free in reserved at the peak: %s in %.0f piece%s, largest %s%s\n",
               size_text(cli_json_num(dev, "peak.free_in_reserved_bytes"), a), pieces, cli_plural(pieces),
               size_text(cli_json_num(dev, "peak.largest_free_block_bytes"), c),
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pk, "free_approximate"))
                   ? " (approximate)"
                   : "");
    }
    printf("  live at end     %s in %.0f allocation%s\n", size_text(cli_json_num(dev, "live_end.bytes"), a),
           cli_json_num(dev, "live_end.count"), cli_plural(cli_json_num(dev, "live_end.count")));
    printf("  reserved        peak %s, end %s\n", size_text(cli_json_num(dev, "reserved.peak_bytes"), a),
           size_text(cli_json_num(dev, "reserved.end_bytes"), b));
    bool complete = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "trace_complete"));
    const char *wrap =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dev, "ring_buffer_wrapped"));
    printf("  trace           %s", complete ? "complete" : "incomplete: ");
    if (!complete) {
        double n = cli_json_num(dev, "preexisting.count");
        printf("%s in %.0f allocation%s (%s reserved) %s alive before the first recorded event ",
               size_text(cli_json_num(dev, "preexisting.bytes"), a), n, n == 1 ? "" : "s",
               size_text(cli_json_num(dev, "reserved.start_bytes"), b), n == 1 ? "was" : "were");
        if (wrap && !strcmp(wrap, "annotations_before_first_event"))
            printf("(the ring buffer dropped older events: record_function ranges ended before "
                   "the first kept event)");
        else if (wrap)
            printf("(the ring buffer probably dropped older events: the trace holds a round "
                   "%.0f entries, as a full max_entries buffer does)", cli_json_num(dev, "events"));
        else
            printf("(the recording started after them, or the ring buffer dropped older events)");
    }
    printf("\n");
    const cJSON *ooms = cJSON_GetObjectItemCaseSensitive(dev, "ooms");
    if (cJSON_GetArraySize(ooms) == 0) {
        printf("  OOM events      none\n");
    } else {
        const cJSON *o;
        cJSON_ArrayForEach(o, ooms)
        {
            printf("  OOM event       requested %s with %s free on the device (event %.0f)",
                   size_text(cli_json_num(o, "requested_bytes"), a), size_text(cli_json_num(o, "device_free_bytes"), b),
                   cli_json_num(o, "event"));
            const char *cause = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "cause"));
            if (cause)
                printf(": cause %s%s (details: memsnap oom)", cli_term(cause),
                       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "approximate"))
                           ? ", approximate"
                           : "");
            printf("\n");
        }
        int more = oom_count_json(dev) - cJSON_GetArraySize(ooms);
        if (more > 0)
            printf("  OOM events      %d more, not listed (memsnap explains the first %d of a "
                   "file)\n",
                   more, MS_OOM_MAX_EXPLAINED);
    }
    if (cli_json_num(dev, "annotations_unplaced") > 0)
        printf("  annotations     %.0f (%.0f left out: the trace has no %s to place them)\n",
               cli_json_num(dev, "annotations"), cli_json_num(dev, "annotations_unplaced"),
               instant ? "span of time" : "times");
    else
        printf("  annotations     %.0f\n", cli_json_num(dev, "annotations"));
    shape_print_json(stdout, cJSON_GetObjectItemCaseSensitive(dev, "shape"), 2, 15);
    leaks_iterations_print_json(stdout, cJSON_GetObjectItemCaseSensitive(dev, "iterations"), 2);
    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(dev, "top_sites");
    if (cJSON_GetArraySize(sites) > 0) {
        printf("  top sites alive at the peak:\n");
        printf("  %12s %8s  %s\n", "bytes", "count", "site");
        const cJSON *st;
        cJSON_ArrayForEach(st, sites)
        {
            printf("  %12s %8.0f  %s %s", size_text(cli_json_num(st, "bytes"), a), cli_json_num(st, "count"),
                   cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "site"))),
                   cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "function"))));
            print_user_frame(st);
            printf("\n");
        }
    }
}

static void print_file(const cJSON *file)
{
    printf("%s (pickle protocol %d, %.0f byte%s)\n",
           cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(file, "path"))),
           (int)cli_json_num(file, "pickle_protocol"), cli_json_num(file, "pickle_bytes"),
           cli_plural(cli_json_num(file, "pickle_bytes")));
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(file, "allocator_settings");
    /* Only what differs from PyTorch's defaults: the rest is the same in every file. */
    const cJSON *kv;
    int first = 1;
    cJSON_ArrayForEach(kv, set)
    {
        if (summary_setting_is_default(kv->string, cJSON_GetStringValue(kv)))
            continue;
        printf("%s%s=%s", first ? "allocator settings: " : ", ", cli_term(kv->string),
               cli_term(cJSON_GetStringValue(kv)));
        first = 0;
    }
    if (!first)
        printf("\n");
    const cJSON *devices = cJSON_GetObjectItemCaseSensitive(file, "devices");
    if (cJSON_GetArraySize(devices) == 0)
        printf("no device has events or segments\n");
    const cJSON *dev;
    cJSON_ArrayForEach(dev, devices) print_device(dev);
}

typedef struct summary_ctx {
    int device, top;
    bool json; /* the leak totals are in the JSON only: the text does not show them */
} summary_ctx;

static cJSON *summary_file(void *ctx, const char *path, const ms_snapshot *s, ms_error *err,
                           int *rc)
{
    (void)rc;
    const summary_ctx *q = ctx;
    return summary_file_json_ex(path, s, q->device, q->top, q->json, NULL, err);
}

int cmd_summary(int argc, char **argv)
{
    const char *cmd = "summary";
    bool json = false;
    long long device = -1, top = 10;
    size_t nfiles = 0;
    char **files = NULL;
    const cli_option table[] = {
        {CLI_FLAG("--json", &json)},
        {CLI_DEVICE(&device)},
        {CLI_INT("--top", &top, 0, 100000)},
    };
    int rc = CLI_PARSE_INPUTS(cmd, USAGE, argc, argv, table, &files, &nfiles);
    if (rc == CLI_HELP) {
        free(files);
        return 0;
    }
    cJSON *doc = NULL;
    summary_ctx ctx = {(int)device, (int)top, json};
    if (!rc)
        rc = cli_each_file(cmd, files, (int)nfiles, device, false, summary_file, &ctx, &doc);
    if (!rc)
        rc = cli_emit_files(doc, json, print_file);
    free(files);
    return rc;
}
