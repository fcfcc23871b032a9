/* The `summary --json` object is the library's (json/json_summary.h): its writer and its
 * reader into comparison profiles live there side by side. */
#ifndef MEMSNAP_CLI_SUMMARY_JSON_H
#define MEMSNAP_CLI_SUMMARY_JSON_H

#include "json/json_summary.h"

#endif
