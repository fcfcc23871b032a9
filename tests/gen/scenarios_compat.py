"""Real snapshots for the compatibility corpus: torch.compile (default, reduce-overhead,
max-autotune-no-cudagraphs), compile-context and user-metadata recording, a wrapped
ring buffer under compile, and the context/stacks variants of _record_memory_history.
Same truth format as scenarios.py (allocator counters), plus `instants` measured like
scenarios_explain.Probe, and `dump_scan`: what the dumped pickle itself holds (loaded
back by this script): entry count, actions, frames whose line is >= 2**63 (size_t(-1)),
compile_context / user_metadata values, segment pool ids.

Run on a GPU machine, one scenario a process:
    python3 scenarios_compat.py OUTDIR NAME
"""
import inspect, json, os, pickle, sys, time
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as S
import scenarios_explain as E

S.OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
BIG_LINE = 2**63


def record_params():
    try:
        return list(inspect.signature(torch.cuda.memory._record_memory_history).parameters)
    except Exception:
        return []


def start(max_entries=1_000_000, **kw):
    """scenarios.start with any _record_memory_history keywords (context, stacks, compile_context)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = S.counters()
    torch.cuda.memory._record_memory_history(max_entries=max_entries, **kw)
    return base


def _jsonable(k):
    return k if isinstance(k, str) else repr(k)


def scan(path, top=40):
    """What the dumped snapshot holds, read back with pickle."""
    with open(path, "rb") as f:
        snap = pickle.load(f)
    traces = snap.get("device_traces", [])
    entries = [e for t in traces for e in t]
    big_trace, big_seg = Counter(), Counter()

    def visit(frames, into):
        for fr in frames or ():
            ln = fr.get("line")
            if isinstance(ln, int) and ln >= BIG_LINE:
                into[(fr.get("filename"), fr.get("name"), ln)] += 1

    for e in entries:
        visit(e.get("frames"), big_trace)
    for s in snap.get("segments", []):
        visit(s.get("frames"), big_seg)
        for b in s.get("blocks", []):
            visit(b.get("frames"), big_seg)
    cc = Counter(str(e.get("compile_context", "<missing>"))[:200] for e in entries)
    um = Counter(str(e.get("user_metadata", "<missing>"))[:200] for e in entries)
    sites = Counter()
    for k, n in (big_trace + big_seg).items():
        sites[k] += n
    return {
        "top_level_keys": sorted(_jsonable(k) for k in snap),
        "trace_entries": len(entries),
        "trace_entries_per_device": [len(t) for t in traces],
        "actions": dict(Counter(e.get("action") for e in entries)),
        "entry_keys": dict(Counter(k for e in entries for k in e)),
        "entries_without_frames": sum(1 for e in entries if "frames" not in e),
        "entries_with_empty_frames": sum(1 for e in entries if "frames" in e and not e["frames"]),
        "frames_line_ge_2_63_in_trace": sum(big_trace.values()),
        "frames_line_ge_2_63_in_segments": sum(big_seg.values()),
        "frames_line_ge_2_63_sites": [{"filename": f, "name": n, "line": ln, "count": c}
                                       for (f, n, ln), c in sites.most_common(top)],
        "frames_line_ge_2_63_names": sorted({f"{f}:{n}" for (f, n, _l) in sites}),
        "any_frame_line_is_2_64_minus_1": any(ln == 2**64 - 1 for (_f, _n, ln) in sites),
        "compile_context_values": dict(cc.most_common(top)),
        "entries_compile_context_not_NA": sum(n for v, n in cc.items() if v != "N/A"),
        "user_metadata_values": dict(um.most_common(top)),
        "entries_user_metadata_nonempty": sum(n for v, n in um.items() if v != ""),
        "segment_pool_ids": dict(Counter(repr(tuple(s.get("segment_pool_id", ())))
                                         for s in snap.get("segments", []))),
        "segments": len(snap.get("segments", [])),
    }


def alloc_frames(path, addrs, limit=40):
    """For each address, the last `alloc` at it in the dumped trace: size, time and Python frames."""
    with open(path, "rb") as f:
        snap = pickle.load(f)
    entries = [e for t in snap.get("device_traces", []) for e in t]
    last = {}
    for e in entries:
        if e.get("action") == "alloc" and e.get("addr") in addrs:
            last[e["addr"]] = e
    out = []
    for a in addrs:
        e = last.get(a)
        if e is None:
            out.append({"addr": a, "found": False})
            continue
        py = [{"filename": fr["filename"], "line": fr["line"], "name": fr["name"]}
              for fr in e.get("frames", []) if str(fr.get("filename", "")).endswith(".py")]
        out.append({"addr": a, "found": True, "size": e.get("size"), "time_us": e.get("time_us"),
                    "python_frames": py[:limit]})
    return out


def stop(name, base, truth, do_scan=True):
    """scenarios.stop, then the scan of the dumped file added to the truth."""
    S.stop(name, base, truth)
    if do_scan:
        add_truth(name, {"dump_scan": scan(os.path.join(S.OUT, name + ".pickle"))})


def add_truth(name, extra):
    path = os.path.join(S.OUT, name + ".truth.json")
    with open(path) as f:
        truth = json.load(f)
    truth.update(extra)
    with open(path, "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)


# ------------------------------------------------------------------ models

class MiniGPT(nn.Module):
    """Plain-torch fallback, used only if transformers' GPT-2 fails to compile."""

    def __init__(self, n_layer=4, d=128, vocab=5000, heads=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(1024, d)
        self.blocks = nn.ModuleList([nn.ModuleDict(dict(
            ln1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
            ln2=nn.LayerNorm(d), fc=nn.Linear(d, 4 * d), out=nn.Linear(4 * d, d))) for _ in range(n_layer)])
        self.ln = nn.LayerNorm(d)
        self.heads = heads

    def forward(self, x, labels=None):
        B, T = x.shape
        h = self.emb(x) + self.pos(torch.arange(T, device=x.device))
        for b in self.blocks:
            q, k, v = b["qkv"](b["ln1"](h)).view(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, -1)
            h = h + b["proj"](a)
            h = h + b["out"](F.gelu(b["fc"](b["ln2"](h))))
        logits = self.ln(h) @ self.emb.weight.t()
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())
        return loss, logits


def build(kind, n_layer=4, d=128):
    if kind == "hf":
        return S.gpt2(n_layer=n_layer, d=d).cuda()
    return MiniGPT(n_layer, d).cuda()


def loss_of(out):
    return out[0] if isinstance(out, tuple) else out.loss


# ------------------------------------------------------------------ compile

def compile_train(name, mode=None, rec=None, max_entries=1_000_000, steps=4, metadata=False, note=""):
    rec = dict(rec or {"context": "all", "stacks": "all"})
    last_error = None
    for kind in ("hf", "mini"):
        try:
            return _compile_train(name, kind, mode, rec, max_entries, steps, metadata, note, last_error)
        except Exception as e:          # transformers' GPT-2 failed under compile: retry with MiniGPT
            import traceback
            traceback.print_exc()
            last_error = repr(e)[:2000]
            torch.cuda.memory._record_memory_history(enabled=None)
            torch._dynamo.reset()
            torch.cuda.empty_cache()
    raise RuntimeError(f"{name}: both models failed: {last_error}")


def _compile_train(name, kind, mode, rec, max_entries, steps, metadata, note, hf_error):
    set_meta = getattr(torch.cuda.memory, "_set_memory_metadata", None) if metadata else None
    meta_set = []
    base = start(max_entries=max_entries, **rec)
    if set_meta:
        set_meta("build"); meta_set.append("build")
    model = build(kind)
    cmodel = torch.compile(model, mode=mode) if mode != "eager" else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    probe = E.Probe(model, opt)
    marks, step_seconds = [], []
    for i in range(steps):
        marks.append(E.now_us())
        t0 = time.time()
        if set_meta:
            set_meta(f"step={i}"); meta_set.append(f"step={i}")
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        x = torch.randint(0, 5000, (8, 128), device="cuda")
        probe.at("before_forward", i, input_bytes=x.untyped_storage().nbytes())
        out = cmodel(x, labels=x)
        loss = loss_of(out)
        probe.at("after_forward", i, input_bytes=x.untyped_storage().nbytes())
        loss.backward()
        del out, loss, x
        probe.at("after_backward", i)
        opt.step()
        probe.at("after_step", i)
        opt.zero_grad(set_to_none=True)
        probe.at("after_zero_grad", i)
        step_seconds.append(round(time.time() - t0, 3))
    if set_meta:
        set_meta(""); meta_set.append("")
    torch.cuda.synchronize()
    marks.append(E.now_us())
    truth = {"scenario": note, "model": "transformers GPT-2 4 layers d=128 vocab 5000" if kind == "hf"
             else "MiniGPT 4 layers d=128 vocab 5000 (transformers GPT-2 failed to compile)",
             "model_kind": kind, "compile_mode": mode, "record_args": dict(rec, max_entries=max_entries),
             "record_memory_history_params": record_params(),
             "iteration_start_us": marks, "iterations": steps, "step_seconds": step_seconds,
             "instants": probe.points, "optimizer": "AdamW", "set_to_none": True, "leaks": [],
             "batch": [8, 128]}
    if hf_error:
        truth["hf_compile_error"] = hf_error
    if metadata:
        truth["set_memory_metadata_exists"] = set_meta is not None
        truth["memory_metadata_set"] = meta_set
    stop(name, base, truth)


def compile_default():
    compile_train("compile_default", None,
                  note="GPT-2 4 layers d=128 under torch.compile (default mode), AdamW 4 steps, batch 8x128, "
                       "recording started before the model was built, context='all' stacks='all'")


def compile_reduce_overhead():
    compile_train("compile_reduce_overhead", "reduce-overhead",
                  note="GPT-2 4 layers d=128 under torch.compile(mode='reduce-overhead') (CUDA graph trees, "
                       "private pools), AdamW 4 steps, cudagraph_mark_step_begin each step")


def compile_ctx_recorded():
    params = record_params()
    rec = {"context": "all", "stacks": "all"}
    supported = "compile_context" in params
    if supported:
        rec["compile_context"] = True
    compile_train("compile_ctx_recorded", None, rec=rec, metadata=True,
                  note="compile_default with compile_context=True (if supported) and "
                       "torch.cuda.memory._set_memory_metadata('build' / 'step=N' / '') at each phase")
    add_truth("compile_ctx_recorded", {"compile_context_supported": supported})


def compile_ring():
    compile_train("compile_ring", None, max_entries=3000,
                  note="compile_default with max_entries=3000: the ring buffer wraps")
    add_truth("compile_ring", {"max_entries": 3000})


def compile_max_autotune():
    compile_train("compile_max_autotune", "max-autotune-no-cudagraphs", rec={"context": "all", "stacks": "python"},
                  note="GPT-2 4 layers d=128 under torch.compile(mode='max-autotune-no-cudagraphs') "
                       "(autotuning benchmarks while recording), AdamW 4 steps, python stacks")


# ------------------------------------------------------------------ context / stacks variants

def eager_gpt2(name, rec, note, steps=3):
    base = start(**rec)
    model = S.gpt2(n_layer=2, d=128).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    probe = E.Probe(model, opt)
    marks = []
    for i in range(steps):
        marks.append(E.now_us())
        x = torch.randint(0, 5000, (8, 128), device="cuda")
        probe.at("before_forward", i, input_bytes=x.untyped_storage().nbytes())
        out = model(x, labels=x)
        loss = out.loss
        probe.at("after_forward", i, input_bytes=x.untyped_storage().nbytes())
        loss.backward()
        del out, loss, x
        probe.at("after_backward", i)
        opt.step()
        probe.at("after_step", i)
        opt.zero_grad(set_to_none=True)
        probe.at("after_zero_grad", i)
    torch.cuda.synchronize()
    marks.append(E.now_us())
    stop(name, base, {"scenario": note, "record_args": {k: v for k, v in rec.items()},
                      "model": "transformers GPT-2 2 layers d=128 vocab 5000", "batch": [8, 128],
                      "iteration_start_us": marks, "iterations": steps, "instants": probe.points,
                      "optimizer": "AdamW", "set_to_none": True, "leaks": []})


def ctx_alloc():
    eager_gpt2("ctx_alloc", {"context": "alloc"}, "eager GPT-2 2 layers, 3 AdamW steps, context='alloc' (stacks default)")


def ctx_state():
    eager_gpt2("ctx_state", {"context": "state"}, "eager GPT-2 2 layers, 3 AdamW steps, context='state' (stacks default)")


def ctx_none():
    eager_gpt2("ctx_none", {"context": None}, "eager GPT-2 2 layers, 3 AdamW steps, context=None (no stacks)")


def stacks_python():
    eager_gpt2("stacks_python", {"context": "all", "stacks": "python"},
               "eager GPT-2 2 layers, 3 AdamW steps, context='all' stacks='python'")


ALL = {f.__name__: f for f in [compile_default, compile_reduce_overhead, compile_ctx_recorded,
                                ctx_alloc, ctx_state, ctx_none, stacks_python, compile_ring,
                                compile_max_autotune]}

if __name__ == "__main__":
    S.run(ALL, S.OUT, sys.argv[2:])
