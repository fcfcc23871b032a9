#!/bin/bash
# Record the snapshots of scenarios_explain.py on a GPU machine, one process each.
# Usage there:  OUT=/some/dir bash run_explain.sh [scenario ...]
# Scripts are copied to /home/ml/train first, so stack frames name a neutral path.
set -u
source "$(dirname "$0")/train_dir.bash"
all="cat_adamw cat_sgd_frozen cat_accum_amp cat_prebuilt cat_gpt2_annotated cat_infer
     leak_after_step leak_hook_infer leak_shared_line leak_eval_graph noleak_keep_grad noleak_bounded_cache
     oom_fragmentation oom_activations oom_model_state oom_leak oom_leak_ring oom_single_expandable"
for s in ${@:-$all}; do
  conf=""
  case $s in *expandable*) conf="expandable_segments:True" ;; esac
  t0=$(date +%s.%N)
  (cd $here && PYTORCH_CUDA_ALLOC_CONF=$conf timeout 150 python3 scenarios_explain.py "$out" "$s" 2>&1 | grep -vE '^\s*$' | tail -4)
  echo "   ($s: $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo ?) s)"
done
ls -la "$out"
