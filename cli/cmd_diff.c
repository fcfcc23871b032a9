/* Placeholder until the diff command lands; owned by its own issue. */
#include <stdio.h>

#include "commands.h"

int cmd_diff(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "memsnap diff: not available in this build yet\n");
    return 2;
}
