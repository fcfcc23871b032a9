/* The recording's shape (memsnap/shape.h) as one JSON object (docs/json.md "shape"), so
 * `summary`, `leaks`, `categories`, `oom`, `report` and ms_run_json say the same thing in
 * the same words. */
#ifndef MEMSNAP_JSON_SHAPE_H
#define MEMSNAP_JSON_SHAPE_H

#include <cjson/cJSON.h>

#include "memsnap/run.h"

/* {"kind", "text", "iterations", "warm_start", "phases", "compile", "cuda_graphs",
 * "alive_at_end"}; NULL on allocation failure. */
cJSON *shape_json(const ms_shape *sh, const ms_snapshot *s, const ms_iterations *it);
/* The run's shape object; NULL with err filled when it cannot be found. */
cJSON *shape_json_of_run(ms_run *run, ms_error *err);
/* Marks the CUDA-graph replays among an iterations object's items (leaks_iterations_to_json
 * of `it`): "graph_replay": true and "footprint_bytes" (live bytes plus the pool). */
void shape_mark_iterations(cJSON *iterations, const ms_shape *sh, const ms_iterations *it);

/* A device's {"device", "iterations"} as `leaks --json` and the report's leaks section
 * begin it: the leak report's iterations `it`, the run's shape marking CUDA-graph
 * replays among them. NULL when out of memory. */
cJSON *leaks_device_head_json(ms_run *run, const ms_iterations *it, const ms_idle *idle,
                              int64_t t0_us);

#endif
