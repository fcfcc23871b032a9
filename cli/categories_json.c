/* The text of `memsnap categories`, printed from the library's JSON
 * (json/json_categories.h) so the two never disagree. */
#include "categories_json.h"

#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "shape_json.h"

/* ------------------------------------------------------------------ text */

static void size_text(double v, char *buf, size_t cap)
{
    ms_format_bytes((int64_t)v, buf, cap);
}

bool categories_peak_free_text(const cJSON *peak, char *buf, size_t cap)
{
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(peak, "free_in_reserved_bytes")))
        return false;
    char a[32], b[32];
    double pieces = cli_json_num(peak, "free_blocks");
    size_text(cli_json_num(peak, "free_in_reserved_bytes"), a, sizeof a);
    size_text(cli_json_num(peak, "largest_free_block_bytes"), b, sizeof b);
    snprintf(buf, cap, "at the peak, free inside reserved segments: %s in %.0f piece%s, largest %s%s",
             a, pieces, pieces == 1 ? "" : "s", b,
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(peak, "free_approximate"))
                 ? " (approximate)"
                 : "");
    return true;
}


void categories_print_line(FILE *out, const cJSON *cats, double total)
{
    int first = 1;
    for (int c = 0; c < MS_CAT_COUNT; c++) {
        const char *name = ms_category_name((ms_category)c);
        double v = cli_json_num(cats, name);
        if (v <= 0)
            continue;
        char a[32];
        size_text(v, a, sizeof a);
        fprintf(out, "%s%s %s (%.0f%%)", first ? "" : ", ", name, a,
                total > 0 ? 100.0 * v / total : 0.0);
        first = 0;
    }
    if (first)
        fprintf(out, "nothing alive");
}

typedef struct column {
    char head[48];
    const cJSON *cats;
    double total;
} column;

static void print_table(FILE *out, const column *col, size_t ncol)
{
    fprintf(out, "  %-16s", "category");
    for (size_t k = 0; k < ncol; k++)
        fprintf(out, "  %19s", col[k].head);
    fputc('\n', out);
    for (int c = 0; c <= MS_CAT_COUNT; c++) {
        const char *name = c < MS_CAT_COUNT ? ms_category_name((ms_category)c) : "total";
        fprintf(out, "  %-16s", name);
        for (size_t k = 0; k < ncol; k++) {
            double v = c < MS_CAT_COUNT ? cli_json_num(col[k].cats, name) : col[k].total;
            char a[32];
            size_text(v, a, sizeof a);
            fprintf(out, "  %12s %5.1f%%", a, col[k].total > 0 ? 100.0 * v / col[k].total : 0.0);
        }
        fputc('\n', out);
    }
}

/* The identity, the numbers on both sides and whether it holds; where it fails, on a
 * second line, which side the other two contradict and by how much. */
static void print_identity(FILE *out, const cJSON *id)
{
    if (!cJSON_IsObject(id))
        return;
    char st[32], tp[32], gr[32], fr[32], by[32];
    double k = cli_json_num(id, "states_per_parameter");
    size_text(cli_json_num(id, "optimizer_state"), st, sizeof st);
    size_text(cli_json_num(id, "trainable_parameter"), tp, sizeof tp);
    size_text(cli_json_num(id, "gradient"), gr, sizeof gr);
    double frozen = cli_json_num(id, "parameter") - cli_json_num(id, "trainable_parameter") -
                    cli_json_num(id, "state_before_trace");
    size_text(frozen, fr, sizeof fr);
    const char *opt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(id, "optimizer"));
    const char *names = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(id, "state_names"));
    bool holds = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(id, "holds"));
    fprintf(out, "  optimizer identity (%s, k=%.0f", opt ? cli_term(opt) : "optimizer not named",
            k);
    if (names)
        fprintf(out, ": %s", names);
    fprintf(out, "): state %s %s %.0f x trainable parameters %s, gradients %s: %s", st,
            holds ? "=" : "vs", k, tp, gr, holds ? "holds" : "fails");
    if (frozen > 0)
        fprintf(out, "; %s of parameters have no gradient (frozen)", fr);
    const cJSON *mk = cJSON_GetObjectItemCaseSensitive(id, "measured_states_per_parameter");
    if (cJSON_IsNumber(mk) && mk->valuedouble != k)
        fprintf(out, "; the sizes show %.0f state%s a gradient, which %s does not keep",
                mk->valuedouble, mk->valuedouble == 1 ? "" : "s", opt ? cli_term(opt) : "it");
    fputc('\n', out);
    if (holds)
        return;
    const char *off = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(id, "off"));
    double d = cli_json_num(id, "off_by_bytes");
    size_text(d < 0 ? -d : d, by, sizeof by);
    const char *dir = d < 0 ? "short" : "over";
    if (off && !strcmp(off, "parameter"))
        fprintf(out, "    the parameters are %s %s: the gradients%s mirror parameters that sit "
                     "in other categories\n",
                by, dir, k > 0 ? " and the state" : "");
    else if (off && !strcmp(off, "optimizer_state") && d < 0 &&
             cli_json_num(id, "state_before_trace") > 0) {
        char pre[32];
        size_text(cli_json_num(id, "state_before_trace"), pre, sizeof pre);
        fprintf(out, "    the optimizer state is %s short: made before the trace began, it is "
                     "among the parameters alive before the first event (%s of them repeat "
                     "the gradients' sizes)\n",
                by, pre);
    } else if (off && !strcmp(off, "optimizer_state"))
        fprintf(out, "    the optimizer state is %s %s (the parameters and gradients agree)\n",
                by, dir);
    else if (off && !strcmp(off, "gradient"))
        fprintf(out, "    the gradients are %s %s (the parameters and state agree)\n", by, dir);
    else
        fprintf(out, "    no two sides agree (the state is %s %s)\n", by, dir);
}

static void print_device(FILE *out, const cJSON *dev)
{
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(dev, "phases");
    const cJSON *im = cJSON_GetObjectItemCaseSensitive(dev, "iteration_method");
    const cJSON *iters = cJSON_GetObjectItemCaseSensitive(dev, "iterations");
    int nit = cJSON_GetArraySize(iters);
    fprintf(out, "device %.0f: %d iteration%s (%s); phases: %.0f forward, %.0f backward, "
                 "%.0f optimizer step",
            cli_json_num(dev, "device"), nit, nit == 1 ? "" : "s",
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(im, "method")),
            cli_json_num(ph, "forward"), cli_json_num(ph, "backward"), cli_json_num(ph, "optimizer"));
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(ph, "evidence");
    int first = 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        fprintf(out, "%s%s", first ? " (from " : ", ", cli_term(cJSON_GetStringValue(e)));
        first = 0;
    }
    fprintf(out, "%s\n", first ? "" : ")");
    shape_print_json(out, cJSON_GetObjectItemCaseSensitive(dev, "shape"), 2, 0);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ph, "no_stacks")))
        fprintf(out, "  no stacks were recorded (context='state' or None): what the iterations "
                     "made is 'other', not guessed\n");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ph, "cuda_graph_pools")))
        fprintf(out, "  CUDA-graph pools: graph replays allocate nothing, so what a replay "
                     "writes (gradients included) is in the pool's reserved memory, in no category\n");
    if (cli_json_num(ph, "forward") + cli_json_num(ph, "backward") + cli_json_num(ph, "optimizer") == 0)
        fprintf(out, "  no forward, backward or optimizer phase found: every allocation is "
                     "'other' (the stacks and annotations say nothing)\n");

    column col[16];
    size_t ncol = 0;
    const cJSON *peak = cJSON_GetObjectItemCaseSensitive(dev, "peak");
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(peak, "seconds")))
        snprintf(col[ncol].head, sizeof col[ncol].head, "peak %.3fs", cli_json_num(peak, "seconds"));
    else
        snprintf(col[ncol].head, sizeof col[ncol].head, "peak #%.0f", cli_json_num(peak, "event"));
    col[ncol].cats = cJSON_GetObjectItemCaseSensitive(peak, "categories");
    col[ncol++].total = cli_json_num(peak, "bytes");
    const cJSON *a;
    if (cli_json_num(dev, "at_unplaced") > 0)
        fprintf(out, "  --at: %.0f instant%s not placed: this PyTorch recorded no times\n",
                cli_json_num(dev, "at_unplaced"), cli_json_num(dev, "at_unplaced") == 1 ? "" : "s");
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(dev, "at"))
    {
        if (ncol >= 12)
            break;
        snprintf(col[ncol].head, sizeof col[ncol].head, "at %.3fs", cli_json_num(a, "seconds"));
        col[ncol].cats = cJSON_GetObjectItemCaseSensitive(a, "categories");
        col[ncol++].total = cli_json_num(a, "bytes");
    }
    /* Iteration ends: all of a few, else the first two and the last. */
    for (int k = 0; k < nit && ncol < 16; k++) {
        if (nit > 3 && k >= 2 && k < nit - 1)
            continue;
        const cJSON *x = cJSON_GetArrayItem(iters, k);
        snprintf(col[ncol].head, sizeof col[ncol].head, "end of #%d", k + 1);
        col[ncol].cats = cJSON_GetObjectItemCaseSensitive(x, "at_end");
        col[ncol++].total = cli_json_num(x, "end_bytes");
    }
    print_table(out, col, ncol);
    char free_line[256];
    if (categories_peak_free_text(peak, free_line, sizeof free_line))
        fprintf(out, "  %s\n", free_line);
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(dev, "at"))
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "past_end")))
            fprintf(out, "  (at %.3fs lies past the end of the trace at %.3fs: its column is the "
                         "state at the end)\n",
                    cli_json_num(a, "seconds"), cli_json_num(a, "end_seconds"));
    if (nit == 4)
        fprintf(out, "  (the end of iteration 3 is in --json)\n");
    else if (nit > 4)
        fprintf(out, "  (the ends of iterations 3..%d are in --json)\n", nit - 1);
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(dev, "end");
    if (cJSON_IsObject(end)) {
        /* Leaked tensors sit in whatever category their phase gave them; this line says
         * how much of the end they are. */
        char held[32];
        size_text(cli_json_num(end, "held_by_leaks_bytes"), held, sizeof held);
        double nf = cli_json_num(end, "leak_findings");
        fprintf(out, "  at end: ");
        categories_print_line(out, cJSON_GetObjectItemCaseSensitive(end, "categories"),
                              cli_json_num(end, "bytes"));
        fprintf(out, "; held by leaks: %s (%.0f finding%s)\n", held, nf, nf == 1 ? "" : "s");
    }

    const cJSON *f = cJSON_GetObjectItemCaseSensitive(dev, "formula");
    const char *form = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "form"));
    if (cJSON_IsObject(f) && form && !strcmp(form, "inference")) {
        char p[32], in[32], act[32], est[32], meas[32];
        size_text(cli_json_num(f, "parameter"), p, sizeof p);
        size_text(cli_json_num(f, "input"), in, sizeof in);
        size_text(cli_json_num(f, "activation_temporary"), act, sizeof act);
        size_text(cli_json_num(f, "estimate"), est, sizeof est);
        size_text(cli_json_num(f, "measured_peak"), meas, sizeof meas);
        fprintf(out, "  peak iteration %.0f (inference: no backward, no optimizer step): "
                     "parameters + inputs and KV caches + activations and temporaries\n",
                cli_json_num(f, "iteration"));
        fprintf(out, "    = %s + %s + %s = %s; measured peak %s\n", p, in, act, est, meas);
        const cJSON *x = cJSON_GetArrayItem(iters, (int)cli_json_num(f, "iteration") - 1);
        const cJSON *pc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(x, "peak"), "categories");
        if (pc) {
            char w[32], ot[32];
            size_text(cli_json_num(pc, "workspace"), w, sizeof w);
            size_text(cli_json_num(pc, "other"), ot, sizeof ot);
            fprintf(out, "    not in the formula, at that peak: workspace %s, other %s\n", w, ot);
        }
    } else if (cJSON_IsObject(f)) {
        char p[32], o[32], g[32], t[32], act[32], est[32], meas[32];
        size_text(cli_json_num(f, "parameter"), p, sizeof p);
        size_text(cli_json_num(f, "optimizer_state"), o, sizeof o);
        size_text(cli_json_num(f, "gradient"), g, sizeof g);
        size_text(cli_json_num(f, "optimizer_temporary"), t, sizeof t);
        size_text(cli_json_num(f, "activation"), act, sizeof act);
        size_text(cli_json_num(f, "estimate"), est, sizeof est);
        size_text(cli_json_num(f, "measured_peak"), meas, sizeof meas);
        fprintf(out, "  peak iteration %.0f: parameters + optimizer state + max(gradients + "
                     "optimizer intermediates, activations)\n",
                cli_json_num(f, "iteration"));
        fprintf(out, "    = %s + %s + max(%s + %s, %s) = %s; measured peak %s\n", p, o, g, t, act,
                est, meas);
        /* What the formula leaves out, at that iteration's peak. */
        const cJSON *x = cJSON_GetArrayItem(iters, (int)cli_json_num(f, "iteration") - 1);
        const cJSON *pc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(x, "peak"), "categories");
        if (pc) {
            char w[32], tm[32], ot[32];
            size_text(cli_json_num(pc, "workspace"), w, sizeof w);
            size_text(cli_json_num(pc, "temporary"), tm, sizeof tm);
            size_text(cli_json_num(pc, "other"), ot, sizeof ot);
            fprintf(out, "    not in the formula, at that peak: workspace %s, temporaries %s, "
                         "other %s\n",
                    w, tm, ot);
        }
        if (cli_json_num(f, "real_peak_unfinished_iteration") > 0) {
            char real[32];
            size_text(cli_json_num(cJSON_GetObjectItemCaseSensitive(dev, "peak"), "bytes"), real, sizeof real);
            fprintf(out, "    the real peak, %s, is in iteration %.0f, unfinished (the trace ends "
                         "in it, at an OOM)\n",
                    real, cli_json_num(f, "real_peak_unfinished_iteration"));
        }
    }
    print_identity(out, cJSON_GetObjectItemCaseSensitive(dev, "optimizer_identity"));
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(dev, "explain");
    if (cJSON_IsArray(ex)) {
        fprintf(out, "  why: the biggest allocations of each category alive at the peak\n");
        cJSON_ArrayForEach(e, ex)
        {
            char b[32];
            size_text(cli_json_num(e, "bytes"), b, sizeof b);
            fprintf(out, "  %12s  %-15s %s\n  %12s  %-15s %s\n", b,
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "category")),
                    cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "site"))), "", "",
                    cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "why"))));
        }
    }
}

void categories_print_file(FILE *out, const cJSON *file)
{
    fprintf(out, "%s\n", cli_term(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(file, "path"))));
    const cJSON *devices = cJSON_GetObjectItemCaseSensitive(file, "devices");
    if (cJSON_GetArraySize(devices) == 0)
        fprintf(out, "no device has events or segments\n");
    const cJSON *dev;
    cJSON_ArrayForEach(dev, devices) print_device(out, dev);
}
