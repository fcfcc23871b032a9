"""More real snapshots for the leak detector: leaks it was not written against, and
leak-free workloads built to look like leaks. Same truth format as scenarios.py.

Run on a GPU machine:  python3 scenarios_extra.py OUTDIR [names...]
Each leak is named by the exact file, line and function of the allocating statement
(taken with sys._getframe on that very line), its count and its requested bytes.
"""
import os, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as S

S.OUT = sys.argv[1] if len(sys.argv) > 1 else "out"


def line_here():
    fr = sys._getframe(1)
    return {"filename": fr.f_code.co_filename, "line": fr.f_lineno, "name": fr.f_code.co_name}


class MLP(nn.Module):
    def __init__(self, d=512, n=6):
        super().__init__()
        self.layers = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                     for _ in range(n)])
        self.head = nn.Linear(d, 1)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x).mean()


def train(model, iters, marks, batch=(16, 128, 512), accumulate=1, hook=None):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i in range(iters):
        marks.append(time.time_ns() // 1000)
        for _ in range(accumulate):
            x = torch.randn(*batch, device="cuda")
            loss = model(x) / accumulate
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    marks.append(time.time_ns() // 1000)


# -------------------------------------------------------------- leaks

GRAD_STASH = []
GRAD_LEAK = {}


def leak_backward_hook():
    """A full backward hook keeps a copy of each layer's grad_output: a leak made during
    the backward pass (allocations of the autograd engine's thread)."""
    base = S.start()
    model = MLP().cuda()

    def keep_grad(module, grad_input, grad_output):
        GRAD_STASH.append(grad_output[0][:, :8].detach().clone()); GRAD_LEAK.update(line_here())
        return None

    for layer in model.layers:
        layer.register_full_backward_hook(keep_grad)
    marks = []
    iters = 4
    train(model, iters, marks)
    leak = dict(GRAD_LEAK, count=len(model.layers) * iters, bytes_each_requested=16 * 8 * 512 * 4)
    S.stop("leak_backward_hook", base, {"scenario": "6 MLP layers, a backward hook stashes grad_output slices, 4 steps",
                                        "iteration_start_us": marks, "iterations": iters, "leaks": [leak]})


FWD_STASH = []
FWD_LEAK = {}


def leak_forward_hook():
    """A forward hook (the usual activation-logging bug) keeps every layer output."""
    base = S.start()
    model = MLP(n=4).cuda()

    def log_activation(module, inputs, output):
        FWD_STASH.append(output.detach().mean(dim=1)); FWD_LEAK.update(line_here())

    for layer in model.layers:
        layer.register_forward_hook(log_activation)
    marks = []
    iters = 5
    train(model, iters, marks)
    leak = dict(FWD_LEAK, count=len(model.layers) * iters, bytes_each_requested=16 * 512 * 4)
    S.stop("leak_forward_hook", base, {"scenario": "4 MLP layers, a forward hook keeps each output's mean, 5 steps",
                                       "iteration_start_us": marks, "iterations": iters, "leaks": [leak]})


def leak_nograd_infer():
    """Inference under no_grad; a results cache keyed by batch keeps every logits tensor.
    No optimizer, no annotations: iterations are repeated forward calls."""
    base = S.start()
    model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1000)).cuda().eval()
    cache = {}
    marks = []
    info = {}
    iters = 6
    with torch.no_grad():
        for i in range(iters):
            marks.append(time.time_ns() // 1000)
            x = torch.randn(64, 1024, device="cuda")
            logits = model(x)
            cache[i] = logits.softmax(dim=-1); info.update(line_here())
            del x, logits
    torch.cuda.synchronize()
    marks.append(time.time_ns() // 1000)
    leak = dict(info, count=iters, bytes_each_requested=64 * 1000 * 4)
    S.stop("leak_nograd_infer", base, {"scenario": "no_grad inference, 6 batches, softmax outputs cached",
                                       "iteration_start_us": marks, "iterations": iters, "leaks": [leak]})


# -------------------------------------------------------------- leak-free traps

def noleak_grad_accum():
    """Gradient accumulation: grads live across 4 micro-batches, optimizer state appears in
    step 1 and stays. Nothing grows from one optimizer step to the next."""
    base = S.start()
    model = MLP().cuda()
    marks = []
    train(model, 4, marks, accumulate=4)
    S.stop("noleak_grad_accum", base, {"scenario": "6 MLP layers, 4 optimizer steps of 4 accumulated micro-batches",
                                       "iteration_start_us": marks, "iterations": 4, "leaks": []})


def noleak_warm_cache():
    """A cache filled in the first iteration only (rotary tables, masks) and reused."""
    base = S.start()
    model = MLP(n=4).cuda()
    table = {}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    marks = []
    for i in range(5):
        marks.append(time.time_ns() // 1000)
        if "mask" not in table:
            table["mask"] = torch.ones(128, 128, device="cuda").tril()
            table["freqs"] = torch.randn(128, 512, device="cuda")
        x = torch.randn(16, 128, 512, device="cuda") + table["freqs"]
        loss = model(x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    marks.append(time.time_ns() // 1000)
    S.stop("noleak_warm_cache", base, {"scenario": "4 MLP layers, 5 steps, a cache built in step 1 and reused",
                                       "iteration_start_us": marks, "iterations": 5, "leaks": []})


def noleak_python_stacks():
    """Same leak-free training with stacks='python' (no C++ frames), as big_train uses."""
    base = S.start(stacks="python")
    model = MLP(n=4).cuda()
    marks = []
    train(model, 5, marks)
    S.stop("noleak_python_stacks", base, {"scenario": "4 MLP layers, 5 steps, python-only stacks",
                                          "iteration_start_us": marks, "iterations": 5, "leaks": []})


# -------------------------------------------------------------- benchmark

def long_all_stacks():
    """A long GPT-2 run with stacks='all' (C++ and Python frames): a large trace whose
    entries carry inline frame dicts all along, unlike long_trace (python stacks only).
    For benchmarks and for the two-thread reader; too large for testdata/."""
    base = S.start(max_entries=5_000_000, stacks="all")
    model = S.gpt2(n_layer=4).cuda()
    marks = []
    S.train_steps(model, int(os.environ.get("LONG_STEPS", "400")), 8, 256, 5000, marks)
    S.stop("long_all_stacks", base, {"scenario": "GPT-2 4 layers, many AdamW steps, stacks='all'",
                                     "iteration_start_us": marks, "iterations": len(marks) - 1,
                                     "leaks": []})


ALL = {f.__name__: f for f in [leak_backward_hook, leak_forward_hook, leak_nograd_infer,
                                noleak_grad_accum, noleak_warm_cache, noleak_python_stacks,
                                long_all_stacks]}

if __name__ == "__main__":
    S.run(ALL, S.OUT, sys.argv[2:])
