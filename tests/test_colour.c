/* Colours a reader can tell apart (render/colour.c):
 *  - CIEDE2000 gives the values of the test pairs published with the formula (Sharma,
 *    Wu and Dalal 2005, table 1) to four decimals, and is symmetric;
 *  - on every bundled snapshot's default chart (what `memsnap render FILE -o OUT.png`
 *    draws: the run axis over the run's iterations, 1600x800), the colours of the bands
 *    one can see (2 px tall somewhere) and of the legend's swatches are pairwise at least
 *    12 apart, so two sites never share a hue as modeling_utils.py:3645 and
 *    activations.py:66 did;
 *  - a site keeps its own colour (its text's) unless something it is shown with looks
 *    like it, and two panels showing the same sites colour them alike. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "chart.h"
#include "chart_impl.h"
#include "memsnap/run.h"

static void sharma_pairs(void)
{
    static const double T[][7] = {
        {50.0000, 2.6772, -79.7751, 50.0000, 0.0000, -82.7485, 2.0425},
        {50.0000, 3.1571, -77.2803, 50.0000, 0.0000, -82.7485, 2.8615},
        {50.0000, 2.8361, -74.0200, 50.0000, 0.0000, -82.7485, 3.4412},
        {50.0000, -1.3802, -84.2814, 50.0000, 0.0000, -82.7485, 1.0000},
        {50.0000, 0.0000, 0.0000, 50.0000, -1.0000, 2.0000, 2.3669},
        {50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0009, 7.1792},
        {60.2574, -34.0099, 36.2677, 60.4626, -34.1751, 39.4387, 1.2644},
        {63.0109, -31.0961, -5.8663, 62.8187, -29.7946, -4.0864, 1.2630},
        {22.7233, 20.0904, -46.6940, 23.0331, 14.9730, -42.5619, 2.0373},
        {90.8027, -2.0831, 1.4410, 91.1528, -1.6435, 0.0447, 1.4441},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        const double *t = T[i];
        char ctx[32];
        snprintf(ctx, sizeof ctx, "pair %zu", i + 1);
        CHECK_NEAR_IN(ctx, msr__ciede2000(t[0], t[1], t[2], t[3], t[4], t[5]), t[6], 0.00005);
        CHECK_NEAR_IN(ctx, msr__ciede2000(t[3], t[4], t[5], t[0], t[1], t[2]), t[6], 0.00005);
    }
    msr_chart_rgb white = {1, 1, 1}, black = {0, 0, 0};
    CHECK_NEAR(msr__delta_e(white, white), 0, 1e-9);
    CHECK_NEAR(msr__delta_e(white, black), 100, 0.01); /* L* 100 against 0 */
}

static bool same_rgb(msr_chart_rgb a, msr_chart_rgb b)
{
    return a.r == b.r && a.g == b.g && a.b == b.b;
}

typedef struct tally {
    int charts, pairs;
    double min_de;
    char worst[300];
} tally;

static int add_colour(msr_chart_rgb *set, int n, msr_chart_rgb c)
{
    for (int i = 0; i < n; i++)
        if (same_rgb(set[i], c))
            return n;
    set[n] = c;
    return n + 1;
}

/* The chart `memsnap render` draws by default, from the file's run. */
static void default_chart(const char *path, const char *name, void *arg)
{
    tally *t = arg;
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_file(&s, path, NULL, &err)) {
        check_fail("%s: %s", name, err.message);
        return;
    }
    int device = ms_snapshot_busiest_device(s);
    ms_run *run = NULL;
    const ms_timeline *tl = NULL;
    msr_chart_source src = {0};
    msr_chart *ch = NULL;
    int rc = ms_run_open(&run, s, device, NULL, &err);
    if (!rc)
        rc = ms_run_timeline(&tl, run, &err);
    if (!rc) {
        src = (msr_chart_source){.snap = s, .trace = ms_snapshot_trace(s, device), .tl = tl,
                                .label = name};
        rc = ms_run_iterations(&src.iterations, run, &err);
    }
    if (!rc)
        rc = ms_run_idle(&src.idle, run, &err);
    msr_chart_spec spec = {0};
    spec.x_mode = MSR_CHART_X_RUN;
    if (!rc)
        rc = msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 1600, 800}, &err);
    CHECK_EQ_INT_IN(name, rc, 0);
    if (!rc) {
        /* The bands one can see, by what they show (an allocation's band is a shade of its
         * site's colour), and the legend's swatches. */
        msr_chart_rgb set[MSR_CHART_MAX_GROUPS < 512 ? MSR_CHART_MAX_GROUPS : 512];
        int n = 0;
        for (size_t g = 0; g < ch->n_groups && n < 500; g++) {
            const msr_chart_group *gp = &ch->groups[g];
            if (gp->kind == MSR_CHART_GROUP_LEAK)
                continue;
            int64_t top = 0;
            for (size_t c = 0; c < ch->n_cols; c++)
                if (ch->heights[g * ch->n_cols + c] > top)
                    top = ch->heights[g * ch->n_cols + c];
            if (ch->y_max > 0 && (double)top / ch->y_max * ch->plot.h >= 1.5)
                n = add_colour(set, n, gp->key_rgb);
        }
        for (size_t i = 0; i < ch->n_legend && n < 500; i++)
            if (ch->legend[i].key == MSR_CHART_KEY_SWATCH)
                n = add_colour(set, n, ch->legend[i].rgb);
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                double d = msr__delta_e(set[i], set[j]);
                t->pairs++;
                if (d < t->min_de) {
                    t->min_de = d;
                    snprintf(t->worst, sizeof t->worst, "%s: #%02x%02x%02x and #%02x%02x%02x",
                             name, (int)lround(set[i].r * 255), (int)lround(set[i].g * 255),
                             (int)lround(set[i].b * 255), (int)lround(set[j].r * 255),
                             (int)lround(set[j].g * 255), (int)lround(set[j].b * 255));
                }
                if (d < MSR__MIN_DELTA_E)
                    check_fail("%s: two bands %.2f apart (CIEDE2000), under %.0f", name, d,
                               MSR__MIN_DELTA_E);
            }
        t->charts++;
    }
    msr_chart_free(ch);
    ms_run_free(run);
    ms_snapshot_free(s);
}

/* A name keeps its own colour unless it collides; which of two colliding names moves
 * does not depend on the order they come in. */
static void resolution(void)
{
    msr_chart_theme th = msr__theme(false);
    const char *names[] = {"train/a.py:1 f", "train/b.py:2 g", "train/c.py:3 h"};
    msr_chart_rgb one[1], three[3], rev[3];
    CHECK_EQ_INT(msr__distinct_colours(one, names, NULL, 1, &th), 0);
    CHECK_TRUE(same_rgb(one[0], msr__text_rgb(names[0])));
    CHECK_EQ_INT(msr__distinct_colours(three, names, NULL, 3, &th), 0);
    const char *back[] = {names[2], names[1], names[0]};
    CHECK_EQ_INT(msr__distinct_colours(rev, back, NULL, 3, &th), 0);
    for (int i = 0; i < 3; i++)
        CHECK_TRUE(same_rgb(three[i], rev[2 - i]));
    /* Forty names: every pair far enough apart as long as the candidates allow. */
    char text[40][32];
    const char *many[40];
    for (int i = 0; i < 40; i++) {
        snprintf(text[i], sizeof text[i], "site_%d.py:%d forward", i, 10 + i);
        many[i] = text[i];
    }
    msr_chart_rgb out[40];
    CHECK_EQ_INT(msr__distinct_colours(out, many, NULL, 30, &th), 0);
    int close = 0;
    for (int i = 0; i < 30; i++)
        for (int j = i + 1; j < 30; j++)
            close += msr__delta_e(out[i], out[j]) < MSR__MIN_DELTA_E;
    CHECK_EQ_INT(close, 0);
}

int main(void)
{
    sharma_pairs();
    resolution();
    tally t = {0, 0, INFINITY, ""};
    size_t files = check_each_snapshot(default_chart, &t);
    CHECK_TRUE(files >= 70);
    CHECK_EQ_INT((int)files, t.charts);
    printf("%d charts, %d pairs of shown colours, closest %.2f (%s)\n", t.charts, t.pairs,
           t.min_de, t.worst);
    return check_finish("test_colour");
}
