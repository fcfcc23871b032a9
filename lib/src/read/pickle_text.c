/* Text in pickles: the UTF-8 check every pickled str passes, and protocol 0's text
 * opcodes, whose arguments run to a newline (decimal integers and floats, memo indexes,
 * quoted strings and raw-unicode-escape text). Python's own pickler writes these only
 * with protocol 0, so none of this is on the path of a large snapshot. */
#include "pickle_vm_impl.h"

#include <stdlib.h>
#include <string.h>

#define MAX_TEXT_LINE ((size_t)1 << 16)

/* Python decodes pickled str as UTF-8 with surrogates allowed; anything else is an error
 * there, so it is one here too (and keeps JSON output valid). */
bool ms__utf8_valid(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if ((c & 0xe0) == 0xc0) {
            len = 2;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10ffff)
            return false;
        i += len;
    }
    return true;
}

/* Text opcodes (protocol 0/1) carry their argument up to a newline. */
static int read_line(ms_vm *vm, size_t limit, const uint8_t **line, size_t *len, int64_t off)
{
    ms_input *in = &vm->in;
    size_t want = 64;
    for (;;) {
        size_t have = (size_t)(in->end - in->pos);
        const uint8_t *nl = have > 1 ? memchr(in->pos + 1, '\n', have - 1) : NULL;
        if (nl) {
            *line = in->pos + 1;
            *len = (size_t)(nl - (in->pos + 1));
            if (*len > limit)
                return FAIL(MS_ERR_LIMIT, off, "text argument longer than %zu bytes", limit);
            in->pos = nl + 1;
            return 0;
        }
        if (have > limit)
            return FAIL(MS_ERR_LIMIT, off, "text argument longer than %zu bytes", limit);
        want = have + 1 > want ? have + 1 : want;
        int rc = ms__input_need(in, want, vm->err);
        if (rc)
            return rc == MS_ERR_TRUNCATED ? FAIL(rc, off, "text argument has no newline") : rc;
        want *= 2;
    }
}

static int parse_text_int(ms_vm *vm, const uint8_t *p, size_t n, int64_t off)
{
    if (n > 0 && p[n - 1] == 'L')
        n--; /* LONG's trailing L */
    if (n == 2 && p[0] == '0' && (p[1] == '0' || p[1] == '1'))
        return push(vm, VMAKE(T_SPC, p[1] == '1' ? SPC_TRUE : SPC_FALSE), off);
    size_t i = 0;
    bool neg = false;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        neg = p[i++] == '-';
    if (i == n)
        return FAIL(MS_ERR_CORRUPT, off, "INT argument is not a number");
    uint64_t v = 0;
    bool huge = false;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return FAIL(MS_ERR_CORRUPT, off, "INT argument is not a number");
        if (v > (UINT64_MAX - 9) / 10)
            huge = true;
        else
            v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (huge || v > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) {
        ms_val out = 0;
        int kind = !huge && !neg ? N_U64 : N_HUGE; /* 2^63 .. 2^64 - 1 keeps its bits */
        int rc = ms__vm_box_num(vm, kind, (int64_t)v, 0, &out, off);
        return rc ? rc : push(vm, out, off);
    }
    int64_t iv = neg ? (int64_t)(0 - v) : (int64_t)v;
    ms_val out = 0;
    int rc = ms__vm_make_int(vm, iv, &out, off);
    return rc ? rc : push(vm, out, off);
}

static int hexval(uint8_t c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80) { o[0] = (uint8_t)cp; return 1; }
    if (cp < 0x800) { o[0] = (uint8_t)(0xc0 | (cp >> 6)); o[1] = (uint8_t)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xe0 | (cp >> 12)); o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (uint8_t)(0x80 | (cp & 0x3f)); return 3;
    }
    o[0] = (uint8_t)(0xf0 | (cp >> 18)); o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

/* STRING (a quoted repr) and UNICODE (raw-unicode-escape) text arguments. */
static int decode_text_string(ms_vm *vm, const uint8_t *p, size_t n, bool quoted, int64_t off)
{
    if (quoted) {
        if (n < 2 || (p[0] != '\'' && p[0] != '"') || p[n - 1] != p[0])
            return FAIL(MS_ERR_CORRUPT, off, "STRING argument is not quoted");
        p++;
        n -= 2;
    }
    uint8_t *buf = malloc(n * 4 + 1);
    if (!buf)
        return FAIL(MS_ERR_NOMEM, off, "out of memory");
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '\\' || i + 1 == n) {
            if (quoted || p[i] < 0x80)
                buf[o++] = p[i];
            else
                o += put_utf8(buf + o, p[i]); /* raw-unicode-escape bytes are Latin-1 */
            continue;
        }
        uint8_t e = p[++i];
        int digits = quoted ? (e == 'x' ? 2 : 0) : (e == 'u' ? 4 : e == 'U' ? 8 : 0);
        if (digits) {
            uint32_t cp = 0;
            if (n - i - 1 < (size_t)digits) {
                free(buf);
                return FAIL(MS_ERR_CORRUPT, off, "truncated escape in text string");
            }
            for (int k = 0; k < digits; k++) {
                int h = hexval(p[i + 1 + (size_t)k]);
                if (h < 0) {
                    free(buf);
                    return FAIL(MS_ERR_CORRUPT, off, "bad escape in text string");
                }
                cp = cp * 16 + (uint32_t)h;
            }
            i += (size_t)digits;
            if (cp > 0x10ffff) {
                free(buf);
                return FAIL(MS_ERR_CORRUPT, off, "bad escape in text string");
            }
            if (quoted)
                buf[o++] = (uint8_t)cp;
            else
                o += put_utf8(buf + o, cp);
        } else if (quoted) {
            switch (e) {
            case 'n': buf[o++] = '\n'; break;
            case 't': buf[o++] = '\t'; break;
            case 'r': buf[o++] = '\r'; break;
            case '\\': buf[o++] = '\\'; break;
            case '\'': buf[o++] = '\''; break;
            case '"': buf[o++] = '"'; break;
            default: buf[o++] = '\\'; buf[o++] = e; break;
            }
        } else {
            buf[o++] = '\\';
            o += put_utf8(buf + o, e);
        }
    }
    int rc = ms__vm_push_string(vm, buf, o, quoted ? T_NUM : T_STR, off);
    free(buf);
    return rc;
}

/* Protocol 0's text opcodes: INT, LONG, FLOAT, PUT, GET, STRING, UNICODE. */
int ms__vm_op_text(ms_vm *vm, unsigned op, int64_t off)
{
    ms_input *in = &vm->in;
    int rc;
    (void)in;
    (void)rc;
    switch (op) {
    case 'I': /* INT */
    case 'L': { /* LONG */
        const uint8_t *p;
        size_t n;
        CHECK(read_line(vm, 4096, &p, &n, off));
        CHECK(parse_text_int(vm, p, n, off));
        break;
    }
    case 'F': { /* FLOAT */
        const uint8_t *p;
        size_t n;
        CHECK(read_line(vm, 256, &p, &n, off));
        char buf[257];
        memcpy(buf, p, n);
        buf[n] = '\0';
        char *end;
        double d = strtod(buf, &end);
        if (end == buf || *end)
            return FAIL(MS_ERR_CORRUPT, off, "FLOAT argument is not a number");
        ms_val v = 0;
        CHECK(ms__vm_box_num(vm, N_FLOAT, 0, d, &v, off));
        CHECK(push(vm, v, off));
        break;
    }
    case 'p': /* PUT */
    case 'g': { /* GET */
        const uint8_t *p;
        size_t n;
        CHECK(read_line(vm, 32, &p, &n, off));
        uint64_t idx = 0;
        if (n == 0 || n > 19)
            return FAIL(MS_ERR_CORRUPT, off, "memo index is not a number");
        for (size_t i = 0; i < n; i++) {
            if (p[i] < '0' || p[i] > '9')
                return FAIL(MS_ERR_CORRUPT, off, "memo index is not a number");
            idx = idx * 10 + (uint64_t)(p[i] - '0');
        }
        if (op == 'p') {
            if (vm->sp <= frame_floor(vm))
                return FAIL(MS_ERR_CORRUPT, off, "PUT on an empty stack");
            CHECK(ms__vm_memo_put(vm, idx, vm->stack[vm->sp - 1], off));
        } else {
            ms_val v = 0;
            CHECK(ms__vm_memo_get(vm, idx, &v, off));
            CHECK(push(vm, v, off));
        }
        break;
    }
    case 'S': /* STRING */
    case 'V': { /* UNICODE */
        const uint8_t *p;
        size_t n;
        size_t limit = vm->lim.max_string < MAX_TEXT_LINE * 1024 ? (size_t)vm->lim.max_string
                                                                 : MAX_TEXT_LINE * 1024;
        CHECK(read_line(vm, limit, &p, &n, off));
        CHECK(decode_text_string(vm, p, n, op == 'S', off));
        break;
    }
    }
    return 0;
}
