#!/usr/bin/env bash
# Leak growth in allocator blocks follows the allocator's rounding, with the snapshot's
# roundup_power2_divisions: testdata/seg_roundup (divisions 4) against its truth, whose
# bytes_each_allocated are the blocks torch.cuda.memory_snapshot() showed. Once as
# recorded (the final state's blocks answer) and once with the final state's segments
# taken out, so that every block comes from the rounding rule alone (under a plain
# 512-byte rounding 5557452 requested bytes would be 5557760, not 6291456).
# Skips (77) without python3, which rewrites the pickle (plain dicts and lists).
# usage: leak_rounding.sh MEMSNAP
set -u
MEMSNAP=$1
PY=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$PY" - testdata/seg_roundup.pickle "$tmp/trace_only.pickle" <<'PYEOF' || exit 1
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
d["segments"] = []
pickle.dump(d, open(sys.argv[2], "wb"), protocol=4)
PYEOF
fail=0
for f in testdata/seg_roundup.pickle "$tmp/trace_only.pickle"; do
  "$MEMSNAP" leaks --json "$f" > "$tmp/out.json" || { echo "FAIL: $f: leaks exited $?"; exit 1; }
  "$PY" - "$f" "$tmp/out.json" testdata/seg_roundup.truth.json <<'PYEOF' || fail=1
import json, sys
name, got, truth = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
by_line = {L["site"]["line"]: L for L in got["files"][0]["leaks"] if L["kind"] == "leak"}
bad = []
for t in truth["leaks"]:
    L = by_line.get(t["line"])
    if not L:
        bad.append("no leak at line %d" % t["line"])
        continue
    g = L["growth_per_iteration"]
    if L["count"] != t["count"] or L["bytes_each"] != t["bytes_each_requested"]:
        bad.append("line %d: count/bytes_each %s/%s" % (t["line"], L["count"], L["bytes_each"]))
    # Growth in blocks is growth in allocations times the block each one holds.
    if not g["count"] or g["allocated_bytes"] != g["count"] * t["bytes_each_allocated"]:
        bad.append("line %d: growth %s B allocated for %s allocations, truth %d B each"
                   % (t["line"], g["allocated_bytes"], g["count"], t["bytes_each_allocated"]))
if len(by_line) != len(truth["leaks"]):
    bad.append("%d leaks, truth %d" % (len(by_line), len(truth["leaks"])))
print("%s: %s" % (name, "; ".join(bad) if bad else "blocks of every leak as the truth"))
sys.exit(1 if bad else 0)
PYEOF
done
exit $fail
