"""Snapshots crafted for the --group pattern engine (issue 34, docs/security.md "Patterns"),
written with the standard library's pickle (protocol 4; a frame dict used again is a memo
reference, as in torch's files). Each is known by construction; tests/cli/group_rules.sh
uses them.

  python3 group_files.py stacks OUT [N]   N (20,000) allocations, each with a stack of
                                          its own: 200 frames drawn from 64 distinct ones
                                          (9.1 MB at N=20,000). Frame k is
                                          /src/pkg{k % 8}/mod{k}.py:{k + 1} fn{k}
  python3 group_files.py allocs OUT [N]   N (100,000) allocations, one of the live ones
                                          freed whenever more than 20,000 are, each with
                                          a stack of three of 1,000 distinct frames,
                                          /src/lib{k % 10}/f{k}.py:{k} g{k} (8.7 MB)
  python3 group_files.py long OUT         two allocations (1 MiB, stack A; 2 MiB, stack B)
                                          whose frames' files are 3,000-byte paths: A's
                                          frame is /deep/aaa.../end.py:7 leaf, B's is
                                          /deep/bbb.../end.py:7 leaf
  python3 group_files.py huge OUT         one allocation whose frame's file is a
                                          300,000-byte path, /deep/aaa.../end.py:7 leaf
  python3 group_files.py shared OUT       2,000 allocations, each with one frame of its
                                          own: one 100,000-byte file name (written once),
                                          lines 1 to 2,000 (200 MB of frame text, 0.2 MB)
"""
import pickle
import random
import sys

MiB = 1 << 20


def event(action, addr, size, t, frames):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
            "frames": frames}


def stacks(n):
    frames = [{"filename": f"/src/pkg{k % 8}/mod{k}.py", "line": k + 1, "name": f"fn{k}"}
              for k in range(64)]
    rnd = random.Random(34)
    trace = []
    t = 1000
    for i in range(n):
        # 200 draws of 64 frames: no two stacks alike.
        st = [frames[rnd.randrange(64)] for _ in range(200)]
        trace.append(event("alloc", 0x7f0000000000 + i * 4096, 4096, t, st))
        t += 3
        if i % 2:
            trace.append(event("free_completed", 0x7f0000000000 + (i - 1) * 4096, 4096, t, []))
            t += 3
    return {"segments": [], "device_traces": [trace]}


def allocs(n):
    frames = [{"filename": f"/src/lib{k % 10}/f{k}.py", "line": k, "name": f"g{k}"}
              for k in range(1000)]
    rnd = random.Random(35)
    trace = []
    live = []
    t = 1000
    for i in range(n):
        st = [frames[rnd.randrange(1000)] for _ in range(3)]
        addr = 0x7f0000000000 + i * 512
        trace.append(event("alloc", addr, 512 * (1 + i % 7), t, st))
        live.append((addr, 512 * (1 + i % 7), st))
        t += 2
        if len(live) > 20000:
            a, s, _ = live.pop(rnd.randrange(len(live)))
            trace.append(event("free_completed", a, s, t, []))
            t += 2
    return {"segments": [], "device_traces": [trace]}


def long_paths():
    a = [{"filename": "/deep/" + "a" * 3000 + "/end.py", "line": 7, "name": "leaf"}]
    b = [{"filename": "/deep/" + "b" * 3000 + "/end.py", "line": 7, "name": "leaf"}]
    trace = [event("alloc", 0x10000000, MiB, 10, a), event("alloc", 0x20000000, 2 * MiB, 20, b)]
    return {"segments": [], "device_traces": [trace]}


def huge_path():
    a = [{"filename": "/deep/" + "a" * 300000 + "/end.py", "line": 7, "name": "leaf"}]
    return {"segments": [], "device_traces": [[event("alloc", 0x10000000, MiB, 10, a)]]}


def shared_name():
    name = "/deep/" + "a" * 99994
    trace = [event("alloc", 0x10000000 + i * 4096, 4096, 10 + i,
                   [{"filename": name, "line": i + 1, "name": "f"}]) for i in range(2000)]
    return {"segments": [], "device_traces": [trace]}


if __name__ == "__main__":
    kind, out = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else None
    if kind == "stacks":
        doc = stacks(n or 20000)
    elif kind == "allocs":
        doc = allocs(n or 100000)
    elif kind == "long":
        doc = long_paths()
    elif kind == "huge":
        doc = huge_path()
    elif kind == "shared":
        doc = shared_name()
    else:
        sys.exit(f"unknown kind {kind!r}")
    with open(out, "wb") as f:
        pickle.dump(doc, f, protocol=4)
