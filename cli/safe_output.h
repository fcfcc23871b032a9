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

/* `report -o DIR`: makes DIR and its missing parents (mkdir -p). Every directory made is
 * remembered by identity (device and inode), so safe_out_unmake_dirs and an interrupting
 * signal remove exactly those, innermost first, and only while empty. DIR itself must not
 * be a symbolic link (as for any other output name). Returns 0, or 2 with the reason in
 * why (what was made by then is left for safe_out_unmake_dirs). */
int safe_out_make_dir(const char *path, char *why, size_t cap);
/* Removes the directories safe_out_make_dir made (a failed run). */
void safe_out_unmake_dirs(void);
/* Forgets them: the run succeeded and they hold its output. */
void safe_out_keep_dirs(void);

/* SIGINT, SIGTERM and SIGHUP (those not ignored when memsnap started) are blocked in every
 * thread and taken by one thread of their own, which removes every temporary file and
 * every directory made that is still registered, then ends the process by the same signal
 * (so the exit status says which). Call once, first thing in main(), before any thread is
 * started: threads inherit the mask. */
void safe_out_guard_signals(void);

/* Standard output through a checked writer: the first failed write is kept with its OS
 * reason (a full disk, `ulimit -f`: SIGXFSZ is ignored so write() returns EFBIG) and
 * everything after it is dropped. safe_out_stdout_end flushes and closes it: 0 when all
 * was written, 1 when the reader went away (EPIPE: not an error, nothing said), 2 with
 * "standard output: write failed: REASON" in why. */
void safe_out_stdout_begin(void);
int safe_out_stdout_end(char *why, size_t cap);

/* msr_render_write_meta through a safe_out (cli/safe_render.c): 0, or an error code with
 * the message (the OS reason for a refused or failed write) in err. */
struct msr_chart;
struct msr_image_meta;
int safe_out_render(const char *path, int format, int width, int height,
                    const struct msr_chart *const *charts, size_t n_charts,
                    const struct msr_image_meta *meta, ms_error *err);

struct msr_segments_figure;
/* msr_segments_chart_write_to through a safe_out; the format from the path. */
int safe_out_segments_chart(const char *path, const struct msr_segments_figure *f,
                            const struct msr_image_meta *meta, ms_error *err);
/* Before reading anything: whether `path` names a picture these can write (.png or
 * .svg); else prints "memsnap CMD: PATH: the picture must be a .png or .svg file" and
 * returns 2. */
int safe_out_picture_path(const char *cmd, const char *path);
/* msr_oom_chart_write_to through a safe_out; the format from the path (.png or .svg). */
struct ms_oom;
int safe_out_oom_chart(const char *path, const ms_snapshot *s, const struct ms_oom *oom,
                       const char *title, const struct msr_image_meta *meta, ms_error *err);

#endif
