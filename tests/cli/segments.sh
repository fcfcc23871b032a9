#!/usr/bin/env bash
# memsnap segments: instants asked for and merged, the text, the JSON's shape (cJSON's own
# formatting though each instant is kept as text), the picture, mistakes (exit 2), and the
# fragmentation figures other commands print (summary's line, render --show fragmentation).
# The states' values are held to torch.cuda.memory_snapshot() by tests/test_segments.c.
set -u
source "$(dirname "$0")/common.bash"
F=testdata/gpt2_train.pickle

# Default instants: the peak and the end, in trace order.
out=$("$BIN" segments "$F"); rc=$?
check "default exit" 0 $rc
contains "peak instant" "$out" "peak: 1.126 s (event 1544)"
contains "end instant" "$out" "end: 1.155 s (event 3557)"
contains "totals" "$out" "free inside them 72.41 MiB in 27 blocks, largest 24.00 MiB"
contains "pool table" "$out" "pool   stream"
contains "holders" "$out" "segments holding the most free memory:"

# Asks merge on one event and come out in trace order; -1 is before the first event.
"$BIN" segments --json "$F" --event 2000 --event -1 --event 2000 > "$tmp/m.json"; rc=$?
check "merged exit" 0 $rc
check "merged events" "[-1, 2000]" "$(jget "$tmp/m.json" "[a['event'] for a in d['files'][0]['devices'][0]['at']]")"
check "merged labels" "['--event 2000', '--event 2000']" "$(jget "$tmp/m.json" "d['files'][0]['devices'][0]['at'][1]['asked']")"
check "before the first event" "0" "$(jget "$tmp/m.json" "d['files'][0]['devices'][0]['at'][0]['reserved_bytes']")"

# The JSON is printed as cJSON prints a tree, each instant kept as text at its depth.
python3 - "$tmp/m.json" <<'PY' || fail=1
import json, sys
text = open(sys.argv[1]).read()
def dump(v, depth):
    if isinstance(v, dict):
        if not v:
            return "{\n" + "\t" * depth + "}"
        return "{\n" + ",\n".join("\t" * (depth + 1) + json.dumps(k) + ":\t" + dump(x, depth + 1)
                                  for k, x in v.items()) + "\n" + "\t" * depth + "}"
    if isinstance(v, list):
        return "[" + ", ".join(dump(x, depth + 1) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v)
if dump(json.loads(text), 0) + "\n" != text:
    print("FAIL: segments --json is not formatted as cJSON formats it")
    sys.exit(1)
PY
check "block keys" "['address', 'size', 'requested_size', 'state', 'site', 'category', 'reconstructed', 'size_estimated']" \
    "$(jget "$tmp/m.json" "list(d['files'][0]['devices'][0]['at'][1]['segments'][0]['blocks'][0].keys())")"
# Every block tiles its segment.
check "blocks tile segments" "True" "$(jget "$tmp/m.json" "all(sum(b['size'] for b in g['blocks']) == g['total_size'] for a in d['files'][0]['devices'][0]['at'] for g in a['segments'])")"

# --at and --at-us land on the last event at or before the time: the event's own time is at
# most the time asked, the next event's after it.
"$BIN" segments --json "$F" --event 1544 > "$tmp/e.json"
us=$(jget "$tmp/e.json" "d['files'][0]['devices'][0]['at'][0]['time_us']")
"$BIN" segments --json "$F" --at-us "$us" > "$tmp/us.json"
e=$(jget "$tmp/us.json" "d['files'][0]['devices'][0]['at'][0]['event']")
"$BIN" segments --json "$F" --event "$e" --event $((e + 1)) > "$tmp/e2.json"
check "--at-us lands on the last event at or before it" "True" \
    "$(jget "$tmp/e2.json" "[a['time_us'] for a in d['files'][0]['devices'][0]['at']][0] <= $us < [a['time_us'] for a in d['files'][0]['devices'][0]['at']][1] and $e >= 1544")"
"$BIN" segments --json "$F" --at 0.5 > "$tmp/at.json"
check "--at seconds" "0.5" "$(jget "$tmp/at.json" "d['files'][0]['devices'][0]['at'][0]['seconds']")"
"$BIN" segments --json "$F" --at 99 > "$tmp/past.json"
check "past the end" "True 3557" "$(jget "$tmp/past.json" "d['files'][0]['devices'][0]['at'][0]['past_end'], d['files'][0]['devices'][0]['at'][0]['event']")"
# A trace without times cannot place a time: counted, not guessed.
"$BIN" segments --json testdata/old20_gpt2_train.pickle --at 1 --event 5 > "$tmp/old.json"; rc=$?
check "no times exit" 0 $rc
check "no times unplaced" "1 1" "$(jget "$tmp/old.json" "d['files'][0]['devices'][0]['at_unplaced'], len(d['files'][0]['devices'][0]['at'])")"

# A late start: blocks from before the trace are marked, the state approximate while an
# inferred size is alive.
"$BIN" segments --json testdata/seg_late_start.pickle --event -1 > "$tmp/late.json"
check "reconstructed blocks" "41 True" "$(jget "$tmp/late.json" "d['files'][0]['devices'][0]['at'][0]['reconstructed_blocks'], d['files'][0]['devices'][0]['at'][0]['approximate']")"

# The picture, PNG and SVG, by category and by site.
"$BIN" segments "$F" -o "$tmp/s.png" > /dev/null; rc=$?
check "png exit" 0 $rc
check "png magic" "89504e47" "$(head -c 4 "$tmp/s.png" | od -An -tx1 | tr -d ' \n')"
"$BIN" segments "$F" --by site -o "$tmp/s.svg" > /dev/null; rc=$?
check "svg exit" 0 $rc
grep -q "<svg" "$tmp/s.svg" || { echo "FAIL: no svg"; fail=1; }

# Mistakes: exit 2, one line naming them.
err=$("$BIN" segments "$F" --event 99999 2>&1 >/dev/null); rc=$?
check "event outside exit" 2 $rc
contains "event outside message" "$err" "--event 99999: device 0 has events 0 to 3557"
err=$("$BIN" segments "$F" --event x 2>&1 >/dev/null); rc=$?
check "bad event exit" 2 $rc
err=$("$BIN" segments "$F" -o "$tmp/s.jpg" 2>&1 >/dev/null); rc=$?
check "bad picture exit" 2 $rc
err=$("$BIN" segments "$F" --by phase 2>&1 >/dev/null); rc=$?
check "bad --by exit" 2 $rc
"$BIN" segments --help > /dev/null; rc=$?
check "help exit" 0 $rc

# What the other commands say of it.
out=$("$BIN" summary "$F")
contains "summary line" "$out" "free in reserved at the peak: 72.41 MiB in 27 pieces, largest 24.00 MiB"
out=$("$BIN" categories "$F")
contains "categories line" "$out" "at the peak, free inside reserved segments: 72.41 MiB in 27 pieces, largest 24.00 MiB"
"$BIN" render "$F" --show fragmentation --format json -o "$tmp/r.json"; rc=$?
check "render fragmentation exit" 0 $rc
check "render fragmentation panel" "True" "$(jget "$tmp/r.json" "d['panels'][0]['fragmentation']['plot'][2] == d['panels'][0]['plot'][2]")"
err=$("$BIN" render "$F" "$F" --overlay --show fragmentation -o "$tmp/o.png" 2>&1); rc=$?
check "fragmentation with overlay exit" 2 $rc

finish segments
