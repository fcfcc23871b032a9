/* The tool's name for the library's JSON writer (lib/src/json/json_writer.h), which every
 * JSON document memsnap writes goes through. */
#ifndef MEMSNAP_CLI_JSON_PRINT_H
#define MEMSNAP_CLI_JSON_PRINT_H

#include "json/json_writer.h"

static inline char *cli_json_format(const cJSON *item, bool whole_integers, size_t *len_out)
{
    return ms__json_format(item, whole_integers, len_out);
}

#endif
