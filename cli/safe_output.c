/* fopencookie: a stdio stream whose writes keep their OS reason (safe_out_file, stdout). */
#define _GNU_SOURCE
#include "safe_output.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ what a signal removes */

/* Every temporary file open or held, and every directory safe_out_make_dir made, while it
 * exists. One mutex orders the registry and the calls that make, rename and remove these
 * (mkstemp, mkdir, rename, unlink, rmdir): the signal thread takes it and never gives it
 * back, so it sees no half-made entry and nothing is made after it cleaned up. The charts
 * of a report are written on a second thread; the lock makes that safe too. */
typedef struct tracked {
    char *path;
    dev_t dev;
    ino_t ino;
    bool dir;
} tracked;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    tracked *v;
    size_t n, cap;
} g_tr;

/* With g_mu held. False when out of memory (nothing registered). */
static bool track(const char *path, dev_t dev, ino_t ino, bool dir)
{
    if (g_tr.n == g_tr.cap) {
        size_t c = g_tr.cap ? g_tr.cap * 2 : 16;
        tracked *v = c < SIZE_MAX / sizeof *v ? realloc(g_tr.v, c * sizeof *v) : NULL;
        if (!v)
            return false;
        g_tr.v = v;
        g_tr.cap = c;
    }
    size_t n = strlen(path) + 1;
    char *copy = malloc(n);
    if (!copy)
        return false;
    memcpy(copy, path, n);
    g_tr.v[g_tr.n++] = (tracked){copy, dev, ino, dir};
    return true;
}

/* With g_mu held. The newest match first: files are removed in about the order made. */
static void untrack(dev_t dev, ino_t ino, bool dir)
{
    for (size_t i = g_tr.n; i-- > 0;) {
        tracked *t = &g_tr.v[i];
        if (t->dev == dev && t->ino == ino && t->dir == dir) {
            free(t->path);
            memmove(t, t + 1, (g_tr.n - i - 1) * sizeof *t);
            g_tr.n--;
            return;
        }
    }
}

/* With g_mu held: removes the entry's file or (empty) directory while its name still
 * leads to what was made, never whatever someone put there since. */
static void remove_tracked(const tracked *t)
{
    struct stat st;
    if (lstat(t->path, &st) != 0 || st.st_dev != t->dev || st.st_ino != t->ino)
        return;
    if (t->dir && S_ISDIR(st.st_mode))
        (void)rmdir(t->path);
    else if (!t->dir && S_ISREG(st.st_mode))
        (void)unlink(t->path);
}

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
    pthread_mutex_lock(&g_mu);
    remove_tracked(&(tracked){(char *)tmp, dev, ino, false});
    untrack(dev, ino, false);
    pthread_mutex_unlock(&g_mu);
}

/* rename() of a temporary file of ours into place; it is then no longer ours to remove.
 * Returns rename's result, errno kept. */
static int rename_own(const char *tmp, const char *path, dev_t dev, ino_t ino)
{
    pthread_mutex_lock(&g_mu);
    int r = rename(tmp, path);
    int e = errno;
    if (r == 0)
        untrack(dev, ino, false);
    pthread_mutex_unlock(&g_mu);
    errno = e;
    return r;
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
            if (!rc && rename_own(h->tmp, h->path, h->dev, h->ino) != 0) {
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
    /* Made and registered in one step, so a signal finds it either absent or listed. */
    pthread_mutex_lock(&g_mu);
    o->fd = mkstemp(o->tmp); /* O_CREAT|O_EXCL: fails rather than follow a link */
    int e = errno;
    struct stat st;
    memset(&st, 0, sizeof st);
    bool listed = o->fd >= 0 && fstat(o->fd, &st) == 0 && track(o->tmp, st.st_dev, st.st_ino, false);
    if (o->fd >= 0 && !listed) {
        (void)unlink(o->tmp); /* just made by mkstemp under this lock: ours */
        close(o->fd);
        o->fd = -1;
        e = ENOMEM;
    }
    pthread_mutex_unlock(&g_mu);
    if (o->fd < 0) {
        safe_out_why(why, cap, path, "cannot write: %s", strerror(e));
        free(o->tmp);
        o->tmp = NULL; /* nothing was made: nothing to remove */
        safe_out_abort(o);
        return 2;
    }
    o->dev = st.st_dev;
    o->ino = st.st_ino;
    if (mode < 0) {
        mode_t mask = umask(0);
        umask(mask);
        mode = (int)(0666 & ~mask);
    }
    (void)fchmod(o->fd, (mode_t)mode);
    return 0;
}

/* Writes all of data to o->fd; false after the first failure, whose reason stays in
 * write_errno, and for everything after it (a gap in the middle of an output is worse
 * than a cut one, and every failed output is thrown away or reported anyway). */
static bool write_all(safe_out *o, const void *data, size_t len)
{
    const char *p = data;
    if (o->write_errno)
        return false;
    while (len > 0) {
        ssize_t w = write(o->fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            o->write_errno = w < 0 ? errno : EIO;
            return false;
        }
        p += w;
        len -= (size_t)w;
    }
    return true;
}

#ifdef __GLIBC__
/* stdio over write_all: a failed write keeps its errno (ferror alone keeps no reason, and
 * errno is long overwritten by the time the stream is closed). */
static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
    return write_all(c, buf, n) ? (ssize_t)n : 0; /* 0: an error, for glibc */
}

static int cookie_close(void *c)
{
    (void)c; /* the fd is closed by its owner */
    return 0;
}

static FILE *checked_stream(safe_out *o)
{
    cookie_io_functions_t io = {NULL, cookie_write, NULL, cookie_close};
    FILE *f = fopencookie(o, "w", io);
    if (f)
        setvbuf(f, NULL, _IOFBF, (size_t)64 << 10);
    return f;
}
#else
static FILE *checked_stream(safe_out *o)
{
    return fdopen(dup(o->fd), "w");
}
#endif

FILE *safe_out_file(safe_out *o)
{
    if (!o->f && o->fd >= 0)
        o->f = checked_stream(o);
    return o->f;
}

cairo_status_t safe_out_cairo_write(void *closure, const unsigned char *data, unsigned int len)
{
    return write_all(closure, data, len) ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

int safe_out_commit(safe_out *o, char *why, size_t cap)
{
    int bad = 0;
    if (o->f) {
        if (fflush(o->f) != 0 || ferror(o->f))
            bad = o->write_errno ? o->write_errno : errno ? errno : EIO;
        if (fclose(o->f) != 0 && !bad)
            bad = o->write_errno ? o->write_errno : errno ? errno : EIO;
        o->f = NULL;
    }
    if (o->fd >= 0) {
        if (!bad && o->sync && fsync(o->fd) != 0)
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
    if (!rc && rename_own(o->tmp, o->path, o->dev, o->ino) != 0) {
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
    if (o->fd >= 0)
        close(o->fd);
    o->f = NULL;
    o->fd = -1;
    if (o->tmp)
        remove_own(o->tmp, o->dev, o->ino);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}

/* ------------------------------------------------------------------ the report's directory */

int safe_out_make_dir(const char *path, char *why, size_t cap)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        snprintf(why, cap, "-o: bad directory name");
        return 2;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        pthread_mutex_lock(&g_mu);
        int r = mkdir(buf, 0777);
        int e = errno;
        struct stat st;
        /* A directory made but not listed (out of memory) is left in place: never removed
         * is the safe side. */
        if (r == 0 && lstat(buf, &st) == 0 && S_ISDIR(st.st_mode))
            (void)track(buf, st.st_dev, st.st_ino, true);
        pthread_mutex_unlock(&g_mu);
        if (r != 0 && e != EEXIST) {
            safe_out_why(why, cap, buf, "cannot create: %s", strerror(e));
            return 2;
        }
        buf[i] = c;
    }
    /* The name itself as given, without trailing slashes (lstat of "link/" follows it). */
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    struct stat st;
    if (lstat(buf, &st) == 0 && S_ISLNK(st.st_mode)) {
        safe_out_why(why, cap, path, "is a symbolic link; refusing to write through it");
        return 2;
    }
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        safe_out_why(why, cap, path, "not a directory");
        return 2;
    }
    return 0;
}

void safe_out_unmake_dirs(void)
{
    pthread_mutex_lock(&g_mu);
    for (size_t i = g_tr.n; i-- > 0;) { /* innermost (made last) first */
        if (!g_tr.v[i].dir)
            continue;
        remove_tracked(&g_tr.v[i]);
        untrack(g_tr.v[i].dev, g_tr.v[i].ino, true);
    }
    pthread_mutex_unlock(&g_mu);
}

void safe_out_keep_dirs(void)
{
    pthread_mutex_lock(&g_mu);
    for (size_t i = g_tr.n; i-- > 0;)
        if (g_tr.v[i].dir)
            untrack(g_tr.v[i].dev, g_tr.v[i].ino, true);
    pthread_mutex_unlock(&g_mu);
}

/* ------------------------------------------------------------------ interrupted runs */

static sigset_t g_guarded;

/* Waits for a guarded signal, removes what is registered (files first, then directories,
 * innermost first), and ends the process by that signal. An ordinary thread, not a
 * handler: it may take the lock and call lstat, and it holds the lock to the end so that
 * nothing new is made meanwhile. */
static void *signal_thread(void *arg)
{
    (void)arg;
    int sig = 0;
    while (sigwait(&g_guarded, &sig) != 0)
        ;
    pthread_mutex_lock(&g_mu);
    for (size_t i = g_tr.n; i-- > 0;)
        if (!g_tr.v[i].dir)
            remove_tracked(&g_tr.v[i]);
    for (size_t i = g_tr.n; i-- > 0;)
        if (g_tr.v[i].dir)
            remove_tracked(&g_tr.v[i]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig); /* default action: the whole process ends, by this signal */
    _exit(128 + sig);
}

void safe_out_guard_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    sigemptyset(&g_guarded);
    bool any = false;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* One ignored when memsnap started (nohup, a background job's SIGINT) stays so. */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) {
            sigaddset(&g_guarded, sigs[i]);
            any = true;
        }
    }
    if (!any)
        return;
    sigset_t old_mask;
    if (pthread_sigmask(SIG_BLOCK, &g_guarded, &old_mask) != 0)
        return;
    pthread_attr_t attr;
    pthread_t th;
    bool ok = pthread_attr_init(&attr) == 0;
    if (ok) {
        (void)pthread_attr_setstacksize(&attr, (size_t)64 << 10);
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&th, &attr, signal_thread, NULL) == 0;
        pthread_attr_destroy(&attr);
    }
    if (!ok) /* no thread to take them: the signals keep their default action */
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
}

/* ------------------------------------------------------------------ standard output */

static safe_out g_stdout = {.fd = -1};
static FILE *g_stdout_orig;

void safe_out_stdout_begin(void)
{
#ifdef __GLIBC__
    g_stdout.fd = STDOUT_FILENO;
    FILE *f = checked_stream(&g_stdout);
    if (!f)
        return;
    /* A terminal sees each line as it is printed, as with the stdout it replaces. */
    if (isatty(STDOUT_FILENO))
        setvbuf(f, NULL, _IOLBF, (size_t)64 << 10);
    g_stdout_orig = stdout;
    stdout = f; /* glibc's stdout is a variable: printf and puts write to f from now on */
#endif
}

int safe_out_stdout_end(char *why, size_t cap)
{
    int err = 0;
    if (g_stdout_orig) {
        FILE *f = stdout;
        if ((fflush(f) != 0 || ferror(f)) && !g_stdout.write_errno)
            g_stdout.write_errno = EIO;
        err = g_stdout.write_errno;
        fclose(f);
        stdout = g_stdout_orig;
        g_stdout_orig = NULL;
        /* A file system may report a failed write-back only here (NFS). EBADF: memsnap
         * was started with stdout closed and wrote nothing (a write would have failed). */
        if (!err && close(STDOUT_FILENO) != 0 && errno != EBADF && errno != EINTR)
            err = errno;
    } else if (fflush(stdout) != 0 || ferror(stdout)) {
        err = errno ? errno : EIO;
    }
    if (err == EPIPE)
        return 1;
    if (err) {
        snprintf(why, cap, "standard output: write failed: %s", strerror(err));
        return 2;
    }
    return 0;
}
