#!/usr/bin/env bash
# memsnap categories (and the summary's peak breakdown): JSON keys and sums against the
# truth measured on the GPU, the text table, and exit codes for bad usage and bad input.
set -uo pipefail
source "$(dirname "$0")/common.bash"

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
for f in cat_adamw cat_sgd_frozen cat_infer v3_lazy_adamw v3_lazy_sgd shape_infer_loop; do
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

# The optimizer identity (state = k x trainable parameters = k x gradients) and the
# inference form, against the GPU truth: lazy parameters made before the loop (AdamW k=2,
# SGD with momentum k=1), frozen layers, a backward hook's kept slices (gradients over by
# the leak), Adam state made before the recording (state among the parameters), a step
# cut short by an OOM (not read), inference runs (no identity, their own formula).
for f in v3_lazy_adamw v3_lazy_sgd cat_sgd_frozen cat_adamw leak_backward_hook shape_bench_loop oom_model_state cat_infer shape_infer_loop; do
  "$bin" categories --json "testdata/$f.pickle" > "$tmp/$f.id.json"
done
if python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
def dev(f): return json.load(open(f"{tmp}/{f}.id.json"))["files"][0]["devices"][0]
def truth(f): return json.load(open(f"testdata/{f}.truth.json"))
def near(a, b): return abs(a - b) <= 0.01 * b
bad = []
for f, k, opt in (("v3_lazy_adamw", 2, "AdamW"), ("v3_lazy_sgd", 1, "SGD")):
    i, t = dev(f)["optimizer_identity"], truth(f)
    p = t["materialised"]["parameter_bytes"]
    if not (i["holds"] and i["off"] is None and i["off_by_bytes"] == 0): bad.append(f"{f}: {i}")
    if (i["states_per_parameter"], i["measured_states_per_parameter"], i["optimizer"], i["optimizer_from"]) != (k, k, opt, "annotation"): bad.append(f"{f}: k/optimizer {i}")
    if t["optimizer_states_per_parameter"] != k: bad.append(f"{f}: truth k")
    if not (near(i["trainable_parameter"], p) and near(i["parameter"], p) and near(i["gradient"], p)): bad.append(f"{f}: parameters {i}")
    if not near(i["optimizer_state"], t["final_model_state"]["optimizer_state_bytes"]): bad.append(f"{f}: state {i}")
    if dev(f)["end"]["categories"]["activation"] != 0: bad.append(f"{f}: activation left at the end")
i, t = dev("cat_sgd_frozen")["optimizer_identity"], truth("cat_sgd_frozen")
last = t["instants"][-1]
if not (i["holds"] and i["states_per_parameter"] == 1 and i["optimizer"] == "SGD"): bad.append(f"cat_sgd_frozen: {i}")
if not (near(i["parameter"], last["parameter_bytes"]) and near(i["trainable_parameter"], last["optimizer_state_bytes"])): bad.append(f"cat_sgd_frozen: frozen apart {i}")
if not i["parameter"] - i["trainable_parameter"] > 0.3 * i["parameter"]: bad.append("cat_sgd_frozen: no frozen part")
i = dev("cat_adamw")["optimizer_identity"]
if not (i["holds"] and i["states_per_parameter"] == 2 and i["parameter"] == i["trainable_parameter"]): bad.append(f"cat_adamw: {i}")
i, t = dev("leak_backward_hook")["optimizer_identity"], truth("leak_backward_hook")
leaked = sum(l["count"] * l["bytes_each_requested"] for l in t["leaks"])
if (i["holds"], i["off"], i["off_by_bytes"]) != (False, "gradient", leaked): bad.append(f"leak_backward_hook: {i} vs leak {leaked}")
i, t = dev("shape_bench_loop")["optimizer_identity"], truth("shape_bench_loop")
st = t["model_state_at_start"]["optimizer_state_bytes"]
if not (i["holds"] is False and i["off"] == "optimizer_state" and near(-i["off_by_bytes"], st) and near(i["state_before_trace"], st) and i["states_per_parameter"] == 2 and i["measured_states_per_parameter"] == 0): bad.append(f"shape_bench_loop: {i} vs state {st}")
if dev("oom_model_state")["optimizer_identity"] is not None: bad.append("oom_model_state: a step cut short was read")
for f in ("cat_infer", "shape_infer_loop"):
    d = dev(f); fo = d["formula"]
    if d["optimizer_identity"] is not None: bad.append(f"{f}: identity on inference")
    if fo["form"] != "inference" or "gradient" in fo or "optimizer_state" in fo: bad.append(f"{f}: form {fo}")
    if fo["estimate"] != fo["parameter"] + fo["input"] + fo["activation_temporary"]: bad.append(f"{f}: estimate {fo}")
    if f == "shape_infer_loop" and not near(fo["parameter"], truth(f)["parameter_bytes"]): bad.append(f"{f}: parameters {fo}")
    pk = d["iterations"][fo["iteration"] - 1]["peak"]["categories"]
    if fo["estimate"] + pk["workspace"] + pk["other"] < fo["measured_peak"]: bad.append(f"{f}: formula misses {fo}")
if dev("cat_adamw")["formula"]["form"] != "training": bad.append("cat_adamw: form")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
then echo "ok optimizer identity and inference form vs truth"; pass=$((pass+1)); else echo "FAIL optimizer identity and inference form vs truth"; fail=$((fail+1)); fi
expect "identity line, AdamW" 0 "^  optimizer identity \(AdamW, k=2: exp_avg, exp_avg_sq\): state 128\.07 MiB = 2 x trainable parameters 64\.04 MiB, gradients 64\.04 MiB: holds$" -- "$bin" categories testdata/v3_lazy_adamw.pickle
expect "identity line, SGD" 0 "^  optimizer identity \(SGD, k=1: momentum_buffer\): state 64\.04 MiB = 1 x trainable parameters 64\.04 MiB, gradients 64\.04 MiB: holds$" -- "$bin" categories testdata/v3_lazy_sgd.pickle
expect "identity line, frozen" 0 "holds; 16\.02 MiB of parameters have no gradient \(frozen\)$" -- "$bin" categories testdata/cat_sgd_frozen.pickle
expect "identity fails, gradients" 0 "^    the gradients are 6\.00 MiB over \(the parameters and state agree\)$" -- "$bin" categories testdata/leak_backward_hook.pickle
expect "identity fails, state before the trace" 0 "^    the optimizer state is 32\.08 MiB short: made before the trace began" -- "$bin" categories testdata/shape_bench_loop.pickle
"$bin" report testdata/cat_infer.pickle -o "$tmp/rep-infer" > /dev/null
expect "report html, inference formula" 0 "an inference run \(no backward, no optimizer step\): parameters \+ inputs and KV caches \+ activations and temporaries = 17\.94 MiB \+ 16\.00 KiB \+ 58\.25 MiB = 76\.20 MiB" -- cat "$tmp/rep-infer/index.html"
expect "inference formula" 0 "^  peak iteration 1 \(inference: no backward, no optimizer step\): parameters \+ inputs and KV caches \+ activations and temporaries$" -- "$bin" categories testdata/cat_infer.pickle
expect "lazy parameters in summary" 0 "peak is +parameter 64\.04 MiB" -- "$bin" summary testdata/v3_lazy_adamw.pickle

# Crafted traps, the truth known by construction: 2 x 4 MiB lazy weights made by a first
# forward before the loop (python-only stacks, so they look like the workspace pattern),
# their gradients in each backward, an SGD step (named by torch/optim/sgd.py) with or
# without momentum. With momentum the state mirrors them: parameters (k=1). Without, no
# state: gradients alone are no evidence, so they stay apart and the identity says the
# parameters are 8 MiB short. A third never-freed 4 MiB tensor of the forward, made after
# the weights: two of the three are taken (the step mirrors two), the earliest.
python3 - "$tmp" <<'PY'
import pickle, sys
def frames(*fs): return [{"filename": f, "name": n, "line": l} for f, n, l in fs]
TRAIN = ("/home/u/train.py", "main", 5)
USER = frames(("/home/u/train.py", "main", 3))
FWD = frames(("/home/u/model.py", "forward", 10), TRAIN)
BWD = frames(("/opt/py/site-packages/torch/autograd/__init__.py", "backward", 1), TRAIN)
OPT = frames(("/opt/py/site-packages/torch/optim/sgd.py", "step", 1), TRAIN)
ZG = frames(("/opt/py/site-packages/torch/optim/optimizer.py", "zero_grad", 1), TRAIN)
MB = 1 << 20
def gen(path, momentum, cache):
    ev, t, addr = [], [1000], [1 << 30]
    def a(size, fr):
        addr[0] += 16 * MB; t[0] += 10
        ev.append({"action": "alloc", "addr": addr[0], "size": size, "stream": 0, "time_us": t[0], "frames": fr})
        return (addr[0], size)
    def f(x, fr):
        t[0] += 10
        for act in ("free_requested", "free_completed"):
            ev.append({"action": act, "addr": x[0], "size": x[1], "stream": 0, "time_us": t[0], "frames": fr})
    x = a(256 * 1024, USER)
    a(4 * MB, FWD); a(4 * MB, FWD)
    if cache:
        a(4 * MB, FWD)
    tmp = a(1024, FWD); f(tmp, FWD)
    f(x, USER)
    state = []
    for it in range(3):
        t[0] += 1000
        b = a(256 * 1024, USER)
        acts = [a(512 * 1024, FWD), a(512 * 1024, FWD)]
        g = [a(4 * MB, BWD), a(4 * MB, BWD)]
        for y in acts: f(y, BWD)
        if momentum and not state:
            state = [a(4 * MB, OPT), a(4 * MB, OPT)]
        s = a(4 * MB, OPT); f(s, OPT)
        for y in g: f(y, ZG)
        f(b, USER)
    pickle.dump({"segments": [], "device_traces": [ev]}, open(path, "wb"), protocol=4)
gen(sys.argv[1] + "/sgd_momentum.pickle", True, False)
gen(sys.argv[1] + "/sgd_plain.pickle", False, False)
gen(sys.argv[1] + "/sgd_cache.pickle", True, True)
PY
for f in sgd_momentum sgd_plain sgd_cache; do
  "$bin" categories --json --explain "$tmp/$f.pickle" > "$tmp/$f.c.json"
  "$bin" summary --json "$tmp/$f.pickle" > "$tmp/$f.s.json"
done
if python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
MB = 1 << 20
bad = []
def load(f, k): return json.load(open(f"{tmp}/{f}.{k}.json"))["files"][0]["devices"][0]
for f, k, holds, params in (("sgd_momentum", 1, True, 8 * MB), ("sgd_plain", 0, False, 0), ("sgd_cache", 1, True, 8 * MB)):
    c, s = load(f, "c"), load(f, "s")
    i = c["optimizer_identity"]
    if (i["optimizer"], i["optimizer_from"], i["states_per_parameter"], i["holds"]) != ("SGD", "frames", k, holds): bad.append(f"{f}: {i}")
    if c["end"]["categories"]["parameter"] != params: bad.append(f"{f}: parameters at the end {c['end']['categories']}")
    if s["peak"]["categories"] != c["peak"]["categories"]: bad.append(f"{f}: summary's peak {s['peak']['categories']} vs {c['peak']['categories']}")
    taken = [e for e in c["explain"] if e["reason"] == "mirrored-parameter"]
    if len(taken) != (2 if params else 0) or any(not e["weak"] for e in taken): bad.append(f"{f}: mirrored {taken}")
    if f == "sgd_cache" and sorted(e["alloc_event"] for e in taken) != [1, 2]: bad.append(f"{f}: not the earliest {taken}")
i = load("sgd_plain", "c")["optimizer_identity"]
if (i["off"], i["off_by_bytes"], i["gradient"], i["trainable_parameter"]) != ("parameter", -8 * MB, 8 * MB, 0): bad.append(f"sgd_plain: {i}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
then echo "ok crafted SGD traps"; pass=$((pass+1)); else echo "FAIL crafted SGD traps"; fail=$((fail+1)); fi
expect "identity fails, parameters short" 0 "^    the parameters are 8\.00 MiB short: the gradients mirror parameters that sit in other categories$" -- "$bin" categories "$tmp/sgd_plain.pickle"

finish categories
