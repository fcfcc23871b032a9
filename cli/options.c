#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

static bool takes_value(cli_opt_kind kind)
{
    return kind != CLI_OPT_FLAG && kind != CLI_OPT_UNSET;
}

/* "--x takes 'time' or 'events'": the choices listed, so the message never goes stale. */
static void choice_error(const char *cmd, const cli_option *o)
{
    char list[256] = "";
    size_t at = 0, n = 0;
    while (o->choices[n])
        n++;
    for (size_t k = 0; k < n && at < sizeof list; k++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s'%s'",
                               k == 0 ? "" : k + 1 == n ? " or " : ", ", o->choices[k]);
    cli_error(cmd, "%s takes %s", o->name, list);
}

static int apply(const char *cmd, const cli_option *o, const char *value)
{
    switch (o->kind) {
    case CLI_OPT_FLAG:
        *o->to.flag = true;
        return 0;
    case CLI_OPT_UNSET:
        *o->to.flag = false;
        return 0;
    case CLI_OPT_STRING:
        *o->to.text = value;
        return 0;
    case CLI_OPT_INT:
        return cli_parse_int(cmd, o->name, value, o->lo, o->hi, o->to.integer);
    case CLI_OPT_SIZE:
        return cli_parse_size(cmd, o->name, value, o->to.size);
    case CLI_OPT_NUMBER:
        return cli_parse_double(cmd, o->name, value, o->to.number);
    case CLI_OPT_CHOICE:
        for (int k = 0; o->choices[k]; k++)
            if (!strcmp(value, o->choices[k])) {
                *o->to.choice = k;
                return 0;
            }
        choice_error(cmd, o);
        return 2;
    case CLI_OPT_CALLBACK:
        return o->fn(o->to.ctx, cmd, o->name, value);
    }
    return 2;
}

int cli_parse_options(const char *cmd, int argc, char **argv, const cli_option *opts,
                      size_t n_opts, char **files, size_t *n_files)
{
    static const cli_option help = {.name = "--help", .alias = "-h", .kind = CLI_OPT_FLAG};
    *n_files = 0;
    bool only_files = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_files || a[0] != '-' || a[1] == '\0') {
            files[(*n_files)++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--")) {
            only_files = true;
            continue;
        }
        /* Only a long option carries its value after '='; "-o=x" is not a form. */
        const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const cli_option *o = NULL;
        for (size_t k = 0; k <= n_opts && !o; k++) {
            const cli_option *c = k < n_opts ? &opts[k] : &help;
            if ((strlen(c->name) == len && !strncmp(a, c->name, len)) ||
                (!eq && c->alias && !strcmp(a, c->alias)))
                o = c;
        }
        if (!o) {
            cli_error(cmd, "unknown option '%.*s' (see memsnap %s --help)", (int)len, a, cmd);
            return 2;
        }
        const char *value = NULL;
        if (o->optional && !eq) {
            if (o->seen)
                *o->seen = true;
            continue;
        }
        if (!takes_value(o->kind)) {
            if (eq) {
                cli_error(cmd, "%s takes no value (see memsnap %s --help)", o->name, cmd);
                return 2;
            }
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            cli_error(cmd, "%s needs a value (see memsnap %s --help)", a, cmd);
            return 2;
        }
        if (o == &help)
            return CLI_HELP;
        if (apply(cmd, o, value))
            return 2;
        if (o->seen)
            *o->seen = true;
    }
    return 0;
}

bool cli_option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    size_t len = strlen(name);
    if (strncmp(a, name, len) != 0 || (a[len] != '\0' && a[len] != '='))
        return false;
    if (a[len] == '=')
        *value = a + len + 1;
    else
        *value = *i + 1 < argc ? argv[++*i] : NULL;
    return true;
}

void cli_limits_from_env(ms_limits *lim)
{
    const char *max_input = getenv("MEMSNAP_MAX_INPUT");
    uint64_t v;
    if (max_input && *max_input && ms_parse_size(&v, max_input, NULL) == 0) {
        lim->max_input_bytes = v;
        lim->max_expansion = 0;
    }
    const char *max_memory = getenv("MEMSNAP_MAX_MEMORY");
    if (max_memory && *max_memory && ms_parse_size(&v, max_memory, NULL) == 0 && v > 0)
        lim->max_memory = v;
    const char *threads = getenv("MEMSNAP_THREADS");
    if (threads && !strcmp(threads, "1"))
        lim->threads = 1;
}

int cli_parse_options_max(const char *cmd, int argc, char **argv, const cli_option *opts,
                          size_t n_opts, const char **files, size_t max, size_t *n_files)
{
    *n_files = 0;
    char **all = calloc((size_t)argc + 1, sizeof *all);
    if (!all) {
        cli_error(cmd, "out of memory");
        return 2;
    }
    size_t n = 0;
    int rc = cli_parse_options(cmd, argc, argv, opts, n_opts, all, &n);
    if (rc == 0 && n > max) {
        cli_error(cmd, "at most %zu files", max);
        rc = 2;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        files[i] = all[i];
    if (rc == 0)
        *n_files = n;
    free(all);
    return rc;
}

int cli_parse_inputs(const char *cmd, const char *usage, int argc, char **argv,
                     const cli_option *opts, size_t n_opts, char ***files, size_t *n_files)
{
    *n_files = 0;
    if (!(*files = calloc((size_t)argc + 1, sizeof **files))) {
        cli_error(cmd, "out of memory");
        return 2;
    }
    int rc = cli_parse_options(cmd, argc, argv, opts, n_opts, *files, n_files);
    if (rc == CLI_HELP)
        fputs(usage, stdout);
    if (rc == 0 && *n_files == 0) {
        fputs(usage, stderr);
        rc = 2;
    }
    return rc;
}
