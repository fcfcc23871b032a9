/* JSON of comparisons for summary.json. The keys are those of `memsnap diff --json` and
 * `memsnap ranks --json` (docs/json.md), so a script reads a report's comparison the same
 * way it reads those commands' output. */
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "report.h"
#include "summary_input.h"

char *report_pair_verdict(const ms_pair *p, const char *la, const char *lb)
{
    size_t need = ms_pair_verdict(p, la, lb, NULL, 0);
    char *v = malloc(need + 1);
    if (v)
        ms_pair_verdict(p, la, lb, v, need + 1);
    return v;
}

void report_pair_labels(const ms_pair *p, char *la, char *lb, size_t cap)
{
    ms_profile_label(p->a, la, cap);
    ms_profile_label(p->b, lb, cap);
    /* The same label twice (a run against its own earlier file) reads as nonsense. */
    if (!strcmp(la, lb)) {
        snprintf(la, cap, "A");
        snprintf(lb, cap, "B");
    }
}
