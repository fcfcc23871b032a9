#!/usr/bin/env bash
# memsnap diff / ranks from the command line: the text a person reads, the exit codes a
# script relies on, and the messages for bad input. Numbers are checked in
# tests/test_compare_cli.c; here it is the behaviour around them.
set -u
source "$(dirname "$0")/common.bash"
T=$tmp


R0=testdata/ddp_rank0.pickle
R1=testdata/ddp_rank1.pickle

# The DDP pair: side by side, sites, verdict naming rank 1 and a model site.
ms_expect 0 '^peak +[0-9.]+ MiB +[0-9.]+ MiB +\+[0-9.]+ MiB +\+[0-9.]+%' -- diff $R0 $R1
ms_expect 0 '^Verdict: rank1 peaks [0-9.]+% higher than rank0 \(\+[0-9.]+ MiB: .* held at the peak .*\.py:[0-9]+ ' -- diff $R0 $R1
ms_expect 0 'Sites by change in bytes held at the peak: [0-9]+ changed' -- diff $R0 $R1
ms_expect 0 'Sites by change in bytes alive at the end' -- diff $R0 $R1
ms_expect 0 '^Verdict: rank0 peaks [0-9.]+% lower than rank1' -- diff $R1 $R0

# A file against itself.
ms_expect 0 '^Verdict: A and B match: the same peak' -- diff $R0 $R0
ms_expect 0 'Sites by change in bytes held at the peak: 0 changed' -- diff $R0 $R0

# gzip input is a pickle too.
gzip -c $R1 > "$T/ddp_rank1.pickle.gz"
ms_expect 0 '^Verdict: rank1 peaks' -- diff $R0 "$T/ddp_rank1.pickle.gz"

# Standard input is read as a pickle.
out=$("$BIN" diff $R0 - < $R1 2>&1)
grep -q '^Verdict: stdin peaks' <<<"$out" || { echo "FAIL: diff from stdin"; echo "$out" | tail -3; fail=1; }

# Summary JSON in place of a pickle, with leading white space.
"$BIN" summary $R1 --json > "$T/s1.json" || { echo "FAIL: summary --json"; fail=1; }
{ printf '\n  '; cat "$T/s1.json"; } > "$T/s1-ws.json"
ms_expect 0 '^Verdict: rank1 peaks' -- diff $R0 "$T/s1-ws.json"
ms_expect 0 'not available \(a summary input' -- diff $R0 "$T/s1.json"

# Many files: ranks, and diff with three or more.
ms_expect 0 '^median ' -- ranks $R0 $R1 testdata/gpt2_train.pickle
ms_expect 0 'Outliers \(\* more than 10% from the median\)' -- diff $R0 $R1 testdata/oom.pickle
ms_expect 0 'No outliers: every file is within 60% of the median' -- ranks $R0 $R1 $R1 --threshold 60
ms_expect 1 'Outliers' -- ranks $R0 $R1 testdata/oom.pickle --fail
ms_expect 0 'No outliers' -- ranks $R0 $R0 $R0 --fail

# Rank numbers from names: mem-N.pickle.
for i in 0 1 2 3; do ln -s "$PWD/testdata/gpt2_train.pickle" "$T/mem-$i.pickle"; done
ln -s "$PWD/testdata/oom.pickle" "$T/mem-4.pickle"
ms_expect 0 '^mem-4\.pickle +4 ' -- ranks "$T"/mem-*.pickle
ms_expect 0 '^  mem-4\.pickle: peak \+' -- ranks "$T"/mem-*.pickle

# Help and usage errors.
ms_expect 0 '^usage: memsnap diff A B' -- diff --help
ms_expect 0 '^usage: memsnap ranks FILE' -- ranks --help
ms_expect 2 'needs two files' -- diff $R0
ms_expect 2 'needs at least one file' -- ranks
ms_expect 2 "unknown option '--bogus'" -- diff $R0 $R1 --bogus
ms_expect 2 '--threshold: .x. is not a non-negative number' -- ranks $R0 --threshold x
ms_expect 2 '--top needs a value' -- diff $R0 $R1 --top

# Leaks: the rows of the table, the verdict naming the file that leaks, the ranks column,
# and "unknown" for a summary written before summaries carried leaks.
L=testdata/leak_layers.pickle
N=testdata/noleak_layers.pickle
ms_expect 0 '^leak findings +0 +1 +\+1 +new$' -- diff $N $L
ms_expect 0 '^leaked +0 B +90\.09 MiB +\+90\.09 MiB +new$' -- diff $N $L
ms_expect 0 '^leak growth/iter +0 B +30\.03 MiB +\+30\.03 MiB +new$' -- diff $N $L
ms_expect 0 'leak_layers\.pickle leaks 1 finding, 90\.09 MiB, \+30\.03 MiB per iteration; noleak_layers\.pickle does not\.$' -- diff $N $L
ms_expect 0 '^leaked +0 B +0 B +0 B +0%$' -- diff $R0 $R1
ms_expect 0 '^leak_layers\.pickle .* 90\.09 MiB in 1  train/' -- ranks $R0 $R1 $L
ms_expect 0 '^ddp_rank0\.pickle .*  none  transformers/' -- ranks $R0 $R1 $L
"$BIN" summary --json $L | python3 -c '
import json, sys
d = json.load(sys.stdin)
for f in d["files"]:
    for x in f["devices"]: del x["leaks"]
print(json.dumps(d))' > "$T/old-leak.json"
ms_expect 0 '^leaked +unknown +0 B *$' -- diff "$T/old-leak.json" $N
ms_expect 0 ' A leaks 1 finding, 90\.09 MiB, \+30\.03 MiB per iteration; whether B leaks is unknown \(its summary has no leak figures\)\.' -- diff $L "$T/old-leak.json"
ms_expect 0 '^leak_layers\.pickle .* unknown  train/' -- ranks "$T/old-leak.json" $N
# JSON carries a phase's key ("optimizer"); summaries written by 0.2 carried its
# words ("optimizer step") and still read as the same phase.
"$BIN" summary --json testdata/leak_after_step.pickle | python3 -c '
import json, sys
d = json.load(sys.stdin)
place = d["files"][0]["devices"][0]["peak"]["place"]
assert place["phase"] == "optimizer", place
place["phase"] = "optimizer step"
print(json.dumps(d))' > "$T/old-phase.json" || { echo "FAIL: peak.place.phase is not the key"; fail=1; }
ms_expect 0 '^peak in phase +optimizer step +optimizer step +same' -- diff testdata/leak_after_step.pickle "$T/old-phase.json"
printf '{"files": [{"path": "x", "devices": [{"device": 0, "events": 1, "peak": {"bytes": 0, "time_us": 0, "event": 0}, "live_end": {"bytes": 0, "count": 0}, "reserved": {"peak_bytes": 0, "end_bytes": 0}, "leaks": {"findings": -1, "bytes": 0, "growth_per_iteration_bytes": 0}}]}]}' > "$T/badleaks.json"
ms_expect 2 'badleaks.json: summary JSON "findings" is negative' -- diff $R0 "$T/badleaks.json"

# Bad input: exit 2 with the file named, never a crash.
head -c 5000 /dev/urandom > "$T/random.bin"
printf '\x01\x02' >> "$T/random.bin"
printf 'hello' > "$T/text.txt"
: > "$T/empty.pickle"
head -c 300000 $R1 > "$T/cut.pickle"
printf '{"files": [{"path": "x"}]}' > "$T/nodev.json"
printf '{"files": [' > "$T/badjson.json"
printf '{"x": 1}' > "$T/other.json"
# One loop recorded twice with its forward moved 12 lines (v3_edit_a/b, truth: lines 16-18
# in a, 28-30 in b): one row per site, moved, and a verdict that says so rather than a
# site of +225 MiB "explaining" a change of 0.
EA=testdata/v3_edit_a.pickle EB=testdata/v3_edit_b.pickle
ms_expect 0 'train/edited_model.py:16 forward \(moved :16 → :28\)' -- diff $EA $EB
ms_expect 0 'Sites by change in bytes held at the peak: 0 changed, 2 moved' -- diff $EA $EB
ms_expect 0 'Sites that moved \(same file, function and callers, another line\): 3' -- diff $EA $EB
ms_expect 0 ':18 forward \(moved :18 → :30\)' -- diff $EA $EB
ms_expect 0 '^Verdict: .* 3 sites moved: .*The peaks agree; the same code holds the same memory, at other lines\.' -- diff $EA $EB
out=$("$BIN" diff $EA $EB 2>&1)
grep -q 'Sites only in' <<<"$out" && { echo "FAIL: moved sites listed as only in one file"; fail=1; }
grep -q 'most of it' <<<"$out" && { echo "FAIL: a moved site called most of a change of 0"; fail=1; }
json=$("$BIN" diff --json $EA $EB 2>&1)
grep -Eq '"b_site":[[:space:]]*"train/edited_model.py:28"' <<<"$json" || { echo "FAIL: diff --json lacks b_site"; fail=1; }
grep -Eq '"moved":[[:space:]]*\[[[:space:]]*\{' <<<"$json" || { echo "FAIL: diff --json lacks moved[]"; fail=1; }
# The same from summaries (the shapes travel in top_sites).
"$BIN" summary --json --top 100 $EA > "$T/ea.json" 2>/dev/null
"$BIN" summary --json --top 100 $EB > "$T/eb.json" 2>/dev/null
ms_expect 0 'train/edited_model.py:16 forward \(moved :16 → :28\)' -- diff "$T/ea.json" "$T/eb.json"

# "Most of it" is a part of the total: -56 MiB is not most of -50 MiB, nor -48 MiB of
# -640 KiB; the verdict names the larger changes on each side instead.
G=testdata/noleak_grad_accum.pickle H=testdata/leak_backward_hook.pickle
out=$("$BIN" diff $G $H 2>&1)
grep -q 'most of it' <<<"$out" && { echo "FAIL: a site larger than the change called most of it"; fail=1; }
ms_expect 0 'that is the net of larger changes at the peak: up at .*\(\+[0-9.]+ MiB\).*, down at .*\(-56\.00 MiB\)' -- diff $G $H
ms_expect 0 'most of it \(\+29\.30 MiB\) is held at the end by gpt2/modeling_gpt2.py:697' -- diff $R0 $R1

ms_expect 2 'text.txt: byte 0: neither a snapshot pickle' -- diff $R0 "$T/text.txt"
ms_expect 2 'empty.pickle: empty file' -- diff $R0 "$T/empty.pickle"
ms_expect 2 'cut.pickle: byte [0-9]+' -- diff $R0 "$T/cut.pickle"
ms_expect 2 'cut.pickle: byte [0-9]+' -- ranks $R0 $R1 "$T/cut.pickle"
ms_expect 2 'nodev.json: summary JSON file x lacks "devices"' -- diff $R0 "$T/nodev.json"
ms_expect 2 'badjson.json: byte [0-9]+: not valid JSON' -- diff $R0 "$T/badjson.json"
ms_expect 2 'other.json: JSON but not a `memsnap summary --json` document' -- diff $R0 "$T/other.json"
ms_expect 2 'no-such-file.pickle: No such file' -- diff $R0 "$T/no-such-file.pickle"
ms_expect 2 'device 7' -- diff $R0 $R1 --device 7
"$BIN" diff "$T/random.bin" $R0 >/dev/null 2>&1
st=$?
[ "$st" -eq 2 ] || { echo "FAIL: random bytes exited $st"; fail=1; }

finish diff
