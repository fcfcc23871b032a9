/* Colours a reader can tell apart (see chart_impl.h): the CIEDE2000 colour difference,
 * and the rule that keeps the bands one chart shows apart while a site keeps its own
 * colour wherever nothing it is shown with looks like it.
 *
 * CIEDE2000 is written from the published formula (Sharma, Wu and Dalal, "The CIEDE2000
 * color-difference formula: implementation notes, supplementary test data, and
 * mathematical observations", Color Research & Application 30(1), 2005), with sRGB
 * (IEC 61966-2-1) to CIE XYZ under D65 and XYZ to CIELAB; tests/test_colour.c checks it
 * against the paper's test pairs. */
#include "chart_impl.h"

#include <math.h>

typedef struct lab {
    double L, a, b;
} lab;

static double linear(double u)
{
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    return u <= 0.04045 ? u / 12.92 : pow((u + 0.055) / 1.055, 2.4);
}

static double lab_f(double t)
{
    const double d = 6.0 / 29.0;
    return t > d * d * d ? cbrt(t) : t / (3 * d * d) + 4.0 / 29.0;
}

static lab to_lab(msr_chart_rgb c)
{
    double r = linear(c.r), g = linear(c.g), b = linear(c.b);
    double X = 0.4124564 * r + 0.3575761 * g + 0.1804375 * b;
    double Y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b;
    double Z = 0.0193339 * r + 0.1191920 * g + 0.9503041 * b;
    double fx = lab_f(X / 0.95047), fy = lab_f(Y / 1.0), fz = lab_f(Z / 1.08883);
    return (lab){116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)};
}

static double deg(double rad)
{
    return rad * 180.0 / M_PI;
}

static double rad(double d)
{
    return d * M_PI / 180.0;
}

/* h' of the paper: the hue angle of (a', b') in degrees, 0 for a neutral colour. */
static double hue_angle(double a, double b)
{
    if (a == 0 && b == 0)
        return 0;
    double h = deg(atan2(b, a));
    return h < 0 ? h + 360 : h;
}

double msr__ciede2000(double L1, double a1, double b1, double L2, double a2, double b2)
{
    double C1 = hypot(a1, b1), C2 = hypot(a2, b2), Cbar = (C1 + C2) / 2;
    double c7 = pow(Cbar, 7), p25 = 6103515625.0; /* 25^7 */
    double G = 0.5 * (1 - sqrt(c7 / (c7 + p25)));
    double a1p = (1 + G) * a1, a2p = (1 + G) * a2;
    double C1p = hypot(a1p, b1), C2p = hypot(a2p, b2);
    double h1p = hue_angle(a1p, b1), h2p = hue_angle(a2p, b2);
    double dLp = L2 - L1, dCp = C2p - C1p, dhp = 0;
    if (C1p * C2p != 0) {
        dhp = h2p - h1p;
        if (dhp > 180)
            dhp -= 360;
        else if (dhp < -180)
            dhp += 360;
    }
    double dHp = 2 * sqrt(C1p * C2p) * sin(rad(dhp / 2));
    double Lbp = (L1 + L2) / 2, Cbp = (C1p + C2p) / 2, hbp;
    if (C1p * C2p == 0)
        hbp = h1p + h2p;
    else if (fabs(h1p - h2p) <= 180)
        hbp = (h1p + h2p) / 2;
    else if (h1p + h2p < 360)
        hbp = (h1p + h2p + 360) / 2;
    else
        hbp = (h1p + h2p - 360) / 2;
    double T = 1 - 0.17 * cos(rad(hbp - 30)) + 0.24 * cos(rad(2 * hbp)) +
               0.32 * cos(rad(3 * hbp + 6)) - 0.20 * cos(rad(4 * hbp - 63));
    double dtheta = 30 * exp(-((hbp - 275) / 25) * ((hbp - 275) / 25));
    double cb7 = pow(Cbp, 7);
    double RC = 2 * sqrt(cb7 / (cb7 + p25));
    double l50 = (Lbp - 50) * (Lbp - 50);
    double SL = 1 + 0.015 * l50 / sqrt(20 + l50);
    double SC = 1 + 0.045 * Cbp, SH = 1 + 0.015 * Cbp * T;
    double RT = -sin(rad(2 * dtheta)) * RC;
    double l = dLp / SL, c = dCp / SC, h = dHp / SH;
    return sqrt(l * l + c * c + h * h + RT * c * h);
}

double msr__delta_e(msr_chart_rgb x, msr_chart_rgb y)
{
    lab p = to_lab(x), q = to_lab(y);
    return msr__ciede2000(p.L, p.a, p.b, q.L, q.a, q.b);
}

/* Where a site's own colour collides, the colours it may take instead: the twelve hues
 * of the palette at three lightnesses (what msr__text_rgb gives), then fifteen more found
 * by taking, from a grid of hues 36°-319° (none red: red marks leaks and OOMs) at eight
 * lightnesses and four saturations, the colour farthest (CIEDE2000) from every colour
 * already chosen and from the themes' greys and backgrounds, until none was 9 away (the
 * first fifteen, with the 20 of the first 36 that keep the distance, are 35 colours at
 * least 12.4 apart; the rest give a chart of more sites room to pick from). */
static const msr_chart_rgb EXTRA[] = {
    {0.422, 0.064, 0.576}, {0.532, 0.948, 0.795}, {0.519, 0.924, 0.316}, {0.776, 0.831, 0.649},
    {0.076, 0.684, 0.583}, {0.847, 0.100, 0.900}, {0.432, 0.208, 0.365}, {0.208, 0.208, 0.912},
    {0.247, 0.433, 0.513}, {0.230, 0.208, 0.432}, {0.402, 0.432, 0.208}, {0.649, 0.831, 0.813},
    {0.948, 0.948, 0.532}, {0.684, 0.076, 0.603}, {0.316, 0.397, 0.924}, {0.576, 0.457, 0.064},
    {0.418, 0.325, 0.675}, {0.064, 0.064, 0.576}, {0.175, 0.825, 0.522}, {0.100, 0.900, 0.873},
    {0.497, 0.726, 0.154}, {0.909, 0.785, 0.571}, {0.607, 0.100, 0.900}, {0.532, 0.823, 0.948},
    {0.487, 0.540, 0.753}, {0.831, 0.649, 0.776}, {0.371, 0.576, 0.064}, {0.112, 0.528, 0.417},
    {0.088, 0.604, 0.792}, {0.851, 0.424, 0.936}, {0.649, 0.691, 0.831}, {0.568, 0.792, 0.620},
    {0.740, 0.900, 0.100}, {0.576, 0.371, 0.064}, {0.900, 0.100, 0.660}, {0.900, 0.847, 0.100},
    {0.088, 0.792, 0.205}, {0.709, 0.810, 0.430}, {0.605, 0.325, 0.675}, {0.208, 0.432, 0.298},
    {0.487, 0.682, 0.753}, {0.424, 0.247, 0.513}, {0.753, 0.726, 0.487}, {0.532, 0.948, 0.615},
    {0.601, 0.532, 0.948}, {0.718, 0.487, 0.753}, {0.175, 0.825, 0.695}, {0.088, 0.417, 0.792},
    {0.133, 0.215, 0.627}, {0.675, 0.547, 0.325},
};
#define N_EXTRA (sizeof EXTRA / sizeof EXTRA[0])
#define N_CANDIDATES (3 * MSR__PALETTE_N + N_EXTRA)

static msr_chart_rgb candidate(size_t k)
{
    return k < 3 * MSR__PALETTE_N ? msr__text_rgb_variant(k) : EXTRA[k - 3 * MSR__PALETTE_N];
}

typedef struct placed {
    lab *at;
    size_t n;
} placed;

/* The smallest difference from `c` to any colour placed, stopping early once it falls
 * under `enough` (the caller only needs to know it does). */
static double nearest(const placed *p, lab c, double enough)
{
    double best = INFINITY;
    for (size_t i = 0; i < p->n && best >= enough; i++) {
        double d = msr__ciede2000(c.L, c.a, c.b, p->at[i].L, p->at[i].a, p->at[i].b);
        best = d < best ? d : best;
    }
    return best;
}

int msr__distinct_colours(msr_chart_rgb *out, const char *const *names, const bool *shown,
                         size_t n, const msr_chart_theme *theme)
{
    for (size_t i = 0; i < n; i++)
        out[i] = msr__text_rgb(names[i]);
    msr__keyed *order = msr__alloc_n(n ? n : 1, sizeof *order);
    lab *at = msr__alloc_n(n + 4, sizeof *at);
    if (!order || !at) {
        free(order);
        free(at);
        return -1;
    }
    lab cand[N_CANDIDATES];
    for (size_t c = 0; c < N_CANDIDATES; c++)
        cand[c] = to_lab(candidate(c));
    /* What no band may look like: the background, the grey of what no band names and the
     * legend's muted swatch. */
    placed p = {at, 0};
    p.at[p.n++] = to_lab(theme->bg);
    p.at[p.n++] = to_lab(theme->other);
    p.at[p.n++] = to_lab(theme->muted);
    /* Names in the order of their hash, not their rank: which of two names keeps its own
     * colour is then the same in every chart showing both (ranks differ between files). */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!shown || shown[i])
            order[k++] = (msr__keyed){msr__text_hash(names[i]), i};
    qsort(order, k, sizeof *order, msr__keyed_up);
    /* First the names that keep their own colour: each unless it looks like one kept
     * before it. Only these decide who keeps: a name moved elsewhere never pushes
     * another from its colour, so a name keeps it in every chart where the names before
     * it that look like it are absent. */
    bool *moved = msr__alloc_n(k ? k : 1, sizeof *moved);
    if (!moved) {
        free(order);
        free(at);
        return -1;
    }
    for (size_t j = 0; j < k; j++) {
        lab own = to_lab(out[order[j].index]);
        moved[j] = nearest(&p, own, MSR__MIN_DELTA_E) < MSR__MIN_DELTA_E;
        if (!moved[j])
            p.at[p.n++] = own;
    }
    /* Then the others, each the first candidate, from a place its name fixes, that keeps
     * the distance to every colour placed (so a moved name too keeps its colour while
     * what it is shown with leaves room for it); with none, the farthest from all. */
    for (size_t j = 0; j < k; j++) {
        if (!moved[j])
            continue;
        size_t i = order[j].index;
        size_t start = (size_t)order[j].key % N_CANDIDATES, pick = start;
        double pick_d = -1;
        for (size_t t = 0; t < N_CANDIDATES && pick_d < MSR__MIN_DELTA_E; t++) {
            size_t c = (start + t) % N_CANDIDATES;
            /* Stops as soon as it cannot beat the best so far. */
            double d = nearest(&p, cand[c], pick_d);
            if (d > pick_d) {
                pick_d = d;
                pick = c;
            }
        }
        out[i] = candidate(pick);
        p.at[p.n++] = cand[pick];
    }
    free(moved);
    free(order);
    free(at);
    return 0;
}

typedef struct union_name {
    const char *name;
    bool shown;
} union_name;

static int by_name(const void *x, const void *y)
{
    return strcmp(((const union_name *)x)->name, ((const union_name *)y)->name);
}

int msr__colours_together(msr_chart *const *charts, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += charts[i]->n_key_names;
    if (n < 2 || total == 0)
        return 0;
    union_name *u = msr__alloc_n(total, sizeof *u);
    const char **names = msr__alloc_n(total, sizeof *names);
    bool *shown = msr__alloc_n(total, sizeof *shown);
    msr_chart_rgb *rgb = msr__alloc_n(total, sizeof *rgb);
    int rc = !u || !names || !shown || !rgb ? -1 : 0;
    size_t m = 0;
    for (size_t i = 0; !rc && i < n; i++)
        for (size_t k = 0; k < charts[i]->n_key_names; k++)
            u[m++] = (union_name){charts[i]->key_names[k], charts[i]->key_shown[k]};
    if (!rc) {
        /* Each name once; shown when a band of it shows in any panel. */
        qsort(u, m, sizeof *u, by_name);
        size_t k = 0;
        for (size_t i = 0; i < m; i++) {
            if (k && !strcmp(u[k - 1].name, u[i].name))
                u[k - 1].shown |= u[i].shown;
            else
                u[k++] = u[i];
        }
        m = k;
        for (size_t i = 0; i < m; i++) {
            names[i] = u[i].name;
            shown[i] = u[i].shown;
        }
        rc = msr__distinct_colours(rgb, names, shown, m, &charts[0]->theme);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        msr_chart *ch = charts[i];
        for (size_t g = 0; g < ch->n_groups; g++) {
            msr_chart_group *gp = &ch->groups[g];
            if (gp->key_index < 0 || (size_t)gp->key_index >= ch->n_key_names)
                continue;
            union_name want = {ch->key_names[gp->key_index], false};
            const union_name *hit = bsearch(&want, u, m, sizeof *u, by_name);
            if (!hit)
                continue;
            gp->key_rgb = rgb[hit - u];
            gp->fill = gp->kind == MSR_CHART_GROUP_ALLOC ? msr__shade(gp->key_rgb, gp->shade_key)
                                                        : gp->key_rgb;
            if (gp->legend >= 0 && (size_t)gp->legend < ch->n_legend &&
                ch->legend[gp->legend].key == MSR_CHART_KEY_SWATCH)
                ch->legend[gp->legend].rgb = gp->key_rgb;
        }
    }
    free(u);
    free(names);
    free(shown);
    free(rgb);
    return rc;
}
