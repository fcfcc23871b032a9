/* The text lines of the recording's shape, printed from the library's JSON object
 * (json/json_shape.h), so `summary`, `leaks`,
 * `categories`, `oom` and `report` say the same thing in the same words. */
#ifndef MEMSNAP_CLI_SHAPE_JSON_H
#define MEMSNAP_CLI_SHAPE_JSON_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "json/json_shape.h"

/* The text lines of a shape object, each `indent` spaces in, its label padded to
 * `width` (0: "label: text"): shape, then compile and CUDA graphs where there are some. */
void shape_print_json(FILE *out, const cJSON *shape, int indent, int width);
/* One line of prose for Markdown or a title: the shape's text, then the compile and
 * CUDA-graph texts after "; ". */
size_t shape_line_json(const cJSON *shape, char *buf, size_t cap);

#endif
