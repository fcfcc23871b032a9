#!/usr/bin/env bash
# Issue 22, sections 3 to 5: verdicts that weigh the evidence, from the command line. The
# user's own line behind a leak made inside a library (the truth measured it in the
# recording script: testdata/leak_*library*.truth.json user_frame), two ranks as a pair,
# comparisons only of comparable files, the peak's place in the run, and the small
# things: plurals, --top, --iterations, --at past the end, allocator settings.
set -u
source "$(dirname "$0")/common.bash"
T=$tmp

truth() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

LOGITS=testdata/leak_library_logits.pickle
HOOK=testdata/leak_hook_library.pickle
R0=testdata/ddp_rank0.pickle
R1=testdata/ddp_rank1.pickle

# §3 The user's line: the site stays the library's, the line under it is the truth's.
for f in leak_library_logits leak_hook_library; do
  t=testdata/$f.truth.json
  site=$(truth $t "'/'.join(d['leaks'][0]['filename'].split('/')[-2:]) + ':%d %s' % (d['leaks'][0]['line'], d['leaks'][0]['name'])")
  uf=$(truth $t "'/'.join(d['leaks'][0]['user_frame']['filename'].split('/')[-2:]) + ':%d %s' % (d['leaks'][0]['user_frame']['line'], d['leaks'][0]['user_frame']['name'])")
  n=$(truth $t "d['leaks'][0]['count']")
  ms_expect 1 "^  leak +$site .* $n +" -- leaks --fail testdata/$f.pickle
  ms_expect 0 "^ +from $uf\$" -- leaks testdata/$f.pickle
  got=$("$BIN" leaks --json testdata/$f.pickle | python3 -c "import json,sys; L=json.load(sys.stdin)['files'][0]['leaks'][0]; print(L['user_frame'], L['members'][0]['user_frame'], L['site']['line'])")
  want=$(truth $t "'%s %s %d' % (d['leaks'][0]['user_frame'], d['leaks'][0]['user_frame'], d['leaks'][0]['line'])")
  [ "$got" = "$want" ] || { echo "FAIL: $f leaks --json user_frame: got '$got', want '$want'"; fail=1; }
done
# A leak in the user's own code has its line as the site: no "from" line, user_frame = site.
ms_refute '^ +from ' -- leaks testdata/leak_forward_hook.pickle
got=$("$BIN" leaks --json testdata/leak_forward_hook.pickle | python3 -c "import json,sys; L=json.load(sys.stdin)['files'][0]['leaks'][0]; print(L['user_frame']['filename'] == L['site']['filename'] and L['user_frame']['line'] == L['site']['line'])")
[ "$got" = True ] || { echo "FAIL: leak_forward_hook user_frame is not its site"; fail=1; }
# Top sites: the DDP rank's library sites come from train/ddp.py:30 worker (under
# multiprocessing's standard-library frames); the autograd engine's have none.
ms_expect 0 'transformers/activations.py:66 forward from train/ddp.py:30 worker$' -- summary $R0
ms_refute 'MmBackward0::apply from' -- summary $R0
got=$("$BIN" summary --json $R0 | python3 -c "
import json,sys
s=json.load(sys.stdin)['files'][0]['devices'][0]['top_sites']
print(sum(1 for x in s if x['user_frame'] is None), sum(1 for x in s if x['user_frame'] and x['user_frame']['filename'].endswith('/train/ddp.py')), len(s))")
[ "$got" = "3 7 10" ] || { echo "FAIL: ddp_rank0 top_sites user_frame counts: '$got'"; fail=1; }
# The report's tables and the view's tooltip data carry it.
"$BIN" report -o "$T/rep" $LOGITS > /dev/null || { echo "FAIL: report"; fail=1; }
grep -q 'muted">from train/scenarios_verdicts.py:305 leak_library_logits' "$T/rep/index.html" ||
  { echo "FAIL: report HTML lacks the user's line"; fail=1; }
grep -q '^| leak | modeling\\_gpt2.py:697 forward, from train/scenarios\\_verdicts.py:305 leak\\_library\\_logits |' "$T/rep/summary.md" ||
  { echo "FAIL: report Markdown lacks the user's line"; fail=1; }
"$BIN" view $LOGITS -o "$T/v.html" > /dev/null || { echo "FAIL: view"; fail=1; }
grep -q 'train/scenarios_verdicts.py:305 leak_library_logits' "$T/v.html" ||
  { echo "FAIL: view data lacks the user's line"; fail=1; }

# §4 Two ranks are a pair: no outliers (the median of two is their mean), their
# difference as diff says it; exit 0 under --fail.
ms_expect 0 '^Two files are a pair' -- ranks $R0 $R1 --fail
ms_refute 'Outliers|^median' -- ranks $R0 $R1
got=$("$BIN" ranks --json $R0 $R1 | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['is_pair'], len(d['outliers']), d['pair']['verdict'][:12], [r['outlier'] for r in d['ranks']])")
[ "$got" = "True 0 rank1 peaks  [False, False]" ] || { echo "FAIL: ranks --json pair: '$got'"; fail=1; }
# From three files on, outliers against the median; a live-at-end outlier is explained by
# the sites alive at the end, not those at the peak.
ms_expect 0 '^  leak_layers\.pickle: live at end \+' -- ranks $R0 $R1 testdata/gpt2_train.pickle testdata/leak_layers.pickle
ms_expect 0 ' at the end vs the median 0 B: train/scenarios.py:161 layers_run$' -- ranks $R0 $R1 testdata/gpt2_train.pickle testdata/leak_layers.pickle
# Where the peak falls: iteration and phase, not seconds since each trace began.
ms_expect 0 '^peak in iteration +2 of 4 +2 of 4 +same' -- diff $R0 $R1
ms_expect 0 '^peak in phase +backward +backward +same' -- diff $R0 $R1
ms_refute '^time of peak' -- diff $R0 $R1
ms_expect 0 '^Verdict: rank1 peaks .*845.55 MiB in iteration 2 of 4, backward vs 559.71 MiB in iteration 2 of 4, backward\)' -- diff $R0 $R1
# ... also when one side is a summary JSON (peak.place is read back).
"$BIN" summary --json $R0 > "$T/r0.json"
ms_expect 0 '^peak in phase +backward +backward +same' -- diff "$T/r0.json" $R1
# Report: unrelated runs are not compared unless asked; ranks of one job are, as a pair.
"$BIN" report -o "$T/u" testdata/gpt2_train.pickle testdata/linear_infer.pickle > /dev/null
grep -q 'Comparison' "$T/u/index.html" "$T/u/summary.md" && { echo "FAIL: unrelated runs compared"; fail=1; }
[ "$(truth "$T/u/summary.json" "d['comparison'], d['comparison_skipped']")" = "None a file name holds no rank" ] ||
  { echo "FAIL: comparison_skipped"; fail=1; }
"$BIN" report --compare -o "$T/c" testdata/gpt2_train.pickle testdata/linear_infer.pickle > /dev/null
grep -q '### Comparison' "$T/c/summary.md" || { echo "FAIL: --compare"; fail=1; }
"$BIN" report -o "$T/d" $R0 $R1 > /dev/null
grep -q '### Comparison' "$T/d/summary.md" || { echo "FAIL: ranks of one job not compared"; fail=1; }
grep -q '\*\*yes\*\*' "$T/d/summary.md" && { echo "FAIL: a pair marked as outliers"; fail=1; }
"$BIN" report --no-compare -o "$T/n" $R0 $R1 > /dev/null
grep -q 'Comparison' "$T/n/summary.md" && { echo "FAIL: --no-compare compared"; fail=1; }
ms_expect 2 'contradict' -- report --compare --no-compare -o "$T/x" $R0 $R1

# §5 Plurals, --top, --iterations, --at past the end, allocator settings.
ms_expect 0 '\+1 alloc, \+4\.88 MiB' -- leaks $LOGITS
ms_refute '[^0-9.]1 allocs|[^0-9.]1 allocations|[^0-9.]1 frames' -- leaks --stack $LOGITS
ms_expect 0 '^  \(the end of iteration 3 is in --json\)$' -- categories $LOGITS
ms_expect 0 '^  \(at 99\.000s lies past the end of the trace at 0\.[0-9]+s: its column is the state at the end\)$' -- categories --at 99 $LOGITS
ms_refute 'lies past' -- categories --at 0.1 $LOGITS
[ "$("$BIN" categories --json --at 99 $LOGITS | python3 -c "import json,sys; print(json.load(sys.stdin)['files'][0]['devices'][0]['at'][0]['past_end'])")" = True ] ||
  { echo "FAIL: categories --json past_end"; fail=1; }
ms_expect 0 '^  \(3 more findings: --top 2 lists the largest\)$' -- leaks --all --top 2 testdata/leak_layers.pickle
[ "$("$BIN" leaks --all --top 2 --json testdata/leak_layers.pickle | python3 -c "import json,sys; d=json.load(sys.stdin)['files'][0]; print(len(d['leaks']), d['devices'][0]['left_out'])")" = "2 3" ] ||
  { echo "FAIL: leaks --top --json"; fail=1; }
ms_expect 2 'is not an integer' -- leaks --top 0 $LOGITS
ms_expect 0 '^  --iterations 3: without it the trace gives 5 iterations \(optimizer-annotation\); findings are counted at the end of iteration 3' -- leaks --iterations 3 testdata/leak_forward_hook.pickle
ms_refute 'without it' -- leaks --iterations 5 testdata/leak_forward_hook.pickle
ms_refute '^allocator settings' -- summary $R0
ms_expect 0 '^allocator settings: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, expandable_segments=True$' -- summary testdata/expandable.pickle

finish verdicts
