#!/usr/bin/env bash
# Paths from any machine (issue 33): real recordings with every frame's path rewritten
# to Windows form (D:\Dev\assignment2-systems\..., .venv\Lib\site-packages\torch\...,
# C:\Python312\Lib\...) read as the originals do: sites short, torch's frames torch's,
# the user's line the model file that truth.json names, legends distinct, and every
# output otherwise byte for byte the original's. Then degenerate dumps of a real
# recording (one event, events at one instant, no events): an event axis, the peak at an
# event, never "0.000 s". The files are made by tests/cli/recordings.py (Python's
# standard library).
set -u
source "$(dirname "$0")/common.bash"
command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
src=$PWD
tool=$src/tests/cli/recordings.py
mkdir -p "$tmp/testdata"

# The pickle's size is the one thing the rewrite changes: the header line and the JSON's
# pickle_bytes say it.
same_size() { sed -E 's/, [0-9]+ bytes\)$/, N bytes)/; s/"pickle_bytes": [0-9]+/"pickle_bytes": N/'; }

for f in leak_hook_library leak_layers; do
    python3 "$tool" windows "$src/testdata/$f.pickle" "$tmp/testdata/$f.pickle" ||
        { echo "FAIL: $f: rewrite"; fail=1; continue; }
    # Same relative path for both, so only the paths inside differ.
    for c in "summary" "leaks" "leaks --stack" "categories"; do
        a=$(cd "$src" && $BIN $c "testdata/$f.pickle" 2>&1 | same_size)
        b=$(cd "$tmp" && $BIN $c "testdata/$f.pickle" 2>&1 | same_size)
        if [ "$c" = "leaks --stack" ]; then
            # The stack lists whole paths: the Windows ones, which it keeps.
            contains "$f $c shows the file as recorded" "$b" 'D:\Dev\assignment2-systems\'
            b=$(echo "$b" | sed -E 's#D:\\Dev\\assignment2-systems\\\.venv\\Lib\\site-packages\\#/opt/torch/.venv/lib/python3.12/site-packages/#; s#D:\\Dev\\assignment2-systems\\#/home/ml/#' | tr '\\' '/')
        else
            lacks "$f $c: sites are short" "$b" '\'
            lacks "$f $c: sites are short" "$b" 'D:'
        fi
        check "$f $c equals the POSIX original's" "$a" "$b"
    done
    for c in "summary --json" "leaks --json" "categories --json"; do
        a=$(cd "$src" && $BIN $c "testdata/$f.pickle" 2>&1 | python3 "$tool" unwin | same_size)
        b=$(cd "$tmp" && $BIN $c "testdata/$f.pickle" 2>&1 | python3 "$tool" unwin | same_size)
        check "$f $c equals the POSIX original's (paths mapped back)" "$a" "$b"
    done
    for by in "" "--by site"; do
        $BIN render $by --format json "$tmp/testdata/$f.pickle" -o "$tmp/$f.json" ||
            { echo "FAIL: $f render $by"; fail=1; continue; }
        $BIN render $by --format json "$src/testdata/$f.pickle" -o "$tmp/$f.posix.json"
        out=$(python3 - "$tmp/$f.json" "$tmp/$f.posix.json" <<'EOF'
import json, sys
# Legend entries are {label, colour, kind}: the labels, and the whole entries (a site's
# colour follows its text, which the Windows paths must not change).
win_e, posix_e = (json.load(open(p))["panels"][0]["legend"] for p in sys.argv[1:3])
win, posix = ([e["label"] for e in es] for es in (win_e, posix_e))
if len(set(win)) != len(win):
    print("legend entries repeat:", win)
if any("\\" in e or "D:" in e for e in win):
    print("legend keeps Windows paths:", win)
if win_e != posix_e:
    print("legend differs from the original's:", win_e, posix_e)
EOF
)
        check "$f render $by legend" "" "$out"
    done
done

# Two files of one base name are told apart by the directories they do not share.
mkdir -p "$tmp/runs/a" "$tmp/runs/b"
cp "$src/testdata/leak_layers.pickle" "$tmp/runs/a/mem.pickle"
cp "$src/testdata/noleak_layers.pickle" "$tmp/runs/b/mem.pickle"
$BIN render --overlay --format json "$tmp/runs/a/mem.pickle" "$tmp/runs/b/mem.pickle" -o "$tmp/ov.json"
out=$(python3 -c 'import json, sys; print([e["label"] for e in json.load(open(sys.argv[1]))["panels"][0]["legend"][:2]])' "$tmp/ov.json")
check "overlay legend of one base name" "['a/mem.pickle (cuda:0, peak 674.35 MiB)', 'b/mem.pickle (cuda:0, peak 584.26 MiB)']" "$out"

# The classifier on the Windows frames, and the user's line the truth names.
out=$(cd "$tmp" && $BIN leaks --json testdata/leak_hook_library.pickle | python3 -c '
import json, sys
sys.path.insert(0, sys.argv[1])
from recordings import to_windows
truth = json.load(open(sys.argv[2]))
doc = json.load(sys.stdin)
leaks = doc["files"][0]["leaks"]
want = dict(truth["user_frame"], filename=to_windows(truth["user_frame"]["filename"]))
if len(leaks) != len(truth["leaks"]):
    print("findings:", len(leaks), "truth:", len(truth["leaks"]))
for L in leaks:
    uf = L["user_frame"]
    if (uf["filename"], uf["line"], uf["name"]) != (want["filename"], want["line"], want["name"]):
        print("user_frame", uf, "want", want)
    for fr in L.get("stack", []):
        f, k = fr["filename"], fr["kind"]
        if "\\site-packages\\torch\\" in f and f.endswith(".py") and k not in ("torch", "compiled"):
            print("torch frame read as", k, f)
        if "\\site-packages\\transformers\\" in f and k != "library":
            print("library frame read as", k, f)
        if f.startswith("D:\\Dev\\assignment2-systems\\train\\") and k != "user":
            print("user frame read as", k, f)
        if f.startswith("C:\\Python312\\Lib\\") and k != "user":
            print("standard library read as", k, f)
print("ok")
' "$src/tests/cli" "$src/testdata/leak_hook_library.truth.json")
check "leak_hook_library: kinds and the user's line" "ok" "$out"

out=$(cd "$tmp" && $BIN leaks --json testdata/leak_layers.pickle | python3 -c '
import json, sys
sys.path.insert(0, sys.argv[1])
from recordings import to_windows
truth = json.load(open(sys.argv[2]))
leaks = json.load(sys.stdin)["files"][0]["leaks"]
sites = [L["site"] for L in leaks] + [m["site"] for L in leaks for m in L.get("members", [])]
got = sorted(set((x["filename"], x["line"], x["function"]) for x in sites))
want = sorted((to_windows(t["filename"]), t["line"], t["name"]) for t in truth["leaks"])
print("ok" if got == want else "sites %s want %s" % (got, want))
' "$src/tests/cli" "$src/testdata/leak_layers.truth.json")
check "leak_layers: the leak lines are the model file's" "ok" "$out"

# Degenerate dumps of a real recording.
python3 "$tool" degenerate "$src/testdata/leak_layers.pickle" "$tmp" || { echo "FAIL: degenerate"; exit 1; }
out=$($BIN summary "$tmp/one.pickle"); rc=$?
check "one event: exit" 0 $rc
contains "one event" "$out" "device 0: 1 event, one instant"
contains "one event: peak" "$out" "peak            1.00 MiB at event 0"
lacks "one event: no zero seconds" "$out" "0.000 s"
out=$($BIN summary "$tmp/instant.pickle"); rc=$?
check "one instant: exit" 0 $rc
contains "one instant" "$out" "device 0: 20 events, all at one instant"
contains "one instant: peak" "$out" " at event "
lacks "one instant: no zero seconds" "$out" "0.000 s"
out=$($BIN summary --json "$tmp/instant.pickle" | python3 -c '
import json, sys
d = json.load(sys.stdin)["files"][0]["devices"][0]
print(d["has_times"], d.get("one_instant"), d["peak"]["seconds"])')
check "one instant: JSON" "False True None" "$out"
out=$($BIN summary "$tmp/none.pickle"); rc=$?
check "no events: exit" 0 $rc
contains "no events" "$out" "device 0: no events recorded"
for f in one instant none; do
    $BIN render --format json "$tmp/$f.pickle" -o "$tmp/$f.json" || { echo "FAIL: render $f"; fail=1; continue; }
    out=$(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["panels"][0]
peak = [l["text"] for l in p["labels"] if l["kind"] == "peak"]
print(p["x"]["kind"], "|".join(peak))' "$tmp/$f.json")
    case $f in
        one) check "one event: chart" "events peak 1.00 MiB at event 0" "$out" ;;
        instant) contains "one instant: chart" "$out" "events peak " ; contains "one instant: chart" "$out" " at event " ;;
        none) check "no events: chart" "events peak 354.34 MiB before the first recorded event" "$out" ;;
    esac
    $BIN render "$tmp/$f.pickle" -o "$tmp/$f.png" || { echo "FAIL: png $f"; fail=1; }
done
finish windows
