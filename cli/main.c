/* memsnap: dispatches `memsnap <command> ...` to the cmd_*.c that owns the command. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "options.h"
#include "safe_output.h"
#include "memsnap/memsnap.h"
#include "memsnap/version.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command COMMANDS[] = {
    {"summary", cmd_summary, "peaks, live memory, reserved memory and top sites per device"},
    {"render", cmd_render, "draw the active-memory timeline as PNG or SVG"},
    {"categories", cmd_categories, "what the memory is: parameters, gradients, activations, ..."},
    {"leaks", cmd_leaks, "find allocations that outlive the iteration that made them"},
    {"diff", cmd_diff, "compare two snapshots (ranks, or before/after a change)"},
    {"ranks", cmd_ranks, "compare many rank files and flag outliers"},
    {"report", cmd_report, "write an HTML/Markdown/JSON report with CI gates"},
    {"oom", cmd_oom, "explain out-of-memory events: allocator state, cause, advice"},
    {"segments", cmd_segments, "the allocator's segments and blocks at any instant"},
    {"view", cmd_view, "write the interactive timeline as one HTML page"},
};

/* Plain files are read through a memory mapping; if another process truncates the file
 * meanwhile, touching the vanished pages raises SIGBUS. That is bad input, not a crash:
 * say so and exit 2 like any other unreadable file. */
static void on_sigbus(int sig)
{
    (void)sig;
    static const char msg[] = "memsnap: an input file shrank while it was being read\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(2);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: memsnap <command> [options] FILE...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(out, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(out, "\n`memsnap <command> --help` describes a command's options.\n"
                 "Exit status: 0 ok, 1 findings or failed gate, 2 usage or input error.\n"
                 "\nmemsnap --max-input SIZE <command> ... raises the ceiling on what a gzip or\n"
                 "standard input may expand to (default: 64x the compressed size, 64 GiB).\n"
                 "memsnap --max-memory SIZE <command> ... raises the ceiling on the memory the\n"
                 "reader's containers may take (default: 3x the bytes read, plus 64 MiB).\n");
}

static int run(int argc, char **argv, const char **cmd_name)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("memsnap %s\n", MS_VERSION_STRING); /* CMake's project(VERSION) */
        return 0;
    }
    /* The limits every input is read with, for the whole run: the library reads no
     * environment, so the settings memsnap takes from it are read here. */
    ms_limits lim = ms_limits_default();
    cli_limits_from_env(&lim);
    /* The global options, before the command, for every input it reads. */
    for (;;) {
        int at = 1;
        const char *value = NULL;
        bool input = cli_option_value(argc, argv, &at, "--max-input", &value);
        if (!input && !cli_option_value(argc, argv, &at, "--max-memory", &value))
            break;
        const char *name = input ? "--max-input" : "--max-memory";
        uint64_t v;
        if (!value || at + 1 >= argc || ms_parse_size(&v, value, NULL) != 0 || v == 0) {
            fprintf(stderr, "memsnap: %s needs a size (e.g. 200GiB) and a command\n", name);
            return 2;
        }
        if (input) {
            lim.max_input_bytes = v;
            lim.max_expansion = 0;
        } else {
            lim.max_memory = v;
        }
        argc -= at;
        argv += at;
    }
    cli_set_limits(&lim);
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++) {
        if (!strcmp(argv[1], COMMANDS[i].name)) {
            *cmd_name = COMMANDS[i].name;
            return COMMANDS[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "memsnap: unknown command '%s'\n", cli_term(argv[1]));
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigaction(SIGBUS, &sa, NULL);
    /* A file size limit (ulimit -f) reached while writing an output is a failed write
     * (EFBIG), reported and cleaned up like a full disk, not a kill that leaves the
     * temporary file behind. */
    signal(SIGXFSZ, SIG_IGN);
    /* Before any thread: an interrupted run removes its temporary files and the
     * directories it made; and what is printed is checked as files are (safe_output.h). */
    safe_out_guard_signals();
    safe_out_stdout_begin();
    const char *cmd = NULL;
    int rc = run(argc, argv, &cmd);
    char why[300];
    int out = safe_out_stdout_end(why, sizeof why);
    if (out == 2) { /* a full disk or a file size limit: the output is cut, say so */
        if (cmd)
            cli_error(cmd, "%s", why);
        else
            fprintf(stderr, "memsnap: %s\n", why);
        return 2;
    }
    return rc; /* out == 1: the reader went away (EPIPE), which is no error of ours */
}
