#!/bin/bash
# On the GPU machine (device run), from the repository root: records the run-axis scenarios
# (scenarios_axis.py) and the 1 GB-class benchmark (long_all_stacks.py), and leaves in $OUT
# axis.tar.xz, long_all_stacks.truth.json and the benchmark as xz parts of 15 MB.
set -x
cd tests/gen
for n in idle_start slow_first_leak; do python3 scenarios_axis.py /tmp/axis $n 2>&1 | tail -3; done
ls -la /tmp/axis
tar -C /tmp/axis -cJf "$OUT/axis.tar.xz" .
T0=$(date +%s)
LONG_STEPS=${LONG_STEPS:-5200} timeout 420 python3 long_all_stacks.py /tmp/long 2>&1 | tail -3
echo "long took $(( $(date +%s) - T0 )) s"
ls -la /tmp/long
cp /tmp/long/long_all_stacks.truth.json "$OUT/"
xz -9 -T16 -c /tmp/long/long_all_stacks.pickle > /tmp/long.xz && ls -la /tmp/long.xz
split -b 15M -d -a 1 /tmp/long.xz "$OUT/long_all_stacks.pickle.xz.part"
echo "all took $(( $(date +%s) - T0 )) s"
ls -la "$OUT"
