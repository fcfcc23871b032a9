#!/usr/bin/env bash
# The bash completion (cli/memsnap.bash-completion) against the tool itself: it offers
# every command `memsnap --help` lists and every option each `memsnap COMMAND --help`
# lists, offers no option a command does not know, completes the fixed values of
# --format, --x and --by, offers snapshot files, and for -o what the command writes.
set -uo pipefail
source "$(dirname "$0")/common.bash"
here=$(cd "$(dirname "$0")/../.." && pwd)

# shellcheck source=/dev/null
source "$here/cli/memsnap.bash-completion"
complete_words() { # the words of a command line, the last one being completed
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _memsnap
  [ ${#COMPREPLY[@]} -eq 0 ] || printf '%s\n' "${COMPREPLY[@]}" | sort -u
}
help_options() { # option names in the first column of `memsnap CMD --help`, and --help
  { echo --help; "$bin" "$1" --help; } | awk '/^(--help$| +-)/{sub(/^ +/, ""); split($0, a, /  +/); print a[1]}' |
    grep -oE -- '--?[a-z][a-z0-9-]*' | grep -vx -- '-h' | sort -u
}

commands=$("$bin" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}' | sort)
offered=$(complete_words memsnap "" | grep -v '^-')
if [ -n "$commands" ] && [ "$commands" = "$offered" ]; then ok "commands: $(echo $commands)"
else bad "commands: --help lists '$(echo $commands)', completion offers '$(echo $offered)'"; fi

for cmd in $commands; do
  want=$(help_options "$cmd")
  # diff with three files or more takes the options of ranks.
  [ "$cmd" = diff ] && want=$( (echo "$want"; help_options ranks) | sort -u)
  got=$(complete_words memsnap "$cmd" - | sort -u)
  if [ "$want" = "$got" ]; then ok "$cmd: $(echo "$got" | wc -l) options"
  else bad "$cmd: --help and completion differ: $(diff <(echo "$want") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"; fi
done

expect_words() { # label expected -- words...
  local label=$1 want=$2; shift 3
  local got; got=$(complete_words "$@" | tr '\n' ' ')
  [ "$got" = "$want" ] && ok "$label" || bad "$label: got '$got', want '$want'"
}
expect_words "--format values" "json png svg " -- memsnap render a.pickle --format ""
expect_words "--x values" "events run time " -- memsnap render a.pickle --x ""
expect_words "--by values" "alloc category compile group phase site " -- memsnap render --by ""
expect_words "a prefix" "--leaks " -- memsnap render --le
expect_words "--top takes a number" "" -- memsnap summary --top ""
expect_words "--at takes a number" "" -- memsnap categories a.pickle --at ""
expect_words "--budget takes a size" "" -- memsnap view a.pickle --budget ""

mkdir -p "$tmp/runs/sub"
touch "$tmp/runs/mem-0.pickle" "$tmp/runs/mem-1.pickle.gz" "$tmp/runs/notes.txt" "$tmp/runs/s.json" \
      "$tmp/runs/chart.png" "$tmp/runs/page.html"
expect_words "snapshot files" "$tmp/runs/mem-0.pickle $tmp/runs/mem-1.pickle.gz $tmp/runs/s.json $tmp/runs/sub " -- memsnap summary "$tmp/runs/"
expect_words "report -o wants a directory" "$tmp/runs/sub " -- memsnap report a.pickle -o "$tmp/runs/"
expect_words "oom -o wants an image" "$tmp/runs/chart.png $tmp/runs/sub " -- memsnap oom a.pickle -o "$tmp/runs/"
expect_words "view -o wants a page" "$tmp/runs/page.html $tmp/runs/sub " -- memsnap view a.pickle -o "$tmp/runs/"
finish completion
