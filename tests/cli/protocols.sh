#!/usr/bin/env bash
# Every pickle protocol (0-5), gzip and standard input give the same summary as the
# original file: Python re-pickles real snapshots, memsnap reads them back.
# Protocols 0-3 exercise the general VM (PUT/BINPUT memo, text opcodes), 4-5 the fast
# trace-entry reader, so equal results also hold the two paths to each other.
set -euo pipefail
source "$(dirname "$0")/common.bash"
compare() { # reference.json candidate.json label
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
a, b, label = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
for f in a["files"] + b["files"]:
    for k in ("path", "pickle_protocol", "pickle_bytes"):
        f.pop(k)
if a != b:
    print(f"FAIL {label}: summary differs from the original")
    sys.exit(1)
print(f"ok {label}")
PY
}
n=0
for name in gpt2_train ring_wrap oom ddp_rank1 streams; do
  src=testdata/$name.pickle
  "$bin" summary --json --top 50 "$src" > "$tmp/ref.json"
  for p in 0 1 2 3 4 5; do
    python3 -c "import pickle,sys; pickle.dump(pickle.load(open(sys.argv[1],'rb')), open(sys.argv[2],'wb'), protocol=int(sys.argv[3]))" "$src" "$tmp/p$p.pickle" "$p"
    "$bin" summary --json --top 50 "$tmp/p$p.pickle" > "$tmp/p$p.json"
    got=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['files'][0]['pickle_protocol'])" "$tmp/p$p.json")
    if [ "$p" -ge 2 ] && [ "$got" != "$p" ]; then echo "FAIL $name: protocol $p read as $got"; exit 1; fi
    compare "$tmp/ref.json" "$tmp/p$p.json" "$name protocol $p"; n=$((n+1))
  done
  gzip -c "$src" > "$tmp/z.pickle.gz"
  "$bin" summary --json --top 50 "$tmp/z.pickle.gz" > "$tmp/z.json"
  compare "$tmp/ref.json" "$tmp/z.json" "$name gzip"; n=$((n+1))
  "$bin" summary --json --top 50 - < "$src" > "$tmp/stdin.json"
  compare "$tmp/ref.json" "$tmp/stdin.json" "$name stdin"; n=$((n+1))
  gzip -c "$src" | "$bin" summary --json --top 50 - > "$tmp/zstdin.json"
  compare "$tmp/ref.json" "$tmp/zstdin.json" "$name gzip stdin"; n=$((n+1))
done
echo "$n passed, 0 failed"
