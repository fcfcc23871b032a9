"""Real snapshots for the allocator's state at any instant (issue 37) and for block
rounding under roundup_power2_divisions (issue 36): seeded churn of mixed sizes on two
streams, with the allocator's full state taken at known instants.

`instants`: [{label, time_us, event_index, counters, free, segments}] where
- the instant is quiet: torch.cuda.synchronize(), then QUIET s with no allocator event
  before and after it; `time_us` (the trace's clock) lies inside that gap;
- `event_index` = len(torch.cuda.memory._snapshot()["device_traces"][device]) at that
  instant: the state is the one after the trace's entries [0, event_index). Segments and
  trace come from the same _snapshot() call (torch.cuda.memory_snapshot() is its
  "segments"). Each such call also adds one entry of action "snapshot" to the trace, and
  that entry is entry `event_index` of the dumped file (`entry_at_event_index`, read back
  from the dump, says so); `time_us` is taken after the call returns, so it lies between
  that entry and the next one;
- `segments`: every segment in address order, with the names _snapshot() uses (address,
  total_size, allocated_size, active_size, requested_size, stream, segment_type,
  segment_pool_id, is_expandable) and its `blocks` in address order (address, size,
  requested_size, state: active_allocated, active_pending_free or inactive);
- `free`: inactive blocks summed (bytes, count, largest), in total, per segment_type and
  per stream; `counters`: allocated / reserved / requested / active bytes now.
`streams`: {"default": id, "side": id} as the segments' `stream` values. Tensors used on the
side stream with record_stream are freed last in some phases, so their blocks are
active_pending_free at the next instant.

The truth file is written compactly (one line): it is large.

Run on a GPU machine, one scenario a process (each sets its own PYTORCH_CUDA_ALLOC_CONF):
    python3 scenarios_segments.py OUTDIR NAME
"""
import json, os, random, sys, time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as S
import scenarios_explain as E

S.OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
KiB, MiB = 2**10, 2**20
now_us = E.now_us
SEG_KEYS = ("address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
            "segment_type", "segment_pool_id", "is_expandable")


def plain(v):
    return list(v) if isinstance(v, tuple) else v


def free_summary(segs):
    def add(into, key, size):
        d = into.setdefault(str(key), {"bytes": 0, "blocks": 0, "largest": 0})
        d["bytes"] += size
        d["blocks"] += 1
        d["largest"] = max(d["largest"], size)
    total = {"bytes": 0, "blocks": 0, "largest": 0}
    per_pool, per_stream = {}, {}
    for s in segs:
        for b in s["blocks"]:
            if b["state"] != "inactive":
                continue
            total["bytes"] += b["size"]
            total["blocks"] += 1
            total["largest"] = max(total["largest"], b["size"])
            add(per_pool, s["segment_type"], b["size"])
            add(per_stream, s["stream"], b["size"])
    return {"total": total, "per_segment_type": per_pool, "per_stream": per_stream}


class States:
    def __init__(self):
        self.list = []

    def at(self, label, **extra):
        torch.cuda.synchronize()
        time.sleep(E.QUIET)
        snap = torch.cuda.memory._snapshot()
        t = now_us()
        st = torch.cuda.memory_stats()
        dev = torch.cuda.current_device()
        traces = snap.get("device_traces") or []
        segs = []
        for s in sorted(snap["segments"], key=lambda s: s["address"]):
            if s.get("device", dev) != dev:
                continue
            seg = {k: plain(s.get(k)) for k in SEG_KEYS}
            seg["blocks"] = [{"address": b["address"], "size": b["size"],
                              "requested_size": b.get("requested_size"), "state": b["state"]}
                             for b in sorted(s["blocks"], key=lambda b: b["address"])]
            segs.append(seg)
        rec = {"label": label, "time_us": t, "event_index": len(traces[dev]) if dev < len(traces) else 0,
               "counters": {"allocated_bytes": st["allocated_bytes.all.current"],
                            "reserved_bytes": st["reserved_bytes.all.current"],
                            "requested_bytes": st["requested_bytes.all.current"],
                            "active_bytes": st["active_bytes.all.current"]},
               "free": free_summary(segs), "segments": segs}
        rec.update(extra)
        self.list.append(rec)
        time.sleep(E.QUIET)
        return rec


def pick_size(rng):
    r = rng.random()
    if r < 0.5:
        return rng.randint(1, MiB - 1)              # small pool (2 MiB segments)
    if r < 0.8:
        return rng.randint(MiB, 10 * MiB)           # large pool, 20 MiB segments
    return rng.randint(10 * MiB + 1, 48 * MiB)      # large pool, a segment of its own size


def churn(rng, live, side, n_alloc=28, free_frac=0.5, pending=True):
    """n_alloc tensors of mixed sizes (about one in four on the side stream), then frees
    free_frac of all that is alive in a seeded shuffled order; with `pending`, a default-stream
    tensor used on the side stream (record_stream) is freed last."""
    for _ in range(n_alloc):
        n = pick_size(rng)
        if rng.random() < 0.25:
            with torch.cuda.stream(side):
                t = torch.empty(n, dtype=torch.uint8, device="cuda")
        else:
            t = torch.empty(n, dtype=torch.uint8, device="cuda")
        live.append(t)
    rng.shuffle(live)
    del live[:int(len(live) * free_frac)]
    if pending:
        t = torch.empty(pick_size(rng), dtype=torch.uint8, device="cuda")
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            t.fill_(1)
        t.record_stream(side)
        del t


def stop_compact(name, base, truth):
    S.stop(name, base, truth)
    path = os.path.join(S.OUT, name + ".truth.json")
    with open(path) as f:
        t = json.load(f)
    import pickle
    with open(os.path.join(S.OUT, name + ".pickle"), "rb") as f:
        trace = pickle.load(f)["device_traces"][torch.cuda.current_device()]
    for i in t["instants"]:
        k = i["event_index"]
        i["entry_at_event_index"] = trace[k]["action"] if k < len(trace) else None
    t["snapshot_entries_in_trace"] = sum(1 for e in trace if e["action"] == "snapshot")
    with open(path, "w") as f:
        json.dump(t, f, separators=(",", ":"), sort_keys=True)


def seg_run(name, note, late=False, seed=37):
    rng = random.Random(seed)
    side = torch.cuda.Stream()
    live = []
    before = {}
    if late:
        for _ in range(2):
            churn(rng, live, side, pending=False)
        model = E.MLP(n=4).cuda()
        with torch.no_grad():
            model(torch.randn(16, 128, 512, device="cuda"))
        torch.cuda.synchronize()
        before = {"parameter_bytes": E.storage_bytes(list(model.parameters())),
                  "tensors_alive": len(live)}
    base = S.start()
    states = States()
    states.at("start")
    for phase in range(1, 9):
        churn(rng, live, side, free_frac=0.75 if phase == 7 else 0.5)
        if late and phase == 3:
            with torch.no_grad():
                y = model(torch.randn(16, 128, 512, device="cuda"))
            live.append(y)
        if phase == 5:
            torch.cuda.empty_cache()
        states.at(f"phase {phase}", phase=phase, tensors_alive=len(live),
                  empty_cache_before=(phase == 5))
    truth = {"scenario": note, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"), "seed": seed,
             "streams": {"default": torch.cuda.current_stream().cuda_stream, "side": side.cuda_stream},
             "instants": states.list, "leaks": [],
             "churn": "8 phases; each: 28 tensors (1/2 under 1 MiB, 3/10 1-10 MiB, 1/5 10-48 MiB; 1/4 on the "
                      "side stream), then a seeded shuffle frees half of all alive (3/4 in phase 7), then one "
                      "default-stream tensor used on the side stream with record_stream is freed; "
                      "torch.cuda.empty_cache() after phase 5's churn"}
    if late:
        truth["before_recording"] = dict(before, what="2 churn phases (no record_stream) and E.MLP(n=4) with "
                                                      "a no_grad forward, before _record_memory_history")
    stop_compact(name, base, truth)


def seg_churn():
    seg_run("seg_churn", "mixed-size churn on two streams, default allocator settings, the allocator's state "
                         "at 9 quiet instants")


def seg_expandable():
    seg_run("seg_expandable", "seg_churn's churn under expandable_segments:True")


def seg_max_split():
    seg_run("seg_max_split", "seg_churn's churn under max_split_size_mb:20 (blocks over 20 MiB are never split)")


def seg_late_start():
    seg_run("seg_late_start", "churn and a model built before recording started (blocks alive before the first "
                              "event), then seg_churn's phases with instants", late=True)


# ------------------------------------------------------------------ roundup_power2_divisions

LEAK_A, LEAK_B, LEAK_C = [], [], []
SITES = {}
SIZE_A, SIZE_B, SIZE_C = int(5.3 * MiB), 700 * KiB, 37 * KiB + 3


def seg_roundup():
    rng = random.Random(36)
    side = torch.cuda.Stream()
    base = S.start()
    states = States()
    states.at("start")
    live, marks, growth = [], [], []
    iters = 6
    for i in range(iters):
        marks.append(now_us())
        st0 = torch.cuda.memory_stats()
        churn(rng, live, side, n_alloc=12)
        LEAK_A.append(torch.empty(SIZE_A, dtype=torch.uint8, device="cuda")); SITES["a"] = E.line_here()
        LEAK_B.append(torch.empty(SIZE_B, dtype=torch.uint8, device="cuda")); SITES["b"] = E.line_here()
        LEAK_C.append(torch.empty(SIZE_C, dtype=torch.uint8, device="cuda")); SITES["c"] = E.line_here()
        del live[:]                                      # the churn is temporary: nothing but the leaks stays
        torch.cuda.synchronize()
        st1 = torch.cuda.memory_stats()
        growth.append({"requested_bytes": st1["requested_bytes.all.current"] - st0["requested_bytes.all.current"],
                       "allocated_bytes": st1["allocated_bytes.all.current"] - st0["allocated_bytes.all.current"]})
        states.at(f"iteration {i}", iteration=i)
    torch.cuda.synchronize()
    marks.append(now_us())
    blocks = {b["address"]: b["size"] for s in torch.cuda.memory_snapshot() for b in s["blocks"]}
    leaks = []
    for key, kept, size in (("a", LEAK_A, SIZE_A), ("b", LEAK_B, SIZE_B), ("c", LEAK_C, SIZE_C)):
        addrs = [t.data_ptr() for t in kept]
        alloc = sorted({blocks.get(a) for a in addrs}, key=lambda v: -1 if v is None else v)
        leaks.append(dict(SITES[key], count=len(kept), bytes_each_requested=size,
                          bytes_each_allocated=alloc[0] if len(alloc) == 1 else alloc,
                          addresses=addrs))
    stop_compact("seg_roundup", base, {
        "scenario": "roundup_power2_divisions:4; 6 iterations of temporary churn (12 tensors, record_stream on "
                    "the side stream) and three leaked tensors each: 5.3 MiB, 700 KiB and 37 KiB + 3 bytes",
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "streams": {"default": torch.cuda.current_stream().cuda_stream, "side": side.cuda_stream},
        "iterations": iters, "iteration_start_us": marks, "leaks": leaks, "growth_per_iteration": growth,
        "instants": states.list,
        "leaks_note": "bytes_each_allocated = the size of the block at each kept tensor's address in "
                      "torch.cuda.memory_snapshot() at the end (one value when all agree); that call adds "
                      "the trace's last 'snapshot' entry"})


ALL = {f.__name__: f for f in [seg_churn, seg_expandable, seg_max_split, seg_late_start, seg_roundup]}

if __name__ == "__main__":
    S.run(ALL, S.OUT, sys.argv[2:])
