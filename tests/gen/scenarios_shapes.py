"""Real snapshots of the shapes people actually record (issue 33): one forward dumped with
its graph alive, one forward + backward with no optimizer step, one full step, a
benchmark loop warmed up before the recording, an inference loop, a compiled model under
max-autotune (the compile phase recorded), and a reduce-overhead (CUDA graphs) run beside
its eager twin. Same truth format as scenarios.py (allocator counters), plus:

- `shape`: what the recording is (forward_graph_alive, one_step_no_optimizer, one_step,
  benchmark_loop, inference_loop, training_loop) and `iterations`, the count a reader
  should find; `iteration_start_us`: each iteration's start plus one after the last.
- `user_frame` {filename, line, name}: the user's line that called the model, taken with
  sys._getframe on that very line.
- `phases`: [{name, start_us, end_us, requested_bytes_at_end, allocations_so_far}] at
  synchronised boundaries (allocations_so_far = allocation.all.allocated minus its value
  when recording began).
- `phase_peaks` (where peaks are measured per phase): the allocator's peak counters read
  just before each torch.cuda.reset_peak_memory_stats(). A reset sets each peak to the
  current value, so the largest of those readings is the recording's peak:
  `counters_at_end` holds that maximum for the *.peak keys (the raw counters at the end
  are in `counters_at_end_raw`), so peaks still compare exactly against a reader's.

Run on a GPU machine, one scenario a process:
    python3 scenarios_shapes.py OUTDIR NAME
"""
import json, os, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as S
import scenarios_explain as E
import scenarios_compat as C

S.OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
MiB = 2**20
now_us = E.now_us
PEAK_KEYS = ("allocated_bytes.all.peak", "reserved_bytes.all.peak", "active_bytes.all.peak",
             "requested_bytes.all.peak")


# ------------------------------------------------------------------ helpers

class Peaks:
    """Per-phase peaks; see the module's note on `phase_peaks`."""

    def __init__(self, base):
        self.base_allocs = base["allocation.all.allocated"]
        self.best = {k: 0 for k in PEAK_KEYS}
        self.phases = []

    def cut(self, label, **extra):
        torch.cuda.synchronize()
        s = torch.cuda.memory_stats()
        rec = {"label": label, "end_us": now_us(),
               "requested_peak_bytes": s["requested_bytes.all.peak"],
               "allocated_peak_bytes": s["allocated_bytes.all.peak"],
               "reserved_peak_bytes": s["reserved_bytes.all.peak"],
               "requested_bytes_at_end": s["requested_bytes.all.current"],
               "allocations_so_far": s["allocation.all.allocated"] - self.base_allocs}
        rec.update(extra)
        for k in PEAK_KEYS:
            self.best[k] = max(self.best[k], s[k])
        torch.cuda.reset_peak_memory_stats()
        self.phases.append(rec)
        return rec


class Phases:
    """Named phases of one step, at synchronised boundaries."""

    def __init__(self, base):
        self.base_allocs = base["allocation.all.allocated"]
        self.list = []
        self.t0 = None

    def begin(self):
        torch.cuda.synchronize()
        self.t0 = now_us()

    def end(self, name):
        torch.cuda.synchronize()
        s = torch.cuda.memory_stats()
        self.list.append({"name": name, "start_us": self.t0, "end_us": now_us(),
                          "requested_bytes_at_end": s["requested_bytes.all.current"],
                          "allocations_so_far": s["allocation.all.allocated"] - self.base_allocs})
        self.t0 = now_us()


def patch_truth(name, fn):
    path = os.path.join(S.OUT, name + ".truth.json")
    with open(path) as f:
        t = json.load(f)
    fn(t)
    with open(path, "w") as f:
        json.dump(t, f, indent=1, sort_keys=True)


def stop_with_peaks(name, base, truth, peaks, scan=False):
    truth["phase_peaks"] = peaks.phases
    if scan:
        C.stop(name, base, truth)
    else:
        S.stop(name, base, truth)

    def fix(t):
        end = t["counters_at_end"]
        t["counters_at_end_raw"] = dict(end)
        for k in PEAK_KEYS:
            end[k] = max(end[k], peaks.best[k])
        t["peak_counters_note"] = ("reset_peak_memory_stats() was called between phases; counters_at_end "
                                   "*.peak = the largest peak read before each reset (= the recording's "
                                   "peak); counters_at_end_raw = the counters as read at the end")
    patch_truth(name, fix)


def model_state(model, opt=None):
    ps = list(model.parameters())
    return {"parameter_bytes": E.storage_bytes(ps + list(model.buffers())),
            "gradient_bytes": E.storage_bytes([p.grad for p in ps]),
            "optimizer_state_bytes": E.storage_bytes(E.opt_tensors(opt))}


def requested_now():
    return torch.cuda.memory_stats()["requested_bytes.all.current"]


class Block(nn.Module):
    """Residual MLP block: keeps fc1's output and GELU's output for backward (9 x d per token)."""

    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(x)))


class Deep(nn.Module):
    def __init__(self, d=256, n=24):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.head = nn.Linear(d, 1)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


# ------------------------------------------------------------------ one forward, graph alive

def shape_forward_kept():
    """The course-script shape: the model and the batch exist, recording starts, one
    forward with grad enabled, dumped while its output (and so its graph) is alive."""
    d, n, batch = 512, 8, (16, 128, 512)
    model = Deep(d, n).cuda()
    x = torch.randn(*batch, device="cuda")
    with torch.no_grad():
        model(x)                      # cuBLAS workspaces exist before the recording
    torch.cuda.synchronize()
    state = model_state(model)
    base = S.start()
    ph = Phases(base)
    site = {}
    ph.begin()
    logits = model(x); site.update(E.line_here())
    ph.end("forward")
    s = torch.cuda.memory_stats()
    alive_req = s["requested_bytes.all.current"] - base["requested_bytes.all.current"]
    alive_alloc = s["allocated_bytes.all.current"] - base["allocated_bytes.all.current"]
    n_alive = ((s["allocation.all.allocated"] - base["allocation.all.allocated"])
               - (s["allocation.all.freed"] - base["allocation.all.freed"]))
    S.stop("shape_forward_kept", base, {
        "scenario": f"Deep({d}, {n} residual MLP blocks) and a {batch} batch built before recording (plus a "
                    "no_grad warm-up forward, so cuBLAS workspaces exist), then logits = model(x) with "
                    "grad enabled; dumped while logits and the autograd graph are alive",
        "shape": "forward_graph_alive", "iterations": 0, "iteration_start_us": [],
        "user_frame": site, "phases": ph.list, "leaks": [],
        "parameter_bytes": state["parameter_bytes"], "input_bytes": x.untyped_storage().nbytes(),
        "logits_bytes": logits.untyped_storage().nbytes(),
        "requested_bytes_at_start": base["requested_bytes.all.current"],
        "requested_bytes_at_end": s["requested_bytes.all.current"],
        "graph_alive_at_end_requested_bytes": alive_req,
        "graph_alive_at_end_allocated_bytes": alive_alloc,
        "graph_alive_at_end_allocations": n_alive,
        "graph_note": "graph_alive_* = what the recording allocated and is still alive at the dump (the saved "
                      "activations and the logits): requested_bytes at the end minus at the start (parameters, "
                      "the input batch and cuBLAS workspaces were alive before the first event); "
                      "allocations = allocs - frees during the trace"})


# ------------------------------------------------------------------ one step

def one_step(name, with_opt):
    d, n, batch = 256, 24, (32, 128, 256)
    model = Deep(d, n).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4) if with_opt else None
    x = torch.randn(*batch, device="cuda")
    model(x).pow(2).mean().backward()           # warm-up: cuBLAS workspaces for forward and backward
    model.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.empty_cache()
    before = model_state(model, opt)
    base = S.start()
    ph = Phases(base)
    site = {}
    ph.begin()
    start = ph.t0
    loss = model(x).pow(2).mean(); site.update(E.line_here())
    ph.end("forward")
    loss.backward()
    ph.end("backward")
    del loss
    if opt is not None:
        opt.step()
        ph.end("optimizer")
        opt.zero_grad(set_to_none=True)
        ph.end("zero_grad")
    end = now_us()
    after = model_state(model, opt)
    what = ("one forward, backward, AdamW step and zero_grad(set_to_none=True)" if with_opt
            else "one forward and one backward, no optimizer step (gradients alive at the end)")
    S.stop(name, base, {
        "scenario": f"Deep({d}, {n} residual MLP blocks: the backward frees layer by layer), batch {batch} built "
                    f"before recording, a warm-up forward+backward, reset_peak_memory_stats + empty_cache, then "
                    f"{what}",
        "shape": "one_step" if with_opt else "one_step_no_optimizer", "iterations": 1,
        "iteration_start_us": [start, end], "layers": n, "user_frame": site, "phases": ph.list,
        "leaks": [], "optimizer": type(opt).__name__ if opt else None,
        "model_state_at_start": before, "model_state_at_end": after,
        "input_bytes": x.untyped_storage().nbytes()})


def shape_fwd_bwd():
    one_step("shape_fwd_bwd", False)


def shape_one_step():
    one_step("shape_one_step", True)


# ------------------------------------------------------------------ benchmark loop

def shape_bench_loop():
    """Warm-up before the recording; each timed turn is a forward+backward without a step
    (gradients accumulate), then a full step (forward, backward, step, zero_grad)."""
    d, n, batch = 256, 8, (32, 128, 256)
    model = Deep(d, n).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(*batch, device="cuda")
    for _ in range(3):
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    before = model_state(model, opt)
    base = S.start()
    marks, turns = [], []
    site_fb, site_step = {}, {}
    for i in range(5):
        torch.cuda.synchronize()
        t0 = now_us()
        marks.append(t0)
        loss = model(x).pow(2).mean(); site_fb.update(E.line_here())
        loss.backward()
        del loss
        torch.cuda.synchronize()
        t1 = now_us()
        loss = model(x).pow(2).mean(); site_step.update(E.line_here())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del loss
        torch.cuda.synchronize()
        t2 = now_us()
        turns.append({"turn": i, "forward_backward": [t0, t1], "full_step": [t1, t2]})
    marks.append(now_us())
    S.stop("shape_bench_loop", base, {
        "scenario": f"Deep({d}, {n} blocks), AdamW, 3 warm-up steps before recording (parameters and Adam state "
                    "alive before the first event, cache kept), then 5 timed turns on one fixed batch, each a "
                    "forward+backward without step (gradients made) followed by a full step (forward, backward "
                    "accumulating into those gradients, step, zero_grad(set_to_none=True))",
        "shape": "benchmark_loop", "iterations": 5, "iteration_start_us": marks, "passes_per_iteration": 2,
        "turns": turns, "user_frame": site_fb, "user_frames": [site_fb, site_step], "leaks": [],
        "optimizer": "AdamW", "warmup_steps_before_recording": 3, "model_state_at_start": before,
        "model_state_at_end": model_state(model, opt), "input_bytes": x.untyped_storage().nbytes()})


# ------------------------------------------------------------------ inference loop

def shape_infer_loop():
    d, n, batch = 512, 8, (32, 128, 512)
    base = S.start()
    model = Deep(d, n).cuda().eval()
    probe = E.Probe(model, None)
    marks = []
    site = {}
    scores = []
    with torch.no_grad():
        for i in range(6):
            marks.append(now_us())
            x = torch.randn(*batch, device="cuda")
            probe.at("before_forward", i, input_bytes=x.untyped_storage().nbytes())
            y = model(x); site.update(E.line_here())
            probe.at("after_forward", i, input_bytes=x.untyped_storage().nbytes(),
                     output_bytes=y.untyped_storage().nbytes())
            scores.append(y.mean().item())
            del x, y
    torch.cuda.synchronize()
    marks.append(now_us())
    params = E.storage_bytes(list(model.parameters()) + list(model.buffers()))
    S.stop("shape_infer_loop", base, {
        "scenario": f"Deep({d}, {n} blocks) built inside the recording, model.eval() and torch.no_grad(), 6 "
                    f"batches of {batch} (no gradients, no optimizer state, nothing kept)",
        "shape": "inference_loop", "iterations": 6, "iteration_start_us": marks, "user_frame": site,
        "instants": probe.points, "optimizer": None, "leaks": [], "parameter_bytes": params,
        "one_time_alive_at_end_requested_bytes": requested_now() - params,
        "one_time_note": "what stays besides the parameters: cuBLAS workspaces made at the first matmul"})


# ------------------------------------------------------------------ compiled, max-autotune

def disable_caches():
    import torch._inductor.config as ic
    done = {}
    for k, v in (("force_disable_caches", True), ("fx_graph_cache", False), ("autotune_local_cache", False)):
        if hasattr(ic, k):
            setattr(ic, k, v)
            done[k] = v
    return done


def shape_compile_autotune():
    torch.set_float32_matmul_precision("high")
    settings = disable_caches()
    try:
        settings["mode_options"] = {k: repr(v) for k, v in
                                    torch._inductor.list_mode_options("max-autotune-no-cudagraphs").items()}
    except Exception as e:
        settings["mode_options"] = repr(e)
    base = S.start()                   # before the model: the trace is complete
    model = nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 1024)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    cmodel = torch.compile(model, mode="max-autotune-no-cudagraphs")
    peaks = Peaks(base)
    marks, site = [], {}
    windows = []
    for i in range(4):
        torch.cuda.synchronize()
        marks.append(now_us())
        x = torch.randn(512, 1024, device="cuda")
        allocs0 = torch.cuda.memory_stats()["allocation.all.allocated"] - base["allocation.all.allocated"]
        t0 = now_us()
        out = cmodel(x); site.update(E.line_here())
        if i == 0:
            rec = peaks.cut("first call: Dynamo, AOTAutograd and Inductor's forward graph with autotuning, "
                            "then the first forward", start_us=t0)
            windows.append(dict(what="first call of the compiled model", start_us=t0, end_us=rec["end_us"],
                                allocations=rec["allocations_so_far"] - allocs0))
        loss = out.pow(2).mean()
        allocs1 = torch.cuda.memory_stats()["allocation.all.allocated"] - base["allocation.all.allocated"]
        t1 = now_us()
        loss.backward()
        if i == 0:
            rec = peaks.cut("first backward: Inductor compiles the backward graph when it first runs (with "
                            "autotuning), then runs it", start_us=t1)
            windows.append(dict(what="first backward", start_us=t1, end_us=rec["end_us"],
                                allocations=rec["allocations_so_far"] - allocs1))
        t2 = now_us()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, out, loss
        if i == 0:
            peaks.cut("step 0 optimizer", start_us=t2)
        else:
            peaks.cut(f"step {i}", start_us=marks[-1])
    torch.cuda.synchronize()
    marks.append(now_us())
    for w, p in zip(windows, peaks.phases[:2]):
        w.update(seconds=round((w["end_us"] - w["start_us"]) / 1e6, 3),
                 requested_peak_bytes=p["requested_peak_bytes"], allocated_peak_bytes=p["allocated_peak_bytes"])
    step_peaks = peaks.phases[3:]
    stop_with_peaks("shape_compile_autotune", base, {
        "scenario": "nn.Sequential(Linear(1024,2048), GELU, Linear(2048,1024)) under torch.compile(mode="
                    "'max-autotune-no-cudagraphs'), AdamW, batch 512x1024, float32 matmul precision 'high', "
                    "Inductor caches off; recording started before the model was built; 4 training steps, "
                    "the first of which compiles",
        "shape": "training_loop", "iterations": 3, "iteration_start_us": marks[1:],
        "iterations_including_compile_step": 4, "all_step_start_us": marks,
        "iterations_note": "step 0 is the compile step: its forward call compiles the forward graph (autotuning "
                           "its matmuls) and its backward compiles the backward graph (autotuning again) before "
                           "each runs once; `iterations` counts the 3 steps after it, "
                           "`iterations_including_compile_step` counts all 4; iteration_start_us = the starts "
                           "of steps 1..3 plus the end",
        "compile_windows": windows,
        "compile_window": {"start_us": windows[0]["start_us"], "end_us": windows[1]["end_us"],
                           "note": "from the first call's start to the first backward's end: both compile "
                                   "windows and the one real forward and backward of step 0 inside them"},
        "compile_seconds": round(sum(w["seconds"] for w in windows), 3),
        "compile_peak_requested_bytes": max(w["requested_peak_bytes"] for w in windows),
        "compile_peak_allocated_bytes": max(w["allocated_peak_bytes"] for w in windows),
        "compile_allocations": sum(w["allocations"] for w in windows),
        "steps_after_compile_peak_requested_bytes": max(p["requested_peak_bytes"] for p in step_peaks),
        "step_peaks": step_peaks, "user_frame": site, "leaks": [], "optimizer": "AdamW",
        "inductor_settings": settings}, peaks, scan=True)


# ------------------------------------------------------------------ reduce-overhead and its eager twin

def twin(name, mode, steps=6):
    torch.set_float32_matmul_precision("high")
    settings = disable_caches() if mode else {}
    base = S.start()
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    cmodel = torch.compile(model, mode=mode) if mode else model
    peaks = Peaks(base)
    marks, site, first = [], {}, {}
    for i in range(steps):
        torch.cuda.synchronize()
        marks.append(now_us())
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(256, 1024, device="cuda")
        t0 = now_us()
        out = cmodel(x); site.update(E.line_here())
        if i == 0:
            torch.cuda.synchronize()
            first["first_call"] = {"start_us": t0, "end_us": now_us()}
        loss = out.pow(2).mean()
        t1 = now_us()
        loss.backward()
        if i == 0:
            torch.cuda.synchronize()
            first["first_backward"] = {"start_us": t1, "end_us": now_us()}
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, out, loss
        peaks.cut(f"iteration {i}", start_us=marks[-1])
    torch.cuda.synchronize()
    marks.append(now_us())
    segs = torch.cuda.memory_snapshot()
    pool = [s for s in segs if tuple(s.get("segment_pool_id", (0, 0))) != (0, 0)]
    truth = {"scenario": f"nn.Sequential(Linear(1024,4096), GELU, Linear(4096,1024)), AdamW, {steps} steps of "
                         "batch 256x1024, float32 matmul precision 'high', "
             + ("under torch.compile(mode='reduce-overhead') (CUDA graph trees: warm-up, record, replays; "
                "cudagraph_mark_step_begin each step)" if mode else "eager (the twin of shape_reduce_overhead)")
             + "; recording started before the model was built",
             "shape": "training_loop", "iterations": steps, "iteration_start_us": marks, "user_frame": site,
             "compile_mode": mode, "leaks": [], "optimizer": "AdamW",
             "per_iteration_requested_peak_bytes": [p["requested_peak_bytes"] for p in peaks.phases],
             "per_iteration_allocated_peak_bytes": [p["allocated_peak_bytes"] for p in peaks.phases],
             "per_iteration_reserved_peak_bytes": [p["reserved_peak_bytes"] for p in peaks.phases],
             "cudagraph_pool_bytes": sum(s["total_size"] for s in pool),
             "cudagraph_pool_segments": [{"address": s["address"], "total_size": s["total_size"],
                                          "allocated_size": s.get("allocated_size"),
                                          "active_size": s.get("active_size"),
                                          "segment_pool_id": list(s["segment_pool_id"]),
                                          "segment_type": s.get("segment_type"), "stream": s.get("stream")}
                                         for s in pool],
             "cudagraph_pool_note": "sum of total_size of the segments whose segment_pool_id != (0, 0) in "
                                    "torch.cuda.memory_snapshot() at the end of the recording",
             "parameter_bytes": E.storage_bytes(list(model.parameters())),
             "optimizer_state_bytes": E.storage_bytes(E.opt_tensors(opt)), "inductor_settings": settings}
    if mode:
        truth["compile_windows"] = first
        truth["compile_window"] = {"start_us": first["first_call"]["start_us"],
                                   "end_us": first["first_backward"]["end_us"],
                                   "note": "the first call compiles the forward graph, the first backward the "
                                           "backward graph; CUDA graphs are recorded in a later step"}
    else:
        truth["first_windows"] = first
    stop_with_peaks(name, base, truth, peaks, scan=True)


def shape_reduce_overhead():
    twin("shape_reduce_overhead", "reduce-overhead")


def shape_eager_twin():
    twin("shape_eager_twin", None)


ALL = {f.__name__: f for f in [shape_forward_kept, shape_fwd_bwd, shape_one_step, shape_bench_loop,
                                shape_infer_loop, shape_compile_autotune, shape_reduce_overhead,
                                shape_eager_twin]}

if __name__ == "__main__":
    S.run(ALL, S.OUT, sys.argv[2:])
