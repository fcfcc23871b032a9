/* The public API keeps its own rules (docs/api.md): every text writer keeps snprintf's
 * rule (the whole length returned, always NUL-terminated, cut before a whole UTF-8
 * character, NULL/0 asks for the length, no failure); a fallible function says why in
 * the caller's ms_error; every enum has a distinct stable key (`_name`) and, where it
 * has one, prose (`_text`). */
#include <string.h>

#include "check.h"
#include "memsnap/categories.h"
#include "memsnap/compare.h"
#include "memsnap/memsnap.h"
#include "memsnap/oom.h"
#include "memsnap/phases.h"

/* A writer's call, checked at every capacity from 0 to the whole text and one past. */
typedef size_t (*writer_fn)(const void *ctx, char *buf, size_t cap);

static void check_writer(const char *what, writer_fn w, const void *ctx, const char *want)
{
    char whole[2048];
    size_t need = w(ctx, NULL, 0);
    if (want)
        CHECK_EQ_INT_IN(what, need, strlen(want));
    CHECK_TRUE_IN(what, need < sizeof whole);
    if (need >= sizeof whole)
        return;
    CHECK_EQ_INT_IN(what, w(ctx, whole, sizeof whole), need);
    CHECK_EQ_INT_IN(what, strlen(whole), need);
    if (want)
        CHECK_EQ_STR_IN(what, whole, want);
    for (size_t cap = 1; cap <= need + 1; cap++) {
        char buf[2048];
        memset(buf, 'x', sizeof buf);
        CHECK_EQ_INT_IN(what, w(ctx, buf, cap), need);
        size_t len = strnlen(buf, cap);
        CHECK_TRUE_IN(what, len < cap);                        /* NUL-terminated */
        CHECK_TRUE_IN(what, memcmp(buf, whole, len) == 0);     /* the text's start */
        CHECK_TRUE_IN(what, cap > need || len + 4 >= cap);     /* at most 3 bytes dropped */
        /* Never inside a character: the cut is where a character begins in the text. */
        CHECK_TRUE_IN(what, len == need || ((unsigned char)whole[len] & 0xC0) != 0x80);
    }
}

static size_t w_bytes(const void *ctx, char *buf, size_t cap)
{
    return ms_format_bytes(*(const int64_t *)ctx, buf, cap);
}

static size_t w_label(const void *ctx, char *buf, size_t cap)
{
    return ms_profile_label(ctx, buf, cap);
}

/* The frame writers, each with what it writes for no frame. */
typedef size_t (*frame_writer)(const ms_snapshot *s, uint32_t frame_id, char *buf, size_t cap);
static const struct {
    const char *what;
    frame_writer write;
    const char *of_none;
} FRAME_WRITERS[] = {
    {"site", ms_site_format, "(no stack)"},
    {"location", ms_site_format_location, "(no stack)"},
    {"function", ms_site_format_function, ""},
    {"layer", ms_layer_format, ""},
};
#define N_FRAME_WRITERS (sizeof FRAME_WRITERS / sizeof FRAME_WRITERS[0])

typedef struct frame_ctx {
    const ms_snapshot *s;
    uint32_t id;
    frame_writer write;
} frame_ctx;

static size_t w_frame(const void *ctx, char *buf, size_t cap)
{
    const frame_ctx *f = ctx;
    return f->write(f->s, f->id, buf, cap);
}

static void test_format_bytes(void)
{
    int64_t v = 1536;
    check_writer("ms_format_bytes(1536)", w_bytes, &v, "1.50 KiB");
    v = -512;
    check_writer("ms_format_bytes(-512)", w_bytes, &v, "-512 B");
    v = INT64_MIN;
    check_writer("ms_format_bytes(INT64_MIN)", w_bytes, &v, "-8192.00 PiB");
}

static void test_profile_label_utf8(void)
{
    ms_profile *p = NULL;
    ms_error err;
    /* Two- and three-byte characters where a small buffer ends. */
    CHECK_EQ_INT(ms_profile_new(&p, "/runs/r\xc3\xa4nk\xe2\x82\xac.pickle", &err), 0);
    if (p)
        check_writer("ms_profile_label", w_label, p, "r\xc3\xa4nk\xe2\x82\xac.pickle");
    ms_profile_free(p);
}

static void test_site_writers(void)
{
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, "testdata/cat_gpt2_annotated.pickle", NULL, &err)) {
        check_fail("read: %s", err.message);
        return;
    }
    size_t n = ms_snapshot_frame_count(s);
    CHECK_TRUE(n > 0);
    char name[64];
    for (size_t k = 0; k < N_FRAME_WRITERS; k++) {
        for (uint32_t id = 0; id < n && id < 300; id += 7) {
            frame_ctx f = {s, id, FRAME_WRITERS[k].write};
            snprintf(name, sizeof name, "%s of frame %u", FRAME_WRITERS[k].what, id);
            check_writer(name, w_frame, &f, NULL);
        }
        /* What a writer cannot describe is a fixed text, not a failure. */
        frame_ctx none = {s, UINT32_MAX, FRAME_WRITERS[k].write};
        snprintf(name, sizeof name, "%s of no frame", FRAME_WRITERS[k].what);
        check_writer(name, w_frame, &none, FRAME_WRITERS[k].of_none);
    }
    ms_snapshot_free(s);
}

static void test_parse_size_error(void)
{
    uint64_t v = 0;
    ms_error err;
    ms_error_clear(&err);
    CHECK_EQ_INT(ms_parse_size(&v, "20GiB", &err), 0);
    CHECK_EQ_INT(v, 20ull << 30);
    CHECK_EQ_INT(ms_parse_size(&v, "12 parsecs", &err), MS_ERR_ARG);
    CHECK_EQ_INT(err.code, MS_ERR_ARG);
    CHECK_EQ_STR(err.message, "not a size: '12 parsecs'");
    CHECK_EQ_INT(ms_parse_size(&v, "", NULL), MS_ERR_ARG); /* err may be NULL */
}

/* Every value has a key, and no two keys of an enum are the same. */
static void check_names(const char *what, const char *(*name)(int), const char *(*text)(int),
                        int first, int count)
{
    for (int i = first; i < count; i++) {
        const char *k = name(i);
        CHECK_TRUE_IN(what, k && *k);
        CHECK_TRUE_IN(what, k && !strchr(k, ' ')); /* a key, not prose: JSON carries it */
        if (text)
            CHECK_TRUE_IN(what, text(i) && *text(i));
        for (int j = first; j < i && k; j++)
            CHECK_TRUE_IN(what, strcmp(k, name(j)) != 0);
    }
}

/* Adapters: each enum's functions take the enum type. */
#define ADAPT(fn, type)                                                                 \
    static const char *fn##_i(int v) { return fn((type)v); }
ADAPT(ms_action_name, ms_action)
ADAPT(ms_frame_kind_name, ms_frame_kind)
ADAPT(ms_iter_method_name, ms_iter_method)
ADAPT(ms_iter_method_text, ms_iter_method)
ADAPT(ms_phase_kind_name, ms_phase_kind)
ADAPT(ms_phase_kind_text, ms_phase_kind)
ADAPT(ms_leak_kind_name, ms_leak_kind)
ADAPT(ms_leak_pattern_name, ms_leak_pattern)
ADAPT(ms_leak_pattern_text, ms_leak_pattern)
ADAPT(ms_category_name, ms_category)
ADAPT(ms_category_reason_name, ms_category_reason)
ADAPT(ms_category_reason_text, ms_category_reason)
ADAPT(ms_oom_cause_name, ms_oom_cause)
ADAPT(ms_oom_cause_text, ms_oom_cause)
ADAPT(ms_metric_name, ms_metric)
ADAPT(ms_wrap_evidence_name, ms_wrap_evidence)

static void test_enum_names(void)
{
    check_names("ms_code", ms_code_name, ms_code_text, MS_ERR_ARG, MS_OK + 1);
    check_names("ms_action", ms_action_name_i, NULL, 0, MS_ACT_COUNT);
    check_names("ms_frame_kind", ms_frame_kind_name_i, NULL, 0, MS_FRAME_KIND_COUNT);
    check_names("ms_iter_method", ms_iter_method_name_i, ms_iter_method_text_i, 0,
                MS_ITER_METHOD_COUNT);
    check_names("ms_phase_kind", ms_phase_kind_name_i, ms_phase_kind_text_i, 0,
                MS_PHASE_KIND_COUNT);
    check_names("ms_leak_kind", ms_leak_kind_name_i, NULL, 0, MS_LEAK_RETAINED + 1);
    check_names("ms_leak_pattern", ms_leak_pattern_name_i, ms_leak_pattern_text_i, 0,
                MS_LEAK_PATTERN_COUNT);
    check_names("ms_category", ms_category_name_i, NULL, 0, MS_CAT_COUNT);
    check_names("ms_category_reason", ms_category_reason_name_i, ms_category_reason_text_i, 0,
                MS_CATR_COUNT);
    check_names("ms_oom_cause", ms_oom_cause_name_i, ms_oom_cause_text_i, 0, MS_OOM_CAUSE_COUNT);
    check_names("ms_metric", ms_metric_name_i, NULL, 0, MS_M_COUNT);
    /* MS_WRAP_NONE has no evidence to name: NULL by design. */
    CHECK_TRUE(ms_wrap_evidence_name(MS_WRAP_NONE) == NULL);
    check_names("ms_wrap_evidence", ms_wrap_evidence_name_i, NULL, MS_WRAP_ANNOTATIONS,
                MS_WRAP_ROUND_COUNT + 1);
}

int main(void)
{
    test_format_bytes();
    test_profile_label_utf8();
    test_site_writers();
    test_parse_size_error();
    test_enum_names();
    return check_finish("test_api");
}
