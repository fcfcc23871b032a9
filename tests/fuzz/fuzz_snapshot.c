/* libFuzzer target: the whole read path (input, VM, model) and the timeline over any
 * bytes. Also linked with replay_main.c as a plain test that replays the corpus. */
#include <stddef.h>
#include <stdint.h>

#include "memsnap/leaks.h"
#include "memsnap/memsnap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ms_snapshot *s = NULL;
    ms_error err;
    ms_limits lim = ms_limits_default();
    /* Small limits keep each run fast; they are limits, not different code paths. */
    lim.max_objects = 1u << 16;
    lim.max_memo = 1u << 16;
    lim.max_string = 1u << 16;
    lim.max_events = 1u << 16;
    if (ms_snapshot_read_memory(&s, data, size, &lim, &err) != 0)
        return 0;
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        ms_timeline *t = NULL;
        if (ms_timeline_build(&t, s, d, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS | MS_TIMELINE_PEAK_ALIVE, &err) == 0) {
            ms_alloc *alive = NULL;
            size_t n = 0;
            if (ms_timeline_alive_at(&alive, &n, s, t, t->peak_event, &err) == 0) {
                ms_site_total *tot = NULL;
                size_t nt = 0;
                if (ms_site_totals(&tot, &nt, s, alive, n, &err) == 0) {
                    char buf[256];
                    for (size_t i = 0; i < nt; i++)
                        ms_site_format(s, tot[i].site, buf, sizeof buf);
                }
                ms_free(tot);
            }
            ms_free(alive);
            /* The iterations and leak analyses read the same model. */
            ms_leak_report *r = NULL;
            if (ms_leaks_find(&r, s, d, t, NULL, &err) == 0)
                ms_leak_report_free(r);
        }
        ms_timeline_free(t);
    }
    ms_snapshot_free(s);
    return 0;
}
