#!/usr/bin/env python3
"""Read a PyTorch CUDA memory snapshot through libmemsnap with ctypes alone.

The whole binding is five functions and two frees: ms_snapshot_read_file, ms_run_open,
ms_run_json (every analysis as JSON text, docs/json.md "ms_run_json"), ms_free,
ms_run_free, ms_snapshot_free; ms_run_compare_json compares two runs. No compiler, no
package: ctypes is in the standard library.

    python3 memsnap_ctypes.py [--lib PATH/libmemsnap.so] SNAPSHOT [DEVICE] [--compare OTHER]

prints {"path", "device", "summary": {...}, "leaks": {...}, "segments": {...}} as JSON,
and "compare" (the pair object of `memsnap diff --json SNAPSHOT OTHER`) with --compare.
Exit status 2 when a snapshot cannot be read (the library's message on stderr), 3 when
the library cannot be loaded.
"""
import ctypes
import ctypes.util
import json
import sys


class MsError(ctypes.Structure):
    # memsnap/core.h: struct ms_error
    _fields_ = [("code", ctypes.c_int),
                ("offset", ctypes.c_int64),
                ("message", ctypes.c_char * 320)]


class Memsnap:
    def __init__(self, path=None):
        path = path or ctypes.util.find_library("memsnap") or "libmemsnap.so"
        lib = ctypes.CDLL(path)
        p = ctypes.c_void_p
        perr = ctypes.POINTER(MsError)
        lib.ms_snapshot_read_file.argtypes = [ctypes.POINTER(p), ctypes.c_char_p, p, perr]
        lib.ms_snapshot_read_file.restype = ctypes.c_int
        lib.ms_snapshot_free.argtypes = [p]
        lib.ms_snapshot_free.restype = None
        lib.ms_run_open.argtypes = [ctypes.POINTER(p), p, ctypes.c_int, p, perr]
        lib.ms_run_open.restype = ctypes.c_int
        lib.ms_run_free.argtypes = [p]
        lib.ms_run_free.restype = None
        lib.ms_run_json.argtypes = [ctypes.POINTER(p), ctypes.POINTER(ctypes.c_size_t), p,
                                    ctypes.c_char_p, perr]
        lib.ms_run_json.restype = ctypes.c_int
        lib.ms_run_compare_json.argtypes = [ctypes.POINTER(p), ctypes.POINTER(ctypes.c_size_t),
                                            p, ctypes.c_char_p, p, ctypes.c_char_p, perr]
        lib.ms_run_compare_json.restype = ctypes.c_int
        lib.ms_free.argtypes = [p]
        lib.ms_free.restype = None
        self.lib = lib

    @staticmethod
    def _fail(what, err):
        raise RuntimeError("%s: %s" % (what, err.message.decode("utf-8", "replace")))

    def open(self, path):
        snap, err = ctypes.c_void_p(), MsError()
        if self.lib.ms_snapshot_read_file(ctypes.byref(snap), path.encode(), None,
                                          ctypes.byref(err)):
            self._fail(path, err)
        return snap

    def run(self, snap, device):
        run, err = ctypes.c_void_p(), MsError()
        if self.lib.ms_run_open(ctypes.byref(run), snap, device, None, ctypes.byref(err)):
            self._fail("device %d" % device, err)
        return run

    def json(self, run, what):
        return self._text(what, self.lib.ms_run_json, run, what.encode())

    def compare(self, run_a, name_a, run_b, name_b):
        return self._text("compare", self.lib.ms_run_compare_json, run_a, name_a.encode(),
                          run_b, name_b.encode())

    def _text(self, what, fn, *args):
        # Every JSON function of the library: (char **out, size_t *len, ..., ms_error *).
        text, n, err = ctypes.c_void_p(), ctypes.c_size_t(), MsError()
        if fn(ctypes.byref(text), ctypes.byref(n), *args, ctypes.byref(err)):
            self._fail(what, err)
        try:
            return json.loads(ctypes.string_at(text, n.value).decode("utf-8"))
        finally:
            self.lib.ms_free(text)


def main(argv):
    lib_path = other = None
    if len(argv) > 2 and argv[1] == "--lib":
        lib_path = argv[2]
        argv = argv[:1] + argv[3:]
    if len(argv) > 2 and argv[-2] == "--compare":
        other = argv[-1]
        argv = argv[:-2]
    if len(argv) not in (2, 3):
        print("usage: " + next(l.strip() for l in __doc__.splitlines()
                                   if l.strip().startswith("python3")), file=sys.stderr)
        return 2
    try:
        ms = Memsnap(lib_path)
    except OSError as e:
        print("memsnap_ctypes: %s" % e, file=sys.stderr)
        return 3
    device = int(argv[2]) if len(argv) == 3 else 0
    snaps, runs = [], []
    try:
        for path in [argv[1]] + ([other] if other else []):
            snaps.append(ms.open(path))
            runs.append(ms.run(snaps[-1], device))
        out = {"path": argv[1], "device": device,
               "summary": ms.json(runs[0], "summary"), "leaks": ms.json(runs[0], "leaks"),
               "segments": ms.json(runs[0], "segments")}
        if other:
            out["compare"] = ms.compare(runs[0], argv[1], runs[1], other)
    except RuntimeError as e:
        print("memsnap_ctypes: %s" % e, file=sys.stderr)
        return 2
    finally:
        # A run reads its snapshot: free the runs first.
        for run in runs:
            ms.lib.ms_run_free(run)
        for snap in snaps:
            ms.lib.ms_snapshot_free(snap)
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
