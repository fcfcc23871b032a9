#!/usr/bin/env bash
# memsnap categories (and the summary's peak breakdown): JSON keys and sums against the
# truth measured on the GPU, the text table, and exit codes for bad usage and bad input.
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
expect() { # label want_rc output_pattern -- command...
  local label=$1 want=$2 pattern=$3; shift 4
  "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pattern" "$tmp/err" "$tmp/out"; then
    echo "FAIL $label: rc $rc (want $want): $(head -c 400 "$tmp/err") $(head -c 400 "$tmp/out")"
    fail=$((fail+1))
  else
    echo "ok $label"; pass=$((pass+1))
  fi
}

# Usage and bad input: one line, exit 2, never a crash.
expect "help" 0 "usage: memsnap categories" -- "$bin" categories --help
expect "listed in the top-level help" 0 "categories" -- "$bin" --help
expect "no file" 2 "usage: memsnap categories" -- "$bin" categories
expect "unknown option" 2 "unknown option '--bogus'" -- "$bin" categories --bogus testdata/cat_adamw.pickle
expect "--at needs a value" 2 "--at needs a value" -- "$bin" categories testdata/cat_adamw.pickle --at
expect "--at not a number" 2 "--at: 'soon' is not a non-negative number" -- "$bin" categories --at soon testdata/cat_adamw.pickle
expect "--at negative" 2 "--at: '-1' is not a non-negative number" -- "$bin" categories --at -1 testdata/cat_adamw.pickle
expect "--at-us not an integer" 2 "--at-us: '1.5' is not a time" -- "$bin" categories --at-us 1.5 testdata/cat_adamw.pickle
expect "device out of range" 2 "no device 7" -- "$bin" categories --device 7 testdata/cat_adamw.pickle
expect "missing file" 2 "nope.pickle: cannot open" -- "$bin" categories "$tmp/nope.pickle"
head -c 50000 testdata/cat_adamw.pickle > "$tmp/cut.pickle"
expect "truncated file" 2 "cut.pickle: byte [0-9]+: input ends early" -- "$bin" categories "$tmp/cut.pickle"

# Text: the table, the formula, the explanations.
expect "table" 0 "optimizer_state +96\.12 MiB" -- "$bin" categories testdata/cat_adamw.pickle
expect "formula" 0 "parameters \+ optimizer state \+ max\(gradients \+ optimizer intermediates, activations\)" -- "$bin" categories testdata/cat_adamw.pickle
expect "explain" 0 "workspace-frames|its stack shows a library workspace" -- "$bin" categories --explain testdata/cat_adamw.pickle
expect "explain says weak" 0 "weak evidence" -- "$bin" categories --explain testdata/cat_prebuilt.pickle
expect "summary line" 0 "peak is +parameter 48\.06 MiB" -- "$bin" summary testdata/cat_adamw.pickle

# JSON: every instant of the truth asked with --at-us (and once with --at), in order;
# every categories object has the eight keys and sums to bytes; values against truth.
for f in cat_adamw cat_sgd_frozen cat_infer; do
  args=$(python3 -c "import json,sys; print(' '.join('--at-us %d' % i['time_us'] for i in json.load(open(sys.argv[1]))['instants']))" "testdata/$f.truth.json")
  # shellcheck disable=SC2086
  if ! "$bin" categories --json $args --at 0.5 "testdata/$f.pickle" > "$tmp/$f.json"; then
    echo "FAIL $f: categories --json failed"; fail=$((fail+1)); continue
  fi
  if python3 - "$tmp/$f.json" "testdata/$f.truth.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); truth = json.load(open(sys.argv[2]))
KEYS = ["parameter", "gradient", "optimizer_state", "activation", "temporary", "workspace", "input", "other"]
dev = doc["files"][0]["devices"][0]
bad = []
def cats(o, where):
    if sorted(o) != sorted(KEYS): bad.append(f"{where}: keys {sorted(o)}")
    if any(not isinstance(o[k], int) for k in KEYS): bad.append(f"{where}: not integers")
    return sum(o[k] for k in KEYS)
p = dev["peak"]
if cats(p["categories"], "peak") != p["bytes"]: bad.append("peak sum")
if p["bytes"] != truth["counters_at_end"]["requested_bytes.all.peak"]: bad.append("peak bytes vs truth")
ins = truth["instants"]
if len(dev["at"]) != len(ins) + 1: bad.append("at[] count")
for i, a in zip(ins, dev["at"]):
    w = f"{i['label']} it {i['iteration']}"
    if a["time_us"] != i["time_us"]: bad.append(w + ": order/time")
    if cats(a["categories"], w) != a["bytes"]: bad.append(w + ": sum")
    if a["bytes"] != i["requested_bytes"]: bad.append(w + ": bytes vs requested_bytes")
    c = a["categories"]
    for key, tk in (("parameter", "parameter_bytes"), ("gradient", "gradient_bytes"), ("optimizer_state", "optimizer_state_bytes")):
        want = i[tk]
        if (want == 0 and c[key] != 0) or (want and abs(c[key] - want) > 0.01 * want):
            bad.append(f"{w}: {key} {c[key]} vs {want}")
last = dev["at"][-1]
if abs(last["seconds"] - 0.5) > 1e-6 or last["asked"] != "0.5": bad.append("--at 0.5")
for it in dev["iterations"]:
    if cats(it["at_end"], f"iteration {it['index']} at_end") != it["end_bytes"]: bad.append("at_end sum")
    if cats(it["peak"]["categories"], "iteration peak") != it["peak"]["bytes"]: bad.append("iteration peak sum")
if len(dev["iterations"]) != truth["iterations"]: bad.append("iterations")
if truth.get("optimizer") is None:
    if p["categories"]["gradient"] or p["categories"]["optimizer_state"]: bad.append("inference invented state")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
  then echo "ok $f json"; pass=$((pass+1)); else echo "FAIL $f json"; fail=$((fail+1)); fi
done

# summary --json: peak.categories sums to the peak, same as categories' peak.
"$bin" summary --json testdata/cat_adamw.pickle > "$tmp/s.json"
"$bin" categories --json testdata/cat_adamw.pickle > "$tmp/c.json"
if python3 - "$tmp/s.json" "$tmp/c.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["files"][0]["devices"][0]["peak"]
c = json.load(open(sys.argv[2]))["files"][0]["devices"][0]["peak"]
assert sum(s["categories"].values()) == s["bytes"], "summary sum"
assert s["categories"] == c["categories"], (s["categories"], c["categories"])
PY
then echo "ok summary peak.categories"; pass=$((pass+1)); else echo "FAIL summary peak.categories"; fail=$((fail+1)); fi

# The end: the state after the last event by category (it sums to the live memory at the
# end that summary reports) and the bytes the leak findings hold there: the truth's
# injected leaks (all alive at the end in these files), the same as `leaks --json` says,
# and nothing on a file without leaks.
for f in leak_layers noleak_layers leak_after_step; do
  "$bin" categories --json "testdata/$f.pickle" > "$tmp/$f.c.json"
  "$bin" summary --json "testdata/$f.pickle" > "$tmp/$f.s.json"
  "$bin" leaks --json "testdata/$f.pickle" > "$tmp/$f.l.json"
  if python3 - "$tmp/$f.c.json" "$tmp/$f.s.json" "$tmp/$f.l.json" "testdata/$f.truth.json" "$f" <<'PY'
import json, sys
end = json.load(open(sys.argv[1]))["files"][0]["devices"][0]["end"]
s = json.load(open(sys.argv[2]))["files"][0]["devices"][0]
v = json.load(open(sys.argv[3]))["files"][0]["verdict"]
truth = json.load(open(sys.argv[4]))
leaked = sum(l["count"] * l["bytes_each_requested"] for l in truth.get("leaks", []))
bad = []
if sum(end["categories"].values()) != end["bytes"]: bad.append("end sum")
if end["bytes"] != s["live_end"]["bytes"]: bad.append(f"end bytes {end['bytes']} vs live_end {s['live_end']['bytes']}")
if end["event"] != s["events"] - 1: bad.append("end event")
if sys.argv[5] == "leak_layers" and leaked != 94470144: bad.append(f"truth leaked {leaked}")
if end["held_by_leaks_bytes"] != leaked: bad.append(f"held {end['held_by_leaks_bytes']} vs truth {leaked}")
if end["held_by_leaks_bytes"] != v["leaked_bytes"]: bad.append("held vs leaks --json")
if end["leak_findings"] != v["leaks"]: bad.append(f"findings {end['leak_findings']} vs {v['leaks']}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
  then echo "ok $f end"; pass=$((pass+1)); else echo "FAIL $f end"; fail=$((fail+1)); fi
done
expect "end line, leaks" 0 "^  at end: .*; held by leaks: 90\.09 MiB \(1 finding\)$" -- "$bin" categories testdata/leak_layers.pickle
expect "end line, no leaks" 0 "^  at end: .*; held by leaks: 0 B \(0 findings\)$" -- "$bin" categories testdata/noleak_layers.pickle

# report: the table in summary.md and index.html, the object in summary.json.
"$bin" report testdata/cat_gpt2_annotated.pickle -o "$tmp/rep" > /dev/null
expect "report markdown table" 0 "\| optimizer_state \| 35\.87 MiB \|" -- cat "$tmp/rep/summary.md"
expect "report html table" 0 "What the memory is \(device 0\)" -- cat "$tmp/rep/index.html"
if python3 - "$tmp/rep/summary.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["files"][0]["categories"]
assert sum(c["peak"]["categories"].values()) == c["peak"]["bytes"]
assert c["phases"]["forward"] == 3 and len(c["iterations"]) == 3
PY
then echo "ok report summary.json categories"; pass=$((pass+1)); else echo "FAIL report summary.json categories"; fail=$((fail+1)); fi

# Addresses handed out twice with no free between: the second alloc ends the first life
# (as the timeline reads it), so the categories' peak and end hold the second lives
# alone, as summary's do (they once kept both).
python3 - "$tmp/twice.pickle" <<'PY'
import pickle, sys
ev = [{"action": "alloc", "addr": 4096 * (k + 1), "size": 1024 if r else 512, "stream": 0,
       "time_us": 1000 + r * 300 + k, "frames": []} for r in range(2) for k in range(300)]
pickle.dump({"segments": [], "device_traces": [ev]}, open(sys.argv[1], "wb"), protocol=4)
PY
"$bin" summary --json "$tmp/twice.pickle" > "$tmp/twice-summary.json"
"$bin" categories --json "$tmp/twice.pickle" > "$tmp/twice-cat.json"
if python3 - "$tmp/twice-summary.json" "$tmp/twice-cat.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["files"][0]["devices"][0]
c = json.load(open(sys.argv[2]))["files"][0]["devices"][0]
assert s["peak"]["bytes"] == 300 * 1024, s["peak"]
assert c["peak"]["bytes"] == s["peak"]["bytes"], (c["peak"], s["peak"])
assert sum(c["peak"]["categories"].values()) == c["peak"]["bytes"]
PY
then echo "ok twice handed out: categories' peak is summary's"; pass=$((pass+1)); else echo "FAIL twice handed out: categories' peak is summary's"; fail=$((fail+1)); fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
