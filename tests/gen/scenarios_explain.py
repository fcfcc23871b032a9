"""Real snapshots for the explaining analyses: memory categories (cat_*), actionable leaks
(leak_*/noleak_*) and out-of-memory errors (oom_*). Same truth format as scenarios.py,
plus truth the script measures itself at known instants:

- `instants` (cat_*): after torch.cuda.synchronize() and a quiet gap (no allocator event
  for QUIET seconds before and after), the exact bytes of parameters + buffers (unique
  CUDA storages), gradients (p.grad), optimizer state (CUDA tensors in opt.state), and
  the allocator's allocated / requested counters. `time_us` is the trace's clock.
- `leaks` (leak_*): the exact allocating line of each injected leak, its count and size;
  `growth_per_step_*` for the graph leak (measured by the allocator's counters).
- `oom` (oom_*): the allocator's state measured inside the OOM observer with
  torch.cuda.memory_snapshot() (what the failure saw), the request, the cause the
  scenario was built to produce. The snapshot itself is dumped inside the observer, the
  way torchtitan dumps one per rank, so `counters_at_end` are taken there too.

Run on a GPU machine, one scenario a process (allocator settings differ):
    python3 scenarios_explain.py OUTDIR NAME
"""
import json, os, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as S

S.OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
QUIET = 0.006
MiB = 2**20


def now_us():
    return time.time_ns() // 1000


def line_here(back=1):
    fr = sys._getframe(back)
    return {"filename": fr.f_code.co_filename, "line": fr.f_lineno, "name": fr.f_code.co_name}


def storage_bytes(tensors):
    """Bytes of the unique CUDA storages behind `tensors` (views and tied weights once)."""
    seen = {}
    for t in tensors:
        if t is None or not torch.is_tensor(t) or not t.is_cuda:
            continue
        st = t.untyped_storage()
        seen[st.data_ptr()] = st.nbytes()
    return sum(seen.values())


def opt_tensors(opt):
    if opt is None:
        return []
    return [v for st in opt.state.values() for v in st.values() if torch.is_tensor(v)]


class Probe:
    """Measures the categories' truth at quiet instants of a training loop."""

    def __init__(self, model, opt):
        self.model, self.opt, self.points = model, opt, []
        self.before_forward = None

    def at(self, label, iteration, **extra):
        torch.cuda.synchronize()
        time.sleep(QUIET)
        t = now_us()
        stats = torch.cuda.memory_stats()
        rec = {"label": label, "iteration": iteration, "time_us": t,
               "allocated_bytes": stats["allocated_bytes.all.current"],
               "requested_bytes": stats["requested_bytes.all.current"],
               "parameter_bytes": storage_bytes(list(self.model.parameters()) + list(self.model.buffers())),
               "gradient_bytes": storage_bytes([p.grad for p in self.model.parameters()]),
               "optimizer_state_bytes": storage_bytes(opt_tensors(self.opt))}
        rec.update(extra)
        if label == "before_forward":
            self.before_forward = rec["requested_bytes"]
        if label == "after_forward" and self.before_forward is not None:
            rec["forward_growth_bytes"] = rec["requested_bytes"] - self.before_forward
        self.points.append(rec)
        time.sleep(QUIET)


class MLP(nn.Module):
    def __init__(self, d=512, n=6, out=1):
        super().__init__()
        self.layers = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                     for _ in range(n)])
        self.head = nn.Linear(d, out)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x)


# ------------------------------------------------------------------ categories

def cat_train(name, model_fn, opt_fn, steps=3, accumulate=1, set_to_none=True, stacks="all",
              prebuilt=False, amp=False, batch=(16, 128, 512), note=""):
    if prebuilt:
        model = model_fn().cuda()
        opt = opt_fn(model)
        torch.cuda.synchronize()
        base = S.start(stacks=stacks)
    else:
        base = S.start(stacks=stacks)
        model = model_fn().cuda()
        opt = opt_fn(model)
    probe = Probe(model, opt)
    marks = []
    for i in range(steps):
        marks.append(now_us())
        for m in range(accumulate):
            x = torch.randn(*batch, device="cuda")
            probe.at("before_forward", i, micro_batch=m, input_bytes=x.untyped_storage().nbytes())
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                loss = model(x).float().pow(2).mean() / accumulate
            probe.at("after_forward", i, micro_batch=m, input_bytes=x.untyped_storage().nbytes())
            loss.backward()
            del loss, x
            probe.at("after_backward", i, micro_batch=m)
        opt.step()
        probe.at("after_step", i)
        opt.zero_grad(set_to_none=set_to_none)
        probe.at("after_zero_grad", i)
    torch.cuda.synchronize()
    marks.append(now_us())
    S.stop(name, base, {"scenario": note, "iteration_start_us": marks, "iterations": steps,
                        "instants": probe.points, "optimizer": type(opt).__name__,
                        "set_to_none": set_to_none, "accumulate": accumulate, "amp": amp,
                        "prebuilt": prebuilt, "stacks": stacks, "leaks": []})


def adamw(model):
    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)


def cat_adamw():
    cat_train("cat_adamw", lambda: MLP(), adamw,
              note="6 MLP blocks d=512, AdamW, 3 steps, zero_grad(set_to_none=True), stacks='all'")


def cat_sgd_frozen():
    def model_fn():
        m = MLP()
        for p in list(m.layers[0].parameters()) + list(m.layers[1].parameters()):
            p.requires_grad_(False)
        return m
    cat_train("cat_sgd_frozen", model_fn,
              lambda m: torch.optim.SGD([p for p in m.parameters() if p.requires_grad], lr=1e-3, momentum=0.9),
              set_to_none=False, stacks="python",
              note="6 MLP blocks, first two frozen, SGD momentum 0.9, zero_grad(set_to_none=False) "
                   "(gradients kept between steps), python-only stacks, 3 steps")


def cat_accum_amp():
    cat_train("cat_accum_amp", lambda: MLP(n=4), adamw, accumulate=3, amp=True,
              note="4 MLP blocks, AdamW, 3 steps of 3 accumulated micro-batches under bf16 autocast")


def cat_prebuilt():
    cat_train("cat_prebuilt", lambda: MLP(), adamw, prebuilt=True,
              note="6 MLP blocks built and moved to the GPU before recording started, AdamW, 3 steps")


def cat_gpt2_annotated():
    """transformers GPT-2 with record_function phase marks, like gpt2_train, plus instants."""
    base = S.start()
    model = S.gpt2().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    probe = Probe(model, opt)
    marks = []
    steps = 3
    for i in range(steps):
        marks.append(now_us())
        x = torch.randint(0, 5000, (8, 256), device="cuda")
        probe.at("before_forward", i, input_bytes=x.untyped_storage().nbytes())
        with torch.profiler.record_function("## forward ##"):
            out = model(x, labels=x)
        loss = out.loss
        probe.at("after_forward", i, input_bytes=x.untyped_storage().nbytes())
        with torch.profiler.record_function("## backward ##"):
            loss.backward()
        del out, loss, x
        probe.at("after_backward", i)
        with torch.profiler.record_function("## optimizer ##"):
            opt.step()
        probe.at("after_step", i)
        opt.zero_grad(set_to_none=True)
        probe.at("after_zero_grad", i)
    torch.cuda.synchronize()
    marks.append(now_us())
    S.stop("cat_gpt2_annotated", base,
           {"scenario": "GPT-2 (4 layers, d=256, tied embeddings) 3 AdamW steps with record_function marks",
            "iteration_start_us": marks, "iterations": steps, "instants": probe.points,
            "optimizer": "AdamW", "set_to_none": True, "leaks": []})


def cat_infer():
    base = S.start()
    model = S.gpt2().cuda().eval()
    probe = Probe(model, None)
    marks = []
    with torch.no_grad():
        for i in range(3):
            marks.append(now_us())
            x = torch.randint(0, 5000, (8, 256), device="cuda")
            probe.at("before_forward", i, input_bytes=x.untyped_storage().nbytes())
            logits = model(x).logits
            probe.at("after_forward", i, input_bytes=x.untyped_storage().nbytes())
            del logits, x
    torch.cuda.synchronize()
    marks.append(now_us())
    S.stop("cat_infer", base, {"scenario": "GPT-2 inference under no_grad, 3 batches (no gradients, no optimizer)",
                               "iteration_start_us": marks, "iterations": 3, "instants": probe.points,
                               "optimizer": None, "leaks": []})


# ------------------------------------------------------------------ leaks

HIST = []
HIST_SITE = {}


class Classifier(nn.Module):
    def __init__(self, d=512, n=4, classes=1000):
        super().__init__()
        self.body = MLP(d, n, out=d)
        self.cls = nn.Linear(d, classes)

    def forward(self, x):
        return self.cls(self.body(x))


def leak_after_step():
    """hist.append(...) at the very end of each step, after the optimizer: the last copy comes
    after the last iteration boundary."""
    base = S.start()
    model = Classifier().cuda()
    opt = adamw(model)
    marks = []
    steps = 4
    for i in range(steps):
        marks.append(now_us())
        x = torch.randn(64, 512, device="cuda")
        logits = model(x)
        loss = logits.float().logsumexp(-1).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        HIST.append(logits.detach().to(torch.float64)); HIST_SITE.update(line_here())
        del logits, loss, x
    torch.cuda.synchronize()
    marks.append(now_us())
    leak = dict(HIST_SITE, count=steps, bytes_each_requested=64 * 1000 * 8)
    S.stop("leak_after_step", base, {"scenario": "4 AdamW steps; a float64 copy of the logits kept after each optimizer step",
                                     "iteration_start_us": marks, "iterations": steps, "leaks": [leak]})


KEPT = []
KEPT_SITE = {}


def leak_hook_infer():
    """Inference under no_grad; a forward hook keeps a copy of two layers' outputs."""
    base = S.start()
    model = MLP(n=4).cuda().eval()

    def keep(module, inputs, output):
        KEPT.append(output.detach().clone()); KEPT_SITE.update(line_here())

    model.layers[1].register_forward_hook(keep)
    model.layers[3].register_forward_hook(keep)
    marks = []
    iters = 6
    with torch.no_grad():
        for i in range(iters):
            marks.append(now_us())
            x = torch.randn(32, 64, 512, device="cuda")
            y = model(x)
            del x, y
    torch.cuda.synchronize()
    marks.append(now_us())
    leak = dict(KEPT_SITE, count=2 * iters, bytes_each_requested=32 * 64 * 512 * 4)
    S.stop("leak_hook_infer", base, {"scenario": "no_grad inference, 6 batches, a forward hook keeps clones of 2 layers' outputs",
                                     "iteration_start_us": marks, "iterations": iters, "leaks": [leak]})


def project(x, w):
    return x @ w


PROJECT_LINE = project.__code__.co_firstlineno + 1


def leak_shared_line():
    """The leak's line also makes the cuBLAS workspace at the process's first matmul, and
    temporaries that are freed: only the repeating kept results are the leak."""
    base = S.start()
    model = MLP(n=2).cuda()           # no matmul before project(): its first call makes the workspace
    opt = adamw(model)
    w = torch.randn(512, 1024, device="cuda")
    keep = []
    marks = []
    steps = 12
    first_call = {}
    for i in range(steps):
        marks.append(now_us())
        x = torch.randn(512, 512, device="cuda")
        if i == 0:
            torch.cuda.synchronize()
            a0 = torch.cuda.memory_stats()["requested_bytes.all.current"]
        tmp = project(x, w)           # temporary, freed below
        if i == 0:
            torch.cuda.synchronize()
            first_call["requested_growth"] = torch.cuda.memory_stats()["requested_bytes.all.current"] - a0
            first_call["result_bytes"] = tmp.untyped_storage().nbytes()
        h = model(tmp[:, :512].contiguous())
        loss = h.pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        keep.append(project(x, w))    # the leak: 512 x 1024 fp32 = 2 MiB a step
        del tmp, h, loss, x
    torch.cuda.synchronize()
    marks.append(now_us())
    one_time = first_call["requested_growth"] - first_call["result_bytes"]
    S.stop("leak_shared_line", base,
           {"scenario": "12 steps; project() at one line makes the cuBLAS workspace once, a freed temporary "
                        "and a kept 2 MiB result each step",
            "iteration_start_us": marks, "iterations": steps,
            "leaks": [{"filename": __file__, "line": PROJECT_LINE, "name": "project", "count": steps,
                       "bytes_each_requested": 512 * 1024 * 4}],
            "one_time": [{"filename": __file__, "line": PROJECT_LINE, "name": "project",
                          "bytes": one_time, "what": "cuBLAS/cuBLASLt workspace at the first matmul"}]})


def leak_eval_graph():
    """Evaluation without no_grad summing losses as tensors: every step's graph stays."""
    base = S.start()
    model = S.gpt2().cuda().eval()
    marks = []
    growth_req, growth_alloc = [], []
    total = 0
    steps = 8
    site = {}
    for i in range(steps):
        marks.append(now_us())
        torch.cuda.synchronize()
        s0 = torch.cuda.memory_stats()
        x = torch.randint(0, 5000, (4, 128), device="cuda")
        total = total + model(x, labels=x).loss; site.update(line_here())
        del x
        torch.cuda.synchronize()
        s1 = torch.cuda.memory_stats()
        growth_req.append(s1["requested_bytes.all.current"] - s0["requested_bytes.all.current"])
        growth_alloc.append(s1["allocated_bytes.all.current"] - s0["allocated_bytes.all.current"])
    torch.cuda.synchronize()
    marks.append(now_us())
    S.stop("leak_eval_graph", base,
           {"scenario": "GPT-2 eval loop without torch.no_grad(), total = total + model(x).loss, 8 steps",
            "iteration_start_us": marks, "iterations": steps,
            "growth_per_step_requested_bytes": growth_req, "growth_per_step_allocated_bytes": growth_alloc,
            "leaks": [dict(site, kind="graph", count=steps, bytes_each_requested=None)]})


def noleak_keep_grad():
    base = S.start()
    model = MLP().cuda()
    opt = adamw(model)
    marks = []
    for i in range(5):
        marks.append(now_us())
        x = torch.randn(16, 128, 512, device="cuda")
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
    torch.cuda.synchronize()
    marks.append(now_us())
    S.stop("noleak_keep_grad", base, {"scenario": "6 MLP blocks, 5 AdamW steps, zero_grad(set_to_none=False)",
                                      "iteration_start_us": marks, "iterations": 5, "leaks": []})


def noleak_bounded_cache():
    """A mask cache keyed by sequence length; lengths cycle through three values, so it
    grows for three steps and then stays flat."""
    base = S.start()
    model = MLP(n=4).cuda()
    opt = adamw(model)
    cache = {}
    marks = []
    for i in range(9):
        marks.append(now_us())
        L = (96, 128, 160)[i % 3]
        if L not in cache:
            cache[L] = torch.ones(L, L, device="cuda").tril()
        x = torch.randn(16, L, 512, device="cuda")
        x = cache[L] @ x
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x
    torch.cuda.synchronize()
    marks.append(now_us())
    S.stop("noleak_bounded_cache", base, {"scenario": "4 MLP blocks, 9 steps, a mask cache for 3 sequence lengths",
                                          "iteration_start_us": marks, "iterations": 9, "leaks": []})


# ------------------------------------------------------------------ out of memory

def block_state():
    """The allocator's blocks now, summarised as the OOM truth needs them."""
    segs = torch.cuda.memory_snapshot()
    inactive = [b["size"] for s in segs for b in s["blocks"] if b["state"] == "inactive"]
    stats = torch.cuda.memory_stats()
    return {"allocated_bytes": stats["allocated_bytes.all.current"],
            "requested_bytes": stats["requested_bytes.all.current"],
            "reserved_bytes": stats["reserved_bytes.all.current"],
            "inactive_blocks_count": len(inactive),
            "inactive_blocks_bytes": sum(inactive),
            "largest_inactive_block_bytes": max(inactive) if inactive else 0,
            "segments": [{"address": s["address"], "total_size": s["total_size"],
                          "segment_type": s["segment_type"], "stream": s["stream"],
                          "is_expandable": s.get("is_expandable", False),
                          "blocks": [[b["address"], b["size"], b["state"]] for b in s["blocks"]]}
                         for s in segs]}


def oom_run(name, body, note, cause, fraction_bytes, stacks="all", max_entries=1_000_000):
    """Runs body(truth) under a per-process limit of `fraction_bytes`; the OOM observer
    measures the allocator's state and dumps the snapshot at the failure."""
    total = torch.cuda.get_device_properties(0).total_memory
    fraction = fraction_bytes / total
    torch.cuda.set_per_process_memory_fraction(fraction)
    base = S.start(max_entries=max_entries, stacks=stacks)
    truth = {"scenario": note, "leaks": [], "memory_fraction": fraction,
             "limit_bytes": int(fraction * total), "device_total_bytes": total}
    oom = {"expected_cause": cause}
    marks = []
    path = os.path.join(S.OUT, name + ".pickle")

    def observer(device, alloc, device_alloc, device_free):
        if "at_oom" in oom:
            return
        oom["observer_args"] = {"device": device, "alloc": alloc, "device_allocated": device_alloc,
                                "device_free": device_free}
        try:
            oom["at_oom"] = block_state()
        except Exception as e:                     # keep the dump even if the snapshot call fails
            oom["at_oom_error"] = repr(e)
        truth["counters_at_end"] = S.counters()
        t0 = time.time()
        torch.cuda.memory._dump_snapshot(path)
        truth["dump_seconds"] = round(time.time() - t0, 3)

    torch._C._cuda_attach_out_of_memory_observer(observer)
    truth["oom"] = oom
    try:
        body(truth, oom, marks)
        raise RuntimeError(f"{name}: no OOM happened")
    except torch.cuda.OutOfMemoryError as e:
        oom["message"] = str(e).splitlines()[0]
    torch.cuda.memory._record_memory_history(enabled=None)
    truth["counters_at_start"] = base
    end = truth["counters_at_end"]
    truth["allocs_during_trace"] = end["allocation.all.allocated"] - base["allocation.all.allocated"]
    truth["frees_during_trace"] = end["allocation.all.freed"] - base["allocation.all.freed"]
    if max_entries < 1_000_000:
        truth["max_entries"] = max_entries
    truth["iteration_start_us"] = marks
    truth["iterations"] = max(0, len(marks) - 1)
    truth["torch_version"] = torch.__version__
    truth["device_name"] = torch.cuda.get_device_name()
    truth["alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
    truth["file_bytes"] = os.path.getsize(path)
    with open(os.path.join(S.OUT, name + ".truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)


def oom_fragmentation():
    def body(truth, oom, marks):
        big = torch.empty(1024 * MiB, dtype=torch.uint8, device="cuda")
        del big                                    # a cached 1 GiB segment
        parts = [torch.empty(60 * MiB, dtype=torch.uint8, device="cuda") for _ in range(16)]
        for i in range(1, 16, 2):
            parts[i] = None                        # 8 holes: free bytes in 8 pieces
        torch.cuda.synchronize()
        oom["request_bytes"] = 200 * MiB
        oom["before_request"] = block_state()
        torch.empty(200 * MiB, dtype=torch.uint8, device="cuda")
    oom_run("oom_fragmentation", body,
            "a cached 1 GiB segment split into 16 x 60 MiB, every other one freed, then 200 MiB "
            "requested under a 1124 MiB limit: 544 MiB free in reserved memory but no piece large enough",
            "fragmentation", (1024 + 100) * MiB)


def oom_activations():
    def body(truth, oom, marks):
        model = S.gpt2(n_layer=6, d=512).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        batch = 4
        while True:
            marks.append(now_us())
            x = torch.randint(0, 5000, (batch, 512), device="cuda")
            truth.setdefault("batches", []).append(batch)
            model(x, labels=x).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del x
            batch *= 2
    oom_run("oom_activations", body,
            "GPT-2 6 layers d=512 AdamW, batch doubled each step (seq 512) until the forward/backward "
            "no longer fits a 6 GiB limit", "activations", 6 * 1024 * MiB)


def oom_model_state():
    def body(truth, oom, marks):
        model = nn.Sequential(*[nn.Linear(4096, 4096) for _ in range(10)]).cuda()   # 640 MiB of weights
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        truth["parameter_bytes"] = storage_bytes(list(model.parameters()))
        for i in range(3):
            marks.append(now_us())
            x = torch.randn(8, 4096, device="cuda")
            model(x).pow(2).mean().backward()
            opt.step()                             # Adam moments: 2 x the weights
            opt.zero_grad(set_to_none=True)
    oom_run("oom_model_state", body,
            "10 x Linear(4096,4096) (640 MiB of weights) with AdamW under a 2 GiB limit: weights, "
            "gradients and the Adam moments do not fit", "model_state", 2048 * MiB)


LEAKY = []
LEAKY_SITE = {}


def oom_leak_body(truth, oom, marks):
    model = MLP(n=4, out=512).cuda()
    opt = adamw(model)
    for i in range(1000):
        marks.append(now_us())
        x = torch.randn(16, 128, 512, device="cuda")
        out = model(x)
        out.pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        LEAKY.append(torch.cat([out.detach()] * 8)); LEAKY_SITE.update(line_here())
        del out, x
        truth["leaks"] = [dict(LEAKY_SITE, count=len(LEAKY), bytes_each_requested=8 * 16 * 128 * 512 * 4)]


def oom_leak():
    oom_run("oom_leak", oom_leak_body,
            "4 MLP blocks AdamW; each step keeps a 32 MiB tensor until a 1.5 GiB limit is reached",
            "leak", 1536 * MiB)


def oom_leak_ring():
    oom_run("oom_leak_ring", oom_leak_body,
            "oom_leak with max_entries=3000: the trace before the failure is wrapped",
            "leak", 1536 * MiB, max_entries=3000)


def oom_single_expandable():
    """expandable_segments:True; a short training, then one request larger than everything
    else together, refused by the per-process limit while the GPU has plenty free."""
    def body(truth, oom, marks):
        model = MLP(n=4).cuda()
        opt = adamw(model)
        for i in range(3):
            marks.append(now_us())
            x = torch.randn(16, 128, 512, device="cuda")
            model(x).pow(2).mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del x
        marks.append(now_us())
        torch.cuda.synchronize()
        oom["request_bytes"] = 3 * 1024 * MiB
        oom["before_request"] = block_state()
        torch.empty(3 * 1024 * MiB, dtype=torch.uint8, device="cuda")
    oom_run("oom_single_expandable", body,
            "expandable segments; 3 training steps, then one 3 GiB request under a 2 GiB limit",
            "single_allocation", 2048 * MiB)


ALL = {f.__name__: f for f in [cat_adamw, cat_sgd_frozen, cat_accum_amp, cat_prebuilt,
                                cat_gpt2_annotated, cat_infer,
                                leak_after_step, leak_hook_infer, leak_shared_line, leak_eval_graph,
                                noleak_keep_grad, noleak_bounded_cache,
                                oom_fragmentation, oom_activations, oom_model_state, oom_leak,
                                oom_leak_ring, oom_single_expandable]}

if __name__ == "__main__":
    S.run(ALL, S.OUT, sys.argv[2:])
