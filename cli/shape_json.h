/* The recording's shape (memsnap/shape.h) as every command shows it: one JSON object
 * (docs/json.md "shape") and the text lines printed from it, so `summary`, `leaks`,
 * `categories`, `oom` and `report` say the same thing in the same words. */
#ifndef MEMSNAP_CLI_SHAPE_JSON_H
#define MEMSNAP_CLI_SHAPE_JSON_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "memsnap/run.h"

/* {"kind", "text", "iterations", "warm_start", "phases", "compile", "cuda_graphs",
 * "alive_at_end"}; NULL on allocation failure. */
cJSON *shape_json(const ms_shape *sh, const ms_snapshot *s, const ms_iterations *it);
/* The run's shape object; NULL with err filled when it cannot be found. */
cJSON *shape_json_of_run(ms_run *run, ms_error *err);
/* Marks the CUDA-graph replays among an iterations object's items (leaks_iterations_to_json
 * of `it`): "graph_replay": true and "footprint_bytes" (live bytes plus the pool). */
void shape_mark_iterations(cJSON *iterations, const ms_shape *sh, const ms_iterations *it);

/* The text lines of a shape object, each `indent` spaces in, its label padded to
 * `width` (0: "label: text"): shape, then compile and CUDA graphs where there are some. */
void shape_print_json(FILE *out, const cJSON *shape, int indent, int width);
/* One line of prose for Markdown or a title: the shape's text, then the compile and
 * CUDA-graph texts after "; ". */
size_t shape_line_json(const cJSON *shape, char *buf, size_t cap);

#endif
