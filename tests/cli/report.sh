#!/usr/bin/env bash
# memsnap report from the command line: what lands in DIR, file names that would break a
# page or collide, input from stdin and gzip, and the errors that must exit 2. The gates'
# numbers are held to the truth files in tests/test_report.c; the page in a browser in
# tests/test_report_browser.c.
set -u
source "$(dirname "$0")/common.bash"
T=$tmp

# A nested DIR that does not exist yet is created; every output is there.
ms_status 0 report testdata/gpt2_train.pickle -o "$T/a/b/c"
for f in index.html summary.md summary.json; do
  [ -s "$T/a/b/c/$f" ] || bad "missing $f"
done
grep -q '^memsnap report: wrote ' "$T/out" || bad "no 'wrote' line"
charts=0
if grep -Eq '"timeline_png":[[:space:]]*"timeline-gpt2_train.png"' "$T/a/b/c/summary.json"; then
  charts=1
  [ -s "$T/a/b/c/timeline-gpt2_train.png" ] || bad "timeline-gpt2_train.png missing"
  # The memory by category beside it: a PNG, named in the JSON, shown on the page under
  # the categories table (inline SVG with its caption) and in summary.md.
  c=categories-gpt2_train.png
  [ "$(head -c 8 "$T/a/b/c/$c" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || bad "$c is not a PNG"
  grep -Eq "\"categories_png\":[[:space:]]*\"$c\"" "$T/a/b/c/summary.json" || bad "categories_png not in summary.json"
  grep -q "^!\[memory by category\]($c)\$" "$T/a/b/c/summary.md" || bad "$c not shown in summary.md"
  python3 - "$T/a/b/c/index.html" "$c" <<'PY' || bad "the chart by category is not under the categories table"
import re, sys
h = open(sys.argv[1], encoding="utf-8").read()
table = h.index("What the memory is")
cap = h.index("Active memory over time by category")
svg = h.rindex("<svg", 0, cap)
assert table < svg < cap, (table, svg, cap)
assert "<code>%s</code>" % sys.argv[2] in h[cap:cap + 400]
PY
  grep -q "$c" "$T/out" || bad "$c not in the 'wrote' line"
fi

# A file name with markup must reach the page and the Markdown as text, never as markup.
evil='x"><script>alert(1)<\script><img src=x onerror=alert(2)>|y'
cp testdata/oom.pickle "$T/$evil.pickle"
ms_status 0 report "$T/$evil.pickle" -o "$T/evil"
# (The page has the timeline's own inline script; the name's markup must not appear.)
if grep -q '<script>alert\|<img' "$T/evil/index.html"; then bad "markup from a file name reached index.html"; fi
grep -q '&lt;script&gt;alert(1)' "$T/evil/index.html" || bad "escaped file name not in index.html"
if grep -q '<script\|<img' "$T/evil/summary.md"; then bad "markup from a file name reached summary.md"; fi
grep -q 'alert(1)&lt;\\\\script&gt;' "$T/evil/summary.md" || bad "escaped file name not in summary.md"
if [ "$charts" = 1 ]; then
  ls "$T/evil" | grep -q '^timeline-x___script_alert_1___script__img_src_x_onerror_alert_2___y\.png$' \
    || { bad "chart name not made safe"; ls "$T/evil"; }
fi

# Two files with one base name (two runs' mem.pickle) keep apart; --compare puts them
# side by side (their names hold no rank: not compared by default, see verdicts.sh).
mkdir -p "$T/run1" "$T/run2"
cp testdata/ddp_rank0.pickle "$T/run1/mem.pickle"
cp testdata/ddp_rank1.pickle "$T/run2/mem.pickle"
ms_status 0 report "$T/run1/mem.pickle" "$T/run2/mem.pickle" -o "$T/same" --compare
if [ "$charts" = 1 ]; then
  [ -s "$T/same/timeline-mem.png" ] && [ -s "$T/same/timeline-mem-2.png" ] && [ -s "$T/same/ranks.png" ] \
    && [ -s "$T/same/categories-mem.png" ] && [ -s "$T/same/categories-mem-2.png" ] \
    || { bad "colliding names not kept apart"; ls "$T/same"; }
fi
grep -Eq '"pair":[[:space:]]*\{' "$T/same/summary.json" || bad "two files give no pair comparison"

# Standard input and gzip.
ms_status 0 report - -o "$T/stdin" < testdata/gpt2_train.pickle
grep -Eq '"path":[[:space:]]*"-"' "$T/stdin/summary.json" || bad "stdin not named '-'"
gzip -c testdata/gpt2_train.pickle > "$T/g.pickle.gz"
ms_status 0 report "$T/g.pickle.gz" -o "$T/gz"
grep -q '"peak"' "$T/gz/summary.json" || bad "gzip input gave no summary"

# summary.md stays small enough for a CI job summary even for many files.
ms_status 0 report testdata/*.pickle -o "$T/all"
size=$(wc -c < "$T/all/summary.md")
[ "$size" -lt 65536 ] || bad "summary.md is $size bytes for $(ls testdata/*.pickle | wc -l) files"

# Errors: exit 2 with the reason.
printf 'x' > "$T/afile"
ms_status 2 report testdata/oom.pickle -o "$T/afile"
grep -q 'afile' "$T/out" || bad "no message for an output that is a file"
head -c 100000 testdata/gpt2_train.pickle > "$T/cut.pickle"
ms_status 2 report "$T/cut.pickle" -o "$T/cut"
grep -q 'cut.pickle: byte [0-9]*: ' "$T/out" || bad "truncated input not named with its offset"
ms_status 2 report testdata/oom.pickle -o "$T/x" --device 9
grep -q 'no device 9' "$T/out" || bad "no message for a missing device"
ms_status 2 report testdata/oom.pickle -o "$T/x" --baseline "$T/cut.pickle" --max-growth 1
grep -q 'cut.pickle: byte' "$T/out" || bad "bad baseline not named"
ms_status 2 report testdata/oom.pickle -o
grep -q -- '-o needs a value' "$T/out" || bad "no message for -o without a value"

# ranks.png is the comparison figure `render A B` draws: panels on shared scales, each on
# its run axis (set-up squeezed, iterations given the width), the same bytes.
ms_status 0 report testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle -o "$T/ddp"
if [ -s "$T/ddp/ranks.png" ]; then
  "$BIN" render testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle -o "$T/ddp-render.png" \
    || bad "render A B failed"
  cmp -s "$T/ddp/ranks.png" "$T/ddp-render.png" || bad "ranks.png is not the figure render A B draws"
else
  bad "no ranks.png for two files"
fi

# A file's PNGs are `render --leaks` and `render --by category`, on the run axis too
# (v3_pauses: 4 s of set-up and two 1.5 s pauses in breaks, as the iterations table says).
ms_status 0 report testdata/v3_pauses.pickle -o "$T/pz"
"$BIN" render --leaks testdata/v3_pauses.pickle -o "$T/pz-leaks.png" || bad "render --leaks failed"
"$BIN" render --by category testdata/v3_pauses.pickle -o "$T/pz-cat.png" || bad "render --by category failed"
cmp -s "$T/pz/timeline-v3_pauses.png" "$T/pz-leaks.png" || bad "timeline-NAME.png is not render --leaks"
cmp -s "$T/pz/categories-v3_pauses.png" "$T/pz-cat.png" || bad "categories-NAME.png is not render --by category"
ms_status 0 report testdata/v3_pauses.pickle -o "$T/pzt" --x time
"$BIN" render --leaks --x time testdata/v3_pauses.pickle -o "$T/pzt-leaks.png" || bad "render --x time failed"
cmp -s "$T/pzt/timeline-v3_pauses.png" "$T/pzt-leaks.png" || bad "report --x time: timeline-NAME.png is not render --leaks --x time"

finish report
