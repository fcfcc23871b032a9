#!/usr/bin/env bash
# Benchmark: memsnap against Python's pickle.load on the real 4.08M-event snapshot.
# Not a test: it prints medians of repeated runs and peak RSS, for docs/benchmarks.md.
#
#   bash tests/bench/bench.sh [RUNS]          (default 5 rounds: one run of each command per round)
#
# Environment: MEMSNAP (binary; default: a Release build in build-bench/),
# BENCH_FILE (an uncompressed pickle to time instead, e.g. the 1 GB-class recording of
# ../shared/gen/long_all_stacks.py; never committed),
# BENCH_XZ (default ../shared/bench/long_trace.pickle.xz), BENCH_DIR (where the
# decompressed file is kept; default a temp dir removed at exit), BASELINE (optional: an
# older memsnap binary whose `summary`, `view` and `report` run in the same rounds, so a
# change's cost is measured against the code before it under the same machine drift).
# Every round also reads the file alone, the floor every command stands on: `cat FILE >
# /dev/null` and a memory-mapped pass that touches every page (Python's mmap, one byte a
# page; about 20 ms of it is Python starting); and, where a C compiler is at hand,
# tests/bench/opwalk.c, which decodes every opcode on one core and builds nothing (a
# reference point, not a floor: memsnap's readers match whole entries instead), and
# tests/bench/floor.c, a reader's floor: every byte looked at on two threads with the
# mapped pages handed back behind, alone and with 31 bytes an event of model written
# (memsnap's trace arrays), the least a reader that keeps the events pays here.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
xz_file=${BENCH_XZ:-../shared/bench/long_trace.pickle.xz}
if [ -z "${MEMSNAP:-}" ]; then
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-bench -j2 --target memsnap >/dev/null
  MEMSNAP=build-bench/memsnap
fi
if [ -z "${BENCH_DIR:-}" ]; then
  BENCH_DIR=$(mktemp -d)
  trap 'rm -rf "$BENCH_DIR"' EXIT
fi
file=${BENCH_FILE:-$BENCH_DIR/$(basename "$xz_file" .xz)}
if [ ! -s "$file" ]; then
  echo "decompressing $xz_file ..." >&2
  xz -dc "$xz_file" > "$file"
fi
size=$(stat -c %s "$file")
out=$(mktemp -d)

# The machine's speed drifts for seconds at a time (shared host), so the commands run in
# rounds, one run of each per round, and every command sees the same slow and fast
# phases; the medians are then comparable. Each run: wall seconds and peak RSS.
declare -A times rss
run_once() { # KEY CMD...
  local key=$1; shift
  /usr/bin/time -f "%e %M" -o "$out/t" "$@" > "$out/stdout" 2> "$out/stderr" || {
    echo "$key failed: $(head -c 300 "$out/stderr")" >&2; return 1; }
  read -r t m < "$out/t"
  times[$key]="${times[$key]:-} $t"
  [ "${rss[$key]:-0}" -lt "$m" ] && rss[$key]=$m
  echo "  $key: ${t}s, ${m} KiB" >&2
}
median() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
has() { "$MEMSNAP" "$1" --help >/dev/null 2>&1; }
# with_baseline KEY DST BASE_DST ARGS...: memsnap ARGS -o $out/DST, timed as KEY, into a
# fresh DST; with BASELINE set, the baseline's binary too (baseline_KEY, into BASE_DST).
with_baseline() {
  local key=$1 dst=$2 bdst=$3; shift 3
  rm -rf "${out:?}/$dst"
  run_once "$key" "$MEMSNAP" "$@" -o "$out/$dst"
  if [ -n "${BASELINE:-}" ]; then
    rm -rf "${out:?}/$bdst"
    run_once "baseline_$key" "$BASELINE" "$@" -o "$out/$bdst"
  fi
}

echo "file: $file ($size bytes), $runs rounds, $(nproc) cores" >&2
keys="cat mmap summary summary_1t summary_json python"
# tests/bench/NAME.c built into $out/NAME, where a C compiler is at hand.
build_tool() { # NAME [CFLAGS...]
  command -v "${CC:-cc}" >/dev/null 2>&1 &&
    "${CC:-cc}" -O2 "${@:2}" -o "$out/$1" "tests/bench/$1.c" 2>/dev/null
}
opwalk=""
if build_tool opwalk; then
  opwalk=$out/opwalk
  keys="cat mmap opwalk summary summary_1t summary_json python"
fi
floor_bin=""
if build_tool floor -pthread; then
  floor_bin=$out/floor
  # The model's size: the events summary finds (every device's).
  events=$("$MEMSNAP" summary "$file" | awk '/^device .* events over /{s += $3} END {print s + 0}')
  keys=${keys/mmap/mmap floor floor_model}
fi
touch_pages='import mmap, sys
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print(sum(m[i] for i in range(0, len(m), mmap.PAGESIZE)))'
for round in $(seq "$runs"); do
  echo "round $round" >&2
  run_once cat sh -c 'cat "$1" > /dev/null' cat "$file"
  run_once mmap python3 -c "$touch_pages" "$file"
  if [ -n "$floor_bin" ]; then
    run_once floor "$floor_bin" "$file"
    run_once floor_model "$floor_bin" "$file" "$events"
  fi
  if [ -n "$opwalk" ]; then
    run_once opwalk "$opwalk" "$file"
    cp "$out/stdout" "$out/opwalk.txt"
  fi
  run_once summary "$MEMSNAP" summary "$file"
  cp "$out/stdout" "$out/summary.txt"
  run_once summary_1t env MEMSNAP_THREADS=1 "$MEMSNAP" summary "$file"
  # Two threads or one, the report must be the same byte for byte.
  cmp -s "$out/stdout" "$out/summary.txt" || { echo "summary differs with MEMSNAP_THREADS=1" >&2; exit 1; }
  run_once summary_json "$MEMSNAP" summary --json "$file"
  if [ -n "${BASELINE:-}" ]; then
    run_once baseline "$BASELINE" summary "$file"
  fi
  run_once python python3 -c "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))" "$file"
  # The analyses, each a whole command as a user runs it (read + analysis + output).
  if has leaks; then run_once leaks "$MEMSNAP" leaks "$file"; fi
  if has categories; then run_once categories "$MEMSNAP" categories "$file"; fi
  if has segments; then
    # The allocator's state at 1,000 instants spread evenly over the events, from one
    # replay (the issue's goal: at most 1.5x summary), text and JSON.
    [ -n "${seg_args:-}" ] || seg_args=$("$MEMSNAP" summary "$file" |
      awk '/^device .* events over /{n = $3} END {for (k = 0; k < 1000; k++) printf " --event %d", int((n - 1) * k / 999)}')
    # shellcheck disable=SC2086
    run_once segments_1000 "$MEMSNAP" segments "$file" $seg_args
    # shellcheck disable=SC2086
    run_once segments_1000_json "$MEMSNAP" segments --json "$file" $seg_args
    cp "$out/stdout" "$out/segments.json"
  fi
  if has render; then
    run_once render_png "$MEMSNAP" render "$file" -o "$out/long.png"
    run_once render_svg "$MEMSNAP" render "$file" -o "$out/long.svg"
    if "$MEMSNAP" render --help | grep -q 'category'; then
      run_once render_category "$MEMSNAP" render --by category "$file" -o "$out/long-cat.png"
    fi
  fi
  if has view; then
    with_baseline view view.html view-base.html view "$file"
  fi
  if has report; then
    with_baseline report report report-base report "$file"
  fi
done
[ -n "${BASELINE:-}" ] && keys="$keys baseline"
for k in leaks categories segments_1000 segments_1000_json render_png render_svg render_category view baseline_view report baseline_report; do
  [ -n "${times[$k]:-}" ] && keys="$keys $k"
done

ms_t=$(median "${times[summary]}")
cat_t=$(median "${times[cat]}")
py_t=$(median "${times[python]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
note() { # KEY: what the row is measured against
  case $1 in
    summary) echo "$(ratio "$py_t" "$ms_t")x faster than pickle.load; RSS $(awk -v r="${rss[summary]}" -v s="$size" 'BEGIN {printf "%.2f", r * 1024 / s}') x file size" ;;
    summary_1t) echo "one thread: $(ratio "$py_t" "$(median "${times[summary_1t]}")")x; same output as with two" ;;
    python) echo "RSS $(awk -v r="${rss[python]}" -v s="$size" 'BEGIN {printf "%.1f", r * 1024 / s}') x file size" ;;
    baseline) echo "summary of the BASELINE binary; this code's summary is $(ratio "$ms_t" "$(median "${times[baseline]}")")x its time" ;;
    render_png) echo "$(stat -c %s "$out/long.png") bytes PNG" ;;
    render_svg) echo "$(stat -c %s "$out/long.svg") bytes SVG" ;;
    render_category) echo "$(stat -c %s "$out/long-cat.png") bytes PNG" ;;
    segments_1000|segments_1000_json) echo "$(ratio "$(median "${times[$1]}")" "$ms_t")x summary" ;;
    view) echo "$(stat -c %s "$out/view.html") bytes HTML; $(ratio "$(median "${times[view]}")" "$ms_t")x summary" ;;
    report) echo "index.html $(stat -c %s "$out/report/index.html") bytes; $(ratio "$(median "${times[report]}")" "$ms_t")x summary" ;;
    cat) echo "the reading floor: a plain read of the file" ;;
    mmap) echo "every page of the mapped file touched once" ;;
    floor) echo "mapped, two threads, pages handed back behind; summary is $(ratio "$ms_t" "$(median "${times[floor]}")")x its time" ;;
    floor_model) echo "and $events events x 31 bytes written; summary is $(ratio "$ms_t" "$(median "${times[floor_model]}")")x its time" ;;
    opwalk) echo "$(cut -d, -f1 "$out/opwalk.txt"), one core, nothing built; summary is $(ratio "$ms_t" "$(median "${times[opwalk]}")")x its time" ;;
    baseline_view|baseline_report) echo "the BASELINE binary; $(ratio "$(median "${times[$1]}")" "$ms_t")x summary" ;;
    *) echo "$(ratio "$(median "${times[$1]}")" "$ms_t")x summary" ;;
  esac
}
floor() { # KEY: how far above the plain read
  case $1 in cat) echo "1x" ;; *) echo "$(ratio "$(median "${times[$1]}")" "$cat_t")x" ;; esac
}
label() {
  case $1 in
    summary) echo "memsnap summary" ;; summary_1t) echo "MEMSNAP_THREADS=1 memsnap summary" ;;
    summary_json) echo "memsnap summary --json" ;; python) echo "python3 pickle.load" ;;
    baseline) echo "BASELINE summary" ;; render_png) echo "memsnap render -o long.png" ;;
    render_svg) echo "memsnap render -o long.svg" ;; render_category) echo "memsnap render --by category -o long-cat.png" ;;
    view) echo "memsnap view -o view.html" ;; report) echo "memsnap report -o DIR" ;;
    cat) echo "cat FILE > /dev/null" ;; mmap) echo "mmap, touch every page" ;;
    opwalk) echo "decode every opcode (tests/bench/opwalk.c)" ;;
    floor) echo "every byte on two threads (tests/bench/floor.c)" ;;
    floor_model) echo "every byte on two threads, and the model written" ;;
    baseline_view) echo "BASELINE view" ;; baseline_report) echo "BASELINE report" ;;
    segments_1000) echo "memsnap segments --event ... (1,000 instants)" ;;
    segments_1000_json) echo "memsnap segments --json --event ... (1,000 instants; $(stat -c %s "$out/segments.json") bytes)" ;;
    *) echo "memsnap $1" ;;
  esac
}

mib=$((size / 1048576))
echo "Benchmark on $(date -u +%Y-%m-%d), $(nproc) cores, medians of $runs runs (run in rounds), file $size bytes ($mib MiB):"
echo
echo "| command | median wall time | vs cat | peak RSS | note |"
echo "|---|---|---|---|---|"
for k in $keys; do
  echo "| $(label "$k") | $(median "${times[$k]}") s | $(floor "$k") | $((rss[$k] / 1024)) MiB | $(note "$k") |"
done
rm -rf "$out"
