/* The user's --group NAME=PATTERN rules (chart.h): compiled once with PCRE2, then matched
 * once per distinct frame the allocations' stacks hold, never per allocation or chart.
 *
 * A pattern comes from a CI configuration and the frames from a file nobody checked, so
 * every step is bounded (docs/security.md "Patterns"): the pattern's length, its
 * nesting, the memory its compilation may take and its compiled size; per match the
 * backtracking steps, the depth, the heap and the JIT stack; and per file the frame text
 * all rules read together and the steps beyond a small allowance per frame. Reaching
 * any of them is an error that names the rule and the limit, never a crash (glibc's
 * regexec overflowed its stack on `(|)(\1\1)*`) or a run of minutes. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "render_util.h"
#include "utf8.h"

/* ------------------------------------------------------------------ memory */

/* PCRE2's allocations for one compilation, counted and refused past a ceiling, so no
 * pattern, whatever this build's link size, costs more than MSR_CHART_RULE_COMPILE_MEMORY
 * (a link size of 4 lets `((a{1,255}){1,255}){1,255}` ask for gigabytes). */
typedef struct counted {
    size_t used, cap;
} counted;

typedef union block_head {
    size_t size;
    max_align_t align;
} block_head;

static void *counted_malloc(PCRE2_SIZE size, void *data)
{
    counted *c = data;
    if (size > c->cap - c->used || size > SIZE_MAX - sizeof(block_head))
        return NULL;
    block_head *h = malloc(sizeof *h + size);
    if (!h)
        return NULL;
    h->size = size;
    c->used += size;
    return h + 1;
}

static void counted_free(void *p, void *data)
{
    if (!p)
        return;
    counted *c = data;
    block_head *h = (block_head *)p - 1;
    c->used -= h->size;
    free(h);
}

/* ------------------------------------------------------------------ compiling */

static void cut_pattern(const char *pat, char *buf, size_t cap)
{
    size_t n = strlen(pat);
    if (n < cap) {
        memcpy(buf, pat, n + 1);
        return;
    }
    n = msr__utf8_prefix(pat, n, cap - 4);
    memcpy(buf, pat, n);
    memcpy(buf + n, "...", 4);
}

int msr_chart_group_rules_add(msr_chart_group_rules *rules, const char *text, ms_error *err)
{
    const char *eq = text ? strchr(text, '=') : NULL;
    if (!eq)
        return msr__render_fail(err, MS_ERR_ARG, "--group '%s': expected NAME=REGEX",
                               text ? text : "");
    size_t n = (size_t)(eq - text);
    if (n == 0 || n >= sizeof rules->name[0])
        return msr__render_fail(err, MS_ERR_ARG, "--group '%.80s': the name must be 1 to %zu bytes",
                               text, sizeof rules->name[0] - 1);
    if (rules->n >= MSR_CHART_MAX_RULES)
        return msr__render_fail(err, MS_ERR_ARG, "at most %d --group rules", MSR_CHART_MAX_RULES);
    for (size_t i = 0; i < rules->n; i++)
        if (strlen(rules->name[i]) == n && !memcmp(rules->name[i], text, n))
            return msr__render_fail(err, MS_ERR_ARG, "--group: the name '%.*s' is used twice",
                                   (int)n, text);
    const char *pat = eq + 1;
    size_t len = strlen(pat);
    if (len > MSR_CHART_RULE_MAX_PATTERN)
        return msr__render_fail(err, MS_ERR_LIMIT,
                               "--group '%.*s': the pattern is %zu bytes, over the limit of %d",
                               (int)n, text, len, MSR_CHART_RULE_MAX_PATTERN);

    /* The allocator outlives the compilation: the code frees itself through it. */
    counted *mem = malloc(sizeof *mem);
    if (mem)
        *mem = (counted){0, MSR_CHART_RULE_COMPILE_MEMORY};
    pcre2_general_context *gc =
        mem ? pcre2_general_context_create(counted_malloc, counted_free, mem) : NULL;
    pcre2_compile_context *cc = gc ? pcre2_compile_context_create(gc) : NULL;
    if (!cc) {
        pcre2_general_context_free(gc);
        free(mem);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory");
    }
    pcre2_set_max_pattern_length(cc, MSR_CHART_RULE_MAX_PATTERN);
    pcre2_set_parens_nest_limit(cc, MSR_CHART_RULE_NEST_LIMIT);
    int code = 0;
    PCRE2_SIZE at = 0;
    /* Bytes, never UTF: a frame's text is whatever the file holds, and a (*UTF) in the
     * pattern would make every frame that is not valid UTF-8 an error. */
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, len, PCRE2_NEVER_UTF, &code, &at, cc);
    pcre2_compile_context_free(cc);
    pcre2_general_context_free(gc); /* the code holds a copy of the allocator, not gc */
    if (!re) {
        PCRE2_UCHAR why[160];
        if (pcre2_get_error_message(code, why, sizeof why) < 0)
            snprintf((char *)why, sizeof why, "error %d", code);
        free(mem);
        char shown[96];
        cut_pattern(pat, shown, sizeof shown);
        if (code == PCRE2_ERROR_PATTERN_TOO_LARGE)
            return msr__render_fail(err, MS_ERR_LIMIT,
                                   "--group '%.*s': the pattern compiles to more than %d bytes, "
                                   "the limit (repeats of repeats multiply; PCRE2: %s at byte %zu)",
                                   (int)n, text, MSR_CHART_RULE_MAX_COMPILED, (const char *)why,
                                   (size_t)at);
        if (code == PCRE2_ERROR_PARENTHESES_NEST_TOO_DEEP)
            return msr__render_fail(err, MS_ERR_LIMIT,
                                   "--group '%.*s': the pattern nests parentheses deeper than "
                                   "the limit of %d",
                                   (int)n, text, MSR_CHART_RULE_NEST_LIMIT);
        if (code == PCRE2_ERROR_HEAP_FAILED)
            return msr__render_fail(err, MS_ERR_LIMIT,
                                   "--group '%.*s': the pattern needs more than the %d MiB "
                                   "a pattern may take to compile",
                                   (int)n, text, MSR_CHART_RULE_COMPILE_MEMORY >> 20);
        return msr__render_fail(err, code == PCRE2_ERROR_PATTERN_TOO_COMPLICATED ? MS_ERR_LIMIT
                                                                               : MS_ERR_ARG,
                               "--group '%.*s=%s': bad pattern at byte %zu: %s", (int)n, text,
                               shown, (size_t)at, (const char *)why);
    }
    size_t size = 0;
    if (pcre2_pattern_info(re, PCRE2_INFO_SIZE, &size) != 0 || size > MSR_CHART_RULE_MAX_COMPILED) {
        pcre2_code_free(re);
        free(mem);
        return msr__render_fail(err, MS_ERR_LIMIT,
                               "--group '%.*s': the pattern compiles to %zu bytes, over the "
                               "limit of %d (repeats of repeats multiply)",
                               (int)n, text, size, MSR_CHART_RULE_MAX_COMPILED);
    }
    /* JIT where this build and machine have it; the interpreter otherwise, with the
     * same limits (the JIT's own stack bounds it instead of the depth and heap limits). */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    memcpy(rules->name[rules->n], text, n);
    rules->name[rules->n][n] = '\0';
    rules->code[rules->n] = re;
    rules->mem[rules->n] = mem;
    rules->n++;
    return 0;
}

void msr_chart_group_rules_free(msr_chart_group_rules *rules)
{
    if (!rules)
        return;
    for (size_t i = 0; i < rules->n; i++) {
        pcre2_code_free(rules->code[i]);
        free(rules->mem[i]);
        rules->code[i] = rules->mem[i] = NULL;
    }
    rules->n = 0;
}

/* ------------------------------------------------------------------ matching */

typedef struct matcher {
    const msr_chart_group_rules *rules;
    const ms_snapshot *snap;
    pcre2_match_context *mc;
    pcre2_jit_stack *js;
    pcre2_match_data *md;
    char *text; /* the frame being matched, "file:line function" */
    size_t cap;
    uint64_t text_left;  /* frame bytes all rules may still read */
    uint64_t steps_left; /* backtracking steps beyond the allowances */
} matcher;

static int matcher_init(matcher *m, const msr_chart_group_rules *rules, const ms_snapshot *snap,
                        ms_error *err)
{
    memset(m, 0, sizeof *m);
    m->rules = rules;
    m->snap = snap;
    m->mc = pcre2_match_context_create(NULL);
    m->js = pcre2_jit_stack_create(32 * 1024, MSR_CHART_RULE_JIT_STACK, NULL);
    /* Whether it matches is all a rule asks: no capture is kept. */
    m->md = pcre2_match_data_create(1, NULL);
    if (!m->mc || !m->js || !m->md)
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory matching --group rules");
    pcre2_jit_stack_assign(m->mc, NULL, m->js);
    pcre2_set_depth_limit(m->mc, MSR_CHART_RULE_DEPTH_LIMIT);
    pcre2_set_heap_limit(m->mc, MSR_CHART_RULE_HEAP_LIMIT_KIB);
    uint64_t in = ms_snapshot_input_bytes(snap);
    m->text_left = (uint64_t)MSR_CHART_RULE_TEXT_BASE + MSR_CHART_RULE_TEXT_PER_BYTE * in;
    m->steps_left = MSR_CHART_RULE_EXTRA_STEPS;
    return 0;
}

static void matcher_free(matcher *m)
{
    pcre2_match_data_free(m->md);
    pcre2_jit_stack_free(m->js);
    pcre2_match_context_free(m->mc);
    free(m->text);
}

/* "file:line function" (or "file function" without a line) into m->text, whole. */
static int frame_text(matcher *m, const ms_frame *f, size_t *len, ms_error *err)
{
    const char *file = ms_snapshot_string(m->snap, f->filename);
    const char *name = ms_snapshot_string(m->snap, f->name);
    size_t fl = strlen(file), nl = strlen(name);
    char line[24] = "";
    if (f->line >= 0)
        snprintf(line, sizeof line, ":%lld", (long long)f->line);
    size_t ll = strlen(line);
    if (fl > SIZE_MAX / 2 || nl > SIZE_MAX / 2)
        return msr__render_fail(err, MS_ERR_LIMIT, "frame text too long");
    size_t need = fl + ll + 1 + nl + 1;
    if (need > m->cap && !msr__render_grow((void **)&m->text, &m->cap, need, 1, 256))
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory matching --group rules");
    memcpy(m->text, file, fl);
    memcpy(m->text + fl, line, ll);
    m->text[fl + ll] = ' ';
    memcpy(m->text + fl + ll + 1, name, nl + 1);
    *len = need - 1;
    return 0;
}

static int limit_error(const matcher *m, size_t r, int rc, size_t len, ms_error *err)
{
    char shown[72];
    size_t k = msr__utf8_prefix(m->text, len, sizeof shown - 4);
    memcpy(shown, m->text, k);
    memcpy(shown + k, k < len ? "..." : "", k < len ? 4 : 1);
    const char *name = m->rules->name[r];
    const char *hint = "make the pattern more specific (anchor it, avoid nested repeats "
                       "and back-references)";
    switch (rc) {
    case PCRE2_ERROR_MATCHLIMIT:
        return msr__render_fail(err, MS_ERR_LIMIT,
                               "--group '%s': the match limit (%d backtracking steps) was "
                               "reached on the %zu-byte frame '%s': %s",
                               name, MSR_CHART_RULE_MATCH_LIMIT, len, shown, hint);
    case PCRE2_ERROR_DEPTHLIMIT:
        return msr__render_fail(err, MS_ERR_LIMIT,
                               "--group '%s': the depth limit (%d nested backtracking points) "
                               "was reached on the %zu-byte frame '%s': %s",
                               name, MSR_CHART_RULE_DEPTH_LIMIT, len, shown, hint);
    case PCRE2_ERROR_HEAPLIMIT:
        return msr__render_fail(err, MS_ERR_LIMIT,
                               "--group '%s': the heap limit (%d MiB) was reached on the "
                               "%zu-byte frame '%s': %s",
                               name, MSR_CHART_RULE_HEAP_LIMIT_KIB >> 10, len, shown, hint);
    case PCRE2_ERROR_JIT_STACKLIMIT:
        return msr__render_fail(err, MS_ERR_LIMIT,
                               "--group '%s': the JIT stack limit (%d KiB) was reached on the "
                               "%zu-byte frame '%s': %s",
                               name, MSR_CHART_RULE_JIT_STACK >> 10, len, shown, hint);
    case PCRE2_ERROR_NOMEMORY:
        return msr__render_fail(err, MS_ERR_NOMEM, "--group '%s': out of memory matching", name);
    default: {
        PCRE2_UCHAR why[160];
        if (pcre2_get_error_message(rc, why, sizeof why) < 0)
            snprintf((char *)why, sizeof why, "error %d", rc);
        return msr__render_fail(err, MS_ERR_LIMIT, "--group '%s': matching '%s' failed: %s",
                               name, shown, (const char *)why);
    }
    }
}

/* Whether rule r matches the frame text in m->text. A match gets an allowance of steps
 * that grows with the text (what a pattern without backtracking takes: the interpreter
 * counts a step per starting position); past it, the match is tried again with four
 * times as many, drawn from the file's pool, up to the match limit. So the steps of all
 * matches together stay within the allowances plus the pool, however many frames the
 * file has. */
static int match_rule(matcher *m, size_t r, size_t len, bool *hit, ms_error *err)
{
    const msr_chart_group_rules *rules = m->rules;
    if (len > m->text_left)
        return msr__render_fail(err, MS_ERR_LIMIT,
                               "--group '%s': the rules would read more than %llu MiB of frame "
                               "text in this file (64 MiB and %d bytes per byte of input)",
                               rules->name[r],
                               (unsigned long long)((MSR_CHART_RULE_TEXT_BASE +
                                                     MSR_CHART_RULE_TEXT_PER_BYTE *
                                                         ms_snapshot_input_bytes(m->snap)) >>
                                                    20),
                               MSR_CHART_RULE_TEXT_PER_BYTE);
    m->text_left -= len;
    uint64_t allowance = MSR_CHART_RULE_STEPS_BASE + MSR_CHART_RULE_STEPS_PER_BYTE * (uint64_t)len;
    uint32_t limit = allowance < MSR_CHART_RULE_MATCH_LIMIT ? (uint32_t)allowance
                                                             : MSR_CHART_RULE_MATCH_LIMIT;
    for (;;) {
        pcre2_set_match_limit(m->mc, limit);
        int rc = pcre2_match(rules->code[r], (PCRE2_SPTR)m->text, len, 0, 0, m->md, m->mc);
        if (rc >= 0 || rc == PCRE2_ERROR_NOMATCH) {
            *hit = rc >= 0;
            return 0;
        }
        if (rc != PCRE2_ERROR_MATCHLIMIT || limit >= MSR_CHART_RULE_MATCH_LIMIT)
            return limit_error(m, r, rc, len, err);
        uint32_t next = limit > MSR_CHART_RULE_MATCH_LIMIT / 4 ? MSR_CHART_RULE_MATCH_LIMIT
                                                               : limit * 4;
        if (next > m->steps_left)
            return msr__render_fail(err, MS_ERR_LIMIT,
                                   "--group '%s': the rules together backtracked more than "
                                   "the %d steps a file's frames may take beyond %d and %d "
                                   "per byte each; make the patterns more specific (anchor "
                                   "them, avoid nested repeats and back-references)",
                                   rules->name[r], MSR_CHART_RULE_EXTRA_STEPS,
                                   MSR_CHART_RULE_STEPS_BASE, MSR_CHART_RULE_STEPS_PER_BYTE);
        m->steps_left -= next;
        limit = next;
    }
}

/* The first rule that matches frame `id`, or -1. */
static int first_rule(matcher *m, uint32_t id, int8_t *out, ms_error *err)
{
    const ms_frame *f = ms_snapshot_frame(m->snap, id);
    *out = -1;
    if (!f)
        return 0;
    size_t len = 0;
    int rc = frame_text(m, f, &len, err);
    for (size_t r = 0; !rc && r < m->rules->n; r++) {
        bool hit = false;
        rc = match_rule(m, r, len, &hit, err);
        if (!rc && hit) {
            *out = (int8_t)r;
            break;
        }
    }
    return rc;
}

#define UNSEEN ((int8_t)-2)

int msr_chart_group_rules_classify(const msr_chart_group_rules *rules, const ms_snapshot *snap,
                                  const ms_timeline *tl, int8_t **out, ms_error *err)
{
    *out = NULL;
    size_t n_stacks = snap ? ms_snapshot_stack_count(snap) : 0;
    size_t n_frames = snap ? ms_snapshot_frame_count(snap) : 0;
    int8_t *of_stack = malloc(n_stacks ? n_stacks : 1);
    int8_t *of_frame = malloc(n_frames ? n_frames : 1);
    if (!of_stack || !of_frame) {
        free(of_stack);
        free(of_frame);
        return msr__render_fail(err, MS_ERR_NOMEM, "out of memory matching --group rules");
    }
    memset(of_stack, UNSEEN, n_stacks);
    memset(of_frame, UNSEEN, n_frames);
    matcher m;
    int rc = rules && rules->n && snap ? matcher_init(&m, rules, snap, err) : 0;
    bool matching = rules && rules->n && snap;
    for (size_t i = 0; matching && !rc && tl && i < tl->n_allocs; i++) {
        uint32_t st = tl->allocs[i].stack;
        if (st >= n_stacks || of_stack[st] != UNSEEN)
            continue;
        /* First rule wins: the stack's rule is the lowest of its frames' first rules. */
        size_t n = 0;
        const uint32_t *frames = ms_snapshot_stack(snap, st, &n);
        int8_t best = -1;
        for (size_t k = 0; k < n && best != 0 && !rc; k++) {
            uint32_t fr = frames[k];
            if (fr >= n_frames)
                continue;
            if (of_frame[fr] == UNSEEN)
                rc = first_rule(&m, fr, &of_frame[fr], err);
            if (!rc && of_frame[fr] >= 0 && (best < 0 || of_frame[fr] < best))
                best = of_frame[fr];
        }
        of_stack[st] = best;
    }
    if (matching)
        matcher_free(&m);
    free(of_frame);
    if (rc) {
        free(of_stack);
        return rc;
    }
    for (size_t i = 0; i < n_stacks; i++)
        if (of_stack[i] == UNSEEN)
            of_stack[i] = -1;
    *out = of_stack;
    return 0;
}
