#!/usr/bin/env bash
# --group NAME=REGEX under hostile patterns and files (issue 34, docs/security.md
# "Patterns"): the patterns that crashed glibc's regexec or ran for minutes end in exit 0
# or a clear exit 2 that names the rule and the limit, with nothing written; a rule sees
# a frame's whole text; rules are matched once per distinct frame, so --by group costs
# about what --by alloc does and view --group about what view does. The time bounds are
# guards, not benchmarks: several times what the code takes under ASan on two busy
# shared cores, far below what the old engine took.
set -uo pipefail
source "$(dirname "$0")/common.bash"
here=$(pwd) # ctest runs it from the source root

# CPU seconds (user + system) a command takes, its exit status kept in $tmp/rc.
cpu() {
  python3 - "$tmp" "$@" <<'PY'
import resource, subprocess, sys
out = open(sys.argv[1] + "/err", "wb")
rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=out, timeout=300).returncode
open(sys.argv[1] + "/rc", "w").write(str(rc))
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.ru_utime + r.ru_stime:.2f}")
PY
}

# Runs a command in an empty directory with a wall-clock bound; checks its exit status,
# its message, and that a failure left nothing behind (no image, page, report directory
# or .memsnap.* temporary file).
try() { # label want_rc pattern seconds -- command... (run from $tmp/w)
  local label=$1 want=$2 pattern=$3 secs=$4; shift 5
  rm -rf "$tmp/w" && mkdir "$tmp/w"
  (cd "$tmp/w" && timeout "$secs" "$@" > "$tmp/out" 2> "$tmp/err"); local rc=$?
  local left
  left=$(ls -A "$tmp/w")
  if [ "$rc" -ne "$want" ] || { [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/err" "$tmp/out"; }; then
    bad "$label: rc $rc (want $want), stderr: $(head -c 400 "$tmp/err")"
  elif [ "$want" -eq 2 ] && [ -n "$left" ]; then
    bad "$label: a failed run left: $left"
  elif [ "$want" -eq 0 ] && [ -z "$left" ]; then
    bad "$label: wrote nothing"
  else
    ok "$label: $(head -n 1 "$tmp/err")"
  fi
}

oom=$here/testdata/oom.pickle
gen=$here/tests/gen/group_files.py
for c in render view report; do
  case $c in
    render) args=(render "$oom" -o out.png --by group);;
    view) args=(view "$oom" -o out.html);;
    report) args=(report "$oom" -o rep);;
  esac
  # glibc: SIGSEGV (a stack overflow in regexec). PCRE2 matches it empty at once.
  try "$c (|)(\\1\\1)*" 0 "" 60 -- "$bin" "${args[@]}" --group 'a=(|)(\1\1)*'
  # glibc: still running after 30 s on this 14 KB file.
  try "$c back-references" 2 "--group 'a': the match limit \(1000000 backtracking steps\) was reached on the [0-9]+-byte frame '/" 60 \
    -- "$bin" "${args[@]}" --group 'a=(.*)(.*)(.*)\3\2\1x'
  # glibc: 9.5 s and 3 GB, then "Memory exhausted".
  try "$c nested counted repeats" 2 "--group 'a': the pattern compiles to more than 65536 bytes, the limit" 60 \
    -- "$bin" "${args[@]}" --group 'a=((a{1,255}){1,255}){1,255}'
done
# A report whose directory is new leaves none; one into an existing directory leaves it
# as it was.
mkdir -p "$tmp/keep" && echo mine > "$tmp/keep/summary.md"
"$bin" report "$oom" -o "$tmp/keep" --group 'a=(.*)(.*)(.*)\3\2\1x' > /dev/null 2>&1
rc=$?
if [ "$rc" -eq 2 ] && [ "$(ls -A "$tmp/keep")" = summary.md ] && [ "$(cat "$tmp/keep/summary.md")" = mine ]; then
  ok "report into an existing directory: untouched"
else
  bad "report into an existing directory: rc $rc, left $(ls -A "$tmp/keep" | tr '\n' ' ')"
fi

long=$(head -c 4097 /dev/zero | tr '\0' a)
try "pattern too long" 2 "--group 'a': the pattern is 4097 bytes, over the limit of 4096" 20 \
  -- "$bin" render "$oom" -o out.png --by group --group "a=$long"
deep=$(printf '(%.0s' $(seq 65))x$(printf ')%.0s' $(seq 65))
try "nesting too deep" 2 "--group 'a': the pattern nests parentheses deeper than the limit of 64" 20 \
  -- "$bin" render "$oom" -o out.png --by group --group "a=$deep"
try "bad pattern" 2 "--group 'a=x\\[': bad pattern at byte 2: missing terminating \\] for character class" 20 \
  -- "$bin" view "$oom" -o out.html --group 'a=x['

# Anchored rules see the whole frame: /deep/ + 3,000 bytes + /end.py:7 leaf (the old
# engine cut the text at 1 KB, and neither rule matched).
python3 "$gen" long "$tmp/long.pickle"
if "$bin" render "$tmp/long.pickle" --format json -o "$tmp/long.json" --by group \
     --group 'a=^/deep/a+/end\.py:7 leaf$' --group 'b=/end\.py:7 leaf$' > "$tmp/out" 2>&1 &&
   python3 - "$tmp/long.json" <<'PY'
import json, sys
b = {x["label"]: x.get("max_bytes") for x in json.load(open(sys.argv[1]))["panels"][0]["bands"]}
sys.exit(0 if b["a"] == 1 << 20 and b["b"] == 2 << 20 else f"bands {b}")
PY
then ok "anchored rules on 3 KB paths"; else bad "anchored rules on 3 KB paths: $(head -c 300 "$tmp/out")"; fi

# A group repeated once per byte of a 300,000-byte path: the JIT's stack (4 MiB) or, in
# PCRE2's interpreter, the depth of backtracking points (100,000) runs out.
python3 "$gen" huge "$tmp/huge.pickle"
try "JIT stack or depth limit" 2 "--group 'x': the (JIT stack limit \(4096 KiB\)|depth limit \(100000 nested backtracking points\)) was reached on the 300020-byte frame" 30 \
  -- "$bin" render "$tmp/huge.pickle" -o out.png --by group --group 'x=^/deep/(a|b)*/end'
try "depth limit" 2 "--group 'x': the depth limit \(100000 nested backtracking points\) was reached" 30 \
  -- "$bin" render "$tmp/huge.pickle" -o out.png --by group --group 'x=(*NO_JIT)^/deep/(a|b)*/end'

# Frames share strings, so a small file can hold much frame text: 2,000 frames naming one
# 100,000-byte file (0.2 MB) are 200 MB of text. The rules read at most 64 MiB and 64
# bytes per byte of the file.
python3 "$gen" shared "$tmp/shared.pickle"
try "frame text budget" 2 "--group 'x': the rules would read more than [0-9]+ MiB of frame text in this file \(64 MiB and 64 bytes per byte of input\)" 30 \
  -- "$bin" render "$tmp/shared.pickle" -o out.png --by group --group 'x=zz'

# Once per distinct frame: 5,000 allocations, each with its own stack of 200 frames drawn
# from 64 (2.3 MB), 16 rules of which only the last matches (frames 3 and 11). The old
# engine matched per stack, frame and rule: 8 s in a Release build, against 0.25 s for
# --by alloc.
python3 "$gen" stacks "$tmp/stacks.pickle" 5000
rules=()
for k in $(seq 0 14); do rules+=(--group "r$k=/pkg9/mod$k\\.py:"); done
rules+=(--group 'r15=pkg3/mod(3|11)\.py:[0-9]+ fn')
t_alloc=$(cpu "$bin" render "$tmp/stacks.pickle" -o "$tmp/a.png" --by alloc)
t_group=$(cpu "$bin" render "$tmp/stacks.pickle" --format json -o "$tmp/g.json" --by group "${rules[@]}")
if [ "$(cat "$tmp/rc")" = 0 ] && python3 - "$tmp/g.json" "$t_alloc" "$t_group" <<'PY'
import json, sys
b = {x["label"]: x.get("max_bytes") for x in json.load(open(sys.argv[1]))["panels"][0]["bands"]}
t_alloc, t_group = float(sys.argv[2]), float(sys.argv[3])
assert all(b[f"r{k}"] == 0 for k in range(15)), b
assert b["r15"] > 0, b
assert t_group <= 2 * t_alloc + 3, f"--by group took {t_group} s of CPU, --by alloc {t_alloc} s"
PY
then ok "--by group, 16 rules, 5,000 stacks: $t_group s of CPU (--by alloc $t_alloc s)"
else bad "--by group, 16 rules, 5,000 stacks: $t_group s (--by alloc $t_alloc s), rc $(cat "$tmp/rc")"; fi

# The rules together may backtrack 16M steps beyond the frames' allowances: a pattern
# that takes about 200,000 steps on each of the 64 frames stops after about 35 of them.
try "backtracking budget of the file" 2 "--group 'a': the rules together backtracked more than the 16000000 steps" 60 \
  -- "$bin" render "$tmp/stacks.pickle" -o out.png --by group --group 'a=(.*)(.*)(.*)(.*)(.*)\5\4\3\2\1[#@]'

# The view's windows share one match per stack: 50,000 allocations with stacks of their
# own (3.9 MB). The old engine matched every stack of every window: 3.6x the view's CPU.
python3 "$gen" allocs "$tmp/allocs.pickle" 50000
t_plain=$(cpu "$bin" view "$tmp/allocs.pickle" -o "$tmp/v0.html")
t_rules=$(cpu "$bin" view "$tmp/allocs.pickle" -o "$tmp/v1.html" --group a=zz)
if [ "$(cat "$tmp/rc")" = 0 ] && grep -q '"group":' "$tmp/v1.html" &&
   python3 -c "import sys; t0, t1 = map(float, sys.argv[1:]); sys.exit(0 if t1 <= 1.6 * t0 + 0.5 else 1)" "$t_plain" "$t_rules"
then ok "view --group: $t_rules s of CPU (view $t_plain s)"
else bad "view --group: $t_rules s of CPU (view $t_plain s), rc $(cat "$tmp/rc")"; fi

finish group_rules
