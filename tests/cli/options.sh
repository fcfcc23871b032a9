#!/usr/bin/env bash
# The option rules every command shares (cli/options.c, docs/memsnap.1.md OPTIONS):
# --opt=value is --opt value; `--` ends the options, so a file named like an option is
# read as a file; a bad --device, a missing value and an unknown option give the same
# message and exit 2 in every command; the environment settings reach the library
# through the tool.
set -uo pipefail
source "$(dirname "$0")/common.bash"
here=$(cd "$(dirname "$0")/../.." && pwd)
# run LABEL WANT_RC -- ARGS...: runs memsnap with stdout/stderr in $tmp/out, $tmp/err.
run() {
  local label=$1 want=$2; shift 3
  "$bin" "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  [ "$rc" -eq "$want" ] || { bad "$label: exit $rc, wanted $want: $(head -c 300 "$tmp/err")"; return 1; }
  return 0
}
same() { # LABEL FILE_A FILE_B
  if cmp -s "$2" "$3"; then ok "$1"; else bad "$1: outputs differ"; diff "$2" "$3" | head -5; fi
}

OOM=$here/testdata/oom.pickle
R0=$here/testdata/ddp_rank0.pickle
R1=$here/testdata/ddp_rank1.pickle
LEAK=$here/testdata/leak_layers.pickle
cd "$tmp" || exit 2

# ---------------------------------------------------------------- --opt=value
# Each command with a value given both ways: the same output, and the value took effect.
for form in spaced joined; do
  if [ $form = spaced ]; then dev=(--device 1); dev0=(--device 0); top=(--top 1)
  else dev=(--device=1); dev0=(--device=0); top=(--top=1); fi
  "$bin" summary "$R1" "${dev[@]}" "${top[@]}" > "summary.$form" 2>&1
  "$bin" leaks --json "$LEAK" "${dev0[@]}" > "leaks.$form" 2>&1
  "$bin" categories --json "$R1" "${dev[@]}" > "categories.$form" 2>&1
  "$bin" oom --json "$OOM" "${top[@]}" > "oom.$form" 2>&1
  "$bin" diff --json "$R0" "$R1" "${top[@]}" > "diff.$form" 2>&1
  "$bin" ranks --json "$R0" "$R1" "${top[@]}" > "ranks.$form" 2>&1
done
for c in summary leaks categories oom diff ranks; do same "$c --opt=value as --opt value" "$c.spaced" "$c.joined"; done
# What the values did: device 1 only, one site listed.
grep -q '^device 1: ' summary.joined && ! grep -q '^device 0: ' summary.joined &&
  [ "$(grep -A3 'top sites alive' summary.joined | grep -c ' B\| KiB\| MiB')" -eq 1 ] &&
  ok "summary --device=1 --top=1: device 1, one site" || bad "summary --device=1 --top=1 not applied"
python3 - "$tmp/categories.joined" "$tmp/oom.joined" "$tmp/diff.joined" <<'EOF' && ok "categories --device=1, oom --top=1, diff --top=1 applied" || bad "--opt=value not applied (categories/oom/diff)"
import json, sys
cats = json.load(open(sys.argv[1]))
assert [d["device"] for d in cats["files"][0]["devices"]] == [1], cats["files"][0]["devices"]
oom = json.load(open(sys.argv[2]))
assert all(len(o["top_sites"]) <= 1 for o in oom["files"][0]["ooms"]) and oom["files"][0]["ooms"]
diff = json.load(open(sys.argv[3]))
def lists(o):
    if isinstance(o, dict):
        for v in o.values(): yield from lists(v)
    elif isinstance(o, list):
        yield o
        for v in o: yield from lists(v)
assert max(len(l) for l in lists(diff) if l and isinstance(l[0], dict) and "site" in l[0]) == 1
EOF
# The commands that write files, with --output=PATH and a joined value.
run "render --output=" 0 -- render "$OOM" --output=r.png --width=300 --height=200 &&
  [ "$(od -An -tu1 -j16 -N4 r.png | tr -s ' ')" = " 0 0 1 44" ] && ok "render --output=r.png --width=300: 300 px wide" ||
  bad "render --output= / --width= not applied"
run "view --output=" 0 -- view "$OOM" --output=v.html --title=OptTitle &&
  grep -q '<title>OptTitle</title>' v.html && ok "view --output=v.html --title=OptTitle" || bad "view --output= / --title= not applied"
run "report --output=" 0 -- report "$OOM" --output=rep --title=OptTitle &&
  grep -q 'OptTitle' rep/index.html && ok "report --output=rep --title=OptTitle" || bad "report --output= / --title= not applied"
run "oom -o" 0 -- oom "$OOM" -o o.svg && [ -s o.svg ] && ok "oom -o o.svg" || bad "oom -o not written"
# A global option takes the same two forms.
run "--max-input=" 0 -- --max-input=1GiB summary "$OOM" && grep -q '^device 0: ' out && ok "memsnap --max-input=1GiB summary"
run "--max-input missing value" 2 -- --max-input && grep -q -- '--max-input needs a size' "$tmp/err" &&
  ok "memsnap --max-input without a size: exit 2" || bad "memsnap --max-input without a size"
# A flag takes no value.
run "--json=1" 2 -- summary --json=1 "$OOM" &&
  grep -qx "memsnap summary: --json takes no value (see memsnap summary --help)" "$tmp/err" &&
  ok "summary --json=1: takes no value" || bad "summary --json=1: $(cat "$tmp/err")"

# ---------------------------------------------------------------- -- ends options
# Files named like options, after `--`: read as files (a text summary, not JSON).
cp "$OOM" ./--json
cp "$OOM" ./-h
cp "$R0" ./--a; cp "$R1" ./--b
run "summary -- --json" 0 -- summary -- --json && grep -q '^--json (pickle protocol' out && ok "summary -- --json reads the file --json" || bad "summary -- --json"
run "leaks -- --json" 0 -- leaks -- --json && ! grep -q '^{' out && ok "leaks -- --json reads the file --json" || bad "leaks -- --json"
run "categories -- -h" 0 -- categories -- -h && grep -q '^-h' out && ok "categories -- -h reads the file -h" || bad "categories -- -h"
run "oom -- --json" 0 -- oom -- --json && grep -q '^--json$' out && ok "oom -- --json reads the file --json" || bad "oom -- --json"
run "diff -- --a --b" 0 -- diff -- --a --b && grep -q '^Verdict: ' out && ok "diff -- --a --b reads both files" || bad "diff -- --a --b"
run "ranks -- --a --b" 0 -- ranks -- --a --b && grep -q '^--a ' out && ok "ranks -- --a --b reads both files" || bad "ranks -- --a --b"
run "render -- --json" 0 -- render -o dash.svg -- --json && grep -q -- '--json' dash.svg && ok "render -o dash.svg -- --json" || bad "render -- --json"
run "view -- --json" 0 -- view -o dash.html -- --json && [ -s dash.html ] && ok "view -o dash.html -- --json" || bad "view -- --json"
run "report -- --json" 0 -- report -o dashrep -- --json && [ -s dashrep/index.html ] && ok "report -o dashrep -- --json" || bad "report -- --json"
# Without `--` such a name is an option, and `-` alone is standard input.
run "summary --json as option" 0 -- summary --json "$OOM" && grep -q '^{' out && ok "summary --json FILE is JSON" || bad "summary --json FILE"
"$bin" summary - < "$OOM" > out 2>&1 && grep -q '^- (pickle protocol' out && ok "summary - reads standard input" || bad "summary -"

# ---------------------------------------------------------------- same messages everywhere
# Each command with the arguments it needs besides the bad option.
declare -A needs=(
  [summary]="$OOM" [leaks]="$OOM" [categories]="$OOM" [oom]="$OOM"
  [diff]="$R0 $R1" [ranks]="$R0 $R1" [render]="$OOM -o x.png" [view]="$OOM -o x.html"
  [report]="$OOM -o xrep"
)
for c in summary render categories leaks diff ranks report oom view; do
  # shellcheck disable=SC2086
  for v in x -1 65536 1e3; do
    if run "$c --device $v" 2 -- $c ${needs[$c]} --device $v; then
      want="memsnap $c: --device: '$v' is not an integer in 0..65535"
      [ "$(cat err)" = "$want" ] && ok "$c --device $v" || bad "$c --device $v: '$(cat err)', wanted '$want'"
    fi
  done
  # shellcheck disable=SC2086
  if run "$c --device 65535" 2 -- $c ${needs[$c]} --device 65535; then
    # (diff and ranks word it as the library's comparison does)
    grep -Eq "no device 65535 \(the |device 65535 not in the snapshot" err && ok "$c --device 65535: the file has no such device" || bad "$c --device 65535: $(cat err)"
  fi
  # shellcheck disable=SC2086
  if run "$c --device=" 2 -- $c ${needs[$c]} --device=; then
    want="memsnap $c: --device: '' is not an integer in 0..65535"
    [ "$(cat err)" = "$want" ] && ok "$c --device=" || bad "$c --device=: '$(cat err)'"
  fi
  # shellcheck disable=SC2086
  if run "$c --device (no value)" 2 -- $c ${needs[$c]} --device; then
    want="memsnap $c: --device needs a value (see memsnap $c --help)"
    [ "$(cat err)" = "$want" ] && ok "$c --device without a value" || bad "$c --device without a value: '$(cat err)'"
  fi
  for u in --bogus --bogus=1 -x; do
    # shellcheck disable=SC2086
    if run "$c $u" 2 -- $c ${needs[$c]} $u; then
      want="memsnap $c: unknown option '${u%%=*}' (see memsnap $c --help)"
      [ "$(cat err)" = "$want" ] && ok "$c $u" || bad "$c $u: '$(cat err)', wanted '$want'"
    fi
  done
  # --help stops at once, before a later mistake; its text goes to stdout.
  run "$c --help --bogus" 0 -- $c --help --bogus && grep -q "^usage: memsnap $c" out && ok "$c --help" || bad "$c --help"
done

# ---------------------------------------------------------------- the environment
# The library reads none (tests/test_limits.c); the tool still honours both variables.
gzip -c "$here/testdata/linear_infer.pickle" > small.pickle.gz
MEMSNAP_MAX_INPUT=1KiB "$bin" summary small.pickle.gz > out 2> err; rc=$?
[ $rc -eq 2 ] && grep -q 'small.pickle.gz' err && ok "MEMSNAP_MAX_INPUT=1KiB refuses a larger gzip input: $(head -n1 err)" ||
  bad "MEMSNAP_MAX_INPUT=1KiB: exit $rc: $(cat err)"
"$bin" --max-input 1KiB summary small.pickle.gz > out2 2> err2
same "MEMSNAP_MAX_INPUT as --max-input" err err2
MEMSNAP_MAX_INPUT=1KiB "$bin" --max-input 1GiB summary small.pickle.gz > out 2> err &&
  ok "--max-input wins over MEMSNAP_MAX_INPUT" || bad "--max-input 1GiB with MEMSNAP_MAX_INPUT=1KiB: $(cat err)"
"$bin" summary small.pickle.gz > a.txt 2>&1
MEMSNAP_THREADS=1 "$bin" summary small.pickle.gz > b.txt 2>&1
same "MEMSNAP_THREADS=1: the same summary" a.txt b.txt

finish options
