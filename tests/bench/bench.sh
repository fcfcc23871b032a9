#!/usr/bin/env bash
# Benchmark: memsnap against Python's pickle.load on the real 4.08M-event snapshot.
# Not a test: it prints medians of repeated runs and peak RSS, for docs/benchmarks.md.
#
#   bash tests/bench/bench.sh [RUNS]          (default 5 runs each)
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
file=$BENCH_DIR/long_trace.pickle
if [ ! -s "$file" ]; then
  echo "decompressing $xz_file ..." >&2
  xz -dc "$xz_file" > "$file"
fi
size=$(stat -c %s "$file")
out=$(mktemp -d)

# measure LABEL CMD...: RUNS runs; prints "median_seconds max_rss_kib"
measure() {
  local label=$1; shift
  local times=() rss=0
  for i in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$out/t" "$@" > "$out/stdout" 2> "$out/stderr" || {
      echo "$label failed: $(head -c 300 "$out/stderr")" >&2; return 1; }
    read -r t m < "$out/t"
    times+=("$t"); [ "$m" -gt "$rss" ] && rss=$m
    echo "  $label run $i: ${t}s, ${m} KiB" >&2
  done
  local median
  median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
  echo "$median $rss"
}

echo "file: $file ($size bytes), $runs runs each, $(nproc) cores" >&2
read -r ms_t ms_rss < <(measure "memsnap summary" "$MEMSNAP" summary "$file")
read -r js_t js_rss < <(measure "memsnap summary --json" "$MEMSNAP" summary --json "$file")
read -r py_t py_rss < <(measure "python3 pickle.load" python3 -c "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))" "$file")
render_line=""
if "$MEMSNAP" render --help >/dev/null 2>&1; then
  if read -r rp_t rp_rss < <(measure "memsnap render png" "$MEMSNAP" render "$file" -o "$out/long.png"); then
    read -r rs_t rs_rss < <(measure "memsnap render svg" "$MEMSNAP" render "$file" -o "$out/long.svg")
    render_line="| memsnap render -o long.png | $rp_t s | $((rp_rss / 1024)) MiB | $(stat -c %s "$out/long.png") bytes PNG |
| memsnap render -o long.svg | $rs_t s | $((rs_rss / 1024)) MiB | $(stat -c %s "$out/long.svg") bytes SVG |"
  fi
fi
rm -rf "$out"

mib=$((size / 1048576))
speedup=$(awk -v a="$py_t" -v b="$ms_t" 'BEGIN {printf "%.1f", a / b}')
cat <<MD
Benchmark on $(date -u +%Y-%m-%d), $(nproc) cores, medians of $runs runs, file $size bytes ($mib MiB):

| command | median wall time | peak RSS | note |
|---|---|---|---|
| memsnap summary | $ms_t s | $((ms_rss / 1024)) MiB | ${speedup}x faster than pickle.load; RSS $(awk -v r="$ms_rss" -v s="$size" 'BEGIN {printf "%.2f", r * 1024 / s}') x file size |
| memsnap summary --json | $js_t s | $((js_rss / 1024)) MiB | |
| python3 pickle.load | $py_t s | $((py_rss / 1024)) MiB | RSS $(awk -v r="$py_rss" -v s="$size" 'BEGIN {printf "%.1f", r * 1024 / s}') x file size |
$render_line
MD
