#!/usr/bin/env bash
# The man page made from docs/memsnap.1.md at build time: roff that groff formats without
# a single warning, that man -l shows and whatis can index, with the version, and that
# documents every command and option the tool's own --help lists.
set -uo pipefail
source "$(dirname "$0")/common.bash"
page=$(dirname "$bin")/memsnap.1

if [ ! -s "$page" ]; then
  echo "FAIL no man page at $page (python3 missing at configure time?)"
  exit 1
fi

# -ww: every warning; -z: format only. Anything on stderr is a defect of the page.
groff -man -Tutf8 -ww -z "$page" 2> "$tmp/warn"
if [ -s "$tmp/warn" ]; then bad "groff warnings: $(head -c 400 "$tmp/warn")"; else ok "groff -ww: no warnings"; fi

if command -v man > /dev/null; then
  MANWIDTH=100 man -l "$page" > "$tmp/text" 2> "$tmp/err"; rc=$?
  if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ]; then bad "man -l: rc $rc: $(head -c 300 "$tmp/err")"; else ok "man -l"; fi
else
  groff -man -Tutf8 -rLL=100n "$page" 2> /dev/null | sed 's/.\x08//g' > "$tmp/text"
fi
grep -q "memsnap - read PyTorch CUDA memory snapshots" "$tmp/text" && ok "NAME line" || bad "NAME line missing"
version=$("$bin" --version | awk '{print $2}')
grep -q "memsnap $version" "$tmp/text" && ok "version $version in the footer" || bad "no 'memsnap $version' in the page"
if command -v lexgrog > /dev/null; then
  lexgrog "$page" > "$tmp/whatis" 2>&1
  grep -q '"memsnap - read PyTorch' "$tmp/whatis" && ok "lexgrog (whatis) reads the NAME" || bad "lexgrog: $(cat "$tmp/whatis")"
fi

# Every command, and every option of every command, as --help lists them.
commands=$("$bin" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}')
[ -n "$commands" ] || bad "no commands in memsnap --help"
for cmd in $commands; do
  grep -q "memsnap $cmd " "$tmp/text" || bad "command $cmd not in the man page"
  # Option names: the first column of help lines that start with an option.
  opts=$("$bin" "$cmd" --help | awk '/^ +-/{sub(/^ +/, ""); split($0, a, /  +/); print a[1]}' |
         grep -oE -- '--?[a-z][a-z0-9-]*' | grep -vxE -- '-h|--help' | sort -u)
  missing=""
  for o in $opts; do
    grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" "$tmp/text" || missing="$missing $o"
  done
  if [ -n "$missing" ]; then bad "$cmd: options not in the man page:$missing"; else ok "$cmd: $(echo $opts | wc -w) options documented"; fi
done
finish man
