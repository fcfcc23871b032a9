#!/usr/bin/env bash
# memsnap render from the command line: images written in the asked format and size,
# options that change the picture accepted, bad usage refused with exit code 2.
set -uo pipefail
source "$(dirname "$0")/common.bash"


# A PNG's size sits in its IHDR chunk: bytes 16..23, big-endian width then height.
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{printf "%dx%d", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'; }

renders() { # label file expected_size -- command...
  local label=$1 file=$2 size=$3; shift 4
  rm -f "$file"
  "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  if [ "$rc" -ne 0 ]; then bad "$label: rc $rc: $(head -c 300 "$tmp/err")"; return; fi
  if [ -s "$tmp/out" ]; then bad "$label: printed to stdout"; return; fi
  case "$file" in
    *.png)
      if [ "$(head -c 8 "$file" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ]; then
        bad "$label: not a PNG"; return; fi
      local got; got=$(png_size "$file")
      if [ "$got" != "$size" ]; then bad "$label: size $got, want $size"; return; fi ;;
    *)
      if ! head -c 200 "$file" | grep -q '<svg'; then bad "$label: not an SVG"; return; fi
      if command -v xmllint > /dev/null && ! xmllint --noout "$file" 2> "$tmp/xml"; then
        bad "$label: SVG not well-formed: $(head -c 200 "$tmp/xml")"; return; fi
      if ! grep -q "width=\"${size%x*}" "$file"; then bad "$label: SVG width not ${size%x*}"; return; fi ;;
  esac
  ok "$label"
}

renders "default png" "$tmp/a.png" 1600x800 -- "$bin" render testdata/gpt2_train.pickle -o "$tmp/a.png"
renders "svg by extension" "$tmp/a.svg" 1600x800 -- "$bin" render testdata/gpt2_train.pickle -o "$tmp/a.svg"
renders "--format overrides the extension" "$tmp/a.img" 1600x800 -- "$bin" render testdata/oom.pickle --format svg -o "$tmp/a.img"
renders "size, events axis, window, dark" "$tmp/b.png" 900x500 -- "$bin" render testdata/gpt2_train.pickle -o "$tmp/b.png" --width 900 --height 500 --x events --from 1000 --to 2000 --dark
renders "--by site --top 5" "$tmp/c.png" 1600x800 -- "$bin" render testdata/leak_layers.pickle -o "$tmp/c.png" --by site --top 5
renders "--by phase" "$tmp/d.png" 1600x800 -- "$bin" render testdata/gpt2_train.pickle -o "$tmp/d.png" --by phase
renders "--by category" "$tmp/k.png" 1600x800 -- "$bin" render testdata/cat_adamw.pickle -o "$tmp/k.png" --by category
renders "--by category svg, dark, leaks" "$tmp/k.svg" 1600x800 -- "$bin" render testdata/leak_layers.pickle -o "$tmp/k.svg" --by category --dark --leaks
renders "--by category panels" "$tmp/k2.png" 1600x1000 -- "$bin" render testdata/cat_adamw.pickle testdata/cat_infer.pickle -o "$tmp/k2.png" --by category
renders "--by category overlay" "$tmp/k3.png" 1600x800 -- "$bin" render testdata/cat_adamw.pickle testdata/cat_infer.pickle -o "$tmp/k3.png" --by category --overlay
renders "--title, --no-legend, --output=" "$tmp/e.png" 1200x600 -- "$bin" render testdata/streams.pickle --output="$tmp/e.png" --width=1200 --height=600 --title "streams" --no-legend
renders "two files as panels" "$tmp/f.png" 1600x1000 -- "$bin" render testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle -o "$tmp/f.png"
renders "two files overlaid" "$tmp/g.svg" 1600x800 -- "$bin" render testdata/noleak_layers.pickle testdata/leak_layers.pickle --overlay -o "$tmp/g.svg"
renders "explicit device" "$tmp/h.png" 1600x800 -- "$bin" render testdata/ddp_rank1.pickle --device 1 -o "$tmp/h.png"
renders "ring buffer wrapped" "$tmp/i.png" 1600x800 -- "$bin" render testdata/ring_wrap.pickle -o "$tmp/i.png"
renders "gzip input" "$tmp/j.png" 1600x800 -- bash -c "gzip -c testdata/linear_infer.pickle > '$tmp/l.pickle.gz' && '$bin' render '$tmp/l.pickle.gz' -o '$tmp/j.png'"

# By category is its own picture, not the default one under another name.
if [ -s "$tmp/k.png" ] && "$bin" render testdata/cat_adamw.pickle -o "$tmp/k0.png" 2> /dev/null &&
   ! cmp -s "$tmp/k.png" "$tmp/k0.png"; then ok "--by category differs from --by alloc"
else bad "--by category drew the same image as --by alloc"; fi

# Provenance: the PNG's tEXt chunks and the SVG's <metadata> name memsnap and its
# version, the input file, the title and the exact peak (the allocator's counter).
version=$("$bin" --version | awk '{print $2}')
peak=$(python3 -c "import json; print(json.load(open('testdata/gpt2_train.truth.json'))['counters_at_end']['requested_bytes.all.peak'])")
provenance() { # label file pattern...
  local label=$1 file=$2; shift 2
  tr '\0' '=' < "$file" > "$tmp/text" # a chunk's keyword ends with a NUL byte: = here
  for want in "$@"; do
    if ! LC_ALL=C grep -aqF -- "$want" "$tmp/text"; then
      bad "$label: no '$want'"; return; fi
  done
  ok "$label"
}
provenance "PNG texts" "$tmp/a.png" "tEXtSoftware"="memsnap $version" \
  "tEXtSource"="gpt2_train.pickle" "tEXtTitle"="gpt2_train.pickle" \
  "tEXtPeak"="$peak bytes"
provenance "SVG metadata" "$tmp/a.svg" "<ms:Software>memsnap $version</ms:Software>" \
  "<ms:Source>gpt2_train.pickle</ms:Source>" "<ms:Peak>$peak bytes" "<title>gpt2_train.pickle"
provenance "panels name both files" "$tmp/f.png" \
  "tEXtSource"="ddp_rank0.pickle, ddp_rank1.pickle"
# memsnap report's charts are written by the same writer and say the same.
if "$bin" report testdata/ddp_rank0.pickle testdata/ddp_rank1.pickle -o "$tmp/rep" > /dev/null 2>&1; then
  provenance "report's timeline PNG" "$tmp/rep/timeline-ddp_rank0.png" \
    "tEXtSoftware=memsnap $version" "tEXtSource=ddp_rank0.pickle" "tEXtPeak=586899464 bytes"
  provenance "report's ranks PNG" "$tmp/rep/ranks.png" \
    "tEXtSource=ddp_rank0.pickle, ddp_rank1.pickle"
else
  bad "memsnap report failed"
fi

expect "help" 0 "usage: memsnap render" -- "$bin" render --help
expect "no output" 2 "no output image" -- "$bin" render testdata/oom.pickle
expect "no input" 2 "no input file" -- "$bin" render -o "$tmp/x.png"
expect "unknown extension" 2 "unknown image format 'jpg'" -- "$bin" render testdata/oom.pickle -o "$tmp/x.jpg"
expect "no extension" 2 "cannot tell the image format" -- "$bin" render testdata/oom.pickle -o "$tmp/x"
expect "unknown format" 2 "unknown image format 'gif'" -- "$bin" render testdata/oom.pickle --format gif -o "$tmp/x.png"
expect "unknown option" 2 "unknown option '--bogus'" -- "$bin" render --bogus testdata/oom.pickle -o "$tmp/x.png"
expect "bad --width" 2 "--width: 'wide' is not an integer" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --width wide
expect "too small" 2 "--height: '10' is not an integer in 200" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --height 10
expect "bad --x" 2 "--x takes 'run', 'time' or 'events'" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --x pixels
expect "bad --by" 2 "--by takes 'alloc', 'site', 'phase', 'category', 'compile' or 'group'" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --by colour
expect "--by group without rules" 2 "--by group needs at least one --group NAME=REGEX" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --by group
expect "--group without --by group" 2 "--group draws only with --by group" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --group 'a=b'
expect "--group without =" 2 "--group 'ab': expected NAME=REGEX" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --by group --group ab
expect "--group bad regex" 2 "--group 'a=\(': bad pattern at byte 1: missing closing parenthesis" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --by group --group 'a=('
expect "--group name twice" 2 "the name 'a' is used twice" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --by group --group 'a=x' --group 'a=y'
rm -f "$tmp/m.json"
if "$bin" render testdata/gpt2_train.pickle --format json -o "$tmp/m.json" > "$tmp/out" 2>&1 &&
   [ ! -s "$tmp/out" ] && jq -e '.panels | length == 1' "$tmp/m.json" > /dev/null &&
   jq -e '.panels[0].plot | length == 4' "$tmp/m.json" > /dev/null &&
   jq -e '.panels[0].x.kind == "run"' "$tmp/m.json" > /dev/null &&
   jq -e '[.panels[0].labels[].kind] | index("peak") != null' "$tmp/m.json" > /dev/null; then
  ok "--format json writes the chart model"
else
  bad "--format json: $(head -c 300 "$tmp/out")"
fi
# The per-pixel minimum (and its legend entry) only where hills are narrower than a
# column: not on gpt2_train's hills, 130 px wide; on noleak_grad_accum squeezed into 400 px
# of linear time, where a quarter of the columns hide whole micro-steps.
"$bin" render testdata/gpt2_train.pickle --format json -o "$tmp/wide.json" 2> "$tmp/err"
"$bin" render testdata/noleak_grad_accum.pickle --x time --width 400 --format json -o "$tmp/thin.json" 2>> "$tmp/err"
if jq -e '[.panels[0].legend[].label | select(startswith("per-pixel minimum"))] | length == 0' "$tmp/wide.json" > /dev/null &&
   jq -e '[.panels[0].legend[].label | select(startswith("per-pixel minimum"))] | length == 1' "$tmp/thin.json" > /dev/null; then
  ok "per-pixel minimum only for sub-pixel hills"
else
  bad "per-pixel minimum legend: $(head -c 300 "$tmp/err")"
fi
renders "--by group" "$tmp/g.png" 1600x800 -- "$bin" render testdata/gpt2_train.pickle -o "$tmp/g.png" --by group --group 'attention=modeling_gpt2.py:[0-9]+ forward' --group 'hf=transformers/'

expect "--by category help" 0 "alloc\|site\|phase\|category" -- "$bin" render --help
expect "panels too low" 2 "less than 200 pixels per panel" -- "$bin" render testdata/oom.pickle testdata/streams.pickle -o "$tmp/x.png" --height 300
expect "window past the end" 2 "the window from 100 to .* is empty" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --from 100
expect "empty window" 2 "--to must be after --from" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --from 2 --to 1
renders "phase without annotations: the phases found from stacks" "$tmp/ph.png" 1600x800 -- "$bin" render testdata/linear_infer.pickle -o "$tmp/ph.png" --by phase
expect "device out of range" 2 "no device 7" -- "$bin" render testdata/oom.pickle -o "$tmp/x.png" --device 7
expect "missing file" 2 "nope.pickle" -- "$bin" render "$tmp/nope.pickle" -o "$tmp/x.png"
expect "unwritable output" 2 "x.png" -- "$bin" render testdata/oom.pickle -o "$tmp/no/such/dir/x.png"
finish render
