/* leaks: the memory leaks memsnap finds in a snapshot of a training run, one line per
 * leaking allocation site of the busiest device:
 *
 *     $ ./leaks mem.pickle
 *     leak /home/ml/train/scenarios.py:129 forward: 24 alive, 3149824 bytes each, +8 per iteration
 *
 * A leak is a site whose allocations outlive the iteration that made them, more of them
 * alive at each iteration's end (memsnap leaks, docs/leaks.md). Exit status 1 when one
 * is found, as `memsnap leaks --fail`.
 *
 * Build against an installed memsnap:
 *     cc leaks.c $(pkg-config --cflags --libs memsnap) -o leaks
 */
#include <inttypes.h>
#include <stdio.h>

#include <memsnap/leaks.h>
#include <memsnap/memsnap.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SNAPSHOT.pickle\n", argv[0]);
        return 2;
    }
    ms_error err;
    ms_snapshot *snap = NULL;
    if (ms_snapshot_read_file(&snap, argv[1], NULL, &err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err.message);
        return 2;
    }
    int device = ms_snapshot_busiest_device(snap);
    /* NULL timeline and options: the analysis builds the timeline it needs and finds the
     * iterations itself (annotations, optimizer steps, repeated forward calls, ...). */
    ms_leak_report *report = NULL;
    if (ms_leaks_find(&report, snap, device, NULL, NULL, &err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err.message);
        ms_snapshot_free(snap);
        return 2;
    }
    printf("%zu iterations (%s)\n", report->iterations->n,
           ms_iter_method_key(report->iterations->method));
    int found = 0;
    for (size_t i = 0; i < report->n; i++) {
        const ms_leak *leak = &report->items[i];
        if (leak->kind != MS_LEAK_LEAK) /* suspects and retained memory are not leaks */
            continue;
        /* The site is a frame id; its strings belong to the snapshot. */
        const ms_frame *site = ms_snapshot_frame(snap, leak->site);
        printf("leak %s:%" PRId64 " %s: %" PRIu64 " alive, %" PRIu64,
               site ? ms_snapshot_string(snap, site->filename) : "?", site ? site->line : 0,
               site ? ms_snapshot_string(snap, site->name) : "?", leak->count,
               leak->bytes_each_min);
        if (leak->bytes_each_max != leak->bytes_each_min)
            printf("-%" PRIu64, leak->bytes_each_max);
        printf(" bytes each, +%.0f per iteration\n", leak->growth_count);
        found = 1;
    }
    ms_leak_report_free(report);
    ms_snapshot_free(snap);
    return found;
}
