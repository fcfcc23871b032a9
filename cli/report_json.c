/* JSON of comparisons for summary.json. The keys are those of `memsnap diff --json` and
 * `memsnap ranks --json` (docs/json.md), so a script reads a report's comparison the same
 * way it reads those commands' output. */
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "report.h"
#include "summary_input.h"
