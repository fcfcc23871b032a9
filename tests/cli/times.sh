#!/usr/bin/env bash
# Time stamps that go backwards (issue 34): the model reads such a trace as one without a
# clock (event indexes stand for the times, ms_trace.times_backward_at names the first
# decrease), so every command orders by position and prints no negative duration; the
# decrease is told once per file: in summary's own text and JSON (`times_backward_at`),
# on stderr by the other commands.
set -uo pipefail
source "$(dirname "$0")/common.bash"

# linear_infer (33 events, 3 iterations) with its clock stepped back 20 ms at event 17 (read
# by time, the trace would span -0.004 s and iteration 2 last -0.014 s), and
# a copy whose times only stay equal or grow (every 4 events share one time stamp).
python3 - testdata/linear_infer.pickle "$tmp/back.pickle" "$tmp/flat.pickle" <<'PY'
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
tr = d["device_traces"][0]
t0 = tr[0]["time_us"]
for i, e in enumerate(tr):
    e["time_us"] = t0 + 1000 * i if i < 17 else t0 + 1000 * (i - 17) - 20000
assert tr[17]["time_us"] < tr[16]["time_us"] and len(tr) == 33
pickle.dump(d, open(sys.argv[2], "wb"), protocol=4)
for i, e in enumerate(tr):
    e["time_us"] = t0 + 1000 * (i // 4)
pickle.dump(d, open(sys.argv[3], "wb"), protocol=4)
PY
B=$tmp/back.pickle
W="time stamps go backwards at event 17: events are ordered by position"

# No negative time or duration anywhere in a text: "-0.399 s", "-0.006s", "-12 ms".
no_negative() { ! grep -qE -- '(^|[^0-9A-Za-z_.+-])-[0-9]+(\.[0-9]+)? ?(s|ms|µs)\b' "$1"; }

"$bin" summary "$B" > "$tmp/s" 2> "$tmp/e"; rc=$?
[ "$rc" = 0 ] && grep -qF "device 0: 33 events (warning: $W)" "$tmp/s" && ok "summary says it" \
  || bad "summary: rc $rc: $(head -3 "$tmp/s")"
[ ! -s "$tmp/e" ] && ok "summary says it once (not on stderr too)" || bad "summary stderr: $(cat "$tmp/e")"
no_negative "$tmp/s" && ok "summary: no negative duration" || bad "summary: $(grep -E -- '-[0-9]' "$tmp/s")"
grep -qE '^ +1 +event [0-9]+ +[0-9]+ ev ' "$tmp/s" && ok "iterations in events" || bad "iterations: $(grep -A3 iterations "$tmp/s")"

"$bin" summary --json "$B" > "$tmp/j" 2> "$tmp/e"
python3 - "$tmp/j" <<'PY' && ok "summary --json: times_backward_at 17, null times, no negative duration" || bad "summary --json"
import json, sys
dev = json.load(open(sys.argv[1]))["files"][0]["devices"][0]
assert dev["times_backward_at"] == 17, dev.get("times_backward_at")
assert dev["has_times"] is False
assert dev["time"] == {"first_us": None, "last_us": None, "seconds": None}, dev["time"]
assert dev["peak"]["seconds"] is None and dev["peak"]["event"] >= 0
its = dev["iterations"]["items"]
assert len(its) == 3 and all(i["duration_s"] is None and i["end_event"] >= i["start_event"] for i in its), its
def walk(v, path=""):
    if isinstance(v, dict):
        for k, x in v.items(): walk(x, path + "." + k)
    elif isinstance(v, list):
        for x in v: walk(x, path)
    elif isinstance(v, (int, float)) and not isinstance(v, bool) and (path.endswith("_s") or path.endswith("seconds") or path.endswith("_us")):
        assert v >= 0, (path, v)
walk(dev)
PY

# Every other command: the warning on stderr, exactly once, and no negative duration.
once() { # label command...
  local label=$1; shift
  "$@" > "$tmp/o" 2> "$tmp/e"; local rc=$?
  local n; n=$(grep -cF "warning: $B: device 0: $W" "$tmp/e")
  if [ "$rc" -gt 1 ] || [ "$n" != 1 ]; then bad "$label: rc $rc, warned $n times: $(head -c 300 "$tmp/e")"
  elif ! no_negative "$tmp/o"; then bad "$label: a negative duration: $(grep -E -- '-[0-9]' "$tmp/o" | head -3)"
  else ok "$label"; fi
}
once "leaks" "$bin" leaks "$B"
once "leaks --json" "$bin" leaks --json "$B"
once "categories --explain" "$bin" categories --explain "$B"
once "oom" "$bin" oom "$B"
once "diff" "$bin" diff "$B" testdata/linear_infer.pickle
once "ranks" "$bin" ranks "$B" testdata/linear_infer.pickle testdata/linear_infer.pickle
once "render" "$bin" render "$B" -o "$tmp/r.png"
once "view" "$bin" view "$B" -o "$tmp/v.html"
once "report" "$bin" report "$B" -o "$tmp/rep"
grep -qF "$W" "$tmp/rep/index.html" && ok "the report's page says it" || bad "index.html does not say it"
grep -qE '"times_backward_at":[[:space:]]*17' "$tmp/rep/summary.json" && ok "the report's summary.json has it" \
  || bad "summary.json lacks times_backward_at"

# Times that never decrease keep their clock, with no warning and no new key.
"$bin" summary --json "$tmp/flat.pickle" > "$tmp/j" 2> "$tmp/e"
python3 - "$tmp/j" <<'PY' && ok "equal time stamps are no decrease" || bad "flat times"
import json, sys
dev = json.load(open(sys.argv[1]))["files"][0]["devices"][0]
assert dev["has_times"] is True and "times_backward_at" not in dev, dev.get("times_backward_at")
assert dev["time"]["seconds"] == 0.008, dev["time"]
PY
[ ! -s "$tmp/e" ] && ok "no warning for them" || bad "flat: $(cat "$tmp/e")"
"$bin" leaks testdata/linear_infer.pickle > /dev/null 2> "$tmp/e"
[ ! -s "$tmp/e" ] && ok "no warning for a real snapshot" || bad "linear_infer: $(cat "$tmp/e")"

finish times
