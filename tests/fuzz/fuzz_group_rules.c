/* libFuzzer target for the --group rules (render/group_rules.c): the compiler on any
 * pattern, and the matcher on any frames. Also replayed by replay_main.c over
 * tests/fuzz/corpus_rules (seeded with the patterns of issue 34 that crashed or hung
 * glibc's regexec).
 *
 * Input: byte 0 picks the number of rules (1 + its low two bits); the rest, cut at '\n',
 * gives the rules' patterns, then the frames' texts (at most 16, each "FILE NAME", bytes
 * at or above 0x80 folded to ASCII so the snapshot reads). The frames go into a snapshot
 * (one allocation per frame, whose stack is that frame and the ones after it, at most
 * four), which msr_chart_group_rules_classify groups. Aborts when a rule that compiled
 * fails with anything but a limit, or when a stack's rule disagrees with matching its
 * frames one by one: the stack takes the first rule that matches one of its frames. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "memsnap/memsnap.h"
#include "memsnap/timeline.h"
#include "pickle_writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FRAMES 16
#define STACK_DEPTH 4

static void text(pk *w, const char *s, size_t n) /* BINUNICODE: any length */
{
    unsigned char h[5] = {'X', (unsigned char)n, (unsigned char)(n >> 8),
                          (unsigned char)(n >> 16), (unsigned char)(n >> 24)};
    put(w, h, 5);
    put(w, s, n);
}

typedef struct piece {
    const char *p;
    size_t n;
} piece;

/* {'segments': [], 'device_traces': [[alloc per frame]]}; frame k's file is the text up
 * to its first space, its function the rest, its line k (none for odd k). */
static void write_snapshot(pk *w, char frames[][256], const size_t *len, size_t n)
{
    snapshot_begin(w);
    op(w, ']');
    op(w, '(');
    for (size_t k = 0; k < n; k++) {
        op(w, '}');
        op(w, '(');
        str(w, "action");
        str(w, "alloc");
        str(w, "addr");
        num(w, (int64_t)(0x100000 + k * 0x1000));
        str(w, "size");
        num(w, 512);
        str(w, "stream");
        num(w, 0);
        str(w, "time_us");
        num(w, (int64_t)(10 + k));
        str(w, "frames");
        op(w, ']');
        op(w, '(');
        for (size_t j = k; j < n && j < k + STACK_DEPTH; j++) {
            const char *sp = memchr(frames[j], ' ', len[j]);
            size_t fl = sp ? (size_t)(sp - frames[j]) : len[j];
            op(w, '}');
            op(w, '(');
            str(w, "filename");
            text(w, frames[j], fl);
            str(w, "name");
            text(w, sp ? sp + 1 : "", sp ? len[j] - fl - 1 : 0);
            if (j % 2 == 0) {
                str(w, "line");
                num(w, (int64_t)j);
            }
            op(w, 'u');
        }
        op(w, 'e');
        op(w, 'u');
    }
    op(w, 'e');
    op(w, 'a');
    op(w, 'u');
    op(w, '.');
}

/* Whether rule r matches the frame's text as the classifier writes it; -1 when it could
 * not tell within the limits of one match. */
static int matches(const msr_chart_group_rules *rules, size_t r, const ms_snapshot *s,
                   uint32_t frame, pcre2_match_context *mc, pcre2_match_data *md)
{
    const ms_frame *f = ms_snapshot_frame(s, frame);
    const char *file = ms_snapshot_string(s, f->filename), *name = ms_snapshot_string(s, f->name);
    char buf[1024];
    int n = f->line >= 0 ? snprintf(buf, sizeof buf, "%s:%lld %s", file, (long long)f->line, name)
                         : snprintf(buf, sizeof buf, "%s %s", file, name);
    if (n < 0 || (size_t)n >= sizeof buf)
        abort(); /* frames here are under 256 bytes */
    int rc = pcre2_match(rules->code[r], (PCRE2_SPTR)buf, (size_t)n, 0, 0, md, mc);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)
        fprintf(stderr, "'%s': %d\n", buf, rc);
    return rc >= 0 ? 1 : rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}

static void check(const msr_chart_group_rules *rules, const ms_snapshot *s, const ms_timeline *tl,
                  const int8_t *of_stack)
{
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    pcre2_jit_stack *js = pcre2_jit_stack_create(32 * 1024, MSR_CHART_RULE_JIT_STACK, NULL);
    pcre2_match_data *md = pcre2_match_data_create(2, NULL);
    if (!mc || !js || !md)
        abort();
    pcre2_jit_stack_assign(mc, NULL, js);
    pcre2_set_match_limit(mc, MSR_CHART_RULE_MATCH_LIMIT);
    pcre2_set_depth_limit(mc, MSR_CHART_RULE_DEPTH_LIMIT);
    pcre2_set_heap_limit(mc, MSR_CHART_RULE_HEAP_LIMIT_KIB);
    /* Each (frame, rule) once, as the classifier does: frames are shared by up to four
     * stacks, and a match may take a million steps. */
    int8_t known[MAX_FRAMES][4];
    memset(known, -2, sizeof known);
    if (ms_snapshot_frame_count(s) > MAX_FRAMES)
        abort();
    for (size_t i = 0; i < tl->n_allocs; i++) {
        uint32_t st = tl->allocs[i].stack;
        size_t n = 0;
        const uint32_t *frames = ms_snapshot_stack(s, st, &n);
        int want = -1;
        for (size_t r = 0; r < rules->n && want < 0; r++)
            for (size_t k = 0; k < n && want < 0; k++) {
                int8_t *m = &known[frames[k]][r];
                if (*m == -2)
                    *m = (int8_t)matches(rules, r, s, frames[k], mc, md);
                if (*m < 0) {
                    /* The classifier matched this pair within the same limits. */
                    fprintf(stderr, "frame %u, rule %zu: no answer within the limits\n",
                            frames[k], r);
                    abort();
                }
                if (*m)
                    want = (int)r;
            }
        if (of_stack[st] != want) {
            fprintf(stderr, "stack %u: classified %d, matching frame by frame %d\n", st,
                    of_stack[st], want);
            abort();
        }
    }
    pcre2_match_data_free(md);
    pcre2_jit_stack_free(js);
    pcre2_match_context_free(mc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    size_t n_rules = 1 + (data[0] & 3);
    piece pieces[4 + MAX_FRAMES];
    size_t n_pieces = 0;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    while (p <= end && n_pieces < 4 + MAX_FRAMES) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        pieces[n_pieces++] = (piece){p, (size_t)(stop - p)};
        p = stop + 1;
    }
    msr_chart_group_rules rules;
    memset(&rules, 0, sizeof rules);
    ms_error err;
    size_t n_given = n_pieces < n_rules ? n_pieces : n_rules;
    for (size_t r = 0; r < n_given; r++) {
        /* "rK=PATTERN"; a NUL ends the pattern, as it would on a command line. */
        char rule[MSR_CHART_RULE_MAX_PATTERN + 16];
        size_t n = pieces[r].n < MSR_CHART_RULE_MAX_PATTERN + 1 ? pieces[r].n
                                                               : MSR_CHART_RULE_MAX_PATTERN + 1;
        int at = snprintf(rule, sizeof rule, "r%zu=", r);
        memcpy(rule + at, pieces[r].p, n);
        rule[(size_t)at + n] = '\0';
        int rc = msr_chart_group_rules_add(&rules, rule, &err);
        if (rc && rc != MS_ERR_ARG && rc != MS_ERR_LIMIT && rc != MS_ERR_NOMEM)
            abort();
        if (rc && (strlen(err.message) == 0 || !strstr(err.message, "--group")))
            abort(); /* every refusal names the rule */
    }
    size_t n_frames = n_pieces > n_given ? n_pieces - n_given : 0;
    if (n_frames > MAX_FRAMES)
        n_frames = MAX_FRAMES;
    if (rules.n == 0 || n_frames == 0) {
        msr_chart_group_rules_free(&rules);
        return 0;
    }
    static char frames[MAX_FRAMES][256];
    size_t len[MAX_FRAMES];
    for (size_t k = 0; k < n_frames; k++) {
        const piece *q = &pieces[n_given + k];
        len[k] = q->n < 200 ? q->n : 200;
        for (size_t j = 0; j < len[k]; j++) {
            unsigned char c = (unsigned char)q->p[j] & 0x7f;
            frames[k][j] = (char)(c ? c : '?');
        }
    }
    pk w = {0};
    write_snapshot(&w, frames, len, n_frames);
    ms_snapshot *s = NULL;
    ms_timeline *tl = NULL;
    if (ms_snapshot_read_memory(&s, w.p, w.n, NULL, &err) ||
        ms_timeline_build(&tl, s, 0, MS_TIMELINE_ALLOCS, &err)) {
        fprintf(stderr, "the crafted snapshot does not read: %s\n", err.message);
        abort();
    }
    int8_t *of_stack = NULL;
    int rc = msr_chart_group_rules_classify(&rules, s, tl, &of_stack, &err);
    if (rc == 0)
        check(&rules, s, tl, of_stack);
    else if ((rc != MS_ERR_LIMIT && rc != MS_ERR_NOMEM) || !strstr(err.message, "--group '"))
        abort(); /* only a limit stops the matcher, and it names the rule */
    free(of_stack);
    ms_timeline_free(tl);
    ms_snapshot_free(s);
    free(w.p);
    msr_chart_group_rules_free(&rules);
    return 0;
}
