#!/usr/bin/env bash
# The report's writers (cli/report_*.c) and summary's text printer (cli/cmd_summary.c)
# read their own JSON back through key paths written as string literals
# (cli_json_num(o, "leaks.verdict")), where a typo would read 0 or "" and fail silently.
# Every such literal must name a path that exists, from some object, in the JSON that
# report and `summary --json` write for bundled recordings chosen to have every section
# (OOMs, leaks, iterations, two ranks compared, a baseline). A key that only some traces
# get (times going backwards, one instant) must at least be one the JSON writers
# (lib/src/json/*.c, cli/*_json.c, cli/report_*.c) write, component by component. Paths built at run time
# are not literals and are not checked here.
set -u
source "$(dirname "$0")/common.bash"
command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
T=$tmp
"$BIN" report testdata/oom.pickle -o "$T/r1" > /dev/null || fail=1
"$BIN" report testdata/leak_layers.pickle --baseline testdata/noleak_layers.pickle \
  --max-growth 50 --fail-on-leaks --fail-on-oom --max-peak 1GiB -o "$T/r2" > /dev/null
"$BIN" report testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle -o "$T/r3" > /dev/null || fail=1
"$BIN" report testdata/gpt2_train.pickle testdata/oom_leak.pickle testdata/v3_oom_bystander.pickle \
  --compare -o "$T/r4" > /dev/null || fail=1
for f in gpt2_train oom_fragmentation leak_after_step; do
  "$BIN" summary --json "testdata/$f.pickle" > "$T/s_$f.json" || fail=1
done
[ "$fail" = 0 ] || { echo "FAIL: a report or summary did not run"; exit 1; }
python3 - "$T" cli/report_*.c cli/cmd_report.c cli/cmd_summary.c -- lib/src/json/*.c cli/*_json.c cli/report_*.c cli/cmd_report.c <<'PY' || exit 1
import glob, json, re, sys
cut = sys.argv.index("--")
tmp, sources, writers = sys.argv[1], sys.argv[2:cut], sys.argv[cut + 1:]
added = re.compile(r'\b(?:cJSON_Add\w*ToObject|num|\w*json_int|\w*json_num|\w*json_time|\w*json_seconds|\w*json_str_or_null|time_json)\(\s*[^,;]+,\s*"([^"]+)"')
written = set()
for src in writers:
    written.update(added.findall(open(src).read()))
docs = [json.load(open(p)) for p in glob.glob(tmp + "/r*/summary.json") + glob.glob(tmp + "/s_*.json")]
have = set()
def walk(v):
    if isinstance(v, dict):
        suffixes(v, "", 0)
        for x in v.values():
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
def suffixes(o, pre, depth):
    if depth == 4 or not isinstance(o, dict):
        return
    for k, x in o.items():
        have.add(pre + k)
        suffixes(x, pre + k + ".", depth + 1)
for d in docs:
    walk(d)
call = re.compile(r'\b(?:cli_json_(?:num|str|get)|get)\(\s*[^,;()]+(?:\([^()]*\))?\s*,\s*"([^"]+)"\s*\)')
secs = re.compile(r'\breport_seconds\([^;]*?,\s*"([^"]+)"\s*\)')
missing, n = [], 0
for src in sources:
    text = open(src).read()
    for rx in (call, secs):
        for m in rx.finditer(text):
            n += 1
            path = m.group(1)
            if path not in have and not all(k in written for k in path.split(".")):
                line = text.count("\n", 0, m.start()) + 1
                missing.append("%s:%d: \"%s\"" % (src, line, m.group(1)))
for x in missing:
    print("FAIL: no such path in the JSON:", x)
print("%d path literals checked, %d missing" % (n, len(missing)))
sys.exit(1 if missing or n < 200 else 0)
PY
