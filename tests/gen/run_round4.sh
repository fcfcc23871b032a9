#!/bin/bash
# Record the snapshots of scenarios_shapes.py (issue 33), scenarios_verdicts3.py (issue 35)
# and scenarios_segments.py (issues 37, 36) on a GPU machine, one process each, each under
# its own timeout, in four lanes side by side (the GPU has room; the OOM scenarios set a
# per-process limit). Every NAME.pickle + NAME.truth.json (and logs/NAME.log) is packed into
# $OUT/round4.tar.xz (split into round4.tar.xz.partNN if over 15 MiB).
# Usage there:  OUT=/some/dir [DEADLINE=seconds] bash run_round4.sh [scenario ...]
# DEADLINE (seconds from the start, default 530) shortens the last timeouts and skips what
# no longer fits, so the packing always runs.
# Scripts are copied to /home/ml/train first, so stack frames name a neutral path.
set -u
source "$(dirname "$0")/train_dir.bash"
rec=${REC:-/tmp/round4}; rm -rf "$rec"; mkdir -p "$rec/logs"
export PYTHONUNBUFFERED=1
deadline=${DEADLINE:-530}
t_start=$(date +%s)

script_of() {
  case $1 in shape_*) echo scenarios_shapes.py ;; v3_*) echo scenarios_verdicts3.py ;;
             seg_*) echo scenarios_segments.py ;; *) echo unknown ;; esac
}
conf_of() {
  case $1 in seg_expandable) echo expandable_segments:True ;; seg_max_split) echo max_split_size_mb:20 ;;
             seg_roundup) echo roundup_power2_divisions:4 ;; *) echo "" ;; esac
}
limit_of() {
  case $1 in shape_compile_autotune) echo 300 ;; shape_reduce_overhead) echo 180 ;; *) echo 60 ;; esac
}

one() {
  local s=$1 lim left t0 rc dt
  lim=$(limit_of $s)
  left=$(( deadline - ($(date +%s) - t_start) ))
  if [ $left -lt 20 ]; then echo "SKIPPED $s (no time left)"; return; fi
  [ $lim -gt $left ] && lim=$left
  t0=$(date +%s.%N)
  (cd $here && PYTORCH_CUDA_ALLOC_CONF=$(conf_of $s) timeout -k 5 $lim python3 $(script_of $s) "$rec" "$s") \
    > "$rec/logs/$s.log" 2>&1
  rc=$?
  dt=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
  if grep -q "^ok $s " "$rec/logs/$s.log" && [ -f "$rec/$s.pickle" ] && [ -f "$rec/$s.truth.json" ]; then
    echo "ok $s ${dt}s $(stat -c %s "$rec/$s.pickle") bytes"
  else
    echo "FAILED $s rc=$rc ${dt}s (limit ${lim}s): $(grep -E 'Error|error|Exception' "$rec/logs/$s.log" | tail -1 | cut -c1-300)"
    grep -vE '^\s*$' "$rec/logs/$s.log" | tail -6 | cut -c1-300 | sed 's/^/    /'
  fi
}
lane() { for s in "$@"; do one $s; done; }

if [ $# -gt 0 ]; then
  lane "$@"
else
  lane shape_compile_autotune &
  lane shape_reduce_overhead shape_eager_twin seg_churn seg_expandable seg_max_split seg_late_start seg_roundup &
  lane shape_forward_kept shape_fwd_bwd shape_one_step shape_bench_loop shape_infer_loop v3_pauses v3_metric_leak &
  lane v3_oom_bystander v3_oom_deep_growing v3_lazy_adamw v3_lazy_sgd v3_edit_a v3_edit_b &
  wait
fi
echo "recorded in $(( $(date +%s) - t_start )) s"
(cd "$rec" && ls -l --time-style=+ *.pickle *.truth.json 2>/dev/null | awk '{print $5, $NF}')
(cd "$rec" && tar -cf - --sort=name *.pickle *.truth.json logs 2>/dev/null) | xz -T0 -6 > "$out/round4.tar.xz"
if [ "$(stat -c %s "$out/round4.tar.xz")" -gt $((15 * 1024 * 1024)) ]; then
  (cd "$out" && split -b 15M -d round4.tar.xz round4.tar.xz.part && rm round4.tar.xz)
fi
ls -l "$out"
echo "total $(( $(date +%s) - t_start )) s"
