#!/usr/bin/env bash
# memsnap view from the command line: the page it writes (one chart per file, the script
# allowed by its exact hash, file names as text), the size budget, and the errors that
# must exit 2. The page in a browser: tests/browser/view_test.py.
set -u
source "$(dirname "$0")/common.bash"
T=$tmp

ms_status 0 view --help
grep -q '^usage: memsnap view FILE' "$T/out" || bad "--help has no usage line"
ms_status 2 view testdata/gpt2_train.pickle
grep -q 'no output page' "$T/out" || bad "missing -o not explained"
ms_status 2 view -o "$T/x.html"
ms_status 2 view testdata/gpt2_train.pickle -o "$T/x.html" --frobnicate
ms_status 2 view testdata/gpt2_train.pickle -o "$T/x.html" --budget 1KiB
ms_status 2 view testdata/does-not-exist.pickle -o "$T/x.html"
[ -e "$T/x.html" ] && bad "a failed run left a page behind"
ms_status 2 view testdata/gpt2_train.truth.json -o "$T/x.html"
ms_status 2 view testdata/gpt2_train.pickle -o "$T/x.html" --device 7

# Two files: two charts, their data, one script, a CSP whose hash is the script's.
ms_status 0 view testdata/gpt2_train.pickle testdata/leak_layers.pickle -o "$T/two.html" --title 'Two <files>'
[ "$(grep -o 'data-memsnap-view="memsnap-data-[0-9]*"' "$T/two.html" | sort -u | wc -l)" -eq 2 ] ||
  bad "two files did not give two charts"
[ "$(grep -c '<script>' "$T/two.html")" -eq 1 ] || bad "the script is not there exactly once"
grep -q '<title>Two &lt;files&gt;</title>' "$T/two.html" || bad "title not escaped"
python3 - "$T/two.html" <<'PY' || bad "the CSP hash is not the script's"
import base64, hashlib, re, sys
h = open(sys.argv[1], encoding="utf-8").read()
csp = re.search(r"script-src 'sha256-([A-Za-z0-9+/=]+)'", h).group(1)
js = re.search(r"<script>(.*?)</script>", h, re.S).group(1)
assert csp == base64.b64encode(hashlib.sha256(js.encode()).digest()).decode(), csp
assert "default-src 'none'" in h
PY

# A file name with markup reaches the page only escaped (JSON \u003c, HTML &lt;).
evil='x"><script>alert(1)<\script><img src=x onerror=alert(2)>|y'
cp testdata/oom.pickle "$T/$evil.pickle"
ms_status 0 view "$T/$evil.pickle" -o "$T/evil.html"
if grep -q '<script>alert\|<img' "$T/evil.html"; then bad "markup from a file name reached the page"; fi
grep -q 'x\\"\\u003e\\u003cscript\\u003ealert(1)' "$T/evil.html" || bad "escaped file name not in the data"

# The budget bounds the page: the data stays under it, the fixed parts are ~40 KB.
ms_status 0 view testdata/ddp_rank0.pickle -o "$T/small.html" --budget 200KiB
ms_status 0 view testdata/ddp_rank0.pickle -o "$T/big.html" --budget 4MiB
s=$(stat -c %s "$T/small.html"); b=$(stat -c %s "$T/big.html")
[ "$s" -le $((200 * 1024 + 60000)) ] || bad "--budget 200KiB gave a $s-byte page"
[ "$b" -gt "$s" ] || bad "a larger budget did not buy more detail ($b <= $s)"

# The third grouping, by category: its levels, its legend heading, and per allocation
# its category for the tooltips; the first window's bands are the eight categories in
# the fixed order, bottom first.
ms_status 0 view testdata/cat_adamw.pickle -o "$T/cat.html"
python3 - "$T/cat.html" <<'PY' || bad "no usable by-category grouping in the page's data"
import base64, json, re, sys
h = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script type="application/json" id="memsnap-data-1">(.*?)</script>', h, re.S).group(1))
assert sorted(d["modes"]) == ["alloc", "category", "site"], d["modes"].keys()
assert len(d["modes"]["category"]) >= 1
assert d["legtitle"]["category"] == "bands: what the memory is", d["legtitle"]
assert "cat" in d["allocs"]
def varints(s):
    out, v, shift = [], 0, 0
    for c in base64.b64decode(s):
        v |= (c & 127) << shift
        shift += 7
        if not c & 128:
            out.append(-(v >> 1) - 1 if v & 1 else v >> 1)
            v, shift = 0, 0
    return out
g = varints(d["modes"]["category"][0][0]["g"])
names = [d["strings"][-1 - x] for x in g[:8]]
assert names == ["parameter", "optimizer state", "workspace", "gradient", "input",
                 "activation", "temporary", "other"], names
PY
grep -q 'data-memsnap-mode' "$T/cat.html" || bad "no grouping buttons in the script"

# Leaks are outlined unless asked not to.
ms_status 0 view testdata/leak_layers.pickle -o "$T/leak.html"
grep -q '"hl":\[\[' "$T/leak.html" || bad "no outlined band on a leak snapshot"
ms_status 0 view testdata/leak_layers.pickle -o "$T/noleak.html" --no-leaks
if grep -q '"hl":\[\[' "$T/noleak.html"; then bad "--no-leaks still outlines"; fi

# Degenerate traces: no event at all, and a single one, still make a page.
python3 - "$T" <<'PY'
import pickle, sys
pickle.dump({"segments": [], "device_traces": [[]]}, open(sys.argv[1] + "/empty.pickle", "wb"))
pickle.dump({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1024, "size": 512,
             "stream": 0, "time_us": 5, "frames": []}]]}, open(sys.argv[1] + "/one.pickle", "wb"))
PY
ms_status 0 view "$T/empty.pickle" "$T/one.pickle" -o "$T/tiny.html"
[ "$(grep -o 'data-memsnap-view="memsnap-data-[0-9]*"' "$T/tiny.html" | sort -u | wc -l)" -eq 2 ] ||
  bad "degenerate traces did not give two charts"

finish view
