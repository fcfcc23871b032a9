#!/usr/bin/env bash
# Text that reaches a terminal (issue 25): the input's path, the snapshot's frame and file
# names, option values and every error show ESC, newlines, C1 controls and the bidi
# controls (U+202E ...) as visible escapes (\x1b, \x0a, \u{202E}), in every command,
# the way the HTML, Markdown and JSON outputs already escape them. Also: a JSON file
# given for a pickle is named as such.
set -uo pipefail
source "$(dirname "$0")/common.bash"

# The crafted snapshot (also tests/fuzz/corpus/evil_frames.pickle): leak_layers.pickle with
# a function and a file name rewritten in place, same byte length, so the pickle stays
# valid: 'layers_run' -> l ESC[1m U+202E LF n, 'scenarios.py' -> s ESC]0; U+202E LF .py
python3 - "$tmp/evil_frames.pickle" <<'PY'
import sys
d = open("testdata/leak_layers.pickle", "rb").read()
fn, f2 = "l\x1b[1m\u202e\nn".encode(), "s\x1b]0;\u202e\n.py".encode()
assert len(fn) == 10 and len(f2) == 12
open(sys.argv[1], "wb").write(d.replace(b"layers_run", fn).replace(b"scenarios.py", f2))
PY
evil="$tmp/in"$'\x1b[31m\xe2\x80\xae\n\xc2\x9b'"x.pickle"
cp testdata/oom.pickle "$evil"
E=$tmp/evil_frames.pickle

# clean FILE: no C0 control but LF, no DEL, no C1 (U+0080..U+009F), no bidi control, no
# invisible or format character (U+200B..U+200F, U+2028..U+202E, U+2060..U+206F, U+FEFF).
clean() {
  python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
bad = re.search("[\x00-\x09\x0b-\x1f\x7f\x80-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]", t)
if bad:
    print("raw %r at %d: %r" % (bad.group(), bad.start(), t[max(0, bad.start() - 40):bad.start() + 20]))
    sys.exit(1)
# A path printed must stay on one line: no LF from the file name itself.
if "x.pickle" in t and re.search(r"in\\x1b\[31m\\u\{202E\}\\x0a\\x9bx\.pickle", t) is None:
    print("the path is not shown escaped"); sys.exit(1)
PY
}
check() { # label want_rc needle -- command...: stdout and stderr clean, needle in them
  local label=$1 want=$2 needle=$3; shift 4
  "$@" > "$tmp/out" 2>&1; local rc=$?
  if [ "$rc" -ne "$want" ]; then bad "$label: rc $rc (want $want): $(head -c 300 "$tmp/out" | cat -v)"; return; fi
  if ! why=$(clean "$tmp/out"); then bad "$label: $why"; return; fi
  if [ -n "$needle" ] && ! grep -qF -- "$needle" "$tmp/out"; then
    bad "$label: '$needle' not in: $(head -c 300 "$tmp/out")"; return; fi
  ok "$label"
}

# The input's path, in every command's text (and its file name in charts' messages).
check "summary: path" 0 'x.pickle (pickle protocol' -- "$bin" summary "$evil"
check "categories: path" 0 'x.pickle' -- "$bin" categories --explain "$evil"
check "oom: path" 0 'x.pickle' -- "$bin" oom "$evil"
check "leaks --stack: path" 0 'verdict: in\x1b[31m\u{202E}\x0a\x9bx.pickle' -- "$bin" leaks --stack --all "$evil"
check "diff: paths" 0 'x.pickle' -- "$bin" diff "$evil" testdata/oom.pickle
check "ranks: labels" 0 'x.pickle' -- "$bin" ranks "$evil" testdata/oom.pickle testdata/oom.pickle
check "oom -o with no OOM names the picture escaped" 0 'no picture was written to' -- \
  "$bin" oom testdata/linear_infer.pickle -o "$tmp/p"$'\x1b'".png"
mkdir -p "$tmp/rep"$'\x1b[2J'
check "report: the directory" 0 'memsnap report: wrote' -- "$bin" report "$evil" -o "$tmp/rep"$'\x1b[2J'

# Frame and file names from the snapshot.
check "leaks --stack: frame and file names" 1 'train/s\x1b]0;' -- "$bin" leaks --stack --fail "$E"
grep -qF '/home/ml/train/s\x1b]0;\u{202E}\x0a.py:159 l\x1b[1m\u{202E}\x0an' "$tmp/out" \
  && ok "leaks --stack shows the escapes" || bad "leaks --stack frame line: $(grep -a 'py:159' "$tmp/out" | cat -v)"
check "summary: sites" 0 '\x1b]0;' -- "$bin" summary "$E"
check "categories --explain: sites" 0 'device 0' -- "$bin" categories --explain "$E"
check "diff: sites" 0 '' -- "$bin" diff "$E" testdata/leak_layers.pickle
check "ranks: sites" 0 '' -- "$bin" ranks "$E" testdata/leak_layers.pickle testdata/leak_layers.pickle
check "summary: bidi_names" 0 'evil\u{202E}fdp.exe\x1b[31m' -- "$bin" summary testdata/bad/bidi_names.pickle
check "leaks --stack --all: bidi_names" 0 '' -- "$bin" leaks --stack --all testdata/bad/bidi_names.pickle

# The error path: a missing file, bad option values, an unknown command.
for c in summary categories oom leaks diff ranks "render -o $tmp/o.png" "view -o $tmp/o.html" \
         "report -o $tmp/r"; do
  check "${c%% *}: a missing path's error" 2 'nonexist\x1b[31m' -- $bin $c "/nonexist"$'\x1b[31m'
done
check "unknown command" 2 "unknown command 'x\\x1b[31m'" -- "$bin" x$'\x1b[31m'
check "bad option" 2 "unknown option '--x\\x1b'" -- "$bin" summary --x$'\x1b' testdata/oom.pickle
check "bad option value" 2 "'1\\x0a\\u{202E}' is not an integer" -- "$bin" summary --top 1$'\n\u202e' testdata/oom.pickle
check "render -o through a link with an evil name" 2 'is a symbolic link' -- \
  bash -c 'ln -s /dev/null "$1" && exec "$2" render testdata/oom.pickle -o "$1"' _ "$tmp/l"$'\x1b\n'".png" "$bin"

# Invisible and format characters (issue 34), one class at a time, in a function name:
# shown as \u{XXXX} in every text, written as \uXXXX in JSON (C1 controls too), and read
# back from the JSON as the very same name.
python3 - "$tmp" <<'PY'
import pickle, sys
d = pickle.load(open("testdata/linear_infer.pickle", "rb"))
for key in ("200b", "200f", "2028", "2029", "2060", "2064", "2066", "feff", "0085", "009b"):
    ch = chr(int(key, 16))
    for e in d["device_traces"][0]:
        for f in e.get("frames", []):
            if f["name"] == "linear_infer":
                f["name"] = "lin" + ch + "fer"
    pickle.dump(d, open("%s/inv-%s.pickle" % (sys.argv[1], key), "wb"), protocol=4)
    for e in d["device_traces"][0]:
        for f in e.get("frames", []):
            if f["name"] == "lin" + ch + "fer":
                f["name"] = "linear_infer"
PY
ks="200b 200f 2028 2029 2060 2064 feff 0085 009b"
for k in $ks; do
  if [ "${k:0:2}" = 00 ]; then shown="lin\\x${k:2}fer"; else shown="lin\\u{$(echo "$k" | tr a-f A-F)}fer"; fi
  check "U+$k in a name: summary" 0 "$shown" -- "$bin" summary "$tmp/inv-$k.pickle"
  "$bin" summary --json "$tmp/inv-$k.pickle" > "$tmp/inv-$k.json" 2>&1
done
python3 - "$tmp" $ks <<'PY' && ok "each in a name: summary --json escapes it and reads it back" || bad "summary --json"
import json, re, sys
for k in sys.argv[2:]:
    raw = open("%s/inv-%s.json" % (sys.argv[1], k), "rb").read().decode("utf-8")
    assert not re.search("[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]", raw), k + ": raw"
    assert ("lin\\u%sfer" % k) in raw, "no \\u%s escape" % k
    names = [s["function"] for s in json.loads(raw)["files"][0]["devices"][0]["top_sites"]]
    assert "lin%sfer" % chr(int(k, 16)) in names, (k, names)
PY
check "U+2028 in a name: leaks --stack" 0 'lin\u{2028}fer' -- "$bin" leaks --stack --all "$tmp/inv-2028.pickle"
check "U+FEFF in a name: categories --explain" 0 '' -- "$bin" categories --explain "$tmp/inv-feff.pickle"
check "U+2066 in a name: report" 0 'memsnap report: wrote' -- "$bin" report "$tmp/inv-2066.pickle" -o "$tmp/rep-inv"
python3 - "$tmp/rep-inv" <<'PY' && ok "report: index.html and summary.md show U+2066, summary.json escapes it" || bad "report: U+2066"
import sys
d = sys.argv[1]
for name in ("index.html", "summary.md", "summary.json"):
    t = open("%s/%s" % (d, name), encoding="utf-8").read()
    assert "\u2066" not in t, name + ": raw"
assert "lin\\u{2066}fer" in open(d + "/index.html", encoding="utf-8").read()
assert "lin\\u2066fer" in open(d + "/summary.json", encoding="utf-8").read()
PY

# A JSON file given for a pickle.
echo '{"segments": [], "device_traces": []}' > "$tmp/x.json"
check "JSON: named, not an opcode" 2 'x.json: looks like JSON, not a pickle: memsnap reads the pickles written by torch.cuda.memory._dump_snapshot' -- \
  "$bin" summary "$tmp/x.json"
check "JSON array from stdin" 2 'looks like JSON, not a pickle' -- bash -c 'echo "[1, 2]" | "$1" leaks -' _ "$bin"
printf '\x7b' | gzip > "$tmp/x.json.gz"
check "gzipped JSON" 2 'looks like JSON, not a pickle' -- "$bin" categories "$tmp/x.json.gz"
printf 'garbage' > "$tmp/g.pickle"
check "other bad input keeps its message" 2 'byte 0: text argument has no newline' -- "$bin" oom "$tmp/g.pickle"

finish terminal
