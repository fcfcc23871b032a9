/* leaks: the memory leaks memsnap finds in a snapshot of a training run on the busiest
 * device, one line per root cause and under it one line per allocation site it holds:
 *
 *     $ ./leaks mem.pickle
 *     3 iterations (optimizer-annotation)
 *     leak forward: 48 alive, 94470144 bytes, +16 per iteration (+31490048 bytes), model called at /home/ml/train/scenarios.py:159 layers_run
 *       leak /home/ml/train/scenarios.py:129 forward: 24 alive, 3149824 bytes each, +8 per iteration
 *       leak /home/ml/train/scenarios.py:128 forward: 24 alive, 786432 bytes each, +8 per iteration
 *
 * A leak is a site whose allocations outlive the iteration that made them, more of them
 * alive at each iteration's end (memsnap leaks, docs/leaks.md). Sites that leak for one
 * reason are one finding, named by its pattern: "site" (one line keeps what it makes),
 * "forward" (one owner keeps the outputs of several layers), "graph" (each iteration's
 * autograd graph stays alive: its sites are the model's layers), ... When the sites are
 * inside a model's forward pass, the finding names the user's line that called the
 * model, which is where the fix goes. Exit status 1 when a leak is found, as
 * `memsnap leaks --fail`.
 *
 * Build against an installed memsnap:
 *     cc leaks.c $(pkg-config --cflags --libs memsnap) -o leaks
 */
#include <inttypes.h>
#include <stdio.h>

#include <memsnap/leaks.h>
#include <memsnap/memsnap.h>

/* "file:line function" of a frame, with the whole path: the strings belong to the
 * snapshot. */
static void print_frame(const ms_snapshot *snap, uint32_t frame_id)
{
    const ms_frame *f = ms_snapshot_frame(snap, frame_id);
    if (!f) { /* UINT32_MAX: the allocations had no stack */
        printf("?:0 ?");
        return;
    }
    printf("%s:%" PRId64 " %s", ms_snapshot_string(snap, f->filename), f->line,
           ms_snapshot_string(snap, f->name));
}

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
    if (ms_leak_report_build(&report, snap, device, NULL, NULL, &err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err.message);
        ms_snapshot_free(snap);
        return 2;
    }
    printf("%zu iterations (%s)\n", report->iterations->n,
           ms_iter_method_name(report->iterations->method));
    int found = 0;
    for (size_t i = 0; i < report->n; i++) {
        const ms_leak *leak = &report->items[i];
        if (leak->kind != MS_LEAK_LEAK) /* suspects and retained memory are not leaks */
            continue;
        /* The finding's numbers are its members' summed. */
        printf("%s %s: %" PRIu64 " alive, %" PRIu64
               " bytes, +%.0f per iteration (+%.0f bytes)",
               ms_leak_kind_name(leak->kind), ms_leak_pattern_name(leak->pattern),
               leak->count, leak->bytes, leak->growth_count, leak->growth_bytes);
        if (leak->call_site != UINT32_MAX) {
            /* The sites of a forward pass are inside the model; the fix is at the call. */
            printf(", model called at ");
            print_frame(snap, leak->call_site);
        }
        printf("\n");
        for (size_t m = 0; m < leak->n_members; m++) {
            const ms_leak_member *member = &report->members[leak->first_member + m];
            printf("  leak ");
            print_frame(snap, member->site);
            printf(": %" PRIu64 " alive, %" PRIu64, member->count, member->bytes_each_min);
            if (member->bytes_each_max != member->bytes_each_min)
                printf("-%" PRIu64, member->bytes_each_max);
            printf(" bytes each, +%.0f per iteration\n", member->growth_count);
        }
        found = 1;
    }
    ms_leak_report_free(report);
    ms_snapshot_free(snap);
    return found;
}
