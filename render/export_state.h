/* The view page's export state (chart_export.c) and its tables (export_tables.c): the
 * frames, stacks, sites, allocations and colours the tiles refer to by local id, written
 * once after the pyramid. Private to render/. */
#ifndef MEMSNAP_EXPORT_STATE_H
#define MEMSNAP_EXPORT_STATE_H

#include "chart_export.h"
#include "chart_impl.h"
#include "export_text.h"

typedef struct exporter {
    const msr_chart_source *src;
    const msr_chart_export_opts *o;
    msr__str_table st;
    /* Allocations that some band shows: global allocs[] index -> local id + 1. */
    uint32_t *alloc_local;
    size_t *alloc_of;       /* local id -> global index */
    size_t n_alloc_local, cap_alloc_local;
    /* Stacks and frames the allocations and site bands point at. */
    uint32_t *stack_local;  /* stack id -> local + 1 */
    uint32_t *stack_of;
    size_t n_stacks, cap_stacks, n_stack_ids;
    uint32_t *frame_local;  /* frame id -> local + 1 */
    uint32_t *frame_of;
    size_t n_frames, cap_frames, n_frame_ids;
    uint32_t *site_stack;   /* site frame id -> the stack of its largest allocation */
    /* Site frame id -> its label's string id + 1 (0: not yet; the last slot: no site),
     * so each site is formatted once, not once per allocation and again in the tables. */
    int64_t *site_text;
    size_t stack_varints;   /* frame references the stacks table will hold */
    int64_t t0;
    bool bad;
    msr__vbuf v;
    msr__vbuf runs; /* one band's heights, before their count */
    /* Colour text ids by 24-bit colour: each band of each window names its colour, and
     * the text is the same every time (open addressing, key + 1, 0 empty). */
    uint32_t *colour_key;
    int64_t *colour_id;
    size_t n_colours, colour_slots;
} exporter;

/* The string id of a colour's text, made once per colour. */
int64_t msr__exp_colour_id(exporter *x, msr_chart_rgb c);
/* Forgets the cached colours (the strings they name were dropped). */
void msr__exp_colours_forget(exporter *x);

/* Local ids (-1: none) of what the page's tables will hold: a frame, a stack, a site's
 * label (formatted once per site), an allocation (by its global allocs[] index). */
int64_t msr__exp_frame_ref(exporter *x, uint32_t frame);
int64_t msr__exp_stack_ref(exporter *x, uint32_t stack);
int64_t msr__exp_site_label(exporter *x, uint32_t stack);
int64_t msr__exp_alloc_ref(exporter *x, size_t global);

/* The tables the bands refer to: allocations, stacks, frames, strings. */
void msr__exp_write_tables(exporter *x, msr__sbuf *b);
/* For a site band's stack panel: each site's largest allocation speaks for it. */
int msr__exp_site_stacks(exporter *x, ms_error *err);

/* What the tables will cost once written (chart_export.c). */
size_t msr__exp_tables_estimate(const exporter *x);

/* The allocator states at the options' instants (export_states.c) as `,"states":{...}`
 * into b, within `budget` bytes; *n_out gets how many were embedded. */
int msr__exp_states(exporter *x, msr__sbuf *b, size_t budget, size_t *n_out, ms_error *err);

#endif
