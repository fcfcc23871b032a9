/* Profiles: the part of one snapshot's analysis that comparisons need, kept small so
 * that many ranks can be held at once after their snapshots are freed. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compare_internal.h"

typedef struct profile_priv {
    char **strs; /* every string the profile owns */
    size_t n_strs, cap_strs;
    size_t cap_sites[MS_SITE_SETS];
} profile_priv;

/* ------------------------------------------------------------------ shared helpers */

void *cmp_calloc(size_t n, size_t size)
{
    if (n == 0)
        n = 1; /* a valid pointer for empty arrays keeps callers free of special cases */
    if (size && n > SIZE_MAX / size)
        return NULL;
    return calloc(n, size);
}

int cmp_site_key_cmp(const char *site_a, const char *fn_a, const char *site_b,
                     const char *fn_b)
{
    int c = strcmp(site_a, site_b);
    return c ? c : strcmp(fn_a, fn_b);
}

int cmp_site_delta_order(const void *x, const void *y)
{
    const ms_site_delta *a = x, *b = y;
    /* Magnitudes compared as unsigned so INT64_MIN cannot overflow a negation. */
    uint64_t ma = a->delta_bytes < 0 ? 0u - (uint64_t)a->delta_bytes : (uint64_t)a->delta_bytes;
    uint64_t mb = b->delta_bytes < 0 ? 0u - (uint64_t)b->delta_bytes : (uint64_t)b->delta_bytes;
    if (ma != mb)
        return MS__CMP(mb, ma);
    if (a->delta_bytes != b->delta_bytes)
        return MS__CMP(b->delta_bytes, a->delta_bytes);
    return cmp_site_key_cmp(a->site, a->function, b->site, b->function);
}

ms_delta cmp_delta(int64_t a, int64_t b)
{
    ms_delta d = {a, b, 0, 0.0, true};
    /* Wrapping subtraction through unsigned: byte counts never get near the limit, but a
     * hostile summary file could, and signed overflow would be undefined. */
    d.delta = (int64_t)((uint64_t)b - (uint64_t)a);
    if (a != 0)
        d.pct = 100.0 * ((double)b - (double)a) / (double)a;
    else if (b != 0)
        d.pct_valid = false;
    return d;
}

int64_t cmp_median(int64_t *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, ms__cmp_i64);
    if (n % 2)
        return v[n / 2];
    int64_t lo = v[n / 2 - 1], hi = v[n / 2];
    /* Halves first so the sum cannot overflow; the floor matches the documented rule. */
    int64_t m = lo / 2 + hi / 2;
    int64_t rest = lo % 2 + hi % 2; /* -2..2 */
    if (rest == 2)
        m += 1;
    else if (rest == -1 || rest == -2)
        m -= 1;
    return m;
}

/* ------------------------------------------------------------------ profile basics */

static char *own_string(ms_profile *p, const char *text)
{
    profile_priv *pv = p->priv_;
    if (!ms__grow((void **)&pv->strs, &pv->cap_strs, pv->n_strs + 1, sizeof *pv->strs))
        return NULL;
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, text, len + 1);
    pv->strs[pv->n_strs++] = copy;
    return copy;
}

int ms_profile_new(ms_profile **out, const char *name, ms_error *err)
{
    *out = NULL;
    if (!name)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "profile needs a name");
    ms_profile *p = calloc(1, sizeof *p);
    profile_priv *pv = calloc(1, sizeof *pv);
    if (!p || !pv) {
        free(p);
        free(pv);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory for a profile");
    }
    p->priv_ = pv;
    p->peak_event = -1;
    p->name = own_string(p, name);
    if (!p->name) {
        ms_profile_free(p);
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory for a profile");
    }
    p->rank = ms_rank_from_name(name);
    *out = p;
    return 0;
}

void ms_profile_free(ms_profile *p)
{
    if (!p)
        return;
    profile_priv *pv = p->priv_;
    if (pv) {
        for (size_t i = 0; i < pv->n_strs; i++)
            free(pv->strs[i]);
        free(pv->strs);
        free(pv);
    }
    for (int k = 0; k < MS_SITE_SETS; k++)
        free(p->sites[k]);
    free(p->iteration_peaks);
    free(p);
}

int ms_profile_add_site(ms_profile *p, ms_site_set set, const char *site,
                        const char *function, uint64_t bytes, uint64_t count, ms_error *err)
{
    return ms_profile_add_site_shaped(p, set, site, function, NULL, bytes, count, err);
}

int ms_profile_add_site_shaped(ms_profile *p, ms_site_set set, const char *site,
                               const char *function, const char *shape, uint64_t bytes,
                               uint64_t count, ms_error *err)
{
    if (!p || (unsigned)set >= MS_SITE_SETS || !site)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_profile_add_site: bad argument");
    profile_priv *pv = p->priv_;
    if (!ms__grow((void **)&p->sites[set], &pv->cap_sites[set], p->n_sites[set] + 1,
                  sizeof *p->sites[set]))
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory for sites");
    ms_profile_site *ps = &p->sites[set][p->n_sites[set]];
    ps->site = own_string(p, site);
    ps->function = own_string(p, function ? function : "");
    ps->shape = own_string(p, shape ? shape : "");
    if (!ps->site || !ps->function || !ps->shape)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory for sites");
    ps->bytes = bytes;
    ps->count = count;
    p->n_sites[set]++;
    p->sites_known[set] = true;
    return 0;
}

static int site_order(const void *x, const void *y)
{
    const ms_profile_site *a = x, *b = y;
    if (a->bytes != b->bytes)
        return MS__CMP(b->bytes, a->bytes);
    return cmp_site_key_cmp(a->site, a->function, b->site, b->function);
}

void ms_profile_sort_sites(ms_profile *p, ms_site_set set)
{
    if (p && (unsigned)set < MS_SITE_SETS && p->n_sites[set] > 1)
        qsort(p->sites[set], p->n_sites[set], sizeof *p->sites[set], site_order);
}

int ms_profile_set_iteration_peaks(ms_profile *p, const int64_t *peaks, size_t n,
                                   ms_error *err)
{
    int64_t *copy = cmp_calloc(n, sizeof *copy);
    if (!copy)
        return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "out of memory for iteration peaks");
    if (n)
        memcpy(copy, peaks, n * sizeof *copy);
    free(p->iteration_peaks);
    p->iteration_peaks = copy;
    p->n_iterations = n;
    return 0;
}

void ms_profile_set_leaks(ms_profile *p, const ms_leak_totals *leaks)
{
    if (!p || !leaks)
        return;
    p->leaks_known = true;
    p->leaks = *leaks;
}

/* ------------------------------------------------------------------ rank from a name */

static bool is_sep(char c)
{
    return c == '-' || c == '_' || c == '.';
}

/* Parses up to 9 digits so the value always fits an int. */
static int parse_rank_digits(const char *s, size_t n)
{
    if (n == 0 || n > 9)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

int ms_rank_from_name(const char *path)
{
    if (!path)
        return -1;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;

    /* "rank" followed by optional separators and digits wins anywhere in the name. */
    for (const char *c = base; *c; c++) {
        if (strncasecmp(c, "rank", 4) != 0)
            continue;
        const char *d = c + 4;
        while (is_sep(*d))
            d++;
        size_t nd = 0;
        while (isdigit((unsigned char)d[nd]))
            nd++;
        int r = parse_rank_digits(d, nd);
        if (r >= 0)
            return r;
    }

    /* Otherwise a number that ends the stem after a separator ("mem-3.pickle"). The stem
     * drops the known extensions only, so "run.3" keeps its number. */
    size_t len = strlen(base);
    static const char *const exts[] = {".gz", ".json", ".pickle", ".pkl", ".p"};
    bool stripped = true;
    while (stripped) {
        stripped = false;
        for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
            size_t el = strlen(exts[i]);
            if (len > el && strncasecmp(base + len - el, exts[i], el) == 0) {
                len -= el;
                stripped = true;
            }
        }
    }
    size_t end = len, start = len;
    while (start > 0 && isdigit((unsigned char)base[start - 1]))
        start--;
    if (start == end || start == 0 || !is_sep(base[start - 1]))
        return -1;
    return parse_rank_digits(base + start, end - start);
}

size_t ms_profile_label(const ms_profile *p, char *buf, size_t cap)
{
    if (p->rank >= 0)
        return ms__text_done(buf, cap, snprintf(buf, cap, "rank%d", p->rank));
    if (!strcmp(p->name, "-")) /* "- peaks 51% higher" would not read */
        return ms__text_done(buf, cap, snprintf(buf, cap, "stdin"));
    const char *base = strrchr(p->name, '/');
    return ms__text_done(buf, cap, snprintf(buf, cap, "%s", base ? base + 1 : p->name));
}

/* ------------------------------------------------------------------ from a run */

/* FNV-1a, 64 bits: a stable hash whatever the platform. */
static uint64_t fnv1a(uint64_t h, const char *text, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)text[i];
        h *= 1099511628211u;
    }
    return h;
}

size_t ms_profile_site_shape(const ms_snapshot *s, const ms_site_total *t, char *buf,
                             size_t cap)
{
    size_t n = 0;
    const uint32_t *fr = t ? ms_snapshot_stack(s, t->stack, &n) : NULL;
    size_t at = 0;
    while (at < n && fr[at] != t->site)
        at++;
    if (!fr || at == n)
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s", ""));
    /* The files of the Python frames that called it, in order: their lines change with
     * any edit above them, and an edit may rename a caller too (a test function of each
     * variant, a helper renamed); where the call comes from is the same code. */
    uint64_t h = 14695981039346656037u;
    char loc[1024];
    for (size_t i = at + 1; i < n; i++) {
        if (!ms_frame_kind_is_python(ms_frame_kind_of(s, fr[i])))
            continue;
        ms_site_format_location(s, fr[i], loc, sizeof loc);
        char *colon = strrchr(loc, ':');
        size_t len = colon ? (size_t)(colon - loc) : strlen(loc);
        h = fnv1a(h, loc, len);
        h = fnv1a(h, "", 1);
    }
    return ms__text_done(buf, cap, snprintf(buf, cap, "%016llx", (unsigned long long)h));
}

/* Written exactly as `summary --json` writes top_sites, so sites read back from a summary
 * match the ones taken from the pickle. */
static int add_sites(ms_profile *p, ms_site_set set, const ms_snapshot *s,
                     const ms_site_total *tot, size_t n_tot, ms_error *err)
{
    int rc = 0;
    char loc[1024], shape[32];
    for (size_t i = 0; i < n_tot && rc == 0; i++) {
        ms_site_format_location(s, tot[i].site, loc, sizeof loc);
        char function[1024];
        ms_site_format_function(s, tot[i].site, function, sizeof function);
        ms_profile_site_shape(s, &tot[i], shape, sizeof shape);
        rc = ms_profile_add_site_shaped(p, set, loc, function, shape, tot[i].bytes,
                                        tot[i].count, err);
    }
    if (rc)
        return rc;
    p->sites_known[set] = true; /* even when nothing was alive */
    p->sites_complete[set] = true;
    ms_profile_sort_sites(p, set);
    return 0;
}

static int add_site_totals(ms_profile *p, ms_site_set set, const ms_snapshot *s,
                           const ms_alloc *allocs, size_t n_allocs, ms_error *err)
{
    ms_site_total *tot = NULL;
    size_t n_tot = 0;
    int rc = ms_site_totals(&tot, &n_tot, s, allocs, n_allocs, err);
    if (!rc)
        rc = add_sites(p, set, s, tot, n_tot, err);
    ms_free(tot);
    return rc;
}

static int add_alive_sites(ms_profile *p, ms_site_set set, const ms_snapshot *s,
                           const ms_timeline *t, int64_t event, ms_error *err)
{
    ms_alloc *alive = NULL;
    size_t n_alive = 0;
    int rc = ms__timeline_alive_summed(&alive, &n_alive, s, t, event, err);
    if (rc)
        return rc;
    rc = add_site_totals(p, set, s, alive, n_alive, err);
    ms_free(alive);
    return rc;
}

size_t ms_peak_place_format(const ms_peak_place *pl, char *buf, size_t cap)
{
    if (!pl || !pl->known)
        return ms__text_done(buf, cap, snprintf(buf, cap, "unknown"));
    char where[96];
    if (pl->iteration && pl->unfinished)
        snprintf(where, sizeof where, "the unfinished iteration %u", pl->iteration);
    else if (pl->iteration)
        snprintf(where, sizeof where, "iteration %u of %u", pl->iteration, pl->iterations);
    else if (!pl->iterations)
        snprintf(where, sizeof where, "no iterations");
    else
        snprintf(where, sizeof where, "outside the iterations");
    if (pl->phase >= 0)
        return ms__text_done(buf, cap, snprintf(buf, cap, "%s, %s", where,
                                                ms_phase_kind_text((ms_phase_kind)pl->phase)));
    return ms__text_done(buf, cap, snprintf(buf, cap, "%s", where));
}

void ms_profile_set_peak_place(ms_profile *p, const ms_peak_place *place)
{
    if (p && place)
        p->peak_place = *place;
}

void ms_profile_set_graphs(ms_profile *p, const ms_profile_graphs *graphs)
{
    if (p && graphs) {
        p->graphs = *graphs;
        p->graphs.known = true;
    }
}

/* The pool and what the replays really hold, from the run's shape. */
static int add_graphs(ms_profile *p, ms_run *run, ms_error *err)
{
    const ms_shape *sh = NULL;
    const ms_iterations *it = NULL;
    int rc = ms_run_shape(&sh, run, err);
    if (!rc)
        rc = ms_run_iterations(&it, run, err);
    if (rc)
        return rc;
    ms_profile_graphs g = {true, sh->graph_pool_bytes, (uint32_t)sh->graph_replay_count, 0};
    for (size_t k = 0; k < it->n; k++)
        if (ms_shape_is_replay(sh, k)) {
            int64_t f = ms_shape_footprint(sh, k, &it->items[k]);
            if (f > g.replay_footprint_bytes)
                g.replay_footprint_bytes = f;
        }
    ms_profile_set_graphs(p, &g);
    return 0;
}

/* The leak totals `memsnap leaks` prints for this device, and where the peak falls: both
 * read the run's iterations. A trace the leak analysis cannot read leaves them unknown:
 * the rest of the profile is still worth comparing. */
static int add_leaks(ms_profile *p, ms_run *run, ms_error *err)
{
    ms_leak_totals lt;
    ms_error lerr;
    if (ms_run_leak_totals(&lt, run, &lerr) != 0) {
        if (lerr.code == MS_ERR_NOMEM)
            return ms__fail(err, MS_ERR_NOMEM, MS_NO_OFFSET, "%s", lerr.message);
        return 0;
    }
    ms_peak_place pl;
    int rc = ms_run_peak_place(&pl, run, err);
    if (rc)
        return rc;
    ms_profile_set_peak_place(p, &pl);
    ms_profile_set_leaks(p, &lt);
    return 0;
}

int ms_profile_from_run(ms_profile **out, ms_run *run, const char *name, ms_error *err)
{
    *out = NULL;
    if (!run || !name)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_profile_from_run: bad argument");
    const ms_snapshot *s = ms_run_snapshot(run);
    ms_profile *p = NULL;
    int rc = ms_profile_new(&p, name, err);
    if (rc)
        return rc;
    /* The allocations list (every site, and the leak analysis) with the active curve. */
    const ms_timeline *t = NULL;
    rc = ms__run_timeline_with(&t, run, MS_TIMELINE_ALLOCS | MS_TIMELINE_ACTIVE, err);
    if (rc) {
        ms_profile_free(p);
        return rc;
    }
    p->device = ms_run_device(run);
    p->events = t->n_events;
    p->t_first_us = t->t_first_us;
    p->peak_bytes = t->peak_bytes;
    p->peak_time_us = t->peak_time_us;
    p->has_times = t->has_times;
    p->peak_event = t->peak_event;
    p->reserved_peak_bytes = t->reserved_peak_bytes;
    p->reserved_end_bytes = t->reserved_end_bytes;
    p->live_end_bytes = t->live_end_bytes;
    p->live_end_count = t->live_end_count;
    p->alloc_count = t->action_counts[MS_ACT_ALLOC];
    p->oom_count = t->oom_count;
    p->trace_complete = t->trace_complete;

    int64_t last = t->n_events ? (int64_t)t->n_events - 1 : -1;
    const ms_site_total *peak_sites = NULL;
    size_t n_peak_sites = 0;
    rc = ms_run_peak_sites(&peak_sites, &n_peak_sites, run, err);
    if (!rc)
        rc = add_sites(p, MS_SITES_AT_PEAK, s, peak_sites, n_peak_sites, err);
    if (!rc)
        rc = add_alive_sites(p, MS_SITES_AT_END, s, t, last, err);
    if (!rc)
        rc = add_site_totals(p, MS_SITES_TOTAL, s, t->allocs, t->n_allocs, err);
    if (!rc)
        rc = add_leaks(p, run, err);
    ms_error soft; /* a shape that cannot be found leaves the graphs unknown */
    if (!rc && add_graphs(p, run, &soft))
        p->graphs.known = false;
    if (rc) {
        ms_profile_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int cmp_run_open(ms_run **out, const ms_snapshot *s, int device, ms_error *err)
{
    *out = NULL;
    if (!s)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_profile_from_snapshot: bad argument");
    if (device < 0)
        device = ms_snapshot_busiest_device(s);
    if (device >= ms_snapshot_device_count(s))
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET,
                        "device %d not in the snapshot (it has %d)", device,
                        ms_snapshot_device_count(s));
    /* What a profile reads (allocations, the active curve) and the allocations alive at
     * the peak, collected in the same pass rather than found by a replay. */
    ms_run_options ro;
    memset(&ro, 0, sizeof ro);
    ro.timeline_flags = MS_TIMELINE_ALLOCS | MS_TIMELINE_ACTIVE | MS_TIMELINE_PEAK_ALIVE;
    return ms_run_open(out, s, device, &ro, err);
}

int ms_profile_from_snapshot(ms_profile **out, const ms_snapshot *s, const char *name,
                             int device, ms_error *err)
{
    *out = NULL;
    if (!s || !name)
        return ms__fail(err, MS_ERR_ARG, MS_NO_OFFSET, "ms_profile_from_snapshot: bad argument");
    ms_run *run = NULL;
    int rc = cmp_run_open(&run, s, device, err);
    if (!rc)
        rc = ms_profile_from_run(out, run, name, err);
    ms_run_free(run);
    return rc;
}
