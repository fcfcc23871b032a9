#!/usr/bin/env bash
# lib/src/analysis/ is a stack, not a knot: the include graph among its stages has no
# cycle. The run (run.c) orders them once: timeline -> iterations -> phases ->
# categories -> leaks -> OOMs, each reading the earlier ones and never calling back up;
# below them sit the annotation pairer, the allocator's rules and the trace cut.
# Every file of the folder must have a stage here, so a new file is placed on purpose.
# usage: analysis_stack.sh [DIR]   (default lib/src/analysis)
set -u
dir=${1:-lib/src/analysis}
stage_of() {
  case $1 in
    annotations.c) echo annotations ;;
    timeline.c|timeline_internal.h|bigmem.h) echo timeline ;;
    allocator*.c|alloc_internal.h|heap_owner.c|heap_owner.h) echo allocator ;;
    phase_cut.c|phase_cut.h|compile.c|compile_internal.h) echo cut ;;
    iterations.c|iter_*.c|iter_cand.h|iter_internal.h|idle.c) echo iterations ;;
    phases.c|phases_internal.h) echo phases ;;
    categories*.c|cat_internal.h) echo categories ;;
    leaks.c|leak_groups.c|alive_end.c|leak_internal.h) echo leaks ;;
    shape.c) echo shape ;;
    oom*.c|oom_internal.h) echo ooms ;;
    run.c|run_internal.h) echo run ;;
    *) echo "" ;;
  esac
}
fail=0
edges=$(mktemp) || exit 1
trap 'rm -f "$edges"' EXIT
for f in "$dir"/*.c "$dir"/*.h; do
  b=$(basename "$f")
  s=$(stage_of "$b")
  if [ -z "$s" ]; then
    echo "FAIL: $b has no stage in $0"
    fail=1
    continue
  fi
  for inc in $(sed -n 's/^#include "\([^"/]*\)".*/\1/p' "$f"); do
    [ -f "$dir/$inc" ] || continue
    t=$(stage_of "$inc")
    [ -n "$t" ] && [ "$t" != "$s" ] && echo "$s $t $b $inc" >> "$edges"
  done
done
# Kahn's order: take away stages that include no remaining stage; what is left is a cycle.
awk '
  { e[$1 " " $2] = 1; node[$1] = 1; node[$2] = 1; why[$1 " " $2] = why[$1 " " $2] " " $3 "->" $4 }
  END {
    left = 0; for (n in node) left++
    order = ""
    do {
      took = 0
      for (n in node) {
        if (done[n]) continue
        ok = 1
        for (k in e) { split(k, p, " "); if (p[1] == n && !done[p[2]]) { ok = 0; break } }
        if (ok) { done[n] = 1; took = 1; left--; order = order " " n }
      }
    } while (took)
    if (left) {
      print "FAIL: a cycle among the stages of lib/src/analysis:"
      for (k in e) { split(k, p, " "); if (!done[p[1]] && !done[p[2]]) print "  " k ":" why[k] }
      exit 1
    }
    print "analysis stages, lowest first:" order
  }' "$edges" || fail=1
exit $fail
