#!/usr/bin/env python3
"""Rewrites real recordings into what other machines and odd dumps give (issue 33), with
the Python standard library only. Used by tests/cli/windows.sh.

  recordings.py windows SRC DST      every frame's path in Windows form
  recordings.py unwin                JSON on stdin, its Windows paths back in POSIX form
  recordings.py degenerate SRC DIR   one.pickle (one event), instant.pickle (events at one
                                     instant), none.pickle (no events)

The Windows form is the one a course's machine records: the project under
D:\\Dev\\assignment2-systems\\ (its last directory kept, so sites read as the original's),
the virtualenv's packages under .venv\\Lib\\site-packages\\, the interpreter under
C:\\Python312\\.
"""
import json
import pickle
import sys

PROJECT = "D:\\Dev\\assignment2-systems\\"
VENV = "D:\\Dev\\assignment2-systems\\.venv\\Lib\\site-packages\\"
PYTHON = "C:\\Python312\\"
# POSIX prefix -> Windows prefix; the rest of the path has its '/' turned.
MAP = [
    ("/opt/torch/.venv/lib/python3.12/site-packages/", VENV),
    ("/usr/lib/python3.12/", PYTHON + "Lib\\"),
    ("/usr/bin/python3.12", PYTHON + "python.exe"),
    ("/home/ml/", PROJECT),
    ("/", "C:\\"),
]


def to_windows(path):
    for posix, win in MAP:
        if path.startswith(posix):
            return win + path[len(posix):].replace("/", "\\")
    return path


def to_posix(text):
    for posix, win in MAP:
        if text.startswith(win):
            return posix + text[len(win):].replace("\\", "/")
    return text


def frames_of(d):
    for trace in d.get("device_traces", []):
        for e in trace:
            yield from e.get("frames") or []
    for seg in d.get("segments", []):
        for b in seg.get("blocks", []):
            yield from b.get("frames") or []
            for h in b.get("history") or []:
                yield from h.get("frames") or []


def windows(src, dst):
    with open(src, "rb") as f:
        d = pickle.load(f)
    for fr in frames_of(d):
        fr["filename"] = to_windows(fr["filename"])
    with open(dst, "wb") as f:
        pickle.dump(d, f, protocol=4)


def unwin():
    def walk(v):
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return to_posix(v) if isinstance(v, str) else v

    json.dump(walk(json.load(sys.stdin)), sys.stdout, indent=1)
    sys.stdout.write("\n")


def degenerate(src, out):
    with open(src, "rb") as f:
        d = pickle.load(f)
    trace = d["device_traces"][0]
    allocs = [e for e in trace if e["action"] == "alloc"]
    # One event, as a dump of one op leaves it.
    one = {"segments": [], "device_traces": [[allocs[0]]]}
    # The first twenty entries, every one stamped at the first's time.
    t = trace[0]["time_us"]
    instant = {"segments": [], "device_traces": [[dict(e, time_us=t) for e in trace[:20]]]}
    # No events: the allocator's state only.
    none = {"segments": d["segments"], "device_traces": [[]]}
    for name, snap in (("one", one), ("instant", instant), ("none", none)):
        with open("%s/%s.pickle" % (out, name), "wb") as f:
            pickle.dump(snap, f, protocol=4)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "windows":
        windows(sys.argv[2], sys.argv[3])
    elif cmd == "unwin":
        unwin()
    elif cmd == "degenerate":
        degenerate(sys.argv[2], sys.argv[3])
    else:
        sys.exit("unknown command " + cmd)
