/* The file-level object of the per-device JSON views ({"path", "devices": [...]}): one
 * rule for which devices a file lists, whatever the view. */
#ifndef MEMSNAP_JSON_DEVICES_H
#define MEMSNAP_JSON_DEVICES_H

#include <cjson/cJSON.h>

#include "memsnap/memsnap.h"

/* One device's object, or NULL with err filled. */
typedef cJSON *(*ms__json_device_fn)(void *ctx, const ms_snapshot *s, int device,
                                     ms_error *err);

/* {"path", "devices": [fn(each device)]}: `device` alone, or (-1) every device in use
 * (ms__device_in_use). NULL when a device's object fails. */
cJSON *ms__json_file_devices(const char *path, const ms_snapshot *s, int device,
                             ms__json_device_fn fn, void *ctx, ms_error *err);

#endif
