# Sourced by every tests/cli/*.sh, which ctest runs from the source root with the memsnap
# binary as $1: the binary's absolute path (some scripts change directory), a scratch
# folder removed at exit, and one way to count, word and end checks, so that each script
# holds only its own checks. Named .bash so that tests/CMakeLists.txt's *.sh glob does not
# take it for a test.
bin=$(cd "$(dirname "${1:?usage: $0 PATH/TO/memsnap}")" && pwd)/$(basename "$1")
BIN=$bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); if [ $# -gt 0 ]; then echo "ok $*"; fi; return 0; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; return 0; }

# expect LABEL WANT_RC PATTERN -- COMMAND...: the command's exit status, and an extended
# regular expression found in its standard error or output (an empty PATTERN: any).
expect() {
  local label=$1 want=$2 pattern=$3; shift 4
  "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  if [ "$rc" -ne "$want" ] || { [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/err" "$tmp/out"; }; then
    bad "$label: rc $rc (want $want): $(head -c 300 "$tmp/err") $(head -c 300 "$tmp/out")"
  else
    ok "$label"
  fi
}

check() { # LABEL EXPECTED ACTUAL
  if [ "$2" != "$3" ]; then bad "$1: expected $2, got $3"; fi
}
contains() { # LABEL TEXT NEEDLE
  case "$2" in *"$3"*) ;; *) bad "$1: output lacks '$3'"; echo "$2" | head -40 ;; esac
}
lacks() { # LABEL TEXT NEEDLE
  case "$2" in *"$3"*) bad "$1: output has '$3'"; echo "$2" | grep -F -- "$3" | head -5 ;; esac
}
jget() { # FILE PYTHON_EXPRESSION_ON_d: a value of a JSON file
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# ms_status STATUS ARGS...: memsnap ARGS exits STATUS; its output and errors stay in
# $tmp/out.
ms_status() {
  local want=$1; shift
  "$bin" "$@" > "$tmp/out" 2>&1
  local st=$?
  [ "$st" -eq "$want" ] || { bad "memsnap $* exited $st, wanted $want"; head -20 "$tmp/out"; }
}

# ms_expect STATUS PATTERN -- ARGS...: memsnap ARGS exits STATUS and its standard output
# and error together match PATTERN; ms_refute PATTERN -- ARGS...: they do not.
ms_expect() {
  local want=$1 pattern=$2; shift 3
  local out st
  out=$("$bin" "$@" 2>&1); st=$?
  if [ "$st" -ne "$want" ]; then
    bad "memsnap $* exited $st, wanted $want"; echo "$out" | head -20; return
  fi
  if ! grep -Eq -- "$pattern" <<<"$out"; then
    bad "memsnap $* output lacks /$pattern/"; echo "$out" | head -40
  fi
}
ms_refute() {
  local pattern=$1; shift 2
  local out
  out=$("$bin" "$@" 2>&1)
  if grep -Eq -- "$pattern" <<<"$out"; then
    bad "memsnap $* output has /$pattern/"; grep -E -- "$pattern" <<<"$out" | head -5
  fi
}

# The last line of every script: the counts, and its exit status.
finish() {
  echo "${1:+$1: }$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
