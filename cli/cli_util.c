#include "cli_util.h"
#include "json/json_util.h"

#include "json_print.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* An error names paths and quotes names from the file: the whole line is escaped for the
 * terminal (term_text.h), so an ESC, a newline or a U+202E in them is shown, not obeyed. */
void cli_error(const char *cmd, const char *fmt, ...)
{
    char small[512], *text = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (text = malloc((size_t)n + 1)) != NULL) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    if (!text)
        text = small; /* out of memory: the message cut */
    size_t len = strlen(text), cap = 4 * len + 16; /* \xNN: 4 bytes for 1 */
    char *esc = malloc(cap);
    if (esc)
        cli_term_into(text, esc, cap);
    fprintf(stderr, "memsnap %s: %s\n", cli_term(cmd), esc ? esc : cli_term(text));
    free(esc);
    if (text != small)
        free(text);
}

/* The tool's one setting for the whole run, like git's global options; the library
 * itself keeps none. */
static ms_limits g_limits;
static bool g_limits_set;

void cli_set_limits(const ms_limits *lim)
{
    g_limits = *lim;
    g_limits_set = true;
}

const ms_limits *cli_limits(void)
{
    if (!g_limits_set) {
        g_limits = ms_limits_default();
        g_limits_set = true;
    }
    return &g_limits;
}

const char *cli_times_backward_text(char *buf, size_t cap, double event)
{
    snprintf(buf, cap, "time stamps go backwards at event %.0f: events are ordered by position",
             event);
    return buf;
}

void cli_warn_times(const char *cmd, const char *path, const ms_snapshot *s, int device)
{
    for (int d = 0; d < ms_snapshot_device_count(s); d++) {
        size_t at = ms_snapshot_trace(s, d)->times_backward_at;
        if (at && (device < 0 || device == d)) {
            char text[128];
            cli_error(cmd, "warning: %s: device %d: %s", path, d,
                      cli_times_backward_text(text, sizeof text, (double)at));
        }
    }
}

static int load(const char *cmd, const char *path, ms_snapshot **out, bool warn_times)
{
    ms_error err;
    if (ms_snapshot_read_file(out, path, cli_limits(), &err) == 0) {
        if (warn_times)
            cli_warn_times(cmd, path, *out, -1);
        return 0;
    }
    if (err.offset >= 0)
        cli_error(cmd, "%s: byte %lld: %s", path, (long long)err.offset, err.message);
    else
        cli_error(cmd, "%s: %s", path, err.message);
    return 2;
}

int cli_busiest_device(const ms_snapshot *s)
{
    return ms_snapshot_busiest_device(s);
}

bool cli_device_in_use(const ms_snapshot *s, int device)
{
    return ms__device_in_use(s, device);
}

int cli_parse_size(const char *cmd, const char *opt, const char *text, uint64_t *out)
{
    if (ms_parse_size(out, text, NULL) == 0)
        return 0;
    cli_error(cmd, "%s: '%s' is not a size (decimal, below 8 EiB; examples: 4096, 512MiB, 1.5GiB)",
              opt, text);
    return 2;
}

int cli_parse_int(const char *cmd, const char *opt, const char *text, long long lo, long long hi,
                  long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        cli_error(cmd, "%s: '%s' is not an integer in %lld..%lld", opt, text, lo, hi);
        return 2;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= 0) || v > 1e15) {
        if (end != text && !*end && v > 1e15 && isfinite(v))
            cli_error(cmd, "%s: '%s' is too large (at most 1e15)", opt, text);
        else
            cli_error(cmd, "%s: '%s' is not a non-negative number", opt, text);
        return 2;
    }
    *out = v;
    return 0;
}

/* cJSON prints numbers of 15 or more digits in exponent form (1.79531069481102e+15):
 * exact, but an epoch time in microseconds should read as an integer. The printer
 * (json_print.h) writes whole numbers below 2^53 as integers; doubles hold every integer
 * below 2^53 exactly, which covers every byte count and timestamp here. */
char *cli_json_text(cJSON *doc)
{
    return cli_json_format(doc, true, NULL);
}

int cli_print_json(cJSON *doc)
{
    size_t len = 0;
    char *text = cli_json_format(doc, true, &len);
    cJSON_Delete(doc);
    if (!text)
        return 2;
    fwrite(text, 1, len, stdout);
    fputc('\n', stdout);
    free(text);
    return 0;
}

const char *cli_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void cli_file_labels(const char *const *paths, size_t n, const char **out)
{
    bool same = false;
    for (size_t i = 0; i < n; i++) {
        out[i] = cli_basename(paths[i]);
        for (size_t j = 0; j < i; j++)
            same |= !strcmp(out[i], out[j]);
    }
    if (!same)
        return;
    /* The longest run of whole directories every path starts with. */
    size_t common = SIZE_MAX;
    for (size_t i = 1; i < n; i++) {
        size_t k = 0, dir = 0;
        while (paths[0][k] && paths[0][k] == paths[i][k]) {
            if (paths[0][k] == '/')
                dir = k + 1;
            k++;
        }
        common = dir < common ? dir : common;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = paths[i] + (common == SIZE_MAX ? 0 : common);
}

double cli_seconds(int64_t from_us, int64_t to_us)
{
    return (double)(to_us - from_us) / 1e6;
}

const char *cli_seconds_text(char *buf, size_t cap, double seconds, double span_s)
{
    if (span_s < 1e-3)
        snprintf(buf, cap, "%.0f µs", seconds * 1e6);
    else
        snprintf(buf, cap, "%.3f s", seconds);
    return buf;
}

bool cli_leak_gate_trips(uint64_t leaks, double leaked_bytes, double growth_per_iteration,
                         uint64_t min_bytes)
{
    if (leaks == 0)
        return false;
    /* Growth per iteration is an average: rounded to whole bytes as every view prints it. */
    return min_bytes == 0 || leaked_bytes >= (double)min_bytes ||
           floor(growth_per_iteration + 0.5) >= (double)min_bytes;
}

const char *cli_when(char *buf, size_t cap, bool has_times, int64_t t0_us, int64_t us)
{
    if (has_times)
        snprintf(buf, cap, "%.3fs", cli_seconds(t0_us, us));
    else
        snprintf(buf, cap, "#%lld", (long long)us); /* the event index stands for the time */
    return buf;
}

int cli_each_snapshot(const char *cmd, char *const *files, int nfiles, long long device,
                      bool warn_times, cli_snapshot_fn fn, void *ctx)
{
    int rc = 0;
    for (int f = 0; f < nfiles && !rc; f++) {
        ms_snapshot *s = NULL;
        if ((rc = load(cmd, files[f], &s, warn_times)))
            break;
        if (device >= ms_snapshot_device_count(s)) {
            cli_error(cmd, "%s: no device %lld (the snapshot has %d)", files[f], device,
                      ms_snapshot_device_count(s));
            rc = 2;
        } else {
            ms_error err;
            ms_error_clear(&err);
            if ((rc = fn(ctx, f, &s, &err)) && err.code != MS_OK)
                cli_error(cmd, "%s: %s", files[f], err.message);
        }
        ms_snapshot_free(s);
    }
    return rc;
}

/* cli_each_file's step: the file's object into the document's files[]. */
typedef struct each_file {
    cli_file_fn fn;
    void *ctx;
    char *const *files;
    cJSON *arr;
} each_file;

static int one_file(void *ctx, int f, ms_snapshot **s, ms_error *err)
{
    each_file *ef = ctx;
    int rc = 0;
    cJSON *file = ef->fn(ef->ctx, ef->files[f], *s, err, &rc);
    if (!file) {
        err->code = err->code ? err->code : MS_ERR_ARG; /* told, whatever fn filled in */
        return 2;
    }
    cJSON_AddItemToArray(ef->arr, file);
    ms_error_clear(err); /* a failure after the object: fn has told it */
    return rc;
}

int cli_each_file(const char *cmd, char *const *files, int nfiles, long long device,
                  bool warn_times, cli_file_fn fn, void *ctx, cJSON **doc_out)
{
    *doc_out = NULL;
    cJSON *doc = cJSON_CreateObject();
    cJSON *arr = doc ? cJSON_AddArrayToObject(doc, "files") : NULL;
    if (!arr) {
        cJSON_Delete(doc);
        cli_error(cmd, "out of memory");
        return 2;
    }
    each_file ef = {fn, ctx, files, arr};
    int rc = cli_each_snapshot(cmd, files, nfiles, device, warn_times, one_file, &ef);
    if (rc) {
        cJSON_Delete(doc);
        return rc;
    }
    *doc_out = doc;
    return 0;
}

int cli_emit_files(cJSON *doc, bool json, void (*print_file)(const cJSON *file))
{
    if (json)
        return cli_print_json(doc);
    const cJSON *file;
    int k = 0;
    cJSON_ArrayForEach(file, cJSON_GetObjectItemCaseSensitive(doc, "files"))
    {
        if (k++)
            printf("\n");
        print_file(file);
    }
    cJSON_Delete(doc);
    return 0;
}

const cJSON *cli_json_get(const cJSON *o, const char *path)
{
    char key[64];
    while (o) {
        const char *dot = strchr(path, '.');
        if (!dot)
            return cJSON_GetObjectItemCaseSensitive(o, path);
        size_t n = (size_t)(dot - path);
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        o = cJSON_GetObjectItemCaseSensitive(o, key);
        path = dot + 1;
    }
    return NULL;
}

double cli_json_num(const cJSON *o, const char *path)
{
    const cJSON *v = cli_json_get(o, path);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

const char *cli_json_str(const cJSON *o, const char *path)
{
    const char *s = cJSON_GetStringValue(cli_json_get(o, path));
    return s ? s : "";
}
