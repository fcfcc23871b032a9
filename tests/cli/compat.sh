#!/usr/bin/env bash
# Every snapshot PyTorch writes goes through every command (issue 20): the torch.compile,
# context/stacks and ring recordings of testdata/, and the torch 2.0-layout rewrites
# (tests/gen/make_older.py: no times, block history, context=None). Each command exits 0
# or 1; a trace without times says so once and never shows a made-up time; a frame line
# of 2^64 - 1 reads as unknown.
set -uo pipefail
source "$(dirname "$0")/common.bash"

files="compile_default compile_reduce_overhead compile_ctx_recorded compile_ring ctx_alloc ctx_state
       ctx_none stacks_python old20_gpt2_train old20_cat_prebuilt old20_leak_layers oldctx_gpt2_train
       oldctx_cat_prebuilt oldctx_leak_layers"
for n in $files; do
  f=testdata/$n.pickle
  [ -f "$f" ] || { bad "$f missing"; continue; }
  i=0
  while IFS= read -r c; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    $bin $c > "$tmp/out" 2> "$tmp/err"
    rc=$?
    if [ $rc -le 1 ]; then ok; else bad "$n: memsnap $c: rc $rc: $(head -c 300 "$tmp/err")"; fi
  done <<EOF
summary $f
summary --json $f
leaks --stack $f
leaks --json $f
categories --explain $f
categories --json $f
oom $f
oom --json $f
render $f -o $tmp/$n.png
render --by phase $f -o $tmp/$n.phase.svg
render --by category $f -o $tmp/$n.cat.svg
render --leaks $f -o $tmp/$n.leaks.svg
view $f -o $tmp/$n.html
diff $f $f
ranks $f $f $f
report $f -o $tmp/report-$n
EOF
done

# The compiled run was refused before: its fake-tensor frames carry line 2^64 - 1.
python3 - testdata/compile_default.pickle <<'PY' && ok || bad "compile_default has no frame line of 2^64-1 (the case this test is for)"
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
sys.exit(0 if any(f.get("line", 0) >= 2**63 for tr in d["device_traces"] for e in tr for f in e.get("frames", [])) else 1)
PY
"$bin" summary testdata/compile_default.pickle > "$tmp/s" 2>&1 && ok || bad "summary compile_default: $(head -c 300 "$tmp/s")"

# An unknown line prints as file:? and is null in JSON (a GPT-2 trace whose Python
# frames all carry 2^64 - 1, from the fuzz corpus).
u=tests/fuzz/corpus/real_gpt2_u64_lines
"$bin" summary "$u" > "$tmp/s" 2>&1
grep -q 'activations.py:? forward' "$tmp/s" && ok || bad "unknown line not shown as file:?"
"$bin" summary --json "$u" > "$tmp/j" 2>&1
python3 - "$tmp/j" <<'PY' && ok || bad "unknown line not null in summary --json"
import json, sys
d = json.load(open(sys.argv[1]))
sites = d["files"][0]["devices"][0]["top_sites"]
py = [s for s in sites if s["filename"].endswith(".py")]
sys.exit(0 if py and all(s["line"] is None for s in py) else 1)
PY

# No times: said once, no made-up seconds anywhere in the text, null times in JSON.
for n in old20_gpt2_train old20_leak_layers oldctx_cat_prebuilt; do
  f=testdata/$n.pickle
  "$bin" summary "$f" > "$tmp/s"
  [ "$(grep -c 'this PyTorch recorded no times' "$tmp/s")" = 1 ] && ok || bad "$n: 'recorded no times' not said once"
  for c in summary "leaks --stack" "categories --explain" oom; do
    # shellcheck disable=SC2086
    $bin $c "$f" > "$tmp/t" 2>&1
    if grep -qE '[0-9]\.[0-9]{3} ?s\b' "$tmp/t"; then bad "$n: memsnap $c shows a time: $(grep -m1 -E '[0-9]\.[0-9]{3} ?s\b' "$tmp/t")"; else ok; fi
  done
  "$bin" summary --json "$f" > "$tmp/j"
  python3 - "$tmp/j" <<'PY' && ok || bad "$n: summary --json times not null"
import json, sys
dev = json.load(open(sys.argv[1]))["files"][0]["devices"][0]
it = dev["iterations"]["items"]
ok = (dev["has_times"] is False and dev["time"]["seconds"] is None and dev["peak"]["time_us"] is None
      and dev["peak"]["event"] >= 0 and all(x["start_s"] is None and x["start_event"] >= 0 for x in it))
sys.exit(0 if ok else 1)
PY
done
"$bin" summary testdata/gpt2_train.pickle | grep -q 'events over 1.155 s' && ok || bad "a trace with times lost its seconds"
# The report and ranks of a trace without times show no made-up seconds either.
"$bin" report testdata/old20_gpt2_train.pickle testdata/oldctx_gpt2_train.pickle -o "$tmp/rep-old" > /dev/null 2>&1
if grep -qE '0\.000 s' "$tmp/rep-old/index.html" "$tmp/rep-old/summary.md"; then bad "report shows 0.000 s on a trace without times"; else ok; fi
grep -q 'this PyTorch recorded no times' "$tmp/rep-old/index.html" && ok || bad "report does not say the trace has no times"
"$bin" ranks testdata/old20_gpt2_train.pickle testdata/gpt2_train.pickle testdata/oldctx_gpt2_train.pickle > "$tmp/r" 2>&1
grep -q 'event 1544' "$tmp/r" && ! grep -q ' 0\.00 s' "$tmp/r" && ok || bad "ranks: peak of a trace without times not as an event"

# A recording that started late is not called a wrapped ring buffer; a ring that filled is.
"$bin" summary testdata/cat_prebuilt.pickle | grep -q 'the recording started after them, or the ring buffer dropped older events' && ok || bad "cat_prebuilt: late start wording"
"$bin" summary testdata/ring_wrap.pickle | grep -q 'the ring buffer dropped older events: record_function ranges ended before' && ok || bad "ring_wrap: wrap evidence"
"$bin" summary testdata/compile_ring.pickle | grep -q 'trace           incomplete' && ok || bad "compile_ring: not incomplete"

# A device without events says so.
python3 -c "import pickle; pickle.dump({'segments': [{'device': 0, 'address': 1048576, 'total_size': 2097152, 'allocated_size': 0, 'active_size': 0, 'requested_size': 0, 'stream': 0, 'segment_type': 'small', 'blocks': [{'address': 1048576, 'size': 2097152, 'requested_size': 0, 'state': 'inactive'}]}], 'device_traces': [[]]}, open('$tmp/noev.pickle', 'wb'))"
"$bin" summary "$tmp/noev.pickle" > "$tmp/s" 2>&1
grep -q 'device 0: no events recorded' "$tmp/s" && ok || bad "no events: $(head -c 300 "$tmp/s")"

finish compat
