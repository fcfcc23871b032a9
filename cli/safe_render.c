/* Charts written through cli/safe_output.h: the image goes to a temporary file next to
 * the target and is renamed into place. */
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "oom_chart.h"
#include "segments_chart.h"
#include "cli_util.h"
#include "safe_output.h"

static int fail_why(ms_error *err, const char *why)
{
    err->code = MS_ERR_IO;
    err->offset = MS_NO_OFFSET;
    snprintf(err->message, sizeof err->message, "%s", why);
    return MS_ERR_IO;
}

/* After an image was written to o: the OS reason of a failed write rather than cairo's
 * "error while writing to output stream", or the file renamed into place. */
static int finish(safe_out *o, const char *path, int rc, ms_error *err)
{
    char why[300];
    if (rc && o->write_errno) {
        safe_out_abort(o);
        err->code = MS_ERR_IO;
        safe_out_why(err->message, sizeof err->message, path, "write failed: %s",
                     strerror(o->write_errno));
        return MS_ERR_IO;
    }
    if (rc) {
        safe_out_abort(o);
        return rc;
    }
    if (safe_out_commit(o, why, sizeof why))
        return fail_why(err, why);
    return 0;
}

int safe_out_render(const char *path, int format, int width, int height,
                    const struct msr_chart *const *charts, size_t n_charts,
                    const msr_image_meta *meta, ms_error *err)
{
    char why[300];
    safe_out o;
    if (safe_out_open(&o, path, why, sizeof why))
        return fail_why(err, why);
    int rc = msr_render_write_to(safe_out_cairo_write, &o, path, (msr_render_format)format,
                                width, height, charts, n_charts, meta, err);
    return finish(&o, path, rc, err);
}

/* The picture's format from its path, then the output opened safely: what every picture
 * writer below does before drawing. */
static int open_picture(safe_out *o, msr_render_format *format, const char *path, ms_error *err)
{
    char why[300];
    if (msr_render_format_from_path(path, format, err)) {
        err->code = MS_ERR_ARG;
        err->offset = MS_NO_OFFSET;
        safe_out_why(err->message, sizeof err->message, path, "not a .png or .svg path");
        return MS_ERR_ARG;
    }
    if (safe_out_open(o, path, why, sizeof why))
        return fail_why(err, why);
    return 0;
}

int safe_out_oom_chart(const char *path, const ms_snapshot *s, const ms_oom *oom,
                       const char *title, const msr_image_meta *meta, ms_error *err)
{
    safe_out o;
    msr_render_format format;
    int rc = open_picture(&o, &format, path, err);
    if (rc)
        return rc;
    rc = msr_oom_chart_write_to(safe_out_cairo_write, &o, path, format, s, oom, title, meta, err);
    return finish(&o, path, rc, err);
}

int safe_out_segments_chart(const char *path, const msr_segments_figure *f,
                            const msr_image_meta *meta, ms_error *err)
{
    safe_out o;
    msr_render_format format;
    int rc = open_picture(&o, &format, path, err);
    if (rc)
        return rc;
    rc = msr_segments_chart_write_to(safe_out_cairo_write, &o, path, format, f, meta, err);
    return finish(&o, path, rc, err);
}

int safe_out_picture_path(const char *cmd, const char *path)
{
    msr_render_format format;
    if (msr_render_format_from_path(path, &format, NULL) == 0)
        return 0;
    cli_error(cmd, "%s: the picture must be a .png or .svg file", cli_term(path));
    return 2;
}
