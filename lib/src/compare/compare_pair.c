/* Two files side by side: the numbers with their differences, the sites that explain
 * them, and a verdict a person can paste into a bug report. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"

static const char *const METRIC_NAMES[MS_M_COUNT] = {
    "peak_bytes",          "peak_time_us",   "reserved_peak_bytes",
    "reserved_end_bytes",  "live_end_bytes", "live_end_count",
    "allocs",              "ooms",           "events",
};

const char *ms_metric_name(ms_metric m)
{
    return (unsigned)m < MS_M_COUNT ? METRIC_NAMES[m] : "unknown";
}

/* ------------------------------------------------------------------ merging sites */

typedef struct site_ref {
    const ms_profile_site *s;
    int side; /* 0: a, 1: b */
} site_ref;

static int site_ref_order(const void *x, const void *y)
{
    const site_ref *a = x, *b = y;
    int c = cmp_site_key_cmp(a->s->site, a->s->function, b->s->site, b->s->function);
    return c ? c : a->side - b->side;
}

typedef struct merged {
    ms_site_delta d;
    bool in_a, in_b;
} merged;

/* Every site of either profile's list `set` once, with both sides' bytes (a site listed
 * twice on one side, which happens when two frames shorten to the same "file:line", is
 * summed). */
static int merge_sites(merged **out, size_t *n_out, const ms_profile *pa, const ms_profile *pb,
                       ms_site_set set, ms_error *err)
{
    const ms_profile_site *a = pa->sites[set], *b = pb->sites[set];
    size_t na = pa->n_sites[set], nb = pb->n_sites[set];
    *out = NULL;
    *n_out = 0;
    if (na > SIZE_MAX - nb)
        return ms__fail(err, MS_ERR_LIMIT, MS_NO_OFFSET, "too many sites");
    size_t n = na + nb;
    site_ref *refs = cmp_calloc(n, sizeof *refs);
    merged *m = cmp_calloc(n, sizeof *m);
    if (!refs || !m) {
        free(refs);
        free(m);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing sites");
    }
    for (size_t i = 0; i < na; i++)
        refs[i] = (site_ref){&a[i], 0};
    for (size_t i = 0; i < nb; i++)
        refs[na + i] = (site_ref){&b[i], 1};
    qsort(refs, n, sizeof *refs, site_ref_order);

    size_t k = 0;
    for (size_t i = 0; i < n;) {
        merged *cur = &m[k++];
        cur->d.site = refs[i].s->site;
        cur->d.function = refs[i].s->function;
        size_t j = i;
        for (; j < n && cmp_site_key_cmp(refs[j].s->site, refs[j].s->function, cur->d.site,
                                         cur->d.function) == 0;
             j++) {
            if (refs[j].side == 0) {
                cur->in_a = true;
                cur->d.a_bytes += (int64_t)refs[j].s->bytes;
                cur->d.a_count += refs[j].s->count;
            } else {
                cur->in_b = true;
                cur->d.b_bytes += (int64_t)refs[j].s->bytes;
                cur->d.b_count += refs[j].s->count;
            }
        }
        cur->d.delta_bytes = (int64_t)((uint64_t)cur->d.b_bytes - (uint64_t)cur->d.a_bytes);
        i = j;
    }
    free(refs);
    *out = m;
    *n_out = k;
    return 0;
}

static int changed_sites(ms_pair *p, ms_site_set set, ms_error *err)
{
    const ms_profile *a = p->a, *b = p->b;
    if (!a->sites_known[set] || !b->sites_known[set])
        return 0;
    merged *m = NULL;
    size_t n = 0;
    int rc = merge_sites(&m, &n, a, b, set, err);
    if (rc)
        return rc;
    ms_site_delta *d = cmp_calloc(n, sizeof *d);
    if (!d) {
        free(m);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing sites");
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (m[i].d.delta_bytes != 0)
            d[k++] = m[i].d;
    free(m);
    qsort(d, k, sizeof *d, cmp_site_delta_order);
    p->sites[set] = d;
    p->n_sites[set] = k;
    p->sites_known[set] = true;
    p->sites_complete[set] = a->sites_complete[set] && b->sites_complete[set];
    return 0;
}

/* Sites only one side has are judged on all allocations when both profiles have them;
 * otherwise on the peak lists, and only when both are complete, since a site missing
 * from a top-K list may simply have ranked lower there. */
static int one_sided_sites(ms_pair *p, ms_error *err)
{
    const ms_profile *a = p->a, *b = p->b;
    ms_site_set set;
    if (a->sites_known[MS_SITES_TOTAL] && b->sites_known[MS_SITES_TOTAL])
        set = MS_SITES_TOTAL;
    else if (a->sites_complete[MS_SITES_AT_PEAK] && b->sites_complete[MS_SITES_AT_PEAK])
        set = MS_SITES_AT_PEAK;
    else
        return 0;
    merged *m = NULL;
    size_t n = 0;
    int rc = merge_sites(&m, &n, a, b, set, err);
    if (rc)
        return rc;
    p->only_a = cmp_calloc(n, sizeof *p->only_a);
    p->only_b = cmp_calloc(n, sizeof *p->only_b);
    if (!p->only_a || !p->only_b) {
        free(m);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing sites");
    }
    for (size_t i = 0; i < n; i++) {
        if (m[i].in_a && !m[i].in_b)
            p->only_a[p->n_only_a++] = m[i].d;
        else if (m[i].in_b && !m[i].in_a)
            p->only_b[p->n_only_b++] = m[i].d;
    }
    free(m);
    qsort(p->only_a, p->n_only_a, sizeof *p->only_a, cmp_site_delta_order);
    qsort(p->only_b, p->n_only_b, sizeof *p->only_b, cmp_site_delta_order);
    return 0;
}

/* ------------------------------------------------------------------ the pair */

/* Growth per iteration is an average; a comparison speaks in whole bytes (and a hostile
 * summary's value is clamped, not converted out of range). */
static int64_t whole_bytes(double v)
{
    if (!(v > 0))
        return 0;
    if (v >= 9.2e18)
        return INT64_MAX;
    return (int64_t)(v + 0.5);
}

int ms_pair_compare(ms_pair **out, const ms_profile *a, const ms_profile *b, ms_error *err)
{
    *out = NULL;
    if (!a || !b)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_pair_compare: missing profile");
    ms_pair *p = calloc(1, sizeof *p);
    if (!p)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing files");
    p->a = a;
    p->b = b;
    p->m[MS_M_PEAK] = cmp_delta(a->peak_bytes, b->peak_bytes);
    /* Epoch times of two runs never line up; the time into each trace does. */
    /* Without a clock on either side there is no time of the peak to compare. */
    bool times = a->has_times && b->has_times;
    p->m[MS_M_PEAK_TIME] = cmp_delta(times ? a->peak_time_us - a->t_first_us : 0,
                                     times ? b->peak_time_us - b->t_first_us : 0);
    p->m[MS_M_RESERVED_PEAK] = cmp_delta(a->reserved_peak_bytes, b->reserved_peak_bytes);
    p->m[MS_M_RESERVED_END] = cmp_delta(a->reserved_end_bytes, b->reserved_end_bytes);
    p->m[MS_M_LIVE_END] = cmp_delta(a->live_end_bytes, b->live_end_bytes);
    p->m[MS_M_LIVE_END_COUNT] = cmp_delta((int64_t)a->live_end_count, (int64_t)b->live_end_count);
    p->m[MS_M_ALLOCS] = cmp_delta((int64_t)a->alloc_count, (int64_t)b->alloc_count);
    p->m[MS_M_OOMS] = cmp_delta((int64_t)a->oom_count, (int64_t)b->oom_count);
    p->m[MS_M_EVENTS] = cmp_delta((int64_t)a->events, (int64_t)b->events);

    int rc = 0;
    for (int set = 0; set < MS_SITE_SETS && rc == 0; set++)
        rc = changed_sites(p, (ms_site_set)set, err);
    if (!rc)
        rc = one_sided_sites(p, err);

    /* Iterations are compared pairwise as far as both runs go. */
    if (!rc && a->n_iterations && b->n_iterations) {
        size_t n = a->n_iterations < b->n_iterations ? a->n_iterations : b->n_iterations;
        p->iteration_peaks = cmp_calloc(n, sizeof *p->iteration_peaks);
        if (!p->iteration_peaks)
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing iterations");
        else {
            for (size_t i = 0; i < n; i++)
                p->iteration_peaks[i] = cmp_delta(a->iteration_peaks[i], b->iteration_peaks[i]);
            p->n_iterations = n;
        }
    }
    if (!rc && a->leaks_known && b->leaks_known) {
        p->leaks_known = true;
        p->leak_findings = cmp_delta((int64_t)a->leaks.findings, (int64_t)b->leaks.findings);
        p->leak_bytes = cmp_delta((int64_t)a->leaks.bytes, (int64_t)b->leaks.bytes);
        p->leak_growth = cmp_delta(whole_bytes(a->leaks.growth_bytes),
                                   whole_bytes(b->leaks.growth_bytes));
    }
    if (rc) {
        ms_pair_free(p);
        return rc;
    }

    bool same = a->n_iterations == b->n_iterations;
    for (int m = 0; m < MS_M_COUNT; m++)
        same = same && p->m[m].delta == 0;
    for (int set = 0; set < MS_SITE_SETS; set++)
        same = same && p->n_sites[set] == 0;
    for (size_t i = 0; i < p->n_iterations; i++)
        same = same && p->iteration_peaks[i].delta == 0;
    same = same && p->n_only_a == 0 && p->n_only_b == 0;
    same = same && (!p->leaks_known || (p->leak_findings.delta == 0 &&
                                        p->leak_bytes.delta == 0 && p->leak_growth.delta == 0));
    p->match = same;
    *out = p;
    return 0;
}

void ms_pair_free(ms_pair *p)
{
    if (!p)
        return;
    for (int set = 0; set < MS_SITE_SETS; set++)
        free(p->sites[set]);
    free(p->only_a);
    free(p->only_b);
    free(p->iteration_peaks);
    free(p);
}

/* ------------------------------------------------------------------ verdict */

typedef struct text {
    char *buf;
    size_t cap, len; /* len counts what was needed, even past cap */
} text;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(text *t, const char *fmt, ...)
{
    char *dst = t->len < t->cap ? t->buf + t->len : NULL;
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

/* The text writers' rule (memsnap/core.h) for a text put together piece by piece. */
static size_t text_done(text *t)
{
    if (t->cap && t->len >= t->cap)
        ms__utf8_trim(t->buf);
    return t->len;
}

static void signed_bytes(int64_t v, char *buf, size_t cap)
{
    if (cap < 2)
        return;
    uint64_t mag = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    buf[0] = v < 0 ? '-' : '+';
    ms_format_bytes(mag > INT64_MAX ? INT64_MAX : (int64_t)mag, buf + 1, cap - 1);
}

static void pct_words(const ms_delta *d, char *buf, size_t cap)
{
    double mag = d->pct < 0 ? -d->pct : d->pct;
    if (!d->pct_valid)
        snprintf(buf, cap, "from nothing");
    /* Whole percents read better once the difference is large; small ones keep a
     * decimal so "0.4%" does not turn into "0%". */
    else if (mag >= 10.0)
        snprintf(buf, cap, "%.0f%%", mag);
    else
        snprintf(buf, cap, "%.1f%%", mag);
}

/* "file:line function", or just the location when the function is unknown. */
#define SITE_FMT "%s%s%s"
#define SITE_ARGS(d) (d)->site, (d)->function[0] ? " " : "", (d)->function

/* Names the sites that explain `total` (same sign): the first alone when it holds at
 * least half, else up to three that together hold most of it. */
static void explain(text *t, const ms_site_delta *sites, size_t n, int64_t total,
                    const char *where)
{
    const ms_site_delta *pick[3];
    size_t k = 0;
    int64_t covered = 0;
    for (size_t i = 0; i < n && k < 3; i++) {
        if ((total > 0) != (sites[i].delta_bytes > 0) || sites[i].delta_bytes == 0)
            continue;
        /* A site holding under 5% of the change explains nothing worth a name. */
        double share = (double)sites[i].delta_bytes / (double)total;
        if (share < 0.05)
            break;
        pick[k++] = &sites[i];
        covered += sites[i].delta_bytes;
        if ((double)covered / (double)total >= 0.8)
            break;
    }
    if (k == 0)
        return;
    char b[48];
    double first = (double)pick[0]->delta_bytes / (double)total;
    signed_bytes(pick[0]->delta_bytes, b, sizeof b);
    if (first >= 0.5) {
        put(t, "; most of it (%s) is held %s by " SITE_FMT, b, where, SITE_ARGS(pick[0]));
        for (size_t i = 1; i < k; i++) {
            signed_bytes(pick[i]->delta_bytes, b, sizeof b);
            put(t, "%s" SITE_FMT " (%s)", i == 1 ? ", then " : " and ", SITE_ARGS(pick[i]), b);
        }
        return;
    }
    put(t, "; it is held %s mostly by ", where);
    for (size_t i = 0; i < k; i++) {
        signed_bytes(pick[i]->delta_bytes, b, sizeof b);
        put(t, "%s" SITE_FMT " (%s)", i == 0 ? "" : (i + 1 == k ? " and " : ", "),
            SITE_ARGS(pick[i]), b);
    }
}

/* "1 finding, 90.09 MiB, +30.03 MiB per iteration" */
static void leak_figures(text *t, const ms_profile *p)
{
    char b[48], g[48];
    ms_format_bytes(p->leaks.bytes > INT64_MAX ? INT64_MAX : (int64_t)p->leaks.bytes, b,
                    sizeof b);
    ms_format_bytes(whole_bytes(p->leaks.growth_bytes), g, sizeof g);
    put(t, "%llu finding%s, %s, +%s per iteration", (unsigned long long)p->leaks.findings,
        p->leaks.findings == 1 ? "" : "s", b, g);
}

/* Says which file leaks, from the same totals `memsnap leaks` prints: a leak on one side
 * is what a before/after comparison is usually run to find. Silent when neither leaks
 * (or neither side knows). */
static void leak_words(text *t, const ms_pair *p, const char *name_a, const char *name_b)
{
    const ms_profile *a = p->a, *b = p->b;
    bool la = a->leaks_known && a->leaks.findings > 0;
    bool lb = b->leaks_known && b->leaks.findings > 0;
    if (!la && !lb)
        return;
    const ms_profile *first = la ? a : b, *other = la ? b : a;
    const char *fname = la ? name_a : name_b, *oname = la ? name_b : name_a;
    put(t, " %s leaks ", fname);
    leak_figures(t, first);
    if (la && lb) {
        put(t, "; %s leaks ", oname);
        leak_figures(t, other);
        put(t, ".");
    } else if (other->leaks_known) {
        put(t, "; %s does not.", oname);
    } else {
        put(t, "; whether %s leaks is unknown (its summary has no leak figures).", oname);
    }
}

/* CUDA graphs, said before any comparison of peaks: a replay allocates from the graph's
 * private pool, so a graphed run's peak leaves the pool out and looks lower than an eager
 * twin's. "B replays CUDA graphs from a private pool of 116.00 MiB that its peak leaves
 * out: counting it, a replay iteration holds 245.08 MiB, 7.9% more than A's peak
 * (227.10 MiB)." */
static void graph_words(text *t, const ms_pair *p, const char *name_a, const char *name_b)
{
    for (int side = 0; side < 2; side++) {
        const ms_profile *x = side ? p->b : p->a, *o = side ? p->a : p->b;
        const char *nx = side ? name_b : name_a, *no = side ? name_a : name_b;
        if (!x->graphs.known || !x->graphs.pool_bytes)
            continue;
        char pool[48], fp[48], op[48];
        ms_format_bytes((int64_t)x->graphs.pool_bytes, pool, sizeof pool);
        put(t, "%s replays CUDA graphs from a private pool of %s that its peak leaves out", nx,
            pool);
        if (x->graphs.replay_footprint_bytes > 0) {
            ms_format_bytes(x->graphs.replay_footprint_bytes, fp, sizeof fp);
            put(t, ": counting it, a replay iteration holds %s", fp);
            bool o_graphs = o->graphs.known && o->graphs.pool_bytes;
            if (!o_graphs && o->peak_bytes > 0) {
                double d = 100.0 * (double)(x->graphs.replay_footprint_bytes - o->peak_bytes) /
                           (double)o->peak_bytes;
                ms_format_bytes(o->peak_bytes, op, sizeof op);
                put(t, ", %.1f%% %s than %s's peak (%s)", d < 0 ? -d : d,
                    d < 0 ? "less" : "more", no, op);
            }
        }
        put(t, ". ");
    }
}

size_t ms_pair_verdict(const ms_pair *p, const char *name_a, const char *name_b, char *buf,
                       size_t cap)
{
    text t = {buf, cap, 0};
    if (cap)
        buf[0] = '\0';
    char la[256], lb[256];
    if (!name_a) {
        ms_profile_label(p->a, la, sizeof la);
        name_a = la;
    }
    if (!name_b) {
        ms_profile_label(p->b, lb, sizeof lb);
        name_b = lb;
    }
    char b1[48], b2[48], b3[48], pc[32];
    const ms_delta *pk = &p->m[MS_M_PEAK];
    /* Where each peak falls: in the run (iteration and phase) when both profiles know it,
     * for two ranks start recording at different times and a wall-clock offset compares
     * those starts, not the work; else the time since each trace's first event. */
    char wa[128], wb[128];
    bool places = p->a->peak_place.known && p->b->peak_place.known;
    if (places) {
        char x[112];
        ms_peak_place_format(&p->a->peak_place, x, sizeof x);
        snprintf(wa, sizeof wa, "in %s", x);
        ms_peak_place_format(&p->b->peak_place, x, sizeof x);
        snprintf(wb, sizeof wb, "in %s", x);
    } else {
        snprintf(wa, sizeof wa, "at %.2f s", (double)p->m[MS_M_PEAK_TIME].a / 1e6);
        snprintf(wb, sizeof wb, "at %.2f s", (double)p->m[MS_M_PEAK_TIME].b / 1e6);
    }

    graph_words(&t, p, name_a, name_b);
    if (p->match) {
        ms_format_bytes(pk->a, b1, sizeof b1);
        ms_format_bytes(p->m[MS_M_RESERVED_PEAK].a, b2, sizeof b2);
        ms_format_bytes(p->m[MS_M_LIVE_END].a, b3, sizeof b3);
        put(&t,
            "%s and %s match: the same peak (%s %s), reserved peak (%s), live memory "
            "at the end (%s), %lld allocation%s and %lld OOM%s; no site holds different "
            "memory.",
            name_a, name_b, b1, wa, b2, b3, (long long)p->m[MS_M_ALLOCS].a,
            p->m[MS_M_ALLOCS].a == 1 ? "" : "s", (long long)p->m[MS_M_OOMS].a,
            p->m[MS_M_OOMS].a == 1 ? "" : "s");
        leak_words(&t, p, name_a, name_b);
        return text_done(&t);
    }

    ms_format_bytes(pk->b, b2, sizeof b2);
    ms_format_bytes(pk->a, b3, sizeof b3);
    if (pk->delta != 0) {
        signed_bytes(pk->delta, b1, sizeof b1);
        pct_words(pk, pc, sizeof pc);
        put(&t, "%s peaks %s %s than %s (%s: %s %s vs %s %s)", name_b, pc,
            pk->delta > 0 ? "higher" : "lower", name_a, b1, b2, wb, b3, wa);
        if (p->sites_known[MS_SITES_AT_PEAK])
            explain(&t, p->sites[MS_SITES_AT_PEAK], p->n_sites[MS_SITES_AT_PEAK], pk->delta,
                    "at the peak");
    } else {
        if (places && !strcmp(wa, wb))
            put(&t, "%s and %s peak at the same %s, both %s", name_a, name_b, b2, wa);
        else
            put(&t, "%s and %s peak at the same %s (%s vs %s)", name_a, name_b, b2, wa, wb);
    }
    put(&t, ".");

    const ms_delta *rp = &p->m[MS_M_RESERVED_PEAK];
    if (rp->delta != 0) {
        signed_bytes(rp->delta, b1, sizeof b1);
        pct_words(rp, pc, sizeof pc);
        put(&t, " Reserved peak %s (%s%s).", b1, rp->pct_valid ? (rp->delta > 0 ? "+" : "-") : "",
            pc);
    }

    const ms_delta *le = &p->m[MS_M_LIVE_END];
    if (le->delta != 0) {
        signed_bytes(le->delta, b1, sizeof b1);
        ms_format_bytes(le->b, b2, sizeof b2);
        ms_format_bytes(le->a, b3, sizeof b3);
        put(&t, " At the end %s holds %s (%s vs %s)", name_b, b1, b2, b3);
        if (p->sites_known[MS_SITES_AT_END])
            explain(&t, p->sites[MS_SITES_AT_END], p->n_sites[MS_SITES_AT_END], le->delta,
                    "at the end");
        put(&t, ".");
    }

    const ms_delta *oo = &p->m[MS_M_OOMS];
    if (oo->delta != 0)
        put(&t, " %s hit %lld OOM%s, %s %lld.", name_b, (long long)oo->b, oo->b == 1 ? "" : "s",
            name_a, (long long)oo->a);

    leak_words(&t, p, name_a, name_b);

    if (pk->delta == 0 && rp->delta == 0 && le->delta == 0 && oo->delta == 0)
        put(&t, " The peaks agree; the files differ only in allocation counts or in which "
                "sites hold memory.");
    return text_done(&t);
}
