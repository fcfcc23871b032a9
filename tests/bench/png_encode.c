/* PNG encoding time alone: cairo's writer against render/png_write.c on the same image,
 * in rounds (one write of each per round), 5 rounds, medians. The image is any PNG,
 * e.g. what `memsnap render long_trace.pickle -o long.png` drew:
 *     cmake --build build --target png_encode_bench && build/tests/png_encode_bench long.png
 * (docs/benchmarks.md has the figures). Not a test. */
#include <cairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../check_membuf.h"
#include "png_write.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s IMAGE.png\n", argv[0]);
        return 2;
    }
    cairo_surface_t *img = cairo_image_surface_create_from_png(argv[1]);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        fprintf(stderr, "%s: %s\n", argv[1], cairo_status_to_string(cairo_surface_status(img)));
        return 2;
    }
    enum { ROUNDS = 5 };
    double t[2][ROUNDS];
    size_t bytes[2] = {0, 0};
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < 2; k++) {
            membuf b = {0};
            ms_error err;
            double t0 = now();
            int rc = k == 0 ? (int)cairo_surface_write_to_png_stream(img, to_mem, &b)
                            : msr_png_write(img, to_mem, &b, NULL, -1, &err);
            t[k][r] = now() - t0;
            bytes[k] = b.n;
            free(b.p);
            if (rc) {
                fprintf(stderr, "write %d failed\n", k);
                return 1;
            }
        }
    static const char *const names[2] = {"cairo_surface_write_to_png", "msr_png_write"};
    for (int k = 0; k < 2; k++) {
        qsort(t[k], ROUNDS, sizeof t[k][0], by_value);
        printf("%-28s median %6.1f ms (%.1f-%.1f), %zu bytes\n", names[k], t[k][ROUNDS / 2] * 1e3,
               t[k][0] * 1e3, t[k][ROUNDS - 1] * 1e3, bytes[k]);
    }
    cairo_surface_destroy(img);
    return 0;
}
