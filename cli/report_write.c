/* The report directory and its files: made as mkdir -p does and removed again by a
 * failed or interrupted run, every file written beside its place and renamed into it
 * only once all were written (safe_output.h), the devices summary.json holds but the tree
 * does not (report_spool_device), and the lines the command prints. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "json_print.h"
#include "report_cmd.h"
#include "safe_output.h"

#define CMD REPORT_CMD

static void spool_close(void);

char *report_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int report_dir_begin(const report_opts *o)
{
    /* mkdir -p: CI scripts pass paths like out/memory/report that do not exist yet. */
    char dir_why[300];
    if (safe_out_make_dir(o->out_dir, dir_why, sizeof dir_why)) {
        cli_error(CMD, "%s", dir_why);
        safe_out_unmake_dirs();
        return 2;
    }
    /* Every file of the report is renamed into place only once all were written: a
     * failed run replaces none of the user's files. */
    safe_out_batch_begin();
    return 0;
}

void report_dir_end(int rc)
{
    spool_close();
    if (rc == 2) {
        char why[8];
        (void)safe_out_batch_end(false, why, sizeof why); /* removes what was held */
        safe_out_unmake_dirs();
    } else {
        safe_out_keep_dirs();
    }
}

/* ------------------------------------------------------------------ spooled devices */

/* The spooled devices' text, in unlinked files: nothing is left behind however the run
 * ends. A raw item stands for each: SPOOL_MARK, "OFFSET LENGTH DEPTH", SPOOL_END.
 * Neither byte can appear in cli_json_format's text otherwise (controls are escaped).
 * One file per depth (summary devices, leak entries), so that each is read back in the
 * order it was written, without a seek per device: `end` is where the next text goes,
 * `at` where the reads stand (-1: still appending). */
#define SPOOL_DEPTHS 8
static struct spool {
    FILE *f;
    long long end, at;
} spools[SPOOL_DEPTHS];
static bool spool_broken;
#define SPOOL_MARK '\x01'
#define SPOOL_END '\x02'

/* Copies the value at `path` ("a.b") of `from` into `to`, with the objects on its way. */
static bool keep_path(cJSON *to, const cJSON *from, const char *path)
{
    const cJSON *v = cli_json_get(from, path);
    if (!v)
        return true;
    char key[64];
    for (const char *dot; (dot = strchr(path, '.')); path = dot + 1) {
        size_t n = (size_t)(dot - path);
        if (n >= sizeof key)
            return false;
        memcpy(key, path, n);
        key[n] = '\0';
        cJSON *sub = cJSON_GetObjectItemCaseSensitive(to, key);
        if (!sub && !(sub = cJSON_AddObjectToObject(to, key)))
            return false;
        to = sub;
    }
    cJSON *c = cJSON_Duplicate(v, true);
    return c && cJSON_AddItemToObject(to, path, c);
}

cJSON *report_spool_device(cJSON *dev, size_t depth, const char *const *keep)
{
    struct spool *sp = depth < SPOOL_DEPTHS ? &spools[depth] : NULL;
    if (spool_broken || !sp || (!sp->f && !(sp->f = tmpfile()))) {
        spool_broken = true;
        return dev;
    }
    if (!sp->end)
        sp->at = -1;
    size_t len;
    char *text = cli_json_format(dev, true, &len);
    if (!text || sp->at >= 0 || fwrite(text, 1, len, sp->f) != len)
        goto keep;
    char mark[80];
    snprintf(mark, sizeof mark, "%c%lld %zu %zu%c", SPOOL_MARK, sp->end, len, depth,
             SPOOL_END);
    sp->end += (long long)len;
    cJSON *raw = cJSON_CreateRaw(mark);
    if (!raw)
        goto keep;
    for (size_t k = 0; keep[k]; k++) {
        if (!keep_path(raw, dev, keep[k])) {
            cJSON_Delete(raw);
            goto keep;
        }
    }
    free(text);
    cJSON_Delete(dev);
    return raw;
keep:
    /* A spool that failed once is not trusted again: the tree keeps the rest. */
    spool_broken = true;
    free(text);
    return dev;
}

static void spool_close(void)
{
    for (size_t k = 0; k < SPOOL_DEPTHS; k++) {
        if (spools[k].f)
            fclose(spools[k].f);
        spools[k] = (struct spool){NULL, 0, -1};
    }
    spool_broken = false;
}

/* Copies a spooled device's text to out, its lines indented `depth` tabs more. */
static int spool_copy(FILE *out, long long at, size_t len, size_t depth)
{
    static const char tabs[SPOOL_DEPTHS] = "\t\t\t\t\t\t\t";
    struct spool *sp = depth < SPOOL_DEPTHS ? &spools[depth] : NULL;
    if (!sp || !sp->f || (at != sp->at && fseeko(sp->f, (off_t)at, SEEK_SET)))
        return -1;
    sp->at = at + (long long)len;
    char buf[65536];
    while (len) {
        size_t want = len < sizeof buf ? len : sizeof buf;
        if (fread(buf, 1, want, sp->f) != want)
            return -1;
        len -= want;
        const char *p = buf, *end = buf + want;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *stop = nl ? nl + 1 : end;
            fwrite(p, 1, (size_t)(stop - p), out);
            if (nl)
                fwrite(tabs, 1, depth, out);
            p = stop;
        }
    }
    return 0;
}

static int write_json(FILE *out, const cJSON *doc, const void *ctx)
{
    (void)ctx;
    size_t n;
    char *text = cli_json_format(doc, true, &n); /* 15+-digit integers as in --json */
    if (!text)
        return -1;
    int rc = 0;
    const char *p = text, *end = text + n;
    while (p < end && !rc) {
        const char *m = memchr(p, SPOOL_MARK, (size_t)(end - p));
        fwrite(p, 1, (size_t)((m ? m : end) - p), out);
        if (!m)
            break;
        /* strtoull, not sscanf: sscanf measures the rest of the text on every call. */
        const char *e = memchr(m, SPOOL_END, (size_t)(end - m));
        char *q;
        unsigned long long at = strtoull(m + 1, &q, 10);
        unsigned long long len = strtoull(q, &q, 10);
        unsigned long long depth = strtoull(q, &q, 10);
        rc = !e || q != e ? -1 : spool_copy(out, (long long)at, (size_t)len, (size_t)depth);
        p = e ? e + 1 : end;
    }
    fputc('\n', out);
    free(text);
    return rc || ferror(out) ? -1 : 0;
}

static int write_md(FILE *out, const cJSON *doc, const void *ctx)
{
    (void)ctx;
    return report_write_markdown(out, doc);
}

static int write_html(FILE *out, const cJSON *doc, const void *ctx)
{
    return report_write_html(out, doc, ctx);
}

static int write_file(const char *dir, const char *name, report_writer_fn fn, const cJSON *doc,
                      const void *ctx)
{
    char *path = report_join(dir, name);
    if (!path) {
        cli_error(CMD, "out of memory");
        return 2;
    }
    /* Never through a link planted in DIR, never half-written (safe_output.h). */
    char why[300];
    safe_out so;
    if (safe_out_open(&so, path, why, sizeof why)) {
        cli_error(CMD, "%s", why);
        free(path);
        return 2;
    }
    FILE *f = safe_out_file(&so);
    int bad = !f || fn(f, doc, ctx);
    if (bad) {
        cli_error(CMD, "%s: write failed: %s", path,
                  strerror(so.write_errno ? so.write_errno : errno ? errno : EIO));
        safe_out_abort(&so);
    } else if (safe_out_commit(&so, why, sizeof why)) {
        cli_error(CMD, "%s", why);
        bad = 1;
    }
    free(path);
    return bad ? 2 : 0;
}

int report_print_written(const report_opts *o, const file_state *fs, size_t n, const cJSON *doc,
                         bool ranks_png, const cJSON *gates, size_t failed)
{
    printf("memsnap report: wrote %s/index.html, summary.md, summary.json", cli_term(o->out_dir));
    for (size_t i = 0; i < n; i++) {
        if (fs[i].png[0])
            printf(", %s", cli_term(fs[i].png));
        if (fs[i].cat_png[0])
            printf(", %s", cli_term(fs[i].cat_png));
    }
    const cJSON *fj;
    cJSON_ArrayForEach(fj, cJSON_GetObjectItemCaseSensitive(doc, "files"))
        if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fj, "oom_png")))
            printf(", %s", cli_term(cli_json_str(fj, "oom_png")));
    if (ranks_png)
        printf(", ranks.png");
    printf("\n");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(gates, "checked"))
    {
        bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "passed"));
        printf("%s %s\n", ok ? "passed" : "FAILED", cli_term(cli_json_str(c, "message")));
    }
    if (!failed)
        return 0;
    printf("memsnap report: %zu gate check%s failed\n", failed, failed == 1 ? "" : "s");
    return 1;
}

int report_write_all(const report_opts *o, const cJSON *doc, const report_svgs *svgs)
{
    int rc = write_file(o->out_dir, "summary.json", write_json, doc, NULL);
    if (!rc)
        rc = write_file(o->out_dir, "summary.md", write_md, doc, NULL);
    if (!rc)
        rc = write_file(o->out_dir, "index.html", write_html, doc, svgs);
    if (!rc) {
        char why[300];
        if (safe_out_batch_end(true, why, sizeof why)) {
            cli_error(CMD, "%s", why);
            rc = 2;
        }
    }
    return rc;
}
