#!/usr/bin/env bash
# memsnap oom: text, JSON, the picture, files without OOMs, and damaged input (an oom
# event with no segments, addresses that contradict each other, a wrapped trace): an
# answer marked approximate, never a crash.
set -u
source "$(dirname "$0")/common.bash"

# Text: the cause and the numbers that justify it.
out=$("$BIN" oom testdata/oom_fragmentation.pickle); rc=$?
check "fragmentation exit" 0 $rc
contains "fragmentation cause" "$out" "cause fragmentation"
contains "fragmentation free" "$out" "544.00 MiB in 8 blocks, largest 124.00 MiB"
contains "fragmentation advice" "$out" "expandable_segments:True"
contains "limit advice" "$out" "set_per_process_memory_fraction"

out=$("$BIN" oom testdata/oom_leak.pickle); rc=$?
contains "leak cause" "$out" "cause leak"
contains "leak site" "$out" "scenarios_explain.py:544"

# JSON: every recording, against its truth.
for f in oom_fragmentation oom_activations oom_model_state oom_leak oom_leak_ring oom_single_expandable oom_act_trap; do
    "$BIN" oom --json "testdata/$f.pickle" > "$tmp/$f.json"; rc=$?
    check "$f --json exit" 0 $rc
    got=$(jget "$tmp/$f.json" "d['files'][0]['ooms'][0]['cause']")
    want=$(jget "testdata/$f.truth.json" "d['oom']['expected_cause']")
    check "$f cause" "$want" "$got"
    got=$(jget "$tmp/$f.json" "d['files'][0]['ooms'][0]['free_in_reserved_bytes']")
    want=$(jget "testdata/$f.truth.json" "d['oom']['at_oom']['inactive_blocks_bytes']")
    check "$f free_in_reserved_bytes" "$want" "$got"
    got=$(jget "$tmp/$f.json" "d['files'][0]['ooms'][0]['largest_free_block_bytes']")
    want=$(jget "testdata/$f.truth.json" "d['oom']['at_oom']['largest_inactive_block_bytes']")
    check "$f largest_free_block_bytes" "$want" "$got"
    got=$(jget "$tmp/$f.json" "sorted(d['files'][0]['ooms'][0]['categories'].keys()) == sorted(['parameter','gradient','optimizer_state','activation','temporary','workspace','input','other'])")
    check "$f eight category keys" True "$got"
done
# The cause is what would have let the iteration finish (issue 22): on oom_act_trap the
# free pieces add up to far more than the request, but not to what the iteration, larger
# than the one before, still had to allocate.
j="$tmp/oom_act_trap.json"
check "trap basis" previous_iteration_allocations "$(jget "$j" "d['files'][0]['ooms'][0]['cause_basis']")"
check "trap rest exceeds free" True "$(jget "$j" "d['files'][0]['ooms'][0]['still_to_allocate_bytes'] > d['files'][0]['ooms'][0]['usable_free_bytes']")"
check "trap iterations end unfinished" "[False, False, True]" "$(jget "$j" "[i['unfinished'] for i in d['files'][0]['ooms'][0]['iterations']]")"
check "trap iteration peaks" "[787907600, 1557626888]" "$(jget "$j" "[i['peak_bytes'] for i in d['files'][0]['ooms'][0]['iterations'][:-1]]")"
check "trap peak iteration" 3 "$(jget "$j" "d['files'][0]['ooms'][0]['peak_iteration']")"
check "trap per layer call" 8388608 "$(jget "$j" "d['files'][0]['ooms'][0]['activations']['bytes_per_layer_call']")"
check "trap first advice" True "$(jget "$j" "d['files'][0]['ooms'][0]['advice'][0].startswith('activations hold')")"
check "fragmentation basis" share_of_live "$(jget "$tmp/oom_fragmentation.json" "d['files'][0]['ooms'][0]['cause_basis']")"
check "fragmentation no estimate" None "$(jget "$tmp/oom_fragmentation.json" "d['files'][0]['ooms'][0]['still_to_allocate_bytes']")"
out=$("$BIN" oom testdata/oom_act_trap.pickle)
contains "trap text cause" "$out" "cause activations"
contains "trap text peaks" "$out" "#2   peak 1.45 GiB; live at its end 193.47 MiB"
contains "trap text unfinished" "$out" "#3   peak so far 2.43 GiB, the highest; unfinished: the failure"
contains "trap text rest" "$out" "to finish it      2.73 GiB more to allocate, from #2"
contains "trap text checkpointing" "$out" "activation checkpointing (torch.utils.checkpoint) in 18 segments: about 497.47 MiB at the peak, fits under the 3.00 GiB limit"
contains "trap text free pieces" "$out" "but not the 2.73 GiB the iteration still had to allocate"
"$BIN" report testdata/oom_act_trap.pickle -o "$tmp/rep_trap" > /dev/null; rc=$?
check "trap report exit" 0 $rc
contains "trap report md iterations" "$(cat "$tmp/rep_trap/summary.md")" "\#3 peak so far 2.43 GiB, the highest, unfinished: the failure."
contains "trap report page iterations" "$(cat "$tmp/rep_trap/index.html")" "#2 peak 1.45 GiB, 193.47 MiB live at its end;"
# categories: the formula covers complete iterations and says the real peak is in the
# failing one.
contains "trap categories real peak" "$("$BIN" categories testdata/oom_act_trap.pickle)" "the real peak, 2.43 GiB, is in iteration 3, unfinished"
check "trap categories json" 3 "$("$BIN" categories --json testdata/oom_act_trap.pickle | python3 -c "import json,sys; print(json.load(sys.stdin)['files'][0]['devices'][0]['formula']['real_peak_unfinished_iteration'])")"
check "ring is approximate" True "$(jget "$tmp/oom_leak_ring.json" "d['files'][0]['ooms'][0]['approximate']")"
check "complete is exact" False "$(jget "$tmp/oom_leak.json" "d['files'][0]['ooms'][0]['approximate']")"

# summary names the cause in its OOM line and JSON.
out=$("$BIN" summary testdata/oom_fragmentation.pickle); rc=$?
check "summary exit" 0 $rc
contains "summary cause" "$out" "(event 37): cause fragmentation"
"$BIN" summary --json testdata/oom_model_state.pickle > "$tmp/sum.json"
check "summary json cause" model_state "$(jget "$tmp/sum.json" "d['files'][0]['devices'][0]['ooms'][0]['cause']")"

# report: files[].ooms, the picture beside the page, an OOM section, the --fail-on-oom gate.
"$BIN" report testdata/oom_single_expandable.pickle -o "$tmp/rep" --fail-on-oom > "$tmp/rep.txt"; rc=$?
check "report --fail-on-oom exit" 1 $rc
contains "report gate line" "$(cat "$tmp/rep.txt")" "FAILED --fail-on-oom: oom_single_expandable.pickle: 1 OOM event"
contains "report gate cause" "$(cat "$tmp/rep.txt")" "cause single_allocation"
check "report json cause" single_allocation "$(jget "$tmp/rep/summary.json" "d['files'][0]['ooms'][0]['cause']")"
check "report json gate" oom "$(jget "$tmp/rep/summary.json" "d['gates']['checked'][0]['gate']")"
check "report oom png" "89504e47" "$(head -c 4 "$tmp/rep/oom-oom_single_expandable.png" | od -An -tx1 | tr -d ' \n')"
contains "report page section" "$(cat "$tmp/rep/index.html")" "Why it ran out of memory"
contains "report md section" "$(cat "$tmp/rep/summary.md")" "cause **single\_allocation**"
"$BIN" report testdata/gpt2_train.pickle -o "$tmp/rep2" --fail-on-oom > "$tmp/rep2.txt"; rc=$?
check "report --fail-on-oom passes without OOM" 0 $rc
contains "report pass line" "$(cat "$tmp/rep2.txt")" "passed --fail-on-oom: gpt2_train.pickle: no OOM event"
check "report no oom png" None "$(jget "$tmp/rep2/summary.json" "d['files'][0]['oom_png']")"

# No OOM: said, exit 0.
out=$("$BIN" oom testdata/gpt2_train.pickle); rc=$?
check "no oom exit" 0 $rc
contains "no oom text" "$out" "no OOM events"
"$BIN" oom --json testdata/gpt2_train.pickle > "$tmp/none.json"
check "no oom json" 0 "$(jget "$tmp/none.json" "len(d['files'][0]['ooms'])")"

# The picture, PNG and SVG.
"$BIN" oom testdata/oom_fragmentation.pickle -o "$tmp/f.png" > /dev/null; rc=$?
check "png exit" 0 $rc
check "png magic" "89504e47" "$(head -c 4 "$tmp/f.png" | od -An -tx1 | tr -d ' \n')"
"$BIN" oom testdata/oom_single_expandable.pickle -o "$tmp/s.svg" > /dev/null; rc=$?
check "svg exit" 0 $rc
contains "svg" "$(head -c 200 "$tmp/s.svg")" "<svg"

# Usage and input errors: exit 2.
"$BIN" oom testdata/oom.pickle -o "$tmp/x.jpg" > /dev/null 2>&1; check "bad picture name" 2 $?
"$BIN" oom > /dev/null 2>&1; check "no file" 2 $?
"$BIN" oom --bogus testdata/oom.pickle > /dev/null 2>&1; check "unknown option" 2 $?
"$BIN" oom --device 7 testdata/oom.pickle > /dev/null 2>&1; check "no such device" 2 $?
"$BIN" oom "$tmp/missing.pickle" > /dev/null 2>&1; check "missing file" 2 $?
head -c 3000 testdata/oom_fragmentation.pickle > "$tmp/cut.pickle"
"$BIN" oom "$tmp/cut.pickle" > /dev/null 2>&1; check "truncated file" 2 $?

# Damaged snapshots written with Python's pickle: answers marked approximate, no crash.
python3 - "$tmp" <<'PY'
import pickle, sys
d = sys.argv[1]
def ev(action, addr, size, t):
    return {'action': action, 'addr': addr, 'size': size, 'stream': 0, 'time_us': t,
            'compile_context': 'N/A', 'user_metadata': '', 'frames': []}
def oom(size, free, t):
    e = ev('oom', 0, size, t); del e['addr']; e['device_free'] = free; return e
MiB = 1 << 20
# An oom with no segment anywhere: allocations the file never places.
pickle.dump({'segments': [], 'device_traces': [[ev('alloc', 0x10000000, 4 * MiB, 1),
            oom(64 * MiB, 1 << 30, 2)]]}, open(f'{d}/noseg.pickle', 'wb'))
# Addresses that contradict: an alloc inside another live block, a free of a block never
# made, a segment freed while busy.
seg = 0x20000000
trace = [ev('segment_alloc', seg, 20 * MiB, 1), ev('alloc', seg, 2 * MiB, 2),
         ev('alloc', seg + 4096, 2 * MiB, 3), ev('free_completed', seg + 12345, 512, 4),
         ev('segment_free', seg, 20 * MiB, 5), ev('alloc', seg + 64 * MiB, 8 * MiB, 6),
         oom(30 * MiB, 100 * MiB, 7)]
pickle.dump({'segments': [], 'device_traces': [trace]}, open(f'{d}/contra.pickle', 'wb'))
# Final segments that overlap each other and a block outside its segment.
blk = lambda a, s, st: {'address': a, 'size': s, 'requested_size': s, 'state': st, 'frames': []}
segs = [{'device': 0, 'address': seg, 'total_size': 20 * MiB, 'allocated_size': 0,
         'active_size': 0, 'requested_size': 0, 'stream': 0, 'segment_type': 'large',
         'segment_pool_id': (0, 0), 'is_expandable': False, 'frames': [],
         'blocks': [blk(seg, 2 * MiB, 'active_allocated'), blk(seg + 40 * MiB, 2 * MiB, 'active_allocated'),
                    blk(seg + 2 * MiB, 18 * MiB, 'inactive')]},
        {'device': 0, 'address': seg + 1 * MiB, 'total_size': 20 * MiB, 'allocated_size': 0,
         'active_size': 0, 'requested_size': 0, 'stream': 0, 'segment_type': 'large',
         'segment_pool_id': (0, 0), 'is_expandable': False, 'frames': [], 'blocks': []}]
pickle.dump({'segments': segs, 'device_traces': [[ev('free_completed', seg + 7 * MiB, 3 * MiB, 1),
            oom(30 * MiB, 100 * MiB, 2)]]}, open(f'{d}/overlap.pickle', 'wb'))
PY
for f in noseg contra overlap; do
    "$BIN" oom --json "$tmp/$f.pickle" > "$tmp/$f.json" 2> "$tmp/$f.err"; rc=$?
    check "$f exit" 0 $rc
    check "$f approximate" True "$(jget "$tmp/$f.json" "d['files'][0]['ooms'][0]['approximate']")"
    "$BIN" oom "$tmp/$f.pickle" -o "$tmp/$f.png" > "$tmp/$f.txt" 2>&1; rc=$?
    check "$f text and picture exit" 0 $rc
done
contains "noseg note" "$(cat "$tmp/noseg.txt")" "no segment is known"

finish oom
