/* What the public JSON functions (ms_run_json, ms_run_compare_json) share: one contract
 * for their arguments, errors and text. */
#ifndef MEMSNAP_JSON_RUN_H
#define MEMSNAP_JSON_RUN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "memsnap/memsnap.h"

/* The document, or NULL with err filled. */
typedef cJSON *(*ms__json_build_fn)(void *ctx, ms_error *err);

/* *out = the text of build(ctx) (ms_free), *len_out (may be NULL) its length. MS_ERR_ARG
 * naming `fn` when out is NULL or !args_ok; err may be NULL. */
int ms__json_text(char **out, size_t *len_out, bool args_ok, const char *fn,
                  ms__json_build_fn build, void *ctx, ms_error *err);

#endif
