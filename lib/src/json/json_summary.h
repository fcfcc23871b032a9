/* The `summary --json` object of one file, shared by summary, diff, ranks, report and
 * ms_run_json so every view of a file's summary shows the same fields (docs/json.md),
 * and read back into a comparison profile by diff, ranks and report --baseline. Writer
 * and reader live together (json_summary.c), so a key added to one side is added to the
 * other in the same place. */
#ifndef MEMSNAP_JSON_SUMMARY_H
#define MEMSNAP_JSON_SUMMARY_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "memsnap/compare.h"
#include "memsnap/memsnap.h"
#include "memsnap/run.h"

/* Builds {"path", "pickle_protocol", "devices": [...]} for one file. `device` -1 lists
 * every device in use; `top_k` is the number of top sites at the peak per device.
 * Returns NULL and fills err on failure. */
cJSON *summary_file_json(const char *path, const ms_snapshot *s, int device, int top_k,
                         ms_error *err);
/* The same with choices: `leaks` false leaves out devices[].leaks (for `summary`'s text,
 * which does not show them: the leak analysis costs as much again); `known`, when not
 * NULL, is a run of `s` (the one a comparison profile was read from): its device's
 * figures are read from it, so the summary and the profile show one analysis. Every
 * other device gets a run of its own. */
cJSON *summary_file_json_ex(const char *path, const ms_snapshot *s, int device, int top_k,
                            bool leaks, ms_run *known, ms_error *err);

/* The pieces of that object, for a caller that walks the devices itself (report, whose
 * runs serve its other sections too): the file's fields before "devices", and one
 * device's object read from its run. `oom_room` counts down the OOMs still listed with
 * their events (MS_OOM_MAX_EXPLAINED per file). */
cJSON *summary_file_head_json(const char *path, const ms_snapshot *s);
cJSON *summary_device_json(ms_run *run, int top_k, bool leaks, size_t *oom_room, ms_error *err);

/* One files[].devices[] object of `summary --json`, every figure read from `run`
 * (ms_run_json's "summary"), with the OOMs of a whole file's room. NULL with err filled
 * on failure. */
cJSON *summary_run_device_json(ms_run *run, int top_k, ms_error *err);

/* {"findings", "bytes", "growth_per_iteration_bytes"}: the leak totals `memsnap leaks`
 * prints in its verdict (ms_leak_report_totals), as summaries, diff and ranks write them. */
cJSON *summary_leaks_json(const ms_leak_totals *lt);

/* {"iteration" (1-based, null outside), "iterations", "unfinished", "phase"}, or null
 * when not known: where a peak falls (summary's peak.place, a comparison's pair). */
cJSON *compare_peak_place_json(const ms_peak_place *pl);

/* Whether an allocator setting (summary JSON "allocator_settings", values as text) is
 * PyTorch's default: the text views list only those that are not. */
bool summary_setting_is_default(const char *key, const char *value);

/* A profile from one file's object of that JSON: `devices` is the object's "devices"
 * list, `path` names the profile. `device` -1 takes the device with the most events
 * (ties: the lowest id), as for a snapshot. The sites at the peak come from "top_sites",
 * complete when they account for every byte at the peak; the leak totals from "leaks",
 * unknown when the summary has none. MS_ERR_FORMAT with a message naming the key when
 * the JSON lacks what a profile needs. */
int summary_profile_read(ms_profile **out, const char *path, const cJSON *devices, int device,
                         ms_error *err);

#endif
