#include "summary_input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "options.h"
#include "summary_json.h"

/* A summary holds a few KiB per file; anything this large is not one. */
#define MAX_SUMMARY_BYTES ((size_t)256 << 20)

input_kind input_kind_of(const char *path, int *first_byte)
{
    *first_byte = -1;
    if (!strcmp(path, "-"))
        return INPUT_PICKLE;
    FILE *f = fopen(path, "rb");
    if (!f)
        return INPUT_UNKNOWN;
    unsigned char head[2] = {0, 0};
    size_t got = fread(head, 1, 2, f);
    int c = got ? head[0] : EOF;
    /* Summary JSON may start with white space (an editor, `jq`), so skip it. */
    while (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        c = fgetc(f);
        got = 1;
    }
    int saved = errno;
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed) {
        errno = saved ? saved : EIO;
        return INPUT_UNKNOWN;
    }
    if (got == 0 || c == EOF)
        return INPUT_EMPTY;
    *first_byte = c;
    if (head[0] == 0x80)
        return INPUT_PICKLE;
    if (head[0] == 0x1f && head[1] == 0x8b)
        return INPUT_GZIP;
    if (c == '{')
        return INPUT_JSON;
    errno = 0;
    return INPUT_UNKNOWN;
}

/* ------------------------------------------------------------------ summary JSON */

static void inputs_push(compare_inputs *in, compare_input item, bool *ok)
{
    if (in->n == in->cap) {
        size_t grown = in->cap ? in->cap * 2 : 8;
        compare_input *v = realloc(in->v, grown * sizeof *v);
        if (!v) {
            *ok = false;
            return;
        }
        in->v = v;
        in->cap = grown;
    }
    in->v[in->n++] = item;
}

static int parse_file_object(const char *cmd, const char *name, const cJSON *file, int device,
                             bool want_json, compare_input *out)
{
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(file)) {
        cli_error(cmd, "%s: summary JSON files[] entry is not an object", name);
        return 2;
    }
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(file, "path"));
    if (!path) {
        cli_error(cmd, "%s: summary JSON file without \"path\"", name);
        return 2;
    }
    const cJSON *devices = cJSON_GetObjectItemCaseSensitive(file, "devices");
    if (!cJSON_IsArray(devices)) {
        cli_error(cmd, "%s: summary JSON file %s lacks \"devices\"", name, path);
        return 2;
    }
    ms_error err;
    if (summary_profile_read(&out->profile, path, devices, device, &err)) {
        cli_error(cmd, "%s: %s", name, err.message);
        return 2;
    }
    out->from_summary = true;
    if (want_json) {
        out->file_json = cJSON_Duplicate(file, true);
        if (!out->file_json) {
            ms_profile_free(out->profile);
            out->profile = NULL;
            cli_error(cmd, "%s: out of memory", name);
            return 2;
        }
    }
    return 0;
}

int summary_input_parse(const char *cmd, const char *name, const char *textbuf, size_t len,
                        int device, bool want_json, compare_inputs *out)
{
    cJSON *doc = cJSON_ParseWithLength(textbuf, len);
    if (!doc) {
        const char *at = cJSON_GetErrorPtr();
        long long off = at && at >= textbuf && at <= textbuf + len ? (long long)(at - textbuf) : -1;
        cli_error(cmd, "%s: byte %lld: not valid JSON", name, off);
        return 2;
    }
    /* Both the whole `summary --json` document and one of its files[] entries are
     * accepted, so a script may split a host's summary per rank. */
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(doc, "files");
    int rc = 0;
    bool ok = true;
    if (cJSON_IsArray(files)) {
        if (cJSON_GetArraySize(files) == 0) {
            cli_error(cmd, "%s: summary JSON lists no files", name);
            rc = 2;
        }
        const cJSON *f;
        cJSON_ArrayForEach(f, files)
        {
            compare_input item;
            if (rc || (rc = parse_file_object(cmd, name, f, device, want_json, &item)))
                break;
            inputs_push(out, item, &ok);
            if (!ok) {
                ms_profile_free(item.profile);
                cJSON_Delete(item.file_json);
                break;
            }
        }
    } else if (cJSON_GetObjectItemCaseSensitive(doc, "devices")) {
        compare_input item;
        rc = parse_file_object(cmd, name, doc, device, want_json, &item);
        if (!rc) {
            inputs_push(out, item, &ok);
            if (!ok) {
                ms_profile_free(item.profile);
                cJSON_Delete(item.file_json);
            }
        }
    } else {
        cli_error(cmd, "%s: JSON but not a `memsnap summary --json` document (no \"files\")",
                  name);
        rc = 2;
    }
    cJSON_Delete(doc);
    if (!ok) {
        cli_error(cmd, "%s: out of memory", name);
        rc = 2;
    }
    return rc;
}

static int read_whole(const char *cmd, const char *path, char **text, size_t *len)
{
    *text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error(cmd, "%s: %s", path, strerror(errno));
        return 2;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap >= MAX_SUMMARY_BYTES) {
                cli_error(cmd, "%s: larger than %zu MiB: not a summary", path,
                          MAX_SUMMARY_BYTES >> 20);
                free(buf);
                fclose(f);
                return 2;
            }
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    bool failed = !buf || ferror(f);
    fclose(f);
    if (failed) {
        cli_error(cmd, "%s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return 2;
    }
    *text = buf;
    *len = n;
    return 0;
}

/* ------------------------------------------------------------------ all inputs */

typedef struct hook_ctx {
    compare_input *slots; /* one per pickle, in the pickle list's order */
    int device;
    bool want_json;
    int top_k;
} hook_ctx;

/* Runs on a loader thread while the snapshot is open: the `files[]` object needs the
 * snapshot, and building it here keeps it off the main thread. */
static int keep_summary(void *vctx, size_t index, const char *path, ms_run *run,
                        const ms_profile *p, ms_error *err)
{
    (void)p; /* read from `run`, which the summary reads too */
    hook_ctx *ctx = vctx;
    ctx->slots[index].device = ms_run_device(run);
    ctx->slots[index].times_backward_at =
        ms_snapshot_trace(ms_run_snapshot(run), ms_run_device(run))->times_backward_at;
    if (!ctx->want_json)
        return 0;
    ctx->slots[index].file_json = summary_file_json_ex(path, ms_run_snapshot(run), ctx->device,
                                                       ctx->top_k, true, run, err);
    return ctx->slots[index].file_json ? 0 : (err->code ? err->code : MS_ERR_NOMEM);
}

void compare_inputs_free(compare_inputs *in)
{
    if (!in)
        return;
    for (size_t i = 0; i < in->n; i++) {
        ms_profile_free(in->v[i].profile);
        cJSON_Delete(in->v[i].file_json);
    }
    free(in->v);
    in->v = NULL;
    in->n = in->cap = 0;
}

int compare_inputs_load(const char *cmd, char **paths, size_t n, int device, bool want_json,
                        int top_k, unsigned threads, compare_inputs *out)
{
    memset(out, 0, sizeof *out);
    input_kind *kinds = calloc(n ? n : 1, sizeof *kinds);
    const char **pickles = calloc(n ? n : 1, sizeof *pickles);
    size_t *pickle_of = calloc(n ? n : 1, sizeof *pickle_of); /* path index -> pickle index */
    compare_input *slots = calloc(n ? n : 1, sizeof *slots);
    ms_profile **profs = calloc(n ? n : 1, sizeof *profs);
    ms_error *errs = calloc(n ? n : 1, sizeof *errs);
    int rc = 0;
    if (!kinds || !pickles || !pickle_of || !slots || !profs || !errs) {
        cli_error(cmd, "out of memory");
        rc = 2;
        goto done;
    }

    size_t n_pickles = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        int first = -1;
        errno = 0;
        kinds[i] = input_kind_of(paths[i], &first);
        switch (kinds[i]) {
        case INPUT_PICKLE:
        case INPUT_GZIP:
            pickle_of[i] = n_pickles;
            pickles[n_pickles++] = paths[i];
            break;
        case INPUT_JSON:
            break;
        case INPUT_EMPTY:
            cli_error(cmd, "%s: empty file", paths[i]);
            rc = 2;
            break;
        case INPUT_UNKNOWN:
            if (first < 0)
                cli_error(cmd, "%s: %s", paths[i], strerror(errno ? errno : EIO));
            else
                cli_error(cmd,
                          "%s: byte 0: neither a snapshot pickle (0x80), gzip (1f 8b) nor "
                          "summary JSON ('{'); found 0x%02x",
                          paths[i], (unsigned)first);
            rc = 2;
            break;
        }
    }
    if (rc)
        goto done;

    if (n_pickles) {
        hook_ctx ctx = {slots, device, want_json, top_k};
        /* --threads N is the load's budget of threads; by default one per CPU, unless
         * MEMSNAP_THREADS=1 asked for one thread throughout. */
        ms_limits lim = *cli_limits();
        if (threads) {
            lim.threads = threads;
        } else if (lim.threads != 1) {
            long cpus = sysconf(_SC_NPROCESSORS_ONLN);
            if (cpus > (long)lim.threads)
                lim.threads = (uint32_t)(cpus > 256 ? 256 : cpus);
        }
        ms_profiles_load(profs, errs, pickles, n_pickles, device, &lim, keep_summary, &ctx);
        for (size_t i = 0; i < n_pickles; i++) {
            slots[i].profile = profs[i];
            if (!profs[i] && !rc) { /* report the first failure in command-line order */
                if (errs[i].offset >= 0)
                    cli_error(cmd, "%s: byte %lld: %s", pickles[i], (long long)errs[i].offset,
                              errs[i].message);
                else
                    cli_error(cmd, "%s: %s", pickles[i], errs[i].message);
                rc = 2;
            }
        }
        if (rc)
            goto done;
        /* Told once per file, in command-line order (the hook runs on loader threads). */
        for (size_t i = 0; i < n_pickles; i++) {
            if (slots[i].times_backward_at) {
                char text[128];
                cli_error(cmd, "warning: %s: device %d: %s", pickles[i], slots[i].device,
                          cli_times_backward_text(text, sizeof text,
                                                  (double)slots[i].times_backward_at));
            }
        }
    }

    bool ok = true;
    for (size_t i = 0; i < n && !rc; i++) {
        if (kinds[i] != INPUT_JSON) {
            inputs_push(out, slots[pickle_of[i]], &ok);
            if (ok)
                memset(&slots[pickle_of[i]], 0, sizeof slots[0]); /* now owned by out */
        } else {
            char *text = NULL;
            size_t len = 0;
            rc = read_whole(cmd, paths[i], &text, &len);
            if (!rc)
                rc = summary_input_parse(cmd, paths[i], text, len, device, want_json, out);
            free(text);
        }
        if (!ok) {
            cli_error(cmd, "out of memory");
            rc = 2;
        }
    }

done:
    if (slots)
        for (size_t i = 0; i < n; i++) {
            ms_profile_free(slots[i].profile);
            cJSON_Delete(slots[i].file_json);
        }
    free(kinds);
    free(pickles);
    free(pickle_of);
    free(slots);
    free(profs);
    free(errs);
    if (rc)
        compare_inputs_free(out);
    return rc;
}

/* ------------------------------------------------------------------ shared by diff, ranks */

int compare_opts_parse(const char *cmd, int argc, char **argv, compare_opts *o)
{
    memset(o, 0, sizeof *o);
    o->device = -1;
    o->top = 10;
    o->threshold = 10.0;
    o->files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *o->files);
    if (!o->files) {
        cli_error(cmd, "out of memory");
        return 2;
    }
    long long device = -1, top = 10, threads = 0;
    const cli_option table[] = {
        {CLI_FLAG("--json", &o->json)},
        {CLI_FLAG("--fail", &o->fail)},
        {CLI_DEVICE(&device)},
        {CLI_INT("--top", &top, 0, 100000)},
        {CLI_INT("--threads", &threads, 0, 1024)},
        {CLI_NUMBER("--threshold", &o->threshold)},
    };
    int rc = CLI_PARSE(cmd, argc, argv, table, o->files, &o->n_files);
    if (rc == CLI_HELP) {
        o->help = true;
        return 0;
    }
    o->device = (int)device;
    o->top = (int)top;
    o->threads = (unsigned)threads;
    return rc;
}

void compare_opts_free(compare_opts *o)
{
    free(o->files);
    o->files = NULL;
    o->n_files = 0;
}

void pct_text(const ms_delta *d, char *buf, size_t cap)
{
    if (!d->pct_valid)
        snprintf(buf, cap, "new");
    else if (d->delta == 0)
        snprintf(buf, cap, "0%%");
    else
        snprintf(buf, cap, "%+.1f%%", d->pct);
}

void signed_size_text(int64_t v, char *buf, size_t cap)
{
    if (v == 0 || cap < 2) {
        snprintf(buf, cap, "0 B");
        return;
    }
    uint64_t mag = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    buf[0] = v < 0 ? '-' : '+';
    ms_format_bytes(mag > INT64_MAX ? INT64_MAX : (int64_t)mag, buf + 1, cap - 1);
}
