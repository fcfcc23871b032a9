/* What older and odder PyTorch versions write (FORMAT.md, "Older and odder files"), one
 * convention a case, on pickles built byte by byte: the unsigned -1 that C++ writes for
 * "no line" (torch.compile's fake-tensor frames), lines that are None, negative or beyond
 * 64 bits, the same in the text opcodes of protocol 0, fields where a value beyond int64
 * stays an error, traces that carry no time_us, and traces whose times go backwards
 * (read as having none). */
#include "check.h"
#include "memsnap/memsnap.h"

typedef struct pk {
    unsigned char b[1024];
    size_t n;
} pk;

static void raw(pk *p, const void *s, size_t n)
{
    memcpy(p->b + p->n, s, n);
    p->n += n;
}
static void op(pk *p, unsigned char c) { raw(p, &c, 1); }
static void str(pk *p, const char *s)
{
    op(p, 0x8c); /* SHORT_BINUNICODE */
    op(p, (unsigned char)strlen(s));
    raw(p, s, strlen(s));
}
static void i32(pk *p, int32_t v)
{
    op(p, 'J'); /* BININT */
    for (int k = 0; k < 4; k++)
        op(p, (unsigned char)((uint32_t)v >> (8 * k)));
}
/* LONG1 with the given little-endian bytes. */
static void long1(pk *p, const unsigned char *le, size_t n)
{
    op(p, 0x8a);
    op(p, (unsigned char)n);
    raw(p, le, n);
}

static const unsigned char U64_MAX_LE[9] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00};
static const unsigned char P2_70_LE[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x00};

/* {'segments': [], 'device_traces': [[{action 'alloc', addr 4096, size SIZE, stream 0,
 * [time_us 1700000000000000,] frames [{name 'step', filename '/u/train.py', line LINE}]}]]}
 * LINE and SIZE are written by the callbacks. */
typedef void (*writer)(pk *p);

static pk build(writer line, writer size, bool times)
{
    pk p = {{0}, 0};
    op(&p, 0x80); op(&p, 4);          /* PROTO 4 */
    op(&p, '}'); op(&p, '(');         /* EMPTY_DICT MARK */
    str(&p, "segments"); op(&p, ']');
    str(&p, "device_traces"); op(&p, ']'); op(&p, ']');
    op(&p, '}'); op(&p, '(');
    str(&p, "action"); str(&p, "alloc");
    str(&p, "addr"); i32(&p, 4096);
    str(&p, "size"); size(&p);
    str(&p, "stream"); i32(&p, 0);
    if (times) {
        static const unsigned char t[8] = {0x00, 0x40, 0x7a, 0x10, 0xf3, 0x5a, 0x06, 0x00};
        str(&p, "time_us"); long1(&p, t, 8);
    }
    str(&p, "frames"); op(&p, ']');
    op(&p, '}'); op(&p, '(');
    str(&p, "name"); str(&p, "step");
    str(&p, "filename"); str(&p, "/u/train.py");
    str(&p, "line"); line(&p);
    op(&p, 'u'); op(&p, 'a');         /* SETITEMS (frame) APPEND (to frames) */
    op(&p, 'u'); op(&p, 'a'); op(&p, 'a'); /* entry, into the trace, into device_traces */
    op(&p, 'u'); op(&p, '.');
    return p;
}

static void line_42(pk *p) { i32(p, 42); }
static void line_u64max(pk *p) { long1(p, U64_MAX_LE, sizeof U64_MAX_LE); }
static void line_none(pk *p) { op(p, 'N'); }
static void line_negative(pk *p) { i32(p, -5); }
static void line_2p70(pk *p) { long1(p, P2_70_LE, sizeof P2_70_LE); }
static void line_text_u64max(pk *p) { raw(p, "L18446744073709551615L\n", 23); }
static void line_text_2p64(pk *p) { raw(p, "L18446744073709551616L\n", 23); }
static void line_str(pk *p) { str(p, "12"); }
static void size_512(pk *p) { i32(p, 512); }
static void size_u64max(pk *p) { long1(p, U64_MAX_LE, sizeof U64_MAX_LE); }

static void check_line(const char *ctx, writer line, int64_t want, const char *want_site)
{
    pk p = build(line, size_512, true);
    ms_snapshot *s = NULL;
    ms_error err;
    int rc = ms_snapshot_read_memory(&s, p.b, p.n, NULL, &err);
    CHECK_EQ_INT_IN(ctx, rc, 0);
    if (rc) {
        fprintf(stderr, "%s: %s\n", ctx, err.message);
        return;
    }
    const ms_trace *tr = ms_snapshot_trace(s, 0);
    CHECK_EQ_INT_IN(ctx, tr->n, 1);
    /* One entry with a time spans nothing: event indexes stand for times (issue 33). */
    CHECK_TRUE_IN(ctx, !tr->has_times && tr->one_instant);
    size_t n = 0;
    const uint32_t *fr = tr->n ? ms_snapshot_stack(s, tr->stack[0], &n) : NULL;
    CHECK_EQ_INT_IN(ctx, n, 1);
    if (fr && n == 1) {
        CHECK_EQ_INT_IN(ctx, ms_snapshot_frame(s, fr[0])->line, want);
        char site[64];
        ms_site_format_location(s, fr[0], site, sizeof site);
        CHECK_EQ_STR_IN(ctx, site, want_site);
    }
    ms_snapshot_free(s);
}

/* Where no "unknown" convention exists, a value beyond int64 is an error at its entry. */
static void check_refused(const char *ctx, writer line, writer size, const char *want_in_message)
{
    pk p = build(line, size, true);
    ms_snapshot *s = NULL;
    ms_error err;
    int rc = ms_snapshot_read_memory(&s, p.b, p.n, NULL, &err);
    CHECK_TRUE_IN(ctx, rc != 0);
    CHECK_TRUE_IN(ctx, err.offset > 0 && (size_t)err.offset < p.n);
    CHECK_TRUE_IN(ctx, strstr(err.message, want_in_message) != NULL);
    if (!strstr(err.message, want_in_message))
        fprintf(stderr, "%s: message '%s'\n", ctx, err.message);
    ms_snapshot_free(s);
}

/* The timeline of a trace of `events` allocations without a usable clock: no times, the
 * event index standing for the time, and its peak (at the last event). */
static void check_clockless_timeline(const ms_snapshot *s, int64_t events, int64_t peak_bytes)
{
    ms_timeline *t = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_timeline_build(&t, s, 0, MS_TIMELINE_CURVES, &err), 0);
    if (t) {
        CHECK_TRUE(!t->has_times);
        CHECK_EQ_INT(t->t_first_us, 0);
        CHECK_EQ_INT(t->t_last_us, events - 1);
        CHECK_EQ_INT(t->peak_bytes, peak_bytes);
        CHECK_EQ_INT(t->peak_event, events - 1);
    }
    ms_timeline_free(t);
}

static void check_no_times(void)
{
    pk p = build(line_42, size_512, false);
    ms_snapshot *s = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_snapshot_read_memory(&s, p.b, p.n, NULL, &err), 0);
    if (!s)
        return;
    const ms_trace *tr = ms_snapshot_trace(s, 0);
    CHECK_TRUE(!tr->has_times);
    CHECK_EQ_INT(tr->time_us[0], 0); /* the event index stands for the time */
    check_clockless_timeline(s, 1, 512);
    ms_snapshot_free(s);
}

/* n allocations of 512 bytes at the given times (microseconds). */
static pk build_timed(const int64_t *times, size_t n)
{
    pk p = {{0}, 0};
    op(&p, 0x80); op(&p, 4);
    op(&p, '}'); op(&p, '(');
    str(&p, "segments"); op(&p, ']');
    str(&p, "device_traces"); op(&p, ']'); op(&p, ']'); op(&p, '(');
    for (size_t i = 0; i < n; i++) {
        unsigned char t[8];
        for (int k = 0; k < 8; k++)
            t[k] = (unsigned char)((uint64_t)times[i] >> (8 * k));
        op(&p, '}'); op(&p, '(');
        str(&p, "action"); str(&p, "alloc");
        str(&p, "addr"); i32(&p, (int32_t)(4096 * (i + 1)));
        str(&p, "size"); i32(&p, 512);
        str(&p, "stream"); i32(&p, 0);
        str(&p, "time_us"); long1(&p, t, 8);
        op(&p, 'u');
    }
    op(&p, 'e'); op(&p, 'a');         /* APPENDS (entries) APPEND (the trace) */
    op(&p, 'u'); op(&p, '.');
    return p;
}

/* Time stamps that go backwards make a trace without a usable clock: the event index
 * stands for the time (so no duration is negative), and the first decrease is named. */
static void check_times_backward(void)
{
    const int64_t T = 1700000000000000;
    const int64_t back[] = {T, T + 10, T + 10, T + 5, T + 20, T + 1};
    pk p = build_timed(back, 6);
    ms_snapshot *s = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_snapshot_read_memory(&s, p.b, p.n, NULL, &err), 0);
    if (s) {
        const ms_trace *tr = ms_snapshot_trace(s, 0);
        CHECK_EQ_INT(tr->n, 6);
        CHECK_TRUE(!tr->has_times);
        CHECK_EQ_INT(tr->times_backward_at, 3); /* T+5 after T+10; equal times are fine */
        for (size_t i = 0; i < tr->n; i++)
            CHECK_EQ_INT(tr->time_us[i], (int64_t)i);
        check_clockless_timeline(s, 6, 6 * 512);
    }
    ms_snapshot_free(s);
    /* Times that only stay equal or grow keep their clock. */
    const int64_t flat[] = {T, T, T + 1, T + 1};
    p = build_timed(flat, 4);
    s = NULL;
    CHECK_EQ_INT(ms_snapshot_read_memory(&s, p.b, p.n, NULL, &err), 0);
    if (s) {
        const ms_trace *tr = ms_snapshot_trace(s, 0);
        CHECK_TRUE(tr->has_times);
        CHECK_EQ_INT(tr->times_backward_at, 0);
        CHECK_EQ_INT(tr->time_us[3], T + 1);
    }
    ms_snapshot_free(s);
}

int main(void)
{
    check_line("line 42", line_42, 42, "u/train.py:42");
    check_line("line 2^64-1", line_u64max, MS_LINE_UNKNOWN, "u/train.py:?");
    check_line("line None", line_none, MS_LINE_UNKNOWN, "u/train.py:?");
    check_line("line -5", line_negative, MS_LINE_UNKNOWN, "u/train.py:?");
    check_line("line 2^70", line_2p70, MS_LINE_UNKNOWN, "u/train.py:?");
    check_line("text LONG 2^64-1", line_text_u64max, MS_LINE_UNKNOWN, "u/train.py:?");
    check_line("text LONG 2^64", line_text_2p64, MS_LINE_UNKNOWN, "u/train.py:?");
    check_refused("line as str", line_str, size_512, "frame 'line' is a str");
    check_refused("size 2^64-1", line_42, size_u64max, "'size'");
    check_no_times();
    check_times_backward();
    return check_finish("test_compat");
}
