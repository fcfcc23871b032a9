"""Real snapshots for the verdicts: the cause of an out-of-memory error that looks like
fragmentation but is activations, parameters that appear late (lazy modules, meta-device
materialisation, a layer added mid-training), leaks allocated inside a library whose
user line is the loop's model call, and a clean KV-cache decode. Same truth format as
scenarios_explain.py; every number is measured by this script at a known instant.

- `instants`: as scenarios_explain.Probe (parameter / gradient / optimizer-state bytes
  and allocator counters at quiet instants).
- `leaks`: count, bytes each, the line that keeps the tensor (`kept_at`), the user's
  line that called the model (`user_frame`, taken with sys._getframe on that line), the
  kept tensors' addresses and, read back from the dumped trace, the Python frames of the
  `alloc` at each address (`alloc_python_frames`, innermost first).
- `oom` (oom_act_trap): as scenarios_explain.oom_run, plus model-state bytes measured in
  a second OOM observer, the free pieces inside reserved segments, per-iteration peaks.

Run on a GPU machine, one scenario a process:
    python3 scenarios_verdicts.py OUTDIR NAME
"""
import os, re, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as S
import scenarios_explain as E
import scenarios_compat as C

S.OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
MiB = 2**20


def model_state(model, opt):
    ps = [p for p in model.parameters() if not is_uninit(p)]
    return {"parameter_bytes": E.storage_bytes(ps + list(model.buffers())),
            "gradient_bytes": E.storage_bytes([p.grad for p in ps]),
            "optimizer_state_bytes": E.storage_bytes(E.opt_tensors(opt))}


def is_uninit(p):
    return isinstance(p, nn.parameter.UninitializedTensorMixin)


class Materialised:
    """What Probe sees of a model: only parameters that exist (lazy ones are skipped)."""

    def __init__(self, model):
        self.m = model

    def parameters(self):
        return [p for p in self.m.parameters() if not is_uninit(p)]

    def buffers(self):
        return [b for b in self.m.buffers() if not is_uninit(b)]


def parse_mib(msg):
    m = re.search(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB)", msg or "")
    if not m:
        return None
    return int(float(m.group(1)) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[m.group(2)])


# ------------------------------------------------------------------ OOM: activations, not fragmentation

class Deep(nn.Module):
    def __init__(self, d=256, n=160):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])

    def forward(self, x):
        for layer in self.layers:
            x = F.gelu(layer(x))          # saves the Linear's input and the GELU's input
        return x


def oom_act_trap():
    """160 Linear(256,256)+GELU layers (42 MB of weights), rows doubled each step: at 8 MiB
    per activation every 20 MiB segment holds two of them and a 4 MiB tail, so at the
    failure hundreds of MiB are free in reserved segments, in pieces each smaller than the
    8 MiB request; live memory is ~95% activations."""
    d, n = 256, 160

    def body(truth, oom, marks):
        model = Deep(d, n).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        phase = {"now": "build", "rows": 0}
        peaks = []

        def observer(device, alloc, device_alloc, device_free):
            if "model_state_at_oom" in oom:
                return
            st = model_state(model, opt)
            oom["model_state_at_oom"] = st
            oom["failed_in"] = phase["now"]
            at = oom.get("at_oom")
            if at:
                live = at["requested_bytes"]
                ms = st["parameter_bytes"] + st["gradient_bytes"] + st["optimizer_state_bytes"]
                oom["live_requested_bytes"] = live
                oom["live_allocated_bytes"] = at["allocated_bytes"]
                oom["activation_bytes"] = live - ms
                oom["activation_fraction_of_live"] = round((live - ms) / live, 4)
                oom["free_in_reserved_bytes"] = at["inactive_blocks_bytes"]
                oom["free_pieces"] = at["inactive_blocks_count"]
                oom["largest_free_piece_bytes"] = at["largest_inactive_block_bytes"]
                large = [b[1] for s in at["segments"] if s["segment_type"] == "large"
                         for b in s["blocks"] if b[2] == "inactive"]
                oom["free_in_reserved_large_pool_bytes"] = sum(large)
                oom["free_pieces_large_pool"] = len(large)

        torch._C._cuda_attach_out_of_memory_observer(observer)
        rows = 2048
        while True:
            marks.append(E.now_us())
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            phase.update(now="forward", rows=rows)
            oom["request_bytes"] = rows * d * 4          # every large activation of this step has this size
            oom["rows"] = rows
            x = torch.randn(rows, d, device="cuda")
            truth.setdefault("batches", []).append(rows)
            loss = model(x).pow(2).mean()
            phase["now"] = "backward"
            loss.backward()
            phase["now"] = "optimizer"
            opt.step()
            opt.zero_grad(set_to_none=True)
            del x, loss
            torch.cuda.synchronize()
            peaks.append(torch.cuda.max_memory_allocated())
            truth["per_iteration_peak_allocated_bytes"] = list(peaks)
            rows *= 2

    E.oom_run("oom_act_trap", body,
              "160 x (Linear(256,256) + GELU), AdamW, rows doubled each step (2048, 4096, 8192) under a "
              "3 GiB limit; the failing forward's 8 MiB activations fill 20 MiB segments two at a time, "
              "leaving 4 MiB tails: many free pieces that add up to far more than the request, none "
              "large enough; the cause is activations", "activations", 3 * 1024 * MiB)
    truth_path = os.path.join(S.OUT, "oom_act_trap.truth.json")
    import json
    with open(truth_path) as f:
        t = json.load(f)
    o = t["oom"]
    o["message_request_bytes"] = parse_mib(o.get("message"))
    t["cause"] = "activations"
    t["peak_counters_reset_each_step"] = True
    t["note_peaks"] = ("torch.cuda.reset_peak_memory_stats() was called at each step's start, so the *.peak "
                       "counters in counters_at_end cover the failing step only")
    with open(truth_path, "w") as f:
        json.dump(t, f, indent=1, sort_keys=True)


# ------------------------------------------------------------------ late parameters

def probe_train(name, model, make_opt, steps, note, x_shape=(64, 1024), extra=None, before_step=None):
    """Probe-instrumented loop; the optimizer is made after the first forward (the
    parameters exist only then for lazy and meta models). `before_step(i, model, opt)`
    may change the model at a step's start."""
    base = extra.pop("_base")
    probe = E.Probe(Materialised(model), None)
    opt = None
    marks = []
    events = []
    for i in range(steps):
        marks.append(E.now_us())
        if before_step is not None and opt is not None:
            ev = before_step(i, model, opt)
            if ev:
                events.append(ev)
        x = torch.randn(*x_shape, device="cuda")
        probe.at("before_forward", i, input_bytes=x.untyped_storage().nbytes())
        loss = model(x).pow(2).mean()
        if opt is None:
            opt = make_opt(model)
            probe.opt = opt
        probe.at("after_forward", i, input_bytes=x.untyped_storage().nbytes())
        loss.backward()
        del loss, x
        probe.at("after_backward", i)
        opt.step()
        probe.at("after_step", i)
        opt.zero_grad(set_to_none=True)
        probe.at("after_zero_grad", i)
    torch.cuda.synchronize()
    marks.append(E.now_us())
    truth = {"scenario": note, "iteration_start_us": marks, "iterations": steps, "instants": probe.points,
             "optimizer": type(opt).__name__, "set_to_none": True, "leaks": [], "events": events}
    truth.update(extra)
    truth["final_model_state"] = model_state(model, opt)
    C.stop(name, base, truth)


def adamw(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4)


def lazy_params():
    base = S.start()
    model = nn.Sequential(nn.LazyLinear(2048), nn.GELU(), nn.LazyLinear(2048), nn.GELU(),
                          nn.LazyLinear(2048), nn.GELU(), nn.LazyLinear(2048), nn.GELU(),
                          nn.LazyLinear(1024)).cuda()
    uninit = sum(1 for p in model.parameters() if is_uninit(p))
    probe_train("lazy_params", model, adamw, 4,
                "nn.LazyLinear stack (1024 -> 4 x 2048 -> 1024, ~67 MB of weights made in the first forward), "
                "AdamW created after the first forward, 4 steps",
                extra={"_base": base, "uninitialized_params_before_first_forward": uninit})


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(),
                                 nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(),
                                 nn.Linear(2048, 1024))

    def forward(self, x):
        return self.net(x)


MATERIALISED = {}


def meta_params():
    base = S.start()
    with torch.device("meta"):
        model = Plain()
    meta_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    def materialise(module, args):
        if MATERIALISED:
            return None
        MATERIALISED["time_us_start"] = E.now_us()
        module.to_empty(device="cuda")
        for m in module.modules():
            if isinstance(m, nn.Linear):
                m.reset_parameters()
        torch.cuda.synchronize()
        MATERIALISED["time_us_end"] = E.now_us()
        MATERIALISED["site"] = E.line_here()
        return None

    model.register_forward_pre_hook(materialise)
    probe_train("meta_params", model, adamw, 4,
                "model built under torch.device('meta'), materialised (to_empty(device='cuda') + "
                "reset_parameters) by a forward pre-hook at the first forward, AdamW created after, 4 steps",
                extra={"_base": base, "parameter_bytes_declared_on_meta": meta_bytes,
                       "materialised": MATERIALISED})


class Growing(nn.Module):
    def __init__(self, d=1024, n=2):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                     for _ in range(n)])
        self.extra = None

    def forward(self, x):
        for b in self.blocks:
            x = x + b(x)
        if self.extra is not None:
            x = x + self.extra(x)
        return x


def late_layer():
    base = S.start()
    model = Growing().cuda()

    def grow(i, model, opt):
        if i != 2:
            return None
        t0 = E.now_us()
        model.extra = nn.Linear(1024, 1024).cuda()
        opt.add_param_group({"params": list(model.extra.parameters())})
        torch.cuda.synchronize()
        return {"what": "nn.Linear(1024,1024) added and appended to the optimizer", "iteration": i,
                "time_us_start": t0, "time_us_end": E.now_us(),
                "parameter_bytes": E.storage_bytes(list(model.extra.parameters()))}

    probe_train("late_layer", model, lambda m: torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9), 4,
                "2 MLP blocks d=1024, SGD momentum 0.9, 4 steps; at the start of step 2 a new "
                "nn.Linear(1024,1024) is added and appended to the optimizer's param groups "
                "(its momentum buffers appear at that step's opt.step())",
                x_shape=(64, 1024), extra={"_base": base, "late_layer_iteration": 2}, before_step=grow)


# ------------------------------------------------------------------ leaks made inside a library

KEPT = []
KEEP_SITE = {}
CALL_SITE = {}


def leak_library_logits():
    base = S.start()
    model = S.gpt2(n_layer=2, d=128).cuda()
    opt = adamw(model)
    marks, ptrs, sizes = [], [], []
    steps = 4
    for i in range(steps):
        marks.append(E.now_us())
        x = torch.randint(0, 5000, (4, 64), device="cuda")
        out = model(x, labels=x); CALL_SITE.update(E.line_here())
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        KEPT.append(out.logits.detach()); KEEP_SITE.update(E.line_here())
        ptrs.append(KEPT[-1].untyped_storage().data_ptr())
        sizes.append(KEPT[-1].untyped_storage().nbytes())
        del out, x
    torch.cuda.synchronize()
    marks.append(E.now_us())
    leak = {"kind": "kept library output", "count": steps, "bytes_each_requested": sizes[0],
            "bytes_each_all": sizes, "kept_at": dict(KEEP_SITE), "user_frame": dict(CALL_SITE),
            "addresses": ptrs}
    S.stop("leak_library_logits", base,
           {"scenario": "transformers GPT-2 2 layers d=128, 4 AdamW steps, batch 4x64; the loop keeps "
                        "out.logits.detach() each step (made by the lm_head inside transformers)",
            "iteration_start_us": marks, "iterations": steps, "leaks": [leak], "user_frame": dict(CALL_SITE)})
    _add_alloc_frames("leak_library_logits")


def _add_alloc_frames(name):
    import json
    path = os.path.join(S.OUT, name + ".truth.json")
    with open(path) as f:
        t = json.load(f)
    for leak in t["leaks"]:
        fr = C.alloc_frames(os.path.join(S.OUT, name + ".pickle"), leak["addresses"])
        leak["alloc_python_frames"] = fr
        first = next((a for a in fr if a.get("found") and a.get("python_frames")), None)
        if first:
            inner = first["python_frames"][0]
            leak.update({"filename": inner["filename"], "line": inner["line"], "name": inner["name"],
                         "site_source": "innermost Python frame of the trace's alloc at the kept address"})
            leak["user_frame_in_alloc_stack"] = any(
                p["filename"].endswith(os.path.basename(leak["user_frame"]["filename"]))
                and p["line"] == leak["user_frame"]["line"] for p in first["python_frames"])
    with open(path, "w") as f:
        json.dump(t, f, indent=1, sort_keys=True)


HOOKED = []
HOOK_SITE = {}
CALL2_SITE = {}


def leak_hook_library():
    base = S.start()
    model = S.gpt2(n_layer=2, d=128).cuda()
    opt = adamw(model)
    target = model.transformer.h[1].mlp.c_fc
    ptrs, sizes = [], []

    def keep(module, inputs, out):
        HOOKED.append(out); HOOK_SITE.update(E.line_here())
        ptrs.append(out.untyped_storage().data_ptr())
        sizes.append(out.untyped_storage().nbytes())

    target.register_forward_hook(keep)
    marks = []
    steps = 4
    for i in range(steps):
        marks.append(E.now_us())
        x = torch.randint(0, 5000, (8, 64), device="cuda")
        out = model(x, labels=x); CALL2_SITE.update(E.line_here())
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del out, x
    torch.cuda.synchronize()
    marks.append(E.now_us())
    leak = {"kind": "forward hook keeps a library module's output", "count": steps,
            "bytes_each_requested": sizes[0], "bytes_each_all": sizes,
            "hooked_module": "transformer.h[1].mlp.c_fc (" + type(target).__name__ + ")",
            "kept_at": dict(HOOK_SITE), "user_frame": dict(CALL2_SITE), "addresses": ptrs}
    S.stop("leak_hook_library", base,
           {"scenario": "transformers GPT-2 2 layers d=128, 4 AdamW steps, batch 8x64; a forward hook on "
                        "h[1].mlp.c_fc appends its output (no clone) each step",
            "iteration_start_us": marks, "iterations": steps, "leaks": [leak], "user_frame": dict(CALL2_SITE)})
    _add_alloc_frames("leak_hook_library")


# ------------------------------------------------------------------ clean decode with a KV cache

class Decoder(nn.Module):
    def __init__(self, L=4, d=512, H=8, vocab=5000):
        super().__init__()
        self.L, self.d, self.H = L, d, H
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([nn.ModuleDict(dict(qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
                                                        fc=nn.Linear(d, 4 * d), out=nn.Linear(4 * d, d)))
                                     for _ in range(L)])
        self.head = nn.Linear(d, vocab)

    def step(self, tok, t, cache):
        B = tok.shape[0]
        h = self.emb(tok)                                      # B x d
        for l, m in enumerate(self.layers):
            q, k, v = m["qkv"](h).view(B, 3, self.H, -1).unbind(1)
            cache[l, 0, :, :, t] = k                           # written in place: no growth
            cache[l, 1, :, :, t] = v
            keys, vals = cache[l, 0, :, :, :t + 1], cache[l, 1, :, :, :t + 1]
            att = torch.softmax((keys @ q.unsqueeze(-1)).squeeze(-1) / (q.shape[-1] ** 0.5), -1)
            a = (att.unsqueeze(-2) @ vals).squeeze(-2).reshape(B, -1)
            h = h + m["proj"](a)
            h = h + m["out"](F.gelu(m["fc"](h)))
        return self.head(h).argmax(-1)


def noleak_kv_cache():
    base = S.start()
    B, Tmax, steps = 8, 128, 48
    model = Decoder().cuda().eval()
    L, H, d = model.L, model.H, model.d
    cache = torch.zeros(L, 2, B, H, Tmax, d // H, device="cuda")
    tokens = torch.zeros(B, steps + 1, dtype=torch.long, device="cuda")
    torch.cuda.synchronize()
    per_step = []
    marks = []
    with torch.no_grad():
        for t in range(steps):
            marks.append(E.now_us())
            tokens[:, t + 1] = model.step(tokens[:, t], t, cache)
            torch.cuda.synchronize()
            per_step.append(torch.cuda.memory_stats()["requested_bytes.all.current"])
    torch.cuda.synchronize()
    marks.append(E.now_us())
    S.stop("noleak_kv_cache", base,
           {"scenario": "greedy decode, 48 steps, batch 8, with a per-layer key/value cache preallocated "
                        "once (4 layers x 2 x 8 x 8 heads x 128 x 64 fp32) and written in place each step",
            "iteration_start_us": marks, "iterations": steps,
            "parameter_bytes": E.storage_bytes(list(model.parameters()) + list(model.buffers())),
            "kv_cache_bytes": cache.untyped_storage().nbytes(),
            "tokens_buffer_bytes": tokens.untyped_storage().nbytes(),
            "requested_bytes_after_each_step": per_step, "leaks": []})


ALL = {f.__name__: f for f in [oom_act_trap, lazy_params, meta_params, late_layer, leak_library_logits,
                                leak_hook_library, noleak_kv_cache]}

if __name__ == "__main__":
    S.run(ALL, S.OUT, sys.argv[2:])
