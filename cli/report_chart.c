/* Charts of `memsnap report`: placeholder until render/ is merged. */
#include "report.h"

int report_chart_file(char **svg_out, const ms_snapshot *s, const ms_timeline *t,
                      const char *label, const report_opts *o, const char *png_path,
                      ms_error *err)
{
    (void)s, (void)t, (void)label, (void)o, (void)png_path, (void)err;
    *svg_out = NULL;
    return 0;
}

int report_chart_compare(char **svg_out, const report_chart_input *in, size_t n,
                         const char *png_path, ms_error *err)
{
    (void)in, (void)n, (void)png_path, (void)err;
    *svg_out = NULL;
    return 0;
}
