/* Placeholder until the leaks command lands; owned by its own issue. */
#include <stdio.h>

#include "commands.h"

int cmd_leaks(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "memsnap leaks: not available in this build yet\n");
    return 2;
}
