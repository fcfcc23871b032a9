/* Writing an output file in a directory others can write to (CI artifact folders are
 * shared): never follow a symlink planted there, never write into anything but a regular
 * file, and never leave a half-written file under the final name (docs/security.md).
 *
 * Every output memsnap writes goes through here:
 *   safe_out o;
 *   if (safe_out_open(&o, path, why, sizeof why)) fail(why);      // target checked
 *   ... write with safe_out_file(&o) (stdio) or safe_out_cairo_write (cairo streams) ...
 *   if (safe_out_commit(&o, why, sizeof why)) fail(why);          // renamed into place
 * On any failure after open, safe_out_abort(&o) removes the temporary file (commit does
 * this itself when it fails). The safe_out owns its temporary file until commit/abort. */
#ifndef MEMSNAP_CLI_SAFE_OUTPUT_H
#define MEMSNAP_CLI_SAFE_OUTPUT_H

#include <cairo.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <stdio.h>

#include "memsnap/memsnap.h"

typedef struct safe_out {
    int fd;         /* the temporary file, -1 when closed */
    FILE *f;        /* stdio stream on fd, made on first safe_out_file() */
    int write_errno; /* errno of the first failed write through safe_out_cairo_write */
    int sync;       /* set after open: fsync() the data before the rename (default 0) */
    char *path;     /* the final name */
    dev_t dev;      /* the temporary file's identity: only that file is ever removed */
    ino_t ino;
    char *tmp;      /* DIR/.memsnap.XXXXXX next to it, so rename() stays in one file system;
                     * short whatever the target's length (NAME_MAX) */
} safe_out;

/* Refuses a target that exists and is a symlink or not a regular file; otherwise makes a
 * new temporary file next to it with O_CREAT|O_EXCL (mkstemp: never follows a link),
 * with the permission bits of the file it replaces, or 0666 less the umask for a new one.
 * Returns 0, or 2 with a one-line reason in why. */
int safe_out_open(safe_out *o, const char *path, char *why, size_t cap);

/* A stdio stream on the temporary file (NULL when out of memory). */
FILE *safe_out_file(safe_out *o);

/* A cairo_write_func_t writing to the temporary file (closure: the safe_out); the OS
 * reason of a failure is kept in write_errno. */
cairo_status_t safe_out_cairo_write(void *closure, const unsigned char *data, unsigned int len);

/* Flushes and closes the temporary file, checks the target once more (still absent or a
 * regular file) and rename()s the temporary file over it. rename() replaces a name
 * without following it, so a link planted in between is replaced, not written through.
 * Returns 0, or 2 with the reason (strerror) in why, the temporary file removed. */
int safe_out_commit(safe_out *o, char *why, size_t cap);

/* Closes and removes the temporary file; safe to call twice or after a failed open. */
void safe_out_abort(safe_out *o);

/* 2 with the reason in why when path names the same file as one of the inputs (device
 * and inode): `view run.pickle -o run.pickle` would replace the snapshot with the page. */
int safe_out_not_input(const char *path, const char *const *inputs, size_t n, char *why,
                       size_t cap);

/* "PATH: reason" into why, the reason kept whole: an overlong path is cut in its middle. */
void safe_out_why(char *why, size_t cap, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A run that writes several files and must leave nothing of a failed run (memsnap
 * report): between begin and end, safe_out_commit writes and checks the file but holds
 * its rename; safe_out_batch_end(true) renames every held file into place (0, or 2 and
 * the reason in why at the first that fails; the rest are removed), (false) removes them
 * all, so the user's files under those names are never touched by a failed run. */
void safe_out_batch_begin(void);
int safe_out_batch_end(bool commit, char *why, size_t cap);

/* ms_render_write_meta through a safe_out (cli/safe_render.c): 0, or an error code with
 * the message (the OS reason for a refused or failed write) in err. */
struct ms_chart;
struct ms_image_meta;
int safe_out_render(const char *path, int format, int width, int height,
                    const struct ms_chart *const *charts, size_t n_charts,
                    const struct ms_image_meta *meta, ms_error *err);

struct ms_segments_figure;
/* ms_segments_chart_write_to through a safe_out; the format from the path. */
int safe_out_segments_chart(const char *path, const struct ms_segments_figure *f,
                            const struct ms_image_meta *meta, ms_error *err);
/* ms_oom_chart_write_to through a safe_out; the format from the path (.png or .svg). */
struct ms_oom;
int safe_out_oom_chart(const char *path, const ms_snapshot *s, const struct ms_oom *oom,
                       const char *title, const struct ms_image_meta *meta, ms_error *err);

#endif
