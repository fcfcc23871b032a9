/* Colours of the chart model (see chart_impl.h): the light and dark themes, the band
 * palette and the shades that keep neighbouring bands of one hue apart. */
#include "chart_impl.h"

/* Hues picked to stay apart from each other and from the neutral "other" grey. None is
 * red or next to it: red marks leaks and out-of-memory errors only. */
static const msr_chart_rgb PALETTE[] = {
    {0.26, 0.52, 0.78}, {0.96, 0.62, 0.17}, {0.30, 0.66, 0.33}, {0.16, 0.33, 0.58},
    {0.58, 0.44, 0.78}, {0.60, 0.48, 0.30}, {0.90, 0.47, 0.75}, {0.72, 0.72, 0.20},
    {0.20, 0.74, 0.80}, {0.98, 0.78, 0.25}, {0.15, 0.55, 0.52}, {0.74, 0.62, 0.92},
};
_Static_assert(sizeof PALETTE / sizeof PALETTE[0] == MSR__PALETTE_N, "MSR__PALETTE_N");

msr_chart_rgb msr__palette(size_t k)
{
    return PALETTE[k % MSR__PALETTE_N];
}

uint32_t msr__hash32(uint64_t v)
{
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    v *= 0xc4ceb9fe1a85ec53ULL;
    v ^= v >> 33;
    return (uint32_t)v;
}

static uint32_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return msr__hash32(h);
}

msr_chart_rgb msr__name_rgb(const char *name)
{
    return PALETTE[hash_text(name) % MSR__PALETTE_N];
}

static msr_chart_rgb grey(double v);

static double hue_channel(double p, double q, double t)
{
    if (t < 0)
        t += 1;
    if (t > 1)
        t -= 1;
    if (t < 1.0 / 6)
        return p + (q - p) * 6 * t;
    if (t < 0.5)
        return q;
    if (t < 2.0 / 3)
        return p + (q - p) * (2.0 / 3 - t) * 6;
    return p;
}

msr_chart_rgb msr__hsl(double h_deg, double s, double l)
{
    double h = fmod(h_deg, 360.0) / 360.0;
    double q = l < 0.5 ? l * (1 + s) : l + s - l * s, p = 2 * l - q;
    msr_chart_rgb c = {hue_channel(p, q, h + 1.0 / 3), hue_channel(p, q, h),
                      hue_channel(p, q, h - 1.0 / 3)};
    return c;
}

/* FlameGraph's --hash colouring: the text alone picks the colour, so a site keeps it in
 * every panel, file, zoom level, view and report. The hash picks one of the palette's
 * twelve hues (far apart, none red: red marks leaks and OOMs) and one of three
 * lightnesses, so neighbouring sites rarely look alike. */
msr_chart_rgb msr__text_rgb(const char *text)
{
    uint32_t h = hash_text(text ? text : "");
    return msr__text_rgb_variant(h % MSR__PALETTE_N + MSR__PALETTE_N * ((h / MSR__PALETTE_N) % 3u));
}

uint32_t msr__text_hash(const char *text)
{
    return hash_text(text ? text : "");
}

msr_chart_rgb msr__text_rgb_variant(size_t k)
{
    msr_chart_rgb base = PALETTE[k % MSR__PALETTE_N];
    switch ((k / MSR__PALETTE_N) % 3u) {
    case 0:
        return base;
    case 1:
        return msr__mix(base, grey(1.0), 0.30);
    default:
        return msr__mix(base, grey(0.0), 0.22);
    }
}

double msr__hue(msr_chart_rgb c, double *sat)
{
    double mx = fmax(c.r, fmax(c.g, c.b)), mn = fmin(c.r, fmin(c.g, c.b)), d = mx - mn;
    double l = (mx + mn) / 2;
    if (sat)
        *sat = d <= 0 ? 0 : d / (1 - fabs(2 * l - 1));
    if (d <= 0)
        return 0;
    double h = mx == c.r ? fmod((c.g - c.b) / d, 6.0) : mx == c.g ? (c.b - c.r) / d + 2 : (c.r - c.g) / d + 4;
    h *= 60;
    return h < 0 ? h + 360 : h;
}

/* One colour per category, the same in both themes so a chart reads the same light or
 * dark: mid-tone hues that keep their contrast against white and near-black. None is red,
 * which marks leaks (the highlight outline and its pale fill), and "other" is a slate
 * that stays apart from the neutral grey of memory no allocation accounts for. */
static const msr_chart_rgb CATEGORY_RGB[MS_CAT_COUNT] = {
    [MS_CAT_PARAMETER] = {0.26, 0.47, 0.75},       /* blue */
    [MS_CAT_GRADIENT] = {0.95, 0.60, 0.15},        /* orange */
    [MS_CAT_OPTIMIZER_STATE] = {0.55, 0.40, 0.75}, /* purple */
    [MS_CAT_ACTIVATION] = {0.32, 0.66, 0.36},      /* green */
    [MS_CAT_TEMPORARY] = {0.36, 0.76, 0.82},       /* cyan */
    [MS_CAT_WORKSPACE] = {0.60, 0.50, 0.34},       /* brown (short of red) */
    [MS_CAT_INPUT] = {0.78, 0.80, 0.28},           /* olive */
    [MS_CAT_OTHER] = {0.50, 0.56, 0.64},           /* slate */
};

msr_chart_rgb msr__category_rgb(ms_category c)
{
    return (unsigned)c < MS_CAT_COUNT ? CATEGORY_RGB[c] : CATEGORY_RGB[MS_CAT_OTHER];
}

void msr__category_label(ms_category c, char *buf, size_t cap)
{
    msr__copy_text(buf, cap, ms_category_name(c));
    for (char *p = buf; *p; p++)
        if (*p == '_')
            *p = ' ';
}

msr_chart_rgb msr__mix(msr_chart_rgb a, msr_chart_rgb b, double t)
{
    msr_chart_rgb r = {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
    return r;
}

static msr_chart_rgb grey(double v)
{
    msr_chart_rgb r = {v, v, v};
    return r;
}

/* Neighbouring bands of one site must stay tellable apart, so each allocation gets its
 * site's hue lightened or darkened by an amount fixed by its index. */
msr_chart_rgb msr__shade(msr_chart_rgb base, uint64_t key)
{
    double t = (double)(msr__hash32(key) % 1000u) / 1000.0 - 0.5; /* -0.5 .. 0.5 */
    if (t >= 0)
        return msr__mix(base, grey(1.0), t * 0.55);
    return msr__mix(base, grey(0.0), -t * 0.45);
}

#define GREY(v) {v, v, v}
static const msr_chart_theme LIGHT = {
    .bg = GREY(1.0), .fg = GREY(0.12), .muted = GREY(0.42), .grid = GREY(0.90),
    .other = GREY(0.79), .reserved = GREY(0.10), .peak = {0.78, 0.08, 0.10},
    .oom = {0.85, 0.00, 0.00}, .highlight = {0.90, 0.00, 0.05}, .outline = GREY(0.25)};
static const msr_chart_theme DARK = {
    .bg = {0.09, 0.10, 0.12}, .fg = GREY(0.90), .muted = GREY(0.62), .grid = GREY(0.22),
    .other = GREY(0.36), .reserved = GREY(0.95), .peak = {1.00, 0.42, 0.40},
    .oom = {1.00, 0.30, 0.25}, .highlight = {1.00, 0.22, 0.22}, .outline = GREY(0.80)};
#undef GREY

msr_chart_theme msr__theme(bool dark)
{
    return dark ? DARK : LIGHT;
}
