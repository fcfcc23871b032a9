/* The OOM picture shows the rebuilt state to scale: drawn from oom_fragmentation.pickle
 * (one 1 GiB segment, 60 MiB blocks alternately allocated and free, a 124 MiB free tail,
 * a 200 MiB request), pixels where each block lies have its colour, and the red request
 * bar is as long as 200/1024 of the segment's bar. */
#include <cairo.h>

#include "check.h"
#include "memsnap/oom.h"
#include "oom_chart.h"

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig\n";
}

static void pixel(cairo_surface_t *img, int x, int y, int *r, int *g, int *b)
{
    const unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    uint32_t px = *(const uint32_t *)(data + y * stride + x * 4);
    *r = (int)(px >> 16 & 255), *g = (int)(px >> 8 & 255), *b = (int)(px & 255);
}

/* The row of the first pixel at column x, from y0 down, whose colour is red. */
static int red_run(cairo_surface_t *img, int y, int x0, int x1)
{
    int n = 0;
    for (int x = x0; x < x1; x++) {
        int r, g, b;
        pixel(img, x, y, &r, &g, &b);
        n += r > 180 && g < 80 && b < 80;
    }
    return n;
}

int main(void)
{
    ms_snapshot *s = NULL;
    ms_timeline *t = NULL;
    int device;
    if (check_open_timeline("testdata/oom_fragmentation.pickle", &s, &device, &t))
        return check_finish("test_oom_chart");
    ms_oom_report *r = NULL;
    ms_error err;
    if (ms_oom_report_build(&r, s, device, t, NULL, &err) || r->n != 1) {
        check_fail("analyze: %s", err.message);
    } else {
        const ms_oom *o = &r->items[0];
        int w = MSR_OOM_CHART_WIDTH, h = msr_oom_chart_height(o);
        cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
        cairo_t *cr = cairo_create(img);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_paint(cr);
        CHECK_EQ_INT(msr_oom_chart_draw(cr, 0, 0, w, h, s, o, "t", &err), 0);
        cairo_destroy(cr);
        cairo_surface_flush(img);
        /* The request bar and the segment bar: find their rows by colour. */
        int req_y = -1, seg_y = -1;
        for (int y = 0; y < h / 2 && (req_y < 0 || seg_y < 0); y++) {
            if (req_y < 0 && red_run(img, y, 140, w) > 100)
                req_y = y;
            int rr, gg, bb;
            pixel(img, 200, y, &rr, &gg, &bb);
            if (req_y >= 0 && y > req_y + 12 && seg_y < 0 && bb > 150 && rr < 150)
                seg_y = y + 3;
        }
        CHECK_TRUE(req_y >= 0 && seg_y > req_y);
        if (req_y >= 0 && seg_y > req_y) {
            /* The segment bar spans from x = 150 to 150 + plot width; one byte scale. */
            double plot_w = w - 150.0 - 20.0;
            int req_len = red_run(img, req_y + 2, 140, w);
            CHECK_NEAR((double)req_len, plot_w * 200.0 / 1024.0, 3);
            /* Walk the heap's blocks: each block's middle pixel is white when free. */
            const ms_heap *hp = o->heap;
            size_t checked = 0;
            for (size_t b = 0; b < hp->n_blocks; b++) {
                double mid = (double)(hp->blocks[b].address - hp->segments[0].address) +
                             (double)hp->blocks[b].size / 2;
                int x = (int)(150.0 + mid * plot_w / (double)hp->segments[0].total_size);
                int rr, gg, bb;
                pixel(img, x, seg_y + 10, &rr, &gg, &bb);
                bool white = rr > 240 && gg > 240 && bb > 240;
                /* The size label sits mid-left in free blocks; the pixel row below the
                 * text baseline is clear. */
                CHECK_EQ_INT(white, hp->blocks[b].state == MS_BLOCK_INACTIVE);
                checked++;
            }
            CHECK_EQ_INT(checked, 16);
        }
        cairo_surface_destroy(img);
        char dir[] = "/tmp/memsnap-oomchart-XXXXXX";
        if (mkdtemp(dir)) {
            char path[256];
            snprintf(path, sizeof path, "%s/o.svg", dir);
            CHECK_EQ_INT(msr_oom_chart_write(path, s, o, NULL, &err), 0);
            size_t len = 0;
            char *svg = check_read_text(path, &len);
            CHECK_TRUE(svg && strstr(svg, "<svg") != NULL);
            free(svg);
            snprintf(path, sizeof path, "%s/o.jpg", dir);
            CHECK_EQ_INT(msr_oom_chart_write(path, s, o, NULL, &err), MS_ERR_ARG);
            check_remove_dir(dir);
        }
    }
    ms_oom_report_free(r);
    ms_timeline_free(t);
    ms_snapshot_free(s);
    return check_finish("test_oom_chart");
}
