/* Placeholder until the report command lands; owned by its own issue. */
#include <stdio.h>

#include "commands.h"

int cmd_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "memsnap report: not available in this build yet\n");
    return 2;
}
