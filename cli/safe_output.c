#include "safe_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "PATH: reason" in why, the reason never cut: a path too long for the rest is shortened
 * in its middle ("/tmp/aaa...aaa.png"), so a name at the length limit still reads "File
 * name too long" rather than ending mid-path. */
void safe_out_why(char *why, size_t cap, const char *path, const char *fmt, ...)
{
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    size_t plen = strlen(path), rlen = strlen(reason);
    if (plen + 2 + rlen < cap || cap < rlen + 16) {
        snprintf(why, cap, "%s: %s", path, reason);
        return;
    }
    size_t room = cap - rlen - 2 - 3 - 1; /* path bytes shown, around the "..." */
    size_t head = room / 2, tail = room - head;
    /* Cut on UTF-8 character boundaries. */
    while (head > 0 && ((unsigned char)path[head] & 0xC0) == 0x80)
        head--;
    while (tail > 0 && ((unsigned char)path[plen - tail] & 0xC0) == 0x80)
        tail--;
    snprintf(why, cap, "%.*s...%s: %s", (int)head, path, path + plen - tail, reason);
}

/* Absent, or a regular file not reached through a link: fine to replace. *mode is the
 * permission bits of the file replaced (-1: none), kept on the new one (a chmod 600
 * report stays private). */
static int check_target(const char *path, int *mode, char *why, size_t cap)
{
    struct stat st;
    *mode = -1;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        safe_out_why(why, cap, path, "cannot check: %s", strerror(errno));
        return 2;
    }
    if (S_ISLNK(st.st_mode)) {
        safe_out_why(why, cap, path, "is a symbolic link; refusing to write through it");
        return 2;
    }
    if (!S_ISREG(st.st_mode)) {
        safe_out_why(why, cap, path, "exists and is not a regular file; refusing to replace it");
        return 2;
    }
    *mode = (int)(st.st_mode & 0777); /* never set-id bits onto a file we wrote */
    return 0;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* Removes a temporary file of ours: only when the name still leads to the file we made
 * (device and inode), never whatever someone put there since. */
static void remove_own(const char *tmp, dev_t dev, ino_t ino)
{
    struct stat st;
    if (lstat(tmp, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == dev && st.st_ino == ino)
        unlink(tmp);
}

/* Files written, closed and checked, their rename held until safe_out_batch_end. */
typedef struct held {
    char *tmp, *path;
    dev_t dev;
    ino_t ino;
} held;

static struct {
    bool on;
    held *v;
    size_t n, cap;
} g_batch;

void safe_out_batch_begin(void)
{
    g_batch.on = true;
}

static int hold(safe_out *o, char *why, size_t cap)
{
    if (g_batch.n == g_batch.cap) {
        size_t c = g_batch.cap ? g_batch.cap * 2 : 16;
        held *v = c < SIZE_MAX / sizeof *v ? realloc(g_batch.v, c * sizeof *v) : NULL;
        if (!v) {
            snprintf(why, cap, "out of memory");
            safe_out_abort(o);
            return 2;
        }
        g_batch.v = v;
        g_batch.cap = c;
    }
    g_batch.v[g_batch.n++] = (held){o->tmp, o->path, o->dev, o->ino};
    o->tmp = o->path = NULL; /* the batch owns them now */
    safe_out_abort(o);
    return 0;
}

int safe_out_batch_end(bool commit, char *why, size_t cap)
{
    int rc = 0;
    for (size_t i = 0; i < g_batch.n; i++) {
        held *h = &g_batch.v[i];
        int mode;
        if (commit && !rc) {
            rc = check_target(h->path, &mode, why, cap);
            if (!rc && rename(h->tmp, h->path) != 0) {
                safe_out_why(why, cap, h->path, "cannot write: %s", strerror(errno));
                rc = 2;
            }
            if (!rc) {
                free(h->tmp);
                h->tmp = NULL;
            }
        }
        if (h->tmp)
            remove_own(h->tmp, h->dev, h->ino);
        free(h->tmp);
        free(h->path);
    }
    free(g_batch.v);
    memset(&g_batch, 0, sizeof g_batch);
    return rc;
}

int safe_out_not_input(const char *path, const char *const *inputs, size_t n, char *why,
                       size_t cap)
{
    struct stat out, in;
    if (stat(path, &out) != 0)
        return 0; /* absent: no input it could be */
    for (size_t i = 0; i < n; i++) {
        if (stat(inputs[i], &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
            safe_out_why(why, cap, path, "is an input file; refusing to replace it");
            return 2;
        }
    }
    return 0;
}

int safe_out_open(safe_out *o, const char *path, char *why, size_t cap)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    if (!path || !*path) {
        snprintf(why, cap, "empty output name");
        return 2;
    }
    int mode;
    int rc = check_target(path, &mode, why, cap);
    if (rc)
        return rc;
    /* The temporary name is short and fixed in length, whatever the target's: a target
     * name at NAME_MAX (255) must still work, so the name is never derived from it. */
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    static const char TEMPLATE[] = ".memsnap.XXXXXX";
    o->path = dup_str(path);
    o->tmp = malloc(dir_len + sizeof TEMPLATE);
    if (!o->path || !o->tmp) {
        safe_out_abort(o);
        snprintf(why, cap, "out of memory");
        return 2;
    }
    memcpy(o->tmp, path, dir_len);
    memcpy(o->tmp + dir_len, TEMPLATE, sizeof TEMPLATE);
    o->fd = mkstemp(o->tmp); /* O_CREAT|O_EXCL: fails rather than follow a link */
    if (o->fd < 0) {
        safe_out_why(why, cap, path, "cannot write: %s", strerror(errno));
        free(o->tmp);
        o->tmp = NULL; /* nothing was made: nothing to remove */
        safe_out_abort(o);
        return 2;
    }
    struct stat st;
    if (fstat(o->fd, &st) == 0) {
        o->dev = st.st_dev;
        o->ino = st.st_ino;
    }
    if (mode < 0) {
        mode_t mask = umask(0);
        umask(mask);
        mode = (int)(0666 & ~mask);
    }
    (void)fchmod(o->fd, (mode_t)mode);
    return 0;
}

FILE *safe_out_file(safe_out *o)
{
    if (!o->f && o->fd >= 0)
        o->f = fdopen(o->fd, "w");
    return o->f;
}

cairo_status_t safe_out_cairo_write(void *closure, const unsigned char *data, unsigned int len)
{
    safe_out *o = closure;
    while (len > 0) {
        ssize_t w = write(o->fd, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!o->write_errno)
                o->write_errno = w < 0 ? errno : EIO;
            return CAIRO_STATUS_WRITE_ERROR;
        }
        data += w;
        len -= (unsigned int)w;
    }
    return CAIRO_STATUS_SUCCESS;
}

int safe_out_commit(safe_out *o, char *why, size_t cap)
{
    int bad = 0;
    if (o->f) {
        if (ferror(o->f) || fflush(o->f) != 0)
            bad = errno ? errno : EIO;
        if (!bad && o->sync && fsync(o->fd) != 0)
            bad = errno;
        if (fclose(o->f) != 0 && !bad)
            bad = errno ? errno : EIO;
        o->f = NULL;
        o->fd = -1;
    } else if (o->fd >= 0) {
        if (o->sync && fsync(o->fd) != 0)
            bad = errno;
        if (close(o->fd) != 0 && !bad)
            bad = errno;
        o->fd = -1;
    }
    if (!bad && o->write_errno)
        bad = o->write_errno;
    if (bad) {
        safe_out_why(why, cap, o->path, "write failed: %s", strerror(bad));
        safe_out_abort(o);
        return 2;
    }
    if (g_batch.on)
        return hold(o, why, cap);
    int mode;
    int rc = check_target(o->path, &mode, why, cap);
    if (!rc && rename(o->tmp, o->path) != 0) {
        safe_out_why(why, cap, o->path, "cannot write: %s", strerror(errno));
        rc = 2;
    }
    if (rc) {
        safe_out_abort(o);
        return rc;
    }
    free(o->tmp);
    o->tmp = NULL;
    safe_out_abort(o);
    return 0;
}

void safe_out_abort(safe_out *o)
{
    if (o->f)
        fclose(o->f);
    else if (o->fd >= 0)
        close(o->fd);
    o->f = NULL;
    o->fd = -1;
    if (o->tmp)
        remove_own(o->tmp, o->dev, o->ino);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}
