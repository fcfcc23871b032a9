#!/usr/bin/env bash
# examples/python/memsnap_ctypes.py through the shared library with the system's python3:
# its summary is `memsnap summary --json`'s device object, key for key and number for
# number, its leak totals are the summary's, its segments `segments --json`'s device object
# and its comparison with the next file `diff --json`'s pair. Skips (77) without python3 or the shared
# library (a build without it).
# usage: python_ctypes.sh MEMSNAP LIBMEMSNAP.so
set -u
MEMSNAP=$1 LIB=$2
PY=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
[ -f "$LIB" ] || { echo "SKIP: no shared library at $LIB"; exit 77; }
fail=0
T=${TMPDIR:-/tmp}/ctypes.$$
set -- testdata/leak_layers.pickle testdata/oom.pickle testdata/seg_roundup.pickle
for f; do
  [ -f "$f" ] || continue
  other=$1; [ "$other" = "$f" ] && other=$2 # another file to compare with
  "$PY" examples/python/memsnap_ctypes.py --lib "$LIB" "$f" --compare "$other" > "$T.json" || {
    echo "FAIL: $f: the example exited $?"; fail=1; continue; }
  "$MEMSNAP" summary --json "$f" > "$T.summary" && "$MEMSNAP" segments --json "$f" > "$T.segments" &&
    "$MEMSNAP" diff --json "$f" "$other" > "$T.diff" || { echo "FAIL: $f: the CLI"; fail=1; continue; }
  "$PY" - "$f" "$T" <<'PYEOF' || fail=1
import json, sys
name, t = sys.argv[1], sys.argv[2]
got, cli = json.load(open(t + ".json")), json.load(open(t + ".summary"))
dev = [d for d in cli["files"][0]["devices"] if d["device"] == got["device"]][0]
bad = [k for k in dev if dev[k] != got["summary"].get(k)]
bad += [k for k in got["summary"] if k not in dev]
lk = got["leaks"]
if lk["totals"] != dev.get("leaks", lk["totals"]):
    bad.append("leaks.totals")
if lk["totals"]["findings"] != sum(1 for x in lk["leaks"] if x["kind"] == "leak"):
    bad.append("leaks.totals.findings against leaks[]")
if dev["peak"]["bytes"] <= 0:
    bad.append("peak.bytes")
segs = [d for d in json.load(open(t + ".segments"))["files"][0]["devices"]
        if d["device"] == got["device"]][0]
if got["segments"] != segs:
    bad.append("segments")
if [a["asked"] for a in segs["at"]] not in ([["peak"], ["end"]], [["peak", "end"]]):
    bad.append("segments.at[].asked")
if got["compare"] != json.load(open(t + ".diff"))["pairs"][0]:
    bad.append("compare")
print("%s: %s" % (name, "FAIL: " + ", ".join(bad) if bad else
      "summary, leaks, segments and compare agree with the CLI (peak %d B, %d findings, "
      "%d segments at the end)" % (dev["peak"]["bytes"], len(lk["leaks"]),
                                   len(segs["at"][-1]["segments"]))))
sys.exit(1 if bad else 0)
PYEOF
done
rm -f "$T.json" "$T.summary" "$T.segments" "$T.diff"
exit $fail
