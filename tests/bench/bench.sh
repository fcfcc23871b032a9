#!/usr/bin/env bash
# Benchmark: memsnap against Python's pickle.load on the real 4.08M-event snapshot.
# Not a test: it prints medians of repeated runs and peak RSS, for docs/benchmarks.md.
#
#   bash tests/bench/bench.sh [RUNS]          (default 5 rounds: one run of each command per round)
#
# Environment: MEMSNAP (binary; default: a Release build in build-bench/),
# BENCH_XZ (default ../shared/bench/long_trace.pickle.xz), BENCH_DIR (where the
# decompressed file is kept; default a temp dir removed at exit).
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
file=$BENCH_DIR/$(basename "$xz_file" .xz)
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

echo "file: $file ($size bytes), $runs rounds, $(nproc) cores" >&2
has_render=0
"$MEMSNAP" render --help >/dev/null 2>&1 && has_render=1
for round in $(seq "$runs"); do
  echo "round $round" >&2
  run_once summary "$MEMSNAP" summary "$file"
  cp "$out/stdout" "$out/summary.txt"
  run_once summary_1t env MEMSNAP_THREADS=1 "$MEMSNAP" summary "$file"
  # Two threads or one, the report must be the same byte for byte.
  cmp -s "$out/stdout" "$out/summary.txt" || { echo "summary differs with MEMSNAP_THREADS=1" >&2; exit 1; }
  run_once summary_json "$MEMSNAP" summary --json "$file"
  run_once python python3 -c "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))" "$file"
  if [ "$has_render" = 1 ]; then
    run_once render_png "$MEMSNAP" render "$file" -o "$out/long.png"
    run_once render_svg "$MEMSNAP" render "$file" -o "$out/long.svg"
  fi
done
ms_t=$(median "${times[summary]}"); ms_rss=${rss[summary]}
js_t=$(median "${times[summary_json]}"); js_rss=${rss[summary_json]}
one_t=$(median "${times[summary_1t]}"); one_rss=${rss[summary_1t]}
py_t=$(median "${times[python]}"); py_rss=${rss[python]}
render_line=""
if [ "$has_render" = 1 ]; then
  render_line="| memsnap render -o long.png | $(median "${times[render_png]}") s | $((rss[render_png] / 1024)) MiB | $(stat -c %s "$out/long.png") bytes PNG |
| memsnap render -o long.svg | $(median "${times[render_svg]}") s | $((rss[render_svg] / 1024)) MiB | $(stat -c %s "$out/long.svg") bytes SVG |"
fi
rm -rf "$out"

mib=$((size / 1048576))
speedup=$(awk -v a="$py_t" -v b="$ms_t" 'BEGIN {printf "%.1f", a / b}')
speedup_1t=$(awk -v a="$py_t" -v b="$one_t" 'BEGIN {printf "%.1f", a / b}')
cat <<MD
Benchmark on $(date -u +%Y-%m-%d), $(nproc) cores, medians of $runs runs (run in rounds), file $size bytes ($mib MiB):

| command | median wall time | peak RSS | note |
|---|---|---|---|
| memsnap summary | $ms_t s | $((ms_rss / 1024)) MiB | ${speedup}x faster than pickle.load; RSS $(awk -v r="$ms_rss" -v s="$size" 'BEGIN {printf "%.2f", r * 1024 / s}') x file size |
| memsnap summary --json | $js_t s | $((js_rss / 1024)) MiB | |
| MEMSNAP_THREADS=1 memsnap summary | $one_t s | $((one_rss / 1024)) MiB | one thread: ${speedup_1t}x; same output as with two |
| python3 pickle.load | $py_t s | $((py_rss / 1024)) MiB | RSS $(awk -v r="$py_rss" -v s="$size" 'BEGIN {printf "%.1f", r * 1024 / s}') x file size |
$render_line
MD
