#include "chart_options.h"

#include "chart.h"
#include "cli_util.h"

const char *const CLI_PAGE_X_MODES[] = {"run", "time", NULL};

int cli_add_group_rule(void *ctx, const char *cmd, const char *name, const char *value)
{
    (void)name;
    ms_error err;
    if (msr_chart_group_rules_add(ctx, value, &err)) {
        cli_error(cmd, "%s", err.message);
        return 2;
    }
    return 0;
}
