/* `memsnap segments`: the library's JSON of the allocator's state at chosen instants
 * (json/json_segments.h), its text form printed from that JSON so the two never disagree,
 * and the states the picture draws, both taken as the library builds each state. */
#ifndef MEMSNAP_CLI_SEGMENTS_JSON_H
#define MEMSNAP_CLI_SEGMENTS_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "json/json_segments.h"

/* A state kept for the picture: a copy of the heap and its blocks' categories. */
typedef struct seg_kept {
    ms_heap *heap;
    uint8_t *block_category; /* NULL when the categories could not be found */
    char title[256];
} seg_kept;

typedef struct seg_query {
    int device;              /* -1: every device in use */
    const seg_instant *at;   /* none: the peak and the end */
    size_t n_at;
    int top;                 /* segments the text lists */
    FILE *text;              /* print each instant's text here as it is built (the JSON
                              * then keeps none of them); NULL: keep them for --json */
    /* The picture's states: the first max_keep instants of the first device of the first
     * file (kept NULL: no picture). */
    seg_kept *kept;
    size_t max_keep, n_kept;
    size_t n_wanted;         /* instants there were to draw, kept or not */
    bool keep_done;          /* the drawn device is past */
    const char *kept_path;   /* its file */
    int kept_device;
    /* The picture (cmd_segments.c): where, and how its blocks are coloured. */
    const char *out;
    bool by_site;
    bool drawn;
    /* While a file is built: its path, and whether its device now built is drawn. */
    const char *path;
    bool draw;
} seg_query;

/* {"path", "devices": [{"device", "events", "has_times", "at": [...]}]} for one file
 * (segments_snapshot_json), its text printed as it goes when q->text is set; NULL with
 * err filled on failure (a bad --event names the file's range). */
cJSON *segments_file_json(const char *path, const ms_snapshot *s, seg_query *q, ms_error *err);

/* The text of one instant object (at[] element). */
void segments_print_instant(FILE *out, const cJSON *at, int top);

#endif
