#!/usr/bin/env bash
# examples/python/memsnap_ctypes.py through the shared library with the system's python3:
# its summary is `memsnap summary --json`'s device object, key for key and number for
# number, and its leak totals are the summary's. Skips (77) without python3 or the shared
# library (a build without it).
# usage: python_ctypes.sh MEMSNAP LIBMEMSNAP.so
set -u
MEMSNAP=$1 LIB=$2
PY=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
[ -f "$LIB" ] || { echo "SKIP: no shared library at $LIB"; exit 77; }
fail=0
for f in testdata/leak_layers.pickle testdata/oom.pickle testdata/seg_roundup.pickle; do
  [ -f "$f" ] || continue
  "$PY" examples/python/memsnap_ctypes.py --lib "$LIB" "$f" > "${TMPDIR:-/tmp}/ctypes.$$.json" || {
    echo "FAIL: $f: the example exited $?"; fail=1; continue; }
  "$MEMSNAP" summary --json "$f" > "${TMPDIR:-/tmp}/cli.$$.json" || { echo "FAIL: $f: summary"; fail=1; continue; }
  "$PY" - "$f" "${TMPDIR:-/tmp}/ctypes.$$.json" "${TMPDIR:-/tmp}/cli.$$.json" <<'PYEOF' || fail=1
import json, sys
name, got, cli = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
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
print("%s: %s" % (name, "FAIL: " + ", ".join(bad) if bad else
      "summary and leaks agree with the CLI (peak %d B, %d findings)"
      % (dev["peak"]["bytes"], len(lk["leaks"]))))
sys.exit(1 if bad else 0)
PYEOF
done
rm -f "${TMPDIR:-/tmp}/ctypes.$$.json" "${TMPDIR:-/tmp}/cli.$$.json"
exit $fail
