/* One option parser for every memsnap command, after git's parse-options: a command
 * declares its options as a table and calls cli_parse_options() once, so the rules and
 * the messages are written here and nowhere else:
 *  - `--name value` and `--name=value` are the same option; a short alias (-o) takes the
 *    next argument as its value; an option whose value is optional (`--fail[=SIZE]`)
 *    takes it only after '=';
 *  - options and files may come in any order; a lone `-` is a file (standard input), and
 *    `--` ends the options: every later argument is a file, even one that starts with '-';
 *  - given twice, an option's later value wins (a callback may collect them instead:
 *    categories --at);
 *  - -h or --help stops parsing: the command prints its usage to stdout and exits 0;
 *  - every mistake is one line on stderr and exit 2, worded the same in every command:
 *      memsnap CMD: unknown option '--x' (see memsnap CMD --help)
 *      memsnap CMD: --top needs a value (see memsnap CMD --help)
 *      memsnap CMD: --json takes no value (see memsnap CMD --help)
 *      memsnap CMD: --x takes 'time' or 'events'
 *    and for a bad number or size the messages of cli_parse_int/size/double
 *    (cli_util.h); the same kind of value has the same bounds everywhere (CLI_DEVICE).
 * Also here: the settings main() takes from the environment (cli_limits_from_env). */
#ifndef MEMSNAP_CLI_OPTIONS_H
#define MEMSNAP_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

typedef enum cli_opt_kind {
    CLI_OPT_FLAG,     /* *to.flag = true; takes no value */
    CLI_OPT_UNSET,    /* *to.flag = false; takes no value (--no-leaks) */
    CLI_OPT_STRING,   /* *to.text = the value */
    CLI_OPT_INT,      /* *to.integer = a decimal integer in [lo, hi] */
    CLI_OPT_SIZE,     /* *to.size = a size ("512MiB") */
    CLI_OPT_NUMBER,   /* *to.number = a non-negative decimal number */
    CLI_OPT_CHOICE,   /* *to.choice = the index of the value in choices[] */
    CLI_OPT_CALLBACK, /* fn(to.ctx, cmd, name, value): 0, or 2 after printing why */
} cli_opt_kind;

typedef int (*cli_opt_fn)(void *ctx, const char *cmd, const char *name, const char *value);

typedef struct cli_option {
    const char *name;   /* "--device" */
    const char *alias;  /* a short form ("-o"), or NULL */
    cli_opt_kind kind;
    union {
        bool *flag;
        const char **text;
        long long *integer;
        uint64_t *size;
        double *number;
        int *choice;
        void *ctx;
    } to;
    long long lo, hi;            /* CLI_OPT_INT */
    const char *const *choices;  /* CLI_OPT_CHOICE, NULL-terminated */
    cli_opt_fn fn;               /* CLI_OPT_CALLBACK */
    bool *seen;                  /* when not NULL: set true when the option is given */
    /* The value is optional: it comes only after '=' (`--fail=64KiB`), and `--fail`
     * alone is the option given without one (*seen set, the target untouched), so a
     * later argument is never taken for its value. */
    bool optional;
} cli_option;

/* Table entries: `{CLI_INT("--top", &top, 1, 1000)}`; add `.seen = &has_top` inside the
 * braces to learn whether it was given. The pointer types are checked. */
#define CLI_FLAG(n, p) .name = (n), .kind = CLI_OPT_FLAG, .to.flag = (p)
#define CLI_UNSET(n, p) .name = (n), .kind = CLI_OPT_UNSET, .to.flag = (p)
#define CLI_STRING(n, p) .name = (n), .kind = CLI_OPT_STRING, .to.text = (p)
#define CLI_INT(n, p, l, h) \
    .name = (n), .kind = CLI_OPT_INT, .to.integer = (p), .lo = (l), .hi = (h)
#define CLI_SIZE(n, p) .name = (n), .kind = CLI_OPT_SIZE, .to.size = (p)
#define CLI_NUMBER(n, p) .name = (n), .kind = CLI_OPT_NUMBER, .to.number = (p)
#define CLI_CHOICE(n, p, list) \
    .name = (n), .kind = CLI_OPT_CHOICE, .to.choice = (p), .choices = (list)
/* A size that may be left out: `--fail` sets *seen, `--fail=SIZE` sets *seen and *p. */
#define CLI_SIZE_OPTIONAL(n, p, s) \
    .name = (n), .kind = CLI_OPT_SIZE, .to.size = (p), .seen = (s), .optional = true
#define CLI_CALLBACK(n, f, c) .name = (n), .kind = CLI_OPT_CALLBACK, .fn = (f), .to.ctx = (c)

/* The options several commands share, with one set of bounds. */
/* --device N: a device id the model can hold (a device the file lacks is the command's
 * error, naming the file). */
#define CLI_DEVICE(p) CLI_INT("--device", p, 0, MS_DEVICE_MAX)
/* --iterations N: the iteration count the user states. */
#define CLI_ITERATIONS(p) CLI_INT("--iterations", p, 1, 1000000)
/* -o PATH, --output PATH */
#define CLI_OUTPUT(p) CLI_STRING("--output", p), .alias = "-o"

/* cli_parse_options() returns this when -h/--help was given. */
#define CLI_HELP (-1)

/* Parses argv[1..argc-1] (argv[0] is the command's name, `cmd` the name used in
 * messages) against opts[0..n_opts-1]. The files, in order, go to files[] (room for argc
 * entries; they point into argv) and their count to *n_files. Returns 0, CLI_HELP, or 2
 * after printing why. */
int cli_parse_options(const char *cmd, int argc, char **argv, const cli_option *opts,
                      size_t n_opts, char **files, size_t *n_files);
#define CLI_PARSE(cmd, argc, argv, table, files, n_files) \
    cli_parse_options(cmd, argc, argv, table, sizeof table / sizeof table[0], files, n_files)

/* The same for a command of FILE... arguments (summary, categories, oom, segments), into
 * *files (made here with room for argc; the caller frees it whatever is returned): -h
 * prints `usage` to stdout and returns CLI_HELP; no file prints it to stderr, 2. */
int cli_parse_inputs(const char *cmd, const char *usage, int argc, char **argv,
                     const cli_option *opts, size_t n_opts, char ***files, size_t *n_files);
#define CLI_PARSE_INPUTS(cmd, usage, argc, argv, table, files, n_files)                       \
    cli_parse_inputs(cmd, usage, argc, argv, table, sizeof table / sizeof table[0], files,      \
                     n_files)

/* The same for a command that keeps at most `max` files in an array of its own (render,
 * view): more is an error ("at most N files", 2). */
int cli_parse_options_max(const char *cmd, int argc, char **argv, const cli_option *opts,
                          size_t n_opts, const char **files, size_t max, size_t *n_files);
#define CLI_PARSE_MAX(cmd, argc, argv, table, files, n_files)                                  \
    cli_parse_options_max(cmd, argc, argv, table, sizeof table / sizeof table[0], files,        \
                          sizeof files / sizeof files[0], n_files)

/* The option at argv[*i] when it is `name` (as `name value` or `name=value`): true, with
 * *value the value (NULL when the arguments end first) and *i moved past it. For main(),
 * whose global options come before the command. */
bool cli_option_value(int argc, char **argv, int *i, const char *name, const char **value);

/* The settings memsnap takes from its environment, applied to *lim (the library reads
 * none): MEMSNAP_MAX_INPUT=SIZE sets max_input_bytes and lifts the expansion ratio (as
 * --max-input does; an unreadable size is ignored), MEMSNAP_MAX_MEMORY=SIZE sets
 * max_memory (as --max-memory does), MEMSNAP_THREADS=1 reads and analyses with one
 * thread. docs/memsnap.1.md, ENVIRONMENT. */
void cli_limits_from_env(ms_limits *lim);

#endif
