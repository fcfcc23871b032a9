/* memsnap categories: what the memory is — parameters, gradients, optimizer state,
 * activations, ... — at the peak, at every iteration's end and at instants asked for.
 * The analysis is the run's (ms_run_categories), its JSON the library's
 * (json/json_categories.h); this file parses options and prints. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "categories_json.h"
#include "cli_util.h"
#include "commands.h"
#include "options.h"

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
    "with the measured numbers of the peak iteration (for an inference run, with no\n"
    "backward and no optimizer step: parameters + inputs and KV caches + activations and\n"
    "temporaries). On a training run it checks optimizer state = k x trainable parameters\n"
    "= k x gradients at the last step (AdamW k=2, SGD with momentum k=1) and, where that\n"
    "fails, says which side is off and by how much.\n"
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

/* --at and --at-us collect: each one adds an instant (room for argc of them). */
typedef struct instants {
    cat_instant *v;
    size_t n;
} instants;

static int add_instant(void *ctx, const char *cmd, const char *name, const char *value)
{
    instants *list = ctx;
    cat_instant *x = &list->v[list->n++];
    x->text = value;
    if (!strcmp(name, "--at"))
        return cli_parse_double(cmd, name, value, &x->seconds);
    x->is_us = true;
    return parse_us(value, &x->time_us);
}

static cJSON *categories_file(void *ctx, const char *path, const ms_snapshot *s, ms_error *err,
                              int *rc)
{
    (void)rc;
    return categories_file_json(path, s, ctx, cli_limits()->threads, err);
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
    char **files = NULL;
    if (!at)
        return 2;
    instants list = {at, 0};
    size_t nfiles = 0;
    const cli_option table[] = {
        {CLI_FLAG("--json", &json)},
        {CLI_FLAG("--explain", &q.explain)},
        {CLI_DEVICE(&device)},
        {CLI_CALLBACK("--at", add_instant, &list)},
        {CLI_CALLBACK("--at-us", add_instant, &list)},
    };
    int rc = CLI_PARSE_INPUTS(CMD, USAGE, argc, argv, table, &files, &nfiles);
    if (rc == CLI_HELP) {
        free(at);
        free(files);
        return 0;
    }
    q.device = (int)device;
    q.at = at;
    q.n_at = list.n;
    cJSON *doc = NULL;
    if (!rc)
        rc = cli_each_file(CMD, files, (int)nfiles, device, true, categories_file, &q, &doc);
    if (!rc)
        rc = cli_emit_files(doc, json, print_file);
    free(at);
    free(files);
    return rc;
}
