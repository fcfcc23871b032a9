/* Writing charts to a caller's stream instead of a path, so that the caller decides how
 * the file is opened (the CLI writes every output through cli/safe_output.h). */
#ifndef MEMSNAP_RENDER_STREAM_H
#define MEMSNAP_RENDER_STREAM_H

#include "draw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* As ms_render_write, but the PNG or SVG bytes go to write(closure, ...); `name` is only
 * used in messages. A failed write is MS_ERR_IO (the callback keeps the OS reason). */
int ms_render_write_stream(cairo_write_func_t write, void *closure, const char *name,
                           ms_render_format format, int width, int height,
                           const ms_chart *const *charts, size_t n_charts, ms_error *err);

#ifdef __cplusplus
}
#endif
#endif
