/* Placeholder until the ranks command lands; owned by its own issue. */
#include <stdio.h>

#include "commands.h"

int cmd_ranks(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "memsnap ranks: not available in this build yet\n");
    return 2;
}
