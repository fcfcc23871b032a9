/* How memsnap writes a number in JSON, once for every writer: cli/json_print.c (every
 * cJSON document the tool prints or saves) and render/export_text.c (the chart model and
 * the view's data). Private to memsnap's own code: not installed. */
#ifndef MEMSNAP_COMMON_JSON_NUMBER_H
#define MEMSNAP_COMMON_JSON_NUMBER_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes ms__json_number may write (its texts are at most 25 bytes; no NUL is added). */
#define MS_JSON_NUMBER_MAX 32

/* Writes d's JSON text into out (MS_JSON_NUMBER_MAX bytes) and returns its length:
 * "null" for NaN and infinities; a whole number below 1e15 in magnitude (with
 * whole_integers below 2^53, where a double holds every integer) as an integer, "-0"
 * for negative zero; else cJSON's text: %1.15g, or %1.17g where that does not read
 * back (within cJSON's relative DBL_EPSILON). 0 when no text fits cJSON's buffer. */
size_t ms__json_number(char *out, double d, bool whole_integers);

#endif
