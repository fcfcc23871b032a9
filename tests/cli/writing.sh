#!/usr/bin/env bash
# What memsnap prints and writes either arrives whole or the run says it did not
# (issue 34): a full disk or a file size limit under standard output is an error and
# exit 2 for every command (EPIPE aside: the reader went away, which ends quietly);
# `report -o DIR` refuses a DIR that is a symbolic link, as `view -o` refuses a link; and
# a report stopped by SIGTERM or SIGINT leaves no temporary file and no directory it made.
set -uo pipefail
source "$(dirname "$0")/common.bash"
T=testdata/linear_infer.pickle
O=testdata/oom.pickle

expect() { # label want_rc stderr_pattern -- command...
  local label=$1 want=$2 pattern=$3; shift 4
  "$@" 2> "$tmp/err"; local rc=$?
  if [ "$rc" -ne "$want" ] || { [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/err"; }; then
    bad "$label: rc $rc (want $want), stderr: $(head -c 300 "$tmp/err")"
  else
    ok "$label"
  fi
}

# --- a full disk under standard output: every command that prints, text and JSON.
[ -w /dev/full ] || { echo "SKIP: no /dev/full"; exit 77; }
full() { # label command...: stdout on /dev/full
  local label=$1; shift
  expect "$label > /dev/full" 2 "^memsnap [a-z]+: standard output: write failed: No space left on device$" -- \
    bash -c '"$@" > /dev/full' _ "$@"
}
full "summary" "$bin" summary "$T"
full "summary --json" "$bin" summary --json "$T"
full "oom" "$bin" oom "$O"
full "oom --json" "$bin" oom --json "$O"
full "categories --json" "$bin" categories --json "$T"
full "leaks" "$bin" leaks "$T"
full "diff --json" "$bin" diff --json "$T" "$O"
full "ranks" "$bin" ranks "$T" "$O" "$T"
full "report's list of what it wrote" "$bin" report "$T" -o "$tmp/rep-full"
full "summary --help" "$bin" summary --help
expect "memsnap --help > /dev/full" 2 "^memsnap: standard output: write failed" -- \
  bash -c '"$1" --help > /dev/full' _ "$bin"
expect "render -o prints nothing: /dev/full is no error" 0 "" -- \
  bash -c '"$@" > /dev/full' _ "$bin" render "$T" -o "$tmp/r.png"
expect "a failing command that printed nothing says only its own error" 2 "nonexist: cannot open" -- \
  bash -c '"$@" > /dev/full' _ "$bin" summary /nonexist
[ "$(wc -l < "$tmp/err")" = 1 ] && ok "... one line" || bad "stderr: $(cat "$tmp/err")"

# --- a file size limit under standard output: no cut JSON passed off as whole.
expect "summary --json past ulimit -f" 2 "standard output: write failed: File too large" -- \
  bash -c 'ulimit -f 1; exec "$@" > "$0"' "$tmp/cut.json" "$bin" summary --json testdata/gpt2_train.pickle
[ "$(stat -c %s "$tmp/cut.json")" -le 1024 ] && ok "the cut file is at the limit" \
  || bad "cut.json is $(stat -c %s "$tmp/cut.json") bytes"
expect "oom --json past ulimit -f" 2 "standard output: write failed: File too large" -- \
  bash -c 'ulimit -f 1; exec "$@" > "$0"' "$tmp/cut2.json" "$bin" oom --json "$O"
expect "summary --json under a roomy ulimit -f" 0 "" -- \
  bash -c 'ulimit -f 4096; exec "$@" > "$0"' "$tmp/whole.json" "$bin" summary --json testdata/gpt2_train.pickle
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/whole.json" && ok "which is whole JSON" \
  || bad "whole.json does not parse"

# --- EPIPE: the reader closed the pipe before memsnap wrote. With SIGPIPE ignored (as a
# Python parent leaves it) the write fails with EPIPE: quiet, the command's own status.
# With SIGPIPE at its default, the signal ends memsnap, also quietly.
python3 - "$bin" "$T" <<'PY' && ok "EPIPE ends quietly" || bad "EPIPE"
import os, signal, subprocess, sys
bin, t = sys.argv[1], sys.argv[2]
for restore, want in ((False, 0), (True, -signal.SIGPIPE)):
    r, w = os.pipe()
    os.close(r)
    p = subprocess.run([bin, "summary", "--json", t], stdout=w, stderr=subprocess.PIPE,
                       restore_signals=restore, timeout=60)
    os.close(w)
    if p.returncode != want or p.stderr:
        print("SIGPIPE %s: rc %d (want %d), stderr %r" % ("default" if restore else "ignored",
              p.returncode, want, p.stderr[:200]))
        sys.exit(1)
PY

# --- report -o DIR where DIR is a symbolic link: refused, the link's target untouched.
mkdir "$tmp/victim"
ln -s victim "$tmp/out"
expect "report -o a symlink" 2 "out: is a symbolic link; refusing to write through it" -- \
  "$bin" report "$T" -o "$tmp/out"
expect "report -o a symlink/" 2 "is a symbolic link" -- "$bin" report "$T" -o "$tmp/out/"
ln -s nowhere "$tmp/dangling"
expect "report -o a dangling symlink" 2 "dangling: is a symbolic link" -- "$bin" report "$T" -o "$tmp/dangling"
[ -z "$(ls -A "$tmp/victim")" ] && [ ! -e "$tmp/nowhere" ] && ok "nothing written through the links" \
  || bad "written through a link: $(ls -A "$tmp/victim")"
mkdir -p "$tmp/real/sub" && ln -s real "$tmp/viadir"
expect "a link on the way to DIR is the user's choice" 0 "" -- "$bin" report "$T" -o "$tmp/viadir/sub" > /dev/null
[ -s "$tmp/real/sub/index.html" ] && ok "written into viadir/sub" || bad "viadir/sub not written"

# --- SIGTERM and SIGINT while a report is being written. The report's first input is a
# snapshot, its second standard input, fed a few bytes and then held open: the first
# file's charts are then written and held under temporary names in a directory the run
# made while memsnap waits for the rest of the second. The signal must leave nothing.
python3 - "$bin" "$T" "$tmp" <<'PY' && ok "a signal mid-report leaves nothing" || bad "signal mid-report"
import glob, os, signal, subprocess, sys, time
bin, t, tmp = sys.argv[1:4]
data = open(t, "rb").read()
def run(sig, out, made):
    p = subprocess.Popen([bin, "report", t, "-", "-o", out], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    p.stdin.write(data[:100])
    p.stdin.flush()
    deadline = time.time() + 60
    while not glob.glob(out + "/.memsnap.*") and time.time() < deadline:
        time.sleep(0.02)
    held = glob.glob(out + "/.memsnap.*")
    p.send_signal(sig)
    rc = p.wait(timeout=60)
    p.stdin.close()
    left = [f for f in glob.glob(os.path.join(tmp, "**"), recursive=True) if ".memsnap." in f]
    problems = []
    if not held:
        problems.append("no temporary file was ever seen")
    if rc != -sig:
        problems.append("rc %d, want %d (%s)" % (rc, -sig, p.stderr.read()[:200]))
    if left:
        problems.append("left: %r" % left)
    if os.path.exists(made):
        problems.append("%s left behind" % made)
    return problems
bad = []
for sig, out, made in ((signal.SIGTERM, tmp + "/new1/a/b", tmp + "/new1"),
                       (signal.SIGINT, tmp + "/new2", tmp + "/new2")):
    for prob in run(sig, out, made):
        bad.append("%s: %s" % (signal.Signals(sig).name, prob))
# Into a directory that exists: it stays, with what the user had in it, and only that.
os.makedirs(tmp + "/have")
open(tmp + "/have/mine.txt", "w").write("mine")
for prob in run(signal.SIGTERM, tmp + "/have", "/nonexistent-path"):
    bad.append("existing DIR: " + prob)
if sorted(os.listdir(tmp + "/have")) != ["mine.txt"]:
    bad.append("existing DIR holds %r" % os.listdir(tmp + "/have"))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
# An ignored signal stays ignored (nohup): the run finishes.
expect "SIGHUP ignored at start stays ignored" 0 "" -- \
  bash -c 'trap "" HUP; "$1" report "$2" -o "$3" > /dev/null & pid=$!; kill -HUP $pid; wait $pid' _ \
  "$bin" "$T" "$tmp/hup"
[ -s "$tmp/hup/index.html" ] && ok "the report under an ignored SIGHUP is whole" || bad "hup report missing"

finish writing
