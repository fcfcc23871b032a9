/* Placeholder until the render command lands; owned by its own issue. */
#include <stdio.h>

#include "commands.h"

int cmd_render(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "memsnap render: not available in this build yet\n");
    return 2;
}
