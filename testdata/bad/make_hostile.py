#!/usr/bin/env python3
"""Writes the crafted hostile snapshots of issue 16 (docs/security.md) into a folder:
valid pickles with absurd sizes and times. Every one must be refused with exit 2.
Usage: make_hostile.py OUTDIR"""
import os
import pickle
import sys

def entry(action, addr, size, t, **kw):
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
         "frames": [{"name": "f", "filename": "x.py", "line": 1}]}
    e.update(kw)
    return e

def snap(trace, segments=(), annotations=()):
    return {"segments": list(segments), "device_traces": [trace],
            "external_annotations": list(annotations)}

G62, G63 = 1 << 62, (1 << 63) - 1
cases = {
    # eight allocs of 2^62: the live sum wrapped to 0
    "alloc_2p62": snap([entry("alloc", 4096 * i, G62, 1000 + i) for i in range(8)]),
    # a free of an unknown address with size 2^63-1: "reconstructed -8192 PiB"
    "free_unknown_huge": snap([entry("free_completed", 4096, G63, 1000)]),
    # eight segment_alloc of 2^62: reserved peak wrapped
    "segment_2p62": snap([entry("segment_alloc", 4096 * i, G62, 1000 + i) for i in range(8)]),
    # time_us of -2^63 and 2^63-1 in one trace: the span wrapped
    "time_extremes": snap([entry("alloc", 4096, 512, -(1 << 63)), entry("alloc", 8192, 512, G63)]),
    # sizes each below the ceiling whose sum is not (2^55 * 200)
    "alloc_sum_2p56": snap([entry("alloc", 4096 * i, 1 << 55, 1000 + i) for i in range(200)]),
    # a segment in the final state beyond the ceiling
    "segment_state_huge": snap([entry("alloc", 4096, 512, 1000)], segments=[{
        "device": 0, "address": 4096, "total_size": G62, "allocated_size": 0, "active_size": 0,
        "requested_size": 0, "stream": 0, "segment_type": "large", "blocks": []}]),
    # an annotation time out of range
    "annotation_time": snap([entry("alloc", 4096, 512, 1000)],
                            annotations=[{"name": "x", "stage": "START", "device": 0, "time_us": G63}]),
    # an address beyond 64 bits
    "addr_128bit": snap([entry("alloc", 1 << 100, 512, 1000)]),
}

def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, obj in cases.items():
        with open(os.path.join(out, name + ".pickle"), "wb") as f:
            pickle.dump(obj, f, protocol=4)

if __name__ == "__main__":
    main()
