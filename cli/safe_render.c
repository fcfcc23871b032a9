/* Charts written through cli/safe_output.h: the image goes to a temporary file next to
 * the target and is renamed into place. */
#include <stdio.h>
#include <string.h>

#include "render_stream.h"
#include "safe_output.h"

int safe_out_render(const char *path, int format, int width, int height,
                    const struct ms_chart *const *charts, size_t n_charts, ms_error *err)
{
    char why[300];
    safe_out o;
    if (safe_out_open(&o, path, why, sizeof why)) {
        err->code = MS_ERR_IO;
        err->offset = MS_NO_OFFSET;
        snprintf(err->message, sizeof err->message, "%s", why);
        return MS_ERR_IO;
    }
    int rc = ms_render_write_stream(safe_out_cairo_write, &o, path, (ms_render_format)format,
                                    width, height, charts, n_charts, err);
    if (rc && o.write_errno) {
        /* The OS reason, not cairo's "error while writing to output stream". */
        safe_out_abort(&o);
        err->code = MS_ERR_IO;
        snprintf(err->message, sizeof err->message, "%s: write failed: %s", path,
                 strerror(o.write_errno));
        return MS_ERR_IO;
    }
    if (rc) {
        safe_out_abort(&o);
        return rc;
    }
    if (safe_out_commit(&o, why, sizeof why)) {
        err->code = MS_ERR_IO;
        err->offset = MS_NO_OFFSET;
        snprintf(err->message, sizeof err->message, "%s", why);
        return MS_ERR_IO;
    }
    return 0;
}
