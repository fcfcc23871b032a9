/* The text of one OOM, printed from its JSON (json/json_oom.h). */
#include "oom_json.h"

#include <string.h>

#include "cli_util.h"
#include "shape_json.h"

static const char *sz(double bytes, char *buf)
{
    ms_format_bytes((int64_t)bytes, buf, 32);
    return buf;
}

void oom_print_json(FILE *out, const cJSON *e, int indent)
{
    char a[32], b[32], c[32];
    int w = indent;
    fprintf(out, "%*sOOM on device %.0f at event %.0f: cause %s%s\n", w, "", cli_json_num(e, "device"),
            cli_json_num(e, "event"), cli_json_str(e, "cause"),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "approximate")) ? " (approximate)" : "");
    shape_print_json(out, cJSON_GetObjectItemCaseSensitive(e, "shape"), w + 2, 17);
    fprintf(out, "%*s  request           %s (block %s; a new segment would be %s)\n", w, "",
            sz(cli_json_num(e, "request_bytes"), a), sz(cli_json_num(e, "request_block_bytes"), b),
            sz(cli_json_num(e, "segment_request_bytes"), c));
    fprintf(out, "%*s  device free       %s%s\n", w, "", sz(cli_json_num(e, "device_free_bytes"), a),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "limit_refused"))
                ? " (far more than the request: a limit refused it, not the GPU)"
                : "");
    fprintf(out, "%*s  allocated         %s of %s reserved in %.0f segment%s\n", w, "",
            sz(cli_json_num(e, "allocated_bytes"), a), sz(cli_json_num(e, "reserved_bytes"), b), cli_json_num(e, "segments"),
            cli_json_num(e, "segments") == 1 ? "" : "s");
    fprintf(out, "%*s  free in reserved  %s in %.0f block%s, largest %s\n", w, "",
            sz(cli_json_num(e, "free_in_reserved_bytes"), a), cli_json_num(e, "free_blocks"),
            cli_json_num(e, "free_blocks") == 1 ? "" : "s",
            sz(cli_json_num(e, "largest_free_block_bytes"), b));
    if (cli_json_num(e, "usable_free_bytes") != cli_json_num(e, "free_in_reserved_bytes"))
        fprintf(out, "%*s    usable for it   %s in %.0f block%s, largest %s (same pool and stream)\n",
                w, "", sz(cli_json_num(e, "usable_free_bytes"), a), cli_json_num(e, "usable_free_blocks"),
                cli_plural(cli_json_num(e, "usable_free_blocks")), sz(cli_json_num(e, "largest_usable_block_bytes"), b));
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "categories");
    if (cJSON_IsObject(cat)) {
        fprintf(out, "%*s  categories%s", w, "",
                strcmp(cli_json_str(e, "categories_source"), "stacks") ? "       " : " (from stacks)");
        const cJSON *kv;
        cJSON_ArrayForEach(kv, cat)
        {
            if (kv->valuedouble > 0)
                fprintf(out, " %s %s", kv->string, sz(kv->valuedouble, a));
        }
        fprintf(out, "\n");
    } else {
        fprintf(out, "%*s  categories        not known\n", w, "");
    }
    const cJSON *its = cJSON_GetObjectItemCaseSensitive(e, "iterations");
    if (cJSON_GetArraySize(its) > 0) {
        /* Peaks tell what each iteration needed; live memory at the ends tells what it
         * kept (a leak grows there). */
        const char *label = "iterations       ";
        const cJSON *it;
        double prev = -1, top = cli_json_num(e, "peak_iteration");
        cJSON_ArrayForEach(it, its)
        {
            double idx = cli_json_num(it, "index");
            const char *highest = idx == top ? ", the highest" : "";
            fprintf(out, "%*s  %s #%-3.0f ", w, "", label, idx);
            label = "                 ";
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "unfinished"))) {
                /* It has no end: what it reached before failing is what tells. */
                fprintf(out, "peak so far %s%s; unfinished: the failure\n",
                        sz(cli_json_num(it, "peak_bytes"), a), highest);
                continue;
            }
            double v = cli_json_num(it, "live_end_bytes");
            fprintf(out, "peak %s%s; live at its end %s", sz(cli_json_num(it, "peak_bytes"), c), highest,
                    sz(v, a));
            if (prev >= 0 && v != prev)
                fprintf(out, " (%s%s)", v > prev ? "+" : "-", sz(v > prev ? v - prev : prev - v, b));
            prev = v;
            fprintf(out, "\n");
        }
    }
    fprintf(out, "%*s  why               %s\n", w, "", cli_term(cli_json_str(e, "why")));
    if (cli_json_str(e, "evidence")[0])
        fprintf(out, "%*s  evidence          %s\n", w, "", cli_term(cli_json_str(e, "evidence")));
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(e, "unfinished_step");
    if (cJSON_IsObject(step)) {
        const cJSON *st = step;
        /* How far the failing step got and how much larger it is: the need is the
         * whole step's, not what it reached. */
        double ratio = cli_json_num(st, "activation_ratio");
        fprintf(out, "%*s  step so far       %.0f of the previous step's %.0f layer calls (%.0f%%); "
                     "%s per call, %.1fx the previous %s%s\n",
                w, "", cli_json_num(st, "layer_calls_done"), cli_json_num(st, "layer_calls_previous"),
                100.0 * cli_json_num(st, "fraction_done"), sz(cli_json_num(st, "bytes_per_layer_call"), a), ratio,
                sz(cli_json_num(st, "previous_bytes_per_layer_call"), b),
                ratio >= 1.25 ? ": the input grew" : ratio <= 0.8 ? ": the input shrank" : "");
        fprintf(out, "%*s  whole step needs  about %s at its peak (the forward about %s at its end)",
                w, "", sz(cli_json_num(st, "step_need_bytes"), a), sz(cli_json_num(st, "forward_need_bytes"), b));
        double need = cli_json_num(st, "step_need_bytes"), held = cli_json_num(st, "step_need_reserved_bytes");
        if (need > 0 && held > need * 1.05)
            fprintf(out, ", %s reserved at the allocator's %.2fx", sz(held, a), held / need);
        if (cli_json_num(e, "limit_bytes") > 0)
            fprintf(out, "; %s %s", strcmp(cli_json_str(e, "limit_source"), "device") ? "the limit is about"
                                                                             : "the device allowed",
                    sz(cli_json_num(e, "limit_bytes"), c));
        fprintf(out, "\n");
    }
    /* Without history (share_of_live) the why and the advice say what the free memory
     * was weighed against. */
    const char *basis = cli_json_str(e, "cause_basis");
    if (basis[0] && strcmp(basis, "share_of_live"))
        fprintf(out, "%*s  to finish it      %s more to allocate, from #%.0f: %s\n", w, "",
                sz(cli_json_num(e, "still_to_allocate_bytes"), a), cli_json_num(e, "basis_iteration"),
                !strcmp(basis, "previous_iteration_peak")
                    ? "its growth from the same point to its peak"
                    : "everything it allocated after the same point (this one is larger)");
    const cJSON *adv;
    cJSON_ArrayForEach(adv, cJSON_GetObjectItemCaseSensitive(e, "advice"))
        fprintf(out, "%*s  advice            %s\n", w, "", cli_term(cJSON_GetStringValue(adv)));
    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(e, "top_sites");
    if (cJSON_GetArraySize(sites) > 0) {
        fprintf(out, "%*s  top sites alive at the failure:\n", w, "");
        const cJSON *st;
        cJSON_ArrayForEach(st, sites)
            fprintf(out, "%*s  %12s %8.0f  %s %s\n", w, "", sz(cli_json_num(st, "bytes"), a),
                    cli_json_num(st, "count"), cli_term(cli_json_str(st, "site")), cli_term(cli_json_str(st, "function")));
    }
    if (cli_json_str(e, "note")[0])
        fprintf(out, "%*s  note              %s\n", w, "", cli_term(cli_json_str(e, "note")));
}
