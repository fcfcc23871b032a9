/* Path rules: whose code a file is, read from its name alone, for paths of any machine
 * (POSIX, Windows with drive letters and backslashes, virtualenvs, conda, uv, source
 * checkouts). The frame classifier (sites.c) is built on this one reading. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "paths.h"

/* ------------------------------------------------------------------ parts */

typedef struct part {
    const char *p;
    size_t n;
} part;

/* More parts than any real path has; a longer one keeps its last parts, where the file,
 * its package and the install directory are. */
#define MAX_PARTS 128

static bool is_sep(char c)
{
    return c == '/' || c == '\\';
}

/* The path's non-empty parts, in order (its last MAX_PARTS). */
static size_t split(const char *path, part *out)
{
    size_t n = 0; /* parts seen; part i sits at out[i % MAX_PARTS] */
    const char *p = path;
    while (*p) {
        while (is_sep(*p))
            p++;
        if (!*p)
            break;
        const char *b = p;
        while (*p && !is_sep(*p))
            p++;
        out[n++ % MAX_PARTS] = (part){b, (size_t)(p - b)};
    }
    if (n <= MAX_PARTS)
        return n;
    part ring[MAX_PARTS]; /* oldest first again */
    for (size_t i = 0; i < MAX_PARTS; i++)
        ring[i] = out[(n + i) % MAX_PARTS];
    memcpy(out, ring, sizeof ring);
    return MAX_PARTS;
}

static bool starts(part a, const char *w)
{
    size_t n = strlen(w);
    if (a.n < n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a.p[i]) != w[i])
            return false;
    return true;
}

static bool eq(part a, const char *w)
{
    return a.n == strlen(w) && starts(a, w);
}

static bool ends(part a, const char *w)
{
    size_t n = strlen(w);
    return a.n >= n && eq((part){a.p + a.n - n, n}, w);
}

static bool has(part a, const char *w)
{
    size_t n = strlen(w);
    for (size_t i = 0; i + n <= a.n; i++)
        if (eq((part){a.p + i, n}, w))
            return true;
    return false;
}

/* Digits from *i on; false when there are none. */
static bool digits(part a, size_t *i)
{
    size_t b = *i;
    while (*i < a.n && isdigit((unsigned char)a.p[*i]))
        (*i)++;
    return *i > b;
}

/* ------------------------------------------------------------------ the rules */

/* Where pip, conda, uv and distributions put installed packages; a package unpacked as
 * an egg or a wheel (zipimport, pex, Bazel) is installed too. */
static bool is_install_dir(part a)
{
    return eq(a, "site-packages") || eq(a, "dist-packages");
}

static bool is_archive(part a)
{
    return ends(a, ".egg") || ends(a, ".whl");
}

/* torch's own top-level modules: what tells a checkout of torch (an editable install,
 * a build from source) from a directory that merely is called torch (/opt/torch/.venv,
 * a project named torch). Every private module starts with '_' (_ops.py, _tensor.py,
 * _dynamo, __init__.py). */
static bool is_torch_module(part a)
{
    static const char *const names[] = {
        "accelerator", "amp", "ao", "autograd", "backends", "compiler", "contrib", "cpu",
        "cuda", "distributed", "distributions", "export", "fft", "func", "functional.py",
        "futures", "fx", "hub.py", "jit", "lib", "library.py", "linalg", "masked", "monitor",
        "mps", "mtia", "multiprocessing", "nested", "nn", "onnx", "optim", "overrides.py",
        "package", "profiler", "quantization", "quasirandom.py", "random.py",
        "return_types.py", "serialization.py", "signal", "sparse", "special", "storage.py",
        "testing", "types.py", "utils", "version.py", "xpu"};
    if (a.n && a.p[0] == '_')
        return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (eq(a, names[i]))
            return true;
    return false;
}

/* "python3.12", "python3.13t", "pypy3.10": the standard library's directory under lib/. */
static bool is_python_lib(part a)
{
    size_t i = starts(a, "python") ? 6 : starts(a, "pypy") ? 4 : 0;
    if (!i || !digits(a, &i) || i >= a.n || a.p[i] != '.')
        return false;
    i++;
    if (!digits(a, &i))
        return false;
    while (i < a.n && isalpha((unsigned char)a.p[i]))
        i++;
    return i == a.n;
}

/* "python311.zip": the embeddable distribution's standard library. */
static bool is_python_zip(part a)
{
    size_t i = 6;
    return starts(a, "python") && digits(a, &i) && i + 4 == a.n && ends(a, ".zip");
}

/* "3.11.0" (pyenv-win's versions/3.11.0). */
static bool is_version(part a)
{
    size_t i = 0;
    if (!digits(a, &i) || i >= a.n || a.p[i] != '.')
        return false;
    while (i < a.n && (isdigit((unsigned char)a.p[i]) || a.p[i] == '.'))
        i++;
    return i == a.n;
}

/* A Windows interpreter's home, the directory whose Lib\ is the standard library:
 * C:\Python311, ...\Programs\Python\Python311, the Store's PythonSoftwareFoundation.*,
 * uv's cpython-3.12-windows-..., anaconda3, miniconda3, miniforge3, mambaforge, a conda
 * environment (envs\NAME), pyenv-win's versions\3.11.0. */
static bool is_python_home(part home, const part *parent)
{
    return has(home, "python") || has(home, "conda") || has(home, "forge") ||
           is_version(home) || (parent && eq(*parent, "envs"));
}

/* Inductor names its modules by their code's hash: c + 51 base-32 characters, in a
 * directory named by the hash's second and third characters, so a cache moved by
 * TORCHINDUCTOR_CACHE_DIR is still known. */
static bool is_inductor_module(part dir, part file)
{
    if (file.n != 52 + 3 || file.p[0] != 'c' || !ends(file, ".py") || dir.n != 2 ||
        dir.p[0] != file.p[1] || dir.p[1] != file.p[2])
        return false;
    for (size_t i = 1; i < 52; i++)
        if (!islower((unsigned char)file.p[i]) && !isdigit((unsigned char)file.p[i]))
            return false;
    return true;
}

bool ms__file_is_generated(const char *path)
{
    if (!strncmp(path, "<eval_with_key>", 15))
        return true;
    /* Inductor's cache: /tmp/torchinductor_USER/, %TEMP%\torchinductor_USER\. */
    for (const char *p = strstr(path, "torchinductor_"); p; p = strstr(p + 1, "torchinductor_"))
        if ((p == path || is_sep(p[-1])) && strpbrk(p, "/\\"))
            return true;
    /* Else by the module's own name, wherever the cache was moved. */
    const char *base = ms__path_base(path);
    if (base - path < 4 || !is_sep(base[-1]) || !is_sep(base[-4]))
        return false;
    return is_inductor_module((part){base - 3, 2}, (part){base, strlen(base)});
}

static bool is_stdlib(const part *c, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        /* POSIX: lib/python3.12/, lib64/python3.11/ (system, conda, uv, pyenv). */
        if ((eq(c[i], "lib") || eq(c[i], "lib64")) && i + 2 < n && is_python_lib(c[i + 1]))
            return true;
        /* Windows: <home>\Lib\, spelled so by CPython and conda alike. */
        if (c[i].n == 3 && !memcmp(c[i].p, "Lib", 3) && i > 0 &&
            is_python_home(c[i - 1], i > 1 ? &c[i - 2] : NULL))
            return true;
        if (is_python_zip(c[i]))
            return true;
    }
    return false;
}

ms__file_kind ms__file_classify(const char *path)
{
    if (ms__file_is_generated(path))
        return MS__FILE_GENERATED;
    part c[MAX_PARTS];
    size_t n = split(path, c);
    if (n == 0 || !ends(c[n - 1], ".py"))
        return MS__FILE_NATIVE;
    /* The first install directory decides: its package is the file's owner, so a
     * virtualenv under /opt/torch/ makes nobody's code torch's. */
    size_t pkg = SIZE_MAX;
    for (size_t i = 0; i + 1 < n && pkg == SIZE_MAX; i++)
        if (is_install_dir(c[i]) || is_archive(c[i]))
            pkg = i + 1;
    while (pkg != SIZE_MAX && pkg + 1 < n && is_archive(c[pkg]))
        pkg++;
    size_t torch = SIZE_MAX;
    if (pkg != SIZE_MAX) {
        if (pkg + 1 < n && eq(c[pkg], "torch"))
            torch = pkg;
    } else {
        /* A source checkout: torch/ holding one of torch's own modules, or a relative
         * path that starts at torch/. */
        bool relative = !is_sep(path[0]) && !(path[0] && path[1] == ':');
        for (size_t i = 0; i + 1 < n && torch == SIZE_MAX; i++)
            if (eq(c[i], "torch") && ((i == 0 && relative) || is_torch_module(c[i + 1])))
                torch = i;
    }
    if (torch != SIZE_MAX)
        return eq(c[torch + 1], "_dynamo") || eq(c[torch + 1], "_inductor") ? MS__FILE_COMPILER
                                                                            : MS__FILE_TORCH;
    if (pkg != SIZE_MAX)
        return MS__FILE_LIBRARY;
    return is_stdlib(c, n) ? MS__FILE_STDLIB : MS__FILE_USER;
}

/* ------------------------------------------------------------------ short names */

size_t ms__path_short(const char *path, unsigned parts, char *buf, size_t cap)
{
    part c[MAX_PARTS];
    size_t n = split(path, c);
    /* A path of fewer parts is shown whole, as it was written ("/x.py"). */
    if (parts == 0 || n < parts)
        parts = 0;
    size_t from = parts ? n - parts : 0, o = 0;
    const char *p = parts ? c[from].p : path;
    for (; *p; p++, o++)
        if (o + 1 < cap)
            buf[o] = is_sep(*p) ? '/' : *p;
    if (cap) {
        buf[o < cap ? o : cap - 1] = '\0';
        if (o >= cap)
            ms__utf8_trim(buf);
    }
    return o;
}

const char *ms__path_base(const char *path)
{
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (is_sep(*p) && p[1])
            b = p + 1;
    return b;
}

size_t ms__path_generated_tag(const char *path, char *buf, size_t cap)
{
    if (!strncmp(path, "<eval_with_key>", 15))
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s", path));
    const char *base = ms__path_base(path);
    size_t stem = strlen(base);
    if (stem > 3 && !strcmp(base + stem - 3, ".py"))
        stem -= 3;
    return ms__text_done(buf, cap, snprintf(buf, cap, "inductor %.*s", (int)(stem < 8 ? stem : 8), base));
}
