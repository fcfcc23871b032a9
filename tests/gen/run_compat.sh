#!/bin/bash
# Record the snapshots of scenarios_compat.py and scenarios_verdicts.py on a GPU machine,
# one process each, each under its own timeout.
# Usage there:  OUT=/some/dir [DEADLINE=seconds] bash run_compat.sh [scenario ...]
# With no names, two lanes run side by side (the GPU has room for both): the compile
# scenarios, most important first, and the eager ones. DEADLINE (seconds from the start)
# shortens the last timeouts and skips what no longer fits.
# Scripts are copied to /home/ml/train first, so stack frames name a neutral path.
set -u
source "$(dirname "$0")/train_dir.bash"
mkdir -p "$out/logs"
export PYTHONUNBUFFERED=1
deadline=${DEADLINE:-100000}
t_start=$(date +%s)

(cd $here && python3 - <<'EOF'
import inspect, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
m = torch.cuda.memory
print("_record_memory_history", inspect.signature(m._record_memory_history))
f = getattr(m, "_set_memory_metadata", None)
print("_set_memory_metadata", "exists" + str(inspect.signature(f)) if f else "MISSING")
print("_dump_snapshot", inspect.signature(m._dump_snapshot))
try:
    import transformers; print("transformers", transformers.__version__)
except Exception as e:
    print("transformers MISSING", e)
EOF
) 2>&1

compat=" compile_default compile_reduce_overhead compile_ctx_recorded compile_ring compile_max_autotune ctx_alloc ctx_state ctx_none stacks_python "
script_of() { case "$compat" in *" $1 "*) echo scenarios_compat.py ;; *) echo scenarios_verdicts.py ;; esac; }
limit_of() { case $1 in compile_default) echo 240 ;; compile_*) echo 150 ;; *) echo 120 ;; esac; }

one() {
  local s=$1 lim left t0 rc dt
  lim=$(limit_of $s)
  left=$(( deadline - ($(date +%s) - t_start) - 10 ))
  if [ $left -lt 20 ]; then echo "SKIPPED $s (no time left)"; return; fi
  [ $lim -gt $left ] && lim=$left
  t0=$(date +%s.%N)
  (cd $here && timeout -k 5 $lim python3 $(script_of $s) "$out" "$s") > "$out/logs/$s.log" 2>&1
  rc=$?
  dt=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
  if grep -q "^ok $s " "$out/logs/$s.log"; then
    echo "ok $s ${dt}s $(ls -l "$out/$s.pickle" 2>/dev/null | awk '{print $5}') bytes"
  else
    echo "FAILED $s rc=$rc ${dt}s (limit ${lim}s)"
    grep -vE '^\s*$' "$out/logs/$s.log" | tail -8 | sed 's/^/    /'
  fi
}
lane() { for s in "$@"; do one $s; done; }

if [ $# -gt 0 ]; then
  lane "$@"
else
  lane compile_default compile_reduce_overhead compile_ctx_recorded compile_max_autotune &
  lane oom_act_trap lazy_params meta_params late_layer leak_library_logits leak_hook_library \
       noleak_kv_cache ctx_alloc ctx_state ctx_none stacks_python compile_ring &
  wait
fi
echo "total $(( $(date +%s) - t_start )) s"
ls -la "$out"
