/* Leaks of `memsnap report`: placeholder until the leaks module is merged. */
#include "report.h"

cJSON *report_leaks_json(const ms_snapshot *s, const report_opts *o, int chart_device,
                         const ms_timeline *t, ms_profile *profile, ms_error *err)
{
    (void)s, (void)o, (void)chart_device, (void)t, (void)profile;
    err->code = 0;
    return NULL;
}
