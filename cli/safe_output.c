#include "safe_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Absent, or a regular file not reached through a link: fine to replace. */
static int check_target(const char *path, char *why, size_t cap)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, cap, "%s: cannot check: %s", path, strerror(errno));
        return 2;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(why, cap, "%s: is a symbolic link; refusing to write through it", path);
        return 2;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, cap, "%s: exists and is not a regular file; refusing to replace it", path);
        return 2;
    }
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

int safe_out_open(safe_out *o, const char *path, char *why, size_t cap)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    if (!path || !*path) {
        snprintf(why, cap, "empty output name");
        return 2;
    }
    int rc = check_target(path, why, cap);
    if (rc)
        return rc;
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = slash ? slash + 1 : path;
    o->path = dup_str(path);
    o->tmp = malloc(dir_len + strlen(base) + 10);
    if (!o->path || !o->tmp) {
        safe_out_abort(o);
        snprintf(why, cap, "out of memory");
        return 2;
    }
    memcpy(o->tmp, path, dir_len);
    sprintf(o->tmp + dir_len, ".%s.XXXXXX", base);
    o->fd = mkstemp(o->tmp); /* O_CREAT|O_EXCL: fails rather than follow a link */
    if (o->fd < 0) {
        snprintf(why, cap, "%s: cannot write: %s", path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL; /* nothing was made: nothing to remove */
        safe_out_abort(o);
        return 2;
    }
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(o->fd, 0666 & ~mask);
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
        snprintf(why, cap, "%s: write failed: %s", o->path, strerror(bad));
        safe_out_abort(o);
        return 2;
    }
    int rc = check_target(o->path, why, cap);
    if (!rc && rename(o->tmp, o->path) != 0) {
        snprintf(why, cap, "%s: cannot write: %s", o->path, strerror(errno));
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
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}
