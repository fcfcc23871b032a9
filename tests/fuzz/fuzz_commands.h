/* Every memsnap command on one fuzzed input (fuzz_commands.c); `s` is the input read
 * with the fuzz target's limits, NULL when it does not read. */
#ifndef MEMSNAP_FUZZ_COMMANDS_H
#define MEMSNAP_FUZZ_COMMANDS_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

void fuzz_commands(const uint8_t *data, size_t size, const ms_snapshot *s);

#endif
