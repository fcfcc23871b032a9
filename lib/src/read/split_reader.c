/* Reading one long trace with two threads.
 *
 * Nearly all of a large snapshot is one device's trace list, pickled as batches of
 * 1000 entries: MARK entry... APPENDS. Once the VM has learnt the entries' shape, a second
 * thread finds a batch boundary halfway through the rest of the input and reads the
 * batches from there, while the VM reads up to that boundary. The second thread cannot
 * know what the memo holds at its start (every MEMOIZE before it counts), so it keeps
 * its own ids and records memo references it cannot settle as raw indexes. When the VM
 * arrives at the boundary it checks everything the serial reading would have checked,
 * maps the ids into its own tables, appends the events and memo entries in order and
 * continues after them: the snapshot is the same, byte for byte, as a one-thread read.
 * Anything the second thread does not understand ends its part there, and anything the
 * hand-over cannot prove equal to the serial reading makes the VM read that part
 * itself. When the VM reaches the boundary while the thread still has a long way to go,
 * the VM reads the back half of what is left the same way (the thread stops there), and
 * the two parts are handed over in order. When the thread is done first and the VM still
 * has a long way to the boundary, the thread reads the back half of that too (steal).
 *
 * This file reads a part; split_thread.c starts, steals and stops the thread, and
 * split_handover.c hands parts over to the VM (split_internal.h between them). All three
 * see the VM only through read/vm_iface.h.
 *
 *
 * The thread reads what Python's pickler writes for trace entries: entries of the learnt
 * shape whose values are integers, strings and memo references, with inline frames
 * lists of frame dicts and memo references. It gives up at the first batch holding
 * anything else (BINPUT, a memoized reference, a huge batch), and the VM reads from
 * there. What the VM would have known and the thread cannot, it records:
 *  - memo references past the memo it was given: raw indexes, settled at hand-over;
 *  - strings, frames, stacks and streams it meets: its own ids, mapped at hand-over in
 *    the order the VM would have given them ids;
 *  - the memo entries it makes, in order, so they are appended after the VM's. */
#include "split_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pickle_bytes.h"

#define MAX_BATCH 65536      /* Python writes 1000 per APPENDS */
#define SCRATCH_MAX 4096
#define SPAN_SLOTS 1024
#define SPAN_MAX 2048
/* Mapped pages behind a part's reader are handed back in steps of this much: half the
 * VM's step, as up to three readers (the VM, the thread, the VM's part) hold some. */
#define PART_RELEASE_STEP ((size_t)1 << 20)
/* The hand-over point is searched for in this much input after the midpoint. */
#define SEARCH_WINDOW ((size_t)8 << 20)

/* A frames list's bytes between MARK and APPENDS, with the stack they gave (as the VM's
 * span cache; here no memo entry ever changes, so a span always means the same). */
typedef struct split_span {
    uint64_t hash;
    uint32_t len, cap; /* len 0: empty slot */
    uint32_t stack;
    int64_t max_defer; /* largest deferred index among its frames, -1 none */
    uint32_t next;     /* slot + 1 of the span that followed this one last time; 0: none */
    uint8_t *bytes;
} split_span;

/* As the VM does (pickle_vm.c, span_guess): the span that followed this one last time
 * is tried first, with one compare of the bytes. p is just after the list's MARK. */
static split_span *span_guess(split_worker *w, const uint8_t *p, const uint8_t *end)
{
    if (!w->span_prev)
        return NULL;
    uint32_t next = w->spans[w->span_prev - 1].next;
    if (!next)
        return NULL;
    split_span *g = &w->spans[next - 1];
    if (!g->len || end - p <= (ptrdiff_t)g->len + 8 || p[g->len] != 'e' ||
        memcmp(g->bytes, p, g->len) != 0)
        return NULL;
    return g;
}

static void span_follow(split_worker *w, const split_span *e)
{
    uint32_t slot = e ? (uint32_t)(e - w->spans) + 1 : 0;
    if (w->span_prev)
        w->spans[w->span_prev - 1].next = slot;
    w->span_prev = slot;
}

/* ------------------------------------------------------------------ the thread's tables */

static bool add_def_chunk(split_worker *w)
{
    size_t c = w->ndefchunks;
    if (!ms__grow((void **)&w->defs, &w->defchunks_cap, c + 1, sizeof *w->defs) ||
        !(w->defs[c] = chunk_alloc(DEFS_BYTES)))
        return false;
    w->ndefchunks++;
    return true;
}

/* Appends a memo entry; *slot (when asked) lets the caller fill it in later. */
static inline bool add_def(split_worker *w, uint32_t v, uint32_t **slot)
{
    size_t c = (size_t)(w->n_defs / CHUNK_DEFS);
    if (MS_UNLIKELY(c == w->ndefchunks) && !add_def_chunk(w))
        return false;
    uint32_t *at = &w->defs[c][w->n_defs % CHUNK_DEFS];
    *at = v;
    if (slot)
        *slot = at;
    w->n_defs++;
    return true;
}

static uint64_t stack_hash_of(const void *ctx, size_t id)
{
    const split_worker *w = ctx;
    return ids_hash(w->stack_refs + w->stack_start[id], w->stack_start[id + 1] - w->stack_start[id]);
}

/* This thread's id of a stack (n > 0 frame references), by content. */
static bool intern_local_stack(split_worker *w, const uint32_t *refs, size_t n, uint32_t *out)
{
    if (w->n_stacks == 0 && !w->stack_start) {
        if (!ms__grow((void **)&w->stack_start, &w->stack_start_cap, 1, sizeof *w->stack_start))
            return false;
        w->stack_start[0] = 0;
    }
    if ((w->n_stacks + 1) * 2 > w->stack_nslots &&
        !ms__id_table_rehash(&w->stack_slots, &w->stack_nslots, 1024, w->n_stacks, stack_hash_of, w))
        return false;
    size_t mask = w->stack_nslots - 1, j = (size_t)ids_hash(refs, n) & mask;
    for (; w->stack_slots[j]; j = (j + 1) & mask) {
        size_t id = w->stack_slots[j] - 1;
        size_t len = w->stack_start[id + 1] - w->stack_start[id];
        if (len == n && memcmp(w->stack_refs + w->stack_start[id], refs, n * sizeof *refs) == 0) {
            *out = (uint32_t)id;
            return true;
        }
    }
    if (w->n_stacks >= GLOBAL_ID_LIMIT ||
        !ms__grow((void **)&w->stack_refs, &w->stack_refs_cap, w->n_stack_refs + n,
                  sizeof *w->stack_refs) ||
        !ms__grow((void **)&w->stack_start, &w->stack_start_cap, w->n_stacks + 2,
                  sizeof *w->stack_start))
        return false;
    memcpy(w->stack_refs + w->n_stack_refs, refs, n * sizeof *refs);
    w->n_stack_refs += n;
    w->stack_start[w->n_stacks + 1] = w->n_stack_refs;
    w->stack_slots[j] = (uint32_t)w->n_stacks + 1;
    *out = (uint32_t)w->n_stacks++;
    return true;
}

static uint64_t frame_hash(const local_frame *f)
{
    return mix64(mix64((uint64_t)f->name << 32 | f->filename) ^ (uint64_t)f->line);
}

static uint64_t frame_hash_of(const void *ctx, size_t id)
{
    const split_worker *w = ctx;
    return frame_hash(&w->frames[id]);
}

/* This thread's id of a frame, by content: PyTorch writes a fresh dict for every frame
 * of every C++ traceback, and the VM keeps one frame per content too. */
static bool intern_local_frame(split_worker *w, const local_frame *f, uint32_t *out)
{
    if ((w->n_frames + 1) * 2 > w->frame_nslots &&
        !ms__id_table_rehash(&w->frame_slots, &w->frame_nslots, 1024, w->n_frames, frame_hash_of, w))
        return false;
    size_t mask = w->frame_nslots - 1, j = (size_t)frame_hash(f) & mask;
    for (; w->frame_slots[j]; j = (j + 1) & mask) {
        const local_frame *g = &w->frames[w->frame_slots[j] - 1];
        if (g->name == f->name && g->filename == f->filename && g->line == f->line) {
            *out = w->frame_slots[j] - 1;
            return true;
        }
    }
    if (w->n_frames >= GLOBAL_ID_LIMIT ||
        !ms__grow((void **)&w->frames, &w->frames_cap, w->n_frames + 1, sizeof *w->frames))
        return false;
    w->frames[w->n_frames] = *f;
    w->frame_slots[j] = (uint32_t)w->n_frames + 1;
    *out = (uint32_t)w->n_frames++;
    return true;
}

static bool local_stream(split_worker *w, uint64_t raw, uint16_t *out)
{
    if (w->n_streams && w->streams[w->last_stream] == raw) {
        *out = w->last_stream;
        return true;
    }
    for (size_t i = 0; i < w->n_streams; i++) {
        if (w->streams[i] == raw) {
            *out = w->last_stream = (uint16_t)i;
            return true;
        }
    }
    if (w->n_streams >= UINT16_MAX ||
        !ms__grow((void **)&w->streams, &w->streams_cap, w->n_streams + 1, sizeof *w->streams))
        return false;
    w->streams[w->n_streams] = raw;
    *out = w->last_stream = (uint16_t)w->n_streams++;
    return true;
}

static const char *const KNOWN_TEXT[] = {
#define MS_X_KNOWN_TEXT(id, text) text,
    MS_KNOWN_STRINGS(MS_X_KNOWN_TEXT)
#undef MS_X_KNOWN_TEXT
};

/* Their lengths, not strlen'd again for every entry. */
static const size_t KNOWN_LEN[] = {
#define MS_X_KNOWN_LEN(id, text) sizeof(text) - 1,
    MS_KNOWN_STRINGS(MS_X_KNOWN_LEN)
#undef MS_X_KNOWN_LEN
};

/* The action a string of this thread's names: the VM's known strings have fixed ids, so
 * equal text means the id the VM would have found. */
static int action_of_text(const split_worker *w, uint32_t local)
{
    const char *s = ms__strtab_get(&w->strings, local);
    size_t n = w->strings.lengths[local];
    for (int id = S_ACT_ALLOC; id <= S_ACT_SNAPSHOT; id++)
        if (KNOWN_LEN[id] == n && memcmp(KNOWN_TEXT[id], s, n) == 0)
            return action_of_id((uint64_t)id);
    return MS_ACT_OTHER;
}

/* ------------------------------------------------------------------ reading entries */

static inline bool memo_ref(const uint8_t *p, uint64_t *idx, size_t *used)
{
    if (p[0] == 'h') {
        *idx = p[1];
        *used = 2;
        return true;
    }
    if (p[0] == 'j') {
        *idx = rd_u32(p + 1);
        *used = 5;
        return true;
    }
    return false;
}

static inline void note_deferred(split_worker *w, uint64_t idx)
{
    int64_t ahead = (int64_t)idx - (int64_t)w->n_defs;
    if (ahead > w->max_ahead)
        w->max_ahead = ahead;
}

/* SHORT_BINUNICODE or BINUNICODE, [MEMOIZE], at *pp: this thread's id of the string. */
static bool read_string(split_worker *w, const uint8_t **pp, const uint8_t *end, uint32_t *out)
{
    const uint8_t *p = *pp;
    size_t head = p[0] == 0x8c ? 2 : 5;
    if (end - p < 5)
        return false;
    size_t n = head == 2 ? p[1] : rd_u32(p + 1);
    if ((size_t)(end - p) - head < n + 1 || n > w->max_string)
        return false;
    const uint8_t *text = p + head;
    uint32_t id = w->last_str;
    if (id == UINT32_MAX || w->strings.lengths[id] != n ||
        memcmp(ms__strtab_get(&w->strings, id), text, n) != 0) {
        if (!ms__utf8_valid(text, n))
            return false;
        id = ms__strtab_intern(&w->strings, (const char *)text, n);
        if (id == UINT32_MAX || id >= GLOBAL_ID_LIMIT)
            return false;
        w->last_str = id;
    }
    p = text + n;
    if (p[0] == 0x94) {
        if (!add_def(w, (uint32_t)VMAKE(T_STR, id), NULL))
            return false;
        p++;
    }
    *pp = p;
    *out = id;
    return true;
}

/* A value under a key memsnap does not read: the kinds the VM's fast reader takes. */
static bool skip_value(split_worker *w, const uint8_t **pp, const uint8_t *end)
{
    const uint8_t *p = *pp;
    uint64_t idx;
    size_t used;
    if (memo_ref(p, &idx, &used)) {
        if (p[used] == 0x94 || idx >= w->pub_len)
            return false;
        uint32_t enc = w->pub[idx];
        if (VTAG(enc) == T_OBJ || enc == (uint32_t)VMAKE(T_SPC, SPC_BUILDING))
            return false;
        *pp = p + used;
        return true;
    }
    switch (p[0]) {
    case 0x8c:
    case 'X': {
        uint32_t id;
        return read_string(w, pp, end, &id);
    }
    case 'K': used = 2; break;
    case 'M': used = 3; break;
    case 'J': used = 5; break;
    case 'N':
    case 0x88:
    case 0x89: used = 1; break;
    case 0x8a: {
        size_t n = p[1];
        if (n == 0 || n > 8)
            return false;
        uint64_t u = load_le64(p + 2);
        if (n < 8) {
            u &= ((uint64_t)1 << (8 * n)) - 1;
            if (p[1 + n] & 0x80)
                u |= ~(uint64_t)0 << (8 * n);
        }
        if ((int64_t)u < VINT_MIN || (int64_t)u > VINT_MAX)
            return false;
        used = 2 + n;
        break;
    }
    default:
        return false;
    }
    if (p[used] == 0x94) /* the VM's fast reader leaves memoized scalars to the VM */
        return false;
    *pp = p + used;
    return true;
}

/* A compile_context or user_metadata value at *pp that is PyTorch's default ('N/A', ""),
 * or no string at all (ignored, as the VM does). A real value is left to the VM: such
 * traces are short (a recording with compile_context=True), so this thread only has to
 * read the common case. */
static bool default_context(split_worker *w, const uint8_t **pp, const uint8_t *end, uint32_t key)
{
    const uint8_t *p = *pp;
    uint64_t idx;
    size_t used;
    const uint32_t def = key == S_COMPILE_CONTEXT ? S_NA : S_EMPTY;
    if (memo_ref(p, &idx, &used)) {
        if (idx < w->pub_len && VTAG(w->pub[idx]) == T_STR && VPAY(w->pub[idx]) != def)
            return false;
        return skip_value(w, pp, end);
    }
    if (p[0] == 0x8c || p[0] == 'X') {
        uint32_t id;
        if (!read_string(w, pp, end, &id))
            return false;
        uint32_t *known = &w->default_id[key == S_COMPILE_CONTEXT ? 0 : 1];
        if (id == *known)
            return true;
        if (w->strings.lengths[id] != KNOWN_LEN[def] ||
            memcmp(ms__strtab_get(&w->strings, id), KNOWN_TEXT[def], KNOWN_LEN[def]) != 0)
            return false;
        *known = id;
        return true;
    }
    return skip_value(w, pp, end);
}

/* A string reference for a frame's name or filename at *pp: None, a new string, or a
 * memo reference (settled at hand-over unless the given memo has it). */
static bool frame_string(split_worker *w, const uint8_t **pp, const uint8_t *end, uint32_t *out)
{
    const uint8_t *p = *pp;
    uint64_t idx;
    size_t used;
    if (p[0] == 'N') {
        *out = MS_NO_STRING;
        *pp = p + 1;
        return p[1] != 0x94;
    }
    if (p[0] == 0x8c || p[0] == 'X') {
        uint32_t id;
        if (!read_string(w, pp, end, &id))
            return false;
        *out = REF_LOCAL | id;
        return true;
    }
    if (!memo_ref(p, &idx, &used) || p[used] == 0x94)
        return false;
    uint32_t enc = idx < w->pub_len ? w->pub[idx] : 0;
    if (idx < w->pub_len && VTAG(enc) == T_STR && VPAY(enc) < GLOBAL_ID_LIMIT) {
        *out = (uint32_t)VPAY(enc);
    } else {
        if (idx > REF_ID_MASK)
            return false;
        note_deferred(w, idx);
        *out = REF_DEFER | (uint32_t)idx;
    }
    *pp = p + used;
    return true;
}

/* A frame dict: EMPTY_DICT MEMOIZE MARK (key value)* SETITEMS, keys from the given memo.
 * Its memo entry is reserved before its contents', as the VM does. */
static bool frame_dict(split_worker *w, const uint8_t **pp, const uint8_t *end, uint32_t *out)
{
    const uint8_t *p = *pp;
    uint32_t *slot;
    if (end - p < 3 || p[1] != 0x94 || p[2] != '(' || !add_def(w, 0, &slot))
        return false;
    p += 3;
    local_frame f = {MS_NO_STRING, MS_NO_STRING, MS_LINE_UNKNOWN};
    for (int pairs = 0; p < end && p[0] != 'u'; pairs++) {
        uint64_t idx;
        size_t used;
        /* The VM's fast reader takes up to 8 pairs; keys are strings it already has. */
        if (pairs == 8 || end - p < 16 || !memo_ref(p, &idx, &used) || p[used] == 0x94 ||
            idx >= w->pub_len || VTAG(w->pub[idx]) != T_STR)
            return false;
        uint64_t key = VPAY(w->pub[idx]);
        p += used;
        int64_t line;
        if (key == S_NAME || key == S_FILENAME) {
            if (!frame_string(w, &p, end, key == S_NAME ? &f.name : &f.filename))
                return false;
        } else if (key == S_LINE) {
            if (p[0] == 'N') {
                f.line = MS_LINE_UNKNOWN; /* None: no line, as the VM reads it */
                used = 1;
            } else if (!(used = fast_int(p, &line)) || p[0] == 0x88 || p[0] == 0x89) {
                return false;
            } else {
                f.line = line < 0 ? MS_LINE_UNKNOWN : line;
            }
            if (p[used] == 0x94)
                return false;
            p += used;
        } else if (!skip_value(w, &p, end)) {
            return false;
        }
    }
    uint32_t id;
    if (p >= end || !intern_local_frame(w, &f, &id))
        return false;
    *out = REF_LOCAL | id;
    *slot = (uint32_t)VMAKE(T_CONV, (uint64_t)id << 1);
    *pp = p + 1;
    return true;
}

/* One frame of an inline frames list: a frame dict or a memo reference. */
static bool frame_ref(split_worker *w, const uint8_t **pp, const uint8_t *end, uint32_t *out,
                      int64_t *max_defer)
{
    const uint8_t *p = *pp;
    uint64_t idx;
    size_t used;
    if (p < end && p[0] == '}')
        return frame_dict(w, pp, end, out);
    if (end - p < 6 || !memo_ref(p, &idx, &used) || p[used] == 0x94)
        return false;
    uint32_t enc = idx < w->pub_len ? w->pub[idx] : 0;
    if (idx < w->pub_len && VTAG(enc) == T_CONV && !(VPAY(enc) & 1)) {
        *out = (uint32_t)(VPAY(enc) >> 1);
    } else {
        if (idx > REF_ID_MASK)
            return false;
        *out = REF_DEFER | (uint32_t)idx;
        note_deferred(w, idx);
        if ((int64_t)idx > *max_defer)
            *max_defer = (int64_t)idx;
    }
    *pp = p + used;
    return true;
}

static bool grow_span(split_span *e, size_t n)
{
    uint8_t *b = realloc(e->bytes, n);
    if (!b)
        return false; /* not remembered: only slower */
    e->bytes = b;
    e->cap = (uint32_t)n;
    return true;
}

/* An inline frames list at *pp (EMPTY_LIST): its stack reference. */
static bool read_frames(split_worker *w, const uint8_t **pp, const uint8_t *end,
                        uint32_t *stack)
{
    const uint8_t *p = *pp + 1;
    uint32_t *slot = NULL;
    if (p < end && p[0] == 0x94) {
        if (!add_def(w, 0, &slot))
            return false;
        p++;
    }
    uint32_t refs[MAX_FRAMES];
    size_t n = 0;
    int64_t max_defer = -1;
    if (p < end && p[0] == '(') {
        p++;
        uint64_t h = 0;
        split_span *e = span_guess(w, p, end);
        size_t span = e ? e->len
                        : end - p > (ptrdiff_t)SPAN_MAX + 8 ? ref_run_length(p, SPAN_MAX) : 0;
        if (!e && span >= 2) {
            h = bytes_hash(p, span);
            e = &w->spans[h & (SPAN_SLOTS - 1)];
            if (!(e->len == span && e->hash == h && memcmp(e->bytes, p, span) == 0))
                goto miss;
        }
        if (e) {
            if (e->max_defer >= 0)
                note_deferred(w, (uint64_t)e->max_defer);
            *stack = e->stack;
            p += span + 1;
            span_follow(w, e);
            goto done;
        }
    miss:
        while (p < end && p[0] != 'e') {
            if (n == MAX_FRAMES || !frame_ref(w, &p, end, &refs[n], &max_defer))
                return false;
            n++;
        }
        if (p >= end)
            return false;
        p++;
        if (n == 0) {
            *stack = MS_NO_STACK;
        } else {
            uint32_t id;
            if (!intern_local_stack(w, refs, n, &id))
                return false;
            *stack = REF_LOCAL | id;
        }
        if (e && (e->cap >= span || grow_span(e, span))) {
            e->hash = h;
            e->len = (uint32_t)span;
            e->stack = *stack;
            e->max_defer = max_defer;
            e->next = 0;
            memcpy(e->bytes, p - span - 1, span);
            span_follow(w, e);
        } else {
            span_follow(w, NULL);
        }
    } else if (p < end && (p[0] == 'h' || p[0] == 'j' || p[0] == '}')) {
        if (!frame_ref(w, &p, end, &refs[0], &max_defer) || p >= end || p[0] != 'a')
            return false;
        p++;
        uint32_t id;
        if (!intern_local_stack(w, refs, 1, &id))
            return false;
        *stack = REF_LOCAL | id;
    } else {
        *stack = MS_NO_STACK;
    }
done:
    if (slot)
        *slot = *stack == MS_NO_STACK ? (uint32_t)VMAKE(T_SPC, SPC_NONE)
                                      : (uint32_t)VMAKE(T_CONV, (uint64_t)(*stack & REF_ID_MASK) << 1 | 1);
    *pp = p;
    return true;
}

static bool read_action(split_worker *w, const uint8_t **pp, const uint8_t *end,
                        ev_fields *f)
{
    const uint8_t *p = *pp;
    uint64_t idx;
    size_t used;
    if (memo_ref(p, &idx, &used)) {
        if (p[used] == 0x94)
            return false;
        if (idx < w->pub_len) {
            uint32_t enc = w->pub[idx];
            if (VTAG(enc) != T_STR)
                return false;
            f->action = action_of_id(VPAY(enc));
        } else {
            size_t slot = 0;
            while (slot < w->n_dact && w->dact[slot] != idx)
                slot++;
            if (slot == MAX_DEFERRED_ACTIONS || idx > REF_ID_MASK)
                return false;
            if (slot == w->n_dact)
                w->dact[w->n_dact++] = (uint32_t)idx;
            note_deferred(w, idx);
            f->action = (int)(ACTION_DEFERRED | slot);
        }
        *pp = p + used;
        return true;
    }
    if (p[0] != 0x8c)
        return false;
    uint32_t id;
    if (!read_string(w, pp, end, &id))
        return false;
    f->action = action_of_text(w, id);
    return true;
}

/* EMPTY_DICT MEMOIZE MARK (key value)* SETITEMS of the learnt shape, at p; *after is set
 * past it. Values go to f. */
static bool read_entry(split_worker *w, const uint8_t *p, const uint8_t *end, ev_fields *f,
                       const uint8_t **after)
{
    if (end - p < 3 || p[0] != '}' || p[1] != 0x94 || p[2] != '(')
        return false;
    p += 3;
    if (!add_def(w, (uint32_t)VMAKE(T_SPC, SPC_CONSUMED), NULL))
        return false;
    *f = (ev_fields)EV_FIELDS_EMPTY;
    const entry_shape *sh = &w->shape;
    for (size_t i = 0; i < sh->n; i++) {
        /* 16 bytes cover a key (5) and any value read without a length check (11). */
        if (end - p < 16 || (load_le64(p) & sh->mask[i]) != sh->want[i])
            return false;
        p += sh->len[i];
        size_t used;
        uint64_t idx;
        switch (sh->key[i]) {
        case S_ACTION:
            if (!read_action(w, &p, end, f))
                return false;
            break;
        case S_ADDR:
        case S_DEVICE_FREE:
        case S_SIZE:
        case S_TIME_US:
        case S_STREAM:
            if (!(used = ev_int_field(f, sh->key[i], p)))
                return false;
            p += used;
            break;
        case S_FRAMES:
            if (memo_ref(p, &idx, &used)) {
                if (p[used] == 0x94)
                    return false;
                uint32_t enc = idx < w->pub_len ? w->pub[idx] : 0;
                if (idx < w->pub_len && VTAG(enc) == T_CONV && (VPAY(enc) & 1)) {
                    f->stack = (uint32_t)(VPAY(enc) >> 1);
                } else if (idx < w->pub_len && enc == (uint32_t)VMAKE(T_SPC, SPC_NONE)) {
                    f->stack = MS_NO_STACK;
                } else {
                    if (idx > REF_ID_MASK)
                        return false;
                    note_deferred(w, idx);
                    f->stack = REF_DEFER | (uint32_t)idx;
                }
                p += used;
            } else if (p[0] == ']') {
                if (!read_frames(w, &p, end, &f->stack))
                    return false;
            } else {
                return false;
            }
            break;
        case S_COMPILE_CONTEXT:
        case S_USER_METADATA:
            if (!default_context(w, &p, end, sh->key[i]))
                return false;
            break;
        default:
            if (!skip_value(w, &p, end))
                return false;
            break;
        }
    }
    if (p >= end || p[0] != 'u' || f->action < 0 || !ev_fields_ok(f))
        return false;
    *after = p + 1;
    return true;
}

/* An entry with a FRAME opcode inside (Python may start a frame between any two
 * opcodes): copied without it into a scratch buffer and read from there. The copy stops
 * at the SETITEMS closing the entry; opcodes outside the common case end it. */
static bool read_entry_framed(split_worker *w, const uint8_t *p, const uint8_t *end,
                              ev_fields *f, const uint8_t **after)
{
    uint8_t buf[SCRATCH_MAX + 32];
    if (end - p < 3 || p[0] != '}' || p[1] != 0x94 || p[2] != '(')
        return false;
    memcpy(buf, p, 3);
    p += 3;
    size_t n = 3;
    int depth = 1;
    do {
        if (p >= end)
            return false;
        size_t len;
        switch (p[0]) {
        case '}': case ']': case 'N': case 0x88: case 0x89: case 0x94: case 'a': len = 1; break;
        case '(': len = 1; depth++; break;
        case 'u': case 'e': len = 1; depth--; break;
        case 'h': case 'K': len = 2; break;
        case 'M': len = 3; break;
        case 'j': case 'J': len = 5; break;
        case 0x8a: case 0x8c: len = (size_t)(end - p) >= 2 ? 2 + (size_t)p[1] : SIZE_MAX; break;
        case 'X': len = (size_t)(end - p) >= 5 ? 5 + (size_t)rd_u32(p + 1) : SIZE_MAX; break;
        case 0x95:
            if (end - p < 9)
                return false;
            p += 9;
            continue;
        default:
            return false;
        }
        if (len > (size_t)(end - p) || len > SCRATCH_MAX - n)
            return false;
        memcpy(buf + n, p, len);
        n += len;
        p += len;
    } while (depth > 0);
    memset(buf + n, 0, 32); /* lookahead of the reader's bounds checks, never a value */
    const uint8_t *in_buf;
    if (!read_entry(w, buf, buf + n + 32, f, &in_buf) || in_buf != buf + n)
        return false;
    *after = p;
    return true;
}

static bool emit(split_worker *w, const ev_fields *f)
{
    size_t c = (size_t)(w->n_events / CHUNK_EVENTS), i = (size_t)(w->n_events % CHUNK_EVENTS);
    if (c == w->nchunks) {
        if (!ms__grow((void **)&w->chunks, &w->chunks_cap, c + 1, sizeof *w->chunks))
            return false;
        if (!(w->chunks[c] = chunk_alloc(sizeof **w->chunks)))
            return false;
        w->nchunks++;
    }
    uint16_t stream;
    if (!local_stream(w, f->stream_raw, &stream))
        return false;
    ev_chunk *ch = w->chunks[c];
    ch->action[i] = (uint8_t)f->action;
    ch->addr[i] = f->addr;
    ch->size[i] = f->size;
    ch->time_us[i] = f->time_us;
    ch->stack[i] = f->stack;
    ch->stream[i] = stream;
    w->n_events++;
    return true;
}

static void mark_done(split_worker *w, const uint8_t *p)
{
    w->done = (split_mark){p, w->n_events, w->n_defs, w->n_dact, w->strings.count, w->n_frames,
                           w->n_stacks, w->n_streams, w->max_batch, w->max_ahead};
}

/* As the VM does with its part (ms__input_release): mapped pages behind are handed
 * back. */
static void release_behind(split_worker *w, const uint8_t *p)
{
    if (!w->release_pages || (size_t)(p - w->released) < PART_RELEASE_STEP)
        return;
    uintptr_t to = ((uintptr_t)p - w->page) & ~(uintptr_t)(w->page - 1);
    if (to > (uintptr_t)w->released) {
        (void)madvise((void *)(uintptr_t)w->released, to - (uintptr_t)w->released, MADV_DONTNEED);
        w->released = (const uint8_t *)to;
    }
}

static const uint8_t *skip_frames(const uint8_t *p, const uint8_t *end)
{
    while (end - p >= 9 && p[0] == 0x95)
        p += 9;
    return p;
}

/* Reads whole batches from w->start until something it does not read, the end of the
 * list, or the batch boundary stop_at. */
void ms__split_read_part(split_worker *w)
{
    const uint8_t *p = w->start, *end = w->end;
    mark_done(w, p);
    while (!atomic_load_explicit(&w->cancel, memory_order_relaxed) &&
           !(w->parent && atomic_load_explicit(&w->parent->steal_off, memory_order_relaxed))) {
        release_behind(w, p);
        if (p >= end || p[0] != '(' || p == atomic_load_explicit(&w->stop_at, memory_order_acquire))
            break;
        p++;
        size_t count = 0;
        bool ok = true;
        for (;;) {
            p = skip_frames(p, end);
            if (p < end && p[0] == 'e') {
                p++;
                break;
            }
            ev_fields f;
            const uint8_t *after;
            /* What an entry read in vain leaves behind (its ids stay: they are met
             * again, in the same order, when it is read from the scratch copy). */
            uint64_t defs_undo = w->n_defs;
            int64_t ahead_undo = w->max_ahead;
            if (p >= end || p[0] != '}' || ++count > MAX_BATCH) {
                ok = false;
                break;
            }
            if (!read_entry(w, p, end, &f, &after)) {
                w->n_defs = defs_undo;
                w->max_ahead = ahead_undo;
                if (!read_entry_framed(w, p, end, &f, &after)) {
                    ok = false;
                    break;
                }
            }
            if (!emit(w, &f)) {
                ok = false;
                break;
            }
            p = after;
        }
        if (!ok)
            break;
        if (count > w->max_batch)
            w->max_batch = count;
        p = skip_frames(p, end);
        mark_done(w, p);
        atomic_store_explicit(&w->progress, p, memory_order_release);
    }
    /* Back to the last complete batch. */
    w->n_events = w->done.events;
    w->n_defs = w->done.defs;
    w->n_dact = w->done.dact;
    w->max_ahead = w->done.max_ahead;
    w->max_batch = w->done.max_batch;
    atomic_store_explicit(&w->finished, true, memory_order_release);
}

/* ------------------------------------------------------------------ parts */

void ms__split_part_free(split_worker *w)
{
    split_worker *stolen = atomic_load(&w->steal);
    if (stolen)
        ms__split_part_free(stolen); /* it borrows w's memo copy */
    for (size_t i = 0; i < w->nchunks; i++)
        chunk_free(w->chunks[i], sizeof **w->chunks);
    free(w->chunks);
    for (size_t i = 0; i < w->ndefchunks; i++)
        chunk_free(w->defs[i], DEFS_BYTES);
    free(w->defs);
    if (!w->borrowed_pub)
        free(w->pub);
    ms__strtab_free(&w->strings);
    MS__FREE_ALL(w->frames, w->frame_slots, w->stack_refs, w->stack_start, w->stack_slots,
                 w->streams);
    if (w->spans)
        for (size_t i = 0; i < SPAN_SLOTS; i++)
            free(w->spans[i].bytes);
    free(w->spans);
    free(w);
}

/* A batch boundary at or after `from`: APPENDS, any FRAMEs, then MARK and an entry that
 * starts with the shape's first key. Where the bytes only look like one, the VM never
 * stops there or the hand-over refuses it; either way the VM reads everything. */
const uint8_t *ms__split_find_boundary(const uint8_t *lo, const uint8_t *from,
                                       const uint8_t *end, const entry_shape *sh)
{
    uint8_t pat[4 + 5] = {'(', '}', 0x94, '('};
    memcpy(pat + 4, sh->bytes[0], sh->len[0]);
    size_t plen = 4 + sh->len[0];
    const uint8_t *limit = (size_t)(end - from) > SEARCH_WINDOW ? from + SEARCH_WINDOW : end;
    while (from < limit) {
        const uint8_t *q = memchr(from, '(', (size_t)(limit - from));
        if (!q)
            return NULL;
        if ((size_t)(end - q) >= plen && memcmp(q, pat, plen) == 0 && q - lo >= 10 &&
            (q[-1] == 'e' || (q[-9] == 0x95 && q[-10] == 'e')))
            return q;
        from = q + 1;
    }
    return NULL;
}

/* A part starting at `at` (a MARK opening a batch) with the VM's memo as it is now:
 * copied for a second thread, or borrowed when the VM itself reads the part while its
 * memo stands still. */
split_worker *ms__split_part_new(ms_vm *vm, const uint8_t *at, bool borrow_memo)
{
    const ms_input *in = ms__vm_input(vm);
    size_t memo_len;
    uint64_t memo_gen;
    const uint32_t *memo = ms__vm_memo(vm, &memo_len, &memo_gen, NULL);
    return ms__split_part_with(ms__vm_shape(vm), at, in->end, ms__vm_limits(vm)->max_string,
                               in->map != NULL, memo, memo_len, memo_gen, borrow_memo);
}

split_worker *ms__split_part_with(const entry_shape *shape, const uint8_t *at,
                                  const uint8_t *end, uint64_t max_string, bool release_pages,
                                  const uint32_t *memo, size_t memo_len, uint64_t memo_gen,
                                  bool borrow_memo)
{
    split_worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    ms__strtab_init(&w->strings);
    w->last_str = UINT32_MAX;
    w->default_id[0] = w->default_id[1] = UINT32_MAX;
    w->max_ahead = INT64_MIN;
    w->shape = *shape;
    w->start = at;
    w->end = end;
    w->max_string = max_string;
    w->pub_len = memo_len;
    w->pub_gen = memo_gen;
    w->page = (size_t)sysconf(_SC_PAGESIZE);
    w->release_pages = release_pages;
    /* Not the page the reading before `at` may still touch. */
    w->released = (const uint8_t *)(((uintptr_t)at + 2 * w->page) & ~(uintptr_t)(w->page - 1));
    atomic_init(&w->cancel, false);
    atomic_init(&w->progress, at);
    atomic_init(&w->stop_at, NULL);
    atomic_init(&w->finished, false);
    atomic_init(&w->go, false);
    atomic_init(&w->vm_pos, NULL);
    atomic_init(&w->steal, NULL);
    atomic_init(&w->steal_off, false);
    atomic_init(&w->decided, false);
    w->spans = calloc(SPAN_SLOTS, sizeof *w->spans);
    w->borrowed_pub = borrow_memo;
    if (borrow_memo) {
        w->pub = (uint32_t *)memo; /* read only: the VM's memo stands still meanwhile */
    } else if ((w->pub = malloc((w->pub_len ? w->pub_len : 1) * sizeof *w->pub)) != NULL &&
               w->pub_len) {
        memcpy(w->pub, memo, w->pub_len * sizeof *w->pub);
    }
    if (!w->pub || !w->spans) {
        ms__split_part_free(w);
        return NULL;
    }
    return w;
}
