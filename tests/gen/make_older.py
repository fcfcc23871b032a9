"""Rewrites real recordings the way older PyTorch wrote them, for the compatibility tests.
The counters in each source's truth.json still hold (the events are the same), so
test_truth checks the rewritten files as it checks the originals.

    python3 tests/gen/make_older.py        (from the repository root; writes testdata/old_*)

What the rewrite drops or renames, per variant:
- old20_NAME: PyTorch 2.0: trace entries {action, addr, size, stream, frames} with no
  time_us, compile_context or user_metadata; no allocator_settings, no
  external_annotations; segments without frames, requested_size, is_expandable or
  segment_pool_id; blocks {address, size, state, history: [{addr, real_size, frames}]}
  (no requested_size, no frames of their own). Pickle protocol 2.
- oldctx_NAME: as old20, recorded with context=None: no frames anywhere.
"""
import json, os, pickle, sys

SOURCES = ["gpt2_train", "cat_prebuilt", "leak_layers"]
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata")


def block20(b, frames):
    out = {"address": b["address"], "size": b["size"], "state": b["state"]}
    if b["state"] != "inactive":
        h = {"addr": b["address"], "real_size": b.get("requested_size", b["size"])}
        if frames:
            h["frames"] = b.get("frames", [])
        out["history"] = [h]
    return out


def rewrite(d, frames):
    segs = []
    for s in d["segments"]:
        segs.append({k: s[k] for k in ("device", "address", "total_size", "allocated_size",
                                       "active_size", "stream", "segment_type") if k in s}
                    | {"blocks": [block20(b, frames) for b in s["blocks"]]})
    traces = []
    for tr in d["device_traces"]:
        out = []
        for e in tr:
            n = {k: e[k] for k in ("action", "addr", "size", "stream") if k in e}
            if "device_free" in e:
                n["device_free"] = e["device_free"]
            if frames and "frames" in e:
                n["frames"] = e["frames"]
            out.append(n)
        traces.append(out)
    return {"segments": segs, "device_traces": traces}


def main():
    for name in SOURCES:
        with open(os.path.join(here, name + ".pickle"), "rb") as f:
            d = pickle.load(f)
        with open(os.path.join(here, name + ".truth.json")) as f:
            truth = json.load(f)
        for prefix, frames in (("old20_", True), ("oldctx_", False)):
            out = prefix + name
            with open(os.path.join(here, out + ".pickle"), "wb") as f:
                pickle.dump(rewrite(d, frames), f, protocol=2)
            t = dict(truth)
            t["derived_from"] = name
            if not frames and t.get("leaks"):
                # Without frames no site can be named: the leaks stay, their sites do not.
                t["leaks_without_sites"] = t.pop("leaks")
            t["older_format"] = {"old20_": "torch 2.0 layout, no times", "oldctx_": "torch 2.0 layout, context=None"}[prefix]
            with open(os.path.join(here, out + ".truth.json"), "w") as f:
                json.dump(t, f, indent=1, sort_keys=True)
            print(out, os.path.getsize(os.path.join(here, out + ".pickle")), "bytes")


if __name__ == "__main__":
    sys.exit(main())
