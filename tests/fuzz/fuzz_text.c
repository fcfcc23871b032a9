/* libFuzzer target for the text that leaves memsnap: terminal escaping (cli/term_text.c),
 * the report's HTML and Markdown escaping (cli/report_util.c), JSON strings
 * (cli/json_print.c), and the UTF-8 cutting and cleaning of chart text (render/utf8.c).
 * Aborts when a raw control, bidi or invisible character gets through, when JSON does not
 * read back to the text, or when cut or cleaned text is not valid UTF-8. Also replayed
 * by replay_main.c over tests/fuzz/corpus_text. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json_print.h"
#include "report.h"
#include "term_text.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool valid_utf8(const char *s, size_t n)
{
    char buf[4096];
    if (n >= sizeof buf)
        return true;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return msr__utf8_safe(buf, buf, sizeof buf) == buf && strlen(buf) == n;
}

static bool has_raw_special(const char *s, bool allow_tab_nl)
{
    for (; *s; s++) {
        unsigned cp;
        size_t n = cli_term_special(s, &cp);
        if (n && !(allow_tab_nl && (cp == '\t' || cp == '\n')))
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2000)
        return 0;
    char in[2001];
    memcpy(in, data, size);
    in[size] = '\0';
    size_t len = strlen(in);

    char out[1024];
    cli_term_into(in, out, sizeof out);
    if (has_raw_special(out, false) || has_raw_special(cli_term(in), false))
        abort();

    char clean[512];
    const char *c = msr__utf8_safe(in, clean, sizeof clean);
    size_t cl = strlen(c);
    if (!valid_utf8(c, cl))
        abort();
    for (size_t max = 0; max <= cl; max += 1 + max / 4) {
        size_t k = msr__utf8_prefix(c, cl, max);
        if (k > max || k > cl || !valid_utf8(c, k))
            abort();
    }

    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    if (!f)
        return 0;
    report_html_escape(f, in);
    fclose(f);
    if (strchr(buf, '<') || strchr(buf, '>') || strchr(buf, '"') || has_raw_special(buf, true))
        abort();
    free(buf);
    f = open_memstream(&buf, &blen);
    if (!f)
        return 0;
    report_md_escape(f, in);
    fclose(f);
    if (strchr(buf, '<') || strchr(buf, '\n') || has_raw_special(buf, false))
        abort();
    free(buf);

    /* JSON: nothing a terminal obeys or hides, and the same text read back. */
    cJSON *js = cJSON_CreateString(in);
    char *jt = js ? cli_json_format(js, false, NULL) : NULL;
    if (jt) {
        if (has_raw_special(jt, false))
            abort();
        cJSON *back = cJSON_Parse(jt);
        if (valid_utf8(in, len) && back && (!cJSON_IsString(back) || strcmp(back->valuestring, in)))
            abort();
        cJSON_Delete(back);
    }
    free(jt);
    cJSON_Delete(js);
    return 0;
}
