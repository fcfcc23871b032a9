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
    const char *shape; /* the stack shape of the side that lists it ("" unknown) */
    bool dead;         /* merged into another entry as the other side of a move */
} merged;

/* ------------------------------------------------------------------ moved sites */

/* "dir/file.py:35": the file's length and the line; false for a location without a line
 * (a C++ library, "file:?"), which cannot move. */
static bool split_location(const char *site, size_t *file_len, long *line)
{
    const char *colon = strrchr(site, ':');
    if (!colon || !colon[1] || colon[1] == '0')
        return false;
    long v = 0;
    for (const char *c = colon + 1; *c; c++) {
        if (*c < '0' || *c > '9' || v > 100000000)
            return false;
        v = v * 10 + (*c - '0');
    }
    *file_len = (size_t)(colon - site);
    *line = v;
    return true;
}

typedef struct move_cand {
    merged *m;
    size_t file_len;
    long line;
    int side;
} move_cand;

static int move_cand_order(const void *x, const void *y)
{
    const move_cand *a = x, *b = y;
    size_t n = a->file_len < b->file_len ? a->file_len : b->file_len;
    int c = memcmp(a->m->d.site, b->m->d.site, n);
    if (!c)
        c = MS__CMP(a->file_len, b->file_len);
    if (!c)
        c = strcmp(a->m->d.function, b->m->d.function);
    if (!c)
        c = a->side - b->side;
    if (!c)
        c = MS__CMP(a->line, b->line);
    return c;
}

static bool same_code(const move_cand *a, const move_cand *b)
{
    return a->file_len == b->file_len && !memcmp(a->m->d.site, b->m->d.site, a->file_len) &&
           !strcmp(a->m->d.function, b->m->d.function);
}

/* Two sites may be one that moved when their stacks have the same shape, or a side does
 * not know its shape (a summary written before it carried shapes). */
static bool shapes_agree(const move_cand *a, const move_cand *b)
{
    return !a->m->shape[0] || !b->m->shape[0] || !strcmp(a->m->shape, b->m->shape);
}

/* B's entry becomes the other side of A's: one row, A's location first. */
static void join_move(move_cand *a, move_cand *b)
{
    merged *x = a->m, *y = b->m;
    x->in_b = true;
    x->d.b_bytes = y->d.b_bytes;
    x->d.b_count = y->d.b_count;
    x->d.b_site = y->d.site;
    x->d.delta_bytes = (int64_t)((uint64_t)x->d.b_bytes - (uint64_t)x->d.a_bytes);
    y->dead = true;
}

/* Walks a and b (each in line order) pairing the sites whose lines differ by d: how
 * many of those pairs agree in shape; with `join`, they are joined as moved. */
static size_t pair_at_shift(move_cand *a, size_t na, move_cand *b, size_t nb, long d, bool join)
{
    size_t k = 0;
    for (size_t x = 0, y = 0; x < na && y < nb;) {
        long dd = b[y].line - a[x].line;
        if (dd == d) {
            if (shapes_agree(&a[x], &b[y])) {
                k++;
                if (join)
                    join_move(&a[x], &b[y]);
            }
            x++;
            y++;
        } else if (dd > d) {
            x++;
        } else {
            y++;
        }
    }
    return k;
}

/* Sites of one file and function: a[0..na) only in A, b[0..nb) only in B, each in line
 * order. As many on each side (an edit above them, or one inside the function that
 * moved them unevenly): paired in order. Otherwise the shift most of them share. */
static void pair_group(move_cand *a, size_t na, move_cand *b, size_t nb)
{
    bool in_order = na == nb;
    for (size_t i = 0; in_order && i < na; i++)
        in_order = shapes_agree(&a[i], &b[i]);
    if (in_order) {
        for (size_t i = 0; i < na; i++)
            join_move(&a[i], &b[i]);
        return;
    }
    if (na * nb > 4096) /* a generated file of thousands of lines: no guessing */
        return;
    long best = 0;
    size_t best_n = 0;
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++) {
            if (!shapes_agree(&a[i], &b[j]))
                continue;
            long d = b[j].line - a[i].line;
            size_t k = pair_at_shift(a, na, b, nb, d, false);
            long ad = d < 0 ? -d : d, ab = best < 0 ? -best : best;
            if (k > best_n || (k == best_n && (ad < ab || (ad == ab && d < best)))) {
                best_n = k;
                best = d;
            }
        }
    if (best_n)
        pair_at_shift(a, na, b, nb, best, true);
}

/* Joins sites listed on one side only that are one site whose line moved (see
 * ms_site_delta.b_site); returns nonzero on no memory. */
static int match_moved(merged *m, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += m[i].in_a != m[i].in_b;
    if (k < 2)
        return 0;
    move_cand *c = cmp_calloc(k, sizeof *c);
    if (!c)
        return -1;
    k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t fl;
        long line;
        if (m[i].in_a != m[i].in_b && split_location(m[i].d.site, &fl, &line))
            c[k++] = (move_cand){&m[i], fl, line, m[i].in_a ? 0 : 1};
    }
    qsort(c, k, sizeof *c, move_cand_order);
    for (size_t i = 0; i < k;) {
        size_t j = i;
        while (j < k && same_code(&c[j], &c[i]))
            j++;
        size_t na = 0;
        while (i + na < j && c[i + na].side == 0)
            na++;
        if (na && j - i > na)
            pair_group(&c[i], na, &c[i + na], j - i - na);
        i = j;
    }
    free(c);
    return 0;
}

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
            if (!cur->shape || (!cur->shape[0] && refs[j].s->shape && refs[j].s->shape[0]))
                cur->shape = refs[j].s->shape ? refs[j].s->shape : "";
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
    if (match_moved(m, k)) {
        free(m);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing sites");
    }
    size_t live = 0;
    for (size_t i = 0; i < k; i++)
        if (!m[i].dead)
            m[live++] = m[i];
    *out = m;
    *n_out = live;
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
        if (m[i].d.delta_bytes != 0 || m[i].d.b_site)
            d[k++] = m[i].d;
    free(m);
    qsort(d, k, sizeof *d, cmp_site_delta_order);
    p->sites[set] = d;
    p->n_sites[set] = k;
    p->sites_known[set] = true;
    p->sites_complete[set] = a->sites_complete[set] && b->sites_complete[set];
    return 0;
}

/* Moved sites by the bytes they hold, the larger side first. */
static int moved_order(const void *x, const void *y)
{
    const ms_site_delta *a = x, *b = y;
    int64_t ma = a->a_bytes > a->b_bytes ? a->a_bytes : a->b_bytes;
    int64_t mb = b->a_bytes > b->b_bytes ? b->a_bytes : b->b_bytes;
    if (ma != mb)
        return MS__CMP(mb, ma);
    return cmp_site_key_cmp(a->site, a->function, b->site, b->function);
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
    p->moved = cmp_calloc(n, sizeof *p->moved);
    if (!p->only_a || !p->only_b || !p->moved) {
        free(m);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing sites");
    }
    for (size_t i = 0; i < n; i++) {
        if (m[i].in_a && !m[i].in_b)
            p->only_a[p->n_only_a++] = m[i].d;
        else if (m[i].in_b && !m[i].in_a)
            p->only_b[p->n_only_b++] = m[i].d;
        else if (m[i].d.b_site)
            p->moved[p->n_moved++] = m[i].d;
    }
    free(m);
    qsort(p->only_a, p->n_only_a, sizeof *p->only_a, cmp_site_delta_order);
    qsort(p->only_b, p->n_only_b, sizeof *p->only_b, cmp_site_delta_order);
    qsort(p->moved, p->n_moved, sizeof *p->moved, moved_order);
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
    same = same && p->n_only_a == 0 && p->n_only_b == 0 && p->n_moved == 0;
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
    free(p->moved);
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

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
}

/* "; that is the net of larger changes at the peak: up at X (+753.00 MiB), down at Y
 * (-721.00 MiB)": the largest changes on each side (up to two each, none under a tenth
 * of the largest), for a total that no one site explains. */
static void net_of(text *t, const ms_site_delta *sites, size_t n, const char *where)
{
    uint64_t largest = 0;
    for (size_t i = 0; i < n; i++)
        if (magnitude(sites[i].delta_bytes) > largest)
            largest = magnitude(sites[i].delta_bytes);
    put(t, "; that is the net of larger changes %s:", where);
    bool named = false;
    for (int side = 0; side < 2; side++) {
        size_t k = 0;
        char b[48];
        for (size_t i = 0; i < n && k < 2; i++) {
            int64_t d = sites[i].delta_bytes;
            if (d == 0 || (d > 0) != (side == 0) || magnitude(d) * 10 < largest)
                continue;
            signed_bytes(d, b, sizeof b);
            const char *lead = k           ? " and "
                               : side == 0 ? " up at "
                               : named     ? ", down at "
                                           : " down at ";
            put(t, "%s" SITE_FMT " (%s)", lead, SITE_ARGS(&sites[i]), b);
            k++;
            named = true;
        }
    }
}

/* Names the sites that explain `total`. A site is "most of it" only when its change has
 * the total's sign and at most its size (a site of +753 MiB in a total of +32 MiB is not
 * a part of it): then the first alone when it holds at least half, else up to three that
 * together hold most of it and no more than all of it. When the largest change is of
 * the other sign or larger than the total, the total is the net of larger changes and
 * the largest on each side are named. */
static void explain(text *t, const ms_site_delta *sites, size_t n, int64_t total,
                    const char *where)
{
    if (n == 0 || total == 0 || sites[0].delta_bytes == 0)
        return;
    uint64_t whole = magnitude(total);
    if ((sites[0].delta_bytes > 0) != (total > 0) || magnitude(sites[0].delta_bytes) > whole) {
        net_of(t, sites, n, where);
        return;
    }
    const ms_site_delta *pick[3];
    size_t k = 0;
    uint64_t covered = 0;
    for (size_t i = 0; i < n && k < 3; i++) {
        if ((total > 0) != (sites[i].delta_bytes > 0) || sites[i].delta_bytes == 0)
            continue;
        /* A site holding under 5% of the change explains nothing worth a name. */
        uint64_t m = magnitude(sites[i].delta_bytes);
        if ((double)m / (double)whole < 0.05 || covered + m > whole)
            break;
        pick[k++] = &sites[i];
        covered += m;
        if ((double)covered / (double)whole >= 0.8)
            break;
    }
    if (k == 0)
        return;
    char b[48];
    double first = (double)magnitude(pick[0]->delta_bytes) / (double)whole;
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

size_t ms_site_moved_format(const char *a_site, const char *b_site, char *buf, size_t cap)
{
    if (!b_site || !b_site[0] || !a_site)
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s", ""));
    const char *ca = strrchr(a_site, ':'), *cb = strrchr(b_site, ':');
    bool same_file = ca && cb && ca - a_site == cb - b_site &&
                     !strncmp(a_site, b_site, (size_t)(ca - a_site));
    if (same_file)
        return ms__text_done(buf, cap, snprintf(buf, cap, "moved %s → %s", ca, cb));
    return ms__text_done(buf, cap, snprintf(buf, cap, "moved %s → %s", a_site, b_site));
}

/* " 3 sites moved: edited_model.py:16 forward (moved :16 → :28), ...": the same code at
 * other lines, which a reader would otherwise take for sites gone and new. */
static void moved_words(text *t, const ms_pair *p)
{
    if (p->n_moved == 0)
        return;
    put(t, " %zu site%s moved: ", p->n_moved, p->n_moved == 1 ? "" : "s");
    size_t k = p->n_moved < 3 ? p->n_moved : 3;
    for (size_t i = 0; i < k; i++) {
        char mv[1100];
        ms_site_moved_format(p->moved[i].site, p->moved[i].b_site, mv, sizeof mv);
        const char *sep = i == 0 ? "" : (i + 1 == k && k == p->n_moved ? " and " : ", ");
        put(t, "%s" SITE_FMT " (%s)", sep, SITE_ARGS(&p->moved[i]), mv);
    }
    if (p->n_moved > k)
        put(t, " and %zu more", p->n_moved - k);
    put(t, ".");
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

    moved_words(&t, p);
    leak_words(&t, p, name_a, name_b);

    if (pk->delta == 0 && rp->delta == 0 && le->delta == 0 && oo->delta == 0) {
        /* Only moves: the same code holds the same memory at other lines. */
        bool only_moves = p->n_only_a == 0 && p->n_only_b == 0 && p->n_moved > 0;
        for (int set = 0; set < MS_SITE_SETS; set++)
            for (size_t i = 0; i < p->n_sites[set]; i++)
                only_moves = only_moves && p->sites[set][i].delta_bytes == 0;
        if (only_moves && p->m[MS_M_ALLOCS].delta == 0)
            put(&t, " The peaks agree; the same code holds the same memory, at other lines.");
        else
            put(&t, " The peaks agree; the files differ only in allocation counts or in which "
                    "sites hold memory.");
    }
    return text_done(&t);
}
