#!/usr/bin/env bash
# The benchmark's reference programs (opwalk.c, floor.c) still do what bench.sh reports:
# opwalk's opcode and memo-reference counts equal Python's pickletools on real snapshots
# (where python3 is at hand), a cut file is refused with the byte where it ends, and
# floor reads a file with and without a model, refusing bad arguments with exit 2.
#
#   bash tests/bench/tools_test.sh OPWALK FLOOR     (from the source root; ctest bench_tools)
set -euo pipefail
opwalk=$1 floor=$2
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in testdata/leak_layers.pickle testdata/cat_adamw.pickle; do
  out=$("$opwalk" "$f") || bad "opwalk $f exited $?"
  if command -v python3 >/dev/null 2>&1; then
    want=$(python3 -c '
import pickletools, sys
n = m = 0
for op, arg, pos in pickletools.genops(open(sys.argv[1], "rb")):
    n += 1
    m += op.name in ("GET", "BINGET", "LONG_BINGET")
print(f"{n} opcodes, {m} memo references")' "$f")
    case $out in "$want, "*) ;; *) bad "opwalk $f: '$out', pickletools: '$want'" ;; esac
  fi
done

head -c 1000 testdata/leak_layers.pickle > "$tmp/cut.pickle"
set +e
msg=$("$opwalk" "$tmp/cut.pickle" 2>&1); rc=$?
set -e
[ "$rc" = 2 ] || bad "opwalk on a cut file exited $rc"
case $msg in *"at byte 9"[0-9][0-9]*) ;; *) bad "opwalk on a cut file said '$msg'" ;; esac

f=testdata/leak_layers.pickle
plain=$("$floor" "$f") || bad "floor $f exited $?"
none=$("$floor" "$f" 0) || bad "floor $f 0 exited $?"
[ "$plain" = "$none" ] || bad "floor with 0 events summed $none, without $plain"
case $plain in ''|*[!0-9]*) bad "floor printed '$plain'" ;; esac
"$floor" "$f" 100000 > /dev/null || bad "floor with a model exited $?"
for args in "" "$f 12x" "$f -1" "$f 18446744073709551615" "$tmp/missing.pickle" "$f 1 2"; do
  set +e
  # shellcheck disable=SC2086  # the arguments split on purpose
  "$floor" $args > /dev/null 2>&1; rc=$?
  set -e
  [ "$rc" = 2 ] || bad "floor $args exited $rc, not 2"
done

[ "$fail" = 0 ] && echo "bench tools: ok"
exit "$fail"
