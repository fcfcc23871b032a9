#!/usr/bin/env bash
# Captures every command's output on every testdata snapshot into DIR, or compares a
# fresh capture against DIR byte for byte (for refactors that must not change behaviour).
#   bash tests/arch_compare.sh capture MEMSNAP DIR
#   bash tests/arch_compare.sh compare MEMSNAP DIR
set -uo pipefail
cd "$(dirname "$0")/.."
mode=$1 bin=$2 dir=$3
out=$dir; [ "$mode" = compare ] && out=$(mktemp -d)
mkdir -p "$out"
for f in testdata/*.pickle; do
  n=$(basename "$f" .pickle)
  "$bin" summary --json "$f" > "$out/$n.summary.json" 2>&1; echo "rc=$?" >> "$out/$n.summary.json"
  "$bin" summary "$f" > "$out/$n.summary.txt" 2>&1; echo "rc=$?" >> "$out/$n.summary.txt"
  "$bin" leaks --json "$f" > "$out/$n.leaks.json" 2>&1; echo "rc=$?" >> "$out/$n.leaks.json"
  "$bin" render "$f" -o "$out/$n.png" > /dev/null 2>&1
  "$bin" render "$f" -o "$out/$n.svg" > /dev/null 2>&1
  if [ "${ARCH_COMPARE_ALL:-0}" = 1 ]; then
    # Every command and grouping, for refactors across the views (slower: ~1 min).
    for c in "leaks --stack" "categories" "categories --json --explain" "oom" "oom --json"; do
      k=$(echo "$c" | tr -d ' -')
      $bin $c "$f" > "$out/$n.$k.txt" 2>&1; echo "rc=$?" >> "$out/$n.$k.txt"
    done
    for by in site phase category; do
      "$bin" render --by $by "$f" -o "$out/$n.$by.svg" > "$out/$n.$by.log" 2>&1; echo "rc=$?" >> "$out/$n.$by.log"
    done
    "$bin" render --leaks --x events "$f" -o "$out/$n.leaks.svg" > /dev/null 2>&1
    "$bin" view "$f" -o "$out/$n.view.html" > "$out/$n.view.log" 2>&1; echo "rc=$?" >> "$out/$n.view.log"
  fi
done
if [ "${ARCH_COMPARE_ALL:-0}" = 1 ]; then
  for f in testdata/bad/*.pickle; do
    n=bad.$(basename "$f" .pickle)
    for c in summary leaks categories oom; do
      "$bin" $c "$f" > "$out/$n.$c.txt" 2>&1; echo "rc=$?" >> "$out/$n.$c.txt"
    done
  done
  : > "$out/fuzz.summary.txt"
  for f in tests/fuzz/corpus/*; do
    echo "== $(basename "$f")" >> "$out/fuzz.summary.txt"
    "$bin" summary --json "$f" >> "$out/fuzz.summary.txt" 2>&1; echo "rc=$?" >> "$out/fuzz.summary.txt"
  done
fi
pair() { "$bin" diff --json "testdata/$1.pickle" "testdata/$2.pickle" > "$out/diff.$1.$2.json" 2>&1; echo "rc=$?" >> "$out/diff.$1.$2.json"; }
pair ddp_rank0 ddp_rank1; pair leak_layers noleak_layers; pair noleak_layers leak_layers
pair gpt2_train linear_infer; pair noleak_grad_accum leak_backward_hook
# diff and ranks reading summaries back (the summary-JSON path), and a bad summary.
tmp=$(mktemp -d)
"$bin" summary --json testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle > "$tmp/ranks.json" 2>/dev/null
"$bin" summary --json --top 3 testdata/leak_layers.pickle > "$tmp/leak.json" 2>/dev/null
echo '{"files":[{"path":"x","devices":[{"device":0,"events":1,"peak":{}}]}]}' > "$tmp/bad.json"
"$bin" diff --json "$tmp/ranks.json" > "$out/diff.summaryjson.json" 2>&1; echo "rc=$?" >> "$out/diff.summaryjson.json"
"$bin" diff "$tmp/leak.json" testdata/noleak_layers.pickle > "$out/diff.mixed.txt" 2>&1; echo "rc=$?" >> "$out/diff.mixed.txt"
"$bin" ranks --json "$tmp/ranks.json" testdata/ddp_rank0.pickle > "$out/ranks.json" 2>&1; echo "rc=$?" >> "$out/ranks.json"
"$bin" diff "$tmp/bad.json" testdata/ddp_rank0.pickle > "$out/diff.bad.txt" 2>&1; echo "rc=$?" >> "$out/diff.bad.txt"
sed -i "s|$tmp|TMP|g" "$out"/diff.summaryjson.json "$out"/diff.mixed.txt "$out"/ranks.json "$out"/diff.bad.txt
rm -rf "$tmp"
if [ "$mode" = compare ]; then
  bad=0
  for a in "$dir"/*; do
    b=$out/$(basename "$a")
    cmp -s "$a" "$b" || { echo "DIFFERS: $(basename "$a")"; bad=1; }
  done
  [ "$(ls "$dir" | wc -l)" = "$(ls "$out" | wc -l)" ] || { echo "file count differs"; bad=1; }
  [ $bad = 0 ] && echo "all $(ls "$dir" | wc -l) outputs byte-identical"
  rm -rf "$out"; exit $bad
fi
echo "captured $(ls "$out" | wc -l) files in $out"
