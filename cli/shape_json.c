/* The text lines of the recording's shape, printed from its JSON (json/json_shape.h). */
#include "shape_json.h"

#include <stdio.h>
#include <string.h>

#include "term_text.h"

static const char *jtext(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "text"));
}

static void line(FILE *out, int indent, int width, const char *label, const char *text)
{
    if (width)
        fprintf(out, "%*s%-*s %s\n", indent, "", width, label, cli_term(text));
    else
        fprintf(out, "%*s%s: %s\n", indent, "", label, cli_term(text));
}

void shape_print_json(FILE *out, const cJSON *shape, int indent, int width)
{
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(shape, "text"));
    if (!text)
        return;
    line(out, indent, width, "shape", text);
    const char *c = jtext(shape, "compile");
    if (c && !strncmp(c, "compile ", 8))
        line(out, indent, width, "compile", c + 8);
    const char *g = jtext(shape, "cuda_graphs");
    if (g && !strncmp(g, "CUDA graphs: ", 13))
        line(out, indent, width, "CUDA graphs", g + 13);
}

size_t shape_line_json(const cJSON *shape, char *buf, size_t cap)
{
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(shape, "text"));
    const char *c = jtext(shape, "compile"), *g = jtext(shape, "cuda_graphs");
    int n = snprintf(buf, cap, "%s%s%s%s%s", text ? text : "", c ? "; " : "", c ? c : "",
                     g ? "; " : "", g ? g : "");
    return n < 0 ? 0 : (size_t)n;
}
