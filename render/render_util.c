/* Helpers shared by render/'s files (see render_util.h). */
#include "render_util.h"

#include <stdarg.h>
#include <stdio.h>

int ms__render_fail(ms_error *err, int code, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        err->offset = MS_NO_OFFSET;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}
