/* Options that render, view and report share for their charts, so each reads them with
 * the same words and the same messages. */
#ifndef MEMSNAP_CLI_CHART_OPTIONS_H
#define MEMSNAP_CLI_CHART_OPTIONS_H

/* --x for view and report: the events axis is render's only (the page's windows are cut
 * in time). Index 0 is the run axis, 1 linear time. */
extern const char *const CLI_PAGE_X_MODES[];

/* --group NAME=REGEX, repeatable, for CLI_CALLBACK: compiled into the
 * msr_chart_group_rules at ctx as it is read; 2 with the reason for a bad rule. */
int cli_add_group_rule(void *ctx, const char *cmd, const char *name, const char *value);

#endif
