/* memsnap categories: what the memory is — parameters, gradients, optimizer state,
 * activations, ... — at the peak, at every iteration's end and at instants asked for.
 * The analysis is ms_categories_build(); this file parses options and prints. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "categories_json.h"
#include "cli_util.h"
#include "commands.h"

static const char *const CMD = "categories";

static const char *USAGE =
    "usage: memsnap categories FILE... [--json] [--device N] [--at SECONDS]...\n"
    "                          [--at-us MICROSECONDS]... [--explain]\n"
    "\n"
    "Gives every allocation a category (parameter, gradient, optimizer_state, activation,\n"
    "temporary, workspace, input, other) from the phase it was made in (forward, backward,\n"
    "optimizer step: from record_function annotations and the stacks) and whether it\n"
    "outlived it, then prints the bytes by category at the peak, at the end of every\n"
    "iteration and at each instant asked for, and the training-memory formula\n"
    "parameters + optimizer state + max(gradients + optimizer intermediates, activations)\n"
    "with the measured numbers of the peak iteration.\n"
    "\n"
    "  --json             print JSON (docs/json.md)\n"
    "  --device N         only device N (default: every device with events or segments)\n"
    "  --at SECONDS       also the state at this many seconds after the first event\n"
    "                     (as the other commands show times); repeatable\n"
    "  --at-us US         also the state at this time on the trace's own clock (time_us,\n"
    "                     microseconds since the epoch); repeatable\n"
    "  --explain          say why the biggest allocations of each category alive at the\n"
    "                     peak got it, and where the evidence is weak\n"
    "\n"
    "Exit status: 0 ok, 2 usage or input error.\n";

static int parse_us(const char *text, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < 0) {
        cli_error(CMD, "--at-us: '%s' is not a time in microseconds (a non-negative integer)",
                  text);
        return 2;
    }
    *out = v;
    return 0;
}

static cJSON *categories_file(void *ctx, const char *path, const ms_snapshot *s, ms_error *err,
                              int *rc)
{
    (void)rc;
    return categories_file_json(path, s, ctx, err);
}

static void print_file(const cJSON *file)
{
    categories_print_file(stdout, file);
}

int cmd_categories(int argc, char **argv)
{
    bool json = false;
    long long device = -1;
    cat_query q = {-1, NULL, 0, false, 3};
    cat_instant *at = calloc((size_t)argc + 1, sizeof *at);
    char **files = calloc((size_t)argc + 1, sizeof *files);
    if (!at || !files) {
        free(at);
        free(files);
        return 2;
    }
    int nfiles = 0, rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(USAGE, stdout);
            free(at);
            free(files);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--explain")) {
            q.explain = true;
        } else if (!strcmp(a, "--device") || !strcmp(a, "--at") || !strcmp(a, "--at-us")) {
            if (i + 1 >= argc) {
                cli_error(CMD, "%s needs a value", a);
                rc = 2;
            } else if (!strcmp(a, "--device")) {
                rc = cli_parse_int(CMD, a, argv[++i], 0, 65535, &device);
            } else if (!strcmp(a, "--at")) {
                cat_instant *x = &at[q.n_at++];
                x->text = argv[++i];
                rc = cli_parse_double(CMD, a, x->text, &x->seconds);
            } else {
                cat_instant *x = &at[q.n_at++];
                x->is_us = true;
                x->text = argv[++i];
                rc = parse_us(x->text, &x->time_us);
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            cli_error(CMD, "unknown option '%s' (see memsnap categories --help)", a);
            rc = 2;
        } else {
            files[nfiles++] = argv[i];
        }
    }
    if (!rc && nfiles == 0) {
        fputs(USAGE, stderr);
        rc = 2;
    }
    q.device = (int)device;
    q.at = at;
    cJSON *doc = NULL;
    if (!rc)
        rc = cli_each_file(CMD, files, nfiles, device, categories_file, &q, &doc);
    if (!rc)
        rc = cli_emit_files(doc, json, print_file);
    free(at);
    free(files);
    return rc;
}
