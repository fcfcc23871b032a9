/* Hostile and broken input: every case must end in a clean error with an offset inside
 * the input (or a clean success), never a crash, hang or sanitizer report. */

#include "check.h"
#include "check_gzip.h"
#include "memsnap/memsnap.h"

static int read_mem(const void *data, size_t len, ms_error *err)
{
    ms_snapshot *s = NULL;
    int rc = ms_snapshot_read_memory(&s, data, len, NULL, err);
    if (rc == 0) {
        /* Anything accepted must also survive the analyses. */
        for (int d = 0; d < ms_snapshot_device_count(s); d++) {
            ms_timeline *t = NULL;
            ms_error e2;
            if (ms_timeline_build(&t, s, d, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS, &e2) == 0)
                ms_timeline_free(t);
        }
    }
    ms_snapshot_free(s);
    return rc;
}

/* An error must say what (a message) and where (an offset within the input). */
static void expect_error_within(const char *what, const void *data, size_t len, int code,
                                size_t max_offset)
{
    ms_error err;
    int rc = read_mem(data, len, &err);
    if (rc == 0 || (code && rc != code) || err.message[0] == '\0' || err.offset > (int64_t)max_offset) {
        fprintf(stderr, "case %s: rc %d (want %d) offset %lld msg '%s'\n", what, rc, code,
                (long long)err.offset, err.message);
    }
    CHECK_TRUE(rc != 0);
    if (code)
        CHECK_EQ_INT(rc, code);
    CHECK_TRUE(err.message[0] != '\0');
    CHECK_TRUE(err.offset <= (int64_t)max_offset);
}

static void expect_error(const char *what, const void *data, size_t len, int code)
{
    expect_error_within(what, data, len, code, len);
}

static void test_truncation(void)
{
    size_t len;
    unsigned char *data = check_read_file("testdata/leak_layers.pickle", &len);
    CHECK_TRUE(data != NULL);
    if (!data)
        return;
    int cases = 0;
    /* Every offset in the header and the first trace entries, then a spread over the file. */
    for (size_t cut = 0; cut < len; cut += cut < 4096 ? 1 : 997) {
        ms_error err;
        int rc = read_mem(data, cut, &err);
        cases++;
        if (rc == 0 || err.offset < 0 || err.offset > (int64_t)cut) {
            fprintf(stderr, "cut at %zu: rc %d offset %lld %s\n", cut, rc, (long long)err.offset,
                    err.message);
            CHECK_TRUE(0);
        }
    }
    /* A cut file reports where it ends. */
    ms_error err;
    CHECK_EQ_INT(read_mem(data, len / 2, &err), MS_ERR_TRUNCATED);
    CHECK_TRUE(err.offset >= (int64_t)len / 2 - 65536 && err.offset <= (int64_t)len / 2);
    CHECK_TRUE(strstr(err.message, "ends early") != NULL);
    CHECK_EQ_INT(read_mem(data, len, &err), 0);
    printf("truncation: %d cuts rejected cleanly\n", cases);
    free(data);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_bit_flips(void)
{
    size_t len;
    unsigned char *orig = check_read_file("testdata/gpt2_train.pickle", &len);
    CHECK_TRUE(orig != NULL);
    if (!orig)
        return;
    unsigned char *data = malloc(len);
    int ok = 0, bad = 0;
    for (int round = 0; round < 300; round++) {
        memcpy(data, orig, len);
        int flips = 1 + (int)(rng() % 8);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(rng() % len);
            data[at] ^= (unsigned char)(1u << (rng() % 8));
        }
        ms_error err;
        int rc = read_mem(data, len, &err);
        if (rc == 0) {
            ok++;
        } else {
            bad++;
            CHECK_TRUE(err.message[0] != '\0' && err.offset <= (int64_t)len);
        }
    }
    printf("bit flips: %d accepted, %d rejected cleanly\n", ok, bad);
    free(data);
    free(orig);
}

static void test_random_bytes(void)
{
    unsigned char buf[4096];
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(rng() % sizeof buf);
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)rng();
        if (round % 2 && n > 2) {
            buf[0] = 0x80; /* looks like a pickle */
            buf[1] = 4;
        }
        ms_error err;
        int rc = read_mem(buf, n, &err);
        CHECK_TRUE(rc != 0); /* random bytes are never a snapshot */
        CHECK_TRUE(err.offset <= (int64_t)n);
    }
}

static void test_refused_opcodes(void)
{
    static const struct {
        const char *name;
        const char *bytes;
        size_t len;
    } cases[] = {
        {"GLOBAL", "\x80\x02" "cos\nsystem\n", 13},
        {"STACK_GLOBAL", "\x80\x04\x8c\x02os\x8c\x06system\x93", 15},
        {"REDUCE", "\x80\x02N)R", 5},
        {"BUILD", "\x80\x02}}b", 5},
        {"INST", "(ios\nsystem\n", 12},
        {"OBJ", "\x80\x02(No", 5},
        {"NEWOBJ", "\x80\x02N)\x81", 5},
        {"NEWOBJ_EX", "\x80\x04N)}\x92", 6},
        {"EXT1", "\x80\x02\x82\x01", 4},
        {"EXT2", "\x80\x02\x83\x01\x00", 5},
        {"EXT4", "\x80\x02\x84\x01\x00\x00\x00", 7},
        {"PERSID", "Pabc\n.", 6},
        {"BINPERSID", "\x80\x02NQ", 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ms_error err;
        int rc = read_mem(cases[i].bytes, cases[i].len, &err);
        CHECK_EQ_INT(rc, MS_ERR_REFUSED_OPCODE);
        CHECK_TRUE(strstr(err.message, cases[i].name) != NULL);
        CHECK_TRUE(err.offset > 0 || cases[i].bytes[0] != '\x80');
        if (!strstr(err.message, cases[i].name))
            fprintf(stderr, "%s: %s\n", cases[i].name, err.message);
    }
    ms_error err;
    CHECK_EQ_INT(read_mem("\x80\x02\xff", 3, &err), MS_ERR_UNKNOWN_OPCODE);
    CHECK_EQ_INT(err.offset, 2);
    CHECK_TRUE(strstr(err.message, "0xff") != NULL);
}

static void test_limits(void)
{
    /* 100000 nested MARKs. */
    size_t n = 100000;
    unsigned char *deep = malloc(n + 3);
    deep[0] = 0x80;
    deep[1] = 2;
    memset(deep + 2, '(', n);
    deep[n + 2] = '.';
    expect_error("deep marks", deep, n + 3, MS_ERR_LIMIT);
    /* Deeply nested lists through single APPENDs: ]]]]...a a a a. */
    unsigned char *nest = malloc(2 * n + 3);
    nest[0] = 0x80;
    nest[1] = 2;
    memset(nest + 2, ']', n);
    memset(nest + 2 + n, 'a', n - 1);
    nest[2 * n + 1] = '.';
    expect_error("nested lists", nest, 2 * n + 2, MS_ERR_FORMAT); /* a list, not a dict */
    free(nest);
    free(deep);
    /* Huge length fields, in short input: refused before allocating. */
    expect_error("BINUNICODE8 2^62", "\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x40", 11, MS_ERR_LIMIT);
    expect_error("BINUNICODE 4G", "\x80\x04X\xff\xff\xff\xff", 7, 0);
    expect_error("BINBYTES 1M in 10 bytes", "\x80\x04" "B\x00\x00\x10\x00" "ab", 9, MS_ERR_TRUNCATED);
    expect_error("LONG4 huge", "\x80\x04\x8b\xff\xff\xff\x7f", 7, MS_ERR_LIMIT);
    expect_error("memo get unknown", "\x80\x04h\x05.", 5, MS_ERR_CORRUPT);
    expect_error("LONG_BINPUT far", "\x80\x04Nr\xff\xff\xff\xffj\xff\xff\xff\xff.", 14, MS_ERR_FORMAT);
    expect_error("empty", "", 0, MS_ERR_TRUNCATED);
    expect_error("stack underflow", "\x80\x04u", 3, MS_ERR_CORRUPT);
    expect_error("APPENDS no list", "\x80\x04(e", 4, MS_ERR_CORRUPT);
    expect_error("bad utf8", "\x80\x04\x8c\x02\xff\xfe.", 6, MS_ERR_CORRUPT);
    expect_error("protocol 9", "\x80\x09}.", 4, MS_ERR_CORRUPT);
}

static void test_structure(void)
{
    expect_error("a list", "\x80\x04].", 4, MS_ERR_FORMAT);
    expect_error("dict without traces", "\x80\x04}.", 4, MS_ERR_FORMAT);
    /* {'device_traces': [[{'addr': 1}]]}: an entry without an action. */
    const char no_action[] = "\x80\x04}(\x8c\x0d" "device_traces]]}\x8c\x04" "addrK\x01saau.";
    expect_error("entry without action", no_action, sizeof no_action - 1, MS_ERR_FORMAT);
    /* {'device_traces': [[{'action': 'alloc', 'size': 'x'}]]}: wrong type. */
    const char bad_type[] = "\x80\x04}(\x8c\x0d" "device_traces]]}(\x8c\x06" "action\x8c\x05" "alloc\x8c\x04" "size\x8c\x01xuaau.";
    expect_error("size is a str", bad_type, sizeof bad_type - 1, MS_ERR_FORMAT);
    /* 'device_traces' is an int */
    const char traces_int[] = "\x80\x04}\x8c\x0d" "device_tracesK\x01s.";
    expect_error("device_traces int", traces_int, sizeof traces_int - 1, MS_ERR_FORMAT);
    /* A minimal valid snapshot reads. */
    const char ok[] = "\x80\x04}(\x8c\x0d" "device_traces]](}(\x8c\x06" "action\x8c\x05" "alloc\x8c\x04" "addrK\x10\x8c\x04" "sizeM\x00\x04ue"
                      "au.";
    ms_snapshot *s = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_snapshot_read_memory(&s, ok, sizeof ok - 1, NULL, &err), 0);
    if (s) {
        CHECK_EQ_INT(ms_snapshot_trace(s, 0)->n, 1);
        CHECK_EQ_INT(ms_snapshot_trace(s, 0)->size[0], 1024);
        CHECK_EQ_INT(ms_snapshot_trace(s, 0)->addr[0], 16);
    }
    ms_snapshot_free(s);
}

/* Absurd sizes and times (docs/security.md), made by testdata/bad/make_hostile.py: read
 * errors at the entry's offset, or, for sums, a timeline error; never a wrapped number. */
static void test_absurd_values(void)
{
    static const char *const at_read[] = {"alloc_2p62", "free_unknown_huge", "segment_2p62",
                                          "time_extremes", "segment_state_huge",
                                          "annotation_time", "addr_128bit"};
    for (size_t i = 0; i < sizeof at_read / sizeof at_read[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "testdata/bad/%s.pickle", at_read[i]);
        size_t len;
        unsigned char *data = check_read_file(path, &len);
        CHECK_TRUE_IN(path, data != NULL);
        if (data)
            expect_error(path, data, len, MS_ERR_FORMAT);
        free(data);
    }
    size_t len;
    unsigned char *data = check_read_file("testdata/bad/alloc_sum_2p56.pickle", &len);
    CHECK_TRUE(data != NULL);
    ms_snapshot *s = NULL;
    ms_error err;
    CHECK_EQ_INT(data ? ms_snapshot_read_memory(&s, data, len, NULL, &err) : -1, 0);
    if (s) {
        ms_timeline *t = NULL;
        CHECK_EQ_INT(ms_timeline_build(&t, s, 0, MS_TIMELINE_CURVES, &err), MS_ERR_FORMAT);
        CHECK_TRUE(strstr(err.message, "more than 2^56 bytes") != NULL);
        ms_timeline_free(t);
    }
    ms_snapshot_free(s);
    free(data);
}

static void test_gzip(void)
{
    size_t len;
    unsigned char *data = check_read_file("testdata/linear_infer.pickle", &len);
    CHECK_TRUE(data != NULL);
    if (!data)
        return;
    size_t zn = 0;
    unsigned char *z = check_gzip(data, len, &zn);
    if (!z) {
        free(data);
        return;
    }
    ms_snapshot *s = NULL, *plain = NULL;
    ms_error err;
    CHECK_EQ_INT(ms_snapshot_read_memory(&s, z, zn, NULL, &err), 0);
    CHECK_EQ_INT(ms_snapshot_read_memory(&plain, data, len, NULL, &err), 0);
    if (s && plain)
        CHECK_EQ_INT(ms_snapshot_trace(s, 0)->n, ms_snapshot_trace(plain, 0)->n);
    ms_snapshot_free(s);
    ms_snapshot_free(plain);
    /* Cut and corrupted gzip streams fail cleanly. */
    /* Offsets of gzip input count decompressed bytes. */
    for (size_t cut = 0; cut < zn; cut += 1 + cut / 8)
        expect_error_within("cut gzip", z, cut, 0, len);
    z[zn / 2] ^= 0x55;
    z[zn / 2 + 1] ^= 0xaa;
    expect_error_within("corrupt gzip", z, zn, 0, len);
    free(z);
    free(data);
}

int main(void)
{
    test_truncation();
    test_bit_flips();
    test_random_bytes();
    test_refused_opcodes();
    test_limits();
    test_structure();
    test_absurd_values();
    test_gzip();
    return check_finish("test_bad_input");
}
