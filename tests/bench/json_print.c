/* JSON printing time alone: cJSON_Print against cli/json_print.c on the same document,
 * plain and with the whole-integer rule (what report and --json use), in rounds (one
 * print of each per round), 9 rounds, medians. The document is any JSON
 * file, e.g. the summary.json that `memsnap report long_trace.pickle -o DIR` wrote:
 *     cmake --build build --target json_print_bench && build/tests/json_print_bench DIR/summary.json
 * Parsed back, its numbers are the doubles report printed. Also checks that the two
 * texts are identical (without the whole-integer rule). Not a test. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_print.h"

#define ROUNDS 9

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: json_print_bench FILE.json\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: cannot read\n", argv[1]);
        return 2;
    }
    fclose(f);
    text[n] = '\0';
    cJSON *doc = cJSON_Parse(text);
    free(text);
    if (!doc) {
        fprintf(stderr, "%s: not JSON\n", argv[1]);
        return 2;
    }
    double tc[ROUNDS], tm[ROUNDS], tw[ROUNDS];
    size_t len = 0;
    int same = 1;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ms();
        char *a = cJSON_Print(doc);
        double t1 = now_ms();
        char *b = cli_json_format(doc, false, &len);
        double t2 = now_ms();
        char *w = cli_json_format(doc, true, NULL);
        double t3 = now_ms();
        free(w);
        tc[r] = t1 - t0;
        tm[r] = t2 - t1;
        tw[r] = t3 - t2;
        same &= a && b && strcmp(a, b) == 0;
        free(a);
        free(b);
    }
    qsort(tc, ROUNDS, sizeof tc[0], by_value);
    qsort(tm, ROUNDS, sizeof tm[0], by_value);
    qsort(tw, ROUNDS, sizeof tw[0], by_value);
    printf("%zu bytes, medians (min): cJSON_Print %.1f ms (%.1f); cli_json_format %.1f ms "
           "(%.1f), texts %s; with whole integers %.1f ms (%.1f)\n",
           len, tc[ROUNDS / 2], tc[0], tm[ROUNDS / 2], tm[0], same ? "identical" : "DIFFER",
           tw[ROUNDS / 2], tw[0]);
    cJSON_Delete(doc);
    return same ? 0 : 1;
}
