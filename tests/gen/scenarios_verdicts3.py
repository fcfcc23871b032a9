"""Real snapshots for the third round of verdicts (issue 35): each is a trap on which a
confident sentence would be wrong, with the truth measured by this script.

- v3_oom_bystander: a fragmentation OOM with a large bystander (a 900 MiB filler that did
  not make the request fail). `oom` as scenarios_explain.oom_run.
- v3_oom_deep_growing: 24 MLP blocks, no optimizer, batch 8x256 then 8x1024 under 2 GiB:
  the second forward fails part-way. `oom` as oom_run, plus forward hooks' counts and
  per-block activation bytes of each forward (`forwards`).
- v3_lazy_adamw / v3_lazy_sgd: nn.LazyLinear parameters made by a first no_grad forward
  inside the recording, then AdamW (2 states a parameter) / SGD momentum 0.9 (1 state);
  `instants` as scenarios_explain.Probe (unmaterialised parameters skipped).
- v3_edit_a / v3_edit_b: one training loop recorded twice; its model lives in
  /home/ml/train/edited_model.py, written before import, with 12 lines inserted above the
  model in b. `edited_model` gives the forward's lines in each.
- v3_pauses: 6 steps, time.sleep(1.5) after steps 2, 4 and 6: `steps` (busy start/end) and
  `pauses`.
- v3_metric_leak: each of 4 steps keeps an 8 KiB metric tensor; `leaks` with `kept_at`.

Run on a GPU machine, one scenario a process:
    python3 scenarios_verdicts3.py OUTDIR NAME
"""
import json, os, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as S
import scenarios_explain as E
import scenarios_verdicts as V

S.OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
MiB = 2**20
now_us = E.now_us


# ------------------------------------------------------------------ OOM: a bystander is not the cause

def v3_oom_bystander():
    def body(truth, oom, marks):
        big = torch.empty(1024 * MiB, dtype=torch.uint8, device="cuda")
        del big                                    # a cached 1 GiB segment
        parts = [torch.empty(100 * MiB, dtype=torch.uint8, device="cuda") for _ in range(10)]
        for i in range(1, 10, 2):
            parts[i] = None                        # 4 holes of 100 MiB, and 100 + the 24 MiB tail
        filler = torch.empty(900 * MiB, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        truth["bystander"] = {"bytes": filler.untyped_storage().nbytes(), "address": filler.data_ptr(),
                              "what": "900 MiB filler in a segment of its own, alive at the failure"}
        truth["parts_alive"] = [{"address": p.data_ptr(), "bytes": p.untyped_storage().nbytes()}
                                for p in parts if p is not None]
        oom["request_bytes"] = 300 * MiB
        oom["before_request"] = E.block_state()
        torch.empty(300 * MiB, dtype=torch.uint8, device="cuda")
    E.oom_run("v3_oom_bystander", body,
              "a cached 1 GiB segment split into ten 100 MiB tensors, every other one freed (524 MiB free in 5 "
              "pieces, the largest 124 MiB), a 900 MiB filler, then 300 MiB requested under a 2 GiB limit: the "
              "free pieces joined would serve it; the filler is a bystander",
              "fragmentation", 2048 * MiB)


# ------------------------------------------------------------------ OOM: half a forward, larger input

class GBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(x)))


class GDeep(nn.Module):
    def __init__(self, d=512, n=24):
        super().__init__()
        self.blocks = nn.ModuleList([GBlock(d) for _ in range(n)])
        self.head = nn.Linear(d, 1)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def v3_oom_deep_growing():
    d, n = 512, 24

    def body(truth, oom, marks):
        model = GDeep(d, n).cuda()
        truth["parameter_bytes"] = E.storage_bytes(list(model.parameters()))
        truth["layers"] = n
        forwards = []
        truth["forwards"] = forwards
        cur = {}

        def pre(module, args):
            cur["before"] = torch.cuda.memory_stats()["requested_bytes.all.current"]
            cur["block"] = module.index
            forwards[-1]["block_in_progress"] = module.index

        def post(module, args, out):
            grow = torch.cuda.memory_stats()["requested_bytes.all.current"] - cur["before"]
            f = forwards[-1]
            f["per_block_activation_bytes"].append(grow)
            f["blocks_completed"] = len(f["per_block_activation_bytes"])
            f["block_in_progress"] = None

        for i, b in enumerate(model.blocks):
            b.index = i
            b.register_forward_pre_hook(pre)
            b.register_forward_hook(post)
        site = {}
        for step, rows in enumerate((256, 1024)):
            torch.cuda.synchronize()
            marks.append(now_us())
            x = torch.randn(8, rows, d, device="cuda")
            forwards.append({"step": step, "batch": [8, rows, d], "tokens": 8 * rows, "start_us": marks[-1],
                             "input_bytes": x.untyped_storage().nbytes(), "blocks_completed": 0,
                             "block_in_progress": None, "per_block_activation_bytes": []})
            oom["failing_step"] = step
            loss = model(x).pow(2).mean(); site.update(E.line_here())
            truth["user_frame"] = dict(site)
            loss.backward()
            model.zero_grad(set_to_none=True)
            del x, loss
            torch.cuda.synchronize()
            forwards[-1]["end_us"] = now_us()
    E.oom_run("v3_oom_deep_growing", body,
              f"GDeep({d}, {n} residual MLP blocks, fc1 d->4d, GELU, fc2 4d->d), no optimizer; step 0: forward + "
              "backward at batch 8x256 (zero_grad(set_to_none=True) after); step 1: batch 8x1024 under a 2 GiB "
              "limit, whose forward fails part-way (the graph holds each block's activations)",
              "activations", 2048 * MiB)

    def fix(t):
        o, fw = t["oom"], t["forwards"]
        o["message_request_bytes"] = V.parse_mib(o.get("message"))
        o["blocks_completed_at_oom"] = fw[-1]["blocks_completed"]
        o["block_in_progress_at_oom"] = fw[-1]["block_in_progress"]
        o["blocks_total"] = t["layers"]
        a, b = fw[0]["per_block_activation_bytes"], fw[-1]["per_block_activation_bytes"]
        if a and b:
            o["activation_per_block_ratio"] = round((sum(b) / len(b)) / (sum(a) / len(a)), 4)
        t["shape"] = "training_loop_no_optimizer"
    patch("v3_oom_deep_growing", fix)


def patch(name, fn):
    path = os.path.join(S.OUT, name + ".truth.json")
    with open(path) as f:
        t = json.load(f)
    fn(t)
    with open(path, "w") as f:
        json.dump(t, f, indent=1, sort_keys=True)


# ------------------------------------------------------------------ lazy parameters, then an optimizer

def lazy_run(name, make_opt, opt_note, state_per_param):
    base = S.start()
    model = nn.Sequential(nn.LazyLinear(2048), nn.GELU(), nn.LazyLinear(2048), nn.GELU(),
                          nn.LazyLinear(2048), nn.GELU(), nn.LazyLinear(2048), nn.GELU(),
                          nn.LazyLinear(1024)).cuda()
    uninit = sum(1 for p in model.parameters() if V.is_uninit(p))
    probe = E.Probe(V.Materialised(model), None)
    x0 = torch.randn(64, 1024, device="cuda")
    probe.at("before_materialise", -1)
    t0 = now_us()
    with torch.no_grad():
        model(x0)                                  # the lazy layers make their parameters here
    torch.cuda.synchronize()
    materialised = {"start_us": t0, "end_us": now_us(),
                    "parameter_bytes": E.storage_bytes(list(model.parameters()))}
    del x0
    probe.at("after_materialise", -1)
    opt = make_opt(model)
    probe.opt = opt
    marks, site = [], {}
    steps = 3
    for i in range(steps):
        marks.append(now_us())
        x = torch.randn(64, 1024, device="cuda")
        probe.at("before_forward", i, input_bytes=x.untyped_storage().nbytes())
        loss = model(x).pow(2).mean(); site.update(E.line_here())
        probe.at("after_forward", i, input_bytes=x.untyped_storage().nbytes())
        loss.backward()
        del loss, x
        probe.at("after_backward", i)
        opt.step()
        probe.at("after_step", i)
        opt.zero_grad(set_to_none=True)
        probe.at("after_zero_grad", i)
    torch.cuda.synchronize()
    marks.append(now_us())
    state = V.model_state(model, opt)
    S.stop(name, base, {
        "scenario": "nn.LazyLinear stack (1024 -> 4 x 2048 -> 1024) built inside the recording; a first forward "
                    f"under torch.no_grad() makes the parameters; then {opt_note}, 3 steps, batch 64x1024",
        "shape": "training_loop", "iterations": steps, "iteration_start_us": marks, "instants": probe.points,
        "optimizer": type(opt).__name__, "set_to_none": True, "leaks": [], "user_frame": site,
        "uninitialized_params_before_first_forward": uninit, "materialised": materialised,
        "final_model_state": state, "optimizer_states_per_parameter": state_per_param,
        "optimizer_state_over_parameters": round(state["optimizer_state_bytes"] / state["parameter_bytes"], 6)})


def v3_lazy_adamw():
    lazy_run("v3_lazy_adamw", lambda m: torch.optim.AdamW(m.parameters(), lr=1e-4),
             "AdamW (exp_avg and exp_avg_sq mirror each parameter; `step` is a CPU tensor)", 2)


def v3_lazy_sgd():
    lazy_run("v3_lazy_sgd", lambda m: torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9),
             "SGD with momentum 0.9 (one momentum buffer a parameter)", 1)


# ------------------------------------------------------------------ the same run, edited between recordings

EDIT_HEAD = '''"""A small MLP; written by scenarios_verdicts3.py before import (variant {variant})."""
import torch
import torch.nn as nn
import torch.nn.functional as F
'''

EDIT_INSERT = '''# Edited between the two recordings: twelve lines were added above the model,
# so every line of the forward below sits 12 lines lower than in variant a.


def count_parameters(model):
    """Number of parameters (added by the edit; not called while recording)."""
    total = 0
    for p in model.parameters():
        total += p.numel()
    return total


'''

EDIT_BODY = '''

class EditedNet(nn.Module):
    def __init__(self, d=1024, n=4):
        super().__init__()
        self.fc1 = nn.ModuleList([nn.Linear(d, 4 * d) for _ in range(n)])
        self.fc2 = nn.ModuleList([nn.Linear(4 * d, d) for _ in range(n)])
        self.head = nn.Linear(d, 1)

    def forward(self, x):
        for fc1, fc2 in zip(self.fc1, self.fc2):
            h = F.gelu(fc1(x))  # MARK:hidden
            x = x + fc2(h)  # MARK:residual
        return self.head(x)  # MARK:head
'''


def edited_source(variant):
    return EDIT_HEAD.format(variant=variant) + (EDIT_INSERT if variant == "b" else "") + EDIT_BODY


def edit_run(variant):
    name = "v3_edit_" + variant
    src = edited_source(variant)
    assert len(EDIT_INSERT.splitlines()) == 12
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "edited_model.py")
    sys.dont_write_bytecode = True
    with open(path, "w") as f:
        f.write(src)
    lines = {}
    for no, text in enumerate(src.splitlines(), 1):
        if "# MARK:" in text:
            lines[text.split("# MARK:")[1].strip()] = no
        if text.strip().startswith("def forward("):
            lines["def_forward"] = no
    import edited_model
    assert os.path.abspath(edited_model.__file__) == os.path.abspath(path)
    base = S.start()
    model = edited_model.EditedNet().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    marks, site = [], {}
    steps = 3
    for i in range(steps):
        marks.append(now_us())
        x = torch.randn(16, 128, 1024, device="cuda")
        loss = model(x).pow(2).mean(); site.update(E.line_here())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, loss
    torch.cuda.synchronize()
    marks.append(now_us())
    c = S.counters()
    S.stop(name, base, {
        "scenario": "EditedNet (4 MLP blocks d=1024 whose forward is in edited_model.py), AdamW, 3 steps, batch "
                    "16x128x1024; recorded twice: variant b's module has 12 lines inserted above the model "
                    f"(this is variant {variant})",
        "shape": "training_loop", "iterations": steps, "iteration_start_us": marks, "user_frame": site,
        "optimizer": "AdamW", "leaks": [],
        "edited_model": {"filename": path, "variant": variant, "lines": lines, "line_shift_b_minus_a": 12,
                         "forward_name": "forward", "class": "EditedNet"},
        "peak_requested_bytes": c["requested_bytes.all.peak"],
        "peak_allocated_bytes": c["allocated_bytes.all.peak"],
        "peak_reserved_bytes": c["reserved_bytes.all.peak"]})


def v3_edit_a():
    edit_run("a")


def v3_edit_b():
    edit_run("b")


# ------------------------------------------------------------------ pauses inside a loop

def v3_pauses():
    base = S.start()
    model = E.MLP(n=4).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    steps, pauses, site = [], [], {}
    for i in range(1, 7):
        torch.cuda.synchronize()
        t0 = now_us()
        x = torch.randn(16, 128, 512, device="cuda")
        loss = model(x).pow(2).mean(); site.update(E.line_here())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, loss
        torch.cuda.synchronize()
        t1 = now_us()
        steps.append({"step": i, "start_us": t0, "end_us": t1, "busy_seconds": round((t1 - t0) / 1e6, 6)})
        if i % 2 == 0:
            time.sleep(1.5)
            pauses.append({"after_step": i, "start_us": t1, "end_us": now_us(), "seconds": 1.5})
    end = now_us()
    marks = [s["start_us"] for s in steps] + [steps[-1]["end_us"]]
    S.stop("v3_pauses", base, {
        "scenario": "4 residual MLP blocks d=512 (scenarios_explain.MLP n=4), AdamW, 6 steps, time.sleep(1.5) after steps "
                    "2, 4 and 6 (the last pause is trailing idle before the dump)",
        "shape": "training_loop", "iterations": 6, "iteration_start_us": marks, "user_frame": site,
        "steps": steps, "pauses": pauses, "trailing_idle_us": [steps[-1]["end_us"], end],
        "iteration_note": "iteration_start_us = the 6 busy starts plus the end of step 6's busy part; the pauses "
                          "after steps 2 and 4 lie between a step's end and the next start; the one after step "
                          "6 belongs to no iteration",
        "optimizer": "AdamW", "leaks": []})


# ------------------------------------------------------------------ a small metric leak

METRICS = []
METRIC_SITE = {}


def v3_metric_leak():
    base = S.start()
    model = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 64)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    marks, site, addrs = [], {}, []
    steps = 4
    for i in range(steps):
        marks.append(now_us())
        x = torch.randn(2048, 256, device="cuda")
        per_sample = model(x).pow(2).mean(-1); site.update(E.line_here())
        loss = per_sample.mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        METRICS.append(per_sample.detach().clone()); METRIC_SITE.update(E.line_here())
        addrs.append(METRICS[-1].data_ptr())
        del x, per_sample, loss
    torch.cuda.synchronize()
    marks.append(now_us())
    leak = dict(METRIC_SITE, count=steps, bytes_each_requested=METRICS[0].untyped_storage().nbytes(),
                kept_at=dict(METRIC_SITE), user_frame=dict(site), addresses=addrs,
                total_bytes_requested=steps * METRICS[0].untyped_storage().nbytes())
    S.stop("v3_metric_leak", base, {
        "scenario": "MLP 256->1024->64, AdamW, 4 steps of 2048 samples; each step keeps "
                    "per_sample.detach().clone() (2048 float32 = 8 KiB) in a list that is never freed",
        "shape": "training_loop", "iterations": steps, "iteration_start_us": marks, "user_frame": site,
        "optimizer": "AdamW", "leaks": [leak]})


ALL = {f.__name__: f for f in [v3_oom_bystander, v3_oom_deep_growing, v3_lazy_adamw, v3_lazy_sgd,
                                v3_edit_a, v3_edit_b, v3_pauses, v3_metric_leak]}

if __name__ == "__main__":
    S.run(ALL, S.OUT, sys.argv[2:])
