/* The memsnap subcommands. Each lives in its own cmd_NAME.c, takes the arguments after
 * its name (argv[0] is the command name) and returns the process exit status:
 * 0 ok, 1 findings or a failed gate, 2 usage or input error. */
#ifndef MEMSNAP_CLI_COMMANDS_H
#define MEMSNAP_CLI_COMMANDS_H

int cmd_summary(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_categories(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_ranks(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_oom(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_segments(int argc, char **argv);

#endif
