/* peak: each device's peak of active memory in a PyTorch CUDA memory snapshot, as an
 * exact byte count, one line per device:
 *
 *     $ ./peak mem.pickle
 *     device 0 peak 549285896
 *
 * The peak is the highest sum of requested bytes of the allocations alive at once; for a
 * complete trace it equals torch.cuda.memory_stats()["requested_bytes.all.peak"].
 *
 * Build against an installed memsnap:
 *     cc peak.c $(pkg-config --cflags --libs memsnap) -o peak
 */
#include <inttypes.h>
#include <stdio.h>

#include <memsnap/memsnap.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SNAPSHOT.pickle\n", argv[0]);
        return 2;
    }
    /* The error struct is the caller's: the library fills it and never prints. */
    ms_error err;
    ms_snapshot *snap = NULL;
    /* NULL limits: the defaults, generous for any real snapshot, still bounded. */
    if (ms_snapshot_read_file(&snap, argv[1], NULL, &err)) {
        fprintf(stderr, "%s: %s (%s)\n", argv[1], err.message, ms_code_name(err.code));
        return 2;
    }
    int rc = 0;
    for (int device = 0; device < ms_snapshot_device_count(snap); device++) {
        ms_timeline *tl = NULL;
        /* No flags: only the totals (peak, live and reserved memory), no per-event
         * arrays, so this stays small on a 4-million-event trace. */
        if (ms_timeline_build(&tl, snap, device, 0, &err)) {
            fprintf(stderr, "%s: device %d: %s\n", argv[1], device, err.message);
            rc = 2;
            break;
        }
        printf("device %d peak %" PRId64 "\n", device, tl->peak_bytes);
        ms_timeline_free(tl);
    }
    ms_snapshot_free(snap);
    return rc;
}
