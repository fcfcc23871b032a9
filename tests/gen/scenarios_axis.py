"""Recordings for the charts' run axis (issue 23), each in a fresh process so that CUDA and
cuBLAS set-up land where a user's first step pays for them.

  python3 scenarios_axis.py OUTDIR idle_start|slow_first_leak

idle_start: the model and a data buffer are allocated, then the script waits 3.6 s (a data
  loader warming up) before 4 training steps. Truth: iteration_start_us (wall clock, the
  trace's clock), idle_from_us/idle_to_us around the wait.
slow_first_leak: a fresh GPT-2 trained 5 steps; the first step pays cuBLAS/CUDA set-up,
  and every step keeps its logits (a leak that grows by one logits tensor a step). Truth:
  iteration_start_us, leak_bytes_per_step (the kept tensor's bytes), leak_line (the
  appending line), allocated_after_step[] (torch.cuda.memory_allocated after each step).
"""
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenarios as S
import torch


def now_us():
    return time.time_ns() // 1000


def idle_start():
    base = S.start()
    model = S.gpt2(n_layer=2).cuda()
    data = torch.randint(0, 5000, (64, 128), device="cuda")
    torch.cuda.synchronize()
    idle_from = now_us()
    time.sleep(3.6)
    idle_to = now_us()
    marks = []
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i in range(4):
        marks.append(now_us())
        x = data[i * 8:(i + 1) * 8]
        out = model(x, labels=x)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    marks.append(now_us())
    S.stop("idle_start", base, {"scenario": "GPT-2 (2 layers) 4 AdamW steps after a 3.6 s wait",
                                "iteration_start_us": marks, "iterations": 4,
                                "idle_from_us": idle_from, "idle_to_us": idle_to})


def slow_first_leak():
    base = S.start()
    model = S.gpt2(n_layer=4).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    kept, marks, after = [], [], []
    leak_line = None
    for i in range(5):
        marks.append(now_us())
        x = torch.randint(0, 5000, (8, 128), device="cuda")
        out = model(x, labels=x)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        leak_line = sys._getframe().f_lineno + 1
        kept.append(out.logits.detach())
        del out
        torch.cuda.synchronize()
        after.append(torch.cuda.memory_allocated())
    marks.append(now_us())
    S.stop("slow_first_leak", base, {
        "scenario": "fresh GPT-2 (4 layers) 5 AdamW steps, each keeps its logits",
        "iteration_start_us": marks, "iterations": 5,
        "leak_bytes_per_step": kept[0].numel() * kept[0].element_size(),
        "leak_count": len(kept), "leak_line": leak_line,
        "leak_file": os.path.abspath(__file__), "allocated_after_step": after})


if __name__ == "__main__":
    S.OUT = sys.argv[1]
    os.makedirs(S.OUT, exist_ok=True)
    {"idle_start": idle_start, "slow_first_leak": slow_first_leak}[sys.argv[2]]()
