/* The report directory and its files: made as mkdir -p does and removed again by a
 * failed or interrupted run, every file written beside its place and renamed into it
 * only once all were written (safe_output.h), and the lines the command prints. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "json_print.h"
#include "report_cmd.h"
#include "safe_output.h"

#define CMD REPORT_CMD

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
    if (rc == 2) {
        char why[8];
        (void)safe_out_batch_end(false, why, sizeof why); /* removes what was held */
        safe_out_unmake_dirs();
    } else {
        safe_out_keep_dirs();
    }
}

static int write_json(FILE *out, const cJSON *doc, const void *ctx)
{
    (void)ctx;
    char *text = cli_json_format(doc, true, NULL); /* 15+-digit integers as in --json */
    if (!text)
        return -1;
    fputs(text, out);
    fputc('\n', out);
    free(text);
    return ferror(out) ? -1 : 0;
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
            printf(", %s", cli_term(report_str(fj, "oom_png")));
    if (ranks_png)
        printf(", ranks.png");
    printf("\n");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(gates, "checked"))
    {
        bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "passed"));
        printf("%s %s\n", ok ? "passed" : "FAILED", cli_term(report_str(c, "message")));
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
