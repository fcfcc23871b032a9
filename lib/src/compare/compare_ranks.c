/* Many ranks: each file against the median of all, because in a data-parallel job the
 * typical rank is the reference and the odd one out is the finding. */
#include <stdlib.h>
#include <string.h>

#include "compare_internal.h"

typedef struct rank_site {
    const ms_profile_site *s;
    size_t file;
} rank_site;

static int rank_site_order(const void *x, const void *y)
{
    const rank_site *a = x, *b = y;
    int c = cmp_site_key_cmp(a->s->site, a->s->function, b->s->site, b->s->function);
    return c ? c : MS__CMP(a->file, b->file);
}

static bool off_median(const ms_delta *d, double threshold)
{
    if (!d->pct_valid)
        return true; /* the median is 0 and this file is not */
    return d->pct > threshold || d->pct < -threshold;
}

static int push_site(ms_site_delta **sites, size_t *n, size_t *cap, const ms_site_delta *d)
{
    if (!ms__grow((void **)sites, cap, *n + 1, sizeof **sites))
        return MS_ERR_NOMEM;
    (*sites)[(*n)++] = *d;
    return 0;
}

static ms_site_delta **row_sites(ms_rank_row *row, ms_site_set set, size_t **n)
{
    *n = set == MS_SITES_AT_END ? &row->n_sites_end : &row->n_sites;
    return set == MS_SITES_AT_END ? &row->sites_end : &row->sites;
}

/* For every site seen in `set` of any file (at its peak, or at the end): its median over
 * all files (0 where a file does not list it), then each file's difference from that
 * median. */
static int site_medians(ms_ranks *r, const ms_profile *const *pr, size_t n, ms_site_set set,
                        ms_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (pr[i]->n_sites[set] > SIZE_MAX - total)
            return ms__fail(err, MS_ERR_LIMIT, MS_NO_OFFSET, "too many sites");
        total += pr[i]->n_sites[set];
    }
    rank_site *all = cmp_calloc(total, sizeof *all);
    int64_t *vals = cmp_calloc(n, sizeof *vals);
    uint64_t *counts = cmp_calloc(n, sizeof *counts);
    size_t *caps = cmp_calloc(n, sizeof *caps);
    int rc = 0;
    if (!all || !vals || !counts || !caps) {
        rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing ranks");
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < pr[i]->n_sites[set]; j++)
            all[k++] = (rank_site){&pr[i]->sites[set][j], i};
    qsort(all, total, sizeof *all, rank_site_order);

    for (size_t g = 0; g < total && rc == 0;) {
        const ms_profile_site *key = all[g].s;
        size_t e = g;
        memset(counts, 0, n * sizeof *counts);
        int64_t *per_file = vals;
        memset(per_file, 0, n * sizeof *per_file);
        for (; e < total && cmp_site_key_cmp(all[e].s->site, all[e].s->function, key->site,
                                             key->function) == 0;
             e++) {
            per_file[all[e].file] += (int64_t)all[e].s->bytes;
            counts[all[e].file] += all[e].s->count;
        }
        /* cmp_median sorts, so keep each file's value aside first. */
        int64_t *sorted = cmp_calloc(n, sizeof *sorted);
        if (!sorted) {
            rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing ranks");
            break;
        }
        memcpy(sorted, per_file, n * sizeof *sorted);
        int64_t median = cmp_median(sorted, n);
        free(sorted);
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (per_file[i] == median)
                continue;
            ms_site_delta d = {key->site,
                               key->function,
                               median,
                               per_file[i],
                               (int64_t)((uint64_t)per_file[i] - (uint64_t)median),
                               0,
                               counts[i],
                               NULL};
            size_t *nr;
            ms_site_delta **list = row_sites(&r->rows[i], set, &nr);
            if (push_site(list, nr, &caps[i], &d))
                rc = ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing ranks");
        }
        g = e;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t *nr;
        ms_site_delta **list = row_sites(&r->rows[i], set, &nr);
        if (*nr > 1)
            qsort(*list, *nr, sizeof **list, cmp_site_delta_order);
    }
done:
    free(all);
    free(vals);
    free(counts);
    free(caps);
    return rc;
}

int ms_ranks_compare(ms_ranks **out, const ms_profile *const *profiles, size_t n,
                     double threshold_pct, ms_error *err)
{
    *out = NULL;
    if (n == 0 || !profiles)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "no files to compare");
    if (!(threshold_pct >= 0))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "threshold must be a non-negative percent");
    ms_ranks *r = calloc(1, sizeof *r);
    int64_t *v = cmp_calloc(n, sizeof *v);
    if (r)
        r->rows = cmp_calloc(n, sizeof *r->rows);
    if (!r || !v || !r->rows) {
        free(v);
        ms_ranks_free(r);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory comparing ranks");
    }
    r->n = n;
    r->threshold_pct = threshold_pct;
    r->pair = n == 2;

    for (size_t i = 0; i < n; i++)
        v[i] = profiles[i]->peak_bytes;
    r->median_peak = cmp_median(v, n);
    for (size_t i = 0; i < n; i++)
        v[i] = profiles[i]->reserved_peak_bytes;
    r->median_reserved_peak = cmp_median(v, n);
    for (size_t i = 0; i < n; i++)
        v[i] = profiles[i]->live_end_bytes;
    r->median_live_end = cmp_median(v, n);
    free(v);

    for (size_t i = 0; i < n; i++) {
        ms_rank_row *row = &r->rows[i];
        const ms_profile *p = profiles[i];
        row->p = p;
        row->peak = cmp_delta(r->median_peak, p->peak_bytes);
        row->reserved_peak = cmp_delta(r->median_reserved_peak, p->reserved_peak_bytes);
        row->live_end = cmp_delta(r->median_live_end, p->live_end_bytes);
        if (r->pair)
            continue; /* both would be "outliers" by the same amount, either way */
        if (off_median(&row->peak, threshold_pct))
            row->outlier |= MS_OUT_PEAK;
        if (off_median(&row->reserved_peak, threshold_pct))
            row->outlier |= MS_OUT_RESERVED;
        if (off_median(&row->live_end, threshold_pct))
            row->outlier |= MS_OUT_LIVE_END;
        if (row->outlier)
            r->n_outliers++;
    }
    int rc = site_medians(r, profiles, n, MS_SITES_AT_PEAK, err);
    bool end_known = true;
    for (size_t i = 0; i < n; i++)
        end_known = end_known && profiles[i]->sites_known[MS_SITES_AT_END];
    if (!rc && end_known) {
        rc = site_medians(r, profiles, n, MS_SITES_AT_END, err);
        for (size_t i = 0; i < n; i++)
            r->rows[i].sites_end_known = true;
    }
    if (rc) {
        ms_ranks_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void ms_ranks_free(ms_ranks *r)
{
    if (!r)
        return;
    if (r->rows)
        for (size_t i = 0; i < r->n; i++) {
            free(r->rows[i].sites);
            free(r->rows[i].sites_end);
        }
    free(r->rows);
    free(r);
}
