/* The user's --group NAME=REGEX rules (chart.h): compiled once, matched against every
 * frame of an allocation's stack written as "file:line function". */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "render_util.h"

int ms_chart_group_rules_add(ms_chart_group_rules *rules, const char *text, ms_error *err)
{
    const char *eq = text ? strchr(text, '=') : NULL;
    if (!eq)
        return ms__render_fail(err, MS_ERR_ARG, "--group '%s': expected NAME=REGEX",
                               text ? text : "");
    size_t n = (size_t)(eq - text);
    if (n == 0 || n >= sizeof rules->name[0])
        return ms__render_fail(err, MS_ERR_ARG, "--group '%s': the name must be 1 to %zu bytes",
                               text, sizeof rules->name[0] - 1);
    if (rules->n >= MS_CHART_MAX_RULES)
        return ms__render_fail(err, MS_ERR_ARG, "at most %d --group rules", MS_CHART_MAX_RULES);
    for (size_t i = 0; i < rules->n; i++)
        if (strlen(rules->name[i]) == n && !memcmp(rules->name[i], text, n))
            return ms__render_fail(err, MS_ERR_ARG, "--group: the name '%.*s' is used twice",
                                   (int)n, text);
    regex_t *re = calloc(1, sizeof *re);
    if (!re)
        return ms__render_fail(err, MS_ERR_NOMEM, "out of memory");
    int rc = regcomp(re, eq + 1, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char why[128];
        regerror(rc, re, why, sizeof why);
        free(re);
        return ms__render_fail(err, MS_ERR_ARG, "--group '%s': bad regex: %s", text, why);
    }
    memcpy(rules->name[rules->n], text, n);
    rules->name[rules->n][n] = '\0';
    rules->re[rules->n++] = re;
    return 0;
}

void ms_chart_group_rules_free(ms_chart_group_rules *rules)
{
    if (!rules)
        return;
    for (size_t i = 0; i < rules->n; i++) {
        regfree(rules->re[i]);
        free(rules->re[i]);
    }
    rules->n = 0;
}

int ms_chart_group_rules_match(const ms_chart_group_rules *rules, const ms_snapshot *snap,
                               uint32_t stack)
{
    if (!rules || !snap || stack == MS_NO_STACK || rules->n == 0)
        return -1;
    size_t n = 0;
    const uint32_t *frames = ms_snapshot_stack(snap, stack, &n);
    char text[1024];
    /* First rule wins: a rule is tried on every frame before the next rule is. */
    for (size_t r = 0; r < rules->n; r++) {
        for (size_t k = 0; k < n; k++) {
            const ms_frame *f = ms_snapshot_frame(snap, frames[k]);
            if (!f)
                continue;
            if (f->line >= 0)
                snprintf(text, sizeof text, "%s:%lld %s", ms_snapshot_string(snap, f->filename),
                         (long long)f->line, ms_snapshot_string(snap, f->name));
            else
                snprintf(text, sizeof text, "%s %s", ms_snapshot_string(snap, f->filename),
                         ms_snapshot_string(snap, f->name));
            if (regexec(rules->re[r], text, 0, NULL, 0) == 0)
                return (int)r;
        }
    }
    return -1;
}
