/* The cause of an OOM, decided by counterfactual: for each candidate, would removing it
 * have let this request (and the rest of the failing step, as estimated) succeed? A
 * pure function of ms_oom_facts, so it is tested on constructed cases as well as on
 * recordings. Also what the process was allowed in all (the limit the advice is weighed
 * against). */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "oom_internal.h"

enum { C_PARAM, C_GRAD, C_OPTIM, C_ACT, C_TEMP, C_WORK, C_INPUT, C_OTHER };

MS__KEY_TEXT_LOOKUPS(MS_OOM_CAUSE_LIST, ms_oom_cause, MS_OOM_CAUSE_COUNT, ms_oom_cause_name,
                     ms_oom_cause_text)
MS__KEY_TEXT_LOOKUPS(MS_OOM_BASIS_LIST, ms_oom_basis, MS_OOM_BASIS_COUNT, ms_oom_basis_name,
                     ms_oom_basis_text)

static const char *fmt(int64_t bytes, char *buf)
{
    ms_format_bytes(bytes, buf, 32);
    return buf;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

/* Joining the free pieces must serve the request and, where an earlier iteration says
 * what the step still had to allocate, that too: pieces that serve one more request only
 * move the failure a little later. Without history only the request is known; PyTorch's
 * own message weighs the same. */
static bool joined_would_serve(const ms_oom_facts *f)
{
    const uint64_t req = f->request_block_bytes;
    if (req == 0 || f->usable_free_bytes < req || f->largest_usable_block >= req)
        return false;
    return f->basis == MS_OOM_BASIS_SHARE_OF_LIVE || f->usable_free_bytes >= f->still_to_allocate;
}

/* After fragmentation the order is the order of certainty: the request itself is a fact
 * about one block; a leak is a trend across iterations; the category split is an
 * inference from phases. Each cause's evidence says what its removal would have done. */
static ms_oom_cause decide(const ms_oom_facts *f, char *why, size_t cap, char *ev, size_t ecap)
{
    char a[32], b[32], c[32], d[32];
    const uint64_t req = f->request_block_bytes, total = f->allocated_bytes;
    if (joined_would_serve(f)) {
        if (f->basis == MS_OOM_BASIS_SHARE_OF_LIVE) {
            snprintf(why, cap,
                     "%s is free inside reserved segments, more than the %s request, but in "
                     "%llu pieces, the largest %s",
                     fmt((int64_t)f->usable_free_bytes, a), fmt((int64_t)req, b),
                     (unsigned long long)f->usable_free_blocks,
                     fmt((int64_t)f->largest_usable_block, c));
            snprintf(ev, ecap, "joined, the %s of free pieces would serve the %s request",
                     fmt((int64_t)f->usable_free_bytes, a), fmt((int64_t)req, b));
        } else {
            snprintf(why, cap,
                     "%s is free inside reserved segments, enough for the %s the iteration "
                     "still had to allocate, but in %llu pieces, the largest %s (the request "
                     "was %s)",
                     fmt((int64_t)f->usable_free_bytes, a), fmt((int64_t)f->still_to_allocate, d),
                     (unsigned long long)f->usable_free_blocks,
                     fmt((int64_t)f->largest_usable_block, c), fmt((int64_t)req, b));
            snprintf(ev, ecap,
                     "joined, the %s of free pieces would serve the %s request and the %s "
                     "the iteration still had to allocate",
                     fmt((int64_t)f->usable_free_bytes, a), fmt((int64_t)req, b),
                     fmt((int64_t)f->still_to_allocate, d));
        }
        return MS_OOM_FRAGMENTATION;
    }
    if (f->limit_bytes > 0 && req > f->limit_bytes) {
        snprintf(why, cap, "the %s request is larger than the %s the process was allowed",
                 fmt((int64_t)req, a), fmt((int64_t)f->limit_bytes, b));
        snprintf(ev, ecap, "freeing everything alive would not make room: the %s request alone "
                           "is over the %s allowed",
                 fmt((int64_t)req, a), fmt((int64_t)f->limit_bytes, b));
        return MS_OOM_SINGLE_ALLOCATION;
    }
    if (req > total) {
        snprintf(why, cap, "the %s request is larger than everything allocated together (%s)",
                 fmt((int64_t)req, a), fmt((int64_t)total, b));
        snprintf(ev, ecap, "freeing any one thing alive (all %s of it together is smaller) "
                           "would not make room for the %s request: the request is the problem",
                 fmt((int64_t)total, b), fmt((int64_t)req, a));
        return MS_OOM_SINGLE_ALLOCATION;
    }
    /* A leak matters when what it kept is a real share of memory: at least a tenth of
     * what is allocated, or as much as the request that failed. */
    if (f->leak_growth_bytes > 0 && (f->leak_bytes * 10 >= total || f->leak_bytes >= req)) {
        snprintf(why, cap, "leaking sites hold %s at the failure and grew %s per iteration",
                 fmt((int64_t)f->leak_bytes, a), fmt((int64_t)f->leak_growth_bytes, b));
        if (f->leak_bytes >= req)
            snprintf(ev, ecap, "without the %s the leaking sites kept, the %s request would fit",
                     fmt((int64_t)f->leak_bytes, a), fmt((int64_t)req, b));
        else
            snprintf(ev, ecap, "the leaking sites keep %s, a tenth of memory or more, and grow "
                               "every iteration: the failure only comes sooner",
                     fmt((int64_t)f->leak_bytes, a));
        return MS_OOM_LEAK;
    }
    if (f->category_bytes) {
        const int64_t *k = f->category_bytes;
        int64_t sum = 0;
        for (int i = 0; i < MS_OOM_CATEGORIES; i++)
            sum += k[i] > 0 ? k[i] : 0;
        int64_t model = k[C_PARAM] + k[C_GRAD] + k[C_OPTIM];
        int64_t act = k[C_ACT] + k[C_TEMP] + k[C_INPUT];
        if (sum > 0 && act > model && act * 2 >= sum) {
            snprintf(why, cap, "activations and temporaries of the iteration hold %s (%.0f%% of %s alive)",
                     fmt(act, a), pct((double)act, (double)sum), fmt(sum, b));
            snprintf(ev, ecap,
                     "without the iteration's %s of activations the %s request would fit; "
                     "they grow with the batch, and the rest (%s) does not",
                     fmt(act, a), fmt((int64_t)req, b), fmt(sum - act, c));
            return MS_OOM_ACTIVATIONS;
        }
        if (sum > 0 && model * 2 >= sum && f->inference) {
            snprintf(why, cap, "parameters %s hold %.0f%% of %s alive (an inference run: no "
                               "gradients or optimizer state)",
                     fmt(k[C_PARAM], a), pct((double)model, (double)sum), fmt(sum, d));
            snprintf(ev, ecap,
                     "the parameters alone (%s) are at least half of memory: a smaller batch "
                     "would not make room for them, lower precision or sharding would",
                     fmt(model, a));
            return MS_OOM_MODEL_STATE;
        }
        if (sum > 0 && model * 2 >= sum) {
            snprintf(why, cap,
                     "parameters %s, gradients %s and optimizer state %s hold %.0f%% of %s alive",
                     fmt(k[C_PARAM], a), fmt(k[C_GRAD], b), fmt(k[C_OPTIM], c),
                     pct((double)model, (double)sum), fmt(sum, d));
            snprintf(ev, ecap,
                     "model state alone (%s) is at least half of memory: a smaller batch "
                     "would not make room for it, shrinking or sharding it would",
                     fmt(model, a));
            return MS_OOM_MODEL_STATE;
        }
        snprintf(why, cap, "no kind of memory holds half of the %s alive", fmt(sum, a));
        snprintf(ev, ecap, "removing any one kind of memory would help, none alone is most of it");
        return MS_OOM_OTHER;
    }
    snprintf(why, cap, "no block-level cause; the categories of memory are not known, so "
                       "activations and model state could not be told apart");
    snprintf(ev, ecap, "the free pieces would not serve it joined, and the request is not "
                       "larger than what is alive");
    return MS_OOM_OTHER;
}

ms_oom_cause ms_oom_decide_evidence(const ms_oom_facts *f, char *why, size_t cap, char *evidence,
                                    size_t ecap)
{
    char spare[8];
    if (!evidence || ecap == 0) {
        evidence = spare;
        ecap = sizeof spare;
    }
    ms_oom_cause cause = decide(f, why, cap, evidence, ecap);
    /* the text writers' rule: cut before a whole character */
    if (cap && strlen(why) + 1 >= cap)
        ms__utf8_trim(why);
    if (strlen(evidence) + 1 >= ecap)
        ms__utf8_trim(evidence);
    return cause;
}

ms_oom_cause ms_oom_decide(const ms_oom_facts *f, char *why, size_t cap)
{
    return ms_oom_decide_evidence(f, why, cap, NULL, 0);
}

/* Under a per-process limit, PyTorch refuses a new segment when what it has reserved
 * plus the segment would pass the limit, after freeing its cached segments: the limit
 * lies in [reserved, reserved + segment). People set limits in round sizes (a fraction
 * of a round device, a number of GiB), so the roundest size in that range is taken,
 * when the range is narrow (the segment at most a quarter of what is reserved). */
void ms__oom_limit(ms_oom *o)
{
    o->limit_bytes = 0;
    o->limit_is_device = false;
    if (o->reserved_bytes == 0 && o->device_free_bytes == 0)
        return;
    if (!o->limit_refused) {
        o->limit_bytes = o->reserved_bytes + o->device_free_bytes;
        o->limit_is_device = true;
        return;
    }
    const uint64_t lo = o->reserved_bytes, hi = o->reserved_bytes + o->segment_request_bytes;
    if (o->segment_request_bytes > lo / 4)
        return; /* a range that wide holds many round sizes: the limit is not known */
    for (uint64_t g = 1ull << 30; g >= 1ull << 21; g >>= 1) {
        uint64_t m = (lo + g - 1) / g * g;
        if (m < hi && m > 0) {
            o->limit_bytes = m;
            return;
        }
    }
    o->limit_bytes = lo;
}
