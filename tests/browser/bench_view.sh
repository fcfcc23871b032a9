#!/usr/bin/env bash
# The interactive timeline on the 4M-event benchmark trace, driven in Chromium: page at
# most 10 MB, chart drawn within 3 s, a zoom into one iteration shows its own bands; the
# same for the report's index.html.
# Runs when the benchmark file sits beside the clone (../shared/bench/long_trace.pickle.xz,
# or MEMSNAP_BENCH_TRACE=FILE); otherwise skips (exit 77). Usage: bench_view.sh MEMSNAP
set -euo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
trace=${MEMSNAP_BENCH_TRACE:-}
xz=$here/../../../shared/bench/long_trace.pickle.xz
tmp=$(mktemp -d /tmp/memsnap-bench-view-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$trace" ]; then
  if [ ! -f "$xz" ]; then
    echo "bench_view: SKIPPED: no $xz"
    exit 77
  fi
  trace=$tmp/long_trace.pickle
  xz -dc "$xz" > "$trace"
fi
python3 "$here/view_test.py" "$bin" "$trace" --report --zoom-iteration --max-bytes 10485760 --max-load 3 \
  --keep "$tmp/out"
