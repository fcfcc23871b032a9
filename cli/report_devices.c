/* The sections of one report file that go device by device: the summary's devices[],
 * the leaks and iterations, and the OOMs. Each device's run is opened once and serves
 * all three (the charted device's is the file's own run), so a device's timeline,
 * iterations, leak findings and OOM analyses are computed once for the whole report,
 * and a file of many devices holds one device's analyses at a time. */
#include <string.h>

#include "cli_util.h"
#include "report.h"
#include "report_cmd.h"
#include "summary_json.h"

int report_devices_build(report_devices *rd, cJSON *summary_devices, const ms_snapshot *s,
                         const report_opts *o, ms_run *chart_run, ms_profile *profile,
                         ms_error *err)
{
    memset(rd, 0, sizeof *rd);
    report_leaks_begin(rd);
    rd->ooms = cJSON_CreateArray();
    ms_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.iter.step_name = o->step_name;
    ro.iter.expected = o->iterations;
    ro.oom_top_sites = (size_t)o->top;
    size_t oom_room = MS_OOM_MAX_EXPLAINED;
    int chart_device = ms_run_device(chart_run);
    size_t listed = 0;
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        if (o->device >= 0 ? d != o->device : !cli_device_in_use(s, d))
            continue;
        ms_run *own = NULL;
        ms_run *run = chart_run;
        if (d != chart_device) {
            if (ms_run_open(&own, s, d, &ro, err))
                return err->code;
            run = own;
        }
        cJSON *dev = summary_device_json(run, o->top, true, &oom_room, err);
        int rc = dev ? 0 : err->code ? err->code : MS_ERR_NOMEM;
        /* The printers show the first REPORT_PAGE_DEVICES and the charted one; the rest
         * are only written to summary.json, at doc > files[] > file > devices[] (depth 4)
         * and file > leaks > devices[] (depth 5). The printers and gates read these
         * fields of every device. */
        static const char *const dev_keep[] = {"device", "peak.bytes", "reserved.peak_bytes",
                                               NULL};
        static const char *const leak_keep[] = {"device", "iterations.count", NULL};
        bool spooled = listed++ >= REPORT_PAGE_DEVICES && d != chart_device;
        if (dev && spooled)
            dev = report_spool_device(dev, 4, dev_keep);
        if (dev)
            cJSON_AddItemToArray(summary_devices, dev);
        if (!rc)
            rc = report_leaks_device(rd, run, d == chart_device ? profile : NULL, err);
        cJSON *ld = rd->leak_devices ? cJSON_GetArrayItem(rd->leak_devices, 0) : NULL;
        if (!rc && spooled && ld && (ld = ld->prev) != NULL && !cJSON_IsRaw(ld) &&
            (int)cli_json_num(ld, "device") == d) {
            /* the device just added: the array's last item (its first one's prev) */
            cJSON_DetachItemViaPointer(rd->leak_devices, ld);
            cJSON_AddItemToArray(rd->leak_devices, report_spool_device(ld, 5, leak_keep));
        }
        if (!rc)
            report_oom_device(rd, run);
        if (rd->oom_run == own && own)
            rd->own_oom_run = own; /* kept for its picture, drawn after the charts */
        else
            ms_run_free(own);
        if (rc)
            return rc;
    }
    report_leaks_end(rd);
    return 0;
}

void report_devices_free(report_devices *rd)
{
    cJSON_Delete(rd->leaks);
    cJSON_Delete(rd->ooms);
    ms_run_free(rd->own_oom_run);
    memset(rd, 0, sizeof *rd);
}
