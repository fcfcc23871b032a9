/* Every memsnap command on one fuzzed input (fuzz_commands.c); `s` is the input read
 * with the fuzz target's limits, NULL when it does not read. */
#ifndef MEMSNAP_FUZZ_COMMANDS_H
#define MEMSNAP_FUZZ_COMMANDS_H

#include <stddef.h>
#include <stdint.h>

#include "memsnap/memsnap.h"

void fuzz_commands(const uint8_t *data, size_t size, const ms_snapshot *s);

/* The fuzz target's limits: small ones keep each run fast; they are limits, not different
 * code paths. One definition, so the library checks and the commands read alike. */
static inline ms_limits fuzz_limits(void)
{
    ms_limits lim = ms_limits_default();
    lim.max_objects = 1u << 16;
    lim.max_memo = 1u << 16;
    lim.max_string = 1u << 16;
    lim.max_events = 1u << 16;
    lim.parallel_min_bytes = 0;
    return lim;
}

#endif
