#!/usr/bin/env bash
# Every file memsnap writes goes through cli/safe_output.c (docs/security.md): never
# through a symlink, never onto a FIFO or a directory, never half-written over the old
# file (a full disk, ulimit -f), the permission bits of a file it replaces kept, names up
# to NAME_MAX, and a failed report removes only what it created itself (issue 25).
set -uo pipefail
source "$(dirname "$0")/common.bash"
T=testdata/linear_infer.pickle

expect() { # label want_rc stderr_pattern -- command...
  local label=$1 want=$2 pattern=$3; shift 4
  "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  if [ "$rc" -ne "$want" ] || { [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/err"; }; then
    bad "$label: rc $rc (want $want), stderr: $(head -c 300 "$tmp/err")"
  else
    ok "$label"
  fi
}
same() { # label file content
  if [ "$(cat "$2" 2>/dev/null)" = "$3" ]; then ok "$1"; else bad "$1: $2 holds '$(head -c 80 "$2" 2>/dev/null)'"; fi
}
no_temp() { # label dir: no temporary file left behind
  local n; n=$(find "$2" -name '.memsnap.*' -o -name '.*.??????' | wc -l)
  if [ "$n" = 0 ]; then ok "$1"; else bad "$1: $(find "$2" -name '.*')"; fi
}

# --- view -o: the same safe path as render and oom -o.
echo victim > "$tmp/victim.txt"
ln -s victim.txt "$tmp/link.html"
expect "view -o through a symlink" 2 "link\.html: is a symbolic link; refusing" -- \
  "$bin" view "$T" -o "$tmp/link.html"
same "view -o left the link's target alone" "$tmp/victim.txt" victim
mkfifo "$tmp/fifo.html"
expect "view -o onto a FIFO is refused, not a hang" 2 "fifo\.html: exists and is not a regular file" -- \
  timeout 20 "$bin" view "$T" -o "$tmp/fifo.html"
mkdir "$tmp/dir.html"
expect "view -o onto a directory" 2 "dir\.html: exists and is not a regular file" -- \
  "$bin" view "$T" -o "$tmp/dir.html"
echo "old good page" > "$tmp/page.html"
expect "view -o past ulimit -f fails" 2 "page\.html: write failed: File too large" -- \
  bash -c 'ulimit -f 20; exec "$@"' _ "$bin" view "$T" -o "$tmp/page.html"
same "view -o past ulimit -f keeps the old page" "$tmp/page.html" "old good page"
echo "old chart" > "$tmp/chart.png"
expect "render -o past ulimit -f fails" 2 "chart\.png: write failed: File too large" -- \
  bash -c 'ulimit -f 4; exec "$@"' _ "$bin" render "$T" -o "$tmp/chart.png"
same "render -o past ulimit -f keeps the old chart" "$tmp/chart.png" "old chart"
echo "old oom" > "$tmp/oom.svg"
expect "oom -o past ulimit -f fails" 2 "oom\.svg: write failed: File too large" -- \
  bash -c 'ulimit -f 4; exec "$@"' _ "$bin" oom testdata/oom.pickle -o "$tmp/oom.svg"
same "oom -o past ulimit -f keeps the old picture" "$tmp/oom.svg" "old oom"
mkdir "$tmp/rfull" && echo "old md" > "$tmp/rfull/summary.md"
expect "report past ulimit -f fails" 2 "write failed: File too large" -- \
  bash -c 'ulimit -f 40; exec "$@"' _ "$bin" report "$T" -o "$tmp/rfull"
same "report past ulimit -f keeps the old summary.md" "$tmp/rfull/summary.md" "old md"
no_temp "no temporary file left by a failed write" "$tmp"

# --- report -o NEW/../EXISTING with a bad input: the user's directory and files stay.
mkdir "$tmp/userdir"
echo mine > "$tmp/userdir/ranks.png"
echo mine > "$tmp/userdir/timeline-linear_infer.png"
printf garbage > "$tmp/bad.pickle"
expect "report NEW/../EXISTING, bad input" 2 "bad\.pickle" -- \
  "$bin" report "$T" "$tmp/bad.pickle" -o "$tmp/newdir/../userdir"
same "the user's ranks.png is kept" "$tmp/userdir/ranks.png" mine
same "the user's timeline chart is not replaced by a failed run" "$tmp/userdir/timeline-linear_infer.png" mine
[ ! -e "$tmp/newdir" ] && ok "the directory the run made is removed" || bad "newdir left behind"
expect "report into a new nested directory, bad input" 2 "bad\.pickle" -- \
  "$bin" report "$T" "$tmp/bad.pickle" -o "$tmp/n1/n2/n3"
[ ! -e "$tmp/n1" ] && ok "nested directories made by a failed run are removed" || bad "n1 left behind"
mkdir -p "$tmp/keep/sub"
expect "report into keep/sub/new, bad input" 2 "bad\.pickle" -- \
  "$bin" report "$T" "$tmp/bad.pickle" -o "$tmp/keep/sub/new"
[ -d "$tmp/keep/sub" ] && [ ! -e "$tmp/keep/sub/new" ] && ok "only the new directory is removed" \
  || bad "keep/sub changed: $(ls -R "$tmp/keep")"
expect "report NEW/../EXISTING, good input" 0 "" -- \
  "$bin" report "$T" -o "$tmp/newdir2/../userdir"
[ -s "$tmp/userdir/index.html" ] && [ "$(head -c 4 "$tmp/userdir/timeline-linear_infer.png" | tail -c 3)" = PNG ] \
  && ok "a good run writes into the existing directory" || bad "good run did not write"
no_temp "no temporary file left by a failed report" "$tmp"

# --- the permission bits of a replaced file are kept; a new one gets the umask's.
echo old > "$tmp/priv.png" && chmod 600 "$tmp/priv.png"
expect "render over a 0600 file" 0 "" -- "$bin" render "$T" -o "$tmp/priv.png"
[ "$(stat -c %a "$tmp/priv.png")" = 600 ] && ok "0600 kept" || bad "mode $(stat -c %a "$tmp/priv.png"), want 600"
echo old > "$tmp/priv.html" && chmod 640 "$tmp/priv.html"
expect "view over a 0640 file" 0 "" -- "$bin" view "$T" -o "$tmp/priv.html"
[ "$(stat -c %a "$tmp/priv.html")" = 640 ] && ok "0640 kept" || bad "mode $(stat -c %a "$tmp/priv.html"), want 640"
(umask 027; "$bin" render "$T" -o "$tmp/new027.png")
[ "$(stat -c %a "$tmp/new027.png")" = 640 ] && ok "a new file gets 0666 less the umask" \
  || bad "new file mode $(stat -c %a "$tmp/new027.png"), want 640"

# --- names at the length limit (NAME_MAX 255): the temporary name never grows past it.
n254=$(printf 'a%.0s' $(seq 250)).png
expect "render -o a 254-character name" 0 "" -- "$bin" render "$T" -o "$tmp/$n254"
[ -s "$tmp/$n254" ] && ok "254-character PNG written" || bad "254-character PNG missing"
n255=$(printf 'b%.0s' $(seq 250)).html
expect "view -o a 255-character name" 0 "" -- "$bin" view "$T" -o "$tmp/$n255"
n256=$(printf 'c%.0s' $(seq 252)).png
expect "render -o a 256-character name says why" 2 "File name too long" -- \
  "$bin" render "$T" -o "$tmp/$n256"

# --- relative paths with ..: written where the path leads, nothing else touched.
mkdir -p "$tmp/rel/a"
expect "render -o a/../x.png" 0 "" -- bash -c 'cd "$1" && exec "$2" render "$3" -o a/../x.png' _ \
  "$tmp/rel" "$bin" "$PWD/$T"
[ -s "$tmp/rel/x.png" ] && ok "a/../x.png written in rel" || bad "a/../x.png missing"
expect "render -o missing/../x.png" 2 "cannot write: No such file or directory" -- \
  "$bin" render "$T" -o "$tmp/rel/missing/../y.png"

# --- the OOM picture names the path once.
ln -s victim.txt "$tmp/link3.png"
expect "oom -o through a symlink names the path once" 2 \
  "^memsnap oom: [^ ]*/link3\.png: is a symbolic link; refusing to write through it$" -- \
  "$bin" oom testdata/oom.pickle -o "$tmp/link3.png"
same "victim still untouched" "$tmp/victim.txt" victim

# --- the second pass (docs/security.md): hard links, the input itself, devices, long paths.
echo victim > "$tmp/v2" && ln "$tmp/v2" "$tmp/hard.png"
expect "render -o a hard link" 0 "" -- "$bin" render "$T" -o "$tmp/hard.png"
same "the hard link's other name keeps its content" "$tmp/v2" victim
cp "$T" "$tmp/in.pickle"
expect "view -o its own input is refused" 2 "in\.pickle: is an input file; refusing to replace it" -- \
  "$bin" view "$tmp/in.pickle" -o "$tmp/in.pickle"
ln "$tmp/in.pickle" "$tmp/in-link.html"
expect "view -o a hard link of its input is refused" 2 "is an input file" -- \
  "$bin" view "$tmp/in.pickle" -o "$tmp/in-link.html"
cmp -s "$T" "$tmp/in.pickle" && ok "the input is intact" || bad "the input was replaced"
expect "view -o /dev/null is refused" 2 "/dev/null: exists and is not a regular file" -- \
  "$bin" view "$T" -o /dev/null
expect "view -o ''" 2 "empty output name" -- "$bin" view "$T" -o ""
mkdir -p "$tmp/rf" && mkfifo "$tmp/rf/summary.md"
expect "report onto a FIFO in DIR is refused, not a hang" 2 "summary\.md: exists and is not a regular file" -- \
  timeout 20 "$bin" report "$T" -o "$tmp/rf"
[ "$(ls -A "$tmp/rf")" = summary.md ] && ok "a refused report leaves DIR as it was" || bad "rf holds: $(ls -A "$tmp/rf")"
long=$tmp/$(python3 -c "print('/'.join(['d' * 200] * 25))")/x.png
expect "a path past PATH_MAX keeps the reason in the message" 2 "\.\.\..*/x\.png: cannot check: File name too long$" -- \
  "$bin" render "$T" -o "$long"
expect "report -o a/b/../../a, bad input" 2 "bad\.pickle" -- \
  bash -c 'cd "$1" && exec "$2" report "$3" bad.pickle -o a/b/../../a' _ "$tmp" "$bin" "$PWD/$T"
[ ! -e "$tmp/a" ] && ok "a/b/../../a: both directories made are removed" || bad "a left: $(find "$tmp/a")"
no_temp "no temporary file left at the end" "$tmp"

finish outputs
