#!/usr/bin/env bash
# Issue 33: every command says what kind of recording a file is, in the words of the one
# shape analysis, checked on the recordings of tests/gen/scenarios_shapes.py and their
# truth: the shape in summary, leaks, categories and report (text and JSON); one
# alive-at-end finding for a forward's graph and no text of iterations where there are
# none; the compile phase named in summary; the CUDA-graph pool said by summary, diff,
# ranks and the chart's title before any peak is called lower.
set -u
source "$(dirname "$0")/common.bash"
T=$tmp

for n in shape_forward_kept shape_fwd_bwd shape_one_step shape_bench_loop shape_infer_loop \
         shape_compile_autotune shape_reduce_overhead shape_eager_twin; do
  f=testdata/$n.pickle
  "$BIN" summary --json "$f" > "$T/s.json" || { bad "$n: summary --json"; continue; }
  "$BIN" summary "$f" > "$T/s.txt" || { bad "$n: summary"; continue; }
  "$BIN" leaks --json "$f" > "$T/l.json" || { bad "$n: leaks --json"; continue; }
  "$BIN" categories --json "$f" > "$T/c.json" || { bad "$n: categories --json"; continue; }
  python3 - "$n" "$T" <<'PY' || bad "$n: shape in JSON and text"
import json, sys
n, d = sys.argv[1], sys.argv[2]
truth = json.load(open(f"testdata/{n}.truth.json"))
s = json.load(open(f"{d}/s.json"))["files"][0]["devices"][0]["shape"]
l = json.load(open(f"{d}/l.json"))["files"][0]["devices"][0]["shape"]
c = json.load(open(f"{d}/c.json"))["files"][0]["devices"][0]["shape"]
bad = []
if s["kind"] != truth["shape"]: bad.append(f"summary kind {s['kind']} vs {truth['shape']}")
if l != s or c != s: bad.append("leaks or categories shape differs from summary's")
text = open(f"{d}/s.txt").read()
if f"  shape           {s['text']}\n" not in text: bad.append("summary text lacks the shape line")
if truth.get("compile_windows") and not ("  compile         " in text and s["compile"]):
    bad.append("compile phase not named")
if truth.get("cudagraph_pool_bytes"):
    g = s["cuda_graphs"]
    if not g or g["pool_bytes"] != truth["cudagraph_pool_bytes"]: bad.append("pool bytes")
    if "  CUDA graphs     replays allocate from the graph's private pool" not in text:
        bad.append("summary does not say the pool")
    if "with the pool" not in text: bad.append("no replay footprint in the iterations")
elif s["cuda_graphs"] is not None:
    bad.append("a pool where there is none")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
done

# One forward with its graph alive: one finding, no suspect per site, nothing said of
# iterations, the script's counts.
f=testdata/shape_forward_kept.pickle
"$BIN" leaks "$f" > "$T/l.txt"
grep -q 'alive at the end: the graph of the forward called at train/scenarios_shapes.py:168 shape_forward_kept (25 allocations, 288.01 MiB)' "$T/l.txt" || bad "forward_kept: the alive-at-end line"
if grep -Eqi 'each iteration|per iteration|GROWTH/ITERATION|suspect' "$T/l.txt"; then bad "forward_kept: speaks of iterations or suspects: $(grep -Ei 'each iteration|per iteration|GROWTH/ITERATION|suspect' "$T/l.txt" | head -2)"; fi
"$BIN" leaks --json "$f" | python3 -c '
import json, sys
d = json.load(sys.stdin)["files"][0]
f = d["leaks"]
t = json.load(open("testdata/shape_forward_kept.truth.json"))
assert len(f) == 1 and f[0]["kind"] == "alive_at_end", [x["kind"] for x in f]
assert f[0]["count"] == t["graph_alive_at_end_allocations"] and f[0]["bytes"] == t["graph_alive_at_end_requested_bytes"]
assert f[0]["call_site"]["line"] == t["user_frame"]["line"]
assert d["verdict"]["alive_at_end"] == 1 and d["verdict"]["suspects"] == 0
' || bad "forward_kept: leaks --json"
"$BIN" categories "$f" | grep -q '^  shape: one forward; its graph is alive at the end of the recording$' || bad "categories: no shape line"
"$BIN" oom testdata/oom_model_state.pickle | grep -q '^    shape             one step (forward, backward, optimizer step)$' || bad "oom: no shape line"
"$BIN" report "$f" testdata/shape_fwd_bwd.pickle -o "$T/rep" > /dev/null 2>&1 || bad "report"
grep -q '^\*\*Recording\*\*: one step (forward, backward; no optimizer step)$' "$T/rep/summary.md" || bad "report summary.md: no recording line"
grep -q '<th>recording</th><td class="num">one forward; its graph is alive at the end of the recording</td>' "$T/rep/index.html" || bad "report index.html: no recording row"

# The compile phase, by its truth's words.
"$BIN" summary testdata/shape_compile_autotune.pickle | grep -Eq '^  compile         77\.[0-9] s, peak 183\.01 MiB while autotuning$' || bad "compile line"

# CUDA graphs: said before a peak is called lower, in diff, ranks, the title.
E=testdata/shape_eager_twin.pickle G=testdata/shape_reduce_overhead.pickle
"$BIN" diff "$E" "$G" > "$T/d.txt"
pool=$(grep -n 'replays CUDA graphs' "$T/d.txt" | head -1 | cut -d: -f1)
peak=$(grep -n '^peak ' "$T/d.txt" | head -1 | cut -d: -f1)
[ -n "$pool" ] && [ -n "$peak" ] && [ "$pool" -lt "$peak" ] || bad "diff: the pool is not said before the peak row"
grep -q '^Verdict: shape_reduce_overhead.pickle replays CUDA graphs from a private pool of 116.00 MiB that its peak leaves out: counting it, a replay iteration holds 245.08 MiB, 7.9% more than shape_eager_twin.pickle' "$T/d.txt" || bad "diff verdict"
"$BIN" summary --json "$G" > "$T/g.json"
"$BIN" diff "$E" "$T/g.json" | grep -q '^Verdict: shape_reduce_overhead.pickle replays CUDA graphs' || bad "diff from summary JSON"
"$BIN" ranks "$E" "$G" testdata/gpt2_train.pickle | head -1 | grep -q 'replays CUDA graphs' || bad "ranks"
"$BIN" render "$G" -o "$T/g.svg" && grep -q 'CUDA-graph pool 116.00 MiB (replays allocate from it)' "$T/g.svg" || bad "chart title"

# A summary whose shape.cuda_graphs is not an object is refused, naming the key.
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
d["files"][0]["devices"][0]["shape"]["cuda_graphs"] = 5
json.dump(d, open(sys.argv[2], "w"))' "$T/g.json" "$T/bad.json"
out=$("$BIN" diff "$E" "$T/bad.json" 2>&1); st=$?
[ $st = 2 ] && grep -q 'shape.cuda_graphs' <<<"$out" || bad "bad shape.cuda_graphs: exit $st: $out"

# Compile-time benchmark runs announced by annotations alone (no stacks recorded): 38
# valleys that repeat, yet no iteration; the compile phase is named instead.
python3 - "$T/bench.pickle" <<'PY'
import pickle, sys
tr, ann, t = [], [], 1000
def ev(a, addr, size):
    global t
    t += 10
    tr.append({"action": a, "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": []})
for i in range(4):
    ev("alloc", 0x10000000 + i * 0x1000000, 1 << 24)
for r in range(38):
    ann.append({"name": "pad_mm_benchmark (dynamo_timed)", "stage": "START", "device": 0, "time_us": t + 1})
    for k in range(3):
        ev("alloc", 0x40000000 + k * 0x1000000, (3 + k) << 20)
    for k in range(3):
        ev("free_requested", 0x40000000 + k * 0x1000000, (3 + k) << 20)
        ev("free_completed", 0x40000000 + k * 0x1000000, (3 + k) << 20)
    ann.append({"name": "pad_mm_benchmark (dynamo_timed)", "stage": "END", "device": 0, "time_us": t + 1})
    t += 5
for k in range(12):
    ev("alloc", 0x80000000 + k * 0x2000000, (8 + k) << 20)
pickle.dump({"segments": [], "device_traces": [tr], "external_annotations": ann}, open(sys.argv[1], "wb"))
PY
"$BIN" summary "$T/bench.pickle" > "$T/b.txt"
grep -q '^  iterations: none found' "$T/b.txt" || bad "benchmark runs counted as iterations: $(grep iterations: "$T/b.txt")"
grep -q '^  compile         3\.6 ms, peak 76\.00 MiB while autotuning$' "$T/b.txt" || bad "annotated compile phase not named"

finish shapes
