#include "json/json_devices.h"

#include "json/json_util.h"

cJSON *ms__json_file_devices(const char *path, const ms_snapshot *s, int device,
                             ms__json_device_fn fn, void *ctx, ms_error *err)
{
    cJSON *file = cJSON_CreateObject();
    cJSON_AddStringToObject(file, "path", path);
    cJSON *devices = cJSON_AddArrayToObject(file, "devices");
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        if (device >= 0 ? d != device : !ms__device_in_use(s, d))
            continue;
        cJSON *dev = fn(ctx, s, d, err);
        if (!dev) {
            cJSON_Delete(file);
            return NULL;
        }
        cJSON_AddItemToArray(devices, dev);
    }
    return file;
}
