/* Formatted JSON text of a cJSON tree, byte for byte what cJSON_Print (libcjson 1.7.15)
 * writes, in one growing buffer: cJSON_Print measures each item's output with strlen and
 * round-trips every fraction through sscanf, which took 77 ms of `report`'s 1.64 s on the
 * 4M-event trace. The one JSON writer of the library and the tool (ms_run_json, every --json,
 * report's summary.json). tests/test_json_print.c compares the two on random trees and on every
 * kind of item, so a cJSON upgrade that changes its format fails there. */
#ifndef MEMSNAP_JSON_WRITER_H
#define MEMSNAP_JSON_WRITER_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* The text of `item` (caller frees it with free()), or NULL where cJSON_Print returns
 * NULL: out of memory, a NULL item, an item of no known type, a raw item without text.
 * With whole_integers, a whole number of 15 or 16 digits (below 2^53 in magnitude, where
 * a double holds every integer) is written as an integer (1795310694811020) where
 * cJSON writes an exponent (1.79531069481102e+15); everything else is unchanged. The
 * tree is not changed. *len_out (may be NULL) gets the text's length. */
char *ms__json_format(const cJSON *item, bool whole_integers, size_t *len_out);

#endif
